# SPDX-License-Identifier: Apache-2.0
"""Every method of docs/protocol.md over a real socket, and every kind of bad
request: wrong types, unknown keys at every level (params, args, config),
values out of range, ring values of the wrong kind, malformed envelopes,
unknown methods.  One daemon serves the whole module (the requests here
leave nothing behind that another test could see, except counters that the
tests read as differences)."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import harness  # noqa: E402
from harness import f32, metric, noop, parse_prometheus, unf32, vector_add  # noqa: E402

SIZING_KEYS = {"ring_task_window", "ring_heap", "ring_dep_pool"}


class Methods(harness.DaemonTest):
    """One daemon for the module, started in setUpClass."""

    @classmethod
    def setUpClass(cls):
        cls.d = harness.Daemon()

    @classmethod
    def tearDownClass(cls):
        code = cls.d.stop()
        report = cls.d.sanitizer_report()
        log = cls.d.read_log()
        cls.d.cleanup()
        assert report is None, "sanitizer report in the daemon's log:\n%s" % report
        assert code == 0, "ptod exited with %r:\n%s" % (code, log)

    def setUp(self):
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    # ---- methods that answer on the loop ------------------------------

    def test_ping(self):
        r = self.c.call("ping")
        self.assertEqual(r, {"version": r["version"], "device": 0, "state": "ready",
                             "features": ["dfx", "cancel", "priority", "request_id", "shm"]})
        self.assertRegex(r["version"], r"^\d+\.\d+\.\d+")

    def test_status_shape(self):
        s = self.c.call("status")
        self.assertEqual(set(s), {"device", "platform", "version", "uptime_s", "state", "queue",
                                  "arena", "memory", "dispatches", "clients", "client_memory",
                                  "shm", "fds"})
        self.assertEqual(s["shm"], {"regions": 0, "bytes": 0, "regions_limit": 16384,
                                    "bytes_limit": 64 << 30})
        # most_parked is optional, packed only when not 0 (test_fd_exhaustion.py has it).
        self.assertEqual(set(s["fds"]), {"parked", "closing", "limit"})
        self.assertEqual(s["fds"]["parked"], 0)
        self.assertEqual(s["device"], 0)
        self.assertEqual(s["platform"], "sim")
        self.assertEqual(s["state"], "ready")
        self.assertIsInstance(s["uptime_s"], int)
        self.assertEqual(set(s["queue"]), {"depth", "capacity", "running", "by_priority",
                                           "cancelled"})
        self.assertEqual(set(s["queue"]["by_priority"]), {str(p) for p in range(-8, 8)})
        self.assertEqual(s["queue"]["capacity"], 64)
        a = s["arena"]
        self.assertEqual(set(a), {"sizing", "key", "bytes", "build_us", "builds", "hits", "misses",
                                  "prewarm"})
        self.assertEqual(set(a["sizing"]), SIZING_KEYS)
        self.assertRegex(a["key"], r"^[0-9a-f]{16}$")
        self.assertEqual(set(a["prewarm"]), {"sizing", "key", "first_dispatch_hit"})
        self.assertEqual(a["prewarm"]["sizing"], harness.SMALL_SIZING)
        self.assertEqual(set(s["memory"]), {"limit", "arena", "buffers", "free"})
        self.assertEqual(s["memory"]["limit"], 1 << 30)
        self.assertGreaterEqual(s["memory"]["arena"], a["bytes"])
        self.assertEqual(set(s["dispatches"]), {"ok", "failed", "rejected"})
        self.assertGreaterEqual(s["clients"], 1)

    def test_status_counts_clients(self):
        # Connections of earlier tests may still be closing: wait until the
        # count is this one alone, then add one.
        harness.wait_until(lambda: self.c.call("status")["clients"] == 1, what="one client")
        with self.d.client() as other:
            other.call("ping")
            self.assertEqual(self.c.call("status")["clients"], 2)
        harness.wait_until(lambda: self.c.call("status")["clients"] == 1, what="one client again")

    def test_programs(self):
        progs = {p["name"]: p for p in self.c.call("programs")}
        self.assertEqual(set(progs), {"noop", "vector_add", "matmul", "attention_prefill",
                                      "attention_decode"})
        for p in progs.values():
            self.assertEqual(set(p), {"name", "description", "args"})
            self.assertTrue(p["description"])
            for a in p["args"]:
                self.assertEqual(set(a), {"name", "kind", "optional", "doc"})
        self.assertEqual([a["name"] for a in progs["vector_add"]["args"]], ["a", "b", "out"])
        self.assertEqual([a["kind"] for a in progs["noop"]["args"]], ["int", "int", "int"])
        self.assertEqual([a["optional"] for a in progs["noop"]["args"]], [False, True, True])

    def test_metrics_is_prometheus_text_and_counters_move(self):
        samples, types = parse_prometheus(self.c.call("metrics"))
        self.assertEqual(types["ptod_dispatches_total"], "counter")
        self.assertEqual(types["ptod_dispatch_request_duration_seconds"], "histogram")
        self.assertEqual(metric(samples, "ptod_state", state="ready"), 1)
        ok = metric(samples, "ptod_dispatches_total", outcome="ok")
        failed = metric(samples, "ptod_dispatches_total", outcome="failed")
        not_found = metric(samples, "ptod_errors_total", name="NOT_FOUND")
        hits = metric(samples, "ptod_arena_hits_total")
        count = metric(samples, "ptod_dispatch_request_duration_seconds_count")
        requests = metric(samples, "ptod_requests_total")

        self.c.call("dispatch", noop())
        self.c.call_err("dispatch", {"program": "noop", "args": []})  # INVALID_ARGS: ran, failed
        self.c.call_err("buffer.free", {"name": "no-such-buffer"})

        samples, _ = parse_prometheus(self.c.call("metrics"))
        self.assertEqual(metric(samples, "ptod_dispatches_total", outcome="ok"), ok + 1)
        self.assertEqual(metric(samples, "ptod_dispatches_total", outcome="failed"), failed + 1)
        self.assertEqual(metric(samples, "ptod_errors_total", name="NOT_FOUND"), not_found + 1)
        # Both dispatches reached the arena (the second failed in its orchestration).
        self.assertEqual(metric(samples, "ptod_arena_hits_total"), hits + 2)
        self.assertEqual(metric(samples, "ptod_dispatch_request_duration_seconds_count"), count + 2)
        self.assertEqual(metric(samples, "ptod_requests_total"), requests + 4)
        # The histogram is cumulative and ends at +Inf with the count.
        buckets = sorted(((float(dict(k[1])["le"]), v) for k, v in samples.items()
                          if k[0] == "ptod_dispatch_request_duration_seconds_bucket"))
        self.assertEqual(buckets[-1], (float("inf"), count + 2))
        self.assertEqual([v for _, v in buckets], sorted(v for _, v in buckets))
        self.assertEqual(metric(samples, "ptod_memory_limit_bytes"), 1 << 30)

    def test_advise_shape(self):
        r = self.c.call("advise")
        self.assertEqual(set(r), {"observed", "recommended", "config", "programs", "sizings",
                                  "warnings"})
        self.assertEqual(set(r["observed"]), {"task_window", "heap", "dep_pool"})
        self.assertEqual(set(r["recommended"]), SIZING_KEYS)
        self.assertTrue(r["config"].startswith("[ring]\n"), r["config"])
        self.assertIn("\n[prewarm]\n", r["config"])

    def test_prewarm_method(self):
        r = self.c.call("prewarm", {"config": {"ring_heap": [0, 2048, 0, 0]}})
        self.assertEqual(r["sizing"]["ring_heap"], [1 << 20, 2048, 1 << 20, 1 << 20])
        self.assertEqual(r["prewarm"]["sizing"], r["sizing"])
        self.assertIsNone(r["prewarm"]["first_dispatch_hit"])
        # The next dispatch with that sizing hits it.
        d = self.c.call("dispatch", noop(config={"ring_heap": [0, 2048, 0, 0]}))
        self.assertTrue(d["arena"]["hit"])
        self.assertEqual(d["arena"]["key"], r["key"])
        self.assertIs(self.c.call("status")["arena"]["prewarm"]["first_dispatch_hit"], True)
        # Back to the baseline for the other tests.
        r = self.c.call("prewarm")
        self.assertEqual(r["sizing"], harness.SMALL_SIZING)

    def test_dispatch_vector_add(self):
        r = self.c.call("dispatch", vector_add([1, 2, 3], [10, 20, 30]))
        self.assertEqual(set(r), {"outputs", "arena", "sizing", "peaks", "timing_us", "tasks"})
        self.assertEqual(r["outputs"][:2], [None, None])
        self.assertEqual(unf32(r["outputs"][2]), [11, 22, 33])
        self.assertEqual(set(r["arena"]), {"hit", "build_us", "key"})
        self.assertEqual(set(r["sizing"]), SIZING_KEYS | {"source"})
        self.assertEqual(set(r["peaks"]), {"task_window", "heap", "dep_pool"})
        self.assertEqual(set(r["timing_us"]), {"queue", "arena", "run", "total"})
        self.assertEqual(r["tasks"], 1)

    def test_dispatch_arg_forms(self):
        """inout data comes back changed; scalars and slices of buffers reach
        the program."""
        r = self.c.call("dispatch", {"program": "vector_add", "args": [
            {"data": f32([1, 2])}, {"data": f32([3, 4])}, {"data": f32([0, 0]), "dir": "inout"}]})
        self.assertEqual(unf32(r["outputs"][2]), [4, 6])
        self.c.call("buffer.alloc", {"name": "m-slices", "bytes": 16, "init": f32([1, 2, 3, 4])})
        self.addCleanup(self.d.call, "buffer.free", {"name": "m-slices"})
        r = self.c.call("dispatch", {"program": "vector_add", "args": [
            {"buffer": "m-slices", "offset": 0, "bytes": 8},
            {"buffer": "m-slices", "offset": 8, "bytes": 8}, {"out": 8}]})
        self.assertEqual(unf32(r["outputs"][2]), [4, 6])
        r = self.c.call("dispatch", {"program": "matmul", "args": [
            {"data": f32([1, 2, 3, 4])}, {"data": f32([1, 0, 0, 1])}, {"out": 16},
            {"scalar": 2}, {"scalar": 2}, {"scalar": 2}]})
        self.assertEqual(unf32(r["outputs"][2]), [1, 2, 3, 4])

    def test_dispatch_errors(self):
        err = self.c.call_err("dispatch", {"program": "nosuch", "args": []})
        self.assertError(err, "UNKNOWN_PROGRAM", contains=["'nosuch'"])
        err = self.c.call_err("dispatch", {"program": "noop", "args": []})
        self.assertError(err, "INVALID_ARGS", contains=["noop", "got 0"])
        err = self.c.call_err("dispatch", {"program": "noop", "args": [{"data": b"1234"}]})
        self.assertError(err, "INVALID_ARGS", contains=["'tasks'"])
        err = self.c.call_err("dispatch", {"program": "vector_add", "args": [
            {"buffer": "no-such-buffer"}, {"data": f32([1])}, {"out": 4}]})
        self.assertError(err, "NOT_FOUND", contains=["'no-such-buffer'"])
        self.assertEqual(err.get("key"), "args[0]")
        # The daemon is none the worse.
        self.assertEqual(unf32(self.c.call("dispatch", vector_add([1], [2]))["outputs"][2]), [3])

    def test_dispatch_diagnostics_come_back_in_the_result(self):
        # No diagnostics_dir needed: each flag gives its artefact (test_dfx checks them).
        for key, value, artefact in (("enable_swimlane", 1, "swimlane"),
                                     ("enable_dep_gen", True, "dep_graph"),
                                     ("enable_scope_stats", True, "scope_stats")):
            r = self.c.call("dispatch", noop(config={key: value}))
            self.assertEqual(list(r["dfx"]), [artefact])
        # The "off" values are accepted.
        self.c.call("dispatch", noop(config={"enable_swimlane": 0, "enable_dep_gen": False,
                                             "enable_scope_stats": False}))

    def test_dispatch_aicpu_thread_num(self):
        self.c.call("dispatch", noop(tasks=4, config={"aicpu_thread_num": 2}))
        err = self.c.call_err("dispatch", noop(config={"aicpu_thread_num": 8}))
        self.assertError(err, "INVALID_CONFIG", contains=["aicpu_thread_num", "got 8"])
        err = self.c.call_err("dispatch", noop(config={"aicpu_thread_num": 1}))
        self.assertError(err, "INVALID_CONFIG", contains=["aicpu_thread_num", "got 1"])

    # ---- unknown methods and bad envelopes ------------------------------

    def test_unknown_method(self):
        err = self.c.call_err("nosuch")
        self.assertError(err, "UNKNOWN_METHOD", contains=["'nosuch'"])
        err = self.c.call_err("Ping")
        self.assertError(err, "UNKNOWN_METHOD", contains=["'Ping'"])
        self.assertEqual(self.c.call("ping")["state"], "ready")

    def test_unknown_method_long_name_is_cut(self):
        """A long unknown name is echoed cut at 64 bytes, marked with '...'."""
        err = self.c.call_err("m" * 100)
        self.assertError(err, "UNKNOWN_METHOD", contains=["'" + "m" * 64 + "...'"])
        self.assertNotIn("m" * 65, err["message"])

    def test_unknown_method_not_utf8(self):
        """The name is echoed escaped: the error stays valid UTF-8."""
        raw = b"\x94\x00\xcd\x03\xe8\xa4\xff\xfe\\A\x90"  # [0, 1000, "\xff\xfe\\A", []]
        err, _ = self.raw_then_ping(raw)
        self.assertError(err, "UNKNOWN_METHOD", contains=["'\\xff\\xfe\\\\A'"])

    def raw_then_ping(self, raw):
        """Send raw bytes, then a ping; the response to the raw message (msgid
        1000) and the connection must both still work."""
        self.c.send_raw(raw)
        pong = self.c.call("ping")
        self.assertEqual(pong["state"], "ready")
        return self.c.recv(1000)

    def test_params_not_a_list(self):
        for params in ({}, 5, "x", None):
            err, result = self.raw_then_ping(msgpack.packb([0, 1000, "ping", params]))
            self.assertIsNone(result)
            self.assertError(err, "INVALID_REQUEST", contains=["params must be [] or [map]"])

    def test_params_list_not_one_map(self):
        for params in ([1], [{}, {}], [[]], [None]):
            err, _ = self.raw_then_ping(msgpack.packb([0, 1000, "status", params]))
            self.assertError(err, "INVALID_REQUEST", contains=["params must be [] or [map]"])

    def test_request_of_3_or_5_elements(self):
        err, _ = self.raw_then_ping(msgpack.packb([0, 1000, "ping"]))
        self.assertError(err, "INVALID_REQUEST", contains=["4 elements", "got 3"])
        err, _ = self.raw_then_ping(msgpack.packb([0, 1000, "ping", [], 5]))
        self.assertError(err, "INVALID_REQUEST", contains=["4 elements", "got 5"])

    def test_method_not_a_string(self):
        err, _ = self.raw_then_ping(msgpack.packb([0, 1000, 5, []]))
        self.assertError(err, "INVALID_REQUEST", contains=["method must be a string"])
        err, _ = self.raw_then_ping(msgpack.packb([0, 1000, b"ping", []], use_bin_type=True))
        self.assertError(err, "INVALID_REQUEST", contains=["method must be a string"])

    def test_notification_from_client_is_ignored(self):
        self.c.send_raw(msgpack.packb([2, "ping", []]))
        self.c.send_raw(msgpack.packb([1, 7, None, None]))
        msgid = self.c.send("ping")
        msg = self.c.read_message()
        self.assertEqual(msg[:3], [1, msgid, None])

    def test_pipelined_requests_each_answered_once(self):
        ids = [self.c.send("ping") for _ in range(20)]
        ids += [self.c.send("dispatch", noop()) for _ in range(5)]
        ids += [self.c.send("status") for _ in range(5)]
        for msgid in reversed(ids):
            err, result = self.c.recv(msgid)
            self.assertIsNone(err)
            self.assertIsNotNone(result)
        self.assertEqual(self.c.backlog, {})

    # ---- bad params of every method ----------------------------------

    def test_unknown_keys_in_params_of_every_method(self):
        cases = {
            "ping": {"x": 1}, "status": {"x": 1}, "metrics": {"x": 1}, "programs": {"x": 1},
            "buffer.list": {"x": 1}, "advise": {"x": 1},
            "dispatch": dict(noop(), x=1),
            "buffer.alloc": {"name": "a", "bytes": 4, "x": 1},
            "buffer.write": {"name": "a", "data": b"", "x": 1},
            "buffer.read": {"name": "a", "x": 1},
            "buffer.free": {"name": "a", "x": 1},
            "prewarm": {"x": 1},
        }
        for method, params in cases.items():
            with self.subTest(method=method):
                err = self.c.call_err(method, params)
                self.assertError(err, "INVALID_REQUEST", contains=["unknown key 'x'", method])
                self.assertEqual(err["key"], "x")

    def test_unknown_key_in_config(self):
        for method in ("dispatch", "prewarm"):
            params = noop() if method == "dispatch" else {}
            params["config"] = {"ring_heapp": 1 << 20}
            err = self.c.call_err(method, params)
            self.assertError(err, "INVALID_REQUEST",
                             contains=["unknown key 'ring_heapp' in %s config" % method])
            self.assertEqual(err["key"], "ring_heapp")

    def test_unknown_key_in_args(self):
        err = self.c.call_err("dispatch", {"program": "noop", "args": [{"scalar": 1, "x": 2}]})
        self.assertError(err, "INVALID_REQUEST", contains=["args[0]", "unknown key 'x'"])
        self.assertEqual(err["key"], "args[0]")
        err = self.c.call_err("dispatch", {"program": "noop", "args": [
            {"scalar": 1}, {"scalar": 0}, {"scalar": 0, "dir": "inout"}]})
        self.assertEqual(err["key"], "args[2]")

    def test_dispatch_params_wrong_types(self):
        bad = [
            ({"args": []}, "missing required key 'program'", "program"),
            ({"program": 1, "args": []}, "'program'", "program"),
            ({"program": "../noop", "args": []}, '"../noop"', "program"),
            ({"program": "noop"}, "missing required key 'args'", "args"),
            ({"program": "noop", "args": {}}, "'args'", "args"),
            ({"program": "noop", "args": [1]}, "args[0]", "args[0]"),
            ({"program": "noop", "args": [{"data": "str"}]}, "'data'", "args[0]"),
            ({"program": "noop", "args": [{"out": -1}]}, "got -1", "args[0]"),
            ({"program": "noop", "args": [{"out": 1 << 41}]}, "got %d" % (1 << 41), "args[0]"),
            ({"program": "noop", "args": [{"scalar": "x"}]}, "'scalar'", "args[0]"),
            ({"program": "noop", "args": [{"scalar": None}]}, "args[0]", "args[0]"),
            ({"program": "noop", "args": [{"buffer": 1}]}, "'buffer'", "args[0]"),
            ({"program": "noop", "args": [{"data": b"x", "dir": "sideways"}]}, '"sideways"', "args[0]"),
            ({"program": "noop", "args": [{}]}, "args[0]", "args[0]"),
            ({"program": "noop", "args": [], "config": []}, "'config'", "config"),
            ({"program": "noop", "args": [], "deadline_ms": -1}, "got -1", "deadline_ms"),
            ({"program": "noop", "args": [], "deadline_ms": "5"}, '"5"', "deadline_ms"),
            ({"program": "noop", "args": [], "deadline_ms": 1.5}, "1.5", "deadline_ms"),
        ]
        for params, text, key in bad:
            with self.subTest(params=params):
                err = self.c.call_err("dispatch", params)
                self.assertError(err, "INVALID_REQUEST", contains=[text])
                self.assertEqual(err["key"], key)

    def test_buffer_params_wrong_types(self):
        bad = [
            ("buffer.alloc", {"name": "a", "bytes": 0}, "got 0", "bytes"),
            ("buffer.alloc", {"name": "a", "bytes": (1 << 40) + 1}, "got %d" % ((1 << 40) + 1), "bytes"),
            ("buffer.alloc", {"name": "a", "bytes": "12"}, '"12"', "bytes"),
            ("buffer.alloc", {"name": "a", "bytes": 1.0}, "got 1", "bytes"),
            ("buffer.alloc", {"name": "a" * 65, "bytes": 4}, "'name'", "name"),
            ("buffer.alloc", {"name": "a/b", "bytes": 4}, '"a/b"', "name"),
            ("buffer.alloc", {"name": "", "bytes": 4}, '""', "name"),
            ("buffer.alloc", {"name": ".hidden", "bytes": 4}, '".hidden"', "name"),
            ("buffer.alloc", {"name": b"a", "bytes": 4}, "'name'", "name"),
            ("buffer.alloc", {"bytes": 4}, "missing required key 'name'", "name"),
            ("buffer.alloc", {"name": "a"}, "missing required key 'bytes'", "bytes"),
            ("buffer.alloc", {"name": "a", "bytes": 12, "init": b"123"}, "got a bin of 3 bytes", "init"),
            ("buffer.alloc", {"name": "a", "bytes": 3, "init": "abc"}, "'init'", "init"),
            ("buffer.write", {"name": "a", "offset": -1, "data": b"x"}, "got -1", "offset"),
            ("buffer.write", {"name": "a", "data": "x"}, "'data'", "data"),
            ("buffer.write", {"name": "a"}, "missing required key 'data'", "data"),
            ("buffer.read", {"name": "a", "bytes": -1}, "got -1", "bytes"),
            ("buffer.read", {"name": "a", "offset": "0"}, '"0"', "offset"),
            ("buffer.read", {}, "missing required key 'name'", "name"),
            ("buffer.free", {}, "missing required key 'name'", "name"),
            ("buffer.free", {"name": 5}, "'name'", "name"),
        ]
        for method, params, text, key in bad:
            with self.subTest(method=method, params=params):
                err = self.c.call_err(method, params)
                self.assertError(err, "INVALID_REQUEST", contains=[text])
                self.assertEqual(err["key"], key)
        self.assertEqual(self.c.call("buffer.list"), [])

    def test_required_params_missing_entirely(self):
        for method in ("dispatch", "buffer.alloc", "buffer.write", "buffer.read", "buffer.free"):
            with self.subTest(method=method):
                err = self.c.call_err(method)
                self.assertError(err, "INVALID_REQUEST", contains=["missing required key"])

    # ---- ring values: the RunConfig rules and texts -------------------

    def ring_error(self, field, value, message):
        for method in ("dispatch", "prewarm"):
            params = noop() if method == "dispatch" else {}
            params["config"] = {field: value}
            err = self.c.call_err(method, params)
            self.assertError(err, "INVALID_CONFIG", message=message)
            self.assertEqual(err["key"], field)

    def test_ring_heap_bad_values(self):
        prefix = "ring_heap must be a power of 2 >= 1024 (bytes per ring), got "
        for value, shown in ((True, "true"), (False, "false"), (1.5, "1.5"), (1024.0, "1024.0"),
                             ("1M", '"1M"'), (0, "0"), (1000, "1000"), (-1, "-1"),
                             (1536, "1536"), ((1 << 64) - 1, str((1 << 64) - 1))):
            with self.subTest(value=value):
                if isinstance(value, float) and shown == "1024.0":
                    # how a float is shown is msgpack-c's business; the rule is not
                    err = self.c.call_err("dispatch", noop(config={"ring_heap": value}))
                    self.assertError(err, "INVALID_CONFIG", contains=[prefix])
                    continue
                self.ring_error("ring_heap", value, prefix + shown)

    def test_ring_list_lengths(self):
        for n in (0, 1, 3, 5):
            with self.subTest(n=n):
                self.ring_error("ring_heap", [1024] * n,
                                "ring_heap must have exactly 4 entries (one per scope-depth ring), got %d" % n)
        self.ring_error("ring_task_window", [4, 4, 4],
                        "ring_task_window must have exactly 4 entries (one per scope-depth ring), got 3")

    def test_ring_list_entries(self):
        self.ring_error("ring_heap", [0, 0, 0, 1000],
                        "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got 1000")
        self.ring_error("ring_heap", [0, True, 0, 0],
                        "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got true")
        self.ring_error("ring_heap", [0, 0, 2048.0, 0],
                        "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got 2048.0")
        self.ring_error("ring_heap", [0, 0, "1K", 0],
                        'ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got "1K"')
        self.ring_error("ring_task_window", [4, 4, 4, 3],
                        "ring_task_window entries must be a power of 2 >= 4 (or 0 to keep default), got 3")
        self.ring_error("ring_dep_pool", [4, 4, 4, 3],
                        "ring_dep_pool entries must be in [4, INT32_MAX] (or 0 to keep default), got 3")

    def test_ring_task_window_and_dep_pool_ranges(self):
        self.ring_error("ring_task_window", 3, "ring_task_window must be a power of 2 >= 4, got 3")
        self.ring_error("ring_task_window", 12, "ring_task_window must be a power of 2 >= 4, got 12")
        self.ring_error("ring_task_window", 1 << 31,
                        "ring_task_window must be a power of 2 >= 4, got %d" % (1 << 31))
        self.ring_error("ring_task_window", True, "ring_task_window must be a power of 2 >= 4, got true")
        self.ring_error("ring_dep_pool", 3, "ring_dep_pool must be in [4, INT32_MAX], got 3")
        self.ring_error("ring_dep_pool", 1 << 31,
                        "ring_dep_pool must be in [4, INT32_MAX], got %d" % (1 << 31))
        self.ring_error("ring_dep_pool", 8.0, "ring_dep_pool must be in [4, INT32_MAX], got 8.0")

    def test_other_config_values(self):
        for key, value, text in (("aicpu_thread_num", 17, "got 17"),
                                 ("aicpu_thread_num", True, "got true"),
                                 ("enable_swimlane", 5, "got 5"),
                                 ("enable_swimlane", "1", 'got "1"'),
                                 ("enable_scope_stats", 1, "got 1"),
                                 ("enable_dep_gen", "yes", 'got "yes"')):
            with self.subTest(key=key, value=value):
                err = self.c.call_err("dispatch", noop(config={key: value}))
                self.assertError(err, "INVALID_CONFIG", contains=[key, text])
                self.assertEqual(err["key"], key)

    def test_nil_and_zero_entries_are_unset(self):
        r = self.c.call("dispatch", noop(config={"ring_heap": None, "ring_task_window": [0, 0, 0, 0],
                                                 "aicpu_thread_num": 0}))
        self.assertEqual(r["sizing"]["source"]["ring_heap"], ["config"] * 4)
        self.assertEqual(r["sizing"]["source"]["ring_task_window"], ["config"] * 4)

    def test_bad_requests_change_nothing(self):
        """A rejected request is never run: counters of runs do not move."""
        before = self.c.call("status")
        self.c.call_err("dispatch", noop(config={"ring_heap": 1000}))
        self.c.call_err("dispatch", dict(noop(), x=1))
        after = self.c.call("status")
        self.assertEqual(after["dispatches"]["ok"], before["dispatches"]["ok"])
        self.assertEqual(after["dispatches"]["failed"], before["dispatches"]["failed"])
        self.assertEqual(after["dispatches"]["rejected"], before["dispatches"]["rejected"] + 2)
        self.assertEqual(after["arena"]["builds"], before["arena"]["builds"])
        self.assertEqual(after["arena"]["hits"], before["arena"]["hits"])


if __name__ == "__main__":
    harness.main()
