# SPDX-License-Identifier: Apache-2.0
"""ptod@.service works on a minimal image with every documented option, shown
without a booted systemd: the unit's own lines are run as systemd would run
them.  Its reload command needs nothing outside Debian's Essential packages
and reloads the daemon; the address families it allows serve [metrics]
listen = HOST:PORT (a seccomp filter applies the unit's
RestrictAddressFamilies= as systemd does), and where a drop-in narrows them
the daemon's error names that setting; it allows writing the textfile where
the shipped config suggests; an invalid config (exit 78) is not retried;
it sets an open-files limit."""

import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402

SERVICE = os.path.join(ROOT, "systemd", "ptod@.service")


def directives(name):
    """Every value of [Service] directive name in the unit, in order."""
    with open(SERVICE) as f:
        return re.findall(r"^%s=(.*)$" % re.escape(name), f.read(), re.M)


def command_argv(line):
    """A unit's command line as systemd splits it: shell-like quoting, then
    $$ for a literal $ (the variables it leaves to the environment)."""
    return [word.replace("$$", "$") for word in shlex.split(line)]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def families_prefix(families):
    return [sys.executable, os.path.join(HERE, "restrict_families.py")] + families + ["--"]


class Units(harness.DaemonTest):
    def test_reload_needs_only_essential_packages(self):
        (line,) = directives("ExecReload")
        argv = command_argv(line)
        owner = subprocess.run(["dpkg", "-S", argv[0]], capture_output=True, text=True)
        self.assertEqual(owner.returncode, 0, owner.stderr)
        # the owner's line, past dpkg-divert's "diversion by ..." lines
        package = [ln for ln in owner.stdout.splitlines()
                   if not ln.startswith("diversion by ")][0].split(":")[0]
        essential = subprocess.run(["dpkg-query", "-W", "-f=${Essential}", package],
                                   capture_output=True, text=True).stdout
        self.assertEqual(essential, "yes", "ExecReload runs %s from %s, which a minimal image "
                         "may lack" % (argv[0], package))
        # and it reloads: MAINPID in the environment, a PATH with no kill on it
        d = self.daemon()
        start = len(d.notify.snapshot())
        empty = tempfile.mkdtemp(prefix="ptod-nopath-")
        self.addCleanup(shutil.rmtree, empty, True)
        out = subprocess.run(argv, env={"MAINPID": str(d.pid), "PATH": empty},
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        i = d.notify.wait_for("RELOADING=1", start=start)
        d.notify.wait_for("READY=1", start=i + 1)

    def test_metrics_tcp_listener_under_the_units_families(self):
        (line,) = directives("RestrictAddressFamilies")
        port = free_port()
        d = self.daemon(config={"metrics": {"listen": "127.0.0.1:%d" % port}},
                        prefix=families_prefix(line.split()))
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as r:
            self.assertIn(b"ptod_uptime_seconds", r.read())
        self.assertEqual(d.stop(), 0)

    def test_narrowed_families_are_named_in_the_bind_error(self):
        port = free_port()
        d = self.daemon(config={"metrics": {"listen": "127.0.0.1:%d" % port}},
                        prefix=families_prefix(["AF_UNIX"]), ready=False)
        d.expected_exit = 1
        self.assertEqual(d.wait(), 1)
        self.assertIn("Failed to bind the metrics endpoint '127.0.0.1:%d': Address family not "
                      "supported by protocol. Under systemd, the unit's RestrictAddressFamilies= "
                      "must allow AF_INET and AF_INET6" % port, d.read_log())

    def test_textfile_directory_is_writable(self):
        with open(os.path.join(ROOT, "systemd", "ptod.conf")) as f:
            suggested = re.search(r"^# (/\S+\.prom)", f.read(), re.M).group(1)
        self.assertIn("-" + os.path.dirname(suggested), directives("ReadWritePaths"))
        self.assertEqual(directives("ProtectSystem"), ["strict"])

    def test_invalid_config_is_not_retried(self):
        self.assertEqual(directives("Restart"), ["on-failure"])
        self.assertEqual(directives("RestartPreventExitStatus"), ["78"])
        d = self.daemon(config={"ring": {"heap": "1000"}}, ready=False)
        d.expected_exit = 78
        self.assertEqual(d.wait(), 78)

    def test_open_files_limit(self):
        (limit,) = directives("LimitNOFILE")
        self.assertGreaterEqual(int(limit), 65536)


if __name__ == "__main__":
    harness.main()
