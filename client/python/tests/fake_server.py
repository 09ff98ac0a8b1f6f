# SPDX-License-Identifier: Apache-2.0
"""A small fake ptod for the client's unit tests: a msgpack-RPC server on a
temporary Unix socket, served by threads, whose behaviour each test scripts
with a handler.  It can do what a real daemon cannot easily be made to do:
answer out of order, hold an answer, close mid-call, send an error
notification, send garbage.

Run as a script (`fake_server.py PATH hang`), it serves in its own process so
that a test can SIGKILL it mid-call.
"""

import array
import os
import shutil
import socket
import sys
import tempfile
import threading

import msgpack


def ok_result(method, params):
    """Plausible results for the default handler (enough for the client)."""
    if method == "ping":
        return {"version": "0.1.0", "device": 0, "state": "ready"}
    if method == "dispatch":
        args = params.get("args", [])
        outputs = []
        for a in args:
            if "out" in a:
                outputs.append(b"\x00" * a["out"])
            elif a.get("dir") == "inout":
                outputs.append(a["data"])
            else:
                outputs.append(None)
        return {"outputs": outputs, "arena": {"hit": True, "build_us": 0, "key": "00" * 8},
                "sizing": {}, "peaks": {}, "timing_us": {"queue": 1, "arena": 0, "run": 5,
                                                         "total": 6},
                "tasks": 1, "echo": params}
    if method == "buffer.read":
        return b"\x01\x02\x03"
    return {"method": method, "params": params}


class FakeConn:
    def __init__(self, server, sock):
        self.server = server
        self.sock = sock
        self.lock = threading.Lock()
        self.closed = False

    def send(self, obj):
        self.send_raw(msgpack.packb(obj, use_bin_type=True))

    def send_raw(self, data):
        with self.lock:
            if not self.closed:
                try:
                    self.sock.sendall(data)
                except OSError:
                    pass

    def respond(self, msgid, result=None, error=None):
        self.send([1, msgid, error, result])

    def close(self):
        with self.lock:
            if not self.closed:
                self.closed = True
                try:
                    self.sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                self.sock.close()


class FakeServer:
    """handler(conn, msgid, method, params) is called for every request in
    the connection's reader thread; the default answers with ok_result.
    on_connect(conn) runs once per accepted connection; returning False
    stops reading it.  Every request is recorded in self.requests as
    (method, params), every fd passed with one in self.fds, and every
    notification in self.notes as (method, params), after which
    on_note(conn, method, params) runs when given."""

    def __init__(self, handler=None, on_connect=None, read=True, on_note=None):
        self.dir = tempfile.mkdtemp(prefix="ptoclient-test-")
        self.path = os.path.join(self.dir, "fake.sock")
        self.handler = handler or (lambda conn, msgid, method, params:
                                   conn.respond(msgid, ok_result(method, params)))
        self.on_connect = on_connect
        self.read = read
        self.requests = []
        self.notes = []
        self.on_note = on_note
        self.fds = []  # passed with requests (SCM_RIGHTS), kept open; close() closes them
        self.conns = []
        self.cond = threading.Condition()
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(self.path)
        self.listener.listen(16)
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self):
        while True:
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            conn = FakeConn(self, sock)
            with self.cond:
                self.conns.append(conn)
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn):
        if self.on_connect is not None and self.on_connect(conn) is False:
            return
        if not self.read:
            return
        unpacker = msgpack.Unpacker(raw=False, max_buffer_size=0)
        while True:
            try:
                data, ancillary, _, _ = conn.sock.recvmsg(1 << 16, socket.CMSG_SPACE(16))
            except OSError:
                return
            if not data:
                conn.close()
                return
            with self.cond:
                for level, kind, fds in ancillary:
                    if (level, kind) == (socket.SOL_SOCKET, socket.SCM_RIGHTS):
                        passed = array.array("i")
                        passed.frombytes(fds[:len(fds) - len(fds) % passed.itemsize])
                        self.fds.extend(passed)
            unpacker.feed(data)
            for msg in unpacker:
                if msg[0] == 2 and len(msg) == 3:
                    with self.cond:
                        self.notes.append((msg[1], msg[2]))
                        self.cond.notify_all()
                    if self.on_note is not None:
                        self.on_note(conn, msg[1], msg[2])
                    continue
                assert msg[0] == 0 and len(msg) == 4, msg
                params = msg[3][0] if msg[3] else None
                with self.cond:
                    self.requests.append((msg[2], params))
                    self.cond.notify_all()
                self.handler(conn, msg[1], msg[2], params)

    def wait_requests(self, n, timeout=10):
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.requests) >= n, timeout):
                raise AssertionError("fake server got %d requests, expected %d"
                                     % (len(self.requests), n))

    def wait_notes(self, n, timeout=10):
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.notes) >= n, timeout):
                raise AssertionError("fake server got %d notifications, expected %d"
                                     % (len(self.notes), n))

    def close(self):
        self.listener.close()
        with self.cond:
            conns = list(self.conns)
        for c in conns:
            c.close()
        for fd in self.fds:
            os.close(fd)
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _serve_forever(path, mode):
    """Process mode: answer ping, never answer anything else ("hang")."""
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(4)
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        sock, _ = listener.accept()
        unpacker = msgpack.Unpacker(raw=False)
        while True:
            data = sock.recv(1 << 16)
            if not data:
                break
            unpacker.feed(data)
            for msg in unpacker:
                if msg[2] == "ping" or mode != "hang":
                    sock.sendall(msgpack.packb([1, msg[1], None, ok_result(msg[2], None)],
                                               use_bin_type=True))


if __name__ == "__main__":
    _serve_forever(sys.argv[1], sys.argv[2])
