# SPDX-License-Identifier: Apache-2.0
"""What clients can do to the files and labels an operator relies on
(issue 18, item 9 and the label part of item 10): diagnostics_dir fills
without bound, client-caused log lines flood the journal, unknown program
names take every per-program metric label, and `ptoctl advise --apply`
rewrites a config file with the wrong mode and owner, through links.
"""

import os
import shutil
import stat
import subprocess
import tempfile
import time
import unittest

import msgpack

from adversary import *  # noqa: F401,F403
import harness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
PTOCTL = os.path.join(harness.BINARY_DIR, "client", "ptoctl")
TRACED = {"enable_scope_stats": True}
BURST, WINDOW_S = 50, 10  # log.h: LOG_CLIENT_BURST lines per LOG_CLIENT_INTERVAL_S


def tmpdir(test):
    path = tempfile.mkdtemp(prefix="ptod-operator-")
    test.addCleanup(shutil.rmtree, path, True)
    return path


class DiagnosticsQuota(DaemonTest):
    def test_quota_holds_and_keeps_the_newest(self):
        diag = tmpdir(self)
        d = self.daemon(config={"daemon": {"diagnostics_dir": diag,
                                           "diagnostics_max_files": "5",
                                           "diagnostics_max_bytes": "1M"}})
        with d.client() as c:
            for _ in range(20 * SCALE):
                r = c.call("dispatch", noop(tasks=4, config=TRACED))
                self.assertIn("scope_stats", r["dfx"])
        names = os.listdir(diag)
        self.assertLessEqual(len(names), 5)
        self.assertLessEqual(sum(os.path.getsize(os.path.join(diag, n)) for n in names), 1 << 20)
        # The newest dispatch's file is kept, the oldest went first.
        seqs = sorted(int(n.rsplit("-", 1)[1].split(".")[0]) for n in names)
        self.assertEqual(seqs, list(range(seqs[-1] - len(seqs) + 1, seqs[-1] + 1)))
        report(self, "diagnostics-quota", counted_kib=sum(
            os.path.getsize(os.path.join(diag, n)) for n in names) // 1024)

    def test_files_larger_than_the_quota_are_not_written(self):
        diag = tmpdir(self)
        d = self.daemon(config={"daemon": {"diagnostics_dir": diag,
                                           "diagnostics_max_bytes": "1M"}})
        with d.client() as c:
            r = c.call("dispatch", noop(tasks=20000, depth=1,
                                        config={"enable_dep_gen": True, "enable_swimlane": 2,
                                                "ring_task_window": [0, 32768, 0, 0]}))
        self.assertEqual(os.listdir(diag), [])
        self.assertIn("do not fit in diagnostics_max_bytes = 1048576", d.read_log())
        self.assertTrue(r["dfx"])  # the result still carries them (or says why not)


class DfxRendering(DaemonTest):
    def test_rendering_stays_within_what_can_be_delivered(self):
        """A traced run of 65,535 tasks renders ~34 MB of text; with 1 MiB
        of output_limit and no diagnostics_dir none of it could be
        delivered, and rendering it took ~72 MiB of RSS outside every
        budget."""
        d = self.daemon(config={"daemon": {"output_limit": "1M"}}, env=rss_env())
        big = dict(ring_task_window=[0, 131072, 0, 0])
        run = noop(tasks=65535, depth=1, config=big)
        traced = noop(tasks=65535, depth=1, config=dict(big, enable_swimlane=2,
                                                        enable_dep_gen=True))
        with d.client() as c:
            c.call("dispatch", run)  # the arena is built: later runs reuse it
            rest = vmrss_kib(d.pid)
            sampler = RssSampler(d.pid).start()
            r = c.call("dispatch", traced)
            sampler.stop()
        growth = sampler.peak - rest
        report(self, "dfx-render", rss_growth_kib=growth, counted_kib=1024)
        # The run's own record stays (~8 MiB; ASan's redzones double it).
        # ThreadSanitizer's shadow memory makes RSS no measure at all.
        slack = 16 * 1024 * (2 if harness.sanitizer() else 1)
        if "thread" not in harness.sanitizer():
            self.assertLessEqual(growth, 2 * 1024 + slack, "RSS grew %d KiB" % growth)
        self.assertEqual(sorted(r["dfx"]), ["refused"])
        self.assertIn("would take more than 1048576 bytes", r["dfx"]["refused"])


class ClientLogLines(DaemonTest):
    def test_client_caused_lines_are_rate_limited(self):
        diag = tmpdir(self)
        d = self.daemon(config={"daemon": {"diagnostics_dir": diag, "log_level": "info"}})
        t0 = time.monotonic()
        with d.client() as c:
            for _ in range(4 * BURST * SCALE):
                c.call("dispatch", noop(config=TRACED))
            samples, _ = harness.parse_prometheus(c.call("metrics"))
        windows = int((time.monotonic() - t0) / WINDOW_S) + 1
        log = d.read_log()
        lines = log.count("Wrote the DFX artefacts")
        # At most BURST client-caused lines per window, whatever the machine's speed.
        self.assertLessEqual(lines, BURST * windows, "%d lines in %d windows" % (lines, windows))
        self.assertGreater(harness.metric(samples, "ptod_log_lines_suppressed_total"), 0)
        report(self, "log-flood", log_lines=lines, log_windows=windows, log_burst=BURST)

    def test_debug_lines_a_client_causes_are_rate_limited(self):
        # At log_level = debug every notification was logged, unlimited.
        d = self.daemon(config={"daemon": {"log_level": "debug"}})
        t0 = time.monotonic()
        with d.client() as c:
            notification = msgpack.packb([2, "ping", []])
            c.send_raw(notification * (4 * BURST * SCALE))
            c.call("ping")  # read after every notification
            samples, _ = harness.parse_prometheus(c.call("metrics"))
        windows = int((time.monotonic() - t0) / WINDOW_S) + 1
        lines = d.read_log().count("sent a notification, ignoring it")
        self.assertGreater(lines, 0)
        self.assertLessEqual(lines, BURST * windows, "%d lines in %d windows" % (lines, windows))
        self.assertGreater(harness.metric(samples, "ptod_log_lines_suppressed_total"), 0)
        # The debug lines have a budget of their own: a client's bad message
        # right after the flood is still logged.
        with d.client() as c:
            c.send_raw(b"\xc1")
            c.read_until_eof()
        wait_until(lambda: "holds the reserved byte 0xc1" in d.read_log(),
                   what="the bad message's line")


class ProgramLabels(DaemonTest):
    def test_unknown_program_names_take_no_label(self):
        d = self.daemon()
        with d.client() as c:
            for i in range(70 * SCALE):
                err = c.call_err("dispatch", {"program": "no_such_%d" % i, "args": []})
                self.assertEqual(err["name"], "UNKNOWN_PROGRAM")
            c.call("dispatch", noop())
            samples, _ = harness.parse_prometheus(c.call("metrics"))
        self.assertEqual(harness.metric(samples, "ptod_program_dispatches_total",
                                        program="noop", outcome="ok"), 1)
        labels = {dict(k[1]).get("program") for k in samples
                  if k[0] == "ptod_program_dispatches_total"}
        self.assertFalse([p for p in labels if p and p.startswith("no_such_")], labels)


@unittest.skipUnless(os.geteuid() == 0, "needs root to give files to another owner")
class AdviseApply(DaemonTest):
    def setUp(self):
        self.d = self.daemon()
        with self.d.client() as c:
            c.call("dispatch", noop(tasks=3))
        self.tmp = tmpdir(self)

    def apply(self, path):
        p = subprocess.run(["sh", "-c", 'umask 077; exec "$0" -s "$1" advise --apply "$2"',
                            PTOCTL, self.d.socket, path], capture_output=True, text=True,
                           timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p

    def config(self, path):
        shutil.copy(os.path.join(ROOT, "systemd", "ptod.conf"), path)
        os.chown(path, 54321, 54322)  # the daemon's user, say, not root
        os.chmod(path, 0o640)
        return path

    def test_mode_owner_and_symlink_are_kept(self):
        os.mkdir(os.path.join(self.tmp, "real"))
        target = self.config(os.path.join(self.tmp, "real", "ptod0.conf"))
        link = os.path.join(self.tmp, "ptod0.conf")
        os.symlink(target, link)
        self.apply(link)
        self.assertTrue(os.path.islink(link))
        self.assertEqual(os.readlink(link), target)
        st = os.stat(target)
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid), (0o640, 54321, 54322))
        with open(target) as f:
            self.assertIn("\ntask_window = ", f.read())
        self.assertTrue(os.path.exists(target + ".orig"))

    def test_advised_file_is_never_written_through_a_link(self):
        conf = self.config(os.path.join(self.tmp, "ptod0.conf"))
        victim = os.path.join(self.tmp, "victim")
        with open(victim, "w") as f:
            f.write("keep me\n")
        os.symlink(victim, conf + ".advised")  # planted where the new text goes
        self.apply(conf)
        with open(victim) as f:
            self.assertEqual(f.read(), "keep me\n")
        self.assertFalse(os.path.islink(conf))
        st = os.stat(conf)
        self.assertEqual((stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid), (0o640, 54321, 54322))


if __name__ == "__main__":
    main()
