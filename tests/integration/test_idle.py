# SPDX-License-Identifier: Apache-2.0
"""An idle daemon burns no CPU: these machines have two cores and tests run
in parallel, so a spinning loop, device thread or runtime thread would
cost everyone.  Measured from /proc (utime + stime of the whole process),
after a burst of dispatches has ended, over a quiet second.  Resource use,
not wall time, is what is asserted."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import noop, vector_add  # noqa: E402

TICKS = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid):
    """utime + stime of every thread of pid, in seconds."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICKS


class Idle(harness.DaemonTest):
    def quiet_cpu(self, d, seconds=1.0):
        # Let any bounded spin after the last request run out first.
        time.sleep(0.3)
        before = cpu_seconds(d.proc.pid)
        time.sleep(seconds)
        return cpu_seconds(d.proc.pid) - before

    def test_idle_after_start(self):
        d = self.daemon()
        used = self.quiet_cpu(d)
        harness.figures(self, idle_cpu_seconds_per_second=used)
        self.assertLess(used, 0.05, "an idle daemon used %.3f s of CPU in 1 s" % used)

    def test_idle_after_work(self):
        d = self.daemon()
        with d.client() as c:
            ids = [c.send("dispatch", noop(tasks=64)) for _ in range(30)]
            # 50 device requests in flight: under the default queue_depth of 64.
            ids += [c.send("dispatch", vector_add([1.0] * 5000, [2.0] * 5000)) for _ in range(20)]
            ids += [c.send("status") for _ in range(20)]
            for i in ids:
                err, _ = c.recv(i)
                self.assertIsNone(err)
            # The connection stays open: an idle client costs nothing either.
            used = self.quiet_cpu(d)
        harness.figures(self, idle_cpu_seconds_per_second_after_work=used)
        self.assertLess(used, 0.05, "the daemon used %.3f s of CPU in a quiet second" % used)


if __name__ == "__main__":
    harness.main()
