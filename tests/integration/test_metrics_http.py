# SPDX-License-Identifier: Apache-2.0
"""Prometheus over HTTP ([metrics] listen, TCP and Unix socket) and the
node_exporter textfile ([metrics] textfile): what a scraper gets, that
promtool accepts it, and the errors of a bad endpoint."""
import http.client
import os
import shutil
import socket
import subprocess
import tempfile
import unittest

import harness
from harness import noop, vector_add

PROMTOOL = shutil.which("promtool")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UnixHTTPConnection(http.client.HTTPConnection):
    def __init__(self, path):
        super().__init__("localhost", timeout=30)
        self.path = path

    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(30)
        self.sock.connect(self.path)


def get(conn, path="/metrics", method="GET"):
    conn.request(method, path)
    r = conn.getresponse()
    return r.status, r.getheader("Content-Type"), r.read().decode()


class MetricsHttp(harness.DaemonTest):
    def test_scrape_over_tcp_passes_promtool(self):
        port = free_port()
        d = self.daemon(config={"metrics": {"listen": "127.0.0.1:%d" % port}})
        with d.client() as c:
            c.call("dispatch", vector_add([1], [2]))
            c.call("dispatch", vector_add([1], [2], config={"ring_heap": [0, 1 << 16, 0, 0]}))
            c.call("dispatch", noop())
            c.call_err("dispatch", noop(tasks=4, config={"ring_task_window": 4}))
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        status, ctype, text = get(conn)
        self.assertEqual(status, 200)
        self.assertEqual(ctype, "text/plain; version=0.0.4; charset=utf-8")
        samples, _ = harness.parse_prometheus(text)

        def m(metric_name, **labels):
            return harness.metric(samples, metric_name, **labels)
        self.assertEqual(m("ptod_program_dispatches_total", program="vector_add", outcome="ok"), 2)
        self.assertEqual(m("ptod_program_dispatches_total", program="noop", outcome="ok"), 1)
        self.assertEqual(m("ptod_program_dispatches_total", program="noop", outcome="failed"), 1)
        self.assertEqual(m("ptod_dispatch_compute_duration_seconds_count"), 4)
        self.assertEqual(m("ptod_dispatch_queue_duration_seconds_count"), 4)
        self.assertEqual(m("ptod_errors_total", name="SCOPE_DEADLOCK"), 1)
        # Prewarmed sizing, ring 1's own, back, a window of 4: three switches.
        self.assertEqual(m("ptod_arena_sizing_switches_total"), 3)
        self.assertEqual(m("ptod_prewarm_first_dispatch_hit"), 1)
        with d.client() as c:
            observed = c.call("advise")["observed"]
        for r in range(4):
            self.assertEqual(m("ptod_ring_peak_tasks", ring=str(r)), observed["task_window"][r])
            self.assertEqual(m("ptod_ring_peak_heap_bytes", ring=str(r)), observed["heap"][r])
            self.assertEqual(m("ptod_ring_peak_dep_entries", ring=str(r)), observed["dep_pool"][r])
        self.assertEqual(m("ptod_pending_requests"), 0)
        # The same text as the msgpack method gives.
        with d.client() as c:
            self.assertIn("ptod_program_dispatches_total", c.call("metrics"))
        self.assertEqual(get(conn, "/")[0], 404)
        self.assertEqual(get(conn, method="POST")[0], 405)
        self.assertEqual(get(conn, method="HEAD")[0], 200)
        conn.close()
        if PROMTOOL:
            check = subprocess.run([PROMTOOL, "check", "metrics"], input=text.encode(),
                                   capture_output=True, timeout=60)
            self.assertEqual(check.returncode, 0, check.stdout + check.stderr)
            self.assertEqual(check.stdout + check.stderr, b"")  # no lint complaint either

    def test_unix_socket_and_textfile(self):
        tmp = tempfile.mkdtemp(prefix="ptod-metrics-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path, textfile = os.path.join(tmp, "metrics.sock"), os.path.join(tmp, "ptod.prom")
        d = self.daemon(config={"metrics": {"listen": path, "textfile": textfile,
                                            "textfile_interval": "1s"}})
        with d.client() as c:
            c.call("dispatch", noop())
        status, _, text = get(UnixHTTPConnection(path))
        self.assertEqual(status, 200)
        self.assertIn('ptod_program_dispatches_total{program="noop",outcome="ok"} 1', text)
        def read():
            with open(textfile) as f:
                return f.read()
        harness.wait_until(lambda: 'program="noop",outcome="ok"} 1' in read(),
                           what="the textfile to show the dispatch")
        self.assertFalse(os.path.exists(textfile + ".tmp"))
        d.stop()
        self.assertFalse(os.path.exists(path))  # the socket is removed at exit
        self.assertIn("ptod_uptime_seconds", read())

    def test_bad_or_busy_endpoint_stops_start_up(self):
        d = self.daemon(config={"metrics": {"listen": "127.0.0.1:99999"}}, ready=False)
        d.expected_exit = 78  # EX_CONFIG, as for every configuration error
        self.assertEqual(d.wait(), 78)
        self.assertIn("[metrics] listen = 127.0.0.1:99999: the port must be a number from 1 to "
                      "65535, got '99999'.", d.read_log())
        with socket.socket() as busy:
            busy.bind(("127.0.0.1", 0))
            busy.listen()
            port = busy.getsockname()[1]
            d = self.daemon(config={"metrics": {"listen": "127.0.0.1:%d" % port}}, ready=False)
            d.expected_exit = 1
            self.assertEqual(d.wait(), 1)
        self.assertIn("Failed to bind the metrics endpoint '127.0.0.1:%d': Address already in use."
                      % port, d.read_log())


if __name__ == "__main__":
    harness.main()
