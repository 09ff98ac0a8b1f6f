# SPDX-License-Identifier: Apache-2.0
"""The Python client against the real ptod (build/daemon/ptod), started by
tests/integration/harness.py's Daemon on a temporary socket with small rings
([ring] task_window 256, heap 1M, dep_pool 1024: source "config").

ctest runs this with PTOD_BINARY_DIR set to the build tree (label
"integration")."""

import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

try:
    import numpy
except ImportError:  # the client works without numpy; its tests skip
    numpy = None

import harness  # noqa: E402
from ptoclient import (Buffer, Client, Data, Out, RunConfig, dispatch_many, f32,  # noqa: E402
                       from_f32, save_dfx)
from ptoclient.errors import (AlreadyExists, ConnectionLost, HeapRingDeadlock,  # noqa: E402
                              InvalidArgs, InvalidConfig, InvalidRequest, MessageTooLarge,
                              NotFound, PermissionDenied, UnknownProgram)

T = 240  # per-call limit: only reached when something hangs (a sanitizer build on a loaded machine is slow)
CONFIG_RING = {"ring_task_window": 256, "ring_heap": 1 << 20, "ring_dep_pool": 1024}


def rand_f32(n, seed):
    rng = random.Random(seed)
    return [rng.uniform(-1.0, 1.0) for _ in range(n)]


def attend(q, keys, values, D):
    """softmax(q·kᵀ/sqrt(D))·v for one head; keys/values: lists of D-vectors."""
    scores = [sum(a * b for a, b in zip(q, k)) / math.sqrt(D) for k in keys]
    m = max(scores)
    w = [math.exp(s - m) for s in scores]
    total = sum(w)
    return [sum(w[j] * values[j][d] for j in range(len(keys))) / total for d in range(D)]


def row(flat, i, H, D, h):
    base = (i * H + h) * D
    return flat[base:base + D]


class DaemonCase(unittest.TestCase):
    def daemon(self, **kw):
        d = harness.Daemon(**kw)
        self.addCleanup(d.stop)
        return d

    def client(self, d, **kw):
        kw.setdefault("timeout", T)
        c = Client(d.socket, **kw)
        self.addCleanup(c.close)
        return c

    def assertClose(self, got, want, tol=1e-4):
        self.assertEqual(len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertLessEqual(abs(g - w), tol * max(1.0, abs(w)), "element %d: %r != %r"
                                 % (i, g, w))


class Basics(DaemonCase):
    def test_ping_status_programs(self):
        d = self.daemon()
        c = self.client(d)
        ping = c.ping()
        self.assertEqual(ping["state"], "ready")
        self.assertEqual(ping["device"], 0)
        status = c.status()
        self.assertEqual(status["state"], "ready")
        self.assertEqual(status["arena"]["sizing"], {k: [v] * 4 for k, v in CONFIG_RING.items()})
        self.assertIn("queue", status)
        names = {p["name"] for p in c.programs()}
        self.assertTrue({"vector_add", "matmul", "noop", "attention_prefill",
                         "attention_decode"} <= names, names)
        self.assertIn("# TYPE", c.metrics())

    def test_vector_add(self):
        d = self.daemon()
        c = self.client(d)
        a, b = rand_f32(1000, 1), rand_f32(1000, 2)
        r = c.dispatch("vector_add", [Data(f32(a)), Data(f32(b)), Out(4000)])
        self.assertIsNone(r["outputs"][0])
        self.assertIsNone(r["outputs"][1])
        self.assertIsInstance(r["outputs"][2], bytes)
        self.assertClose(list(from_f32(r["outputs"][2])), [x + y for x, y in zip(a, b)], 1e-6)
        self.assertGreaterEqual(r["tasks"], 1)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_vector_add_of_numpy_arrays(self):
        # 256 KiB each: sent from the arrays' own memory (ptoclient.wire)
        d = self.daemon()
        c = self.client(d)
        rng = numpy.random.default_rng(3)
        a = rng.standard_normal(1 << 16, dtype=numpy.float32)
        b = rng.standard_normal((256, 256), dtype=numpy.float32)
        r = c.dispatch("vector_add", [a, Data(memoryview(b)), Out(a.nbytes)])
        got = numpy.frombuffer(r["outputs"][2], dtype=numpy.float32)
        numpy.testing.assert_allclose(got, a + b.reshape(-1), rtol=1e-6)
        small = numpy.arange(16, dtype=numpy.float32)
        r = c.dispatch("vector_add", [small, bytearray(small.tobytes()), Out(64)])
        self.assertEqual(list(from_f32(r["outputs"][2])), [2.0 * x for x in range(16)])

    def test_errors(self):
        d = self.daemon()
        c = self.client(d)
        with self.assertRaises(UnknownProgram):
            c.dispatch("no_such_program", [])
        with self.assertRaises(InvalidArgs) as cm:
            c.dispatch("vector_add", [Data(f32([1.0])), Data(f32([1.0, 2.0])), Out(4)])
        self.assertIn("vector_add", cm.exception.message)
        self.assertEqual(c.ping()["state"], "ready")

    def test_pipelined_dispatches(self):
        d = self.daemon()
        c = self.client(d)
        inputs = [(rand_f32(64, 10 + n), rand_f32(64, 20 + n)) for n in range(8)]
        ids = [c.send_dispatch("vector_add", [Data(f32(a)), Data(f32(b)), Out(256)],
                               config=RunConfig(ring_task_window=64)) for a, b in inputs]
        results = c.gather(ids)
        for (a, b), r in zip(inputs, results):
            self.assertClose(list(from_f32(r["outputs"][2])), [x + y for x, y in zip(a, b)], 1e-6)
            self.assertEqual(r["sizing"]["ring_task_window"], [64] * 4)

    def test_buffers(self):
        d = self.daemon()
        c = self.client(d)
        init = bytes(range(64))
        self.assertEqual(c.buffer_alloc("w", init=init), {"name": "w", "bytes": 64})
        self.assertEqual(c.buffer_read("w"), init)
        self.assertEqual(c.buffer_write("w", b"\xff\xfe", offset=8)["bytes"], 2)
        self.assertEqual(c.buffer_read("w", offset=7, nbytes=4), bytes([7, 0xFF, 0xFE, 10]))
        self.assertIn({"name": "w", "bytes": 64}, c.buffer_list())
        with self.assertRaises(AlreadyExists):
            c.buffer_alloc("w", 16)
        self.assertEqual(c.buffer_free("w")["bytes"], 64)
        with self.assertRaises(NotFound):
            c.buffer_read("w")

    def test_large_answers_received_in_place(self):
        # 4 MiB answers are assembled in place (ptoclient.large): the bytes
        # are the buffer's, as a bytearray; one the caller still holds is
        # never overwritten by the next answer, and a small answer in
        # between (pipelined behind a large one) is still its own.
        d = self.daemon()
        c = self.client(d)
        size = 4 << 20
        data = bytes(random.Random(7).getrandbits(8) for _ in range(4096)) * (size // 4096)
        c.buffer_alloc("big", init=data)
        first = c.buffer_read("big")
        self.assertIs(type(first), bytearray)
        self.assertEqual(first, data)
        c.buffer_write("big", b"\x01" * 16)
        ids = [c.send("buffer.read", {"name": "big"}), c.send("ping"),
               c.send("buffer.read", {"name": "big", "offset": 8, "bytes": 16})]
        second, ping, small = c.gather(ids)
        self.assertEqual(second[:16], b"\x01" * 16)
        self.assertEqual(second[16:], data[16:])
        self.assertEqual(first, data)  # still the first read's bytes
        self.assertIn("version", ping)
        self.assertEqual(small, b"\x01" * 8 + data[16:24])
        del first, second
        self.assertEqual(c.buffer_read("big", offset=size - 4096), data[-4096:])


class Sizing(DaemonCase):
    """Per-dispatch ring sizing reaches the daemon and shows in the result."""

    def test_scalar_form(self):
        d = self.daemon()
        c = self.client(d)
        r = c.dispatch("noop", [4], config=RunConfig(ring_heap=2 << 20, ring_task_window=64))
        s = r["sizing"]
        self.assertEqual(s["ring_heap"], [2 << 20] * 4)
        self.assertEqual(s["ring_task_window"], [64] * 4)
        self.assertEqual(s["ring_dep_pool"], [1024] * 4)
        self.assertEqual(s["source"]["ring_heap"], ["request"] * 4)
        self.assertEqual(s["source"]["ring_task_window"], ["request"] * 4)
        self.assertEqual(s["source"]["ring_dep_pool"], ["config"] * 4)

    def test_list_form(self):
        d = self.daemon()
        c = self.client(d)
        cfg = RunConfig(ring_heap=[4 << 20, 0, 0, 2048], ring_dep_pool=(0, 64, 0, 0))
        r = c.dispatch("noop", [4], config=cfg)
        s = r["sizing"]
        self.assertEqual(s["ring_heap"], [4 << 20, 1 << 20, 1 << 20, 2048])
        self.assertEqual(s["source"]["ring_heap"], ["request", "config", "config", "request"])
        self.assertEqual(s["ring_dep_pool"], [1024, 64, 1024, 1024])
        self.assertEqual(s["source"]["ring_dep_pool"], ["config", "request", "config", "config"])
        self.assertEqual(s["source"]["ring_task_window"], ["config"] * 4)
        # no config: everything from the daemon's config file
        r = c.dispatch("noop", [4])
        self.assertEqual(r["sizing"]["source"]["ring_heap"], ["config"] * 4)

    def test_env_level(self):
        d = self.daemon(env={"PTO2_RING_TASK_WINDOW": "128"})
        c = self.client(d)
        r = c.dispatch("noop", [4], config=RunConfig(ring_task_window=[0, 0, 0, 32]))
        self.assertEqual(r["sizing"]["ring_task_window"], [128, 128, 128, 32])
        self.assertEqual(r["sizing"]["source"]["ring_task_window"], ["env", "env", "env",
                                                                     "request"])

    def prefill(self, S=32, H=2, D=4):
        """A client of a fresh daemon holding the KV cache, and prefill args."""
        c = self.client(self.daemon())
        n = S * H * D
        c.buffer_alloc("kv", 2 * n * 4)
        return c, [Data(f32(rand_f32(n, 1))), Data(f32(rand_f32(n, 2))),
                   Data(f32(rand_f32(n, 3))), Buffer("kv"), Out(n * 4), S, H, D]

    def test_heap_deadlock_fixed_by_per_dispatch_heap(self):
        # the seed's case: a prefill whose intermediates outgrow ring 0's heap
        # fails with HEAP_RING_DEADLOCK, and a bigger ring_heap for that one
        # dispatch (list form, ring 0 only) fixes it.
        c, args = self.prefill()
        with self.assertRaises(HeapRingDeadlock) as cm:
            c.dispatch("attention_prefill", args, config=RunConfig(ring_heap=[4096, 0, 0, 0]))
        self.assertEqual(cm.exception.ring, 0)
        r = c.dispatch("attention_prefill", args, config=RunConfig(ring_heap=[16384, 0, 0, 0]))
        self.assertEqual(r["sizing"]["ring_heap"][0], 16384)
        self.assertEqual(r["sizing"]["source"]["ring_heap"][0], "request")

    def test_dfx_in_the_result_and_in_the_error(self):
        c, args = self.prefill()
        traced = dict(enable_swimlane=2, enable_scope_stats=True, enable_dep_gen=True)
        with self.assertRaises(HeapRingDeadlock) as cm:
            c.dispatch("attention_prefill", args, config=RunConfig(ring_heap=[4096, 0, 0, 0],
                                                                   **traced))
        trace = json.loads(cm.exception.dfx["swimlane"])
        self.assertEqual(trace["otherData"]["error"], "HEAP_RING_DEADLOCK")
        r = c.dispatch("attention_prefill", args, config=RunConfig(**traced))
        out = tempfile.mkdtemp(prefix="ptoclient-dfx-")
        self.addCleanup(shutil.rmtree, out, True)
        paths = save_dfx(r["dfx"], out)
        self.assertEqual([os.path.basename(p) for p in paths],
                         ["swimlane.json", "scope_stats.jsonl", "dep_graph.dot"])
        with open(paths[1]) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual(max(s["peak_heap"] for s in lines[1:]), r["peaks"]["heap"][0])
        self.assertEqual(r["peaks"]["heap"][0], 8192)  # H score tensors of S*S*4 bytes

    def test_daemon_gives_the_same_messages_as_runconfig(self):
        d = self.daemon()
        c = self.client(d)
        bad = [{"ring_task_window": 3}, {"ring_heap": 1000}, {"ring_dep_pool": 2},
               {"ring_heap": 0}, {"ring_heap": True}, {"ring_heap": 1.5}, {"ring_heap": "1M"},
               {"ring_task_window": 1 << 31}, {"ring_heap": [1024, 1024, 1024]},
               {"ring_heap": [1024, 1000, 0, 0]}, {"ring_heap": [False, 0, 0, 0]},
               {"ring_dep_pool": [2, 0, 0, 0]}, {"ring_task_window": [3, 0, 0, 0]},
               {"aicpu_thread_num": 1}, {"enable_swimlane": 5}, {"enable_dep_gen": 1}]
        for config in bad:
            with self.subTest(config=config):
                with self.assertRaises(ValueError) as local:
                    RunConfig.from_dict(config)
                # bypass the client's validation: the daemon must say the same
                with self.assertRaises(InvalidConfig) as remote:
                    c.call("dispatch", {"program": "noop", "args": [{"scalar": 1}],
                                        "config": config})
                self.assertEqual(remote.exception.message, str(local.exception))

    def test_unknown_config_key_is_rejected_not_dropped(self):
        d = self.daemon()
        c = self.client(d)
        with self.assertRaises(InvalidRequest) as cm:
            c.dispatch("noop", [1], config=RunConfig(ring_heap=2048, extra={"future_knob": 1}))
        self.assertEqual(cm.exception.key, "future_knob")
        self.assertIn("future_knob", cm.exception.message)

    def test_bench_same_config_every_run(self):
        d = self.daemon()
        c = self.client(d)
        cfg = RunConfig(ring_task_window=[128, 0, 0, 0], ring_heap=[2 << 20, 0, 0, 0])
        out = c.bench("noop", [16], config=cfg, repeat=5, warmup=2)
        self.assertEqual(len(out["wall_us"]), 5)
        # the warm-up built the arena for this sizing; every measured run hits it
        self.assertEqual((out["arena_hits"], out["arena_misses"]), (5, 0))
        self.assertEqual(out["last"]["sizing"]["ring_task_window"][0], 128)
        self.assertEqual(out["last"]["sizing"]["ring_heap"][0], 2 << 20)

    def test_prewarm_then_first_dispatch_hits(self):
        d = self.daemon()
        c = self.client(d)
        cfg = RunConfig(ring_heap=[8 << 20, 0, 0, 0])
        arena = c.prewarm(cfg)
        self.assertEqual(arena["sizing"]["ring_heap"], [8 << 20, 1 << 20, 1 << 20, 1 << 20])
        r = c.dispatch("noop", [4], config=cfg)
        self.assertTrue(r["arena"]["hit"])
        self.assertEqual(r["arena"]["key"], arena["key"])


class KvCache(DaemonCase):
    def test_prefill_from_one_client_decode_from_another(self):
        d = self.daemon()
        S, H, D, T_ = 6, 2, 8, 10
        n = S * H * D
        q, k, v = rand_f32(n, 1), rand_f32(n, 2), rand_f32(n, 3)
        with Client(d.socket, timeout=T) as a:
            a.buffer_alloc("kv", 2 * T_ * H * D * 4)
            r = a.dispatch("attention_prefill",
                           [Data(f32(q)), Data(f32(k)), Data(f32(v)), Buffer("kv"), Out(n * 4),
                            S, H, D],
                           config=RunConfig(ring_heap=[1 << 20, 0, 0, 0], ring_task_window=64))
            out = list(from_f32(r["outputs"][4]))
            for i in range(S):
                for h in range(H):
                    want = attend(row(q, i, H, D, h), [row(k, j, H, D, h) for j in range(i + 1)],
                                  [row(v, j, H, D, h) for j in range(i + 1)], D)
                    self.assertClose(row(out, i, H, D, h), want)
        keys = [row(k, j, H, D, 0) for j in range(S)], [row(k, j, H, D, 1) for j in range(S)]
        values = [row(v, j, H, D, 0) for j in range(S)], [row(v, j, H, D, 1) for j in range(S)]
        b = self.client(d)  # a second client sees the resident KV cache
        for pos in range(S, T_):
            qd, kd, vd = rand_f32(H * D, 100 + pos), rand_f32(H * D, 200 + pos), \
                rand_f32(H * D, 300 + pos)
            r = b.dispatch("attention_decode",
                           [Data(f32(qd)), Data(f32(kd)), Data(f32(vd)), Buffer("kv"),
                            Out(H * D * 4), pos, H, D],
                           config=RunConfig(ring_task_window=16))
            self.assertEqual(r["sizing"]["ring_task_window"], [16] * 4)
            out = list(from_f32(r["outputs"][4]))
            for h in range(H):
                keys[h].append(kd[h * D:(h + 1) * D])
                values[h].append(vd[h * D:(h + 1) * D])
                self.assertClose(out[h * D:(h + 1) * D], attend(qd[h * D:(h + 1) * D], keys[h],
                                                                values[h], D))
        # the cache holds every position's keys: kv[0, j] for j < T
        cache = list(from_f32(b.buffer_read("kv", nbytes=T_ * H * D * 4)))
        for j in range(T_):
            self.assertEqual(cache[j * H * D:(j + 1) * H * D],
                             list(from_f32(f32(keys[0][j] + keys[1][j]))))
        b.buffer_free("kv")

    def test_serving_loop_example(self):
        d = self.daemon()
        example = os.path.join(os.path.dirname(HERE), "examples", "serving_loop.py")
        proc = subprocess.run([sys.executable, example, "--socket", d.socket, "--steps", "3"],
                              capture_output=True, text=True, timeout=120)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("attention_prefill", proc.stdout)
        self.assertEqual(proc.stdout.count("attention_decode"), 3, proc.stdout)
        self.assertIn("matches the reference", proc.stdout)


class Multi(DaemonCase):
    def test_dispatch_many_two_daemons_one_failing(self):
        d0, d1 = self.daemon(), self.daemon()
        cfg = RunConfig(ring_heap=[2 << 20, 0, 0, 0])
        a = rand_f32(16, 1)
        good = [Data(f32(a)), Data(f32(a)), Out(64)]
        bad = [Data(f32(a)), Data(f32(a[:8])), Out(64)]  # b too short: INVALID_ARGS
        out = dispatch_many({d0.socket: good, d1.socket: good}, "vector_add", config=cfg,
                            timeout=T)
        self.assertTrue(out.ok)
        for r in out.values():
            self.assertClose(list(from_f32(r["outputs"][2])), [2 * x for x in a], 1e-6)
            self.assertEqual(r["sizing"]["source"]["ring_heap"][0], "request")
            self.assertEqual(r["sizing"]["ring_heap"][0], 2 << 20)
        out = dispatch_many({d0.socket: good, d1.socket: bad}, "vector_add", config=cfg,
                            timeout=T)
        self.assertEqual(list(out.errors), [d1.socket])
        self.assertIsInstance(out[d1.socket], InvalidArgs)
        self.assertIn(d1.socket, str(out[d1.socket]))
        self.assertEqual(out[d0.socket]["sizing"]["ring_heap"][0], 2 << 20)


class Failures(DaemonCase):
    def test_daemon_killed_mid_call(self):
        d = self.daemon()
        c = self.client(d)
        c.ping()
        # 200 tasks of 20 ms: seconds of work on the daemon's cores
        msgid = c.send_dispatch("noop", [200, 0, 20000], config=RunConfig(ring_task_window=1024))
        threading.Timer(0.3, lambda: d.proc.send_signal(signal.SIGKILL)).start()
        with self.assertRaises(ConnectionLost):
            c.result(msgid)
        with self.assertRaises(ConnectionLost):
            c.ping()

    def test_permission_denied(self):
        d = self.daemon(config={"daemon": {"allowed_uids": str(os.geteuid() + 12345)}})
        c = self.client(d)
        with self.assertRaises(PermissionDenied) as cm:
            c.ping()
        self.assertEqual(cm.exception.code, 1010)

    def test_message_too_large(self):
        d = self.daemon(config={"daemon": {"max_message": "64K"}})
        c = self.client(d)
        c.buffer_alloc("b", 1 << 20)
        with self.assertRaises(MessageTooLarge):
            c.buffer_write("b", b"\x00" * (1 << 20))
        # the daemon closes that connection; a new one works
        self.assertEqual(self.client(d).ping()["state"], "ready")


if __name__ == "__main__":
    unittest.main(verbosity=2)
