# SPDX-License-Identifier: Apache-2.0
"""Client behaviour against a fake msgpack-RPC server (tests/fake_server.py):
pipelining and out-of-order answers, per-call timeouts, a server that closes
or dies mid-call, error notifications, and the config reaching the wire whole
on every path (dispatch, pipelined, bench, dispatch_many)."""

import array
import errno
import math
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from unittest import mock

import msgpack

try:
    import numpy
except ImportError:  # the client works without numpy; its tests skip
    numpy = None

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

from fake_server import FakeServer, ok_result  # noqa: E402
from ptoclient import (Buffer, Client, Data, InOut, Out, RunConfig, dispatch_many)  # noqa: E402
from ptoclient.errors import (AlreadyExists, CallTimeout, ConnectFailed,  # noqa: E402
                              ConnectionLost, HeapRingDeadlock, MessageTooLarge,
                              MultiDispatchError, PermissionDenied, ProtocolError, PtoError,
                              UnknownProgram, Unsupported)

# Generous: only reached when something is broken (a hang must fail, not stall).
T = 60  # only reached when something is broken (a loaded machine is slow)


class Base(unittest.TestCase):
    def server(self, **kw):
        s = FakeServer(**kw)
        self.addCleanup(s.close)
        return s

    def client(self, server, **kw):
        kw.setdefault("timeout", T)
        c = Client(server.path, **kw)
        self.addCleanup(c.close)
        return c


class _FullOnce:
    """A client's socket whose first sendmsg finds it full (EAGAIN)."""

    def __init__(self, sock):
        self._sock = sock
        self._full = True

    def sendmsg(self, *args):
        if self._full:
            self._full = False
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return self._sock.sendmsg(*args)

    def __getattr__(self, name):
        return getattr(self._sock, name)


class _ResetAfterAnswer:
    """A client's socket that is full for its first send, gives the first
    read what the peer sent (waiting for it to arrive) and fails the next
    with ECONNRESET, as a peer that answered and closed with bytes unread."""

    def __init__(self, sock):
        self._sock = sock
        self._sends = 0
        self._reads = 0

    def _full_once(self, call, *args):
        self._sends += 1
        if self._sends == 1:
            raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
        return call(*args)

    def send(self, *args):
        return self._full_once(self._sock.send, *args)

    def sendmsg(self, *args):
        return self._full_once(self._sock.sendmsg, *args)

    def recv_into(self, *args):
        self._reads += 1
        if self._reads == 1:
            select.select([self._sock], [], [], T)
            return self._sock.recv_into(*args)
        raise ConnectionResetError(errno.ECONNRESET, "Connection reset by peer")

    def __getattr__(self, name):
        return getattr(self._sock, name)


class SharedMemory(Base):
    def test_a_daemon_without_the_feature(self):
        s = self.server()  # its ping lists no features, as a version 1 daemon's
        c = self.client(s)
        with self.assertRaises(Unsupported) as cm:
            c.shm(4096)
        self.assertIn('no "shm" feature', cm.exception.message)
        self.assertEqual(cm.exception.name, "UNSUPPORTED")
        # Nothing else was sent: one ping, asked once.
        with self.assertRaises(Unsupported):
            c.shm(4096)
        self.assertEqual([m[0] for m in s.requests], ["ping"])

    def test_the_region_is_passed_when_the_socket_was_full_at_first(self):
        def handler(conn, msgid, method, params):
            if method == "ping":
                conn.respond(msgid, {"version": "0.1.0", "device": 0, "state": "ready",
                                     "features": ["shm"]})
            else:
                conn.respond(msgid, {"name": params["name"], "bytes": params.get("bytes")})

        s = self.server(handler=handler)
        c = self.client(s)
        c._sock = _FullOnce(c._sock)
        with c.shm(4096):
            pass
        self.assertEqual([m[0] for m in s.requests], ["ping", "shm.register", "shm.unregister"])
        self.assertEqual(len(s.fds), 1)
        # the region's memfd, not the socket the client waited on
        self.assertTrue(os.readlink("/proc/self/fd/%d" % s.fds[0]).startswith("/memfd:"))

    def test_bad_sizes_are_refused_before_anything_is_sent(self):
        s = self.server()
        c = self.client(s)
        for bad in (0, -1, 1.5, True, (1 << 40) + 1):
            with self.assertRaises(ValueError):
                c.shm(bad)
        self.assertEqual(s.requests, [])


class Methods(Base):
    def test_every_method_sends_its_params(self):
        s = self.server()
        c = self.client(s)
        self.assertEqual(c.ping(), {"version": "0.1.0", "device": 0, "state": "ready"})
        c.status()
        c.metrics()
        c.programs()
        c.buffer_alloc("w", init=b"\x01\x02\x03\x04")
        c.buffer_alloc("kv", 64)
        c.buffer_write("kv", b"\x09", offset=4)
        self.assertEqual(c.buffer_read("kv", offset=1, nbytes=3), b"\x01\x02\x03")
        c.buffer_read("kv")
        c.buffer_free("w")
        c.buffer_list()
        c.prewarm(RunConfig(ring_heap=[2048, 0, 0, 0]))
        c.prewarm()
        c.advise()
        c.dispatch("vector_add", [Data(b"a"), Buffer("kv", 0, 4), Out(4), 3],
                   config=RunConfig(ring_task_window=64), deadline_ms=100)
        self.assertEqual(s.requests, [
            ("ping", None), ("status", None), ("metrics", None), ("programs", None),
            ("buffer.alloc", {"name": "w", "bytes": 4, "init": b"\x01\x02\x03\x04"}),
            ("buffer.alloc", {"name": "kv", "bytes": 64}),
            ("buffer.write", {"name": "kv", "offset": 4, "data": b"\x09"}),
            ("buffer.read", {"name": "kv", "offset": 1, "bytes": 3}),
            ("buffer.read", {"name": "kv"}),
            ("buffer.free", {"name": "w"}),
            ("buffer.list", None),
            ("prewarm", {"config": {"ring_heap": [2048, 0, 0, 0]}}),
            ("prewarm", None),
            ("advise", None),
            ("dispatch", {"program": "vector_add",
                          "args": [{"data": b"a"}, {"buffer": "kv", "offset": 0, "bytes": 4},
                                   {"out": 4}, {"scalar": 3}],
                          "config": {"ring_task_window": 64}, "deadline_ms": 100}),
        ])

    def test_wire_format_is_plain_msgpack_rpc(self):
        # what a third-party server sees: [0, msgid, method, params] with params [] or [map]
        raw = []

        def on_connect(conn):
            data = b""
            unpacker = msgpack.Unpacker(raw=False)
            while len(raw) < 2:
                data = conn.sock.recv(4096)
                unpacker.feed(data)
                raw.extend(unpacker)
            for m in raw:
                conn.respond(m[1], {})
            return False

        s = self.server(on_connect=on_connect)
        c = self.client(s)
        c.gather([c.send("ping"), c.send("buffer.free", {"name": "x"})])
        self.assertEqual(raw[0][0], 0)
        self.assertEqual(raw[0][2:], ["ping", []])
        self.assertEqual(raw[1][2:], ["buffer.free", [{"name": "x"}]])
        self.assertIsInstance(raw[0][1], int)
        self.assertNotEqual(raw[0][1], raw[1][1])

    def test_daemon_errors_raise_their_class(self):
        def handler(conn, msgid, method, params):
            if method == "buffer.alloc":
                conn.respond(msgid, error={"code": 1009, "name": "ALREADY_EXISTS",
                                           "message": "A buffer named 'kv' already exists.",
                                           "key": "kv"})
            else:
                conn.respond(msgid, error={
                    "code": 2, "name": "HEAP_RING_DEADLOCK",
                    "message": "Ring 0 needs 8192 heap bytes but has 4096.", "ring": 0,
                    "requested": 8192, "capacity": 4096,
                    "hint": "Raise ring_heap to [8192, 0, 0, 0]."})

        s = self.server(handler=handler)
        c = self.client(s)
        with self.assertRaises(AlreadyExists) as cm:
            c.buffer_alloc("kv", 16)
        self.assertEqual((cm.exception.code, cm.exception.key), (1009, "kv"))
        with self.assertRaises(HeapRingDeadlock) as cm:
            c.dispatch("attention_prefill", [])
        e = cm.exception
        self.assertEqual((e.code, e.name, e.ring, e.requested, e.capacity),
                         (2, "HEAP_RING_DEADLOCK", 0, 8192, 4096))
        self.assertEqual(e.hint, "Raise ring_heap to [8192, 0, 0, 0].")
        self.assertFalse(c.closed)  # error answers leave the connection usable

    def test_other_notifications_are_kept(self):
        def handler(conn, msgid, method, params):
            conn.send([2, "log", ["hello"]])
            conn.respond(msgid, ok_result(method, params))

        s = self.server(handler=handler)
        c = self.client(s)
        self.assertEqual(c.ping()["state"], "ready")
        self.assertEqual(list(c.notifications), [("log", ["hello"])])

    def test_answers_split_into_pieces(self):
        def handler(conn, msgid, method, params):
            data = msgpack.packb([1, msgid, None, {"blob": b"x" * 1000}], use_bin_type=True)
            for i in range(0, len(data), 97):
                conn.send_raw(data[i:i + 97])
                time.sleep(0.001)

        s = self.server(handler=handler)
        c = self.client(s)
        self.assertEqual(c.ping(), {"blob": b"x" * 1000})

    def test_large_request_and_answer(self):
        s = self.server()
        c = self.client(s)
        big = os.urandom(8 << 20)
        r = c.dispatch("vector_add", [Data(big, inout=True)])
        self.assertEqual(r["outputs"][0], big)

    def test_inline_data_of_every_buffer_kind(self):
        # large ones are sent from the caller's memory, between packed parts
        s = self.server()
        c = self.client(s)
        big = os.urandom(3 << 20)
        kinds = [big, bytearray(big), memoryview(big), array.array("B", big), b"small"]
        want = [big] * 4 + [b"small"]
        if numpy is not None:
            a = numpy.frombuffer(big, dtype=numpy.float32).reshape(1024, -1)
            kinds += [a, a[:, ::2]]  # the strided one is copied (in C order) when wrapped
            want += [big, a[:, ::2].tobytes()]
        r = c.dispatch("vector_add", [InOut(k) for k in kinds] + [Out(4), 5])
        self.assertEqual(r["outputs"], want + [b"\x00" * 4, None])
        self.assertEqual(c.buffer_write("kv", bytearray(big)), {"method": "buffer.write",
                                                                "params": {"name": "kv",
                                                                           "data": big}})
        self.assertEqual(c.buffer_alloc("kv2", init=memoryview(big))["params"]["init"], big)


class Pipelining(Base):
    def test_out_of_order_answers(self):
        held = []

        def handler(conn, msgid, method, params):
            held.append((msgid, params))
            if len(held) == 5:  # answer all five, newest first
                for mid, p in reversed(held):
                    conn.respond(mid, {"n": p["args"][0]["scalar"]})

        s = self.server(handler=handler)
        c = self.client(s)
        ids = [c.send_dispatch("noop", [n]) for n in range(5)]
        self.assertEqual(len(set(ids)), 5)
        # collect in an order that is neither the sending nor the answering one
        order = [2, 0, 4, 1, 3]
        for i in order:
            self.assertEqual(c.result(ids[i]), {"n": i})
        with self.assertRaises(ValueError):
            c.result(ids[0])  # each answer is collected once

    def test_gather(self):
        def handler(conn, msgid, method, params):
            if method != "dispatch":
                return conn.respond(msgid, ok_result(method, params))
            n = params["args"][0]["scalar"]
            if n == 1:
                conn.respond(msgid, error={"code": 1003, "name": "UNKNOWN_PROGRAM",
                                           "message": "No program 'x'."})
            else:
                conn.respond(msgid, {"n": n})

        s = self.server(handler=handler)
        c = self.client(s)
        ids = [c.send_dispatch("noop", [n]) for n in range(3)]
        out = c.gather(ids, return_exceptions=True)
        self.assertEqual(out[0], {"n": 0})
        self.assertIsInstance(out[1], UnknownProgram)
        self.assertEqual(out[2], {"n": 2})
        ids = [c.send_dispatch("noop", [n]) for n in range(3)]
        with self.assertRaises(UnknownProgram):
            c.gather(ids)
        self.assertEqual(c.ping()["state"], "ready")  # all three were collected

    def test_threads_share_one_client(self):
        lock = threading.Lock()
        held = []

        def handler(conn, msgid, method, params):
            with lock:
                held.append((msgid, params))
                if len(held) == 8:
                    for mid, p in reversed(held):
                        conn.respond(mid, {"n": p["args"][0]["scalar"]})

        s = self.server(handler=handler)
        c = self.client(s)
        got = {}

        def worker(n):
            got[n] = c.dispatch("noop", [n])["n"]

        threads = [threading.Thread(target=worker, args=(n,)) for n in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(T)
        self.assertEqual(got, {n: n for n in range(8)})

    def test_sending_many_while_answers_pile_up(self):
        # The fake server writes each answer before reading the next request,
        # blocking when the client does not read: the client must keep
        # reading answers while it writes, or both sides wait forever.
        s = self.server(handler=lambda conn, msgid, method, params:
                        conn.respond(msgid, {"blob": b"r" * (512 << 10)}))
        c = self.client(s, timeout=5)
        ids = [c.send_dispatch("noop", [Data(b"x" * (128 << 10))]) for _ in range(24)]
        out = c.gather(ids)
        self.assertEqual([len(r["blob"]) for r in out], [512 << 10] * 24)

    def test_msgid_wraps_within_uint32(self):
        s = self.server()
        c = self.client(s)
        c._next_id = (1 << 32) - 1
        a = c.send("ping")
        b = c.send("ping")
        self.assertEqual((a, b), ((1 << 32) - 1, 1))
        c.gather([a, b])

    def test_msgid_in_use_after_a_wrap_is_skipped(self):
        s = self.server()
        c = self.client(s)
        a = c.send("ping")       # pending, not collected
        c._abandoned.add(a + 1)  # as a timed-out call's, its answer not yet read
        c._next_id = a           # where a wrap would bring the counter back
        b = c.send("ping")
        self.assertEqual(b, a + 2)
        c._abandoned.clear()
        c.gather([a, b])


class Timeouts(Base):
    def test_call_timeout_keeps_connection_usable(self):
        held = []
        release = threading.Event()

        def handler(conn, msgid, method, params):
            if method == "dispatch":
                held.append(msgid)  # no answer for now
                return
            if release.is_set() and held:
                # the late answer goes out just before this ping's own answer
                conn.respond(held.pop(), {"late": True})
            conn.respond(msgid, ok_result(method, params))

        s = self.server(handler=handler)
        c = self.client(s)
        with self.assertRaises(CallTimeout) as cm:
            c.dispatch("noop", [1], timeout=0.2)
        self.assertIsInstance(cm.exception, TimeoutError)
        self.assertIsInstance(cm.exception, PtoError)
        self.assertIn("stays usable", str(cm.exception))
        self.assertFalse(c.closed)
        self.assertEqual(c.ping()["state"], "ready")
        release.set()
        # the late answer arrives and is discarded; each call gets its own answer
        self.assertEqual(c.ping(), ok_result("ping", None))
        self.assertEqual(held, [])
        self.assertEqual(c._abandoned, set())
        self.assertEqual(c.status(), ok_result("status", None))

    def test_pipelined_result_timeout(self):
        s = self.server(handler=lambda *a: None)  # never answers
        c = self.client(s)
        msgid = c.send_dispatch("noop", [1])
        with self.assertRaises(CallTimeout):
            c.result(msgid, timeout=0.1)
        with self.assertRaises(ValueError):
            c.result(msgid)  # abandoned

    def in_thread(self, call):
        """Run call() in a thread; what it returned or raised, or None when
        it was still waiting after 30 s (a hang: the test fails)."""
        got = []

        def run():
            try:
                got.append(call())
            except Exception as exc:  # noqa: BLE001  what the test looks at
                got.append(exc)

        t = threading.Thread(target=run, daemon=True)
        t.start()
        t.join(30)
        return got[0] if got else None

    def test_short_timeout_after_long_ones(self):
        # The read waits in recv under SO_RCVTIMEO, which is left in place
        # between calls; a call with a shorter timeout than the one in
        # place must still end at its own.
        s = self.server(handler=lambda conn, msgid, method, params: (
            None if method == "dispatch" else conn.respond(msgid, ok_result(method, params))))
        c = self.client(s, timeout=300)
        c.ping()
        c.ping(timeout=math.inf)
        c.ping()
        self.assertIsInstance(self.in_thread(lambda: c.dispatch("noop", [1], timeout=0.2)),
                              CallTimeout)
        self.assertEqual(c.ping(), ok_result("ping", None))

    def test_close_ends_a_call_waiting_for_its_answer(self):
        sent = threading.Event()
        s = self.server(handler=lambda *a: sent.set())  # never answers
        c = self.client(s, timeout=math.inf)
        threading.Timer(0, lambda: (sent.wait(30), c.close())).start()
        got = self.in_thread(lambda: c.dispatch("noop", [1]))
        self.assertIsInstance(got, ConnectionLost)
        self.assertIn("closed its connection", str(got))

    def test_client_default_timeout(self):
        s = self.server(handler=lambda *a: None)
        c = self.client(s, timeout=0.1)
        with self.assertRaises(CallTimeout):
            c.ping()

    def test_timeout_values(self):
        s = self.server()
        c = self.client(s, timeout=math.inf)
        self.assertEqual(c.ping(timeout=math.inf)["state"], "ready")
        self.assertEqual(c.ping(timeout=None)["state"], "ready")
        for bad in (-1, float("nan"), "1", True):
            with self.assertRaises(ValueError):
                c.ping(timeout=bad)
            with self.assertRaises(ValueError):
                Client(s.path, timeout=bad)
        self.assertEqual(c.ping()["state"], "ready")

    def test_request_written_in_part_closes_connection(self):
        s = self.server(read=False)  # accepts, never reads
        c = self.client(s)
        with self.assertRaises(CallTimeout) as cm:
            c.buffer_write("kv", b"\x00" * (16 << 20), timeout=0.3)
        self.assertIn("connection was closed", str(cm.exception))
        self.assertTrue(c.closed)
        with self.assertRaises(ConnectionLost):
            c.ping()


class Failures(Base):
    def test_server_closes_mid_call(self):
        def handler(conn, msgid, method, params):
            if method == "dispatch":
                conn.close()
            else:
                conn.respond(msgid, ok_result(method, params))

        s = self.server(handler=handler)
        c = self.client(s)
        pending = c.send("ping")
        c.result(pending)
        other = c.send("status")  # answered, not yet collected
        s.wait_requests(2)
        start = time.monotonic()
        with self.assertRaises(ConnectionLost) as cm:
            c.dispatch("noop", [1])
        self.assertLess(time.monotonic() - start, T)
        self.assertIsInstance(cm.exception, ConnectionError)
        self.assertIn("closed the connection", str(cm.exception))
        self.assertIn("dispatch", str(cm.exception))
        self.assertTrue(c.closed)
        # an answer that arrived before the close is still there
        self.assertEqual(c.result(other)["method"], "status")
        with self.assertRaises(ConnectionLost):
            c.ping()

    def test_an_answer_read_before_a_reset_still_counts(self):
        # A daemon refusing a message answers, then closes with the rest of
        # the message unread.  A client whose send found the socket full
        # reads the answer, and its next read fails with ECONNRESET: the
        # answer came first and is the call's result.
        s = self.server(on_connect=lambda conn: conn.respond(
            1, error={"code": 1011, "name": "MESSAGE_TOO_LARGE",
                      "message": "The message is larger than max_message."}) and False)
        c = self.client(s)
        c._sock = _ResetAfterAnswer(c._sock)
        with self.assertRaises(MessageTooLarge):
            c.buffer_write("b", b"\x00" * (1 << 20))
        with self.assertRaises(ConnectionLost):
            c.ping()

    def test_all_pending_calls_fail(self):
        def handler(conn, msgid, method, params):
            if params and params["args"][0]["scalar"] == 2:
                conn.close()

        s = self.server(handler=handler)
        c = self.client(s)
        ids = [c.send_dispatch("noop", [n]) for n in range(3)]
        out = c.gather(ids, return_exceptions=True)
        for e in out:
            self.assertIsInstance(e, ConnectionLost)

    def test_killed_daemon_process(self):
        d = tempfile.mkdtemp(prefix="ptoclient-test-")
        path = os.path.join(d, "fake.sock")
        proc = subprocess.Popen([sys.executable, os.path.join(HERE, "fake_server.py"), path,
                                 "hang"], stdout=subprocess.PIPE)
        self.addCleanup(lambda: (proc.poll() is None and proc.kill(), proc.wait(),
                                 proc.stdout.close(), os.path.exists(path) and os.unlink(path),
                                 os.rmdir(d)))
        self.assertEqual(proc.stdout.readline(), b"ready\n")
        c = Client(path, timeout=T)
        self.addCleanup(c.close)
        self.assertEqual(c.ping()["state"], "ready")
        msgid = c.send_dispatch("noop", [1])
        threading.Timer(0.2, lambda: os.kill(proc.pid, signal.SIGKILL)).start()
        with self.assertRaises(ConnectionLost):
            c.result(msgid)
        with self.assertRaises(ConnectionLost):
            c.ping()

    def test_error_notification_fails_pending_calls(self):
        count = [0]

        def handler(conn, msgid, method, params):
            count[0] += 1
            if count[0] == 2:
                conn.send([2, "error", [{"code": 1011, "name": "MESSAGE_TOO_LARGE",
                                         "message": "The message of 70000000 bytes is larger "
                                                    "than max_message = 67108864."}]])
                conn.close()

        s = self.server(handler=handler)
        c = self.client(s)
        a = c.send_dispatch("noop", [1])
        b = c.send_dispatch("noop", [2])
        for msgid in (a, b):
            with self.assertRaises(MessageTooLarge) as cm:
                c.result(msgid)
            self.assertEqual(cm.exception.code, 1011)
            self.assertIn("max_message", str(cm.exception))
        # and every later call
        with self.assertRaises(MessageTooLarge):
            c.ping()
        self.assertTrue(c.closed)

    def test_rejected_at_connect(self):
        def on_connect(conn):
            conn.send([2, "error", [{"code": 1010, "name": "PERMISSION_DENIED",
                                     "message": "uid 1000 (gid 1000) is not allowed to use this "
                                                "daemon."}]])
            conn.close()
            return False

        s = self.server(on_connect=on_connect)
        for delay in (0, 0.2):  # before and after the daemon has closed its end
            c = self.client(s)
            time.sleep(delay)
            with self.assertRaises(PermissionDenied) as cm:
                c.ping()
            self.assertEqual(cm.exception.code, 1010)

    def test_garbage_is_a_protocol_error(self):
        def handler(conn, msgid, method, params):
            conn.send([7, msgid])

        s = self.server(handler=handler)
        c = self.client(s)
        with self.assertRaises(ProtocolError):
            c.ping()
        self.assertTrue(c.closed)

    def test_connect_failures(self):
        d = tempfile.mkdtemp(prefix="ptoclient-test-")
        self.addCleanup(lambda: __import__("shutil").rmtree(d, ignore_errors=True))
        missing = os.path.join(d, "missing.sock")
        with self.assertRaises(ConnectFailed) as cm:
            Client(missing)
        self.assertIsInstance(cm.exception, ConnectionError)
        self.assertIn(missing, str(cm.exception))
        stale = os.path.join(d, "stale.sock")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(stale)
        sock.close()
        with self.assertRaises(ConnectFailed) as cm:
            Client(stale)
        self.assertIn("refused", str(cm.exception))

    def test_close(self):
        s = self.server()
        with Client(s.path) as c:
            c.ping()
        self.assertTrue(c.closed)
        with self.assertRaises(ConnectionLost):
            c.ping()
        c.close()  # idempotent


class ServingKeys(Base):
    """Protocol 1.2's priority and request_id on device requests."""

    def test_sent_only_when_given(self):
        s = self.server()
        c = self.client(s)
        r = c.dispatch("noop", [1], priority=-1, request_id="req-9")
        self.assertEqual((r["echo"]["priority"], r["echo"]["request_id"]), (-1, "req-9"))
        c.gather([c.send_dispatch("noop", [1], priority=3)])
        c.dispatch("noop", [1])
        c.buffer_alloc("kv", 8, request_id="a")
        c.buffer_write("kv", b"12345678", priority=2)
        c.buffer_read("kv", priority=-8, request_id="b")
        c.buffer_free("kv")
        c.buffer_list(priority=1)
        c.prewarm({"ring_heap": 2048}, priority=0)
        self.assertEqual([sorted(k for k in p if k in ("priority", "request_id"))
                          for _, p in s.requests],
                         [["priority", "request_id"], ["priority"], [], ["request_id"],
                          ["priority"], ["priority", "request_id"], [], ["priority"],
                          ["priority"]])
        self.assertEqual(s.requests[-1][1], {"config": {"ring_heap": 2048}, "priority": 0})

    def test_bad_values_are_refused_before_anything_is_sent(self):
        s = self.server()
        c = self.client(s)
        for bad in (-9, 8, False, 0.0):
            with self.assertRaises(ValueError) as cm:
                c.send_dispatch("noop", [1], priority=bad)
            self.assertIn("priority must be an integer in [-8, 7]", str(cm.exception))
        for bad in ("", "x" * 65, "\t", "\u00e9t\u00e9", 7):
            with self.assertRaises(ValueError) as cm:
                c.prewarm(request_id=bad)
            self.assertIn("request_id must be a str of 1 to 64 printable ASCII",
                          str(cm.exception))
        self.assertEqual(s.requests, [])


class ConfigOnEveryPath(Base):
    """The seed's lesson: the config reaches the daemon whole on every path."""

    CFG = RunConfig(ring_task_window=[256, 128, 64, 0], ring_heap=1 << 20, ring_dep_pool=1024,
                    enable_dep_gen=True, extra={"future_knob": {"x": 1}})
    WIRE = {"ring_task_window": [256, 128, 64, 0], "ring_heap": 1 << 20, "ring_dep_pool": 1024,
            "enable_dep_gen": True, "future_knob": {"x": 1}}

    def configs(self, server):
        return [p.get("config") for m, p in server.requests if m == "dispatch"]

    def test_single_and_pipelined(self):
        s = self.server()
        c = self.client(s)
        c.dispatch("noop", [1], config=self.CFG)
        c.gather([c.send_dispatch("noop", [n], config=self.CFG) for n in range(3)])
        c.dispatch("noop", [1], config=dict(self.WIRE))  # a plain dict, unknown key included
        self.assertEqual(self.configs(s), [self.WIRE] * 5)

    def test_bench_uses_the_config_on_every_repetition(self):
        def handler(conn, msgid, method, params):
            r = ok_result(method, params)
            r["arena"]["hit"] = len(s.requests) > 1  # the first (warm-up) run misses
            conn.respond(msgid, r)

        s = self.server(handler=handler)
        c = self.client(s)
        out = c.bench("noop", [100], config=self.CFG, repeat=4, warmup=2)
        self.assertEqual(self.configs(s), [self.WIRE] * 6)
        self.assertEqual([p["args"] for _, p in s.requests], [[{"scalar": 100}]] * 6)
        self.assertEqual((out["repeat"], out["warmup"]), (4, 2))
        self.assertEqual(len(out["wall_us"]), 4)
        self.assertEqual(out["run_us"], [5] * 4)
        self.assertEqual((out["arena_hits"], out["arena_misses"]), (4, 0))
        self.assertEqual((out["warmup_arena_hits"], out["warmup_arena_misses"]), (1, 1))
        self.assertLessEqual(out["min_us"], out["median_us"])
        self.assertLessEqual(out["median_us"], out["p99_us"])
        self.assertEqual(out["config"], self.WIRE)
        with self.assertRaises(ValueError):
            c.bench("noop", [], repeat=0)

    def test_dispatch_many(self):
        def failing(conn, msgid, method, params):
            conn.respond(msgid, error={"code": 2, "name": "HEAP_RING_DEADLOCK",
                                       "message": "Ring 0 ran out of heap."})

        a, b = self.server(), self.server()
        bad = self.server(handler=failing)
        missing = os.path.join(a.dir, "missing.sock")
        targets = {a.path: [Data(b"a")], b.path: [Data(b"b")], bad.path: [Data(b"c")],
                   missing: [Data(b"d")]}
        out = dispatch_many(targets, "vector_add", config=self.CFG, timeout=T)
        self.assertEqual(list(out), list(targets))
        self.assertEqual(out[a.path]["echo"]["args"], [{"data": b"a"}])
        self.assertEqual(out[b.path]["echo"]["args"], [{"data": b"b"}])
        self.assertEqual(self.configs(a) + self.configs(b) + self.configs(bad), [self.WIRE] * 3)
        self.assertFalse(out.ok)
        self.assertEqual(set(out.errors), {bad.path, missing})
        self.assertIsInstance(out[bad.path], HeapRingDeadlock)
        self.assertEqual(out[bad.path].device, bad.path)
        self.assertIn("daemon at %s: HEAP_RING_DEADLOCK" % bad.path, str(out[bad.path]))
        self.assertIsInstance(out[missing], ConnectFailed)
        with self.assertRaises(MultiDispatchError) as cm:
            dispatch_many(targets, "vector_add", config=self.CFG, timeout=T, raise_on_error=True)
        self.assertIn("2 of 4", str(cm.exception))
        self.assertIn(bad.path, str(cm.exception))
        self.assertEqual(set(cm.exception.errors), {bad.path, missing})

    def test_dispatch_many_with_large_inline_data(self):
        a, b = self.server(), self.server()
        big = bytearray(os.urandom(1 << 20))
        out = dispatch_many({a.path: [InOut(big)], b.path: [InOut(memoryview(big)[1:])]},
                            "vector_add", timeout=T)
        self.assertEqual(out[a.path]["outputs"], [bytes(big)])
        self.assertEqual(out[b.path]["outputs"], [bytes(big[1:])])

    def test_dispatch_many_by_device_number(self):
        runtime = tempfile.mkdtemp(prefix="ptoclient-xdg-")
        self.addCleanup(lambda: __import__("shutil").rmtree(runtime, ignore_errors=True))
        os.mkdir(os.path.join(runtime, "ptod"), 0o700)
        # The built-in path is used only when the directory and the socket
        # are the caller's: as root, hand them to the uid the test plays.
        uid = 4242 if os.geteuid() == 0 else os.geteuid()
        servers = {}
        for dev in (0, 1):
            s = self.server()
            os.link(s.path, os.path.join(runtime, "ptod", "ptod%d.sock" % dev))
            os.chown(s.path, uid, -1)
            servers[dev] = s
        os.chown(os.path.join(runtime, "ptod"), uid, -1)
        with mock.patch("ptoclient.client.os.geteuid", return_value=uid), \
                mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": runtime}):
            out = dispatch_many({0: [1], 1: [2], 2: [3]}, "noop", config={"ring_heap": 2048},
                                timeout=T)
        self.assertEqual(out[0]["echo"]["args"], [{"scalar": 1}])
        self.assertEqual(out[1]["echo"]["args"], [{"scalar": 2}])
        self.assertIsInstance(out[2], ConnectFailed)  # no daemon for device 2
        self.assertEqual(out[2].device, 2)
        self.assertTrue(str(out[2]).startswith("device 2: "))
        for s in servers.values():
            self.assertEqual(self.configs(s), [{"ring_heap": 2048}])

    def test_dispatch_many_validates_before_sending(self):
        s = self.server()
        with self.assertRaises(ValueError) as cm:
            dispatch_many({s.path: []}, "noop", config={"ring_heap": 1000})
        self.assertEqual(str(cm.exception),
                         "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000")
        with self.assertRaises(TypeError) as cm:
            dispatch_many({s.path: ["kv"]}, "noop")
        self.assertTrue(str(cm.exception).startswith("daemon at %s: args[0]:" % s.path))
        self.assertEqual(s.requests, [])

    def test_dispatch_many_with_open_clients(self):
        s = self.server()
        c = self.client(s)
        out = dispatch_many({c: [1]}, "noop", config=self.CFG, timeout=T)
        self.assertEqual(out[c]["echo"]["config"], self.WIRE)
        self.assertFalse(c.closed)  # a caller's client is left open


if __name__ == "__main__":
    unittest.main(verbosity=2)
