#!/usr/bin/env bash
# Runs the whole black-box suite against MariaDB to confirm the expected outputs.
#
#   tests/run-against-mariadb.sh [pytest args...]
#   tests/run-against-mariadb.sh --run COMMAND [ARGS...]   (COMMAND sees $MARIADB_PORT)
#
# With MARIADB_PORT set, uses the MariaDB already listening on 127.0.0.1:$MARIADB_PORT
# (root, empty password). Otherwise starts a private one (mariadb-install-db + mariadbd) on a
# free port with a temporary data directory, and stops it afterwards. Tests marked
# mysql8_only and `onlyif quill` blocks of tests/sql/*.test are skipped on MariaDB.
set -euo pipefail

repo_root="$(cd "$(dirname "$0")/.." && pwd)"
started_pid=""
workdir=""

cleanup() {
    if [[ -n "$started_pid" ]]; then
        kill "$started_pid" 2>/dev/null || true
        wait "$started_pid" 2>/dev/null || true
    fi
    if [[ -n "$workdir" ]]; then
        rm -rf "$workdir"
    fi
}
trap cleanup EXIT

if [[ -z "${MARIADB_PORT:-}" ]]; then
    command -v mariadbd >/dev/null || { echo "mariadbd not found (apt-get install mariadb-server)" >&2; exit 1; }
    workdir="$(mktemp -d /tmp/quill-mariadb.XXXXXX)"
    MARIADB_PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    mariadb-install-db --no-defaults --datadir="$workdir/data" --user="$(id -un)" \
        --auth-root-authentication-method=normal >"$workdir/install.log" 2>&1 \
        || { cat "$workdir/install.log" >&2; exit 1; }
    mariadbd --no-defaults --datadir="$workdir/data" --user="$(id -un)" \
        --port="$MARIADB_PORT" --bind-address=127.0.0.1 --socket="$workdir/mariadb.sock" \
        --character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
        --log-error="$workdir/error.log" --pid-file="$workdir/mariadb.pid" &
    started_pid=$!
    for _ in $(seq 1 300); do
        if python3 -c "import socket; socket.create_connection(('127.0.0.1', $MARIADB_PORT), 1)" 2>/dev/null; then
            break
        fi
        sleep 0.1
    done
    echo "started MariaDB $(mariadbd --version | awk '{print $3}') on 127.0.0.1:$MARIADB_PORT"
fi

export QUILL_TEST_TARGET=mariadb MARIADB_PORT
cd "$repo_root"
if [[ "${1:-}" == "--run" ]]; then
    shift
    "$@"
else
    python3 -m pytest tests -q -p no:cacheprovider "$@"
fi
