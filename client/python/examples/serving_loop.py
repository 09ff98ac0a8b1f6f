#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""A toy serving loop against ptod: resident weights, a resident KV cache,
one prefill and several decode steps, each dispatch with its own ring sizing.

    serving_loop.py [--socket PATH | --device N] [--steps N] [--no-check]

1. Upload the projection weights Wq, Wk, Wv [E, H*D] once into resident
   buffers (buffer.alloc with init), allocate the KV cache kv [2, T, H, D]
   and scratch buffers for q, k, v -- all stay on the device.
2. Prefill: three pipelined matmul dispatches project the prompt x [S, E]
   into the q/k/v buffers, then attention_prefill fills kv[:, 0:S] and
   returns the prompt's attention output.  Sizing: a bigger ring 0 heap (the
   list form) for the score tensors.
3. Decode: per step, three matmuls project the new token into slices of the
   q/k/v buffers, and attention_decode appends its k/v at `pos` and attends
   over the cache.  Sizing: a small task window.

Every dispatch prints whether the daemon's arena cache hit, and where each
ring value came from (request / env / config / default).  The daemon keeps
one arena per sizing at a time, so switching sizings between prefill and
decode costs one rebuild -- visible below as a miss; a real server would
prewarm its first dispatch's sizing and keep one sizing for all the
dispatches that share its resident state.  With --check (default) the
outputs are compared with a plain Python reference.
"""

import argparse
import math
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ptoclient import (AlreadyExists, Buffer, Client, Data, Out, PtoError,  # noqa: E402
                       RunConfig, f32, from_f32)

E, H, D = 32, 2, 16   # model width, heads, head dimension
HD = H * D
PREFIX = "serving-loop."

PREFILL_CFG = RunConfig(ring_heap=[4 << 20, 0, 0, 0], ring_task_window=[64, 0, 0, 0])
DECODE_CFG = RunConfig(ring_task_window=16)


def size_text(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return "%d %s" % (n >> shift, unit)
    return "%d B" % n


def sizing_text(sizing):
    """task_window=64,256,256,256 (request,config,config,config) heap=1 MiB (config) ...:
    one value or source when all four rings agree."""
    parts = []
    for field in ("ring_task_window", "ring_heap", "ring_dep_pool"):
        values = sizing.get(field, [])
        shown = [size_text(v) if field == "ring_heap" else str(v) for v in values]
        text = "%s=%s" % (field[5:], shown[0] if len(set(shown)) == 1 else ",".join(shown))
        sources = sizing.get("source", {}).get(field)
        if sources:
            text += " (%s)" % (sources[0] if len(set(sources)) == 1 else ",".join(sources))
        parts.append(text)
    return "  ".join(parts)


def report(what, result):
    arena = result["arena"]
    print("  %-18s arena %-4s build %4d us  run %4d us  %s"
          % (what, "hit" if arena["hit"] else "MISS", arena["build_us"],
             result["timing_us"]["run"], sizing_text(result["sizing"])))


def matmul_ref(x, w, m, n, k):
    return [sum(x[i * k + p] * w[p * n + j] for p in range(k)) for i in range(m) for j in range(n)]


def attend_ref(q, keys, values):
    scores = [sum(a * b for a, b in zip(q, kk)) / math.sqrt(D) for kk in keys]
    top = max(scores)
    w = [math.exp(s - top) for s in scores]
    total = sum(w)
    return [sum(w[j] * values[j][d] for j in range(len(keys))) / total for d in range(D)]


def max_error(got, want):
    return max(abs(g - w) for g, w in zip(got, want))


def alloc(client, name, nbytes=None, init=None):
    """buffer.alloc, replacing a leftover of an earlier run that died."""
    try:
        return client.buffer_alloc(PREFIX + name, nbytes, init)
    except AlreadyExists:
        client.buffer_free(PREFIX + name)
        return client.buffer_alloc(PREFIX + name, nbytes, init)


def run(client, S, steps, check):
    rng = random.Random(7)
    T = S + steps

    def rand(n, scale=0.3):
        return [rng.uniform(-scale, scale) for _ in range(n)]

    weights = {name: rand(E * HD) for name in ("wq", "wk", "wv")}
    names = list(weights) + ["q", "k", "v", "kv"]
    errors = []
    try:
        print("upload: weights and buffers stay resident in the daemon")
        for name, w in weights.items():
            alloc(client, name, init=f32(w))
        for name in ("q", "k", "v"):
            alloc(client, name, S * HD * 4)
        alloc(client, "kv", 2 * T * HD * 4)
        for b in client.buffer_list():
            if b["name"].startswith(PREFIX):
                print("  %-24s %s" % (b["name"], size_text(b["bytes"])))

        arena = client.prewarm(PREFILL_CFG)
        print("prewarm: the first dispatch's sizing, so it does not pay the arena build")
        print("  arena build %d us  %s" % (arena["build_us"], sizing_text(arena["sizing"])))

        # ---- prefill -------------------------------------------------------
        print("prefill: S=%d H=%d D=%d, config %r" % (S, H, D, PREFILL_CFG))
        x = rand(S * E, 1.0)
        ids = [client.send_dispatch("matmul", [Data(f32(x)), Buffer(PREFIX + w),
                                               Buffer(PREFIX + out), S, HD, E],
                                    config=PREFILL_CFG)
               for w, out in (("wq", "q"), ("wk", "k"), ("wv", "v"))]
        for out, result in zip("qkv", client.gather(ids)):
            report("matmul -> " + out, result)
        r = client.dispatch("attention_prefill",
                            [Buffer(PREFIX + "q"), Buffer(PREFIX + "k"), Buffer(PREFIX + "v"),
                             Buffer(PREFIX + "kv"), Out(S * HD * 4), S, H, D],
                            config=PREFILL_CFG)
        report("attention_prefill", r)
        if check:
            q, k, v = (matmul_ref(x, weights[w], S, HD, E) for w in ("wq", "wk", "wv"))
            keys = [[k[(j * H + h) * D:(j * H + h + 1) * D] for j in range(S)] for h in range(H)]
            values = [[v[(j * H + h) * D:(j * H + h + 1) * D] for j in range(S)] for h in range(H)]
            got = list(from_f32(r["outputs"][4]))
            for i in range(S):
                for h in range(H):
                    base = (i * H + h) * D
                    want = attend_ref(q[base:base + D], keys[h][:i + 1], values[h][:i + 1])
                    errors.append(max_error(got[base:base + D], want))

        # ---- decode --------------------------------------------------------
        print("decode: %d steps sharing the resident KV cache, config %r" % (steps, DECODE_CFG))
        for pos in range(S, T):
            x = rand(E, 1.0)
            ids = [client.send_dispatch("matmul", [Data(f32(x)), Buffer(PREFIX + w),
                                                   Buffer(PREFIX + out, 0, HD * 4), 1, HD, E],
                                        config=DECODE_CFG)
                   for w, out in (("wq", "q"), ("wk", "k"), ("wv", "v"))]
            for result in client.gather(ids):
                report("matmul (pos %d)" % pos, result)
            r = client.dispatch("attention_decode",
                                [Buffer(PREFIX + "q", 0, HD * 4), Buffer(PREFIX + "k", 0, HD * 4),
                                 Buffer(PREFIX + "v", 0, HD * 4), Buffer(PREFIX + "kv"),
                                 Out(HD * 4), pos, H, D],
                                config=DECODE_CFG)
            report("attention_decode", r)
            if check:
                q, k, v = (matmul_ref(x, weights[w], 1, HD, E) for w in ("wq", "wk", "wv"))
                got = list(from_f32(r["outputs"][4]))
                for h in range(H):
                    keys[h].append(k[h * D:(h + 1) * D])
                    values[h].append(v[h * D:(h + 1) * D])
                    want = attend_ref(q[h * D:(h + 1) * D], keys[h], values[h])
                    errors.append(max_error(got[h * D:(h + 1) * D], want))
    finally:
        for name in names:
            try:
                client.buffer_free(PREFIX + name)
            except PtoError:
                pass
    if check:
        worst = max(errors)
        if worst > 1e-3:
            print("output differs from the reference: max error %.3g" % worst)
            return 1
        print("output matches the reference (max error %.2g)" % worst)
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--socket", help="the daemon's socket (default: the device's)")
    ap.add_argument("--device", type=int, default=0, help="device number (default 0)")
    ap.add_argument("--prompt", type=int, default=8, help="prompt length S (default 8)")
    ap.add_argument("--steps", type=int, default=4, help="decode steps (default 4)")
    ap.add_argument("--no-check", dest="check", action="store_false",
                    help="skip the comparison with the Python reference")
    opts = ap.parse_args()
    try:
        with Client(opts.socket, device=opts.device, timeout=60) as client:
            return run(client, opts.prompt, opts.steps, opts.check)
    except PtoError as exc:
        print("error: %s" % exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
