# SPDX-License-Identifier: Apache-2.0
"""Protocol 1.2's request ids over the real socket: a device request's
"request_id" comes back in its result, in the error map of a failed one, in
every log line about it and in its DFX artefacts (and so in the files under
diagnostics_dir); bad values are INVALID_REQUEST naming the key; ping lists
the feature."""
import json
import os
import shutil
import tempfile

import harness
from harness import hold_device, noop, vector_add

RID = "req-42 /v1/generate?x=1&y=~"  # printable ASCII, spaces and all
ALL = {"enable_swimlane": 2, "enable_scope_stats": True, "enable_dep_gen": True}


class Echo(harness.DaemonTest):
    def setUp(self):
        self.d = self.daemon()
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    def test_ping_lists_request_id(self):
        self.assertIn("request_id", self.c.call("ping")["features"])

    def test_results_echo_it(self):
        r = self.c.call("dispatch", vector_add([1, 2], [3, 4], request_id=RID))
        self.assertEqual(r["request_id"], RID)
        self.assertEqual(harness.unf32(r["outputs"][2]), [4, 6])
        r = self.c.call("buffer.alloc", {"name": "kv", "bytes": 8, "request_id": "a"})
        self.assertEqual(r, {"name": "kv", "bytes": 8, "request_id": "a"})
        r = self.c.call("buffer.write", {"name": "kv", "data": b"12345678", "request_id": "b"})
        self.assertEqual(r, {"bytes": 8, "request_id": "b"})
        # buffer.read's result is the bytes themselves: nothing to put it in.
        self.assertEqual(self.c.call("buffer.read", {"name": "kv", "request_id": "c"}),
                         b"12345678")
        r = self.c.call("buffer.free", {"name": "kv", "request_id": "x" * 64})
        self.assertEqual(r, {"bytes": 8, "request_id": "x" * 64})
        r = self.c.call("prewarm", {"request_id": "w"})
        self.assertEqual(r["request_id"], "w")
        # buffer.list takes it (its result, a list, has no room for it).
        self.assertEqual(self.c.call("buffer.list", {"request_id": "l"}), [])
        err = self.c.call_err("buffer.list", {"request_id": ""})
        self.assertError(err, "INVALID_REQUEST", contains="request_id")

    def test_absent_means_absent(self):
        r = self.c.call("dispatch", noop())
        self.assertNotIn("request_id", r)
        r = self.c.call("buffer.alloc", {"name": "kv", "bytes": 8})
        self.assertEqual(r, {"name": "kv", "bytes": 8})
        self.assertNotIn("request_id", self.c.call_err("buffer.free", {"name": "nope"}))

    def test_not_unique_and_not_interpreted(self):
        a = self.c.send("dispatch", noop(request_id="same"))
        b = self.c.send("dispatch", noop(request_id="same"))
        self.assertEqual(self.c.result(a)["request_id"], "same")
        self.assertEqual(self.c.result(b)["request_id"], "same")

    def test_error_maps_echo_it(self):
        err = self.c.call_err("dispatch", {"program": "nope", "args": [], "request_id": "e1"})
        self.assertError(err, "UNKNOWN_PROGRAM")
        self.assertEqual(err["request_id"], "e1")
        err = self.c.call_err("buffer.free", {"name": "nope", "request_id": "e2"})
        self.assertError(err, "NOT_FOUND")
        self.assertEqual(err["request_id"], "e2")
        # Failed on the device, with DFX in the same error map.
        self.c.call("buffer.alloc", {"name": "kv", "bytes": 2 * 16 * 4 * 4 * 4})
        err = self.c.call_err("dispatch", {
            "program": "attention_prefill", "request_id": "e3",
            "args": prefill_args(16, 4, 4), "config": dict(ALL, ring_heap=[2048, 0, 0, 0])})
        self.assertError(err, "HEAP_RING_DEADLOCK")
        self.assertEqual(err["request_id"], "e3")
        self.assertEqual(json.loads(err["dfx"]["swimlane"])["otherData"]["request_id"], "e3")

    def test_bad_values_are_refused_naming_the_key(self):
        bad = ["", "x" * 65, "caf\u00e9", "tab\there", "nl\n", "\x7f", 7, True,
               b"bytes", ["a"], {"a": 1}]
        for value in bad:
            for method, params in (("dispatch", noop(request_id=value)),
                                   ("buffer.alloc", {"name": "kv", "bytes": 8,
                                                     "request_id": value}),
                                   ("prewarm", {"request_id": value})):
                with self.subTest(method=method, value=value):
                    err = self.c.call_err(method, params)
                    self.assertError(err, "INVALID_REQUEST", contains="request_id")
                    self.assertEqual(err["key"], "request_id")
        self.assertEqual(self.c.call("buffer.list"), [])  # nothing was allocated

    def test_methods_off_the_device_do_not_take_it(self):
        err = self.c.call_err("shm.unregister", {"name": "r", "request_id": "a"})
        self.assertError(err, "INVALID_REQUEST", contains="request_id")


def prefill_args(S, H, D):
    n = S * H * D
    return [{"data": harness.f32([0.5] * n)}, {"data": harness.f32([0.25] * n)},
            {"data": harness.f32([1.0] * n)}, {"buffer": "kv"}, {"out": n * 4},
            {"scalar": S}, {"scalar": H}, {"scalar": D}]


class Logs(harness.DaemonTest):
    def log_lines(self, d, text):
        return [line for line in d.read_log().splitlines() if text in line]

    def test_log_lines_name_it(self):
        d = self.daemon()
        with d.client() as c:
            # The first dispatch of a sizing builds its arena: logged.
            c.call("dispatch", noop(request_id="built-1", config={"ring_heap": 8192}))
            c.call("buffer.alloc", {"name": "kv", "bytes": 2 * 16 * 4 * 4 * 4})
            c.call_err("dispatch", {"program": "attention_prefill", "request_id": "fail-1",
                                    "args": prefill_args(16, 4, 4),
                                    "config": {"ring_heap": [2048, 0, 0, 0]}})
        built = self.log_lines(d, "Built the arena")
        self.assertTrue([l for l in built if "(request_id built-1)" in l], built)
        failed = self.log_lines(d, "failed: HEAP_RING_DEADLOCK")
        self.assertTrue([l for l in failed if "(request_id fail-1)" in l], failed)

    def test_deadline_log_line_names_it(self):
        d = self.daemon()
        with d.client() as a, d.client() as b:
            for _ in range(5):  # a hold may end before the late one queues: retry
                hold = hold_device(d, a)
                late = b.send("dispatch", noop(deadline_ms=1, request_id="late-1"))
                a.result(hold)
                err, _ = b.recv(late)
                if err is not None:
                    break
            self.assertError(err, "DEADLINE_EXCEEDED")
            self.assertEqual(err["request_id"], "late-1")
        lines = self.log_lines(d, "deadline")
        self.assertTrue([l for l in lines if "(request_id late-1)" in l], lines)


class Artefacts(harness.DaemonTest):
    def test_every_artefact_and_file_names_it(self):
        diag = tempfile.mkdtemp(prefix="ptod-rid-")
        self.addCleanup(shutil.rmtree, diag, True)
        d = self.daemon(config={"daemon": {"diagnostics_dir": diag}})
        with d.client() as c:
            r = c.call("dispatch", noop(tasks=3, depth=1, config=ALL, request_id="dfx-1"))
        dfx = r["dfx"]
        self.assertEqual(json.loads(dfx["swimlane"])["otherData"]["request_id"], "dfx-1")
        self.assertEqual(json.loads(dfx["scope_stats"].splitlines()[0])["request_id"], "dfx-1")
        self.assertTrue(dfx["dep_graph"].startswith(b"/* request_id dfx-1 */\n"), dfx["dep_graph"])
        names = sorted(os.listdir(diag))
        self.assertEqual(len(names), 3)
        for name in names:
            with open(os.path.join(diag, name), "rb") as f:
                self.assertIn(b"dfx-1", f.read(), name)
        wrote = [l for l in d.read_log().splitlines() if "Wrote the DFX artefacts" in l]
        self.assertTrue([l for l in wrote if "(request_id dfx-1)" in l], wrote)

    def test_without_it_the_artefacts_are_as_before(self):
        d = self.daemon()
        with d.client() as c:
            r = c.call("dispatch", noop(config=ALL))
        self.assertNotIn("request_id", json.loads(r["dfx"]["swimlane"])["otherData"])
        self.assertNotIn("request_id", json.loads(r["dfx"]["scope_stats"].splitlines()[0]))
        self.assertTrue(r["dfx"]["dep_graph"].startswith(b"digraph "))


if __name__ == "__main__":
    harness.main()
