"""Django 5.2 over mysqlclient, started as a user starts it: `manage.py migrate` of the
contrib apps (auth, contenttypes, sessions, admin) and of the project's own app, then that
app's own test suite under Django's test runner (tests/django_project/ledger/tests.py:
transactions, nested atomic blocks on savepoints, select_for_update with NOWAIT and SKIP
LOCKED, foreign keys the database enforces).

Django's first query asks for CONVERT_TZ, its schema editor adds foreign keys with ALTER
TABLE, and its introspection reads information_schema's KEY_COLUMN_USAGE and
TABLE_CONSTRAINTS: each failed before issue 15.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PROJECT = Path(__file__).parent / "django_project"


def django(server, db: str, *args: str) -> subprocess.CompletedProcess:
    env = dict(
        os.environ,
        PYTHONPATH=str(PROJECT),
        DJANGO_SETTINGS_MODULE="settings",
        LEDGER_DB_NAME=db,
        LEDGER_DB_HOST=server.host,
        LEDGER_DB_PORT=str(server.port),
        LEDGER_DB_USER=server.user,
        LEDGER_DB_PASSWORD=server.password,
    )
    return subprocess.run([sys.executable, "-m", "django", *args], env=env, capture_output=True, text=True, timeout=600)


def test_migrate_creates_the_contrib_schema_with_its_foreign_keys(server, fresh_db):
    done = django(server, fresh_db, "migrate", "--noinput")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Applying admin.0001_initial... OK" in done.stdout
    assert "Applying auth.0012_alter_user_first_name_max_length... OK" in done.stdout
    conn = server.connect(fresh_db)
    with conn.cursor() as c:
        c.execute(
            "SELECT TABLE_NAME, REFERENCED_TABLE_NAME FROM information_schema.KEY_COLUMN_USAGE "
            "WHERE TABLE_SCHEMA = DATABASE() AND REFERENCED_TABLE_NAME IS NOT NULL ORDER BY 1, 2"
        )
        keys = c.fetchall()
    conn.close()
    assert ("django_admin_log", "auth_user") in keys
    assert ("auth_permission", "django_content_type") in keys
    assert ("ledger_entry", "ledger_account") in keys
    # Nothing left to migrate: Django read back what it made.
    again = django(server, fresh_db, "migrate", "--check")
    assert again.returncode == 0, again.stdout + again.stderr


def test_the_apps_own_test_suite_passes(server, fresh_db):
    done = django(server, fresh_db, "test", "ledger", "--noinput", "-v", "2")
    output = done.stdout + done.stderr
    print(output.splitlines()[-3:])
    assert done.returncode == 0, output
    assert "Ran 8 tests" in output and "\nOK" in output, output
