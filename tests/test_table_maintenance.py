"""CHECK, ANALYZE, OPTIMIZE and REPAIR TABLE, SHOW PLUGINS and SHOW TRIGGERS, as MySQL 8
answers them for InnoDB tables (the table of messages, not a statement error, for a table
that does not exist)."""

from sessions import all_rows


def test_maintenance_statements_answer_one_row_per_message(server, conn):
    with conn.cursor() as c:
        c.execute("CREATE TABLE m (id INT PRIMARY KEY, v INT, KEY (v))")
        c.execute("INSERT INTO m VALUES (1, 1), (2, 2)")
        db = conn.db.decode() if isinstance(conn.db, bytes) else conn.db
        assert all_rows(conn, "CHECK TABLE m") == ((f"{db}.m", "check", "status", "OK"),)
        assert all_rows(conn, "CHECK TABLE m EXTENDED") == ((f"{db}.m", "check", "status", "OK"),)
        assert all_rows(conn, "ANALYZE TABLE m") == ((f"{db}.m", "analyze", "status", "OK"),)
        optimize = all_rows(conn, "OPTIMIZE TABLE m")
        assert optimize[0][:3] == (f"{db}.m", "optimize", "note") and optimize[-1] == (f"{db}.m", "optimize", "status", "OK")
        missing = all_rows(conn, "CHECK TABLE m, nope")
        assert missing[1][2:] == ("Error", f"Table '{db}.nope' doesn't exist") and missing[2][2:] == ("status", "Operation failed")


def test_show_plugins_and_triggers(server, conn):
    with conn.cursor() as c:
        plugins = {r[0]: r[2] for r in all_rows(conn, "SHOW PLUGINS")}
        assert plugins["InnoDB"] == "STORAGE ENGINE" and plugins["mysql_native_password"] == "AUTHENTICATION"
        assert plugins.get("caching_sha2_password", "AUTHENTICATION") == "AUTHENTICATION"
        assert all_rows(conn, "SHOW TRIGGERS") == ()
        c.execute("SHOW TRIGGERS")
        assert [d[0] for d in c.description][:3] == ["Trigger", "Event", "Table"]
