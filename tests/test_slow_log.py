"""The slow query log (issue 14): MySQL's file format with Percona's InnoDB fields, read by
pt-query-digest (Debian's percona-toolkit), and the blocker of a row lock wait named.

What it shows: the variables and their checks; a known row lock wait logged with its lock
time, `InnoDB_rec_lock_wait` and the connection, transaction and statement it waited for;
pt-query-digest's report of the file with its `Lock time` and `rec lock wai` lines and the
blocker; `Slow_queries` counting slow statements whether logged or not;
`min_examined_row_limit`, `log_queries_not_using_indexes`, `log_slow_extra`; a prepared
statement logged with its parameters; `FLUSH SLOW LOGS` after a rotation.
"""

import re
import shutil
import subprocess
import threading
import time

import mysql.connector
import pymysql
import pytest

from conftest import PrivateQuill, test_target
from sessions import execute, one

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="reads the server's own slow log file")


def status(conn, name):
    return int(one(conn, "SHOW GLOBAL STATUS LIKE %s", (name,))[1])


def entries(path):
    """The log's entries: (header lines, statement) pairs."""
    text = path.read_text()
    out = []
    for block in re.split(r"(?m)^(?=# Time: )", text)[1:]:
        lines = block.rstrip("\n").split("\n")
        out.append(([l for l in lines if l.startswith("#")], lines[-1]))
    return out


def field(header, name):
    for line in header:
        m = re.search(rf"\b{name}: (\S+)", line)
        if m:
            return m.group(1)
    return None


@pytest.fixture
def quill(tmp_path):
    with PrivateQuill(tmp_path / "q") as q:
        yield q


def test_variables_and_their_checks(quill):
    c = quill.connect()
    assert one(c, "SELECT @@slow_query_log, @@long_query_time, @@log_slow_extra, @@min_examined_row_limit, @@log_output") == (0, 10, 0, 0, "FILE")
    path = one(c, "SELECT @@slow_query_log_file")[0]
    assert path.startswith("/") and path.endswith("/quill-slow.log"), path
    execute(c, "SET SESSION long_query_time = 0.0000015")
    assert str(one(c, "SELECT @@long_query_time")[0]) == "0.000002", "microseconds, rounded"
    execute(c, "SET SESSION long_query_time = -1")
    assert one(c, "SHOW WARNINGS")[1] == 1292
    assert one(c, "SELECT @@long_query_time")[0] == 0
    for sql in ("SET GLOBAL log_output = 'TABLE'", "SET GLOBAL log_slow_verbosity = 'query_plan'", "SET SESSION slow_query_log = 1"):
        with pytest.raises(pymysql.MySQLError) as e:
            execute(c, sql)
        assert e.value.args[0] in (1231, 1229), (sql, e.value.args)


def test_a_row_lock_wait_is_logged_with_its_blocker_and_pt_query_digest_reads_it(quill):
    admin = quill.connect()
    execute(admin, "SET GLOBAL slow_query_log = ON, long_query_time = 0.2, log_slow_verbosity = 'innodb'",
            "CREATE DATABASE shop", "CREATE TABLE shop.parent (id INT PRIMARY KEY, version INT)",
            "INSERT INTO shop.parent VALUES (1, 0)")
    path = quill.datadir / "quill-slow.log"
    holder, waiter = quill.connect("shop"), quill.connect("shop")
    holder_id = one(holder, "SELECT CONNECTION_ID()")[0]
    holder.begin()
    execute(holder, "UPDATE parent SET version = version + 1 WHERE id = 1")
    holder_trx = one(admin, "SELECT trx_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id = %s", (holder_id,))[0]
    # The holder is running a statement while the waiter waits: that statement is named.
    def hold():
        one(holder, "SELECT SLEEP(0.6) AS holding_the_row")
        holder.commit()

    sleeping = threading.Thread(target=hold)
    sleeping.start()
    time.sleep(0.1)
    started = time.monotonic()
    execute(waiter, "UPDATE parent SET version = version + 10 WHERE id = 1")
    waited = time.monotonic() - started
    sleeping.join()

    [(header, statement)] = [e for e in entries(path) if "version + 10" in e[1]]
    assert statement == "UPDATE parent SET version = version + 10 WHERE id = 1;"
    assert 0.3 < float(field(header, "InnoDB_rec_lock_wait")) <= waited + 0.05, header
    assert float(field(header, "Lock_time")) >= float(field(header, "InnoDB_rec_lock_wait"))
    assert float(field(header, "Query_time")) >= float(field(header, "Lock_time"))
    assert field(header, "Rows_examined") == "1"
    assert field(header, "Blocker") == f"thread_id={holder_id},trx_id={holder_trx}", header
    assert "# Blocker statement: SELECT SLEEP(0.6) AS holding_the_row" in header, header
    sleep_entries = [e for e in entries(path) if "holding_the_row" in e[1]]
    assert sleep_entries and field(sleep_entries[0][0], "Blocker") is None, "it waited for nobody"

    # A blocker idle in its transaction: its last statement is named, as such.
    holder.begin()
    execute(holder, "UPDATE parent SET version = version + 1 WHERE id = 1 /* took the lock */")
    threading.Timer(0.4, holder.commit).start()
    execute(waiter, "UPDATE parent SET version = version + 100 WHERE id = 1")
    [(header, _)] = [e for e in entries(path) if "version + 100" in e[1]]
    assert "# Blocker last statement (idle in transaction): UPDATE parent SET version = version + 1 WHERE id = 1 /* took the lock */" in header, header

    report = subprocess.run(["pt-query-digest", str(path)], capture_output=True, text=True, timeout=120)
    assert report.returncode == 0, report.stderr
    out = report.stdout
    assert re.search(r"^# Lock time\s", out, re.M), out
    assert re.search(r"^# rec lock wai\s+\S+\s+\d", out, re.M), out
    # Under String, each query's blockers with their shares (pt-query-digest shortens values
    # when a query has several).
    assert re.search(r"^# Blocker\s+thread_id=", out, re.M), out
    assert "UPDATE parent SET version = version + 10 WHERE id = 1" in out


def test_what_is_slow_and_what_is_logged(quill):
    c = quill.connect()
    execute(c, "CREATE DATABASE d", "CREATE TABLE d.t (id INT PRIMARY KEY, v INT)",
            "INSERT INTO d.t VALUES " + ", ".join(f"({i}, {i})" for i in range(1, 201)))
    path = quill.datadir / "quill-slow.log"
    before = status(c, "Slow_queries")
    execute(c, "SET SESSION long_query_time = 0.05", "SELECT SLEEP(0.1)")
    assert status(c, "Slow_queries") == before + 1, "counted with the log OFF"
    assert not path.exists()

    execute(c, "SET GLOBAL slow_query_log = ON", "SET SESSION min_examined_row_limit = 100", "SELECT SLEEP(0.1) AS few_rows")
    assert status(c, "Slow_queries") == before + 1, "fewer rows examined than min_examined_row_limit"
    execute(c, "SELECT SLEEP(0.1) AS many_rows, COUNT(*) FROM d.t")
    execute(c, "SET SESSION min_examined_row_limit = 0", "SET SESSION long_query_time = 10")
    execute(c, "SELECT v FROM d.t WHERE v = 7 /* fast, no index */", "SELECT v FROM d.t WHERE id = 7 /* fast, primary key */")
    execute(c, "SET GLOBAL log_queries_not_using_indexes = ON, log_slow_extra = ON")
    execute(c, "SELECT v FROM d.t WHERE v = 8 /* fast, no index */", "SELECT v FROM d.t WHERE id = 8 /* fast, primary key */")
    logged = [statement for _, statement in entries(path)]
    assert [s for s in logged if "few_rows" in s] == []
    assert [s for s in logged if "many_rows" in s] != []
    assert [s for s in logged if "fast" in s] == ["SELECT v FROM d.t WHERE v = 8 /* fast, no index */;"]
    header = entries(path)[-1][0]
    assert field(header, "Thread_id") == str(one(c, "SELECT CONNECTION_ID()")[0])
    assert field(header, "Errno") == "0" and field(header, "Rows_examined") == "200"


def test_prepared_statements_are_logged_with_their_parameters_and_flush_reopens(quill):
    admin = quill.connect()
    execute(admin, "SET GLOBAL slow_query_log = ON, long_query_time = 0", "SET SESSION long_query_time = 0", "CREATE DATABASE p",
            "CREATE TABLE p.t (id INT PRIMARY KEY, name VARCHAR(20))")
    cnx = mysql.connector.connect(host=quill.host, port=quill.port, user="root", database="p", autocommit=True)
    try:
        cur = cnx.cursor(prepared=True)
        cur.execute("INSERT INTO t VALUES (?, ?)", (7, "it's"))
    finally:
        cnx.close()
    path = quill.datadir / "quill-slow.log"
    assert "INSERT INTO t VALUES (7, 'it\\'s');" in [s for _, s in entries(path)]

    rotated = path.with_name("quill-slow.log.1")
    shutil.move(path, rotated)
    execute(admin, "SELECT 'into the rotated file'")
    execute(admin, "FLUSH SLOW LOGS")
    execute(admin, "SELECT 'into the new file'")
    assert "into the rotated file" in rotated.read_text()
    fresh = path.read_text()
    assert fresh.startswith("/") and "Tcp port:" in fresh.splitlines()[1], "a new file starts with the header"
    assert "into the new file" in fresh and "into the rotated file" not in fresh
