// Go's go-sql-driver/mysql as a real client of Quill: run by tests/test_go_client.py.
module quill/tests/go-client

go 1.24.0

require github.com/go-sql-driver/mysql v1.10.1

require filippo.io/edwards25519 v1.2.0 // indirect
