#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The per-task ring sizing usage of PyPTO's docs, ported to ptod.

PyPTO's L2 example runs one program with a RunConfig that names the
platform and sizes the rings; its L3 example prepares a worker with the
prefill sizing (prewarm), then dispatches prefill and decode with their own
configs.  The same habits on ptod (one daemon per device; "prepare" is the
daemon's prewarm method; the program is vector_add instead of a compiled
kernel):

    pypto_habits.py [--platform a2a3sim]      # the daemon: $PTOD_SOCKET, else device 0's

A PyPTO RunConfig object works wherever a ptoclient one goes (duck-typed:
its ring_* and DFX attributes are used, its compile-side fields ignored, as
PyPTO's own L3 dispatch path ignores them).  On ptod's CPU simulation use a
simulation platform (a2a3sim, a5sim); platform="a2a3" is refused there by
name before anything runs.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ptoclient  # noqa: E402
from ptoclient import Client, Data, Out, RunConfig, f32, from_f32  # noqa: E402


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--platform", default="a2a3sim")
    opts = ap.parse_args(argv)
    a, b = f32([1, 2, 3, 4]), f32([10, 20, 30, 40])
    args = [Data(a), Data(b), Out(len(a))]

    # L2 single-chip: run(MyProgram, a, b, c, config=RunConfig(...))
    r = ptoclient.run("vector_add", args, config=RunConfig(
        platform=opts.platform,
        ring_task_window=128,        # 128 in-flight task slots
        ring_heap=8 * 1024 * 1024,   # 8 MiB output heap per ring
        ring_dep_pool=256,           # 256 dependency-edge entries
    ))
    print("L2 out", list(from_f32(r["outputs"][2])), "ring_task_window",
          r["sizing"]["ring_task_window"], r["sizing"]["source"]["ring_task_window"])

    # L3: with compiled.prepare(prefill_cfg) as rt: rt(..., config=prefill_cfg) ...
    prefill_cfg = RunConfig(platform=opts.platform, ring_task_window=256)
    decode_cfg = RunConfig(platform=opts.platform, ring_task_window=64)
    with Client() as rt:
        rt.prewarm(prefill_cfg)                          # setup once + prewarm
        r1 = rt.dispatch("vector_add", args, config=prefill_cfg)  # large window for prefill
        r2 = rt.dispatch("vector_add", args, config=decode_cfg)   # smaller window for decode
    print("L3 prefill hit", r1["arena"]["hit"], "window", r1["sizing"]["ring_task_window"])
    print("L3 decode hit", r2["arena"]["hit"], "window", r2["sizing"]["ring_task_window"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
