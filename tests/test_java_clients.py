"""Java's JDBC drivers as clients: tests/java-client is a Java program that runs, with MySQL
Connector/J 9 and with MariaDB Connector/J 3, each with client-side and with server-side
prepared statements, DatabaseMetaData as GUI tools and ORMs use it (tables, views, columns with
their types, sizes, defaults and auto-increment, primary keys, indexes, foreign keys both ways,
product name and version) and a small orders application (generated keys, batches, commit,
rollback, savepoints, SELECT ... FOR UPDATE against a second connection, a server-side cursor,
isolation levels, every common type read back, SQL errors by code and SQLState), checking every
answer. Built with Maven (versions pinned in its pom.xml, fetched once into ~/.m2) and run with
`java` against the server under test.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).parent / "java-client"
# Every check of the program, for the four driver set-ups together: a run that skipped some
# (a group of checks stops at its first unexpected error) does not pass.
CHECKS = 411


def test_java_jdbc_drivers(server):
    mvn, java = shutil.which("mvn"), shutil.which("java")
    if mvn is None or java is None:
        pytest.fail("Java 17 and Maven are needed for this test (java and mvn on PATH)")
    build = subprocess.run(
        [mvn, "-q", "-B", "package"],
        cwd=CLIENT, capture_output=True, text=True, timeout=900,
    )
    assert build.returncode == 0, build.stdout + build.stderr

    classpath = os.pathsep.join([str(CLIENT / "target" / "classes"), str(CLIENT / "target" / "lib" / "*")])
    env = dict(os.environ, QUILL_HOST=server.host, QUILL_PORT=str(server.port))
    result = subprocess.run(
        [java, "-cp", classpath, "quill.javaclient.Main"],
        capture_output=True, text=True, env=env, timeout=600,
    )
    lines = result.stdout.strip().splitlines()
    failures = "\n".join(line for line in lines if not line.startswith("ok "))
    assert result.returncode == 0, failures + "\n" + result.stderr
    assert lines and lines[-1] == f"java-client: {CHECKS} passed, 0 failed", failures
