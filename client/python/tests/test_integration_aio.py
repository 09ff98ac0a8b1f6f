# SPDX-License-Identifier: Apache-2.0
"""ptoclient.aio against the real ptod of this build tree (started by
tests/integration/harness.py): dispatch with the right answer, the buffer
methods, shared memory, a thousand concurrent awaits on one connection,
asyncio.wait_for cancelling a queued dispatch (which a daemon of protocol
1.2 then never runs; one of 1.1 ignores the cancel notification: the
request runs, its answer is dropped, the connection keeps working), the
daemon exiting under requests in flight (each fails once), and priority
and request_id with a daemon of 1.2."""

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
from ptoclient.errors import (ConnectionLost, InvalidRequest, NotFound,  # noqa: E402
                              UnknownProgram)

T = 240  # per-call limit: only reached when something hangs (a sanitizer build on a loaded machine is slow)


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

    def test_a_thousand_concurrent_awaits_on_one_connection(self):
        n = 1000

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

    def test_priority_and_request_id_with_a_daemon_of_1_2(self):
        async def main():
            async with self.connect() as dev:
                feats = await dev.features()
                if "priority" not in feats or "request_id" not in feats:
                    self.skipTest("this daemon predates protocol 1.2's priority and request_id")
                r = await dev.dispatch("noop", [1], priority=-1, request_id="req-7")
                self.assertEqual((r["tasks"], r["request_id"]), (1, "req-7"))
                with self.assertRaises(NotFound) as cm:
                    await dev.buffer_free("no-such-buffer", priority=3, request_id="req-8")
                self.assertEqual(cm.exception.detail.get("request_id"), "req-8")

        self.run_async(main())

    async def hold(self, watcher, hold_us):
        """A noop on watcher that holds the device (as harness.hold_device);
        returns its msgid once it runs."""
        rounds = -(-hold_us // harness.NOOP_MAX_TASK_US)
        workers = int(self.d.sections["device"].get("cores", "1")) + 1
        msgid = await watcher.send("dispatch", harness.noop(
            tasks=rounds * workers if rounds > 1 else 1, task_us=hold_us // rounds))
        while (await watcher.status())["queue"]["running"] != 1:
            await asyncio.sleep(0.005)
        return msgid

    def test_wait_for_cancels_a_queued_dispatch(self):
        # asyncio.wait_for expiring cancels the awaiting task: the client
        # sends cancel, and a protocol 1.2 daemon never runs the dispatch.
        async def main():
            async with self.connect() as dev, self.connect() as watcher:
                cancels = "cancel" in await watcher.features()
                for hold_us in (1000000, 4000000, 16000000):
                    ok = (await watcher.status())["dispatches"]["ok"]
                    hold = await self.hold(watcher, hold_us)
                    with self.assertRaises(asyncio.TimeoutError):
                        await asyncio.wait_for(dev.dispatch("noop", [1]), 0.05)
                    await dev.ping()  # the cancel is read before this answer
                    held = (await watcher.status())["dispatches"]["ok"] == ok  # nothing ran yet
                    await watcher.result(hold)
                    for _ in range(2):  # the connection works on
                        self.assertEqual((await dev.dispatch("noop", [1]))["tasks"], 1)
                    self.assertEqual(dev._pending, {})
                    if held:
                        break  # else the hold ended first (a loaded machine): longer
                else:
                    self.fail("no hold outlasted the wait_for")
                if cancels:  # the hold and the two noops after it ran, not the cancelled one
                    self.assertEqual((await watcher.status())["dispatches"]["ok"], ok + 3)

        self.run_async(main())

    def test_a_daemon_exit_with_requests_in_flight_fails_each_once(self):
        d = harness.Daemon()

        async def main():
            async with ptoclient.aio.connect(d.socket, timeout=T) as dev, \
                    ptoclient.aio.connect(d.socket, timeout=T) as watcher:
                await self.hold_on(d, watcher)
                tasks = [asyncio.ensure_future(dev.dispatch("noop", [1])) for _ in range(50)]
                while (await watcher.status())["queue"]["depth"] < 50:
                    await asyncio.sleep(0.005)
                d.proc.kill()  # the connection ends under 50 waiting requests
                out = await asyncio.gather(*tasks, return_exceptions=True)
                self.assertTrue(all(isinstance(e, ConnectionLost) for e in out), out)
                self.assertTrue(dev.closed)
                with self.assertRaises(ConnectionLost):
                    await dev.ping()
        try:
            self.run_async(main())
        finally:
            d.stop()

    async def hold_on(self, d, watcher):
        """A hold of d's device long enough never to end in this test."""
        await watcher.send("dispatch", harness.noop(tasks=3, task_us=harness.NOOP_MAX_TASK_US))
        while (await watcher.status())["queue"]["running"] != 1:
            await asyncio.sleep(0.005)


if __name__ == "__main__":
    unittest.main()
