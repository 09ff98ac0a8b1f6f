# SPDX-License-Identifier: Apache-2.0
"""The admission queue and the device thread: status and ping answering
while a dispatch runs, BUSY when the queue is full, deadline_ms
(DEADLINE_EXCEEDED, never run), clients that vanish with a dispatch queued
(never run) or running (finishes, response discarded), and scope stats
written where the operator said."""

import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import hold_device, metric, noop, parse_prometheus, unf32, vector_add, wait_until  # noqa: E402


class Queue(harness.DaemonTest):
    def test_status_and_ping_answer_while_a_dispatch_runs(self):
        d = self.daemon()
        with d.client() as a, d.client() as b:
            hold = hold_device(d, a)
            self.assertEqual(b.call("ping")["state"], "ready")
            s = b.call("status")
            self.assertEqual(s["queue"]["running"], 1)
            samples, _ = parse_prometheus(b.call("metrics"))
            self.assertEqual(metric(samples, "ptod_queue_running"), 1)
            b.call("programs")
            b.call("buffer.list")
            b.call("advise")
            # Still running: every answer above came while the device was busy.
            self.assertEqual(b.call("status")["queue"]["running"], 1)
            self.assertEqual(a.result(hold)["tasks"], 1)

    def test_busy_when_the_queue_is_full(self):
        """queue_full = busy: fail fast beyond queue_depth."""
        d = self.daemon(config={"daemon": {"queue_depth": "2", "queue_full": "busy"}})
        with d.client() as a, d.client() as b:
            hold = hold_device(d, a)
            queued = [b.send("dispatch", noop()) for _ in range(2)]
            wait_until(lambda: d.status()["queue"]["depth"] == 2, what="two queued")
            err = b.call_err("dispatch", noop())
            self.assertError(err, "BUSY", contains=["queue_depth = 2", "queue_full = busy"])
            # buffer methods go through the same queue
            err = b.call_err("buffer.alloc", {"name": "x", "bytes": 16})
            self.assertError(err, "BUSY")
            q = b.call("status")["queue"]
            self.assertEqual((q["depth"], q["capacity"], q["running"]), (2, 2, 1))
            self.assertEqual(q["by_priority"]["0"], 2)
            a.result(hold)
            for msgid in queued:
                b.result(msgid)
            s = b.call("status")
            self.assertEqual(s["dispatches"]["ok"], 3)
            self.assertEqual(s["dispatches"]["rejected"], 1)
            self.assertEqual(b.call("buffer.list"), [])
            samples, _ = parse_prometheus(b.call("metrics"))
            self.assertEqual(metric(samples, "ptod_errors_total", name="BUSY"), 2)

    def test_deadline_exceeded_never_runs(self):
        d = self.daemon()
        with d.client() as a, d.client() as b:
            b.call("buffer.alloc", {"name": "side", "bytes": 8})
            hold = hold_device(d, a)
            late = b.send("dispatch", vector_add([1, 2], [3, 4], out={"buffer": "side"}, deadline_ms=1))
            in_time = b.send("dispatch", vector_add([1, 2], [3, 4], deadline_ms=600000))
            a.result(hold)
            err = b.error(late)
            self.assertError(err, "DEADLINE_EXCEEDED", contains=["deadline_ms = 1", "not run"])
            self.assertEqual(unf32(b.result(in_time)["outputs"][2]), [4, 6])
            self.assertEqual(b.call("buffer.read", {"name": "side"}), bytes(8))
            s = b.call("status")["dispatches"]
            self.assertEqual((s["ok"], s["failed"], s["rejected"]), (2, 0, 1))

    def test_queued_dispatch_of_a_vanished_client_never_runs(self):
        d = self.daemon()
        with d.client() as a:
            a.call("buffer.alloc", {"name": "side", "bytes": 8})
            hold = hold_device(d, a)
            b = d.client()
            b.send("dispatch", vector_add([1, 2], [3, 4], out={"buffer": "side"}))
            wait_until(lambda: d.status()["queue"]["depth"] == 1, what="b's dispatch queued")
            b.close()
            # a and the status poller's own connection
            wait_until(lambda: d.status()["clients"] == 2, what="b's disconnect")
            self.assertEqual(a.result(hold)["tasks"], 1)
            wait_until(lambda: (lambda q: (q["depth"], q["capacity"], q["running"]))(
                d.status()["queue"]) == (0, 64, 0), what="the queue to empty")
            self.assertEqual(a.call("buffer.read", {"name": "side"}), bytes(8))
            s = a.call("status")["dispatches"]
            self.assertEqual((s["ok"], s["failed"], s["rejected"]), (1, 0, 1))
            # The daemon goes on serving.
            r = a.call("dispatch", vector_add([1, 2], [3, 4], out={"buffer": "side"}))
            self.assertEqual(unf32(a.call("buffer.read", {"name": "side"})), [4, 6])
            self.assertTrue(r["arena"]["hit"])

    def test_running_dispatch_of_a_vanished_client_finishes_unsent(self):
        d = self.daemon()
        with d.client() as a:
            a.call("buffer.alloc", {"name": "side", "bytes": 8})
            b = d.client()
            hold_device(d, b)
            # b's second dispatch waits behind its first; both are b's.
            b.send("dispatch", vector_add([1, 2], [3, 4], out={"buffer": "side"}))
            wait_until(lambda: d.status()["queue"]["depth"] == 1, what="b's second dispatch queued")
            b.close()
            wait_until(lambda: d.status()["dispatches"]["ok"] == 1, what="the running one to finish")
            wait_until(lambda: d.status()["queue"]["depth"] == 0, what="the queue to empty")
            s = a.call("status")
            self.assertEqual(s["dispatches"], {"ok": 1, "failed": 0, "rejected": 1})
            self.assertEqual(a.call("buffer.read", {"name": "side"}), bytes(8))
            # Resident state survives the client; the daemon keeps serving.
            self.assertEqual(a.call("buffer.list"), [{"name": "side", "bytes": 8}])
            self.assertEqual(unf32(a.call("dispatch", vector_add([5], [6]))["outputs"][2]), [11])

    def test_scope_stats_written_under_diagnostics_dir(self):
        diag = tempfile.mkdtemp(prefix="ptod-diag-")
        self.addCleanup(shutil.rmtree, diag, True)
        d = self.daemon(config={"daemon": {"diagnostics_dir": diag}})
        with d.client() as c:
            c.call("dispatch", noop(tasks=3, depth=1, config={"enable_scope_stats": True}))
        files = os.listdir(diag)
        self.assertEqual(len(files), 1, files)
        with open(os.path.join(diag, files[0])) as f:
            lines = f.read().splitlines()
        self.assertEqual(len(lines), 3)
        self.assertIn('"program": "noop"', lines[0])
        self.assertIn('"ring": 1, "parent": 0, "tasks": 3', lines[2])


if __name__ == "__main__":
    harness.main()
