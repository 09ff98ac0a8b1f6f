# SPDX-License-Identifier: Apache-2.0
"""The dispatch path: ring overrides reaching the runtime (the returned
sizing and its sources, scalar and list form, 0 entries falling through),
PTO2_RING_* ranking between the request and the config, the prewarmed arena
and the single-slot cache (hits, misses, builds), OUT_OF_MEMORY for an
arena that does not fit, runtime errors that do not poison the daemon,
and advise.  The admission queue is test_queue.py."""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import f32, metric, noop, parse_prometheus, unf32, vector_add  # noqa: E402

MIB = 1 << 20


def sources(r, field):
    return r["sizing"]["source"][field]


class Sizing(harness.DaemonTest):
    def test_scalar_and_list_overrides_and_sources(self):
        d = self.daemon()
        with d.client() as c:
            r = c.call("dispatch", noop())
            self.assertEqual({k: v for k, v in r["sizing"].items() if k != "source"},
                             harness.SMALL_SIZING)
            for field in ("ring_task_window", "ring_heap", "ring_dep_pool"):
                self.assertEqual(sources(r, field), ["config"] * 4)

            # A scalar sets all four rings.
            r = c.call("dispatch", noop(config={"ring_heap": 2 * MIB}))
            self.assertEqual(r["sizing"]["ring_heap"], [2 * MIB] * 4)
            self.assertEqual(sources(r, "ring_heap"), ["request"] * 4)
            self.assertEqual(sources(r, "ring_task_window"), ["config"] * 4)

            # A list sets one ring per entry; 0 falls through to the config.
            r = c.call("dispatch", noop(config={"ring_task_window": [0, 64, 0, 0],
                                                "ring_dep_pool": [0, 0, 0, 4]}))
            self.assertEqual(r["sizing"]["ring_task_window"], [256, 64, 256, 256])
            self.assertEqual(sources(r, "ring_task_window"), ["config", "request", "config", "config"])
            self.assertEqual(r["sizing"]["ring_dep_pool"], [1024, 1024, 1024, 4])
            self.assertEqual(sources(r, "ring_dep_pool"), ["config", "config", "config", "request"])

    def test_overrides_reach_the_runtime(self):
        """The ring a sizing names is the ring the runtime enforces: a task
        window of 4 holds 3 tasks, on exactly the ring the list sets."""
        d = self.daemon()
        with d.client() as c:
            err = c.call_err("dispatch", noop(tasks=4, config={"ring_task_window": 4}))
            self.assertError(err, "SCOPE_DEADLOCK")
            self.assertEqual((err["ring"], err["requested"], err["capacity"]), (0, 4, 3))
            self.assertIn("ring_task_window[0]", err["hint"])
            c.call("dispatch", noop(tasks=3, config={"ring_task_window": 4}))

            # Ring 1 only: the depth-1 scope's tasks land on ring 1.
            err = c.call_err("dispatch", noop(tasks=4, depth=1, config={"ring_task_window": [0, 4, 0, 0]}))
            self.assertError(err, "SCOPE_DEADLOCK")
            self.assertEqual(err["ring"], 1)
            r = c.call("dispatch", noop(tasks=4, depth=1, config={"ring_task_window": [0, 8, 0, 0]}))
            self.assertEqual(r["peaks"]["task_window"], [0, 4, 0, 0])
            # ... and the same program at top level is not limited by ring 1.
            c.call("dispatch", noop(tasks=4, depth=0, config={"ring_task_window": [0, 4, 0, 0]}))

            # The heap: attention_prefill keeps H score tensors of S*S*4 bytes live on ring 0.
            S, H, D = 16, 2, 4
            c.call("buffer.alloc", {"name": "kv", "bytes": 2 * S * H * D * 4})
            args = prefill_args([0.5] * (S * H * D), [0.25] * (S * H * D), [1.0] * (S * H * D), S, H, D)
            err = c.call_err("dispatch", {"program": "attention_prefill", "args": args,
                                          "config": {"ring_heap": [1024, 0, 0, 0]}})
            self.assertError(err, "HEAP_RING_DEADLOCK")
            self.assertEqual((err["ring"], err["capacity"]), (0, 1024))
            self.assertIn("ring_heap[0]", err["hint"])
            r = c.call("dispatch", {"program": "attention_prefill", "args": args,
                                    "config": {"ring_heap": [2048, 0, 0, 0]}})
            self.assertEqual(r["peaks"]["heap"][0], 2048)
            self.assertEqual(r["tasks"], 3 * H + 2)

    def test_env_ranks_between_request_and_config(self):
        d = self.daemon(
            config={"ring": {"dep_pool": "1024,1024,1024,0"}},
            env={"PTO2_RING_HEAP": "0,65536,0,0", "PTO2_RING_TASK_WINDOW": "128"})
        prewarm = d.status()["arena"]["prewarm"]["sizing"]
        self.assertEqual(prewarm["ring_task_window"], [128] * 4)
        self.assertEqual(prewarm["ring_heap"], [MIB, 65536, MIB, MIB])
        self.assertEqual(prewarm["ring_dep_pool"], [1024, 1024, 1024, 16384])
        with d.client() as c:
            r = c.call("dispatch", noop())
            self.assertTrue(r["arena"]["hit"])
            self.assertEqual(sources(r, "ring_task_window"), ["env"] * 4)
            self.assertEqual(sources(r, "ring_heap"), ["config", "env", "config", "config"])
            self.assertEqual(sources(r, "ring_dep_pool"), ["config", "config", "config", "default"])

            r = c.call("dispatch", noop(config={"ring_task_window": 64, "ring_heap": [0, 4096, 8192, 0]}))
            self.assertEqual(r["sizing"]["ring_task_window"], [64] * 4)
            self.assertEqual(sources(r, "ring_task_window"), ["request"] * 4)
            self.assertEqual(r["sizing"]["ring_heap"], [MIB, 4096, 8192, MIB])
            self.assertEqual(sources(r, "ring_heap"), ["config", "request", "request", "config"])
            self.assertEqual(r["sizing"]["ring_dep_pool"], [1024, 1024, 1024, 16384])
            self.assertEqual(sources(r, "ring_dep_pool"), ["config", "config", "config", "default"])

    def test_equal_resolved_sizings_share_the_arena(self):
        """Spelling the configured values out is the same arena as leaving
        them unset."""
        d = self.daemon()
        with d.client() as c:
            r = c.call("dispatch", noop(config=dict(harness.SMALL_SIZING)))
            self.assertTrue(r["arena"]["hit"])
            self.assertEqual(sources(r, "ring_heap"), ["request"] * 4)
            self.assertEqual(r["arena"]["key"], d.status()["arena"]["key"])


class Arena(harness.DaemonTest):
    def test_first_dispatch_hits_the_prewarm(self):
        d = self.daemon()
        with d.client() as c:
            s = c.call("status")["arena"]
            self.assertIsNone(s["prewarm"]["first_dispatch_hit"])
            self.assertEqual(s["builds"], 1)
            self.assertEqual(s["key"], s["prewarm"]["key"])
            r = c.call("dispatch", noop())
            self.assertIs(r["arena"]["hit"], True)
            self.assertEqual(r["arena"]["build_us"], 0)
            self.assertEqual(r["arena"]["key"], s["key"])
            after = c.call("status")["arena"]
            self.assertIs(after["prewarm"]["first_dispatch_hit"], True)
            self.assertEqual(after["builds"], 1)
            self.assertEqual(after["hits"], s["hits"] + 1)
            self.assertEqual(after["misses"], s["misses"])
            samples, _ = parse_prometheus(c.call("metrics"))
            self.assertEqual(metric(samples, "ptod_prewarm_first_dispatch_hit"), 1)

    def test_first_dispatch_with_another_sizing_misses(self):
        d = self.daemon()
        with d.client() as c:
            s = c.call("status")["arena"]
            r = c.call("dispatch", noop(config={"ring_heap": 2 * MIB}))
            self.assertIs(r["arena"]["hit"], False)
            self.assertNotEqual(r["arena"]["key"], s["prewarm"]["key"])
            after = c.call("status")["arena"]
            self.assertIs(after["prewarm"]["first_dispatch_hit"], False)
            self.assertEqual(after["builds"], s["builds"] + 1)
            self.assertEqual(after["misses"], s["misses"] + 1)
            self.assertEqual(after["sizing"]["ring_heap"], [2 * MIB] * 4)
            # The prewarm record stays what was prewarmed.
            self.assertEqual(after["prewarm"]["sizing"], harness.SMALL_SIZING)
            # A later hit does not change what the first dispatch did.
            c.call("dispatch", noop(config={"ring_heap": 2 * MIB}))
            self.assertIs(c.call("status")["arena"]["prewarm"]["first_dispatch_hit"], False)
            samples, _ = parse_prometheus(c.call("metrics"))
            self.assertEqual(metric(samples, "ptod_prewarm_first_dispatch_hit"), 0)

    def test_alternating_sizings_rebuild_each_switch(self):
        d = self.daemon()
        a, b = {}, {"ring_heap": [0, 0, 0, 2 * MIB]}
        with d.client() as c:
            s0 = c.call("status")["arena"]
            hits = [c.call("dispatch", noop(config=cfg))["arena"]["hit"]
                    for cfg in (a, a, b, b, a, b, a)]
            self.assertEqual(hits, [True, True, False, True, False, False, False])
            s1 = c.call("status")["arena"]
            self.assertEqual(s1["builds"] - s0["builds"], 4)
            self.assertEqual(s1["misses"] - s0["misses"], 4)
            self.assertEqual(s1["hits"] - s0["hits"], 3)
            samples, _ = parse_prometheus(c.call("metrics"))
            self.assertEqual(metric(samples, "ptod_arena_builds_total"), s1["builds"])
            self.assertEqual(metric(samples, "ptod_arena_misses_total"), s1["misses"])

    def test_prewarm_section_differs_from_ring(self):
        d = self.daemon(config={"prewarm": {"heap": "0,0,0,2M", "task_window": "64"}})
        with d.client() as c:
            s = c.call("status")["arena"]
            prewarmed = {"ring_task_window": [64] * 4, "ring_heap": [MIB, MIB, MIB, 2 * MIB],
                         "ring_dep_pool": [1024] * 4}
            self.assertEqual(s["prewarm"]["sizing"], prewarmed)
            self.assertEqual(s["sizing"], prewarmed)
            # A dispatch that asks for the prewarmed sizing hits it ...
            r = c.call("dispatch", noop(config={"ring_task_window": 64, "ring_heap": [0, 0, 0, 2 * MIB]}))
            self.assertTrue(r["arena"]["hit"])
            self.assertIs(c.call("status")["arena"]["prewarm"]["first_dispatch_hit"], True)
            # ... one on the [ring] baseline does not.
            r = c.call("dispatch", noop())
            self.assertFalse(r["arena"]["hit"])
            self.assertEqual(r["sizing"]["ring_task_window"], [256] * 4)

    def test_arena_over_memory_is_out_of_memory_and_keeps_the_cache(self):
        d = self.daemon(config={"device": {"memory": "16M"}})
        with d.client() as c:
            before = c.call("status")
            err = c.call_err("dispatch", noop(config={"ring_heap": 4 * MIB}))
            self.assertError(err, "OUT_OF_MEMORY", contains=["ring_heap"])
            self.assertGreater(err["requested"], err["capacity"])
            self.assertLessEqual(err["capacity"], 16 * MIB)
            after = c.call("status")
            self.assertEqual(after["arena"]["builds"], before["arena"]["builds"])
            self.assertEqual(after["arena"]["key"], before["arena"]["key"])
            self.assertEqual(after["memory"], before["memory"])
            self.assertEqual(after["dispatches"]["failed"], before["dispatches"]["failed"] + 1)
            # The prewarmed arena is still there: the next dispatch hits it.
            r = c.call("dispatch", noop())
            self.assertTrue(r["arena"]["hit"])
            self.assertEqual(c.call("status")["arena"]["builds"], before["arena"]["builds"])

    def test_runtime_error_does_not_poison(self):
        d = self.daemon()
        with d.client() as c:
            for _ in range(3):
                err = c.call_err("dispatch", noop(tasks=8, config={"ring_task_window": 4}))
                self.assertError(err, "SCOPE_DEADLOCK")
                r = c.call("dispatch", vector_add([1, 2], [3, 4], config={"ring_task_window": 4}))
                self.assertEqual(unf32(r["outputs"][2]), [4, 6])
            s = c.call("status")["dispatches"]
            self.assertEqual((s["ok"], s["failed"]), (3, 3))

    def test_advise_recommends_a_sizing_that_passes(self):
        d = self.daemon()
        S, H, D = 16, 2, 4
        with d.client() as c:
            c.call("buffer.alloc", {"name": "kv", "bytes": 2 * S * H * D * 4})
            args = prefill_args([0.5] * (S * H * D), [0.25] * (S * H * D), [1.0] * (S * H * D), S, H, D)
            c.call("dispatch", {"program": "attention_prefill", "args": args})
            c.call("dispatch", noop(tasks=5, depth=2))
            a = c.call("advise")
            self.assertEqual(a["observed"]["heap"][0], 2048)
            self.assertEqual(a["observed"]["task_window"][2], 5)
            rec = a["recommended"]
            # At or above the peak: an exact power of 2 stays; a window holds W - 1 tasks.
            self.assertEqual(rec["ring_heap"][0], 2048)
            self.assertEqual(rec["ring_task_window"][2], 8)
            lines = a["config"].splitlines()
            self.assertEqual(lines[0], "[ring]")
            self.assertIn("heap = 2K,1K,1K,1K", lines)
            # The recommendation, used as the next dispatches' config, passes.
            r = c.call("dispatch", {"program": "attention_prefill", "args": args, "config": rec})
            self.assertEqual(r["sizing"]["ring_heap"], rec["ring_heap"])
            c.call("dispatch", noop(tasks=5, depth=2, config=rec))
            # Below the observed peak it does not.
            tight = dict(rec, ring_heap=[a["observed"]["heap"][0] // 2] + rec["ring_heap"][1:])
            err = c.call_err("dispatch", {"program": "attention_prefill", "args": args, "config": tight})
            self.assertError(err, "HEAP_RING_DEADLOCK")


def prefill_args(q, k, v, S, H, D):
    return [{"data": f32(q)}, {"data": f32(k)}, {"data": f32(v)}, {"buffer": "kv"},
            {"out": S * H * D * 4}, {"scalar": S}, {"scalar": H}, {"scalar": D}]


class LargeOutputs(harness.DaemonTest):
    """Outputs of 64 KiB and more go to the socket from the staging area,
    which is lent to the answer until it is written: a later dispatch must
    not stage its arguments over an answer not yet sent."""

    N = 256 * 1024  # floats: 1 MiB per argument, far more than a socket buffer

    def test_pipelined_answers_not_read_keep_their_outputs(self):
        d = self.daemon()
        a = [float(i % 1000) for i in range(self.N)]
        with d.client() as c:
            ids = [c.send("dispatch", vector_add(a, [float(k)] * self.N)) for k in range(1, 5)]
            time.sleep(0.3)  # all four run while the first answer waits for the reader
            for k, msgid in enumerate(ids, 1):
                out = unf32(c.result(msgid)["outputs"][2])
                self.assertEqual(out[:3], [k + 0.0, k + 1.0, k + 2.0])
                self.assertEqual(out[-1], a[-1] + k)
                self.assertEqual(out, [x + k for x in a])

    def test_the_staging_area_comes_back_and_is_reused(self):
        d = self.daemon()
        a = [1.0] * self.N
        with d.client() as c:
            c.call("dispatch", vector_add(a, a))
            free = c.call("status")["memory"]["free"]
            for _ in range(10):
                out = unf32(c.call("dispatch", vector_add(a, a))["outputs"][2])
                self.assertEqual(out, [2.0] * self.N)
            self.assertEqual(c.call("status")["memory"]["free"], free)
            # A client gone with answers unread gives its areas back too.
            with d.client() as gone:
                for _ in range(3):
                    gone.send("dispatch", vector_add(a, a))
                time.sleep(0.3)
            c.call("dispatch", vector_add(a, a))
            self.assertEqual(c.call("status")["memory"]["free"], free)


if __name__ == "__main__":
    harness.main()
