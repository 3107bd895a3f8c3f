"""Stored procedures and functions (issue 40): CREATE / DROP, CALL with IN / OUT / INOUT
parameters and result sets (the multi-result protocol, read with PyMySQL's `nextset` and
`callproc`), stored functions in expressions, compound statements with handlers, cursors and
loops, SQL SECURITY, privileges, SHOW and information_schema, and that routines last across a
restart, a checkpoint and a dump.

A seeded property test runs generated arithmetic programs as a stored function, as a
procedure with an OUT parameter, and in Python (the oracle), and compares the three. A
failing seed prints the command that replays it.
"""

from __future__ import annotations

import os
import random
import subprocess

import pymysql
import pytest

from conftest import PrivateQuill, scratch_database
from sessions import all_rows as rows, error_code as errno, execute

SEEDS = int(os.environ.get("QUILL_ROUTINE_SEEDS", "8"))
PROGRAMS_PER_SEED = 15

TRANSFER = """CREATE PROCEDURE transfer(IN src INT, IN dst INT, IN amount DECIMAL(10,2), OUT ok INT)
BEGIN
  DECLARE have DECIMAL(10,2);
  DECLARE EXIT HANDLER FOR SQLEXCEPTION BEGIN ROLLBACK; SET ok = 0; END;
  START TRANSACTION;
  SELECT bal INTO have FROM acct WHERE id = src FOR UPDATE;
  IF have IS NULL OR have < amount + fee(amount) THEN
    SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'insufficient';
  END IF;
  UPDATE acct SET bal = bal - amount - fee(amount) WHERE id = src;
  UPDATE acct SET bal = bal + amount WHERE id = dst;
  COMMIT;
  SET ok = 1;
END"""

FEE = """CREATE FUNCTION fee(amount DECIMAL(10,2)) RETURNS DECIMAL(10,2) DETERMINISTIC
BEGIN
  IF amount > 50 THEN RETURN amount * 0.01; END IF;
  RETURN 0.5;
END"""


def make_bank(conn):
    execute(conn, "CREATE TABLE acct (id INT PRIMARY KEY, bal DECIMAL(10,2))", "INSERT INTO acct VALUES (1, 100), (2, 50)", FEE, TRANSFER)


def test_a_procedure_moves_money_and_its_handler_rolls_back(conn):
    make_bank(conn)
    execute(conn, "CALL transfer(1, 2, 60, @ok)")
    assert rows(conn, "SELECT @ok") == ((1,),)
    execute(conn, "CALL transfer(2, 1, 500, @ok)")
    assert rows(conn, "SELECT @ok") == ((0,),)
    execute(conn, "CALL transfer(9, 1, 1, @ok)")
    assert rows(conn, "SELECT @ok") == ((0,),)
    assert [(i, str(b)) for i, b in rows(conn, "SELECT id, bal FROM acct ORDER BY id")] == [(1, "39.40"), (2, "110.00")]
    assert [str(v) for v in rows(conn, "SELECT fee(10), fee(100), fee(NULL) IS NULL")[0]] == ["0.50", "1.00", "0"]


def test_call_returns_each_result_set_then_its_ok(conn):
    execute(
        conn,
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "INSERT INTO t VALUES (1), (2), (3)",
        """CREATE PROCEDURE two(IN lim INT)
           BEGIN
             SELECT id FROM t WHERE id <= lim ORDER BY id;
             UPDATE t SET id = id + 10 WHERE id > 2;
             SELECT COUNT(*) AS n, SUM(id) AS s FROM t;
           END""",
    )
    with conn.cursor() as cur:
        cur.execute("CALL two(2)")
        assert cur.fetchall() == ((1,), (2,))
        assert cur.nextset()
        assert [d[0] for d in cur.description] == ["n", "s"]
        assert cur.fetchall() == ((3, 16),)
        assert cur.nextset()  # the CALL's own OK
        assert cur.description is None
        assert not cur.nextset()
        # The connection goes on as usual.
        cur.execute("SELECT 42")
        assert cur.fetchall() == ((42,),)


def test_callproc_and_inout_parameters(conn):
    execute(
        conn,
        """CREATE PROCEDURE scale(INOUT v INT, IN k INT, OUT doubled INT)
           BEGIN
             SET v = v * k;
             SET doubled = v * 2;
           END""",
    )
    with conn.cursor() as cur:
        cur.callproc("scale", (3, 5, None))
        while cur.nextset():
            pass
        cur.execute("SELECT @_scale_0, @_scale_1, @_scale_2")
        assert cur.fetchone() == (15, 5, 30)
    execute(conn, "SET @v = 7", "CALL scale(@v, 3, @d)")
    assert rows(conn, "SELECT @v, @d") == ((21, 42),)
    assert errno(conn, "CALL scale(1, 2, @d)") == 1414
    assert errno(conn, "CALL scale(@v, 2)") == 1318
    assert errno(conn, "CALL nope()") == 1305


def test_procedures_call_procedures_and_functions_call_functions(conn):
    execute(
        conn,
        "CREATE FUNCTION sq(x INT) RETURNS INT DETERMINISTIC RETURN x * x",
        "CREATE FUNCTION hyp2(a INT, b INT) RETURNS INT DETERMINISTIC RETURN sq(a) + sq(b)",
        """CREATE PROCEDURE inner_p(IN a INT, OUT r INT) BEGIN SET r = hyp2(a, a + 1); END""",
        """CREATE PROCEDURE outer_p(IN n INT, OUT total INT)
           BEGIN
             DECLARE i INT DEFAULT 0;
             DECLARE r INT;
             SET total = 0;
             WHILE i < n DO
               CALL inner_p(i, r);
               SET total = total + r;
               SET i = i + 1;
             END WHILE;
           END""",
        "CREATE FUNCTION selfish(n INT) RETURNS INT DETERMINISTIC RETURN IF(n <= 0, 0, selfish(n - 1))",
        "CREATE PROCEDURE again(IN n INT) BEGIN IF n > 0 THEN CALL again(n - 1); END IF; END",
    )
    execute(conn, "CALL outer_p(4, @t)")
    assert rows(conn, "SELECT @t") == ((sum(i * i + (i + 1) * (i + 1) for i in range(4)),),)
    assert errno(conn, "SELECT selfish(3)") == 1424
    assert errno(conn, "CALL again(2)") == 1456
    execute(conn, "SET SESSION max_sp_recursion_depth = 5", "CALL again(3)")


def test_cursor_loop_with_a_not_found_handler(conn):
    execute(
        conn,
        "CREATE TABLE items (id INT PRIMARY KEY, price INT)",
        "INSERT INTO items VALUES (1, 10), (2, 25), (3, 40), (4, 5)",
        """CREATE PROCEDURE expensive(IN floor_price INT, OUT found TEXT, OUT n INT)
           BEGIN
             DECLARE done INT DEFAULT FALSE;
             DECLARE i, p INT;
             DECLARE c CURSOR FOR SELECT id, price FROM items WHERE price >= floor_price ORDER BY price DESC;
             DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = TRUE;
             SET found = '', n = 0;
             OPEN c;
             read_loop: LOOP
               FETCH c INTO i, p;
               IF done THEN LEAVE read_loop; END IF;
               SET found = CONCAT(found, i, ':', p, ' ');
               SET n = n + 1;
             END LOOP;
             CLOSE c;
           END""",
        """CREATE PROCEDURE unhandled() BEGIN DECLARE x INT; DECLARE c CURSOR FOR SELECT id FROM items WHERE id > 100; OPEN c; FETCH c INTO x; END""",
    )
    execute(conn, "CALL expensive(10, @found, @n)")
    assert rows(conn, "SELECT @found, @n") == (("3:40 2:25 1:10 ", 3),)
    assert errno(conn, "CALL unhandled()") == 1329


def test_handlers_signal_and_resignal(conn):
    execute(
        conn,
        "CREATE TABLE u (id INT PRIMARY KEY)",
        "INSERT INTO u VALUES (1)",
        """CREATE PROCEDURE dup_ok(OUT result VARCHAR(20))
           BEGIN
             DECLARE CONTINUE HANDLER FOR 1062 SET result = 'duplicate';
             SET result = 'fine';
             INSERT INTO u VALUES (1);
           END""",
        """CREATE PROCEDURE rethrow()
           BEGIN
             DECLARE EXIT HANDLER FOR SQLSTATE '23000' RESIGNAL SET MESSAGE_TEXT = 'again', MYSQL_ERRNO = 5001;
             INSERT INTO u VALUES (1);
           END""",
        """CREATE PROCEDURE custom()
           BEGIN
             DECLARE broke CONDITION FOR SQLSTATE '45123';
             SIGNAL broke SET MESSAGE_TEXT = 'custom failure';
           END""",
        """CREATE PROCEDURE warn_only() BEGIN SIGNAL SQLSTATE '01234' SET MESSAGE_TEXT = 'just a warning'; END""",
        """CREATE PROCEDURE no_case(IN x INT) BEGIN CASE x WHEN 1 THEN SELECT 1; END CASE; END""",
    )
    execute(conn, "CALL dup_ok(@r)")
    assert rows(conn, "SELECT @r") == (("duplicate",),)
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("CALL rethrow()")
        assert e.value.args == (5001, "again")
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("CALL custom()")
        assert e.value.args == (1644, "custom failure")
        cur.execute("CALL warn_only()")
        cur.execute("SHOW WARNINGS")
        assert [(r[1], r[2]) for r in cur.fetchall()] == [(1642, "just a warning")]
    assert errno(conn, "CALL no_case(2)") == 1339


def test_create_time_errors(conn):
    execute(conn, "CREATE PROCEDURE p() SELECT 1")
    assert errno(conn, "CREATE PROCEDURE p() SELECT 2") == 1304
    execute(conn, "CREATE PROCEDURE IF NOT EXISTS p() SELECT 2")
    assert errno(conn, "DROP PROCEDURE nope") == 1305
    execute(conn, "DROP PROCEDURE IF EXISTS nope")
    assert errno(conn, "DROP FUNCTION p") == 1305
    assert errno(conn, "CREATE FUNCTION f() RETURNS INT DETERMINISTIC BEGIN SELECT 1; END") == 1415
    assert errno(conn, "CREATE FUNCTION f() RETURNS INT DETERMINISTIC BEGIN DECLARE x INT; END") == 1320
    assert errno(conn, "CREATE PROCEDURE q() RETURN 1") == 1313
    assert errno(conn, "CREATE PROCEDURE q() BEGIN DECLARE a INT; DECLARE a INT; END") == 1331
    assert errno(conn, "CREATE PROCEDURE q() BEGIN ITERATE nowhere; END") == 1308
    assert errno(conn, "CREATE PROCEDURE q() BEGIN OPEN nope; END") == 1324
    assert errno(conn, "CREATE PROCEDURE q() BEGIN SELECT 1 INTO nope; END") == 1327
    assert errno(conn, "CREATE PROCEDURE q() BEGIN SELECT 1 END") == 1064
    # A function that ends without RETURN is an error when it runs.
    execute(conn, "CREATE FUNCTION h(x INT) RETURNS INT DETERMINISTIC BEGIN IF x > 0 THEN RETURN x; END IF; END")
    assert rows(conn, "SELECT h(3)") == ((3,),)
    assert errno(conn, "SELECT h(0)") == 1321


def test_show_and_information_schema(conn, fresh_db):
    make_bank(conn)
    with conn.cursor() as cur:
        cur.execute(f"SHOW PROCEDURE STATUS WHERE Db = '{fresh_db}'")
        assert [(r[1], r[2]) for r in cur.fetchall()] == [("transfer", "PROCEDURE")]
        cur.execute("SHOW FUNCTION STATUS LIKE 'fe%'")
        assert [r[1] for r in cur.fetchall() if r[0] == fresh_db] == ["fee"]
        cur.execute("SHOW CREATE FUNCTION fee")
        row = cur.fetchone()
        assert [d[0] for d in cur.description][:3] == ["Function", "sql_mode", "Create Function"]
        assert "FUNCTION `fee`(amount DECIMAL(10,2)) RETURNS DECIMAL(10,2)" in row[2].replace("decimal", "DECIMAL")
        cur.execute("SHOW CREATE PROCEDURE transfer")
        assert "PROCEDURE `transfer`(IN src INT" in cur.fetchone()[2].replace(" int", " INT")
    got = rows(conn, f"SELECT routine_name, routine_type, data_type, is_deterministic FROM information_schema.routines WHERE routine_schema = '{fresh_db}' ORDER BY 1")
    assert got == (("fee", "FUNCTION", "decimal", "YES"), ("transfer", "PROCEDURE", "", "NO"))
    params = rows(conn, f"SELECT specific_name, ordinal_position, parameter_mode, parameter_name FROM information_schema.parameters WHERE specific_schema = '{fresh_db}' ORDER BY 1, 2")
    assert params == (("fee", 0, None, None), ("fee", 1, "IN", "amount"), ("transfer", 1, "IN", "src"), ("transfer", 2, "IN", "dst"), ("transfer", 3, "IN", "amount"), ("transfer", 4, "OUT", "ok"))
    assert errno(conn, "SHOW CREATE PROCEDURE nope") == 1305


def test_sql_security_and_privileges(conn, fresh_db, server):
    user = f"r{fresh_db[-8:]}"
    execute(
        conn,
        "CREATE TABLE secret (v INT)",
        "INSERT INTO secret VALUES (7)",
        "CREATE PROCEDURE peek_definer(OUT x INT) SQL SECURITY DEFINER SELECT v INTO x FROM secret",
        "CREATE PROCEDURE peek_invoker(OUT x INT) SQL SECURITY INVOKER SELECT v INTO x FROM secret",
        f"CREATE USER '{user}'@'%'",
    )
    execute(conn, f"GRANT EXECUTE ON `{fresh_db}`.* TO '{user}'@'%'")
    c = pymysql.connect(host=server.host, port=server.port, user=user, password="", database=fresh_db, autocommit=True)
    try:
        execute(c, "CALL peek_definer(@x)")
        assert rows(c, "SELECT @x") == ((7,),)
        assert errno(c, "CALL peek_invoker(@x)") in (1142, 1044)
        assert errno(c, "CREATE PROCEDURE mine() SELECT 1") == 1044
        assert errno(c, "DROP PROCEDURE peek_definer") == 1370
    finally:
        c.close()
        execute(conn, f"DROP USER '{user}'@'%'")


def random_program(rng: random.Random):
    """A program over variables a, b, c (INTs) as SQL statements and as Python, with
    IF / WHILE / CASE: its SQL body and a function computing what it returns."""
    depth = [0]

    def checked(v):
        # MySQL's integer arithmetic is BIGINT: past it is 1690, which the oracle skips.
        if not -(2**63) <= v < 2**63:
            raise OverflowError
        return v

    def expr():
        """An expression as (SQL text, Python function of the variables)."""
        kind = rng.randrange(5)
        if kind == 0:
            n = rng.randint(-20, 20)
            return str(n), lambda env, n=n: n
        if kind in (1, 2):
            name = rng.choice("abc")
            return name, lambda env, name=name: env[name]
        (ta, fa), (tb, fb) = expr(), expr()
        op = rng.choice(["+", "-", "*"])
        ops = {"+": lambda x, y: x + y, "-": lambda x, y: x - y, "*": lambda x, y: x * y}
        return f"({ta} {op} {tb})", lambda env, fa=fa, fb=fb, f=ops[op]: checked(f(fa(env), fb(env)))

    def cond():
        (ta, fa), (tb, fb) = expr(), expr()
        op = rng.choice(["<", ">", "=", "<>", "<=", ">="])
        ops = {"<": lambda x, y: x < y, ">": lambda x, y: x > y, "=": lambda x, y: x == y, "<>": lambda x, y: x != y, "<=": lambda x, y: x <= y, ">=": lambda x, y: x >= y}
        return f"{ta} {op} {tb}", lambda env, fa=fa, fb=fb, f=ops[op]: f(fa(env), fb(env))

    def block(n):
        out = []
        for _ in range(n):
            kind = rng.randrange(4) if depth[0] < 2 else 0
            if kind == 0:
                out.append(("set", rng.choice("abc"), *expr()))
            elif kind == 1:
                depth[0] += 1
                out.append(("if", *cond(), block(rng.randint(1, 3)), block(rng.randint(0, 2))))
                depth[0] -= 1
            elif kind == 2:
                depth[0] += 1
                out.append(("while", rng.randint(1, 4), block(rng.randint(1, 3))))
                depth[0] -= 1
            else:
                out.append(("case", rng.choice("abc"), [(rng.randint(-2, 2), block(1)) for _ in range(2)], block(1)))
        return out

    body = block(rng.randint(2, 6))
    counter = [0]

    def sql(stmts):
        text = ""
        for s in stmts:
            if s[0] == "set":
                text += f"SET {s[1]} = {s[2]}; "
            elif s[0] == "if":
                text += f"IF {s[1]} THEN {sql(s[3]) or 'SET a = a; '}" + (f"ELSE {sql(s[4])}" if s[4] else "") + "END IF; "
            elif s[0] == "while":
                counter[0] += 1
                k = f"k{counter[0]}"
                text += f"BEGIN DECLARE {k} INT DEFAULT 0; WHILE {k} < {s[1]} DO {sql(s[2])}SET {k} = {k} + 1; END WHILE; END; "
            else:
                whens = "".join(f"WHEN {v} THEN {sql(b)}" for v, b in s[2])
                text += f"CASE {s[1]} {whens}ELSE {sql(s[3])}END CASE; "
        return text

    def clamp(v):
        if not -(2**31) <= v < 2**31:
            raise OverflowError
        return v

    def py(stmts, env):
        for s in stmts:
            if s[0] == "set":
                env[s[1]] = clamp(s[3](env))
            elif s[0] == "if":
                py(s[3] if s[2](env) else s[4], env)
            elif s[0] == "while":
                for _ in range(s[1]):
                    py(s[2], env)
            else:
                for v, b in s[2]:
                    if env[s[1]] == v:
                        py(b, env)
                        break
                else:
                    py(s[3], env)

    return sql(body), lambda a, b, c: (lambda env: (py(body, env), env)[1])({"a": a, "b": b, "c": c})


@pytest.mark.parametrize("seed", range(SEEDS))
def test_generated_programs_agree_with_their_oracle(conn, seed):
    rng = random.Random(seed)
    replay = f"QUILL_ROUTINE_SEEDS={seed + 1} python3 -m pytest tests/test_routines.py -k 'oracle and {seed}'"
    for n in range(PROGRAMS_PER_SEED):
        body, oracle = random_program(rng)
        args = [rng.randint(-5, 5) for _ in range(3)]
        try:
            want = oracle(*args)
        except OverflowError:
            continue
        execute(
            conn,
            f"CREATE FUNCTION g{n}(a INT, b INT, c INT) RETURNS BIGINT DETERMINISTIC BEGIN {body}RETURN a * 1000000 + b * 1000 + c; END",
            f"CREATE PROCEDURE p{n}(INOUT a INT, INOUT b INT, INOUT c INT) BEGIN {body}END",
        )
        got = rows(conn, f"SELECT g{n}({args[0]}, {args[1]}, {args[2]})")[0][0]
        assert got == want["a"] * 1000000 + want["b"] * 1000 + want["c"], f"seed {seed} program {n}: {body}; replay: {replay}"
        execute(conn, f"SET @a = {args[0]}, @b = {args[1]}, @c = {args[2]}", f"CALL p{n}(@a, @b, @c)")
        assert rows(conn, "SELECT @a, @b, @c") == ((want["a"], want["b"], want["c"]),), f"seed {seed} program {n}: {body}; replay: {replay}"


def test_routines_survive_a_restart_and_a_checkpoint(tmp_path):
    datadir = tmp_path / "d"
    with PrivateQuill(datadir, "--quill-checkpoint-log-bytes=4096") as q:
        q.run("CREATE DATABASE app", "CREATE TABLE app.t (id INT PRIMARY KEY)")
        q.run("CREATE FUNCTION app.twice(x INT) RETURNS INT DETERMINISTIC RETURN x * 2")
        q.run("CREATE PROCEDURE app.fill(IN n INT) BEGIN DECLARE i INT DEFAULT 0; WHILE i < n DO INSERT INTO t VALUES (twice(i)); SET i = i + 1; END WHILE; END")
        q.run("CALL app.fill(200)")
        q.wait_for_checkpoint()
        q.run("CREATE PROCEDURE app.later() SELECT COUNT(*) FROM t")
    with PrivateQuill(datadir) as q:
        assert q.run("SELECT app.twice(21)") == ((42,),)
        assert q.run("CALL app.later()") == ((200,),)
        assert q.run("SELECT routine_name FROM information_schema.routines WHERE routine_schema = 'app' ORDER BY 1") == (("fill",), ("later",), ("twice",))


def test_a_dump_with_routines_restores_them(conn, fresh_db, server):
    make_bank(conn)
    out = subprocess.run(
        ["mariadb-dump", f"--host={server.host}", f"--port={server.port}", f"--user={server.user}", "--routines", fresh_db],
        capture_output=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr.decode(errors="replace")
    with scratch_database(server, "restored") as restored:
        done = subprocess.run(
            ["mariadb", f"--host={server.host}", f"--port={server.port}", f"--user={server.user}", restored],
            input=out.stdout, capture_output=True, timeout=120,
        )
        assert done.returncode == 0, done.stderr.decode(errors="replace")
        c = server.connect(restored)
        try:
            execute(c, "CALL transfer(1, 2, 10, @ok)")
            assert rows(c, "SELECT @ok, (SELECT bal FROM acct WHERE id = 1)")[0][0] == 1
            assert str(rows(c, "SELECT fee(100)")[0][0]) == "1.00"
        finally:
            c.close()


def test_blocks_close_their_cursors_and_continue_resumes_after_a_failed_condition(conn):
    execute(
        conn,
        "CREATE TABLE one (v INT)",
        "INSERT INTO one VALUES (1), (2)",
        """CREATE PROCEDURE twice(OUT total INT)
           BEGIN
             DECLARE i INT DEFAULT 0;
             SET total = 0;
             WHILE i < 2 DO
               BEGIN
                 DECLARE v INT;
                 DECLARE done INT DEFAULT 0;
                 DECLARE c CURSOR FOR SELECT one.v FROM one;
                 DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
                 OPEN c;
                 l: LOOP FETCH c INTO v; IF done THEN LEAVE l; END IF; SET total = total + v; END LOOP;
               END;
               SET i = i + 1;
             END WHILE;
           END""",
        """CREATE PROCEDURE skip_failed(OUT trail VARCHAR(40))
           BEGIN
             DECLARE CONTINUE HANDLER FOR SQLEXCEPTION SET trail = CONCAT(trail, 'h');
             SET trail = 's';
             IF (SELECT v FROM one) > 0 THEN SET trail = CONCAT(trail, 'then'); ELSE SET trail = CONCAT(trail, 'else'); END IF;
             SET trail = CONCAT(trail, 'e');
           END""",
    )
    execute(conn, "CALL twice(@t)")
    assert rows(conn, "SELECT @t") == ((6,),)
    # The condition fails (a subquery of two rows): the handler runs, then the statement after the IF.
    execute(conn, "CALL skip_failed(@trail)")
    assert rows(conn, "SELECT @trail") == (("she",),)


def test_a_procedure_runs_in_its_own_database_and_may_use_dynamic_sql(conn, fresh_db, server):
    execute(
        conn,
        "CREATE TABLE t (id INT PRIMARY KEY)",
        "CREATE PROCEDURE inner_p(OUT d VARCHAR(64)) SET d = DATABASE()",
        "CREATE PROCEDURE outer_p(OUT d VARCHAR(64)) CALL inner_p(d)",
        """CREATE PROCEDURE dyn(IN n INT)
           BEGIN
             SET @q = CONCAT('INSERT INTO t VALUES (', n, ')');
             PREPARE s FROM @q;
             EXECUTE s;
             DEALLOCATE PREPARE s;
             PREPARE s2 FROM 'SELECT COUNT(*) FROM t';
             EXECUTE s2;
           END""",
    )
    with scratch_database(server, "elsewhere") as other:
        c = server.connect(other)
        try:
            execute(c, f"CALL `{fresh_db}`.outer_p(@d)")
            assert rows(c, "SELECT @d, DATABASE()") == ((fresh_db, other),)
        finally:
            c.close()
    with conn.cursor() as cur:
        cur.execute("CALL dyn(5)")
        assert cur.fetchall() == ((1,),)
        while cur.nextset():
            pass
    assert rows(conn, "SELECT id FROM t") == ((5,),)
