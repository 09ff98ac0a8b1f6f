# SPDX-License-Identifier: Apache-2.0
"""ptoclient.aio against the fake msgpack-RPC server (tests/fake_server.py):
many concurrent awaits answered out of order, cancellation (the daemon is
told, the late answer dropped), timeouts, a connection reset with requests
in flight, writes that wait for a full socket, the CANCELLED error, and
priority / request_id checked before anything is sent."""

import asyncio
import collections
import os
import random
import socket
import sys
import threading
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from fake_server import FakeServer, ok_result  # noqa: E402
import ptoclient.aio  # noqa: E402
from ptoclient import Data, RunConfig  # noqa: E402
from ptoclient.errors import (CallTimeout, Cancelled, ConnectFailed, ConnectionLost,  # noqa: E402
                              HeapRingDeadlock, PermissionDenied, ProtocolError, PtoError,
                              Unsupported)

T = 60  # only reached when something is broken (a loaded machine is slow)


class AioBase(unittest.TestCase):
    def server(self, **kw):
        s = FakeServer(**kw)
        self.addCleanup(s.close)
        return s

    def run_async(self, coro):
        return asyncio.run(asyncio.wait_for(coro, 60))

    async def wait_until(self, what, cond):
        """Let the loop run until cond() holds (never a fixed sleep)."""
        for _ in range(100000):
            if cond():
                return
            await asyncio.sleep(0.001)
        self.fail("never happened: " + what)


def holding(held):
    """A handler that answers everything but dispatch, whose msgids it
    keeps in held (conn, msgid) for the test to answer."""
    def handler(conn, msgid, method, params):
        if method == "dispatch":
            held.append((conn, msgid, params))
        else:
            conn.respond(msgid, ok_result(method, params))
    return handler


class Concurrency(AioBase):
    def test_a_thousand_concurrent_awaits_answered_out_of_order(self):
        n = 1000
        held = []
        all_in = threading.Event()

        def handler(conn, msgid, method, params):
            if method != "dispatch":
                return conn.respond(msgid, ok_result(method, params))
            held.append((conn, msgid, params))
            if len(held) == n:
                all_in.set()
                order = list(held)
                random.Random(7).shuffle(order)
                for c, m, p in order:
                    c.respond(m, {"seen": p["args"][0]["scalar"]})

        s = self.server(handler=handler)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                out = await asyncio.gather(*(dev.dispatch("noop", [i]) for i in range(n)))
                self.assertEqual([r["seen"] for r in out], list(range(n)))
                self.assertEqual(dev._pending, {})
                self.assertEqual(await dev.ping(), ok_result("ping", None))

        self.run_async(main())
        self.assertTrue(all_in.is_set())
        self.assertEqual(len({m for _, m, _ in held}), n)  # one msgid each

    def test_an_answer_resumes_its_task_in_the_loop_pass_that_read_it(self):
        # Back to back, a call costs the event loop one pass (the one whose
        # reader callback reads its answer), not a second one to resume
        # the task that awaits it.
        n = 200
        s = self.server()

        class CountingLoop(asyncio.SelectorEventLoop):
            passes = 0

            def _run_once(self):
                self.passes += 1
                super()._run_once()

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                await dev.ping()
                before = loop.passes
                for i in range(n):
                    self.assertEqual((await dev.dispatch("noop", [i]))["echo"]["args"][0],
                                     {"scalar": i})
                return loop.passes - before

        loop = CountingLoop()
        try:
            passes = loop.run_until_complete(asyncio.wait_for(main(), 60))
        finally:
            loop.close()
        self.assertLess(passes, n * 3 // 2)  # n and a few, where a Future would take 2 n

    def test_pipelined_send_and_result(self):
        s = self.server()

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                ids = [await dev.send_dispatch("noop", [i]) for i in range(5)]
                self.assertEqual(len(set(ids)), 5)
                out = await dev.gather(reversed(ids))
                self.assertEqual([r["echo"]["args"][0]["scalar"] for r in out], [4, 3, 2, 1, 0])
                with self.assertRaises(ValueError):
                    await dev.result(ids[0])  # collected once

        self.run_async(main())


    def test_requests_made_together_are_written_together_and_whole(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                first = asyncio.ensure_future(dev.dispatch("noop", [0]))
                await self.wait_until("the first request", lambda: held)
                # made in one loop step while another is in flight: batched,
                # and one that msgpack cannot encode fails alone
                calls = [dev.call("status", {"i": i}) for i in range(100)]
                calls.insert(50, dev.call("status", {"bad": object()}))
                out = await asyncio.gather(*calls, return_exceptions=True)
                self.assertIsInstance(out[50], TypeError)
                del out[50]
                self.assertEqual([r["params"] for r in out], [{"i": i} for i in range(100)])
                held[0][0].respond(held[0][1], {"first": True})
                self.assertEqual(await first, {"first": True})

        self.run_async(main())

class Cancellation(AioBase):
    def test_wait_for_sends_cancel_for_its_msgid_and_reraises(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                task = asyncio.ensure_future(dev.dispatch("noop", [1]))
                await self.wait_until("the request reaches the server", lambda: held)
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(task, 0.05)  # the server never answers it
                self.assertTrue(task.cancelled())
                await self.wait_until("the cancel reaches the server", lambda: s.notes)
                self.assertEqual(s.notes, [("cancel", [{"msgid": held[0][1]}])])

        self.run_async(main())

    def test_cancelling_the_task_sends_cancel(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                tasks = [asyncio.ensure_future(dev.dispatch("noop", [i])) for i in range(3)]
                await self.wait_until("three requests", lambda: len(held) == 3)
                tasks[1].cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await tasks[1]
                await self.wait_until("the cancel", lambda: s.notes)
                self.assertEqual(s.notes, [("cancel", [{"msgid": held[1][1]}])])
                for conn, msgid, params in (held[0], held[2]):
                    conn.respond(msgid, {"n": params["args"][0]["scalar"]})
                self.assertEqual([(await t)["n"] for t in (tasks[0], tasks[2])], [0, 2])

        self.run_async(main())

    def test_the_late_answer_of_a_cancelled_request_is_dropped(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                task = asyncio.ensure_future(dev.dispatch("noop", [1]))
                await self.wait_until("the request", lambda: held)
                task.cancel()
                await self.wait_until("the cancel", lambda: s.notes)
                conn, msgid, _ = held[0]
                self.assertEqual(dev._dropped, {msgid})
                # the daemon's answer crosses the cancel: it is read and dropped
                conn.respond(msgid, None, {"code": 1012, "name": "CANCELLED",
                                           "message": "cancelled", "msgid": msgid})
                self.assertEqual(await dev.ping(), ok_result("ping", None))
                self.assertEqual(dev._dropped, set())
                self.assertFalse(dev.closed)
                # a msgid given back by a late answer is not reused while dropped
                later = asyncio.ensure_future(dev.dispatch("noop", [2]))
                await self.wait_until("the next request", lambda: len(held) == 2)
                self.assertNotEqual(held[1][1], msgid)
                held[1][0].respond(held[1][1], {"ok": 2})
                self.assertEqual(await later, {"ok": 2})

        self.run_async(main())

    def test_a_call_timeout_sends_cancel_and_raises_call_timeout(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                with self.assertRaises(CallTimeout) as cm:
                    await dev.dispatch("noop", [1], timeout=0.05)
                self.assertIsInstance(cm.exception, TimeoutError)
                self.assertIn("A cancel was sent", str(cm.exception))
                await self.wait_until("the cancel", lambda: s.notes)
                self.assertEqual(s.notes, [("cancel", [{"msgid": held[0][1]}])])
                self.assertEqual((await dev.ping())["state"], "ready")

        self.run_async(main())

    def test_each_call_expires_at_its_own_deadline(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                # made in order of a long, a short and no timeout: only the
                # short one expires, whatever the order of creation
                long_ = asyncio.ensure_future(dev.dispatch("noop", [0], timeout=T))
                short = asyncio.ensure_future(dev.dispatch("noop", [1], timeout=0.05))
                never = asyncio.ensure_future(dev.dispatch("noop", [2], timeout=None))
                await self.wait_until("three requests", lambda: len(held) == 3)
                with self.assertRaises(CallTimeout):
                    await short
                await self.wait_until("the cancel", lambda: s.notes)
                self.assertEqual(s.notes, [("cancel", [{"msgid": held[1][1]}])])
                self.assertFalse(long_.done() or never.done())
                for conn, msgid, params in (held[0], held[2]):
                    conn.respond(msgid, {"n": params["args"][0]["scalar"]})
                self.assertEqual(((await long_)["n"], (await never)["n"]), (0, 2))
                # answered calls leave nothing behind for the deadline timer
                self.assertEqual(dev._pending, {})

        self.run_async(main())

    def test_a_deadline_after_a_sooner_one_given_up_still_expires(self):
        held = []
        s = self.server(handler=holding(held))

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                first = asyncio.ensure_future(dev.dispatch("noop", [0], timeout=0.3))
                await asyncio.sleep(0)  # its request is written
                first.cancel()
                with self.assertRaises((asyncio.CancelledError, CallTimeout)):
                    await first
                # The deadline timer is still armed for the first call's
                # deadline: firing, it finds nothing due and arms itself
                # for this later one.
                with self.assertRaises(CallTimeout):
                    await dev.dispatch("noop", [1], timeout=0.6)
                await self.wait_until("two cancels", lambda: len(s.notes) == 2)
                self.assertEqual([p[0]["msgid"] for _, p in s.notes], [held[0][1], held[1][1]])
                self.assertEqual(dev._pending, {})

        self.run_async(main())

    def test_cancelled_maps_to_its_exception(self):
        held = []

        def on_note(conn, method, params):
            msgid = params[0]["msgid"]
            conn.respond(msgid, None, {"code": 1012, "name": "CANCELLED", "msgid": msgid,
                                       "message": "The request was cancelled before it ran."})

        s = self.server(handler=holding(held), on_note=on_note)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                msgid = await dev.send_dispatch("noop", [1])
                dev.cancel(msgid)
                with self.assertRaises(Cancelled) as cm:
                    await dev.result(msgid)
                self.assertEqual((cm.exception.code, cm.exception.name), (1012, "CANCELLED"))
                self.assertEqual(cm.exception.detail["msgid"], msgid)
                self.assertIsInstance(cm.exception, PtoError)
                dev.cancel(msgid)  # answered: nothing is sent
                self.assertEqual((await dev.ping())["state"], "ready")
                self.assertEqual(len(s.notes), 1)

        self.run_async(main())


class Failures(AioBase):
    def test_a_reset_with_requests_in_flight_fails_each_once(self):
        n = 20
        held = []
        unread = threading.Event()

        def handler(conn, msgid, method, params):
            held.append((conn, msgid, params))
            if len(held) == n:
                # Close with the client's next request unread: a Unix socket
                # then resets the connection (ECONNRESET on the client's side).
                unread.wait(T)
                conn.sock.close()

        s = self.server(handler=handler)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                tasks = [asyncio.ensure_future(dev.dispatch("noop", [i])) for i in range(n)]
                await self.wait_until("every request", lambda: len(held) == n)
                last = await dev.send("ping")  # written whole: in the server's socket buffer
                unread.set()
                out = await asyncio.gather(*tasks, dev.result(last), return_exceptions=True)
                self.assertTrue(all(isinstance(e, ConnectionLost) for e in out), out)
                self.assertEqual(len({id(e) for e in out}), n + 1)  # one error each
                for i, e in enumerate(out[:n]):
                    self.assertEqual("No answer to dispatch (msgid %d): The connection to ptod at "
                                     "%s failed: Connection reset by peer." % (held[i][1], s.path),
                                     str(e).split(": ", 1)[1])
                self.assertTrue(dev.closed)
                with self.assertRaises(ConnectionLost):
                    await dev.ping()

        self.run_async(main())

    def test_error_notification_and_garbage(self):
        for sent, cls in (([2, "error", [{"code": 1010, "name": "PERMISSION_DENIED",
                                          "message": "no"}]], PermissionDenied),
                          ([7, 7], ProtocolError)):
            held = []
            s = self.server(handler=holding(held))

            async def main():
                async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                    tasks = [asyncio.ensure_future(dev.dispatch("noop", [i])) for i in range(3)]
                    await self.wait_until("the requests", lambda: len(held) == 3)
                    held[0][0].send(sent)
                    out = await asyncio.gather(*tasks, return_exceptions=True)
                    self.assertTrue(all(type(e) is cls for e in out), out)
                    with self.assertRaises(cls):
                        await dev.ping()

            self.run_async(main())

    def test_daemon_errors_raise_their_class(self):
        def handler(conn, msgid, method, params):
            conn.respond(msgid, None, {"code": 2, "name": "HEAP_RING_DEADLOCK", "ring": 1,
                                       "message": "ring 1 heap exhausted"})

        s = self.server(handler=handler)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                with self.assertRaises(HeapRingDeadlock) as cm:
                    await dev.dispatch("noop", [1])
                self.assertEqual(cm.exception.ring, 1)
                self.assertFalse(dev.closed)

        self.run_async(main())

    def test_connect(self):
        s = self.server()

        async def main():
            with mock.patch.dict(os.environ, {"PTOD_SOCKET": s.path}):
                dev = await ptoclient.aio.connect(timeout=T)
            self.assertEqual(dev.socket_path, s.path)
            self.assertEqual((await dev.ping())["state"], "ready")
            await dev.close()
            await dev.close()
            with self.assertRaises(ConnectionLost):
                await dev.ping()
            with self.assertRaises(ConnectFailed) as cm:
                await ptoclient.aio.connect(os.path.join(s.dir, "none.sock"))
            self.assertIn("no such socket", str(cm.exception))

        self.run_async(main())


class FullSocket(AioBase):
    def test_writes_wait_for_a_full_socket_then_resume(self):
        gate = threading.Event()
        s = self.server(on_connect=lambda conn: gate.wait(T) or True)
        big = b"\x5a" * (8 << 20)  # far more than a socket buffer holds

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                sending = asyncio.ensure_future(dev.send_dispatch("noop", [Data(big)]))
                await self.wait_until("the socket fills", lambda: dev._wants_write)
                calls = [asyncio.ensure_future(dev.dispatch("noop", [i])) for i in range(50)]
                # a call given up while queued is never sent (and needs no cancel)
                with self.assertRaises(CallTimeout) as cm:
                    await dev.dispatch("noop", [99], timeout=0.01)
                self.assertIn("Nothing was sent", str(cm.exception))
                await asyncio.sleep(0)
                self.assertFalse(sending.done())
                # only the message being written is held as bytes; the 50
                # behind it wait unpacked
                self.assertEqual(len(dev._queue), 51)
                self.assertEqual([c.total > 0 for c in dev._queue], [True] + [False] * 50)
                gate.set()
                msgid = await sending
                out = await asyncio.gather(*calls)
                self.assertEqual([r["echo"]["args"][0]["scalar"] for r in out], list(range(50)))
                self.assertEqual(len((await dev.result(msgid))["echo"]["args"][0]["data"]),
                                 len(big))
                self.assertFalse(dev._wants_write)

        self.run_async(main())
        self.assertEqual([p["args"][0].get("scalar") for m, p in s.requests][1:],
                         list(range(50)))  # 99 never reached the server
        self.assertEqual(s.notes, [])


    def test_a_request_made_alone_that_the_socket_takes_in_part_is_finished_later(self):
        gate = threading.Event()
        s = self.server(on_connect=lambda conn: gate.wait(T) or True)
        data = b"\x33" * (100 << 10)  # inline (under BULK_MIN), more than the buffer below

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                dev._sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
                call = asyncio.ensure_future(dev.dispatch("noop", [Data(data)]))
                await self.wait_until("the socket fills", lambda: dev._wants_write)
                self.assertEqual(len(dev._queue), 1)  # the rest of it, waiting for room
                gate.set()
                self.assertEqual((await call)["echo"]["args"][0]["data"], data)
                self.assertFalse(dev._wants_write)
                self.assertEqual(dev._queue, collections.deque())

        self.run_async(main())

    def test_a_request_written_in_part_at_its_timeout_is_finished_then_cancelled(self):
        gate = threading.Event()
        held = []
        s = self.server(handler=holding(held), on_connect=lambda conn: gate.wait(T) or True)
        big = b"\xa5" * (8 << 20)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                with self.assertRaises(CallTimeout):
                    await dev.send_dispatch("noop", [Data(big)], timeout=0.05)
                self.assertFalse(dev.closed)  # the stream stays whole: no need to close
                gate.set()
                self.assertEqual((await dev.ping())["state"], "ready")
                await self.wait_until("the cancel", lambda: s.notes)

        self.run_async(main())
        self.assertEqual(len(held), 1)
        self.assertEqual(held[0][2]["args"][0]["data"], big)  # written whole, then
        self.assertEqual(s.notes, [("cancel", [{"msgid": held[0][1]}])])


class Helpers(AioBase):
    def test_bench_and_the_where_check(self):
        def handler(conn, msgid, method, params):
            if method == "status":
                conn.respond(msgid, {"device": 0, "platform": "sim", "state": "ready"})
            else:
                conn.respond(msgid, ok_result(method, params))

        s = self.server(handler=handler)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                b = await dev.bench("noop", [1], config={"ring_heap": 2048}, repeat=3, warmup=2)
                self.assertEqual((b["repeat"], len(b["wall_us"]), b["arena_hits"]), (3, 3, 3))
                self.assertEqual(b["config"], {"ring_heap": 2048})
                with self.assertRaises(ValueError) as cm:
                    await dev.dispatch("noop", [1], config=RunConfig(device_id=1))
                self.assertIn("it owns device 0", str(cm.exception))
                r = await dev.dispatch("noop", [1], config=RunConfig(ring_heap=4096, device_id=0))
                self.assertEqual(r["echo"]["config"], {"ring_heap": 4096})

        self.run_async(main())
        self.assertEqual([m for m, _ in s.requests].count("status"), 1)  # asked once
        self.assertEqual(len([m for m, _ in s.requests if m == "dispatch"]), 6)


class ServingKeys(AioBase):
    def test_priority_and_request_id_are_sent_only_when_given(self):
        s = self.server()

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                r = await dev.dispatch("noop", [1], priority=-8, request_id="req-1 a~")
                self.assertEqual((r["echo"]["priority"], r["echo"]["request_id"]),
                                 (-8, "req-1 a~"))
                r = await dev.dispatch("noop", [1])
                self.assertNotIn("priority", r["echo"])
                self.assertNotIn("request_id", r["echo"])
                await dev.buffer_alloc("kv", 16, priority=7, request_id="x" * 64)
                await dev.buffer_free("kv", priority=0)
                await dev.prewarm(request_id="w")
                await dev.buffer_list()

        self.run_async(main())
        self.assertEqual(s.requests[2], ("buffer.alloc", {"name": "kv", "bytes": 16, "priority": 7,
                                                          "request_id": "x" * 64}))
        self.assertEqual(s.requests[3], ("buffer.free", {"name": "kv", "priority": 0}))
        self.assertEqual(s.requests[4], ("prewarm", {"request_id": "w"}))
        self.assertEqual(s.requests[5], ("buffer.list", None))

    def test_bad_values_are_refused_before_anything_is_sent(self):
        s = self.server()

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                for bad in (-9, 8, True, 1.0, "0"):
                    with self.assertRaises(ValueError) as cm:
                        await dev.dispatch("noop", [1], priority=bad)
                    self.assertIn("priority must be an integer in [-8, 7]", str(cm.exception))
                    self.assertIn(repr(bad), str(cm.exception))
                for bad in ("", "x" * 65, "caf\u00e9", "a\nb", "\x7f", 5, b"id"):
                    with self.assertRaises(ValueError) as cm:
                        await dev.buffer_read("kv", request_id=bad)
                    self.assertIn("request_id must be a str of 1 to 64 printable ASCII",
                                  str(cm.exception))

        self.run_async(main())
        self.assertEqual(s.requests, [])


class SharedMemory(AioBase):
    def test_the_region_fd_goes_with_its_request(self):
        def handler(conn, msgid, method, params):
            if method == "ping":
                conn.respond(msgid, {"state": "ready", "features": ["shm"]})
            else:
                conn.respond(msgid, {"name": (params or {}).get("name")})

        s = self.server(handler=handler)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                async with await dev.shm(4096) as r:
                    r.buffer[0:4] = b"abcd"
                    await dev.dispatch("noop", [r[0:4], r[8:16].out()])
                    self.assertEqual(s.requests[-1][1]["args"],
                                     [{"shm": r.name, "offset": 0, "bytes": 4, "dir": "in"},
                                      {"shm": r.name, "offset": 8, "bytes": 8, "dir": "out"}])
                r2 = await dev.shm(100)
                r2.close()  # unregisters without waiting
                self.assertEqual((await dev.ping())["state"], "ready")

        self.run_async(main())
        self.assertEqual([m for m, _ in s.requests],
                         ["ping", "shm.register", "dispatch", "shm.unregister", "shm.register",
                          "shm.unregister", "ping"])
        self.assertEqual(len(s.fds), 2)
        self.assertTrue(os.readlink("/proc/self/fd/%d" % s.fds[0]).startswith("/memfd:"))

    def test_a_region_given_up_after_its_register_went_out_is_unregistered(self):
        held = []

        def handler(conn, msgid, method, params):
            if method == "ping":
                conn.respond(msgid, {"state": "ready", "features": ["shm"]})
            elif method == "shm.register":
                held.append(msgid)  # no answer: the caller gives up
            else:
                conn.respond(msgid, {"name": params["name"]})

        s = self.server(handler=handler)

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(dev.shm(4096), 0.05)
                self.assertEqual((await dev.ping())["state"], "ready")
                self.assertEqual(dev._regions, set())

        self.run_async(main())
        name = s.requests[1][1]["name"]
        self.assertEqual([m for m, _ in s.requests], ["ping", "shm.register", "shm.unregister",
                                                      "ping"])
        self.assertEqual(s.requests[2][1], {"name": name})
        self.assertEqual(s.notes, [("cancel", [{"msgid": held[0]}])])

    def test_a_daemon_without_the_feature(self):
        s = self.server()

        async def main():
            async with ptoclient.aio.connect(s.path, timeout=T) as dev:
                with self.assertRaises(Unsupported):
                    await dev.shm(4096)

        self.run_async(main())


if __name__ == "__main__":
    unittest.main()
