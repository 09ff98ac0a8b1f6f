# SPDX-License-Identifier: Apache-2.0
"""ptod under systemd's protocols, with the real tools where Debian has
them: notify messages captured on a test NOTIFY_SOCKET (STATUS= while
prewarming, READY=1 only once it can serve, STOPPING=1), watchdog pings,
socket activation through systemd-socket-activate, and
`systemd-analyze verify` on the build tree's copies of the units."""

import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import noop, wait_until  # noqa: E402


class Notify(harness.DaemonTest):
    def test_start_up_sequence(self):
        d = self.daemon()
        msgs = d.notify.snapshot()
        ready = d.notify.find("READY=1")
        prewarming = next(i for i, m in enumerate(msgs) if "STATUS=Prewarming" in m)
        self.assertLess(prewarming, ready)
        self.assertIn("EXTEND_TIMEOUT_USEC=", msgs[prewarming])
        self.assertIn("STATUS=Serving device 0 on '%s'" % d.socket, msgs[ready])
        # READY=1 means the socket serves and the arena is built.
        s = d.status()
        self.assertEqual(s["state"], "ready")
        self.assertEqual(s["arena"]["builds"], 1)
        self.assertIsNone(d.notify.find("READY=1", start=ready + 1))
        # Nothing but the protocol's variables (one per line, KEY=VALUE).
        for m in msgs:
            for line in m.split("\n"):
                self.assertRegex(line, r"^[A-Z_]+=")

    def test_stopping(self):
        d = self.daemon()
        start = len(d.notify.snapshot())
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(), 0)
        i = d.notify.wait_for("STOPPING=1", start=start)
        self.assertIsNone(d.notify.find("READY=1", start=i))

    def test_no_notify_socket(self):
        """Outside systemd nothing breaks."""
        d = self.daemon(ready=False, env={"NOTIFY_SOCKET": ""})
        wait_until(lambda: os.path.exists(d.socket) and "Listening on" in d.read_log(),
                   what="the daemon to listen")
        self.assertEqual(d.call("ping")["state"], "ready")
        self.assertEqual(d.notify.snapshot(), [])

    def test_watchdog(self):
        d = self.daemon(env={"WATCHDOG_USEC": "100000"})
        wait_until(lambda: sum("WATCHDOG=1" in m.split("\n") for m in d.notify.snapshot()) >= 3,
                   what="three watchdog pings")
        self.assertIn("Watchdog", d.read_log())

    def test_watchdog_for_another_process_is_ignored(self):
        d = self.daemon(env={"WATCHDOG_USEC": "100000", "WATCHDOG_PID": "1"})
        with d.client() as c:
            c.call("dispatch", noop())
        self.assertNotIn("Watchdog", d.read_log())
        self.assertIsNone(d.notify.find("WATCHDOG=1"))


class SocketActivation(harness.DaemonTest):
    def setUp(self):
        self.tool = shutil.which("systemd-socket-activate")
        if not self.tool:
            self.skipTest("systemd-socket-activate is not installed (Debian package systemd)")

    def activated(self, **kw):
        """ptod behind systemd-socket-activate, listening on a path that is
        not the one in its config file."""
        self.path_holder = tempfile.mkdtemp(prefix="ptod-act-")
        self.addCleanup(shutil.rmtree, self.path_holder, True)
        path = os.path.join(self.path_holder, "activated.sock")
        env = {k: v for k, v in os.environ.items() if k.startswith(("ASAN_", "UBSAN_", "LSAN_"))}
        prefix = [self.tool, "-l", path]
        for name in ["NOTIFY_SOCKET"] + list(env) + list(kw.pop("pass_env", [])):
            prefix += ["-E", name]
        d = self.daemon(ready=False, prefix=prefix, **kw)
        # It logs this once the socket listens (the file exists a moment
        # before: bind, then listen).
        wait_until(lambda: ("Listening on %s as 3." % path) in d.read_log() or d.proc.poll() is not None,
                   what="systemd-socket-activate to listen")
        return d, path

    def test_socket_activation(self):
        d, path = self.activated()
        # The daemon starts on the first connection; the connection is served
        # once it has prewarmed.
        with harness.Client(path) as c:
            self.assertEqual(c.call("ping")["state"], "ready")
            self.assertEqual(c.call("dispatch", noop())["tasks"], 1)
        d.wait_ready()
        log = d.read_log()
        self.assertIn("Listening on '%s' (systemd socket)." % path, log)
        self.assertIn("STATUS=Serving device 0 on '%s'" % path, d.notify.snapshot()[d.notify.find("READY=1")])
        self.assertFalse(os.path.exists(d.socket), "bound the config's path too")
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(), 0)
        # systemd owns the socket file: ptod leaves it alone.
        self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode))

    def test_clients_queue_while_prewarming(self):
        d, path = self.activated()
        clients = [harness.Client(path) for _ in range(4)]
        try:
            ids = [c.send("ping") for c in clients]
            for c, msgid in zip(clients, ids):
                self.assertEqual(c.result(msgid)["state"], "ready")
        finally:
            for c in clients:
                c.close()


class Units(harness.DaemonTest):
    def test_systemd_analyze_verify(self):
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.skipTest("systemd-analyze is not installed (Debian package systemd)")
        verify = os.path.join(harness.BINARY_DIR, "systemd", "verify")
        units = [os.path.join(verify, u) for u in ("ptod@.service", "ptod@.socket")]
        for u in units:
            self.assertTrue(os.path.exists(u), u)
        with open(units[0]) as f:
            self.assertIn("ExecStart=%s " % harness.PTOD, f.read())
        # --man=no: the man page is installed with the package, not in a build tree.
        out = subprocess.run([tool, "verify", "--man=no"] + units, capture_output=True, text=True,
                             timeout=120, cwd=verify)
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        self.assertEqual(out.stderr.strip(), "", out.stderr)


if __name__ == "__main__":
    harness.main()
