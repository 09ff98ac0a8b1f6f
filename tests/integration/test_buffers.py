# SPDX-License-Identifier: Apache-2.0
"""Resident buffers: alloc/write/read/free/list and their errors (NOT_FOUND,
ALREADY_EXISTS, ranges), the device memory account (OUT_OF_MEMORY with the
numbers, nothing evicted, state intact), buffers outliving the connection
that made them, large transfers both ways, and a KV cache written by
attention_prefill from one connection and used by attention_decode from
another, checked against a plain-Python reference."""

import math
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import f32, unf32, vector_add  # noqa: E402

MIB = 1 << 20


class Buffers(harness.DaemonTest):
    def test_lifecycle(self):
        d = self.daemon()
        with d.client() as c:
            self.assertEqual(c.call("buffer.list"), [])
            self.assertEqual(c.call("buffer.alloc", {"name": "b", "bytes": 8}), {"name": "b", "bytes": 8})
            self.assertEqual(c.call("buffer.read", {"name": "b"}), bytes(8))  # zeroed
            init = bytes(range(16))
            c.call("buffer.alloc", {"name": "a.x-Y_9", "bytes": 16, "init": init})
            self.assertEqual(c.call("buffer.read", {"name": "a.x-Y_9"}), init)
            self.assertEqual(c.call("buffer.list"), [{"name": "a.x-Y_9", "bytes": 16},
                                                     {"name": "b", "bytes": 8}])
            self.assertEqual(c.call("buffer.write", {"name": "b", "offset": 2, "data": b"xyz"}), {"bytes": 3})
            self.assertEqual(c.call("buffer.read", {"name": "b"}), b"\0\0xyz\0\0\0")
            self.assertEqual(c.call("buffer.read", {"name": "b", "offset": 3}), b"yz\0\0\0")
            self.assertEqual(c.call("buffer.read", {"name": "b", "offset": 2, "bytes": 2}), b"xy")
            self.assertEqual(c.call("buffer.read", {"name": "b", "offset": 8}), b"")
            self.assertEqual(c.call("buffer.write", {"name": "b", "data": b""}), {"bytes": 0})
            long_name = "n" * 64
            c.call("buffer.alloc", {"name": long_name, "bytes": 1})
            self.assertEqual(c.call("buffer.free", {"name": long_name}), {"bytes": 1})
            self.assertEqual(c.call("buffer.free", {"name": "b"}), {"bytes": 8})
            self.assertEqual(c.call("buffer.list"), [{"name": "a.x-Y_9", "bytes": 16}])
            self.assertEqual(c.call("status")["memory"]["buffers"] > 0, True)
            c.call("buffer.free", {"name": "a.x-Y_9"})
            self.assertEqual(c.call("status")["memory"]["buffers"], 0)

    def test_errors(self):
        d = self.daemon()
        with d.client() as c:
            c.call("buffer.alloc", {"name": "b", "bytes": 8, "init": b"12345678"})
            err = c.call_err("buffer.alloc", {"name": "b", "bytes": 16})
            self.assertError(err, "ALREADY_EXISTS", contains=["'b'"])
            self.assertEqual(c.call("buffer.read", {"name": "b"}), b"12345678")
            for method, params in (("buffer.read", {"name": "nope"}),
                                   ("buffer.write", {"name": "nope", "data": b"x"}),
                                   ("buffer.free", {"name": "nope"})):
                err = c.call_err(method, params)
                self.assertError(err, "NOT_FOUND", contains=["'nope'"])
                self.assertEqual(err["key"], "name")
            for method, params in (("buffer.write", {"name": "b", "offset": 6, "data": b"xyz"}),
                                   ("buffer.write", {"name": "b", "offset": 9, "data": b""}),
                                   ("buffer.write", {"name": "b", "offset": 1 << 40, "data": b"x"}),
                                   ("buffer.read", {"name": "b", "offset": 9}),
                                   ("buffer.read", {"name": "b", "offset": 4, "bytes": 5}),
                                   ("buffer.read", {"name": "b", "bytes": 9}),
                                   ("buffer.read", {"name": "b", "offset": 1 << 40, "bytes": 1 << 40})):
                with self.subTest(method=method, params=params):
                    err = c.call_err(method, params)
                    self.assertError(err, "INVALID_REQUEST", contains=["outside buffer 'b' of 8 bytes"])
            self.assertEqual(c.call("buffer.read", {"name": "b"}), b"12345678")
            # A slice of a buffer outside it, as a dispatch argument.
            err = c.call_err("dispatch", {"program": "vector_add", "args": [
                {"buffer": "b", "offset": 4, "bytes": 8}, {"data": f32([1, 2])}, {"out": 8}]})
            self.assertError(err, "INVALID_REQUEST", contains=["args[0]", "'b'"])
            self.assertEqual(err["key"], "args[0]")

    def test_buffers_outlive_their_connection(self):
        d = self.daemon()
        with d.client() as c:
            c.call("buffer.alloc", {"name": "kept", "bytes": 4, "init": b"abcd"})
        with d.client() as c:
            self.assertEqual(c.call("buffer.read", {"name": "kept"}), b"abcd")

    def test_large_transfers(self):
        d = self.daemon(config={"daemon": {"max_message": "32M"}})
        rng = random.Random(7)
        data = bytes(rng.getrandbits(8) for _ in range(1 << 16)) * 64  # 4 MiB
        with d.client() as c:
            c.call("buffer.alloc", {"name": "big", "bytes": len(data), "init": data})
            self.assertEqual(c.call("buffer.read", {"name": "big"}), data)
            c.call("buffer.write", {"name": "big", "offset": 1, "data": data[:-1]})
            self.assertEqual(c.call("buffer.read", {"name": "big", "offset": 1}), data[:-1])
            n = 1 << 18  # 1 MiB per argument
            a = [float(i % 1000) for i in range(n)]
            r = c.call("dispatch", vector_add(a, a))
            out = unf32(r["outputs"][2])
            self.assertEqual(len(out), n)
            self.assertEqual(out[999], 1998.0)
            self.assertEqual(out[-1], 2.0 * ((n - 1) % 1000))
            # Many large responses pipelined, read only at the end.
            ids = [c.send("buffer.read", {"name": "big"}) for _ in range(4)]
            for msgid in ids:
                self.assertEqual(c.result(msgid), data[:1] + data[:-1])


class Memory(harness.DaemonTest):
    def test_buffer_over_memory(self):
        d = self.daemon(config={"device": {"memory": "16M"}})
        with d.client() as c:
            c.call("buffer.alloc", {"name": "first", "bytes": 8, "init": b"keepme!!"})
            before = c.call("status")
            err = c.call_err("buffer.alloc", {"name": "huge", "bytes": 32 * MIB})
            self.assertError(err, "OUT_OF_MEMORY", contains=["'huge'", str(32 * MIB), "[device] memory"])
            self.assertEqual(err["requested"], 32 * MIB)
            self.assertEqual(err["capacity"], before["memory"]["free"])
            # Fill up, then one more does not fit: nothing is evicted for it.
            c.call("buffer.alloc", {"name": "fill", "bytes": 8 * MIB})
            err = c.call_err("buffer.alloc", {"name": "more", "bytes": 8 * MIB})
            self.assertError(err, "OUT_OF_MEMORY")
            after = c.call("status")
            self.assertEqual(after["arena"]["key"], before["arena"]["key"])
            self.assertEqual(after["arena"]["builds"], before["arena"]["builds"])
            self.assertEqual(after["memory"]["arena"], before["memory"]["arena"])
            self.assertEqual(c.call("buffer.list"), [{"name": "fill", "bytes": 8 * MIB},
                                                     {"name": "first", "bytes": 8}])
            self.assertEqual(c.call("buffer.read", {"name": "first"}), b"keepme!!")
            # Host arguments of a dispatch need device memory too.
            n = 1 << 20  # three 4 MiB arguments
            err = c.call_err("dispatch", vector_add([1.0] * n, [1.0] * n))
            self.assertError(err, "OUT_OF_MEMORY", contains=["host arguments"])
            self.assertGreater(err["requested"], err["capacity"])
            # Freeing makes room again; the arena was never touched.
            c.call("buffer.free", {"name": "fill"})
            c.call("buffer.alloc", {"name": "more", "bytes": 8 * MIB})
            r = c.call("dispatch", vector_add([1, 2], [3, 4]))
            self.assertTrue(r["arena"]["hit"])
            self.assertEqual(c.call("status")["arena"]["builds"], before["arena"]["builds"])


# ---- the KV cache: prefill on one connection, decode on another ----------

def attend(q, keys, values, D):
    """softmax(q·k/sqrt(D)) · v over the given positions, in double precision."""
    scores = [sum(qi * ki for qi, ki in zip(q, k)) / math.sqrt(D) for k in keys]
    m = max(scores)
    e = [math.exp(s - m) for s in scores]
    total = sum(e)
    return [sum(e[j] / total * values[j][d] for j in range(len(keys))) for d in range(D)]


def row(flat, s, h, H, D):
    base = (s * H + h) * D
    return flat[base:base + D]


class KvCache(harness.DaemonTest):
    def assertClose(self, got, want):
        self.assertEqual(len(got), len(want))
        for i, (g, w) in enumerate(zip(got, want)):
            self.assertLessEqual(abs(g - w), 1e-5 + 1e-4 * abs(w), "element %d: %r != %r" % (i, g, w))

    def test_prefill_then_decode_from_another_connection(self):
        S, H, D, T = 5, 2, 8, 8
        rng = random.Random(4)

        def rand(n):
            # values exactly representable in f32, so the inputs are the same on both sides
            return [rng.randint(-64, 64) / 32.0 for _ in range(n)]

        q, k, v = rand(S * H * D), rand(S * H * D), rand(S * H * D)
        d = self.daemon()
        with d.client() as prefill:
            prefill.call("buffer.alloc", {"name": "kv", "bytes": 2 * T * H * D * 4})
            r = prefill.call("dispatch", {"program": "attention_prefill", "args": [
                {"data": f32(q)}, {"data": f32(k)}, {"data": f32(v)}, {"buffer": "kv"},
                {"out": S * H * D * 4}, {"scalar": S}, {"scalar": H}, {"scalar": D}]})
        self.assertEqual(r["tasks"], 3 * H + 2)
        out = unf32(r["outputs"][4])
        want = []
        for i in range(S):
            for h in range(H):
                want += attend(row(q, i, h, H, D), [row(k, j, h, H, D) for j in range(i + 1)],
                               [row(v, j, h, H, D) for j in range(i + 1)], D)
        self.assertClose(out, want)

        qn, kn, vn = rand(H * D), rand(H * D), rand(H * D)
        with d.client() as decode:  # the prefill connection is gone; the cache is not
            cache = unf32(decode.call("buffer.read", {"name": "kv"}))
            self.assertEqual(cache[:S * H * D], k)
            self.assertEqual(cache[T * H * D:T * H * D + S * H * D], v)
            r = decode.call("dispatch", {"program": "attention_decode", "args": [
                {"data": f32(qn)}, {"data": f32(kn)}, {"data": f32(vn)}, {"buffer": "kv"},
                {"out": H * D * 4}, {"scalar": S}, {"scalar": H}, {"scalar": D}]})
            self.assertEqual(r["tasks"], H + 2)
            out = unf32(r["outputs"][4])
            keys = k + kn
            values = v + vn
            want = []
            for h in range(H):
                want += attend(qn[h * D:(h + 1) * D],
                               [row(keys, j, h, H, D) for j in range(S + 1)],
                               [row(values, j, h, H, D) for j in range(S + 1)], D)
            self.assertClose(out, want)
            cache = unf32(decode.call("buffer.read", {"name": "kv"}))
            self.assertEqual(cache[S * H * D:(S + 1) * H * D], kn)
            self.assertEqual(cache[(T + S) * H * D:(T + S + 1) * H * D], vn)


if __name__ == "__main__":
    harness.main()
