// Command login logs in to a running Quill with go-sql-driver/mysql as one account, without
// TLS, and prints who it is and the TLS cipher (empty): tests/test_caching_sha2.py runs it
// when the server has no cached secret for the account, so the driver must fetch the
// server's RSA public key and send its password encrypted (caching_sha2_password's full
// authentication).
//
// Usage: QUILL_PORT=3306 QUILL_USER=app QUILL_PASSWORD=pw go run ./login. Prints
// `CURRENT_USER() Ssl_cipher` on one line; exits non-zero with the driver's error.
package main

import (
	"database/sql"
	"fmt"
	"os"

	"github.com/go-sql-driver/mysql"
)

func main() {
	cfg := mysql.NewConfig()
	cfg.Net = "tcp"
	cfg.Addr = "127.0.0.1:" + os.Getenv("QUILL_PORT")
	cfg.User = os.Getenv("QUILL_USER")
	cfg.Passwd = os.Getenv("QUILL_PASSWORD")
	cfg.TLSConfig = "false"
	db, err := sql.Open("mysql", cfg.FormatDSN())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer db.Close()
	var user, name, cipher string
	if err := db.QueryRow("SELECT CURRENT_USER()").Scan(&user); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := db.QueryRow("SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("%s %s\n", user, cipher)
}
