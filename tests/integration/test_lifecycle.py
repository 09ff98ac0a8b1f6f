# SPDX-License-Identifier: Apache-2.0
"""The daemon's life: start-up failures (exit 78 naming the key or
variable), SIGTERM drain (queued requests answered SHUTTING_DOWN, the
running one finishing and its response arriving even to a slow reader,
exit 0, socket removed), a second SIGTERM exiting at once, and SIGHUP
reload: a good file (live keys applied, a changed sizing prewarmed when the
device is idle), a bad file (the running configuration kept), keys that
need a restart reported and not applied."""

import os
import shutil
import signal
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import hold_device, noop, unf32, vector_add, wait_until  # noqa: E402

MIB = 1 << 20


class StartUp(harness.DaemonTest):
    def start_fails(self, code=78, **kw):
        d = self.daemon(ready=False, **kw)
        d.expected_exit = code
        self.assertEqual(d.wait(), code, d.read_log())
        self.assertIsNone(d.notify.find("READY=1"))
        self.assertFalse(os.path.exists(d.socket))
        return d

    def test_invalid_env_ring_value(self):
        for var, value, text in (("PTO2_RING_HEAP", "1000",
                                  "PTO2_RING_HEAP: ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000"),
                                 ("PTO2_RING_TASK_WINDOW", "12x", "PTO2_RING_TASK_WINDOW"),
                                 ("PTO2_RING_DEP_POOL", "4,4,4", "PTO2_RING_DEP_POOL")):
            with self.subTest(var=var):
                d = self.start_fails(env={var: value})
                self.assertIn(text, d.read_log())
                # The datagram may reach the listener thread after the exit is seen.
                d.notify.wait_for("ERRNO=", timeout=5)

    def test_invalid_config_value(self):
        d = self.start_fails(config={"ring": {"heap": "1000"}})
        self.assertIn("[ring] heap = 1000: ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000",
                      d.read_log())
        d = self.start_fails(config={"daemon": {"no_such_key": "1"}})
        self.assertIn("no_such_key", d.read_log())

    def test_prewarm_over_memory(self):
        d = self.start_fails(config={"device": {"memory": "16M"}, "ring": {"heap": "8M"}})
        self.assertIn("Failed to prewarm", d.read_log())

    def test_sigterm_when_idle(self):
        d = self.daemon()
        d.call("ping")
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(), 0)
        self.assertFalse(os.path.exists(d.socket))
        self.assertIsNotNone(d.notify.find("STOPPING=1"))

    def test_sigint_drains_too(self):
        d = self.daemon()
        d.signal(signal.SIGINT)
        self.assertEqual(d.wait(), 0)

    def test_only_the_loop_thread_takes_signals(self):
        # The kernel gives a signal sent to the process to any thread that
        # does not block it.  Under ThreadSanitizer a SIGTERM given to a
        # runtime worker parked in its futex wait was handled only when the
        # worker woke, never on an idle daemon: it did not stop (CI, twice).
        # Every thread but the loop's blocks the signals the loop handles.
        tmp = tempfile.mkdtemp(prefix="ptod-metrics-")
        self.addCleanup(shutil.rmtree, tmp, True)
        d = self.daemon(config={"metrics": {"listen": os.path.join(tmp, "metrics.sock")}})
        d.call("ping")
        handled = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGINT - 1)) | (1 << (signal.SIGHUP - 1))

        def thread_masks():
            threads = {}
            for tid in os.listdir("/proc/%d/task" % d.pid):
                with open("/proc/%d/task/%s/status" % (d.pid, tid)) as f:
                    status = dict(line.rstrip("\n").split(":\t", 1) for line in f if ":\t" in line)
                threads[int(tid)] = (status["Name"], int(status["SigBlk"], 16))
            return threads

        # Threads start (and name themselves) as they are needed, and glibc
        # blocks every signal in a thread while it creates one (a signal
        # then waits): wait until the loop takes signals and every thread
        # the test names has started.
        named = {"ptod-device", "ptod-core0", "ptod-sched0", "ptod-http-reap"}

        def settled():
            threads = thread_masks()
            return (threads[d.pid][1] & handled == 0
                    and named <= {t[0] for t in threads.values()})

        wait_until(settled, what="the loop thread to take signals and the threads to start")
        threads = thread_masks()
        name, blocked = threads.pop(d.pid)
        if "thread" in harness.sanitizer():
            # ThreadSanitizer's own thread shares the loop's name.
            threads = {tid: t for tid, t in threads.items() if t[0] != name}
        for tid, (thread, blocked) in sorted(threads.items()):
            with self.subTest(thread=thread, tid=tid):
                self.assertEqual(blocked & handled, handled, "%s takes signals: SigBlk %x" % (thread, blocked))
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(), 0)


class Drain(harness.DaemonTest):
    def test_sigterm_drains(self):
        d = self.daemon()
        with d.client() as a, d.client() as b, d.client() as watcher:
            hold = hold_device(d, a)
            queued = [b.send("dispatch", noop()), b.send("buffer.alloc", {"name": "late", "bytes": 8})]
            wait_until(lambda: watcher.call("status")["queue"]["depth"] == 2, what="two queued")
            start = len(d.notify.snapshot())
            d.signal(signal.SIGTERM)
            d.notify.wait_for("STOPPING=1", start=start)
            for msgid in queued:
                self.assertError(b.error(msgid), "SHUTTING_DOWN", contains=["not run"])
            # The loop still answers; device work is refused.
            self.assertEqual(watcher.call("ping")["state"], "draining")
            self.assertError(b.call_err("dispatch", noop()), "SHUTTING_DOWN")
            self.assertError(b.call_err("prewarm"), "SHUTTING_DOWN")
            # A new client is told why it cannot be served.
            with d.client() as late:
                msgs = late.read_until_eof()
            self.assertEqual(len(msgs), 1, msgs)
            self.assertError(msgs[0][2][0], "SHUTTING_DOWN")
            # The running dispatch finishes and its response arrives.
            self.assertEqual(a.result(hold)["tasks"], 1)
            self.assertEqual(d.wait(), 0)
            self.assertIsNone(a.read_message())
        self.assertFalse(os.path.exists(d.socket))
        self.assertIn("Drained; exiting.", d.read_log())

    def test_drain_delivers_to_a_slow_reader(self):
        """Responses still unsent at the end of the drain are written out
        before the connection closes."""
        d = self.daemon()
        with d.client() as a:
            a.call("buffer.alloc", {"name": "big", "bytes": MIB})
            reads = [a.send("buffer.read", {"name": "big"}) for _ in range(8)]
            hold = a.send("dispatch", noop(tasks=1, task_us=harness.HOLD_US))
            wait_until(lambda: d.status()["queue"]["running"] == 1 and
                       d.status()["queue"]["depth"] == 0, what="the hold to run")
            d.signal(signal.SIGTERM)
            d.notify.wait_for("STOPPING=1")
            # a reads nothing until the device is done
            wait_until(lambda: "Drained; exiting." in d.read_log(), what="the drain")
            for msgid in reads:
                self.assertEqual(a.result(msgid), bytes(MIB))
            self.assertEqual(a.result(hold)["tasks"], 1)
            self.assertIsNone(a.read_message())
        self.assertEqual(d.wait(), 0)

    def test_drain_timeout(self):
        """A dispatch that outlives drain_timeout does not hold the exit up."""
        d = self.daemon(config={"daemon": {"drain_timeout": "50ms"}})
        d.expected_exit = 1
        with d.client() as a:
            hold_device(d, a, task_us=10000000)
            d.signal(signal.SIGTERM)
            self.assertEqual(d.wait(), 1)
            self.assertEqual(a.read_until_eof(), [])
        self.assertIn("still running after drain_timeout = 50 ms", d.read_log())

    def test_second_sigterm_exits_at_once(self):
        d = self.daemon()
        d.expected_exit = 1
        with d.client() as a:
            hold_device(d, a, task_us=10000000)
            d.signal(signal.SIGTERM)
            d.notify.wait_for("STOPPING=1")
            d.signal(signal.SIGTERM)
            self.assertEqual(d.wait(), 1)
            # The running dispatch never answered.
            self.assertEqual(a.read_until_eof(), [])
        self.assertIn("exiting at once", d.read_log())


class Reload(harness.DaemonTest):
    def reload(self, d, sections):
        start = len(d.notify.snapshot())
        d.rewrite_config(sections)
        d.signal(signal.SIGHUP)
        i = d.notify.wait_for("RELOADING=1", start=start)
        lines = d.notify.snapshot()[i].split("\n")
        self.assertTrue(any(l.startswith("MONOTONIC_USEC=") and l[15:].isdigit() for l in lines), lines)
        j = d.notify.wait_for("READY=1", start=i + 1)
        self.assertGreater(j, i)
        return j

    def test_good_file(self):
        d = self.daemon()
        before = d.status()
        sections = dict(d.sections)
        sections["ring"] = dict(sections["ring"], heap="2M")
        sections["daemon"] = dict(sections["daemon"], queue_depth="7")
        self.reload(d, sections)
        s = d.status()
        self.assertEqual(s["state"], "ready")
        self.assertEqual(s["queue"]["capacity"], 7)
        self.assertEqual(s["arena"]["prewarm"]["sizing"]["ring_heap"], [2 * MIB] * 4)
        self.assertEqual(s["arena"]["sizing"]["ring_heap"], [2 * MIB] * 4)
        self.assertEqual(s["arena"]["builds"], before["arena"]["builds"] + 1)
        self.assertIsNone(s["arena"]["prewarm"]["first_dispatch_hit"])
        r = d.call("dispatch", noop())
        self.assertTrue(r["arena"]["hit"])
        self.assertEqual(r["sizing"]["ring_heap"], [2 * MIB] * 4)
        self.assertIn("Reload: [ring] heap: 1M -> 2M", d.read_log())

    def test_run_timeout_applies_to_the_next_dispatch(self):
        d = self.daemon(config={"device": {"run_timeout": "10s"}})
        slow = noop(tasks=1, task_us=600000)
        d.call("dispatch", slow)  # a 0.6 s kernel is progress enough under 10 s
        sections = dict(d.sections)
        sections["device"] = dict(sections["device"], run_timeout="100ms")
        self.reload(d, sections)
        with d.client() as c:
            err = c.call_err("dispatch", slow)
        self.assertEqual(err["name"], "SCHEDULER_TIMEOUT")
        self.assertEqual(err["capacity"], 100)

    def test_prewarm_section_change(self):
        d = self.daemon()
        sections = dict(d.sections)
        sections["prewarm"] = {"task_window": "0,0,512,0"}
        self.reload(d, sections)
        s = d.status()["arena"]
        self.assertEqual(s["prewarm"]["sizing"]["ring_task_window"], [256, 256, 512, 256])
        # the baseline itself did not change
        r = d.call("dispatch", noop())
        self.assertFalse(r["arena"]["hit"])
        self.assertEqual(r["sizing"]["ring_task_window"], [256] * 4)

    def test_unchanged_file(self):
        d = self.daemon()
        builds = d.status()["arena"]["builds"]
        self.reload(d, d.sections)
        self.assertEqual(d.status()["arena"]["builds"], builds)
        self.assertIn("Reload: nothing changed.", d.read_log())

    def test_bad_file_keeps_the_running_configuration(self):
        d = self.daemon()
        before = d.status()
        good = d.sections
        bad = dict(good)
        bad["ring"] = dict(good["ring"], heap="3M")
        bad["daemon"] = dict(good["daemon"], queue_depth="9")
        self.reload(d, bad)
        s = d.status()
        self.assertEqual(s["state"], "ready")
        self.assertEqual(s["queue"]["capacity"], before["queue"]["capacity"])
        self.assertEqual(s["arena"], dict(before["arena"], hits=s["arena"]["hits"]))
        self.assertEqual(d.call("dispatch", noop())["sizing"]["ring_heap"], [MIB] * 4)
        log = d.read_log()
        self.assertIn("Reload failed, keeping the running configuration", log)
        self.assertIn("[ring] heap = 3M", log)
        # An unreadable file the same.
        os.unlink(d.config_path)
        d.signal(signal.SIGHUP)
        wait_until(lambda: d.read_log().count("Reload failed") == 2, what="the second failure")
        self.assertEqual(d.call("ping")["state"], "ready")
        # The daemon must exit 0 on SIGTERM whatever happened to its file.

    def test_restart_keys_are_reported_not_applied(self):
        d = self.daemon()
        sections = {k: dict(v) for k, v in d.sections.items()}
        sections["device"]["id"] = "3"
        sections["device"]["cores"] = "1"
        sections["daemon"]["socket"] = d.socket + ".new"
        sections["daemon"]["max_clients"] = "5"
        self.reload(d, sections)
        log = d.read_log()
        self.assertIn("[device] id: 0 -> 3 (needs a restart)", log)
        self.assertIn("[device] cores: 2 -> 1 (needs a restart)", log)
        self.assertIn("[daemon] socket", log)
        self.assertIn("need a restart", log)
        self.assertEqual(d.call("ping")["device"], 0)
        self.assertTrue(os.path.exists(d.socket))
        self.assertFalse(os.path.exists(d.socket + ".new"))

    def test_log_level_applies_at_once(self):
        """log_level is live: after a reload to err, the notices of the next
        reload are not logged."""
        d = self.daemon()
        sections = {k: dict(v) for k, v in d.sections.items()}
        sections["daemon"]["log_level"] = "err"
        self.reload(d, sections)
        self.assertIn("Reload: [daemon] log_level: debug -> err", d.read_log())
        self.reload(d, sections)
        log = d.read_log()
        self.assertEqual(log.count("Received SIGHUP"), 1, log)
        self.assertNotIn("nothing changed", log)

    def test_allow_list_applies_to_new_connections(self):
        d = self.daemon()
        with d.client() as kept:
            kept.call("ping")
            sections = {k: dict(v) for k, v in d.sections.items()}
            sections["daemon"]["allowed_uids"] = str(os.getuid() + 4242)
            self.reload(d, sections)
            with d.client() as late:
                msgs = late.read_until_eof()
            self.assertError(msgs[0][2][0], "PERMISSION_DENIED")
            self.assertEqual(kept.call("ping")["state"], "ready")

    def test_new_prewarm_that_does_not_fit(self):
        """A reload whose sizing cannot be built keeps the arena it has and
        goes on serving."""
        d = self.daemon(config={"device": {"memory": "16M"}})
        before = d.status()["arena"]
        sections = {k: dict(v) for k, v in d.sections.items()}
        sections["ring"]["heap"] = "8M"
        self.reload(d, sections)
        s = d.status()
        self.assertEqual(s["state"], "ready")
        self.assertEqual(s["arena"]["key"], before["key"])
        self.assertEqual(s["arena"]["builds"], before["builds"])
        self.assertIn("keeping the previous arena", d.read_log())
        # The new baseline is what dispatches get now: it does not fit either.
        with d.client() as c:
            self.assertError(c.call_err("dispatch", noop()), "OUT_OF_MEMORY")
        r = d.call("dispatch", noop(config={"ring_heap": MIB}))
        self.assertTrue(r["arena"]["hit"])

    def test_reload_while_a_dispatch_runs(self):
        """The new prewarm waits for the device; the running dispatch keeps
        the sizing it started with."""
        d = self.daemon()
        with d.client() as a:
            hold = a.send("dispatch", noop(tasks=1, task_us=harness.HOLD_US))
            wait_until(lambda: d.status()["queue"]["running"] == 1, what="the hold to run")
            sections = {k: dict(v) for k, v in d.sections.items()}
            sections["ring"]["dep_pool"] = "2048"
            self.reload(d, sections)
            r = a.result(hold)
            self.assertEqual(r["sizing"]["ring_dep_pool"], [1024] * 4)
            s = d.status()
            self.assertEqual(s["state"], "ready")
            self.assertEqual(s["arena"]["sizing"]["ring_dep_pool"], [2048] * 4)
            self.assertEqual(a.call("dispatch", vector_add([1], [1]))["sizing"]["ring_dep_pool"], [2048] * 4)
            self.assertEqual(unf32(a.call("dispatch", vector_add([1], [1]))["outputs"][2]), [2])


if __name__ == "__main__":
    harness.main()
