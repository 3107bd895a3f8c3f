"""The metrics endpoint (issue 14): `--metrics-port` serves GET /metrics in Prometheus's text
format, read here with the official Prometheus client's parser.

What it shows: off by default; the status counters under mysqld_exporter's names; the commit
latency, group commit and row lock wait histograms counting what the test did (commits, one
lock wait of a known length); 404 and 405 for anything else; a client that sends nothing does
not stop the endpoint.
"""

import socket
import threading
import time
import urllib.error
import urllib.request

import pytest
from prometheus_client.parser import text_string_to_metric_families

from conftest import PrivateQuill, free_port, test_target

pytestmark = pytest.mark.skipif(test_target() != "quill", reason="starts its own server")


def scrape(port):
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        assert r.status == 200
        assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
        text = r.read().decode()
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample(families, family, name, **labels):
    for s in families[family].samples:
        if s.name == name and all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise KeyError((family, name, labels))


def test_off_by_default(tmp_path):
    port = free_port()
    with PrivateQuill(tmp_path / "q"):
        with pytest.raises(OSError):
            socket.create_connection(("127.0.0.1", port), timeout=1).close()


def test_counters_and_histograms(tmp_path):
    port = free_port()
    with PrivateQuill(tmp_path / "q", f"--metrics-port={port}") as q:
        before = scrape(port)
        assert before["quill_commit_latency_seconds"].type == "histogram"
        commits_before = sample(before, "quill_commit_latency_seconds", "quill_commit_latency_seconds_count")
        c = q.connect()
        with c.cursor() as cur:
            cur.execute("CREATE DATABASE d")
            cur.execute("CREATE TABLE d.t (id INT PRIMARY KEY, v INT)")
            for i in range(20):
                cur.execute("INSERT INTO d.t VALUES (%s, 0)", (i,))
            cur.execute("SELECT 1")
        holder, waiter = q.connect(), q.connect()
        holder.begin()
        holder.cursor().execute("UPDATE d.t SET v = 1 WHERE id = 1")
        releaser = threading.Timer(0.3, holder.commit)
        releaser.start()
        waiter.cursor().execute("UPDATE d.t SET v = 2 WHERE id = 1")
        releaser.join()

        after = scrape(port)
        assert sample(after, "quill_commit_latency_seconds", "quill_commit_latency_seconds_count") == commits_before + 22
        assert sample(after, "quill_commit_latency_seconds", "quill_commit_latency_seconds_bucket", le="+Inf") == commits_before + 22
        assert sample(after, "quill_commit_latency_seconds", "quill_commit_latency_seconds_sum") > 0
        waits = after["quill_row_lock_wait_seconds"]
        assert sample(after, "quill_row_lock_wait_seconds", "quill_row_lock_wait_seconds_count") == 1
        assert sample(after, "quill_row_lock_wait_seconds", "quill_row_lock_wait_seconds_bucket", le="0.1") == 0
        assert sample(after, "quill_row_lock_wait_seconds", "quill_row_lock_wait_seconds_bucket", le="1") == 1, waits
        assert 0.2 < sample(after, "quill_row_lock_wait_seconds", "quill_row_lock_wait_seconds_sum") < 5
        records = sample(after, "quill_log_group_commit_records", "quill_log_group_commit_records_sum")
        assert records >= 22, "every commit record was in some group"
        assert sample(after, "mysql_global_status_innodb_row_lock_waits", "mysql_global_status_innodb_row_lock_waits") == 1
        assert sample(after, "mysql_global_status_com_insert", "mysql_global_status_com_insert") == 20
        assert "mysql_global_status_ssl_cipher" not in after, "text values are left out"


def test_other_requests_and_a_silent_client(tmp_path):
    port = free_port()
    with PrivateQuill(tmp_path / "q", f"--metrics-port={port}"):
        silent = socket.create_connection(("127.0.0.1", port))
        for path, method, code in (("/", "GET", 404), ("/metrics", "POST", 405)):
            request = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method, data=b"" if method == "POST" else None)
            with pytest.raises(urllib.error.HTTPError) as e:
                urllib.request.urlopen(request, timeout=10)
            assert e.value.code == code
        started = time.monotonic()
        assert scrape(port), "served beside the silent client"
        assert time.monotonic() - started < 2, "not held up by the silent client"
        silent.close()


def test_a_scrape_is_served_beside_many_idle_sockets(tmp_path):
    """Regression: 12 sockets opened and left idle took every connection slot for the whole
    request timeout, and scrapes in that time were closed unanswered. Idle sockets are
    closed after REQUEST_HEAD_TIMEOUT (1 s), and there are slots to spare."""
    port = free_port()
    with PrivateQuill(tmp_path / "q", f"--metrics-port={port}"):
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(12)]
        try:
            assert scrape(port), "served beside 12 idle sockets"
            time.sleep(1.5)
            # The idle sockets were closed by the server: reading gives end of file.
            idle[0].settimeout(5)
            assert idle[0].recv(1) == b""
        finally:
            for s in idle:
                s.close()
