"""Quill as a replication source, read by python-mysql-replication (the `mysql-replication`
package) the way change-capture programs read MySQL: COM_BINLOG_DUMP by file and position,
and by GTID set.

What it shows (issue 13): row events carry the changed rows' values, and updates and deletes
their before images; the virtual binary log files follow the commit log's segments, rotate
from one to the next, and keep their names and positions across a restart, so a reader that
stopped resumes where it was; events reach a waiting reader when a commit is durable; a file
that does not exist is refused with error 1236.
"""

import threading
from decimal import Decimal
import time

import pymysql
import pytest
from pymysqlreplication import BinLogStreamReader
from pymysqlreplication.event import GtidEvent, QueryEvent, RotateEvent, XidEvent
from pymysqlreplication.row_event import DeleteRowsEvent, UpdateRowsEvent, WriteRowsEvent

from conftest import PrivateQuill


# Small segments: a few hundred rows fill several virtual files.
SEGMENT_BYTES = 65536


def stream(server, **options):
    settings = {"host": server.host, "port": server.port, "user": "root", "password": ""}
    options.setdefault("blocking", False)
    return BinLogStreamReader(connection_settings=settings, server_id=100, **options)


def read_all(server, **options):
    """Every event from where `options` say (by default the first file's start) to the end
    of the log, with the file and position after each."""
    if "log_file" not in options and "auto_position" not in options:
        c = server.connect()
        with c.cursor() as cur:
            cur.execute("SHOW BINARY LOGS")
            options.update(log_file=cur.fetchone()[0], log_pos=4, resume_stream=True)
        c.close()
    reader = stream(server, **options)
    try:
        return [(event, reader.log_file, reader.log_pos) for event in reader]
    finally:
        reader.close()


def rows_of(events):
    out = []
    for event, _, _ in events:
        if isinstance(event, (WriteRowsEvent, UpdateRowsEvent, DeleteRowsEvent)):
            for row in event.rows:
                out.append((type(event).__name__, event.table, row.get("before_values"), row.get("after_values") or row.get("values")))
    return out


def test_row_events_carry_values_and_before_images_across_rotations_and_restarts(tmp_path):
    with PrivateQuill(tmp_path / "data", f"--quill_log_segment_bytes={SEGMENT_BYTES}") as server:
        c = server.connect()
        cur = c.cursor()
        cur.execute("CREATE DATABASE shop")
        cur.execute("CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(500), price DECIMAL(10,2))")
        for i in range(1, 401):
            cur.execute("INSERT INTO shop.items VALUES (%s, %s, %s)", (i, f"item {i:04} " + "x" * 400, f"{i}.25"))
        cur.execute("UPDATE shop.items SET price = 9.99 WHERE id = 7")
        cur.execute("DELETE FROM shop.items WHERE id = 8")
        cur.execute("SHOW MASTER STATUS")
        status = cur.fetchone()

        events = read_all(server)
        files = [e.next_binlog for e, _, _ in events if isinstance(e, RotateEvent)]
        assert len(set(files)) >= 3, f"the log spans several files: {files}"
        assert files == sorted(files), "files come in order"
        rows = rows_of(events)
        assert len(rows) == 402
        assert rows[0] == ("WriteRowsEvent", "items", None, {"id": 1, "name": "item 0001 " + "x" * 400, "price": Decimal("1.25")})
        update = [r for r in rows if r[0] == "UpdateRowsEvent"]
        assert [(u[2]["price"], u[3]["price"]) for u in update] == [(Decimal("7.25"), Decimal("9.99"))], "the update's before and after images"
        delete = [r for r in rows if r[0] == "DeleteRowsEvent"]
        assert delete[0][3]["id"] == 8 and delete[0][3]["name"].startswith("item 0008"), "the deleted row's image"
        # SHOW MASTER STATUS names where the stream ends.
        assert (events[-1][1], events[-1][2]) == (status[0], status[1])
        gtids = [e.gtid for e, _, _ in events if isinstance(e, GtidEvent)]
        assert len(gtids) == 2 + 400 + 2 and gtids[-1].endswith(f":{len(gtids)}")
        assert status[4] == gtids[-1].rsplit(":", 1)[0] + f":1-{len(gtids)}"

        # Resume at the position after the 200th insert's XID: the rest, exactly.
        xids = [(f, p) for e, f, p in events if isinstance(e, XidEvent)]
        resume_file, resume_pos = xids[199]
        rest = read_all(server, log_file=resume_file, log_pos=resume_pos, resume_stream=True)
        assert [r[3]["id"] for r in rows_of(rest) if r[0] == "WriteRowsEvent"] == list(range(201, 401))
        c.close()
        server.stop()
        server.start()
        # After a restart the same file and position name the same transaction.
        again = read_all(server, log_file=resume_file, log_pos=resume_pos, resume_stream=True)
        assert rows_of(again) == rows_of(rest)
        c = server.connect()
        cur = c.cursor()
        cur.execute("SHOW MASTER STATUS")
        assert cur.fetchone()[:2] == status[:2], "the end of the log is where it was"
        cur.execute("SHOW BINARY LOGS")
        logs = cur.fetchall()
        assert [name for name, _, _ in logs][-1] == status[0]
        assert len(logs) >= 3
        c.close()


def test_a_waiting_reader_gets_each_commit_and_a_gtid_reader_only_what_it_lacks(tmp_path):
    with PrivateQuill(tmp_path / "data") as server:
        c = server.connect()
        cur = c.cursor()
        cur.execute("CREATE DATABASE d")
        cur.execute("CREATE TABLE d.t (id INT PRIMARY KEY, note TEXT)")
        cur.execute("SELECT @@server_uuid")
        uuid = cur.fetchone()[0]

        reader = stream(server, blocking=True, only_events=[WriteRowsEvent])
        got = []
        done = threading.Event()

        def follow():
            for event in reader:
                got.extend(row["values"]["id"] for row in event.rows)
                if len(got) >= 3:
                    break
            done.set()

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        time.sleep(0.3)
        for i in (1, 2, 3):
            cur.execute("INSERT INTO d.t VALUES (%s, 'live')", (i,))
        assert done.wait(10), f"a waiting reader got {got}"
        reader.close()
        assert got == [1, 2, 3]

        # A reader that has transactions 1-3 (the two DDL and the first insert) gets the rest.
        events = read_all(server, auto_position=f"{uuid}:1-3")
        assert [r[3]["id"] for r in rows_of(events)] == [2, 3]
        assert not any(isinstance(e, QueryEvent) and e.query.startswith("CREATE") for e, _, _ in events)
        c.close()


def test_an_unknown_file_is_error_1236(tmp_path):
    with PrivateQuill(tmp_path / "data") as server:
        with pytest.raises(pymysql.err.OperationalError) as failure:
            read_all(server, log_file="quill-bin.999999", log_pos=4, resume_stream=True)
        assert failure.value.args[0] == 1236
