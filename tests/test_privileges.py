"""Accounts and privileges, against a server of the module's own: each statement class is
refused without its privilege, with MySQL's error, and allowed once it is granted; logins
check passwords with both plugins, locked accounts and REQUIRE SSL; accounts survive a
kill -9; and no password is written in clear anywhere the server writes.

Each privilege case starts from an account with no privileges (`GRANT USAGE`), runs the
statement (refused), grants the one privilege the case names, and runs it again on a new
connection (allowed): so a check that refused everything, or nothing, fails.
"""

from __future__ import annotations

import itertools
import subprocess
from pathlib import Path

import MySQLdb
import pymysql
import pytest

from conftest import PrivateQuill

PASSWORD = "Quill-Test-Password-7f3a"
_names = itertools.count(1)


@pytest.fixture(scope="module")
def quill(tmp_path_factory):
    datadir = tmp_path_factory.mktemp("privileges") / "data"
    with PrivateQuill(datadir, f"--secure-file-priv={datadir.parent}") as server:
        root = server.connect()
        with root.cursor() as c:
            c.execute("CREATE DATABASE shop")
            c.execute("CREATE TABLE shop.t (id INT PRIMARY KEY, v INT)")
            c.execute("INSERT INTO shop.t VALUES (1, 1), (2, 2)")
        root.close()
        yield server


def root_run(server, *statements):
    return server.run(*statements)


def login(server, user, password=PASSWORD, **options):
    options.setdefault("autocommit", True)
    return pymysql.connect(host=server.host, port=server.port, user=user, password=password, connect_timeout=10, **options)


def new_account(server, plugin="caching_sha2_password") -> str:
    user = f"u{next(_names)}"
    root_run(server, f"CREATE USER '{user}'@'%' IDENTIFIED WITH {plugin} BY '{PASSWORD}'")
    return user


def errno_of(server, user, statements) -> int | None:
    conn = login(server, user)
    try:
        with conn.cursor() as c:
            for sql in statements:
                c.execute(sql)
        return None
    except pymysql.err.MySQLError as e:
        return e.args[0]
    finally:
        conn.close()


# (what is granted, statements run as the account, MySQL's errno without the grant).
# Setup each case needs first runs as root (`{user}` is the account, `{n}` a unique number).
CASES = [
    ("SELECT ON shop.t", [], ["SELECT * FROM shop.t"], 1142),
    ("INSERT ON shop.t", [], ["INSERT INTO shop.t VALUES ({n}, 0)"], 1142),
    ("UPDATE ON shop.t", [], ["UPDATE shop.t SET v = v + 1"], 1142),
    # A multi-table UPDATE or DELETE needs the write privilege on its targets only.
    (
        "UPDATE ON shop.t",
        ["CREATE TABLE shop.s{n} (id INT PRIMARY KEY, v INT)", "GRANT SELECT ON shop.s{n} TO '{user}'@'%'", "GRANT SELECT ON shop.t TO '{user}'@'%'"],
        ["UPDATE shop.t JOIN shop.s{n} AS s ON s.id = t.id SET t.v = s.v"],
        1142,
    ),
    (
        "DELETE ON shop.s{n}",
        ["CREATE TABLE shop.s{n} (id INT PRIMARY KEY, v INT)", "GRANT SELECT ON shop.s{n} TO '{user}'@'%'", "GRANT SELECT ON shop.t TO '{user}'@'%'"],
        ["DELETE s FROM shop.s{n} AS s JOIN shop.t ON t.id = s.id"],
        1142,
    ),
    ("DELETE ON shop.t", ["INSERT INTO shop.t VALUES ({n}, 0)"], ["DELETE FROM shop.t WHERE id = {n}"], 1142),
    ("CREATE ON shop.*", [], ["CREATE TABLE shop.c{n} (a INT)"], 1142),
    ("DROP ON shop.*", ["CREATE TABLE shop.d{n} (a INT)"], ["DROP TABLE shop.d{n}"], 1142),
    ("ALTER ON shop.*", ["CREATE TABLE shop.a{n} (a INT)"], ["ALTER TABLE shop.a{n} ADD COLUMN b INT"], 1142),
    ("INDEX ON shop.*", ["CREATE TABLE shop.i{n} (a INT)"], ["CREATE INDEX ia ON shop.i{n} (a)"], 1142),
    ("DROP ON shop.*", ["CREATE TABLE shop.r{n} (a INT)"], ["TRUNCATE TABLE shop.r{n}"], 1142),
    ("SELECT ON shop.*", [], ["SHOW CREATE TABLE shop.t"], 1142),
    ("CREATE ON db{n}.*", [], ["CREATE DATABASE db{n}"], 1044),
    ("DROP ON dd{n}.*", ["CREATE DATABASE dd{n}"], ["DROP DATABASE dd{n}"], 1044),
    ("SELECT ON shop.*", [], ["USE shop"], 1044),
    ("LOCK TABLES, SELECT ON shop.*", [], ["LOCK TABLES shop.t READ", "UNLOCK TABLES"], 1044),
    ("RELOAD ON *.*", [], ["FLUSH PRIVILEGES"], 1227),
    ("SUPER ON *.*", [], ["SET GLOBAL max_connections = 151"], 1227),
    ("CREATE USER ON *.*", [], ["CREATE USER x{n}@'%'", "DROP USER x{n}@'%'"], 1227),
    ("SUPER ON *.*", [], ["PURGE BINARY LOGS BEFORE '2000-01-01'"], 1227),
    ("FILE ON *.*", [], ["SELECT 1 INTO OUTFILE 'out{n}.txt'"], 1045),
    ("SELECT ON mysql.*", [], ["SHOW GRANTS FOR root@localhost"], 1044),
]


@pytest.mark.parametrize("grant, setup, statements, errno", CASES, ids=[f"{c[0]}: {c[2][0]}" for c in CASES])
def test_each_statement_class_needs_its_privilege(quill, grant, setup, statements, errno):
    n = next(_names)
    user = new_account(quill)
    fill = lambda sql: sql.format(n=n, user=user)  # noqa: E731
    root_run(quill, "SELECT 1", *[fill(s) for s in setup])
    assert errno_of(quill, user, [fill(s) for s in statements]) == errno
    root_run(quill, f"GRANT {fill(grant)} TO '{user}'@'%'")
    assert errno_of(quill, user, [fill(s) for s in statements]) is None


def test_kill_of_another_accounts_connection_needs_super(quill):
    user = new_account(quill)
    victim = quill.connect()
    victim_id = victim.thread_id()
    assert errno_of(quill, user, [f"KILL QUERY {victim_id}"]) == 1095
    own = login(quill, user)
    with own.cursor() as c:
        c.execute(f"KILL QUERY {own.thread_id()}")
    own.close()
    victim.close()


def test_logins_check_the_password_with_either_plugin(quill):
    sha2 = new_account(quill)
    native = new_account(quill, "mysql_native_password")
    for user in (sha2, native):
        conn = login(quill, user)
        with conn.cursor() as c:
            c.execute("SELECT CURRENT_USER()")
            assert c.fetchone() == (f"{user}@%",)
        conn.close()
        with pytest.raises(pymysql.err.OperationalError) as e:
            login(quill, user, "wrong")
        assert e.value.args[0] == 1045
    # mysqlclient (libmariadb) and the mysql command-line client, each with both plugins.
    for user in (sha2, native):
        conn = MySQLdb.connect(host=quill.host, port=quill.port, user=user, password=PASSWORD)
        conn.close()
        out = subprocess.run(
            ["mysql", "-h", quill.host, "-P", str(quill.port), "-u", user, f"-p{PASSWORD}", "-N", "-e", "SELECT CURRENT_USER()"],
            capture_output=True, text=True, timeout=30,
        )
        assert out.returncode == 0 and out.stdout.strip() == f"{user}@%", out.stderr
    with pytest.raises(pymysql.err.OperationalError) as e:
        login(quill, "nobody")
    assert e.value.args[0] == 1045


def test_change_user_reauthenticates(quill):
    a, b = new_account(quill), new_account(quill, "mysql_native_password")
    root_run(quill, f"GRANT SELECT ON shop.* TO '{b}'@'%'")
    conn = MySQLdb.connect(host=quill.host, port=quill.port, user=a, password=PASSWORD)
    conn.change_user(b, PASSWORD, "shop")
    c = conn.cursor()
    c.execute("SELECT CURRENT_USER(), COUNT(*) > 0 FROM t")
    assert c.fetchone() == (f"{b}@%", 1)
    with pytest.raises(MySQLdb.OperationalError) as e:
        conn.change_user(a, "wrong")
    assert e.value.args[0] == 1045


def test_locked_accounts_and_require_ssl(quill):
    user = new_account(quill)
    root_run(quill, f"ALTER USER '{user}'@'%' ACCOUNT LOCK")
    with pytest.raises(pymysql.err.OperationalError) as e:
        login(quill, user)
    assert e.value.args[0] == 3118
    root_run(quill, f"ALTER USER '{user}'@'%' ACCOUNT UNLOCK REQUIRE SSL")
    # (PyMySQL uses TLS when the server offers it, unless told not to.)
    with pytest.raises(pymysql.err.OperationalError) as e:
        login(quill, user, ssl_disabled=True)
    assert e.value.args[0] == 1045
    conn = login(quill, user, ssl={"check_hostname": False}, ssl_verify_cert=False)
    conn.close()
    root_run(quill, "SET GLOBAL require_secure_transport = ON")
    try:
        with pytest.raises(pymysql.err.OperationalError) as e:
            login(quill, "root", "", ssl_disabled=True)
        assert e.value.args[0] == 3159
        login(quill, "root", "", ssl={"check_hostname": False}, ssl_verify_cert=False).close()
    finally:
        conn = login(quill, "root", "", ssl={"check_hostname": False}, ssl_verify_cert=False)
        with conn.cursor() as c:
            c.execute("SET GLOBAL require_secure_transport = OFF")
        conn.close()


def test_account_statements_answer_as_mysql(quill):
    user = new_account(quill)
    root_run(quill, f"GRANT SELECT, INSERT ON shop.* TO '{user}'@'%'", f"GRANT UPDATE ON shop.t TO '{user}'@'%' WITH GRANT OPTION")
    assert root_run(quill, f"SHOW GRANTS FOR '{user}'@'%'") == (
        (f"GRANT USAGE ON *.* TO `{user}`@`%`",),
        (f"GRANT SELECT, INSERT ON `shop`.* TO `{user}`@`%`",),
        (f"GRANT UPDATE ON `shop`.`t` TO `{user}`@`%` WITH GRANT OPTION",),
    )
    root_run(quill, f"REVOKE INSERT ON shop.* FROM '{user}'@'%'")
    assert root_run(quill, f"SHOW GRANTS FOR '{user}'@'%'")[1] == (f"GRANT SELECT ON `shop`.* TO `{user}`@`%`",)
    expected = {
        f"CREATE USER '{user}'@'%'": 1396,
        "DROP USER 'ghost'@'%'": 1396,
        "GRANT SELECT ON shop.* TO 'ghost'@'%'": 1410,
        f"REVOKE SELECT ON nodb.* FROM '{user}'@'%'": 1141,
        "SHOW GRANTS FOR 'ghost'@'%'": 1141,
        f"GRANT SUPER ON shop.* TO '{user}'@'%'": 1221,
        f"GRANT LOCK TABLES ON shop.t TO '{user}'@'%'": 1144,
        f"CREATE USER 'p'@'%' IDENTIFIED WITH no_such_plugin": 1524,
    }
    conn = quill.connect()
    with conn.cursor() as c:
        for sql, errno in expected.items():
            with pytest.raises(pymysql.err.MySQLError) as e:
                c.execute(sql)
            assert e.value.args[0] == errno, sql
        c.execute("DROP USER IF EXISTS 'ghost'@'%'")
        c.execute("SHOW WARNINGS")
        assert c.fetchall()[0][1] == 3162
        # A GRANT OPTION holder passes on what it has, and nothing else.
    conn.close()
    granter = login(quill, user)
    with granter.cursor() as c:
        other = new_account(quill)
        c.execute(f"GRANT UPDATE ON shop.t TO '{other}'@'%'")
        with pytest.raises(pymysql.err.MySQLError) as e:
            c.execute(f"GRANT DELETE ON shop.t TO '{other}'@'%'")
        assert e.value.args[0] == 1142
    granter.close()
    # Tools read the grant tables.
    rows = root_run(quill, f"SELECT User, Host, plugin, Select_priv FROM mysql.user WHERE User = '{user}'")
    assert rows == ((user, "%", "caching_sha2_password", "N"),)
    assert root_run(quill, f"SELECT Db, Select_priv, Insert_priv FROM mysql.db WHERE User = '{user}'") == (("shop", "Y", "N"),)


def test_a_changed_password_and_dropped_account(quill):
    user = new_account(quill)
    conn = login(quill, user)
    with conn.cursor() as c:
        c.execute("ALTER USER CURRENT_USER() IDENTIFIED BY 'second-password'")
    conn.close()
    with pytest.raises(pymysql.err.OperationalError):
        login(quill, user)
    login(quill, user, "second-password").close()
    root_run(quill, f"SET PASSWORD FOR '{user}'@'%' = 'third'")
    login(quill, user, "third").close()
    root_run(quill, f"DROP USER '{user}'@'%'")
    with pytest.raises(pymysql.err.OperationalError) as e:
        login(quill, user, "third")
    assert e.value.args[0] == 1045


def test_accounts_survive_kill_9_and_no_password_is_written_in_clear(tmp_path):
    secret = "Plain-Text-Secret-91c2"
    with PrivateQuill(tmp_path / "data", "--slow-query-log=ON", "--long-query-time=0") as server:
        root_run(
            server,
            f"CREATE USER 'keeper'@'%' IDENTIFIED BY '{secret}'",
            f"ALTER USER 'keeper'@'%' IDENTIFIED WITH mysql_native_password BY '{secret}'",
            f"SET PASSWORD FOR 'keeper'@'%' = '{secret}'",
            "GRANT SELECT ON *.* TO 'keeper'@'%'",
        )
        server.kill()
        server.start()
        conn = login(server, "keeper", secret)
        with conn.cursor() as c:
            c.execute("SHOW GRANTS")
            assert c.fetchall() == (("GRANT SELECT ON *.* TO `keeper`@`%`",),)
        conn.close()
        written = [p for p in Path(server.datadir).rglob("*") if p.is_file()] + [Path(server.log_path)]
        assert any(p.name.endswith("slow.log") and "IDENTIFIED BY <secret>" in p.read_text(errors="replace") for p in written)
        for path in written:
            assert secret.encode() not in path.read_bytes(), f"{path} holds the password in clear"


def test_names_with_quotes_and_backslashes_whatever_the_sql_mode(quill):
    """Account statements write the grant tables with SQL of their own: a name with a quote
    or a backslash must land as given, under any sql_mode of the session that runs them."""
    conn = quill.connect()
    with conn.cursor() as c:
        c.execute("SET SESSION sql_mode = 'ANSI_QUOTES,NO_BACKSLASH_ESCAPES'")
        c.execute(f"CREATE USER 'o''b\\k'@'%' IDENTIFIED BY '{PASSWORD}'")
        c.execute("SET SESSION sql_mode = DEFAULT")
        c.execute("SELECT User FROM mysql.user WHERE User LIKE 'o%'")
        assert c.fetchall() == (("o'b\\k",),)
    conn.close()
    login(quill, "o'b\\k").close()


def test_reads_anywhere_in_a_statement_need_select(quill):
    """A subquery in SET or SHOW ... WHERE reads tables too (it read mysql.user's hashes)."""
    user = new_account(quill)
    for sql in (
        "SET @h = (SELECT GROUP_CONCAT(authentication_string) FROM mysql.user)",
        "SHOW DATABASES WHERE (SELECT COUNT(*) FROM shop.t) > 0",
        "DESC shop.t",
        "EXPLAIN SELECT * FROM shop.t",
        "SET GLOBAL TRANSACTION READ ONLY",
    ):
        assert errno_of(quill, user, [sql]) in (1142, 1227), sql


def test_an_unreadable_hash_refuses_every_login(quill):
    """A hash its plugin cannot read used to count as no password at all."""
    user = new_account(quill, "mysql_native_password")
    root_run(quill, f"UPDATE mysql.user SET plugin = 'caching_sha2_password' WHERE User = '{user}'", "FLUSH PRIVILEGES")
    for password in ("", PASSWORD):
        with pytest.raises(pymysql.err.OperationalError) as e:
            login(quill, user, password)
        assert e.value.args[0] == 1045


CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS = 1 << 22


def test_an_expired_password_allows_only_setting_a_new_one(quill):
    """Regression: `ALTER USER ... PASSWORD EXPIRE` was 1235. As in MySQL 8: a client that
    handles expired passwords logs in to a session where every statement but ALTER USER, SET
    PASSWORD and SET is 1820 until the password is changed; any other client is refused with
    1862. The mysql command-line client (with --connect-expired-password) is the one users
    meet; PyMySQL stands in for both kinds through its client flags."""
    user = new_account(quill)
    root_run(quill, f"ALTER USER '{user}'@'%' PASSWORD EXPIRE")
    with pytest.raises(pymysql.err.OperationalError) as refused:
        login(quill, user)
    assert refused.value.args[0] == 1862
    conn = login(quill, user, client_flag=CLIENT_CAN_HANDLE_EXPIRED_PASSWORDS)
    with conn.cursor() as c:
        with pytest.raises(pymysql.err.OperationalError) as sandboxed:
            c.execute("SELECT 1")
        assert sandboxed.value.args[0] == 1820
        c.execute("SET @x = 1")
        c.execute(f"ALTER USER '{user}'@'%' IDENTIFIED BY 'Fresh-Password-1'")
        c.execute("SELECT 1")
        assert c.fetchone() == (1,)
    conn.close()
    login(quill, user, password="Fresh-Password-1").close()
    cli = subprocess.run(
        ["mysql", "-h", quill.host, "-P", str(quill.port), "-u", user, "-pFresh-Password-1", "-N", "-e", "SELECT CURRENT_USER()"],
        capture_output=True, text=True, timeout=30,
    )
    assert cli.returncode == 0, cli.stderr


def test_password_lifetimes(quill):
    """PASSWORD EXPIRE INTERVAL n DAY / NEVER / DEFAULT are kept and shown by SHOW CREATE
    USER; default_password_lifetime expires a password older than that many days."""
    user = new_account(quill)
    for clause, shown in (("INTERVAL 30 DAY", "PASSWORD EXPIRE INTERVAL 30 DAY"), ("NEVER", "PASSWORD EXPIRE NEVER"), ("DEFAULT", "PASSWORD EXPIRE DEFAULT")):
        root_run(quill, f"ALTER USER '{user}'@'%' PASSWORD EXPIRE {clause}")
        conn = login(quill, "root", "")
        with conn.cursor() as c:
            c.execute(f"SHOW CREATE USER '{user}'@'%'")
            assert shown in c.fetchone()[0]
        conn.close()
    # A password set 10 days ago, with a 5-day default lifetime, has expired.
    root_run(quill, f"UPDATE mysql.user SET password_last_changed = NOW() - INTERVAL 10 DAY WHERE User = '{user}'", "FLUSH PRIVILEGES",
             "SET GLOBAL default_password_lifetime = 5")
    try:
        with pytest.raises(pymysql.err.OperationalError) as refused:
            login(quill, user)
        assert refused.value.args[0] == 1862
        root_run(quill, f"ALTER USER '{user}'@'%' PASSWORD EXPIRE NEVER")
        login(quill, user).close()
    finally:
        root_run(quill, "SET GLOBAL default_password_lifetime = 0")
