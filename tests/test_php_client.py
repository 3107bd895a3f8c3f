"""PHP's PDO (pdo_mysql) and mysqli, on mysqlnd, as clients: tests/php-client/main.php runs a
small shop's flow with PDO twice, with emulated prepares (the driver quotes values into the
statement text) and native ones (server-side prepared statements, binary protocol), and with
mysqli (bind_param / get_result / bind_result, send_long_data, multi_query, transactions,
column metadata, errno 1062 and SQLSTATE 23000, INSERT IGNORE warnings). Needs Debian's
php-cli and php-mysql; run against the server under test.
"""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

CLIENT = Path(__file__).parent / "php-client"


def test_php_pdo_and_mysqli_application_flow(server):
    php = shutil.which("php")
    if php is None:
        pytest.fail("PHP is needed for this test: apt-get install php-cli php-mysql")
    modules = subprocess.run([php, "-m"], capture_output=True, text=True, timeout=60).stdout.split()
    missing = [m for m in ("pdo_mysql", "mysqli") if m not in modules]
    if missing:
        pytest.fail(f"PHP lacks {', '.join(missing)}: apt-get install php-mysql")
    env = dict(os.environ, QUILL_PORT=str(server.port))
    result = subprocess.run([php, "main.php"], cwd=CLIENT, capture_output=True, text=True, env=env, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert last.startswith("php-client: ") and last.endswith(" passed, 0 failed"), result.stdout
