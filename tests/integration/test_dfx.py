# SPDX-License-Identifier: Apache-2.0
"""DFX artefacts over the real socket: enable_swimlane, enable_scope_stats
and enable_dep_gen give back a Chrome trace, scope stats and a dependency
graph in the dispatch result (and in the error of a failed dispatch), as
files under diagnostics_dir too, and within the connection's output
budget."""
import json
import os
import re
import shutil
import tempfile

import harness
from harness import f32, noop, vector_add

ALL = {"enable_swimlane": 2, "enable_scope_stats": True, "enable_dep_gen": True}
NODE = re.compile(r"^\s*t(\d+) \[label=\"t\d+ ([A-Za-z0-9_]+)\\n")
EDGE = re.compile(r"^\s*t(\d+) -> t(\d+);$")


def prefill_args(S, H, D):
    n = S * H * D
    return [{"data": f32([0.5] * n)}, {"data": f32([0.25] * n)}, {"data": f32([1.0] * n)},
            {"buffer": "kv"}, {"out": n * 4}, {"scalar": S}, {"scalar": H}, {"scalar": D}]


def matmul(m, n, k, **extra):
    params = {"program": "matmul", "args": [{"data": f32([1.0] * (m * k))},
                                            {"data": f32([1.0] * (k * n))},
                                            {"out": m * n * 4},
                                            {"scalar": m}, {"scalar": n}, {"scalar": k}]}
    params.update(extra)
    return params


def dot(text):
    nodes, edges = {}, set()
    for line in text.splitlines():
        m = NODE.match(line)
        if m:
            nodes[int(m.group(1))] = m.group(2)
        m = EDGE.match(line)
        if m:
            edges.add((int(m.group(1)), int(m.group(2))))
    return nodes, edges


class Dfx(harness.DaemonTest):
    def setUp(self):
        self.d = self.daemon()
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    def check_swimlane(self, raw, tasks, kernels):
        trace = json.loads(raw)
        events = trace["traceEvents"]
        lanes = {e["tid"]: e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        runs = [e for e in events if e["ph"] == "X" and e.get("cat") == "task"]
        self.assertEqual(len(runs), tasks)
        self.assertEqual(sorted(e["args"]["task"] for e in runs), list(range(tasks)))
        for e in runs:
            self.assertIn(e["tid"], lanes)  # a core, or the orchestrator running tasks
            self.assertRegex(lanes[e["tid"]], r"^(core \d+|orchestrator)$")
            self.assertIn(e["name"], kernels)
            self.assertGreaterEqual(e["dur"], 0)
        return trace

    def test_vector_add_all_artefacts(self):
        r = self.c.call("dispatch", vector_add([1, 2, 3], [10, 20, 30], config=ALL))
        self.assertEqual(harness.unf32(r["outputs"][2]), [11, 22, 33])
        dfx = r["dfx"]
        self.assertEqual(sorted(dfx), ["dep_graph", "scope_stats", "swimlane"])
        trace = self.check_swimlane(dfx["swimlane"], r["tasks"], {"vector_add_kernel"})
        self.assertEqual(trace["otherData"]["sizing"],
                         {k: r["sizing"][k] for k in ("ring_task_window", "ring_heap", "ring_dep_pool")})
        # Level 2: the orchestration phase and ring counters, each with its capacity.
        names = {e["name"] for e in trace["traceEvents"]}
        self.assertIn("orchestrate", names)
        heap = [e for e in trace["traceEvents"] if e["ph"] == "C" and e["name"] == "ring 0 heap bytes"]
        self.assertTrue(heap)
        self.assertEqual(heap[0]["args"]["capacity"], r["sizing"]["ring_heap"][0])
        nodes, edges = dot(dfx["dep_graph"].decode())
        self.assertEqual(nodes, {i: "vector_add_kernel" for i in range(r["tasks"])})
        self.assertEqual(edges, set())
        self.check_scope_stats(dfx["scope_stats"], r)

    def check_scope_stats(self, raw, r):
        lines = [json.loads(line) for line in raw.decode().splitlines()]
        self.assertEqual(lines[0]["sizing"]["ring_heap"], r["sizing"]["ring_heap"])
        peaks = {"task_window": [0] * 4, "heap": [0] * 4, "dep_pool": [0] * 4}
        for s in lines[1:]:
            for f in peaks:
                peaks[f][s["ring"]] = max(peaks[f][s["ring"]], s["peak_" + f])
        self.assertEqual(peaks, r["peaks"])
        self.assertEqual(sum(s["tasks"] for s in lines[1:]), r["tasks"])
        return lines

    def test_matmul_dep_graph_is_the_k_chains(self):
        # One 64x64 tile of c, k = 192: a chain of 3 tasks; two tiles: two chains.
        r = self.c.call("dispatch", matmul(64, 128, 192, config={"enable_dep_gen": True,
                                                                 "enable_swimlane": 1}))
        self.assertEqual(r["tasks"], 6)
        self.assertNotIn("scope_stats", r["dfx"])
        nodes, edges = dot(r["dfx"]["dep_graph"].decode())
        self.assertEqual(set(nodes.values()), {"matmul_kernel"})
        self.assertEqual(len(nodes), 6)
        # Each task continues a chain: one producer each but the first two.
        consumers = sorted(c for _, c in edges)
        self.assertEqual(len(edges), 4)
        self.assertEqual(len(set(consumers)), 4)
        chains = {}
        for p, c in sorted(edges):
            chains.setdefault(p, c)
        starts = set(nodes) - {c for _, c in edges}
        self.assertEqual(len(starts), 2)
        for s in starts:
            length, t = 1, s
            while t in chains:
                t = chains[t]
                length += 1
            self.assertEqual(length, 3)
        trace = self.check_swimlane(r["dfx"]["swimlane"], 6, {"matmul_kernel"})
        # Level 1: tasks only.
        self.assertFalse([e for e in trace["traceEvents"] if e["ph"] == "C"])

    def test_heap_deadlock_is_explained_by_its_artefacts(self):
        S, H, D = 16, 4, 4
        self.c.call("buffer.alloc", {"name": "kv", "bytes": 2 * S * H * D * 4})
        err = self.c.call_err("dispatch", {"program": "attention_prefill",
                                           "args": prefill_args(S, H, D),
                                           "config": dict(ALL, ring_heap=[2048, 0, 0, 0])})
        self.assertError(err, "HEAP_RING_DEADLOCK")
        dfx = err["dfx"]
        trace = json.loads(dfx["swimlane"])
        self.assertEqual((trace["otherData"]["error"], trace["otherData"]["error_ring"]),
                         ("HEAP_RING_DEADLOCK", 0))
        failed = [e for e in trace["traceEvents"] if e["ph"] == "i" and e["cat"] == "error"]
        self.assertEqual(len(failed), 1)
        self.assertEqual(failed[0]["name"], "HEAP_RING_DEADLOCK on ring 0")
        self.assertEqual(failed[0]["args"]["field"], "ring_heap")
        self.assertEqual(failed[0]["args"]["capacity"], 2048)
        self.assertEqual(failed[0]["args"]["live_heap"], 2048)  # two score tensors of 1 KiB live
        self.assertEqual(failed[0]["args"]["scope"], 0)
        used = [e["args"]["used"] for e in trace["traceEvents"]
                if e["ph"] == "C" and e["name"] == "ring 0 heap bytes"]
        self.assertEqual(max(used), 2048)
        stats = [json.loads(line) for line in dfx["scope_stats"].decode().splitlines()]
        self.assertEqual((stats[0]["error"], stats[0]["error_ring"], stats[0]["error_scope"]),
                         ("HEAP_RING_DEADLOCK", 0, 0))
        self.assertEqual(stats[1]["peak_heap"], 2048)
        # What the artefacts say fixes it does: H score tensors of 1 KiB.
        r = self.c.call("dispatch", {"program": "attention_prefill", "args": prefill_args(S, H, D),
                                     "config": {"ring_heap": [4096, 0, 0, 0]}})
        self.assertEqual(r["peaks"]["heap"][0], 4096)
        self.assertNotIn("dfx", r)

    def test_off_values_give_no_dfx(self):
        r = self.c.call("dispatch", noop(config={"enable_swimlane": 0, "enable_dep_gen": False,
                                                 "enable_scope_stats": False}))
        self.assertNotIn("dfx", r)


class Budget(harness.DaemonTest):
    def test_too_large_for_output_limit_is_refused_and_written(self):
        diag = tempfile.mkdtemp(prefix="ptod-dfx-")
        self.addCleanup(shutil.rmtree, diag, True)
        d = self.daemon(config={"daemon": {"output_limit": "4K", "diagnostics_dir": diag}})
        with d.client() as c:
            r = c.call("dispatch", noop(tasks=40, depth=1, config=ALL))
            self.assertEqual(r["tasks"], 40)
            self.assertEqual(sorted(r["dfx"]), ["refused"])
            self.assertIn("output_limit = 4096", r["dfx"]["refused"])
            self.assertIn(diag, r["dfx"]["refused"])
            # A small one fits.
            r = c.call("dispatch", noop(tasks=1, config={"enable_scope_stats": True}))
            self.assertIn("scope_stats", r["dfx"])
        names = sorted(os.listdir(diag))
        self.assertEqual([n.split("-")[0] for n in names],
                         ["dep_graph", "scope_stats", "scope_stats", "swimlane"])
        with open(os.path.join(diag, [n for n in names if n.startswith("swimlane")][0])) as f:
            trace = json.load(f)
        self.assertEqual(len([e for e in trace["traceEvents"] if e.get("cat") == "task"]), 40)

    def test_more_tasks_than_the_record_holds_is_refused(self):
        d = self.daemon()
        with d.client() as c:
            r = c.call("dispatch", noop(tasks=70000, depth=1,
                                        config=dict(ALL, ring_task_window=[0, 131072, 0, 0])))
        self.assertEqual(r["tasks"], 70000)  # the dispatch itself ran
        self.assertEqual(sorted(r["dfx"]), ["refused"])
        self.assertIn("The run submitted 70000 tasks; a traced dispatch records at most 65536",
                      r["dfx"]["refused"])


if __name__ == "__main__":
    harness.main()
