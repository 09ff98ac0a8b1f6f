# SPDX-License-Identifier: Apache-2.0
"""fd exhaustion (docs/reliability.md, "Attacks"): clients that each park
SRV_MAX_FDS (8) passed fds fill the daemon's file table.  Before, accept()
then failed with EMFILE on a level-triggered listener: the loop spun at
full CPU and logged a line per failure (3.5 M lines in 8 s), and honest
connects hung.  Now the daemon leaves the listener alone for a while when
out of fds (the connections wait in the backlog), logs the cause at most
once a second, and serves the waiting connections once fds are free.  The
soft RLIMIT_NOFILE is raised to the hard limit at start, and passed fds are
counted in status and metrics.

The daemon runs under prlimit with a small limit so that a handful of
clients fill its table.  CPU time is read from /proc/PID/stat over a window
the test sleeps through; a daemon that spins uses all of it, an idle one
almost none (a loaded machine only makes the spin look smaller).
"""

import array
import fcntl
import os
import socket
import time

from adversary import *  # noqa: F401,F403
import harness

FD_LIMIT = 64
WINDOW_S = 2.0
PARKED_PER_CLIENT = 8


def cpu_seconds(pid):
    """utime + stime of pid, in seconds (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memfd():
    fd = os.memfd_create("ptod-parked", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    os.ftruncate(fd, 4096)
    os.posix_fallocate(fd, 0, 4096)
    fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
    return fd


def park_fds(sock, fd, n=PARKED_PER_CLIENT, msgid=1):
    """A ping carrying n copies of fd: answered, the fds left unclaimed
    (parked) on the connection."""
    data = harness.msgpack.packb([0, msgid, "ping", []], use_bin_type=True)
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd] * n))])


def open_fds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


class FdExhaustion(DaemonTest):
    def limited_daemon(self, soft=FD_LIMIT, hard=FD_LIMIT):
        return self.daemon(prefix=["prlimit", "--nofile=%d:%d" % (soft, hard), "--"])

    def test_parked_fds_are_counted_in_status_and_metrics(self):
        d = self.daemon()
        fd = memfd()
        self.addCleanup(os.close, fd)
        with d.client() as attacker, d.client() as other:
            park_fds(attacker.sock, fd)
            attacker.recv(1)
            park_fds(other.sock, fd, 3)
            other.recv(1)
            fds = d.status()["fds"]
            self.assertEqual(fds["parked"], PARKED_PER_CLIENT + 3)
            self.assertEqual(fds["most_parked"], PARKED_PER_CLIENT)  # the one holding most
            samples, _ = harness.parse_prometheus(d.call("metrics"))
            self.assertEqual(harness.metric(samples, "ptod_passed_fds", state="parked"),
                             PARKED_PER_CLIENT + 3)
            self.assertEqual(harness.metric(samples, "ptod_passed_fds_parked_max"),
                             PARKED_PER_CLIENT)
        wait_until(lambda: d.status()["fds"]["parked"] == 0, what="the parked fds to go")

    def test_soft_limit_raised_to_the_hard_limit(self):
        d = self.limited_daemon(soft=FD_LIMIT, hard=4096)
        self.assertEqual(d.status()["fds"]["limit"], 4096)
        self.assertIn("Raised the open-file limit (RLIMIT_NOFILE) from %d to 4096." % FD_LIMIT,
                      d.read_log())

    def test_full_fd_table_neither_spins_nor_floods_and_serves_later(self):
        d = self.limited_daemon()
        fd = memfd()
        self.addCleanup(os.close, fd)
        attackers = []
        self.addCleanup(lambda: [a.close() for a in attackers])
        # Attackers, one after the other, each answered (so its fds are
        # parked) until the table is full: the last parks what is left.
        while open_fds(d.pid) < FD_LIMIT:
            a = harness.Client(d.socket, timeout=60)
            attackers.append(a)
            a.call("ping")  # accepted: its socket is in the table
            n = min(PARKED_PER_CLIENT, FD_LIMIT - open_fds(d.pid))
            if n:
                park_fds(a.sock, fd, n, msgid=a.next_id)
                a.result(a.next_id)
                a.next_id += 1
        # More connect: accept fails now.
        for i in range(4 * SCALE):
            a = harness.Client(d.socket, timeout=60)
            attackers.append(a)
            park_fds(a.sock, fd)
        # An honest client connects meanwhile: it waits in the backlog.
        honest = harness.Client(d.socket, timeout=60)
        self.addCleanup(honest.close)
        honest_id = honest.send("ping")
        wait_until(lambda: "Failed to accept a connection" in d.read_log(),
                   what="the daemon to run out of fds")
        log_before = d.read_log().count("Failed to accept")
        cpu_before, t0 = cpu_seconds(d.pid), time.monotonic()
        time.sleep(WINDOW_S * SCALE)
        cpu = cpu_seconds(d.pid) - cpu_before
        elapsed = time.monotonic() - t0
        lines = d.read_log().count("Failed to accept") - log_before
        # The attackers leave: their fds are closed, the backlog is served.
        for a in attackers:
            a.close()
        self.assertEqual(honest.result(honest_id)["state"], "ready")
        self.assertEqual(honest_ping(d)["state"], "ready")
        report(self, "fd-exhaustion", cpu_pct=round(100 * cpu / elapsed, 1),
               log_lines_per_s=round(lines / elapsed, 1), honest_errors=0)
        self.assertLess(cpu, 0.25 * elapsed, "the loop spun on failed accepts")
        self.assertLessEqual(lines, elapsed + 1, "one line per failed accept")


if __name__ == "__main__":
    main()
