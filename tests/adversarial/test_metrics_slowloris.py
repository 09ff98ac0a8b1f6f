# SPDX-License-Identifier: Apache-2.0
"""The metrics endpoint against slow clients and a squatted path (issue 18,
item 10).

Prometheus scrapes [metrics] listen over HTTP; libmicrohttpd's idle
timeout restarts with every byte, so connections trickling one header byte
every few seconds used to hold all 16 slots and every scrape failed.  Then
128 slots, 32 per IP address: every local client comes from 127.0.0.1, so
32 tricklers turned every local scrape away.  A `[metrics] listen` Unix
path used to unlink whatever socket was there, a live one of another
process included.
"""

import http.client
import os
import shutil
import socket
import tempfile
import threading

from adversary import *  # noqa: F401,F403
import harness

SLOTS = 128  # connections served at once (daemon/metrics_http.c)
TRICKLERS = (SLOTS + 32) * SCALE
LIMIT_S = 60  # how long a test waits for what the daemon bounds at 10 s


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def scrape(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", "/metrics")
        r = conn.getresponse()
        return r.status, r.read().decode()
    finally:
        conn.close()


class Trickler:
    """Connections that each send one byte of a request header now and
    then, never finishing it; `cut` counts those the daemon closed."""

    def __init__(self, port, count, every=1.0):
        self.socks = []
        for _ in range(count):
            s = socket.create_connection(("127.0.0.1", port), timeout=30)
            s.sendall(b"G")
            self.socks.append(s)
        self.every = every
        self.cut = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        live = list(self.socks)
        while live and not self.stopping.wait(self.every):
            for s in list(live):
                try:
                    s.sendall(b"E")
                except OSError:
                    live.remove(s)
                    self.cut += 1

    def close(self):
        self.stopping.set()
        self.thread.join()
        for s in self.socks:
            s.close()


class Slowloris(DaemonTest):
    def start(self):
        port = free_port()
        d = self.daemon(config={"metrics": {"listen": "127.0.0.1:%d" % port}})
        return d, port

    def test_scrape_succeeds_while_more_connections_trickle_than_slots(self):
        """More tricklers than the endpoint serves at once, all from the
        scraper's own address: each honest scrape is answered on its first
        try (the newest connection is served, the oldest request cut).  On
        b76b8e1 (32 per IP address) the scrape was closed unanswered."""
        d, port = self.start()
        t = Trickler(port, TRICKLERS)
        self.addCleanup(t.close)
        for _ in range(3):
            status, text = scrape(port)
            self.assertEqual(status, 200)
            self.assertIn("ptod_uptime_seconds", text)
        report(self, "metrics-slowloris", honest_errors=0)

    def test_trickling_request_is_cut_however_busy(self):
        """Fewer tricklers than slots, each sending a byte every 0.5 s (the
        idle timer never fires): scrapes are answered meanwhile, and every
        trickling request is cut once it has taken 10 s in all."""
        d, port = self.start()
        count = min(40 * SCALE, SLOTS - 8)
        t = Trickler(port, count, every=0.5)
        self.addCleanup(t.close)
        self.assertEqual(scrape(port)[0], 200)
        harness.wait_until(lambda: t.cut == count, timeout=LIMIT_S,
                           what="the daemon to cut every trickling request")


class MetricsSocketPath(DaemonTest):
    def test_live_socket_of_another_process_is_not_replaced(self):
        tmp = tempfile.mkdtemp(prefix="ptod-metrics-")
        self.addCleanup(shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "metrics.sock")
        other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(other.close)
        other.bind(path)
        other.listen(4)
        d = self.daemon(config={"metrics": {"listen": path}}, ready=False)
        d.expected_exit = None
        self.assertNotEqual(d.wait(), 0)
        self.assertIn("Another daemon is already serving on '%s'" % path, d.read_log())
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as c:
            c.connect(path)  # still the other process's

    def test_directory_others_can_write_is_refused(self):
        tmp = tempfile.mkdtemp(prefix="ptod-metrics-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.chmod(tmp, 0o1777)
        path = os.path.join(tmp, "metrics.sock")
        d = self.daemon(config={"metrics": {"listen": path}}, ready=False)
        d.expected_exit = None
        self.assertNotEqual(d.wait(), 0)
        self.assertIn("[metrics] listen = %s: Socket directory '%s' (mode 1777) is writable by "
                      "others" % (path, tmp), d.read_log())
        self.assertFalse(os.path.exists(path))


if __name__ == "__main__":
    main()
