"""Foreign keys survive a crash and a checkpoint, and stay enforced after them.

The SQL behaviour (RESTRICT, CASCADE, SET NULL, errors, information_schema) is specified in
tests/sql/foreign_keys.test; this file covers what a restart puts them through: the log
replays each CREATE and ALTER as it ran, and a checkpoint writes each table as SHOW CREATE
TABLE prints it, in name order, so a child may load before its parent and must load
without being checked against it.
"""

from __future__ import annotations


import pymysql
import pytest

from conftest import PrivateQuill

SCHEMA = [
    "CREATE DATABASE shop",
    "CREATE TABLE shop.a_orders (id INT PRIMARY KEY, customer INT, "
    "CONSTRAINT orders_customer FOREIGN KEY (customer) REFERENCES shop.z_customers (id) ON DELETE CASCADE)",
    "CREATE TABLE shop.z_customers (id INT PRIMARY KEY, name VARCHAR(20))",
    "INSERT INTO shop.z_customers VALUES (1, 'ann'), (2, 'bob')",
    "INSERT INTO shop.a_orders VALUES (10, 1), (11, 2)",
    "ALTER TABLE shop.z_customers ADD COLUMN tier INT",
    "CREATE TABLE shop.notes (id INT PRIMARY KEY, order_id INT)",
    "ALTER TABLE shop.notes ADD CONSTRAINT notes_order FOREIGN KEY (order_id) REFERENCES shop.a_orders (id) ON DELETE SET NULL",
    "INSERT INTO shop.notes VALUES (1, 10)",
]


def definitions(conn) -> dict[str, str]:
    with conn.cursor() as c:
        out = {}
        for t in ("a_orders", "z_customers", "notes"):
            c.execute(f"SHOW CREATE TABLE shop.{t}")
            out[t] = c.fetchone()[1]
        return out


def assert_enforced(conn) -> None:
    with conn.cursor() as c:
        with pytest.raises(pymysql.err.IntegrityError) as e:
            c.execute("INSERT INTO shop.a_orders VALUES (12, 99)")
        assert e.value.args[0] == 1452
        c.execute("DELETE FROM shop.z_customers WHERE id = 1")
        c.execute("SELECT id FROM shop.a_orders ORDER BY id")
        assert c.fetchall() == ((11,),), "the cascade deleted ann's order"
        c.execute("SELECT id, order_id FROM shop.notes")
        assert c.fetchall() == ((1, None),), "and emptied the note's reference to it"


@pytest.mark.parametrize("restart", ["kill -9, log replay", "checkpoint, then kill -9"])
def test_keys_survive_a_restart_and_stay_enforced(tmp_path, restart):
    options = ["--quill-checkpoint-interval-seconds=1"] if restart.startswith("checkpoint") else []
    with PrivateQuill(tmp_path / "data", *options) as server:
        conn = server.connect()
        with conn.cursor() as c:
            # The child first, as a dump loads it.
            c.execute("SET foreign_key_checks = 0")
            for sql in SCHEMA:
                c.execute(sql)
        before = definitions(conn)
        assert "CONSTRAINT `orders_customer` FOREIGN KEY (`customer`) REFERENCES `z_customers` (`id`) ON DELETE CASCADE" in before["a_orders"]
        conn.close()
        if options:
            server.wait_for_checkpoint()
        server.kill()
        server.start()
        conn = server.connect()
        assert definitions(conn) == before
        if options:
            assert "recovery: loaded the checkpoint" in server.log()
        assert_enforced(conn)
        conn.close()
