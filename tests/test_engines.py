"""SHOW ENGINES and ENGINE= tell the truth: Quill has one storage engine (the in-memory
MVCC row store behind the handler API, named InnoDB as clients expect), and a table that
asks for another gets it only with a warning, or an error for a name no server has."""

from __future__ import annotations

import pymysql
import pytest


def test_show_engines_lists_the_default_engine(conn):
    with conn.cursor() as cur:
        cur.execute("SHOW ENGINES")
        engines = {row[0]: row[1] for row in cur.fetchall()}
    assert engines.get("InnoDB") == "DEFAULT"


def test_engine_innodb_is_taken_without_a_warning(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB")
        cur.execute("SHOW WARNINGS")
        assert cur.fetchall() == ()


def test_an_unknown_engine_is_error_1286_under_no_engine_substitution(conn):
    with conn.cursor() as cur:
        with pytest.raises(pymysql.err.MySQLError) as e:
            cur.execute("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=NoSuchEngine")
        assert e.value.args[0] == 1286
        cur.execute("SET SESSION sql_mode = ''")
        cur.execute("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=NoSuchEngine")
        cur.execute("SHOW WARNINGS")
        assert [w[1] for w in cur.fetchall()] == [1286, 1266]


@pytest.mark.mysql8_only  # Quill-specific: MySQL and MariaDB have MyISAM
def test_a_mysql_engine_quill_lacks_is_replaced_with_warning_1266(conn):
    with conn.cursor() as cur:
        cur.execute("CREATE TABLE m (id INT PRIMARY KEY) ENGINE=MyISAM")
        cur.execute("SHOW WARNINGS")
        assert cur.fetchall() == (("Warning", 1266, "Using storage engine InnoDB for table 'm'"),)
        cur.execute("INSERT INTO m VALUES (1)")
        cur.execute("SELECT * FROM m")
        assert cur.fetchall() == ((1,),)
