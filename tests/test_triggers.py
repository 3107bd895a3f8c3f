"""Triggers (issue 40): BEFORE / AFTER INSERT, UPDATE and DELETE, NEW and OLD, compound
bodies, SIGNAL, action order, the errors MySQL gives when a trigger is made or fires, and
that triggers last: a restart, a checkpoint, a dump and a replica.

The central check is a seeded property test: triggers keep a summary table of another
table's rows, and after every statement of a random workload (multi-row writes, REPLACE,
ON DUPLICATE KEY UPDATE, multi-table DELETE, statements that fail half-way) the summary
must equal the same summary computed by a GROUP BY, the oracle. A failing seed prints
the command that replays it.
"""

from __future__ import annotations

import os
import random
import subprocess
import time

import pymysql
import pytest

from conftest import PrivateQuill, scratch_database
from sessions import all_rows as rows, error_code as errno, execute

# Seeds of the property test per run (QUILL_TRIGGER_SEEDS overrides, for longer runs).
SEEDS = int(os.environ.get("QUILL_TRIGGER_SEEDS", "6"))
STEPS_PER_SEED = 60

ITEMS_TRIGGERS = [
    """CREATE TRIGGER items_bi BEFORE INSERT ON items FOR EACH ROW
       BEGIN
         IF NEW.qty < 0 THEN SET NEW.qty = 0; END IF;
         SET NEW.name = UPPER(NEW.name);
       END""",
    "CREATE TRIGGER items_ai AFTER INSERT ON items FOR EACH ROW INSERT INTO audit (what) VALUES (CONCAT('ins ', NEW.id, ' ', NEW.name, ' ', NEW.qty))",
    "CREATE TRIGGER items_bu BEFORE UPDATE ON items FOR EACH ROW SET NEW.changes = OLD.changes + 1",
    """CREATE TRIGGER items_ad AFTER DELETE ON items FOR EACH ROW
       BEGIN
         DECLARE n INT;
         SELECT COUNT(*) INTO n FROM items;
         INSERT INTO audit (what) VALUES (CONCAT('del ', OLD.id, ' left ', n));
       END""",
    """CREATE TRIGGER items_bd BEFORE DELETE ON items FOR EACH ROW
       BEGIN
         IF OLD.name = 'KEEP' THEN
           SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'cannot delete KEEP';
         END IF;
       END""",
]


def make_items(conn):
    execute(
        conn,
        "CREATE TABLE items (id INT PRIMARY KEY AUTO_INCREMENT, name VARCHAR(20), qty INT NOT NULL DEFAULT 0, changes INT DEFAULT 0)",
        "CREATE TABLE audit (id INT PRIMARY KEY AUTO_INCREMENT, what VARCHAR(100))",
        *ITEMS_TRIGGERS,
    )


def test_triggers_fire_before_and_after_each_row(conn):
    make_items(conn)
    execute(conn, "INSERT INTO items (name, qty) VALUES ('a', 5), ('b', -3), ('keep', 1)")
    assert rows(conn, "SELECT id, name, qty, changes FROM items ORDER BY id") == ((1, "A", 5, 0), (2, "B", 0, 0), (3, "KEEP", 1, 0))
    execute(conn, "UPDATE items SET qty = qty + 1", "UPDATE items SET qty = qty + 1 WHERE id = 1")
    assert rows(conn, "SELECT id, qty, changes FROM items ORDER BY id") == ((1, 7, 2), (2, 1, 1), (3, 2, 1))
    execute(conn, "DELETE FROM items WHERE id = 2")
    # The BEFORE DELETE trigger's SIGNAL fails the statement: nothing of it stays.
    assert errno(conn, "DELETE FROM items WHERE id > 0") == 1644
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("DELETE FROM items WHERE name = 'KEEP'")
        assert e.value.args[1] == "cannot delete KEEP"
    assert rows(conn, "SELECT id FROM items ORDER BY id") == ((1,), (3,))
    assert rows(conn, "SELECT what FROM audit ORDER BY id") == (("ins 1 A 5",), ("ins 2 B 0",), ("ins 3 KEEP 1",), ("del 2 left 2",))


def test_an_after_trigger_that_fails_undoes_its_row(conn):
    execute(
        conn,
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "CREATE TABLE log (id INT PRIMARY KEY)",
        "CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW INSERT INTO log VALUES (NEW.id % 3)",
    )
    execute(conn, "INSERT INTO t VALUES (1), (2)")
    # Row 4 writes log 1 again: a duplicate in the trigger fails the whole statement.
    assert errno(conn, "INSERT INTO t VALUES (3), (4)") == 1062
    assert rows(conn, "SELECT id FROM t ORDER BY id") == ((1,), (2,))
    assert rows(conn, "SELECT id FROM log ORDER BY id") == ((1,), (2,))
    # Inside a transaction the statement alone is undone.
    conn.begin()
    execute(conn, "INSERT INTO t VALUES (3)")
    assert errno(conn, "INSERT INTO t VALUES (6), (7)") == 1062
    conn.commit()
    assert rows(conn, "SELECT id FROM t ORDER BY id") == ((1,), (2,), (3,))
    assert rows(conn, "SELECT id FROM log ORDER BY id") == ((0,), (1,), (2,))


def test_compound_bodies_handlers_cursors_and_loops(conn):
    execute(
        conn,
        "CREATE TABLE src (id INT PRIMARY KEY, v INT)",
        "CREATE TABLE seen (id INT PRIMARY KEY, note VARCHAR(40))",
        "INSERT INTO src VALUES (1, 10), (2, 20), (3, 30)",
        """CREATE TRIGGER src_au AFTER UPDATE ON src FOR EACH ROW
           BEGIN
             DECLARE done INT DEFAULT 0;
             DECLARE s INT DEFAULT 0;
             DECLARE x INT;
             DECLARE c CURSOR FOR SELECT v FROM src WHERE id <> NEW.id ORDER BY id;
             DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
             DECLARE CONTINUE HANDLER FOR 1062 UPDATE seen SET note = CONCAT(note, '+') WHERE id = NEW.id;
             OPEN c;
             l: LOOP
               FETCH c INTO x;
               IF done THEN LEAVE l; END IF;
               SET s = s + x;
             END LOOP;
             CLOSE c;
             CASE WHEN s > 40 THEN SET x = 1; WHEN s > 30 THEN SET x = 2; ELSE SET x = 3; END CASE;
             INSERT INTO seen VALUES (NEW.id, CONCAT('others ', s, ' case ', x));
           END""",
    )
    execute(conn, "UPDATE src SET v = v + 1 WHERE id = 1")
    execute(conn, "UPDATE src SET v = v + 1 WHERE id = 1")
    execute(conn, "UPDATE src SET v = 0 WHERE id = 3")
    assert rows(conn, "SELECT id, note FROM seen ORDER BY id") == ((1, "others 50 case 1+"), (3, "others 32 case 2"))


def test_while_repeat_and_variables_in_a_before_trigger(conn):
    execute(
        conn,
        "CREATE TABLE f (n INT PRIMARY KEY, fact BIGINT, digits VARCHAR(30))",
        """CREATE TRIGGER f_bi BEFORE INSERT ON f FOR EACH ROW
           BEGIN
             DECLARE i INT DEFAULT 1;
             DECLARE acc BIGINT DEFAULT 1;
             DECLARE s VARCHAR(30) DEFAULT '';
             WHILE i <= NEW.n DO SET acc = acc * i; SET i = i + 1; END WHILE;
             SET NEW.fact = acc, @last_fact = acc;
             SET i = NEW.n;
             REPEAT SET s = CONCAT(s, i % 10); SET i = i DIV 10; UNTIL i = 0 END REPEAT;
             SET NEW.digits = s;
           END""",
    )
    execute(conn, "INSERT INTO f (n) VALUES (5), (12), (0)")
    assert rows(conn, "SELECT n, fact, digits FROM f ORDER BY n") == ((0, 1, "0"), (5, 120, "5"), (12, 479001600, "21"))
    assert rows(conn, "SELECT @last_fact") == ((1,),)


def test_action_order_follows_and_precedes(conn, fresh_db):
    execute(
        conn,
        "CREATE TABLE t (id INT PRIMARY KEY, s VARCHAR(20) DEFAULT '')",
        "CREATE TRIGGER a BEFORE INSERT ON t FOR EACH ROW SET NEW.s = CONCAT(NEW.s, 'a')",
        "CREATE TRIGGER b BEFORE INSERT ON t FOR EACH ROW SET NEW.s = CONCAT(NEW.s, 'b')",
        "CREATE TRIGGER c BEFORE INSERT ON t FOR EACH ROW PRECEDES a SET NEW.s = CONCAT(NEW.s, 'c')",
        "CREATE TRIGGER d BEFORE INSERT ON t FOR EACH ROW FOLLOWS a SET NEW.s = CONCAT(NEW.s, 'd')",
        "INSERT INTO t (id) VALUES (1)",
    )
    assert rows(conn, "SELECT s FROM t") == (("cadb",),)
    order = rows(conn, f"SELECT trigger_name, action_order FROM information_schema.triggers WHERE trigger_schema = '{fresh_db}' ORDER BY action_order")
    assert order == (("c", 1), ("a", 2), ("d", 3), ("b", 4))


def test_what_a_trigger_may_not_be_or_do(conn):
    execute(
        conn,
        "CREATE TABLE t (id INT PRIMARY KEY, a INT)",
        "CREATE TABLE u (id INT PRIMARY KEY)",
        "CREATE VIEW v AS SELECT * FROM t",
        "CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 1",
    )
    assert errno(conn, "CREATE TRIGGER t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 2") == 1359
    execute(conn, "CREATE TRIGGER IF NOT EXISTS t_bi BEFORE INSERT ON t FOR EACH ROW SET NEW.a = 2")
    assert errno(conn, "DROP TRIGGER nope") == 1360
    execute(conn, "DROP TRIGGER IF EXISTS nope")
    assert errno(conn, "CREATE TRIGGER x BEFORE INSERT ON nope FOR EACH ROW SET @a = 1") == 1146
    assert errno(conn, "CREATE TRIGGER x BEFORE INSERT ON v FOR EACH ROW SET @a = 1") == 1347
    assert errno(conn, "CREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW SET @a = OLD.a") == 1363
    assert errno(conn, "CREATE TRIGGER x BEFORE DELETE ON t FOR EACH ROW SET @a = NEW.a") == 1363
    assert errno(conn, "CREATE TRIGGER x AFTER UPDATE ON t FOR EACH ROW SET NEW.a = 1") == 1362
    assert errno(conn, "CREATE TRIGGER x BEFORE UPDATE ON t FOR EACH ROW SET OLD.a = 1") == 1362
    assert errno(conn, "CREATE TRIGGER x BEFORE UPDATE ON t FOR EACH ROW SELECT 1") == 1415
    assert errno(conn, "CREATE TRIGGER x BEFORE UPDATE ON t FOR EACH ROW COMMIT") == 1422
    assert errno(conn, "CREATE TRIGGER x BEFORE UPDATE ON t FOR EACH ROW BEGIN SET y = 1; END") in (1193, 1327)
    assert errno(conn, "CREATE TRIGGER x BEFORE UPDATE ON t FOR EACH ROW BEGIN LEAVE nowhere; END") == 1308
    assert errno(conn, "CREATE TRIGGER x BEFORE UPDATE ON t FOR EACH ROW BEGIN SET NEW.a = 1 END") == 1064
    # A trigger may not write the table whose statement fired it.
    execute(conn, "CREATE TRIGGER u_ai AFTER INSERT ON u FOR EACH ROW INSERT INTO u VALUES (NEW.id + 100)")
    assert errno(conn, "INSERT INTO u VALUES (1)") == 1442
    assert rows(conn, "SELECT COUNT(*) FROM u") == ((0,),)


@pytest.mark.mysql8_only
def test_follows_a_trigger_that_is_not_there_is_3011(conn):
    execute(conn, "CREATE TABLE t (id INT PRIMARY KEY)")
    assert errno(conn, "CREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW FOLLOWS nope SET @a = 1") == 3011
    assert errno(conn, "CREATE TRIGGER x BEFORE INSERT ON t FOR EACH ROW SET NEW.nope = 1") == 1054


def test_triggers_go_with_their_table_and_keep_its_database(conn, fresh_db, server):
    execute(
        conn,
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "CREATE TABLE log (id INT)",
        "CREATE TRIGGER t_ai AFTER INSERT ON t FOR EACH ROW INSERT INTO log VALUES (NEW.id)",
    )
    # Fired from a session whose default database is another: the trigger's tables are its own.
    with scratch_database(server, "other") as other:
        c = server.connect(other)
        try:
            execute(c, "CREATE TABLE log (id INT)", f"INSERT INTO `{fresh_db}`.t VALUES (1)")
            assert rows(c, "SELECT COUNT(*) FROM log") == ((0,),)
        finally:
            c.close()
    assert rows(conn, "SELECT id FROM log") == ((1,),)
    execute(conn, "RENAME TABLE t TO t2", "INSERT INTO t2 VALUES (2)")
    assert rows(conn, "SELECT COUNT(*) FROM log") == ((2,),)
    assert rows(conn, f"SELECT event_object_table FROM information_schema.triggers WHERE trigger_schema = '{fresh_db}'") == (("t2",),)
    execute(conn, "DROP TABLE t2")
    assert rows(conn, f"SELECT COUNT(*) FROM information_schema.triggers WHERE trigger_schema = '{fresh_db}'") == ((0,),)
    execute(conn, "CREATE TABLE t2 (id INT PRIMARY KEY)", "INSERT INTO t2 VALUES (3)")
    assert rows(conn, "SELECT COUNT(*) FROM log") == ((2,),)


def test_show_triggers_and_show_create_trigger(conn, fresh_db):
    make_items(conn)
    with conn.cursor() as cur:
        cur.execute("SHOW TRIGGERS LIKE 'item%'")
        got = {r[0]: (r[1], r[2], r[4]) for r in cur.fetchall()}
        assert [d[0] for d in cur.description][:5] == ["Trigger", "Event", "Table", "Statement", "Timing"]
        cur.execute("SHOW TRIGGERS LIKE 'nothing'")
        assert cur.fetchall() == ()
        cur.execute("SHOW CREATE TRIGGER items_bu")
        (name, _mode, statement, *_rest) = cur.fetchone()
    assert got["items_bi"] == ("INSERT", "items", "BEFORE") and got["items_ad"] == ("DELETE", "items", "AFTER")
    assert name == "items_bu"
    assert statement.startswith("CREATE DEFINER=")
    assert statement.replace("`", "").endswith("TRIGGER items_bu BEFORE UPDATE ON items FOR EACH ROW SET NEW.changes = OLD.changes + 1")
    assert errno(conn, "SHOW CREATE TRIGGER nope") == 1360


def attempt(conn, sql) -> int:
    """Runs `sql`: 0, or the error number it failed with."""
    with conn.cursor() as cur:
        try:
            cur.execute(sql)
        except pymysql.err.MySQLError as e:
            return e.args[0]
    return 0


def summary_oracle(conn):
    return rows(conn, "SELECT cat, COUNT(*), COALESCE(SUM(v), 0) FROM facts GROUP BY cat HAVING COUNT(*) > 0 ORDER BY cat")


def summary_kept(conn):
    return rows(conn, "SELECT cat, n, total FROM totals WHERE n > 0 ORDER BY cat")


SUMMARY_SCHEMA = [
    "CREATE TABLE facts (id INT PRIMARY KEY, cat CHAR(1) NOT NULL, v INT NOT NULL, UNIQUE KEY u (cat, v))",
    "CREATE TABLE totals (cat CHAR(1) PRIMARY KEY, n INT NOT NULL, total BIGINT NOT NULL)",
    "CREATE TABLE doomed (id INT PRIMARY KEY)",
    """CREATE TRIGGER facts_ai AFTER INSERT ON facts FOR EACH ROW
       INSERT INTO totals VALUES (NEW.cat, 1, NEW.v) ON DUPLICATE KEY UPDATE n = n + 1, total = total + NEW.v""",
    """CREATE TRIGGER facts_au AFTER UPDATE ON facts FOR EACH ROW
       BEGIN
         UPDATE totals SET n = n - 1, total = total - OLD.v WHERE cat = OLD.cat;
         INSERT INTO totals VALUES (NEW.cat, 1, NEW.v) ON DUPLICATE KEY UPDATE n = n + 1, total = total + NEW.v;
       END""",
    "CREATE TRIGGER facts_ad AFTER DELETE ON facts FOR EACH ROW UPDATE totals SET n = n - 1, total = total - OLD.v WHERE cat = OLD.cat",
    # Refuses a negative value after the row's own checks: the statement fails part-way.
    "CREATE TRIGGER facts_bu BEFORE UPDATE ON facts FOR EACH ROW BEGIN IF NEW.v < 0 THEN SIGNAL SQLSTATE '45001' SET MESSAGE_TEXT = 'negative'; END IF; END",
]


def random_statement(rng: random.Random) -> str:
    cat = rng.choice("abcd")
    k = rng.randint(1, 30)
    v = rng.randint(-3, 40)
    return rng.choice([
        f"INSERT INTO facts VALUES ({k}, '{cat}', {abs(v)})",
        f"INSERT INTO facts VALUES ({k}, '{cat}', {abs(v)}), ({k + 1}, '{rng.choice('abcd')}', {rng.randint(0, 40)})",
        f"INSERT INTO facts VALUES ({k}, '{cat}', {abs(v)}) ON DUPLICATE KEY UPDATE v = v + {abs(v) % 5}",
        f"REPLACE INTO facts VALUES ({k}, '{cat}', {abs(v)})",
        f"INSERT IGNORE INTO facts VALUES ({k}, '{cat}', {abs(v)})",
        f"UPDATE facts SET v = v + {v} WHERE id % 4 = {k % 4}",
        f"UPDATE facts SET cat = '{cat}' WHERE id BETWEEN {k} AND {k + 5}",
        f"UPDATE facts SET v = v - 1 ORDER BY id LIMIT {k % 7}",
        f"DELETE FROM facts WHERE cat = '{cat}' AND v < {abs(v)}",
        f"DELETE facts FROM facts JOIN doomed ON doomed.id = facts.id WHERE facts.v > {abs(v) % 10}",
        f"INSERT INTO doomed VALUES ({k}) ON DUPLICATE KEY UPDATE id = id",
    ])


@pytest.mark.parametrize("seed", range(SEEDS))
def test_triggers_keep_a_summary_equal_to_its_oracle(conn, fresh_db, seed):
    rng = random.Random(seed)
    execute(conn, *SUMMARY_SCHEMA)
    replay = f"QUILL_TRIGGER_SEEDS={seed + 1} python3 -m pytest tests/test_triggers.py -k 'summary and {seed}'"
    for step in range(STEPS_PER_SEED):
        sql = random_statement(rng)
        in_txn = rng.random() < 0.2
        if in_txn:
            conn.begin()
        code = attempt(conn, sql)
        assert code in (0, 1062, 1644, 1264, 1048), f"seed {seed} step {step}: {sql} gave {code}; replay: {replay}"
        if in_txn:
            (conn.rollback if rng.random() < 0.5 else conn.commit)()
        assert summary_kept(conn) == summary_oracle(conn), f"seed {seed} step {step} after {sql}; replay: {replay}"


def test_triggers_survive_a_restart_and_a_checkpoint(tmp_path):
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, "--quill-checkpoint-log-bytes=4096") as q:
        q.run("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, s VARCHAR(10))", "CREATE TABLE app.log (id INT)")
        q.run(
            "CREATE TRIGGER app.t_bi BEFORE INSERT ON app.t FOR EACH ROW SET NEW.s = 'second'",
            "CREATE TRIGGER app.t_bi0 BEFORE INSERT ON app.t FOR EACH ROW PRECEDES t_bi SET NEW.s = 'first'",
            "CREATE TRIGGER app.t_ai AFTER INSERT ON app.t FOR EACH ROW INSERT INTO log VALUES (NEW.id)",
        )
        for i in range(50):
            q.run(f"INSERT INTO app.t (id) VALUES ({i})")
        q.wait_for_checkpoint()
        q.run("DROP TRIGGER app.t_ai")
    with PrivateQuill(datadir) as q:
        q.run("INSERT INTO app.t (id) VALUES (100)")
        assert q.run("SELECT s FROM app.t WHERE id = 100") == (("second",),)
        assert q.run("SELECT COUNT(*) FROM app.log") == ((50,),)
        assert q.run("SELECT trigger_name FROM information_schema.triggers ORDER BY action_order") == (("t_bi0",), ("t_bi",))


def test_a_dump_with_triggers_restores_them(conn, fresh_db, server):
    make_items(conn)
    execute(conn, "INSERT INTO items (name, qty) VALUES ('a', 1), ('b', 2)")
    out = subprocess.run(
        ["mariadb-dump", f"--host={server.host}", f"--port={server.port}", f"--user={server.user}", "--triggers", fresh_db],
        capture_output=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    assert b"CREATE*/ /*!50017 DEFINER=" in out.stdout
    with scratch_database(server, "restored") as restored:
        done = subprocess.run(
            ["mariadb", f"--host={server.host}", f"--port={server.port}", f"--user={server.user}", restored],
            input=out.stdout, capture_output=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        c = server.connect(restored)
        try:
            # The rows came back without firing anything again (the dump drops no triggers
            # before its INSERTs: it creates them after).
            assert rows(c, "SELECT COUNT(*) FROM audit") == ((2,),)
            names = rows(c, f"SELECT trigger_name FROM information_schema.triggers WHERE trigger_schema = '{restored}' ORDER BY trigger_name")
            assert names == (("items_ad",), ("items_ai",), ("items_bd",), ("items_bi",), ("items_bu",))
            execute(c, "INSERT INTO items (name, qty) VALUES ('c', -1)")
            assert rows(c, "SELECT name, qty FROM items WHERE name = 'C'") == (("C", 0),)
        finally:
            c.close()


def test_a_replica_applies_what_triggers_did_and_fires_none_again(tmp_path):
    with PrivateQuill(tmp_path / "source") as source, PrivateQuill(tmp_path / "replica", "--server_id=2") as replica:
        source.run("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)", "CREATE TABLE app.log (id INT PRIMARY KEY AUTO_INCREMENT, t INT)")
        source.run("CREATE TRIGGER app.t_ai AFTER INSERT ON app.t FOR EACH ROW INSERT INTO log (t) VALUES (NEW.id)")
        c = replica.connect()
        with c.cursor() as cur:
            cur.execute(f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={source.port}, SOURCE_USER='root', SOURCE_PASSWORD='', SOURCE_AUTO_POSITION=1")
            cur.execute("START REPLICA")
        c.close()
        source.run("INSERT INTO app.t VALUES (1), (2), (3)")
        want = source.run("SELECT @@gtid_executed")[0][0]
        deadline = time.monotonic() + 30
        while replica.run("SELECT @@gtid_executed")[0][0] != want:
            assert time.monotonic() < deadline, "the replica did not catch up"
            time.sleep(0.05)
        assert replica.run("SELECT id, t FROM app.log ORDER BY id") == source.run("SELECT id, t FROM app.log ORDER BY id") == ((1, 1), (2, 2), (3, 3))
        assert replica.run("SELECT trigger_name FROM information_schema.triggers") == (("t_ai",),)
        # On the replica itself, the trigger fires for its own writes.
        replica.run("STOP REPLICA", "INSERT INTO app.t VALUES (9)")
        assert replica.run("SELECT t FROM app.log WHERE t = 9") == ((9,),)


def test_a_before_trigger_may_fill_a_not_null_column(conn):
    execute(
        conn,
        "CREATE TABLE n (id INT PRIMARY KEY AUTO_INCREMENT, a INT NOT NULL, b INT NOT NULL DEFAULT 5, CHECK (a >= 0))",
        "CREATE TRIGGER n_bi BEFORE INSERT ON n FOR EACH ROW SET NEW.a = IFNULL(NEW.a, 0)",
        "CREATE TRIGGER n_bu BEFORE UPDATE ON n FOR EACH ROW SET NEW.a = IFNULL(NEW.a, OLD.a)",
        "INSERT INTO n (a) VALUES (NULL), (7)",
        "UPDATE n SET a = NULL WHERE id = 2",
    )
    assert rows(conn, "SELECT id, a, b FROM n ORDER BY id") == ((1, 0, 5), (2, 7, 5))
    # The row's checks still hold after the trigger.
    assert errno(conn, "INSERT INTO n (a) VALUES (-1)") == 3819


def test_a_trigger_runs_with_its_definers_privileges(conn, fresh_db, server):
    user = f"t{fresh_db[-8:]}"
    execute(
        conn,
        "CREATE TABLE mine (id INT PRIMARY KEY)",
        "CREATE TABLE secret (id INT PRIMARY KEY)",
        f"CREATE USER '{user}'@'%'",
        f"GRANT SELECT, INSERT, TRIGGER ON `{fresh_db}`.mine TO '{user}'@'%'",
    )
    c = pymysql.connect(host=server.host, port=server.port, user=user, password="", database=fresh_db, autocommit=True)
    try:
        # Naming another account as definer needs SUPER.
        assert errno(c, "CREATE DEFINER=root@localhost TRIGGER up AFTER INSERT ON mine FOR EACH ROW INSERT INTO secret VALUES (NEW.id)") == 1227
        execute(c, "CREATE TRIGGER up AFTER INSERT ON mine FOR EACH ROW INSERT INTO secret VALUES (NEW.id)")
        # The trigger writes with its definer's privileges, which do not reach `secret`.
        assert errno(c, "INSERT INTO mine VALUES (1)") == 1142
    finally:
        c.close()
    assert rows(conn, "SELECT COUNT(*) FROM secret") == ((0,),)
    assert rows(conn, "SELECT COUNT(*) FROM mine") == ((0,),)
    execute(conn, f"DROP USER '{user}'@'%'")


def test_a_trigger_whose_column_went_away_still_starts_and_fails_when_it_fires(tmp_path):
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, "--quill-checkpoint-log-bytes=4096") as q:
        q.run("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY, b INT)")
        q.run("CREATE TRIGGER app.t_bi BEFORE INSERT ON app.t FOR EACH ROW SET NEW.b = 1")
        q.run("ALTER TABLE app.t DROP COLUMN b")
        q.run("CREATE TABLE app.filler (id INT PRIMARY KEY, pad VARCHAR(200))")
        for i in range(60):
            q.run(f"INSERT INTO app.filler VALUES ({i}, REPEAT('x', 150))")
        q.wait_for_checkpoint()
    with PrivateQuill(datadir) as q:
        c = q.connect()
        try:
            assert errno(c, "INSERT INTO app.t VALUES (1)") == 1054
        finally:
            c.close()
