"""TLS and authentication as clients meet them.

A fresh data directory holds a self-signed certificate the server generated on first start;
clients that ask for TLS get it. The only account is root with an empty password, from
loopback; the server's default plugin is caching_sha2_password (as MySQL 8's), and clients
that use mysql_native_password are served too.
"""

import subprocess

import mysql.connector
import pymysql
import pytest


@pytest.fixture(autouse=True)
def _needs_quill(server):
    # tests/run-against-mariadb.sh starts MariaDB without TLS certificates and with an
    # open root account, so these checks only mean something against Quill.
    if not server.is_quill:
        pytest.skip("the reference MariaDB runs without TLS and account checks")


def _mysql(server, *args):
    return subprocess.run(
        ["mysql", f"-h{server.host}", f"-P{server.port}", "-uroot", "-B", "-N", *args],
        capture_output=True, text=True, timeout=30,
    )


def test_cli_over_tls_reports_the_cipher(server):
    out = _mysql(server, "--ssl", "-e", "SHOW SESSION STATUS LIKE 'Ssl_version'")
    assert out.returncode == 0, out.stderr
    name, version = out.stdout.strip().split("\t")
    assert name == "Ssl_version" and version.startswith("TLSv1.")


def test_cli_without_tls_still_connects(server):
    out = _mysql(server, "--skip-ssl", "-e", "SHOW SESSION STATUS LIKE 'Ssl_cipher'")
    assert out.returncode == 0, out.stderr
    assert out.stdout == "Ssl_cipher\t\n"


def test_pymysql_tls_with_empty_password(server):
    conn = pymysql.connect(host=server.host, port=server.port, user="root", password="",
                           ssl={"check_hostname": False}, ssl_verify_cert=False)
    with conn.cursor() as cur:
        cur.execute("SHOW SESSION STATUS LIKE 'Ssl_cipher'")
        assert cur.fetchone()[1] != ""
    conn.close()


@pytest.mark.parametrize("use_tls", [True, False])
def test_wrong_password_is_1045(server, use_tls):
    """Over TLS this runs caching_sha2_password's full exchange (cleartext over TLS)."""
    options = {"ssl": {"check_hostname": False}, "ssl_verify_cert": False} if use_tls else {}
    with pytest.raises(pymysql.err.OperationalError) as err:
        pymysql.connect(host=server.host, port=server.port, user="root", password="not-the-password", **options)
    assert err.value.args[0] == 1045


def test_unknown_user_is_1045(server):
    with pytest.raises(pymysql.err.OperationalError) as err:
        pymysql.connect(host=server.host, port=server.port, user="nobody", password="")
    assert err.value.args[0] == 1045


@pytest.mark.parametrize("plugin", ["mysql_native_password", "caching_sha2_password"])
def test_either_auth_plugin_logs_in(server, plugin):
    conn = mysql.connector.connect(host=server.host, port=server.port, user="root", password="",
                                   auth_plugin=plugin, use_pure=True)
    cur = conn.cursor()
    cur.execute("SELECT CURRENT_USER()")
    assert cur.fetchone()[0] == "root@localhost"
    conn.close()


def test_certificate_is_generated_into_the_data_directory(server):
    if not server.is_quill:
        pytest.skip("checks Quill's data directory")
    datadir = server.workdir / "data"
    assert (datadir / "server-cert.pem").read_text().startswith("-----BEGIN CERTIFICATE-----")
    assert "PRIVATE KEY" in (datadir / "server-key.pem").read_text()
