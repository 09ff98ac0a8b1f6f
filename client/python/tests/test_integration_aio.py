# SPDX-License-Identifier: Apache-2.0
"""ptoclient.aio against the real ptod of this build tree (started by
tests/integration/harness.py): dispatch with the right answer, the buffer
methods, shared memory, many concurrent awaits on one connection, and
cancellation against a daemon of protocol 1.1 (which ignores the cancel
notification: the request runs, its answer is dropped, the connection
keeps working)."""

import asyncio
import os
import random
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
import ptoclient.aio  # noqa: E402
from ptoclient import Buffer, Data, Out, RunConfig, f32, from_f32  # noqa: E402
from ptoclient.errors import InvalidRequest, NotFound, UnknownProgram  # noqa: E402

T = 60  # per-call limit: only reached when something hangs


def rand_f32(n, seed):
    rng = random.Random(seed)
    return [rng.uniform(-1.0, 1.0) for _ in range(n)]


class AioDaemon(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = harness.Daemon(config={"daemon": {"shm_limit": "64M"}})

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def run_async(self, coro):
        return asyncio.run(asyncio.wait_for(coro, 120))

    def connect(self):
        return ptoclient.aio.connect(self.d.socket, timeout=T)

    def assertSums(self, out, a, b):
        got = list(from_f32(out))
        self.assertEqual(len(got), len(a))
        for g, x, y in zip(got, a, b):
            self.assertAlmostEqual(g, x + y, places=5)

    def test_vector_add(self):
        a, b = rand_f32(1000, 1), rand_f32(1000, 2)

        async def main():
            async with self.connect() as dev:
                self.assertEqual((await dev.ping())["state"], "ready")
                r = await dev.dispatch("vector_add", [Data(f32(a)), Data(f32(b)), Out(4000)],
                                       config=RunConfig(ring_heap=[2 << 20, 0, 0, 0]))
                self.assertSums(r["outputs"][2], a, b)
                self.assertEqual(r["sizing"]["source"]["ring_heap"][0], "request")
                with self.assertRaises(UnknownProgram):
                    await dev.dispatch("no_such_program", [])
                self.assertIn("# TYPE", await dev.metrics())
                self.assertIn("vector_add", {p["name"] for p in await dev.programs()})

        self.run_async(main())

    def test_buffers(self):
        init = bytes(range(64))

        async def main():
            async with self.connect() as dev:
                self.assertEqual(await dev.buffer_alloc("w", init=init), {"name": "w", "bytes": 64})
                self.assertEqual(await dev.buffer_read("w"), init)
                self.assertEqual((await dev.buffer_write("w", b"\xff\xfe", offset=8))["bytes"], 2)
                self.assertEqual(await dev.buffer_read("w", offset=7, nbytes=4),
                                 bytes([7, 0xFF, 0xFE, 10]))
                self.assertIn({"name": "w", "bytes": 64}, await dev.buffer_list())
                a = [1.0, 2.0, 3.0, 4.0]
                await dev.buffer_alloc("a", init=f32(a))
                r = await dev.dispatch("vector_add", [Buffer("a"), Buffer("a"), Out(16)])
                self.assertEqual(list(from_f32(r["outputs"][2])), [2.0, 4.0, 6.0, 8.0])
                self.assertEqual((await dev.buffer_free("w"))["bytes"], 64)
                with self.assertRaises(NotFound):
                    await dev.buffer_read("w")

        self.run_async(main())

    def test_shared_memory(self):
        async def main():
            async with self.connect() as dev:
                self.assertIn("shm", await dev.features())
                async with await dev.shm(36) as r:
                    r.buffer[0:24] = f32([1, 2, 3, 10, 20, 30])
                    res = await dev.dispatch("vector_add", [r[0:12], r[12:24], r[24:36].out()])
                    self.assertEqual(res["outputs"], [None, None, None])
                    self.assertEqual(list(from_f32(r.buffer[24:36])), [11.0, 22.0, 33.0])
                    self.assertIn({"name": r.name, "bytes": 36}, await dev.shm_list())
                    await dev.buffer_alloc("s", 12)
                    await dev.buffer_write("s", r[24:36])
                    self.assertEqual(await dev.buffer_read("s", into=r[0:12]), {"bytes": 12})
                    self.assertEqual(list(from_f32(r.buffer[0:12])), [11.0, 22.0, 33.0])
                self.assertEqual(await dev.shm_list(), [])

        self.run_async(main())

    def test_many_concurrent_awaits(self):
        n = 300

        async def one(dev, i):
            a, b = [float(i)] * 4, [0.5] * 4
            r = await dev.dispatch("vector_add", [Data(f32(a)), Data(f32(b)), Out(16)])
            return list(from_f32(r["outputs"][2]))

        async def main():
            async with self.connect() as dev:
                out = await asyncio.gather(*(one(dev, i) for i in range(n)))
                self.assertEqual(out, [[i + 0.5] * 4 for i in range(n)])
                self.assertEqual(dev._pending, {})

        self.run_async(main())

    def test_cancel_to_a_daemon_that_predates_it(self):
        # A protocol 1.1 daemon ignores the notification: the cancelled
        # requests run, their answers are dropped, the connection works on.
        async def main():
            async with self.connect() as dev:
                tasks = [asyncio.ensure_future(dev.dispatch("noop", [1000])) for _ in range(20)]
                await asyncio.sleep(0)  # let them be written
                for t in tasks:
                    t.cancel()
                out = await asyncio.gather(*tasks, return_exceptions=True)
                self.assertTrue(all(isinstance(e, asyncio.CancelledError) for e in out), out)
                self.assertEqual((await dev.ping())["state"], "ready")
                r = await dev.dispatch("vector_add", [Data(f32([1])), Data(f32([2])), Out(4)])
                self.assertEqual(list(from_f32(r["outputs"][2])), [3.0])
                self.assertEqual(dev._pending, {})
                self.assertFalse(dev.closed)

        self.run_async(main())

    def test_priority_to_a_daemon_that_predates_it(self):
        # Sent only when given; a protocol 1.1 daemon refuses it by name.
        async def main():
            async with self.connect() as dev:
                feats = await dev.features()
                if "priority" in feats:
                    self.skipTest("this daemon speaks protocol 1.2's priority")
                with self.assertRaises(InvalidRequest) as cm:
                    await dev.dispatch("noop", [1], priority=-1)
                self.assertIn("priority", str(cm.exception))
                self.assertEqual((await dev.dispatch("noop", [1]))["tasks"], 1)

        self.run_async(main())


if __name__ == "__main__":
    unittest.main()
