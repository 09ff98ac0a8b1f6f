# SPDX-License-Identifier: Apache-2.0
"""Load: 64 concurrent clients x PTOD_LOAD_REQUESTS (10,000 in a plain
build; fewer under sanitizers, see CMakeLists.txt) mixed requests — ping,
status, dispatch of vector_add, matmul and noop on the prewarmed sizing and
on two others, dispatches into resident buffers, buffer alloc/write/read/
free/list on per-client buffers — driven by tests/load/ptod_load (C, one
thread and one connection per client, 16 requests in flight each).

Checked: every request gets exactly one response, none unknown or
duplicated, each the one its request must get (msgid, and a payload:
vector_add's sums, matmul's product, noop's task count, a buffer's bytes
given every write before the read); the daemon's counters agree with what
was sent; its RSS stays bounded (sampled throughout); and, in the ASan
build, LeakSanitizer finds nothing at exit (the harness fails the test on
any sanitizer report in the daemon's log).

Prints a FIGURES line that docs/reliability.md quotes."""

import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import noop, unf32, vector_add, wait_until  # noqa: E402

LOAD = os.path.join(harness.BINARY_DIR, "tests", "load", "ptod_load")
MIB = 1 << 20
WINDOW = 16
# What the daemon may grow by under this load, whatever the build: its
# connections' buffers, requests in flight and their responses, the
# allocator's free lists.  The load itself moves ~1 GiB of messages through
# the daemon, so a leak or an unbounded queue shows far above this.
RSS_GROWTH_LIMIT_KIB = 192 * 1024


class Load(harness.DaemonTest):
    def test_many_clients_mixed_requests(self):
        clients = int(os.environ.get("PTOD_LOAD_CLIENTS", "64"))
        requests = int(os.environ.get("PTOD_LOAD_REQUESTS", "10000"))
        # Room for every request in flight, so that no BUSY can change what
        # a request must get: queue_depth and max_pending are not what this
        # test is about (test_queue.py and test_limits.py are).
        d = self.daemon(config={"daemon": {"queue_depth": str(clients * WINDOW),
                                           "max_pending": str(WINDOW),
                                           "max_clients": str(clients + 8),
                                           "log_level": "notice"}},
                        env=harness.rss_env())
        with d.client() as c:
            # Warm up what the load will use (program loads, the staging
            # area) so that `before` is the daemon at rest, not at birth.
            self.assertEqual(unf32(c.call("dispatch", vector_add([1, 2], [3, 4]))["outputs"][2]), [4, 6])
            c.call("dispatch", noop(tasks=2))
            before_status = c.call("status")
        before = harness.vmrss_kib(d.pid)
        sampler = harness.RssSampler(d.pid).start()
        try:
            out = subprocess.run([LOAD, "--socket", d.socket, "--clients", str(clients),
                                  "--requests", str(requests), "--window", str(WINDOW),
                                  "--timeout-s", "280"],
                                 capture_output=True, text=True, timeout=290)
        finally:
            sampler.stop()
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        fig = json.loads(out.stdout)
        self.assertEqual(fig["requests"], clients * requests)
        self.assertEqual(fig["responses"], clients * requests)
        self.assertEqual((fig["lost"], fig["unknown_or_duplicate"], fig["mismatches"], fig["errors"]),
                         (0, 0, 0, 0), out.stderr)

        # Once every load connection is gone, the daemon's counters say what
        # the generator says it sent.
        wait_until(lambda: d.status()["clients"] == 1, what="the load clients to disconnect")
        with d.client() as c:
            s = c.call("status")
            kinds = fig["by_kind"]
            dispatches = (kinds["vector_add"] + kinds["vector_add_to_buffer"] + kinds["matmul"] +
                          kinds["noop"])
            self.assertEqual(s["dispatches"]["ok"], before_status["dispatches"]["ok"] + dispatches)
            self.assertEqual(s["dispatches"]["failed"], 0)
            self.assertEqual(s["dispatches"]["rejected"], 0)
            self.assertEqual(s["arena"]["hits"] + s["arena"]["misses"], s["dispatches"]["ok"])
            self.assertEqual(s["arena"]["hits"] - before_status["arena"]["hits"], fig["arena_hits"])
            self.assertEqual(s["queue"]["depth"], 0)
            self.assertEqual(s["queue"]["running"], 0)
            # What the clients left resident is theirs, and freeing it gives
            # every byte back.
            left = c.call("buffer.list")
            self.assertLessEqual({b["name"] for b in left}, {"load-%d" % i for i in range(clients)})
            for b in left:
                c.call("buffer.free", {"name": b["name"]})
            self.assertEqual(c.call("status")["memory"]["buffers"], 0)
            self.assertEqual(unf32(c.call("dispatch", vector_add([1], [2]))["outputs"][2]), [3])
        after = harness.vmrss_kib(d.pid)
        harness.figures("load", build=harness.sanitizer() or "plain", clients=clients,
                        requests=fig["requests"], responses=fig["responses"], lost=fig["lost"],
                        duplicated=fig["unknown_or_duplicate"], mismatched=fig["mismatches"],
                        errors=fig["errors"], seconds=fig["seconds"],
                        dispatches=dispatches, arena_misses=fig["arena_misses"],
                        rss_before_mib="%.1f" % (before / 1024), rss_peak_mib="%.1f" % (sampler.peak / 1024),
                        rss_after_mib="%.1f" % (after / 1024), rss_samples=len(sampler.samples))
        self.assertLess(sampler.peak - before, RSS_GROWTH_LIMIT_KIB,
                        "RSS grew from %d KiB to a peak of %d KiB" % (before, sampler.peak))
        self.assertLess(after - before, RSS_GROWTH_LIMIT_KIB)


if __name__ == "__main__":
    harness.main()
