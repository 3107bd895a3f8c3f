// Command orders drives a running Quill with database/sql and go-sql-driver/mysql the way a
// small shop service does: an orders schema, a pool of connections, prepared statements,
// transactions committed and rolled back, concurrent orders on the same product under
// SELECT ... FOR UPDATE, DATETIME(6) values read back as time.Time (parseTime=true),
// sql.ErrNoRows, a duplicate key seen as *mysql.MySQLError 1062 / 23000 after which the
// connection goes on, several statements in one query, and a query stopped by its context.
// The flow runs twice: with server-side prepared statements (binary protocol) and with
// interpolateParams=true (the driver escapes values into the statement text).
//
// Usage: QUILL_PORT=3306 go run ./orders (host 127.0.0.1, user root, empty password). Prints
// one line per check, then `go-client orders: N passed, M failed`; exits non-zero on a
// failure.
package main

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
)

var passed, failed int

// check runs one named check; the error it returns (or a panic) is its failure.
func check(name string, body func() error) {
	err := func() (err error) {
		defer func() {
			if r := recover(); r != nil {
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		return body()
	}()
	if err != nil {
		failed++
		fmt.Printf("FAILED %s\n  %v\n", name, err)
		return
	}
	passed++
	fmt.Printf("ok %s\n", name)
}

// want returns an error describing the difference when got != expected.
func want[T comparable](what string, got, expected T) error {
	if got != expected {
		return fmt.Errorf("%s: got %#v, want %#v", what, got, expected)
	}
	return nil
}

// first returns the first non-nil error.
func first(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

var schema = []string{
	`CREATE TABLE customers (
		id INT AUTO_INCREMENT PRIMARY KEY,
		email VARCHAR(255) NOT NULL UNIQUE,
		name VARCHAR(100) NOT NULL,
		created_at DATETIME(6) NOT NULL
	) DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE products (
		id INT AUTO_INCREMENT PRIMARY KEY,
		sku VARCHAR(32) NOT NULL,
		title VARCHAR(200) NOT NULL,
		price DECIMAL(10,2) NOT NULL,
		stock INT NOT NULL,
		thumbnail BLOB NULL,
		UNIQUE KEY sku (sku)
	) DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE orders (
		id BIGINT AUTO_INCREMENT PRIMARY KEY,
		customer_id INT NOT NULL,
		placed_at DATETIME(6) NOT NULL,
		ship_date DATE NULL,
		total DECIMAL(12,2) NOT NULL,
		note VARCHAR(500) NULL,
		external_ref BIGINT NULL,
		KEY by_customer (customer_id)
	) DEFAULT CHARSET=utf8mb4`,
	`CREATE TABLE order_items (
		order_id BIGINT NOT NULL,
		product_id INT NOT NULL,
		qty INT NOT NULL,
		unit_price DECIMAL(10,2) NOT NULL,
		PRIMARY KEY (order_id, product_id)
	) DEFAULT CHARSET=utf8mb4`,
}

var names = []string{"Zoë Ångström", "東京 太郎", "Łukasz 🍣 Żółć", "O'Brien \\ \"quoted\" \x00 nul"}

var placedAt = time.Date(2024, time.February, 29, 13, 45, 7, 123456000, time.UTC)

func dsn(port, db, extra string) string {
	return fmt.Sprintf("root:@tcp(127.0.0.1:%s)/%s?charset=utf8mb4&parseTime=true&loc=UTC%s", port, db, extra)
}

func flow(port, label, params string) {
	db := fmt.Sprintf("go_orders_%s_%d", strings.ReplaceAll(label, "-", "_"), os.Getpid())
	admin, err := sql.Open("mysql", dsn(port, "", ""))
	if err != nil {
		check(label+": open", func() error { return err })
		return
	}
	defer admin.Close()
	if _, err := admin.Exec("DROP DATABASE IF EXISTS " + db); err != nil {
		check(label+": drop database", func() error { return err })
		return
	}
	if _, err := admin.Exec("CREATE DATABASE " + db + " DEFAULT CHARACTER SET utf8mb4"); err != nil {
		check(label+": create database", func() error { return err })
		return
	}
	defer admin.Exec("DROP DATABASE IF EXISTS " + db)

	pool, err := sql.Open("mysql", dsn(port, db, params))
	if err != nil {
		check(label+": open", func() error { return err })
		return
	}
	defer pool.Close()
	pool.SetMaxOpenConns(6)
	pool.SetMaxIdleConns(6)
	ctx := context.Background()
	name := func(s string) string { return label + ": " + s }

	check(name("schema created"), func() error {
		for _, ddl := range schema {
			res, err := pool.Exec(ddl)
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n != 0 {
				return fmt.Errorf("CREATE TABLE affected %d rows (%v)", n, err)
			}
		}
		var count int
		if err := pool.QueryRow("SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ?", db).Scan(&count); err != nil {
			return err
		}
		return want("tables", count, 4)
	})

	check(name("prepared INSERT reused: LastInsertId, RowsAffected"), func() error {
		stmt, err := pool.Prepare("INSERT INTO customers (email, name, created_at) VALUES (?, ?, ?)")
		if err != nil {
			return err
		}
		defer stmt.Close()
		for i, n := range names {
			res, err := stmt.Exec(fmt.Sprintf("c%d@example.com", i), n, time.Date(2024, 1, 15+i, 9, 30, 0, 250000000, time.UTC))
			if err != nil {
				return err
			}
			id, err1 := res.LastInsertId()
			rows, err2 := res.RowsAffected()
			if err := first(err1, err2, want("LastInsertId", id, int64(i+1)), want("RowsAffected", rows, int64(1))); err != nil {
				return err
			}
		}
		return nil
	})

	check(name("non-ASCII text, quotes, backslash and NUL round-trip"), func() error {
		for i, n := range names {
			var got, hex string
			var chars int
			err := pool.QueryRow("SELECT name, CHAR_LENGTH(name), HEX(name) FROM customers WHERE email = ?", fmt.Sprintf("c%d@example.com", i)).Scan(&got, &chars, &hex)
			if err := first(err, want("name", got, n), want("CHAR_LENGTH", chars, len([]rune(n))), want("HEX", hex, strings.ToUpper(fmt.Sprintf("%x", n)))); err != nil {
				return err
			}
			var id int
			if err := first(pool.QueryRow("SELECT id FROM customers WHERE name = ?", n).Scan(&id), want("id by name", id, i+1)); err != nil {
				return err
			}
		}
		return nil
	})

	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	check(name("products with BLOB bytes, empty and NULL"), func() error {
		blobs := [][]byte{every, {}, nil}
		items := []struct {
			sku, title, price string
			stock             int
		}{{"SKU-1", "Teapot", "19.99", 10}, {"SKU-2", "Cup « fine china »", "4.50", 100}, {"SKU-3", "Tray", "35.00", 3}}
		for i, p := range items {
			if _, err := pool.Exec("INSERT INTO products (sku, title, price, stock, thumbnail) VALUES (?, ?, ?, ?, ?)", p.sku, p.title, p.price, p.stock, blobs[i]); err != nil {
				return err
			}
		}
		rows, err := pool.Query("SELECT thumbnail, thumbnail IS NULL FROM products ORDER BY id")
		if err != nil {
			return err
		}
		defer rows.Close()
		i := 0
		for rows.Next() {
			var b []byte
			var isNull bool
			if err := rows.Scan(&b, &isNull); err != nil {
				return err
			}
			if !bytes.Equal(b, blobs[i]) || isNull != (blobs[i] == nil) {
				return fmt.Errorf("thumbnail %d: got %x (NULL %t)", i, b, isNull)
			}
			i++
		}
		return first(rows.Err(), want("rows", i, 3))
	})

	var orderID int64
	check(name("transaction committed: visible to others only after Commit"), func() error {
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		cents := 0
		for _, line := range [][2]int{{1, 2}, {2, 3}} {
			var price string
			var stock int
			if err := tx.QueryRow("SELECT price, stock FROM products WHERE id = ? FOR UPDATE", line[0]).Scan(&price, &stock); err != nil {
				return err
			}
			var whole, frac int
			fmt.Sscanf(price, "%d.%d", &whole, &frac)
			cents += (whole*100 + frac) * line[1]
		}
		res, err := tx.Exec("INSERT INTO orders (customer_id, placed_at, ship_date, total, note, external_ref) VALUES (?, ?, ?, ?, ?, ?)",
			1, placedAt, "2024-03-04", fmt.Sprintf("%d.%02d", cents/100, cents%100), nil, int64(9007199254740993))
		if err != nil {
			return err
		}
		if orderID, err = res.LastInsertId(); err != nil {
			return err
		}
		for _, line := range [][2]int{{1, 2}, {2, 3}} {
			if _, err := tx.Exec("INSERT INTO order_items (order_id, product_id, qty, unit_price) SELECT ?, id, ?, price FROM products WHERE id = ?", orderID, line[1], line[0]); err != nil {
				return err
			}
			res, err := tx.Exec("UPDATE products SET stock = stock - ? WHERE id = ? AND stock >= ?", line[1], line[0], line[1])
			if err != nil {
				return err
			}
			if n, _ := res.RowsAffected(); n != 1 {
				return fmt.Errorf("stock update affected %d rows", n)
			}
		}
		var seen int
		if err := first(pool.QueryRow("SELECT COUNT(*) FROM orders").Scan(&seen), want("orders seen before commit", seen, 0)); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		if err := want("Commit twice", tx.Commit(), sql.ErrTxDone); err != nil {
			return err
		}
		var total, sum string
		var stock1, stock2 int
		err = pool.QueryRow("SELECT o.total, SUM(i.qty * i.unit_price) FROM orders o JOIN order_items i ON i.order_id = o.id WHERE o.id = ? GROUP BY o.id, o.total", orderID).Scan(&total, &sum)
		err2 := pool.QueryRow("SELECT (SELECT stock FROM products WHERE id = 1), (SELECT stock FROM products WHERE id = 2)").Scan(&stock1, &stock2)
		return first(err, err2, want("total", total, "53.48"), want("sum of items", sum, "53.48"), want("stock 1", stock1, 8), want("stock 2", stock2, 97))
	})

	check(name("transaction rolled back leaves no trace"), func() error {
		tx, err := pool.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec("INSERT INTO orders (customer_id, placed_at, total) VALUES (?, NOW(6), ?)", 2, "35.00"); err != nil {
			tx.Rollback()
			return err
		}
		if _, err := tx.Exec("UPDATE products SET stock = stock - 3 WHERE sku = ?", "SKU-3"); err != nil {
			tx.Rollback()
			return err
		}
		var inside int
		if err := tx.QueryRow("SELECT COUNT(*) FROM orders").Scan(&inside); err != nil {
			tx.Rollback()
			return err
		}
		if err := first(want("orders inside", inside, 2), tx.Rollback()); err != nil {
			return err
		}
		var after, stock int
		err1 := pool.QueryRow("SELECT COUNT(*) FROM orders").Scan(&after)
		err2 := pool.QueryRow("SELECT stock FROM products WHERE sku = ?", "SKU-3").Scan(&stock)
		return first(err1, err2, want("orders after", after, 1), want("stock", stock, 3), want("Rollback twice", tx.Rollback(), sql.ErrTxDone))
	})

	check(name("parseTime: DATETIME(6) and DATE read back as time.Time, exactly"), func() error {
		var placed, ship, created time.Time
		var micros string
		err := pool.QueryRow("SELECT o.placed_at, o.ship_date, c.created_at, DATE_FORMAT(o.placed_at, '%f') FROM orders o JOIN customers c ON c.id = o.customer_id WHERE o.id = ?", orderID).Scan(&placed, &ship, &created, &micros)
		if err != nil {
			return err
		}
		if !placed.Equal(placedAt) || placed.Location() != time.UTC {
			return fmt.Errorf("placed_at: got %v, want %v", placed, placedAt)
		}
		if !ship.Equal(time.Date(2024, 3, 4, 0, 0, 0, 0, time.UTC)) {
			return fmt.Errorf("ship_date: got %v", ship)
		}
		if !created.Equal(time.Date(2024, 1, 15, 9, 30, 0, 250000000, time.UTC)) {
			return fmt.Errorf("created_at: got %v", created)
		}
		// A time.Time parameter finds the row it was stored from.
		var id int64
		err = pool.QueryRow("SELECT id FROM orders WHERE placed_at = ?", placedAt).Scan(&id)
		return first(err, want("micros", micros, "123456"), want("order by placed_at", id, orderID))
	})

	check(name("types: DECIMAL, BIGINT limits, NULL into sql.Null*"), func() error {
		var total string
		var ref int64
		var note sql.NullString
		var ship sql.NullTime
		var nref sql.NullInt64
		err := pool.QueryRow("SELECT total, external_ref, note FROM orders WHERE id = ?", orderID).Scan(&total, &ref, &note)
		if err := first(err, want("total", total, "53.48"), want("external_ref", ref, int64(9007199254740993)), want("note valid", note.Valid, false)); err != nil {
			return err
		}
		err = pool.QueryRow("SELECT ship_date, external_ref FROM orders WHERE customer_id = ? AND ship_date IS NULL", 1).Scan(&ship, &nref)
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("no order without a ship date expected, got %v", err)
		}
		var lo, hi int64
		var umax uint64
		err = pool.QueryRow("SELECT ? + 0, ? - 0, CAST(? AS UNSIGNED)", int64(-9223372036854775808), int64(9223372036854775807), "18446744073709551615").Scan(&lo, &hi, &umax)
		return first(err, want("BIGINT min", lo, int64(-9223372036854775808)), want("BIGINT max", hi, int64(9223372036854775807)), want("BIGINT UNSIGNED max", umax, uint64(18446744073709551615)))
	})

	check(name("column types reported to database/sql"), func() error {
		rows, err := pool.Query("SELECT id, placed_at, ship_date, total, note, external_ref FROM orders WHERE id = ?", orderID)
		if err != nil {
			return err
		}
		defer rows.Close()
		types, err := rows.ColumnTypes()
		if err != nil {
			return err
		}
		var got []string
		for _, t := range types {
			nullable, _ := t.Nullable()
			desc := fmt.Sprintf("%s %s null=%t", t.Name(), t.DatabaseTypeName(), nullable)
			if p, s, ok := t.DecimalSize(); ok {
				desc += fmt.Sprintf(" (%d,%d)", p, s)
			}
			got = append(got, desc)
		}
		return want("column types", strings.Join(got, "; "),
			"id BIGINT null=false; placed_at DATETIME null=false (6,6); ship_date DATE null=true; total DECIMAL null=false (12,2); note VARCHAR null=true; external_ref BIGINT null=true")
	})

	check(name("sql.ErrNoRows for a missing row"), func() error {
		var title string
		err := pool.QueryRow("SELECT title FROM products WHERE sku = ?", "no-such-sku").Scan(&title)
		if !errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("got %v, want sql.ErrNoRows", err)
		}
		return nil
	})

	check(name("duplicate key is *mysql.MySQLError 1062 / 23000, and the connection goes on"), func() error {
		conn, err := pool.Conn(ctx)
		if err != nil {
			return err
		}
		defer conn.Close()
		var before, after int64
		if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&before); err != nil {
			return err
		}
		_, err = conn.ExecContext(ctx, "INSERT INTO customers (email, name, created_at) VALUES (?, ?, NOW())", "c0@example.com", "Again")
		var me *mysql.MySQLError
		if !errors.As(err, &me) {
			return fmt.Errorf("got %v (%T), want a *mysql.MySQLError", err, err)
		}
		if err := first(want("Number", me.Number, uint16(1062)), want("SQLState", string(me.SQLState[:]), "23000")); err != nil {
			return err
		}
		if !strings.HasPrefix(me.Message, "Duplicate entry 'c0@example.com' for key") {
			return fmt.Errorf("message: %q", me.Message)
		}
		var count int
		err1 := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&after)
		err2 := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM customers").Scan(&count)
		return first(err1, err2, want("same connection", after, before), want("customers", count, len(names)))
	})

	check(name("duplicate key inside a transaction undoes only that statement"), func() error {
		tx, err := pool.Begin()
		if err != nil {
			return err
		}
		defer tx.Rollback()
		stmt, err := tx.Prepare("INSERT INTO products (sku, title, price, stock) VALUES (?, ?, ?, ?)")
		if err != nil {
			return err
		}
		defer stmt.Close()
		if _, err := stmt.Exec("SKU-5", "Spoon", "2.00", 50); err != nil {
			return err
		}
		_, err = stmt.Exec("SKU-1", "Clash", "1.00", 1)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1062 {
			return fmt.Errorf("got %v, want error 1062", err)
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		var skus string
		err = pool.QueryRow("SELECT GROUP_CONCAT(sku ORDER BY id) FROM products").Scan(&skus)
		return first(err, want("skus", skus, "SKU-1,SKU-2,SKU-3,SKU-5"))
	})

	check(name("RowsAffected of UPDATE: changed rows, or matched rows with clientFoundRows"), func() error {
		res, err := pool.Exec("UPDATE products SET price = ? WHERE sku IN (?, ?)", "4.50", "SKU-1", "SKU-2")
		if err != nil {
			return err
		}
		changed, _ := res.RowsAffected()
		found, err := sql.Open("mysql", dsn(port, db, params+"&clientFoundRows=true"))
		if err != nil {
			return err
		}
		defer found.Close()
		res, err = found.Exec("UPDATE products SET price = ? WHERE sku IN (?, ?)", "19.99", "SKU-1", "SKU-3")
		if err != nil {
			return err
		}
		matched, _ := res.RowsAffected()
		_, err = pool.Exec("UPDATE products SET price = ? WHERE sku = ?", "35.00", "SKU-3")
		return first(err, want("changed", changed, int64(1)), want("matched", matched, int64(2)))
	})

	check(name("concurrent orders on one product: no stock lost under FOR UPDATE"), func() error {
		var start int
		if err := pool.QueryRow("SELECT stock FROM products WHERE sku = 'SKU-2'").Scan(&start); err != nil {
			return err
		}
		const workers, each = 6, 8
		var wg sync.WaitGroup
		errs := make(chan error, workers)
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				for i := 0; i < each; i++ {
					if err := placeOrder(ctx, pool, w%len(names)+1, 2, 1); err != nil {
						errs <- fmt.Errorf("worker %d order %d: %w", w, i, err)
						return
					}
				}
			}(w)
		}
		wg.Wait()
		close(errs)
		if err := <-errs; err != nil {
			return err
		}
		var stock, orders, items int
		err1 := pool.QueryRow("SELECT stock FROM products WHERE sku = 'SKU-2'").Scan(&stock)
		err2 := pool.QueryRow("SELECT COUNT(*), (SELECT COUNT(*) FROM order_items) FROM orders").Scan(&orders, &items)
		return first(err1, err2, want("stock", stock, start-workers*each), want("orders", orders, 1+workers*each), want("items", items, 2+workers*each))
	})

	check(name("a query stopped by its context; the pool goes on"), func() error {
		short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
		defer cancel()
		began := time.Now()
		var x int
		err := pool.QueryRowContext(short, "SELECT SLEEP(5)").Scan(&x)
		if !errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("got %v, want context.DeadlineExceeded", err)
		}
		if elapsed := time.Since(began); elapsed > 3*time.Second {
			return fmt.Errorf("the cancelled query took %v", elapsed)
		}
		var n int
		return first(pool.QueryRow("SELECT COUNT(*) FROM customers").Scan(&n), want("customers", n, len(names)))
	})
}

// placeOrder is the service's order path: lock the product row, check and take its stock,
// write the order and its line, all in one transaction.
func placeOrder(ctx context.Context, pool *sql.DB, customer, product, qty int) error {
	tx, err := pool.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	var price string
	var stock int
	if err := tx.QueryRowContext(ctx, "SELECT price, stock FROM products WHERE id = ? FOR UPDATE", product).Scan(&price, &stock); err != nil {
		return err
	}
	if stock < qty {
		return fmt.Errorf("out of stock: %d", stock)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE products SET stock = ? WHERE id = ?", stock-qty, product); err != nil {
		return err
	}
	res, err := tx.ExecContext(ctx, "INSERT INTO orders (customer_id, placed_at, total) VALUES (?, ?, ? * ?)", customer, time.Now().UTC(), price, qty)
	if err != nil {
		return err
	}
	id, err := res.LastInsertId()
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO order_items (order_id, product_id, qty, unit_price) VALUES (?, ?, ?, ?)", id, product, qty, price); err != nil {
		return err
	}
	return tx.Commit()
}

func multiStatements(port string) {
	check("multiStatements=true: several result sets from one query", func() error {
		pool, err := sql.Open("mysql", dsn(port, "", "&multiStatements=true"))
		if err != nil {
			return err
		}
		defer pool.Close()
		rows, err := pool.Query("SELECT 1 AS a, 'x' AS b; DO 0; SELECT n FROM (SELECT 2 AS n UNION ALL SELECT 3) t ORDER BY n")
		if err != nil {
			return err
		}
		defer rows.Close()
		var sets [][]string
		for {
			cols, err := rows.Columns()
			if err != nil {
				return err
			}
			set := []string{strings.Join(cols, ",")}
			for rows.Next() {
				vals := make([]sql.RawBytes, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				if err := rows.Scan(ptrs...); err != nil {
					return err
				}
				var parts []string
				for _, v := range vals {
					parts = append(parts, string(v))
				}
				set = append(set, strings.Join(parts, ","))
			}
			sets = append(sets, set)
			if !rows.NextResultSet() {
				break
			}
		}
		if err := rows.Err(); err != nil {
			return err
		}
		return want("result sets", fmt.Sprint(sets), "[[a,b 1,x] [n 2 3]]")
	})
}

func main() {
	port := os.Getenv("QUILL_PORT")
	if port == "" {
		port = "3306"
	}
	flow(port, "prepared", "")
	flow(port, "interpolated", "&interpolateParams=true")
	multiStatements(port)
	fmt.Printf("go-client orders: %d passed, %d failed\n", passed, failed)
	if failed > 0 {
		os.Exit(1)
	}
}
