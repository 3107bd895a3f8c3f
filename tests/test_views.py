"""Views survive a crash and a checkpoint, and read the same rows after them.

The SQL behaviour of views (reading one, SHOW and information_schema, errors) is specified in
tests/sql/views.test; this file covers what a restart puts them through: the log replays each
CREATE VIEW as it ran, and a checkpoint writes each view's SHOW CREATE VIEW after every table
(format version 5), in name order, so a view may load before a view it reads. Also: a view's
query keeps the database it was made in, whatever the reader's default database, and a
mariadb-dump of a database with views restores into Quill.
"""

from __future__ import annotations

import subprocess

import pytest

from conftest import PrivateQuill

SCHEMA = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2))",
    "INSERT INTO shop.items VALUES (1, 'tea', 3.50), (2, 'cake', 5.00), (3, 'bun', 2.00)",
    # `a_cheapest` reads `b_cheap`, which comes after it in name order.
    "CREATE VIEW shop.b_cheap AS SELECT id, name, price FROM items WHERE price < 4",
    "CREATE VIEW shop.a_cheapest (label) AS SELECT name FROM b_cheap WHERE price < 3",
    "CREATE VIEW shop.c_ranked AS WITH RECURSIVE n (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3) "
    "SELECT i, (SELECT name FROM items WHERE id = i) AS name FROM n",
]


def snapshot(conn) -> dict[str, object]:
    with conn.cursor() as c:
        out: dict[str, object] = {}
        for v in ("a_cheapest", "b_cheap", "c_ranked"):
            c.execute(f"SHOW CREATE VIEW shop.{v}")
            out[v] = c.fetchone()[1]
        c.execute("SELECT label FROM shop.a_cheapest")
        out["rows a"] = c.fetchall()
        c.execute("SELECT id, name FROM shop.b_cheap ORDER BY id")
        out["rows b"] = c.fetchall()
        c.execute("SELECT i, name FROM shop.c_ranked ORDER BY i")
        out["rows c"] = c.fetchall()
        return out


@pytest.mark.parametrize("restart", ["kill -9, log replay", "checkpoint, then kill -9"])
def test_views_survive_a_restart(tmp_path, restart):
    options = ["--quill-checkpoint-interval-seconds=1"] if restart.startswith("checkpoint") else []
    with PrivateQuill(tmp_path / "data", *options) as server:
        conn = server.connect()
        with conn.cursor() as c:
            c.execute(SCHEMA[0])
            c.execute("USE shop")
            for sql in SCHEMA[1:]:
                c.execute(sql)
        before = snapshot(conn)
        assert before["rows a"] == (("bun",),)
        assert before["rows c"] == ((1, "tea"), (2, "cake"), (3, "bun"))
        assert "`shop`.`items`" in str(before["b_cheap"]), "the view's tables are kept qualified"
        conn.close()
        if options:
            server.wait_for_checkpoint()
        server.kill()
        server.start()
        conn = server.connect()
        assert snapshot(conn) == before
        if options:
            assert "recovery: loaded the checkpoint" in server.log()
        with conn.cursor() as c:
            # Another default database: the view still reads shop.items.
            c.execute("CREATE DATABASE other")
            c.execute("USE other")
            c.execute("CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price DECIMAL(8,2))")
            c.execute("SELECT COUNT(*) FROM shop.b_cheap")
            assert c.fetchone() == (2,)
        conn.close()


def test_a_dump_with_views_restores(tmp_path):
    with PrivateQuill(tmp_path / "data") as server:
        conn = server.connect()
        with conn.cursor() as c:
            c.execute(SCHEMA[0])
            c.execute("USE shop")
            for sql in SCHEMA[1:3]:
                c.execute(sql)
            c.execute("CREATE VIEW shop.expensive AS SELECT name FROM items WHERE price > 4")
        conn.close()
        args = ["-h", server.host, "-P", str(server.port), "-uroot"]
        dump = subprocess.run(["mariadb-dump", *args, "--databases", "shop"], capture_output=True, text=True, timeout=60, check=True).stdout
        assert "VIEW `expensive`" in dump
        conn = server.connect()
        with conn.cursor() as c:
            c.execute("DROP DATABASE shop")
        conn.close()
        subprocess.run(["mariadb", *args], input=dump, capture_output=True, text=True, timeout=60, check=True)
        conn = server.connect()
        with conn.cursor() as c:
            c.execute("SELECT name FROM shop.expensive")
            assert c.fetchall() == (("cake",),)
            c.execute("SELECT TABLE_TYPE FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'shop' AND TABLE_NAME = 'expensive'")
            assert c.fetchone() == ("VIEW",)
        conn.close()
