"""caching_sha2_password as MySQL 8 runs it, against a server of the module's own.

The server keeps a salted SHA-256-crypt hash of each password (`$A$005$`, MySQL's format) and
learns the secret a fast login checks only from a full authentication, keeping it in memory
until the account changes, FLUSH PRIVILEGES or a restart. So each case here first empties that
cache (FLUSH PRIVILEGES): a client that then logs in without TLS must have fetched the server's
RSA public key and sent its password encrypted, because the server refuses a password sent in
clear without TLS and has nothing to check a fast answer against. Every client a user meets
does that exchange here, started the way a user starts it: the mysql command-line client,
PyMySQL, mysqlclient, go-sql-driver, Node's mysql2, PHP's mysqli and PDO, MySQL Connector/J
and MariaDB Connector/J. Clients that do not implement the exchange behave as with MySQL:
libmysqlclient (mysql-connector-python's C extension) stops with 2061 until a full login over
TLS or RSA filled the cache.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
import subprocess
from pathlib import Path

import MySQLdb
import mysql.connector
import pymysql
import pytest

from conftest import PrivateQuill
from wire import AUTH_MORE_DATA, ERR_HEADER, RawConnection, parse_err

TESTS = Path(__file__).parent
PASSWORD = "Rsa-Exchange-Password-5e1"
# `foobar`, hashed by a MySQL 8 server: its 20-byte salt holds unprintable bytes.
MYSQL_FOOBAR_HASH = (
    "0x24412430303524031A69251C34295C4B35167C7F1E5A7B63091349503974624D34504B5A424679354856"
    "336868686F52485A736E4A733368786E427575516C73446469496537"
)


@pytest.fixture(scope="module")
def quill(tmp_path_factory):
    with PrivateQuill(tmp_path_factory.mktemp("caching_sha2") / "data", "--quill-checkpoint-interval-seconds=1") as server:
        server.run(f"CREATE USER 'app'@'%' IDENTIFIED BY '{PASSWORD}'")
        yield server


def forget(server):
    """Empty the server's cache of fast-authentication secrets."""
    server.run("FLUSH PRIVILEGES")


def who(cursor) -> str:
    """`CURRENT_USER() Ssl_cipher`, as the client programs print it."""
    cursor.execute("SELECT CURRENT_USER()")
    user = cursor.fetchone()[0]
    cursor.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    return f"{user} {cursor.fetchone()[1]}".strip()


def pymysql_login(server, password=PASSWORD, **options) -> str:
    if "ssl" not in options:
        options["ssl_disabled"] = True  # PyMySQL 1.2 asks for TLS whenever the server offers it
    conn = pymysql.connect(host=server.host, port=server.port, user="app", password=password, connect_timeout=10, **options)
    try:
        with conn.cursor() as c:
            return who(c)
    finally:
        conn.close()


def connector_login(server, *, use_pure: bool, password=PASSWORD) -> str:
    conn = mysql.connector.connect(host=server.host, port=server.port, user="app", password=password, use_pure=use_pure, ssl_disabled=True)
    try:
        return who(conn.cursor())
    finally:
        conn.close()


def run_client(command, cwd, server, password=PASSWORD, **env) -> str:
    env = dict(os.environ, QUILL_PORT=str(server.port), QUILL_USER="app", QUILL_PASSWORD=password, **env)
    result = subprocess.run(command, cwd=cwd, capture_output=True, text=True, env=env, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip()


def tool(name: str) -> str:
    path = shutil.which(name) or ("/usr/local/go/bin/go" if name == "go" else None)
    if path is None or not Path(path).exists():
        pytest.fail(f"{name} is needed for this test (scripts/test-all installs it)")
    return path


def login_cli(server):
    return run_client(
        ["mysql", f"-h{server.host}", f"-P{server.port}", "-uapp", f"-p{PASSWORD}", "--skip-ssl", "-B", "-N", "-e",
         "SELECT CURRENT_USER(); SHOW SESSION STATUS LIKE 'Ssl_cipher'"],
        None, server,
    ).replace("\nSsl_cipher", "").strip()


def login_mysqlclient(server):
    conn = MySQLdb.connect(host=server.host, port=server.port, user="app", password=PASSWORD, ssl_mode="DISABLED")
    try:
        return who(conn.cursor())
    finally:
        conn.close()


def login_go(server):
    return run_client([tool("go"), "run", "./login"], TESTS / "go-client", server, GOFLAGS="-mod=readonly")


def login_node(server):
    client = TESTS / "node-client"
    if not (client / "node_modules" / "mysql2").exists():
        # As tests/test_node_client.py installs it (pinned in package-lock.json).
        install = subprocess.run(
            [tool("npm"), "ci", "--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=client, capture_output=True, text=True, timeout=600,
        )
        assert install.returncode == 0, install.stdout + install.stderr
    return run_client([tool("node"), "login.js"], client, server)


def java_login(driver):
    def login(server):
        client = TESTS / "java-client"
        build = subprocess.run([tool("mvn"), "-q", "-B", "package"], cwd=client, capture_output=True, text=True, timeout=900)
        assert build.returncode == 0, build.stdout + build.stderr
        classpath = os.pathsep.join([str(client / "target" / "classes"), str(client / "target" / "lib" / "*")])
        return run_client([tool("java"), "-cp", classpath, "quill.javaclient.Login", driver], None, server)
    return login


CLIENTS = {
    "mysql-cli": login_cli,
    "pymysql": lambda server: pymysql_login(server),
    "mysqlclient": login_mysqlclient,
    "go-sql-driver": login_go,
    "node-mysql2": login_node,
    "connector-j": java_login("mysql"),
    "mariadb-connector-j": java_login("mariadb"),
}


@pytest.mark.parametrize("client", CLIENTS)
def test_a_login_without_tls_sends_the_password_rsa_encrypted(quill, client):
    forget(quill)
    assert CLIENTS[client](quill) == "app@%"


def test_php_mysqli_and_pdo_log_in_through_the_rsa_exchange(quill):
    php = tool("php")
    flush = f"mysql -h{quill.host} -P{quill.port} -uroot -e 'FLUSH PRIVILEGES'"
    forget(quill)
    out = run_client([php, "login.php"], TESTS / "php-client", quill, QUILL_BETWEEN=flush)
    assert out.splitlines() == ["mysqli app@%", "pdo app@%"]


def test_a_client_with_the_key_pinned_sends_the_ciphertext_at_once(quill):
    """PyMySQL given the public key (as `--server-public-key-path` gives it) skips asking."""
    pem = (Path(quill.datadir) / "public_key.pem").read_bytes()
    forget(quill)
    assert pymysql_login(quill, server_public_key=pem) == "app@%"


@pytest.mark.parametrize("use_tls", [False, True])
def test_a_wrong_password_in_a_full_authentication_is_1045(quill, use_tls):
    forget(quill)
    options = {"ssl": {"check_hostname": False}, "ssl_verify_cert": False} if use_tls else {}
    with pytest.raises(pymysql.err.OperationalError) as e:
        pymysql_login(quill, "not-the-password", **options)
    assert e.value.args[0] == 1045
    with pytest.raises(pymysql.err.OperationalError) as e:
        pymysql_login(quill, "", **options)
    assert e.value.args[0] == 1045


def test_over_tls_the_password_goes_in_clear_and_fills_the_cache(quill):
    forget(quill)
    assert pymysql_login(quill, ssl={"check_hostname": False}, ssl_verify_cert=False).startswith("app@% TLS_")
    # Now the fast path answers even a client that cannot do the RSA exchange.
    assert connector_login(quill, use_pure=False) == "app@%"


def test_libmysqlclient_needs_the_cache_as_with_mysql(quill):
    """libmysqlclient does not fetch the key unless told to: 2061 on an empty cache, as a
    MySQL 8 server gives it; once any full login filled the cache, it logs in."""
    forget(quill)
    with pytest.raises(mysql.connector.Error) as e:
        connector_login(quill, use_pure=False)
    assert e.value.errno == 2061
    assert pymysql_login(quill) == "app@%"
    assert connector_login(quill, use_pure=False) == "app@%"


def test_a_password_in_clear_without_tls_is_refused(quill):
    """mysql-connector-python's pure-Python plugin sends the password in clear when asked for
    a full authentication, TLS or not; without TLS the server refuses it, as MySQL does."""
    forget(quill)
    with pytest.raises(mysql.connector.Error) as e:
        connector_login(quill, use_pure=True)
    assert e.value.errno == 1045


def test_a_changed_password_drops_the_cached_secret(quill):
    quill.run(f"CREATE USER 'changing'@'%' IDENTIFIED BY '{PASSWORD}'")
    login = lambda password: pymysql.connect(host=quill.host, port=quill.port, user="changing", password=password, ssl_disabled=True).close()  # noqa: E731
    login(PASSWORD)
    quill.run("ALTER USER 'changing'@'%' IDENTIFIED BY 'second'")
    with pytest.raises(pymysql.err.OperationalError):
        login(PASSWORD)
    login("second")
    quill.run("DROP USER 'changing'@'%'")


def test_a_hash_made_by_a_mysql_server_logs_in(quill):
    quill.run(f"CREATE USER 'migrated'@'%' IDENTIFIED WITH caching_sha2_password AS {MYSQL_FOOBAR_HASH}")
    (text,), = quill.run("SHOW CREATE USER 'migrated'@'%'")
    assert f"AS {MYSQL_FOOBAR_HASH} REQUIRE NONE" in text, "printed in hex so it runs again"
    for options in ({"ssl_disabled": True}, {"ssl": {"check_hostname": False}, "ssl_verify_cert": False}):
        forget(quill)
        pymysql.connect(host=quill.host, port=quill.port, user="migrated", password="foobar", **options).close()
        with pytest.raises(pymysql.err.OperationalError):
            pymysql.connect(host=quill.host, port=quill.port, user="migrated", password="not_foobar", **options)
    quill.run("DROP USER 'migrated'@'%'")


def test_hashes_are_salted_and_never_the_fast_secret(quill):
    quill.run(f"CREATE USER 'twin1'@'%' IDENTIFIED BY '{PASSWORD}'", f"CREATE USER 'twin2'@'%' IDENTIFIED BY '{PASSWORD}'")
    rows = quill.run("SELECT authentication_string FROM mysql.user WHERE User LIKE 'twin%' ORDER BY User")
    first, second = (r[0] for r in rows)
    assert first != second and first.startswith("$A$005$") and len(first) == 70
    secret = hashlib.sha256(hashlib.sha256(PASSWORD.encode()).digest()).hexdigest()
    pymysql.connect(host=quill.host, port=quill.port, user="twin1", password=PASSWORD, ssl_disabled=True).close()
    quill.wait_for_checkpoint()
    for path in (p for p in Path(quill.datadir).rglob("*") if p.is_file()):
        data = path.read_bytes()
        assert PASSWORD.encode() not in data and secret.encode() not in data and secret.upper().encode() not in data, path
    quill.run("DROP USER 'twin1'@'%'", "DROP USER 'twin2'@'%'")


def test_a_password_longer_than_256_bytes_is_refused(quill):
    with pytest.raises(pymysql.err.OperationalError) as e:
        quill.run(f"CREATE USER 'long'@'%' IDENTIFIED BY '{'x' * 257}'")
    assert e.value.args[0] == 1819


def test_the_key_pair_outlives_a_restart_and_the_cache_does_not(quill):
    datadir = Path(quill.datadir)
    assert (datadir / "private_key.pem").stat().st_mode & 0o777 == 0o600
    pem = (datadir / "public_key.pem").read_text()
    assert pem.startswith("-----BEGIN PUBLIC KEY-----\n")
    status = "SHOW GLOBAL STATUS LIKE 'Caching_sha2_password_rsa_public_key'"
    assert quill.run(status) == (("Caching_sha2_password_rsa_public_key", pem),)
    assert pymysql_login(quill) == "app@%"
    assert connector_login(quill, use_pure=False) == "app@%", "cached"
    quill.kill()
    quill.start()
    assert quill.run(status) == (("Caching_sha2_password_rsa_public_key", pem),), "the same key"
    with pytest.raises(mysql.connector.Error) as e:
        connector_login(quill, use_pure=False)
    assert e.value.errno == 2061, "a restart empties the cache"
    assert pymysql_login(quill) == "app@%"


def test_an_account_from_an_earlier_quill_keeps_its_fast_login(quill):
    """Earlier versions kept the fast secret itself (`$Q$` and hex): such an account logs in
    by fast authentication with no full one first, even a client that cannot do RSA."""
    secret = hashlib.sha256(hashlib.sha256(PASSWORD.encode()).digest()).hexdigest().upper()
    quill.run(f"CREATE USER 'legacy'@'%' IDENTIFIED WITH caching_sha2_password AS '$Q${secret}'")
    forget(quill)
    conn = mysql.connector.connect(host=quill.host, port=quill.port, user="legacy", password=PASSWORD, use_pure=False, ssl_disabled=True)
    assert who(conn.cursor()) == "legacy@%"
    conn.close()
    quill.run("DROP USER 'legacy'@'%'")


def test_a_quill_replica_fetches_the_source_key_when_told_to(quill, tmp_path):
    """A replica logging in without TLS with a passworded account: 2061 on an empty cache, as
    MySQL's replica gives it, until GET_SOURCE_PUBLIC_KEY = 1 lets it do the RSA exchange."""
    from test_replica import caught_up, one, status

    quill.run(f"CREATE USER 'repl'@'%' IDENTIFIED BY '{PASSWORD}'", "GRANT REPLICATION SLAVE ON *.* TO 'repl'@'%'")
    forget(quill)
    with PrivateQuill(tmp_path / "replica", "--server_id=2") as replica:
        change = (
            f"CHANGE REPLICATION SOURCE TO SOURCE_HOST='127.0.0.1', SOURCE_PORT={quill.port}, SOURCE_USER='repl',"
            f" SOURCE_PASSWORD='{PASSWORD}', SOURCE_CONNECT_RETRY=1, SOURCE_AUTO_POSITION=1"
        )
        replica.run(change, "START REPLICA")
        deadline = time.monotonic() + 30
        while status(replica).get("Last_IO_Errno") != 2061:
            assert time.monotonic() < deadline, status(replica)
            time.sleep(0.1)
        replica.run("STOP REPLICA", change + ", GET_SOURCE_PUBLIC_KEY = 1", "START REPLICA")
        quill.run("CREATE DATABASE IF NOT EXISTS rsa_repl", "CREATE TABLE rsa_repl.t (id INT PRIMARY KEY)", "INSERT INTO rsa_repl.t VALUES (7)")
        state = caught_up(quill, replica)
        assert state["Get_Source_public_key"] == 1 and state["Replica_IO_Running"] == "Yes"
        assert one(replica, "SELECT id FROM rsa_repl.t") == (7,)


@pytest.mark.parametrize("user", ["app", "no_such_user"])
def test_bad_ciphertext_is_1045_and_unknown_users_get_the_same_exchange(quill, user):
    """Over a raw socket: a fast answer that does not check asks for the full exchange, the
    key comes on request, and bytes that are no ciphertext of it are refused with 1045, all
    alike for a user that exists and one that does not (the decoy); the server goes on."""
    forget(quill)
    for ciphertext in (os.urandom(256), b"\x00" * 256, os.urandom(7), PASSWORD.encode() + b"\0"):
        with RawConnection(quill.host, quill.port) as raw:
            raw.send_login(user, os.urandom(32))
            assert raw.read_packet() == bytes([AUTH_MORE_DATA, 4]), "perform full authentication"
            raw.write_packet(b"\x02")
            key = raw.read_packet()
            assert key[0] == AUTH_MORE_DATA and key[1:].startswith(b"-----BEGIN PUBLIC KEY-----"), key[:40]
            raw.write_packet(ciphertext)
            refusal = raw.read_packet()
            assert refusal[0] == ERR_HEADER and parse_err(refusal).errno == 1045
    assert pymysql_login(quill) == "app@%"


def test_a_malformed_hex_hash_is_a_syntax_error_and_the_connection_goes_on(quill):
    """Regression: a multibyte character in `AS 0x...` split a `str` slice and panicked."""
    conn = quill.connect()
    with conn.cursor() as c:
        with pytest.raises(pymysql.err.ProgrammingError) as e:
            c.execute("CREATE USER 'hexy'@'%' IDENTIFIED WITH caching_sha2_password AS 0xa\u00e9b")
        assert e.value.args[0] == 1064
        c.execute("SELECT 1")
        assert c.fetchone() == (1,)
    conn.close()
