// Command go-client drives a running Quill with Go's go-sql-driver/mysql the way an
// application does, and checks that bytes round-trip exactly: every byte value and random
// binary strings up to 1 MiB into MEDIUMBLOB, VARBINARY and BINARY columns, and random
// utf8mb4 text into VARCHAR, both with interpolateParams=true (the driver escapes values
// into the statement text) and without it (server-side prepared statements, binary
// protocol). Each value is read back by the driver and, independently, as HEX().
//
// Usage: QUILL_PORT=3306 go run . (host 127.0.0.1, user root, empty password). Prints one
// line per check and exits non-zero on the first failure.
package main

import (
	"bytes"
	"database/sql"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"strings"

	_ "github.com/go-sql-driver/mysql"
)

type row struct {
	id        int
	b, vb, bn []byte
	text      string
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "FAILED "+format+"\n", args...)
	os.Exit(1)
}

func randomText(rng *rand.Rand, chars int) string {
	ranges := [][2]int{{0x20, 0x7E}, {0xA0, 0x24F}, {0x4E00, 0x9FFF}, {0x1F300, 0x1FAFF}, {0x20000, 0x2A6DF}}
	var sb strings.Builder
	for i := 0; i < chars; i++ {
		r := ranges[rng.Intn(len(ranges))]
		sb.WriteRune(rune(r[0] + rng.Intn(r[1]-r[0]+1)))
	}
	return sb.String()
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	rng.Read(b)
	return b
}

func rows() []row {
	rng := rand.New(rand.NewSource(0xB17E5))
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	out := []row{{1, every, every, every[:255], randomText(rng, 300)}}
	for i, size := range []int{0, 1, 255, 65535, 1 << 20} {
		out = append(out, row{10 + i, randomBytes(rng, size), randomBytes(rng, rng.Intn(4000)), randomBytes(rng, 255), randomText(rng, rng.Intn(300))})
	}
	return out
}

func roundTrip(port, db string, interpolate bool) int {
	dsn := fmt.Sprintf("root:@tcp(127.0.0.1:%s)/%s?charset=utf8mb4&interpolateParams=%t&maxAllowedPacket=0", port, db, interpolate)
	conn, err := sql.Open("mysql", dsn)
	if err != nil {
		fail("open: %v", err)
	}
	defer conn.Close()
	table := fmt.Sprintf("bytes_%t", interpolate)
	if _, err := conn.Exec("CREATE TABLE " + table + " (id INT PRIMARY KEY, b MEDIUMBLOB, vb VARBINARY(4000), bn BINARY(255), t VARCHAR(300)) DEFAULT CHARSET=utf8mb4"); err != nil {
		fail("create: %v", err)
	}
	sent := rows()
	for _, r := range sent {
		if _, err := conn.Exec("INSERT INTO "+table+" VALUES (?, ?, ?, ?, ?)", r.id, r.b, r.vb, r.bn, r.text); err != nil {
			fail("insert %d (interpolateParams=%t): %v", r.id, interpolate, err)
		}
	}
	got, err := conn.Query("SELECT id, b, vb, bn, t, HEX(b), HEX(vb), HEX(bn), HEX(t) FROM "+table+" WHERE id > ? ORDER BY id", 0)
	if err != nil {
		fail("select: %v", err)
	}
	defer got.Close()
	i := 0
	for got.Next() {
		var r row
		var hb, hvb, hbn, ht string
		if err := got.Scan(&r.id, &r.b, &r.vb, &r.bn, &r.text, &hb, &hvb, &hbn, &ht); err != nil {
			fail("scan: %v", err)
		}
		want := sent[i]
		i++
		upper := func(b []byte) string { return strings.ToUpper(hex.EncodeToString(b)) }
		if r.id != want.id || !bytes.Equal(r.b, want.b) || !bytes.Equal(r.vb, want.vb) || !bytes.Equal(r.bn, want.bn) || r.text != want.text {
			fail("row %d read back differs (interpolateParams=%t)", want.id, interpolate)
		}
		if hb != upper(want.b) || hvb != upper(want.vb) || hbn != upper(want.bn) || ht != upper([]byte(want.text)) {
			fail("row %d as the server holds it differs (interpolateParams=%t)", want.id, interpolate)
		}
	}
	if i != len(sent) {
		fail("%d rows read back, %d sent", i, len(sent))
	}
	fmt.Printf("ok bytes round trip, interpolateParams=%t\n", interpolate)
	return 1
}

func main() {
	port := os.Getenv("QUILL_PORT")
	if port == "" {
		port = "3306"
	}
	admin, err := sql.Open("mysql", fmt.Sprintf("root:@tcp(127.0.0.1:%s)/", port))
	if err != nil {
		fail("open: %v", err)
	}
	db := fmt.Sprintf("go_client_%d", os.Getpid())
	if _, err := admin.Exec("CREATE DATABASE " + db); err != nil {
		fail("create database: %v", err)
	}
	passed := roundTrip(port, db, true) + roundTrip(port, db, false)
	if _, err := admin.Exec("DROP DATABASE " + db); err != nil {
		fail("drop database: %v", err)
	}
	fmt.Printf("go-client: %d passed, 0 failed\n", passed)
}
