# SPDX-License-Identifier: Apache-2.0
"""What the adversarial tests share: the integration harness (imported from
tests/integration) and an honest client's view of a daemon under attack.

Each test starts a daemon, lets a hostile client do its worst, and checks
that an honest client sharing the daemon is still answered, correctly, and
that the daemon's memory stays within what it counts for the attacker.
"""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from harness import *  # noqa: E402,F401,F403  (the harness is this suite's API)
import harness  # noqa: E402


def honest_ping(daemon, timeout=60):
    """One honest client's ping on a fresh connection: returns its result
    (the test fails with the RPC error or a timeout if it is not answered)."""
    with harness.Client(daemon.socket, timeout=timeout) as c:
        return c.call("ping")


# The attack's size: 1 in the test suite (small, fast, still past every
# bound it tests), larger when bench/isolation runs the same module to print
# the target figures (PTOD_ADVERSARY_SCALE=N).
SCALE = max(1, int(os.environ.get("PTOD_ADVERSARY_SCALE", "1") or "1"))


def rss_bound_kib(counted_kib, slack_kib=16 * 1024):
    """The most the daemon's RSS may grow for counted_kib of memory counted:
    the issue's target, 1.25 x + 16 MiB (slack_kib), in a plain build.  A
    sanitizer's own memory grows with the daemon's: ASan's quarantine (16 MiB
    with rss_env()), redzones and shadow add up to 48 MiB more here; TSan's
    shadow takes several times what it shadows."""
    bound = 1.25 * counted_kib + slack_kib
    if "thread" in harness.sanitizer():
        return 8 * bound
    if harness.sanitizer():
        return bound + 48 * 1024
    return bound


# Whether memory freed goes back to the system at all: a sanitizer's
# allocator keeps it.
RSS_GIVEN_BACK = not harness.sanitizer()


class HonestPinger:
    """An honest client on its own connection that pings the daemon again
    and again from start() to stop(), in a thread: `latencies` (seconds)
    holds every answer's round trip, `errors` every failure.  Tests assert
    that it was answered (no errors, at least one answer); bench/isolation
    prints its p99."""

    def __init__(self, daemon, interval=0.005, timeout=60):
        import threading
        self.daemon = daemon
        self.interval = interval
        self.timeout = timeout
        self.latencies = []
        self.errors = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        import time
        try:
            with harness.Client(self.daemon.socket, timeout=self.timeout) as c:
                while not self.stopping.is_set():
                    t0 = time.monotonic()
                    c.call("ping")
                    self.latencies.append(time.monotonic() - t0)
                    self.stopping.wait(self.interval)
        except Exception as e:  # noqa: BLE001  (any failure is the finding)
            self.errors.append(repr(e))

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join()
        return self

    def p99_ms(self):
        if not self.latencies:
            return float("nan")
        s = sorted(self.latencies)
        return 1000 * s[min(len(s) - 1, int(0.99 * len(s)))]


def report(test, attack, **values):
    """The figures bench/isolation collects: one `FIGURES` line (harness's
    format) naming the attack, e.g. report(self, "unread-answers",
    rss_growth_kib=..., counted_kib=..., honest_p99_ms=...).  Keys in use:
    rss_growth_kib, counted_kib (what status counts for the attacker),
    rss_after_kib and rss_rest_kib (5 s after the attacker left, and before
    it came), honest_p99_ms, honest_errors, cpu_pct, log_lines_per_s."""
    harness.figures("%s.%s" % (type(test).__name__, test._testMethodName), attack=attack, **values)
