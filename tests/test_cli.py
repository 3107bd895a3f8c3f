"""The `mysql` command-line client (Debian's mariadb-client), run the way a user runs it.

Its output formats are part of what users see: batch mode (tab-separated, the default when
stdout is not a terminal), `-N` without column names, `--table` boxes, and errors printed as
`ERROR <errno> (<sqlstate>) at line <n>: <message>` with exit code 1.
"""

import shutil
import subprocess

import pytest

pytestmark = pytest.mark.skipif(shutil.which("mysql") is None, reason="mysql client not installed")


def mysql(server, *args, stdin=None, check=True):
    command = [
        "mysql",
        f"-h{server.host}",
        f"-P{server.port}",
        f"-u{server.user}",
        *([f"-p{server.password}"] if server.password else []),
        *args,
    ]
    result = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=30)
    if check:
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
    return result


def test_execute_prints_tab_separated_rows_with_header(server):
    result = mysql(server, "-e", "SELECT 1+1 AS two, 'a b' AS s, NULL AS n")
    assert result.stdout == "two\ts\tn\n2\ta b\tNULL\n"


def test_batch_mode_escapes_special_characters(server):
    result = mysql(server, "-B", "-N", "-e", r"SELECT 'a\tb', 'x\\y', 'line1\nline2'")
    assert result.stdout == "a\\tb\tx\\\\y\tline1\\nline2\n"


def test_table_output(server):
    result = mysql(server, "--table", "-e", "SELECT 1+1 AS two, 'a b' AS s, NULL AS n")
    assert result.stdout == (
        "+-----+-----+------+\n"
        "| two | s   | n    |\n"
        "+-----+-----+------+\n"
        "|   2 | a b | NULL |\n"
        "+-----+-----+------+\n"
    )


def test_script_on_stdin(server, fresh_db):
    script = (
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(10));\n"
        "INSERT INTO t VALUES (1, 'a'), (2, NULL), (3, 'Ç');\n"
        "-- a comment line\n"
        "UPDATE t SET name = CONCAT(name, '!') WHERE id <> 2;\n"
        "SELECT * FROM t ORDER BY id;\n"
        "SELECT COUNT(*) AS n, COUNT(name) AS named FROM t;\n"
    )
    result = mysql(server, fresh_db, stdin=script)
    assert result.stdout == "id\tname\n1\ta!\n2\tNULL\n3\tÇ!\nn\tnamed\n3\t2\n"


def test_script_stops_at_the_first_error_with_its_line(server, fresh_db):
    script = "CREATE TABLE t (id INT PRIMARY KEY);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (1);\nINSERT INTO t VALUES (2);\n"
    result = mysql(server, fresh_db, stdin=script, check=False)
    assert result.returncode == 1
    # MySQL 8.0.19+ names the key with its table; MariaDB names the key alone.
    key = "t.PRIMARY" if server.is_quill else "PRIMARY"
    assert result.stderr.endswith(
        f"ERROR 1062 (23000) at line 3: Duplicate entry '1' for key '{key}'\n"
    )
    count = mysql(server, fresh_db, "-N", "-e", "SELECT COUNT(*) FROM t")
    assert count.stdout == "1\n"


def test_error_exit_code_and_message(server):
    result = mysql(server, "-e", "SELECT * FROM no_such_db_x.t", check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.endswith(
        "ERROR 1146 (42S02) at line 1: Table 'no_such_db_x.t' doesn't exist\n"
    )


def test_database_argument_and_show_tables(server, fresh_db):
    mysql(server, fresh_db, "-e", "CREATE TABLE b (x INT); CREATE TABLE a (x INT)")
    result = mysql(server, fresh_db, "-N", "-e", "SHOW TABLES")
    assert result.stdout == "a\nb\n"
    result = mysql(server, "-N", "-e", f"SELECT DATABASE(); USE {fresh_db}; SELECT DATABASE()")
    assert result.stdout == f"NULL\n{fresh_db}\n"
