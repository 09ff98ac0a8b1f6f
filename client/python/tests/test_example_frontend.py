# SPDX-License-Identifier: Apache-2.0
"""examples/aio_frontend.py against the real ptod of this build tree:
concurrent HTTP clients get the right outputs (checked against a Python
reference of the attention), their request ids come back, and clients that
disconnect mid-generation have their queued decode step cancelled in the
daemon; afterwards no KV cache is left and the daemon's client memory is
back where it started."""

import asyncio
import json
import math
import os
import sys
import tempfile
import unittest

import aiohttp

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import aio_frontend as fe  # noqa: E402
import harness  # noqa: E402
import ptoclient.aio  # noqa: E402

URL = "http://frontend/generate"


def reference(seed, prompt, steps):
    """The outputs the front end must stream: causal attention over the
    toy model's positions, per head."""
    tokens = [fe.token_qkv(seed, pos) for pos in range(prompt + steps)]
    outs = []
    for pos in range(prompt + steps):
        out = []
        for h in range(fe.H):
            cut = slice(h * fe.D, (h + 1) * fe.D)
            q = tokens[pos][0][cut]
            scores = [sum(a * b for a, b in zip(q, tokens[j][1][cut])) / math.sqrt(fe.D)
                      for j in range(pos + 1)]
            top = max(scores)
            w = [math.exp(s - top) for s in scores]
            out += [sum(w[j] * tokens[j][2][cut][d] for j in range(pos + 1)) / sum(w)
                    for d in range(fe.D)]
        outs.append(out)
    return outs


async def until(predicate, what):
    """Await predicate() (a coroutine function) until it is true; the
    limit only ends a test that fails anyway."""
    for _ in range(60000):
        value = await predicate()
        if value:
            return value
        await asyncio.sleep(0.005)
    raise AssertionError("timed out waiting for " + what)


class FrontendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = harness.Daemon()

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def test_concurrent_clients_some_disconnecting(self):
        asyncio.run(asyncio.wait_for(self.scenario(), 600))

    async def scenario(self):
        rest = await self.first_status()
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "http.sock")
            async with ptoclient.aio.connect(self.d.socket, timeout=120) as dev, \
                    ptoclient.aio.connect(self.d.socket, timeout=120) as watcher:
                frontend = fe.Frontend(dev)
                runner = await fe.start_runner(frontend)
                try:
                    await aiohttp.web.UnixSite(runner, path).start()
                    await self.clients(frontend, watcher, path)
                finally:
                    await runner.cleanup()
                left = [b["name"] for b in await watcher.buffer_list()
                        if b["name"].startswith(fe.KV_PREFIX)]
                self.assertEqual(left, [])  # every KV cache freed

        async def at_rest():  # the closed connections left nothing behind
            return await self.first_status() == rest
        await until(at_rest, "the daemon's client memory back at rest")

    async def first_status(self):
        """client_memory as a new connection's first status sees it (the
        same bytes in flight each time: the status request itself)."""
        async with ptoclient.aio.connect(self.d.socket, timeout=120) as dev:
            st = await dev.status()
        mem = st["client_memory"]
        return st["clients"], mem["input"], mem["output"], st["shm"]["regions"]

    async def clients(self, frontend, watcher, path):
        features = await watcher.features()
        for hold_us in (2000000, 8000000, 32000000):
            async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path)) as http:
                if await self.round(frontend, watcher, http, hold_us, features):
                    break
            # The hold ended before the disconnects were handled (a loaded
            # machine, or a front end that only notices when it writes).
        else:
            self.fail("the front end never handled the disconnects while the device was held")

        async def idle():
            return frontend.active == 0
        await until(idle, "the generations to end")

    async def round(self, frontend, watcher, http, hold_us, features):
        """Four clients that read everything and three that disconnect once
        their next decode step waits behind a hold of the device; True when
        the hold lasted until the disconnects were handled."""
        gone_before, finished_before = frontend.disconnected, frontend.finished
        cancelled_before = self.cancelled(await watcher.status())
        jobs = [dict(prompt=3 + i, steps=6 + i, seed=10 + i) for i in range(4)]
        readers = [asyncio.ensure_future(self.read_all(http, job, "ok-%d" % i))
                   for i, job in enumerate(jobs)]
        leaving = []
        for i in range(3):
            resp = await http.post(URL, json=dict(prompt=4, steps=40, seed=20 + i),
                                   headers={"X-Request-Id": "gone-%d" % i})
            self.assertEqual(resp.headers["X-Request-Id"], "gone-%d" % i)
            json.loads(await resp.content.readline())  # the prefill ran
            leaving.append(resp)
        hold = await watcher.send("dispatch", self.hold_params(hold_us))

        async def held():
            return (await watcher.status())["queue"]["running"] == 1
        await until(held, "the hold to run")
        ran = (await watcher.status())["dispatches"]["ok"]  # grows once the hold ends

        async def all_waiting():  # every generation awaits a device call
            return (await watcher.status())["queue"]["depth"] >= frontend.active
        await until(all_waiting, "the generations to wait behind the hold")
        for resp in leaving:
            resp.close()  # the HTTP client goes away mid-generation

        async def settled():
            """"held" once the disconnects are handled (and with protocol
            1.2 their queued steps cancelled) while the hold runs, "ended"
            when the hold ended first."""
            st = await watcher.status()
            if st["dispatches"]["ok"] != ran:
                return "ended"
            if frontend.disconnected == gone_before + 3 and (
                    "cancel" not in features or self.cancelled(st) >= cancelled_before + 3):
                return "held"
            return None
        held_throughout = await until(settled, "the disconnects to be handled") == "held"
        await watcher.result(hold)
        for i, (job, lines) in enumerate(zip(jobs, await asyncio.gather(*readers))):
            self.check_stream(job, lines)
        self.assertEqual(frontend.finished, finished_before + 4)

        async def noticed():
            return frontend.disconnected == gone_before + 3
        await until(noticed, "the front end to see the disconnects")
        return held_throughout

    def hold_params(self, hold_us):
        """A noop that holds the device for hold_us at least (as
        harness.hold_device sends it)."""
        return harness.hold_params(self.d, hold_us)

    @staticmethod
    def cancelled(status):
        """The daemon's count of cancelled requests (protocol 1.2: status.queue.cancelled)."""
        return status["queue"]["cancelled"]

    async def read_all(self, http, job, rid):
        async with http.post(URL, json=job, headers={"X-Request-Id": rid}) as resp:
            self.assertEqual(resp.status, 200)
            self.assertEqual(resp.headers["X-Request-Id"], rid)
            return [json.loads(line) for line in (await resp.read()).splitlines()]

    def check_stream(self, job, lines):
        want = reference(job["seed"], job["prompt"], job["steps"])
        self.assertEqual(lines[-1], {"done": True})
        self.assertEqual([x["pos"] for x in lines[:-1]], list(range(len(want))))
        for line, out in zip(lines, want):
            for g, w in zip(line["out"], out):
                self.assertAlmostEqual(g, w, places=4)


class BadRequests(unittest.TestCase):
    def test_bad_request_ids_and_bodies(self):
        async def main():
            d = harness.Daemon()
            try:
                async with ptoclient.aio.connect(d.socket, timeout=60) as dev:
                    runner = await fe.start_runner(fe.Frontend(dev))
                    with tempfile.TemporaryDirectory() as tmp:
                        path = os.path.join(tmp, "http.sock")
                        await aiohttp.web.UnixSite(runner, path).start()
                        try:
                            await self.bad_requests(path)
                        finally:
                            await runner.cleanup()
            finally:
                d.stop()
        asyncio.run(asyncio.wait_for(main(), 300))

    async def bad_requests(self, path):
        async with aiohttp.ClientSession(connector=aiohttp.UnixConnector(path)) as http:
            for headers, body in (({"X-Request-Id": "x" * 65}, {"prompt": 2}),
                                  ({"X-Request-Id": "tab\there"}, {"prompt": 2}),
                                  ({}, {"prompt": 0}),
                                  ({}, {"prompt": 2, "steps": fe.MAX_TOKENS}),
                                  ({}, {"steps": 2}),
                                  ({}, [1, 2])):
                async with http.post(URL, json=body, headers=headers) as resp:
                    self.assertEqual(resp.status, 400, (headers, body))
            async with http.post(URL, json={"prompt": 2, "steps": 1}) as resp:
                self.assertEqual(resp.status, 200)
                self.assertTrue(resp.headers["X-Request-Id"].startswith("gen-"))
                self.assertEqual(len((await resp.read()).splitlines()), 4)


if __name__ == "__main__":
    unittest.main()
