# SPDX-License-Identifier: Apache-2.0
"""Framing and the limits on what a client can make the daemon do:
malformed msgpack, `dd ff ff ff ff`, nesting depth, max_message, partial
messages and client_timeout, output_limit, max_clients, max_pending,
allowed_uids / allowed_gids; and the socket itself: its mode and group, a
stale socket file replaced, a live daemon's socket refused, a path that is
not a socket refused.  In every fatal case the error reaches the client
before the disconnect, and other connections keep working."""

import os
import unittest
import shutil
import socket
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import harness  # noqa: E402
from harness import hold_device, metric, noop, parse_prometheus, wait_until  # noqa: E402


def nested(depth, inner=None):
    """`depth` arrays one inside the other."""
    value = inner if inner is not None else []
    for _ in range(depth - 1):
        value = [value]
    return value


class Framing(harness.DaemonTest):
    @classmethod
    def setUpClass(cls):
        cls.d = harness.Daemon(config={"daemon": {"max_message": "1K", "client_timeout": "200ms"}})

    @classmethod
    def tearDownClass(cls):
        code = cls.d.stop()
        report = cls.d.sanitizer_report()
        log = cls.d.read_log()
        cls.d.cleanup()
        assert report is None, "sanitizer report in the daemon's log:\n%s" % report
        assert code == 0, "ptod exited with %r:\n%s" % (code, log)

    def setUp(self):
        # A bystander connection, open across each fatal error of another.
        self.bystander = self.d.client()
        self.addCleanup(self.bystander.close)
        self.bystander.call("ping")

    def tearDown(self):
        self.assertEqual(self.bystander.call("ping")["state"], "ready")

    def fatal(self, raw):
        """Send raw bytes on a fresh connection; return what came back before
        the daemon closed it."""
        with self.d.client() as c:
            c.send_raw(raw)
            return c.read_until_eof()

    def assertNotification(self, messages, name, contains=()):
        self.assertEqual(len(messages), 1, messages)
        msg = messages[0]
        self.assertEqual(msg[:2], [2, "error"], msg)
        self.assertEqual(len(msg[2]), 1)
        self.assertError(msg[2][0], name, contains=list(contains))

    def test_reserved_byte(self):
        self.assertNotification(self.fatal(b"\xc1"), "INVALID_REQUEST")

    def test_garbage_after_a_good_message(self):
        """The good request is answered; nothing after the bad bytes is."""
        ping = msgpack.packb([0, 5, "ping", []])
        msgs = self.fatal(ping + b"\xc1" + msgpack.packb([0, 6, "ping", []]))
        self.assertEqual(len(msgs), 2, msgs)
        self.assertEqual(msgs[0][:3], [1, 5, None])
        self.assertNotification(msgs[1:], "INVALID_REQUEST")

    def test_huge_container_claims(self):
        for raw in (b"\xdd\xff\xff\xff\xff", b"\xdf\xff\xff\xff\xff", b"\xc6\xff\xff\xff\xff",
                    b"\xdb\xff\xff\xff\xff", b"\x94\x00\x01\xa4ping\xdd\xff\xff\xff\xff"):
            with self.subTest(raw=raw):
                msgs = self.fatal(raw)
                self.assertEqual(len(msgs), 1, msgs)
                err = msgs[0][2][0] if msgs[0][0] == 2 else msgs[0][2]
                self.assertError(err, "MESSAGE_TOO_LARGE")

    def test_depth_33_is_fatal(self):
        msgs = self.fatal(msgpack.packb(nested(33)))
        self.assertNotification(msgs, "INVALID_REQUEST", contains=["32"])
        msgs = self.fatal(msgpack.packb(nested(33, {"k": []})))
        self.assertNotification(msgs, "INVALID_REQUEST")

    def test_depth_33_inside_a_request_is_answered_then_fatal(self):
        # [0, 9, "ping", [ {"x": [[...]]} ]]: the envelope and the params are 3 levels
        msgs = self.fatal(msgpack.packb([0, 9, "ping", [{"x": nested(30)}]]))
        self.assertEqual(len(msgs), 1, msgs)
        self.assertEqual(msgs[0][:2], [1, 9])
        self.assertError(msgs[0][2], "INVALID_REQUEST")

    def test_depth_32_is_parsed(self):
        with self.d.client() as c:
            c.send_raw(msgpack.packb([0, 9, "ping", [{"x": nested(29)}]]))
            err, _ = c.recv(9)
            self.assertError(err, "INVALID_REQUEST", contains=["unknown key 'x'"])
            self.assertEqual(c.call("ping")["state"], "ready")

    def test_message_too_large(self):
        with self.d.client() as c:
            msgid = c.send("buffer.write", {"name": "x", "data": bytes(2048)})
            msgs = c.read_until_eof()
        self.assertEqual(len(msgs), 1, msgs)
        self.assertEqual(msgs[0][:2], [1, msgid])
        err = msgs[0][2]
        self.assertError(err, "MESSAGE_TOO_LARGE", contains=["1024"])
        self.assertEqual(err["capacity"], 1024)
        self.assertGreater(err["requested"], 1024)
        # Not a request at all: a notification.
        self.assertNotification(self.fatal(msgpack.packb(bytes(4096), use_bin_type=True)),
                                "MESSAGE_TOO_LARGE")

    def test_message_of_exactly_max_message(self):
        with self.d.client() as c:
            pad = 1000
            big = msgpack.packb([0, 2, "ping", [{"x": bytes(pad)}]], use_bin_type=True)
            pad += 1024 - len(big)
            big = msgpack.packb([0, 2, "ping", [{"x": bytes(pad)}]], use_bin_type=True)
            self.assertEqual(len(big), 1024)
            # two messages in one write: each is measured on its own
            c.send_raw(msgpack.packb([0, 1, "buffer.read", [{"name": "n" * 64}]]) + big)
            self.assertError(c.recv(1)[0], "NOT_FOUND")
            self.assertError(c.recv(2)[0], "INVALID_REQUEST", contains=["unknown key 'x'"])

    def test_bad_msgid_is_fatal(self):
        for msgid in (-1, 1 << 32, "x", None, 1.0):
            with self.subTest(msgid=msgid):
                msgs = self.fatal(msgpack.packb([0, msgid, "ping", []]))
                self.assertNotification(msgs, "INVALID_REQUEST", contains=["msgid"])

    def test_not_an_envelope_is_fatal(self):
        for raw in (5, "ping", {}, [], [3, 1, "ping", []], [0], [2, 5, []]):
            with self.subTest(raw=raw):
                self.assertNotification(self.fatal(msgpack.packb(raw)), "INVALID_REQUEST")

    def test_byte_by_byte(self):
        with self.d.client() as c:
            stream = b"".join(msgpack.packb([0, i, "ping", []]) for i in range(1, 6))
            stream += msgpack.packb([0, 6, "buffer.list", [{}]])
            for i in range(len(stream)):
                c.send_raw(stream[i:i + 1])
            for i in range(1, 6):
                self.assertEqual(c.result(i)["state"], "ready")
            self.assertEqual(c.result(6), [])

    def test_partial_message_times_out(self):
        with self.d.client() as c:
            c.send_raw(msgpack.packb([0, 1, "ping", []])[:-2])
            self.assertEqual(c.read_until_eof(), [])
        self.assertIn("to send one message", self.d.read_log())

    def test_half_message_then_close(self):
        with self.d.client() as c:
            c.send_raw(b"\x94\x00\x01")


class Limits(harness.DaemonTest):
    def test_max_clients(self):
        d = self.daemon(config={"daemon": {"max_clients": "2"}})
        a, b = d.client(), d.client()
        self.addCleanup(a.close)
        self.addCleanup(b.close)
        a.call("ping")
        b.call("ping")
        with d.client() as c:
            msgs = c.read_until_eof()
        self.assertEqual(len(msgs), 1, msgs)
        self.assertEqual(msgs[0][:2], [2, "error"])
        self.assertError(msgs[0][2][0], "BUSY", contains=["max_clients = 2"])
        b.close()
        # Once b's close is seen, there is room again.
        def third_gets_in():
            with d.client() as c:
                try:
                    return c.call("ping")["state"] == "ready"
                except ConnectionError:
                    return False
        wait_until(third_gets_in, what="room for a client")
        self.assertEqual(a.call("ping")["state"], "ready")

    def test_max_pending(self):
        """At max_pending the daemon stops reading the connection instead of
        answering BUSY: what the client sent beyond it waits in the socket
        and is answered once earlier answers went out."""
        d = self.daemon(config={"daemon": {"max_pending": "2"}})
        with d.client() as a:
            hold = hold_device(d, a)
            queued = a.send("dispatch", noop())
            alloc = a.send("buffer.alloc", {"name": "x", "bytes": 8})
            ping = a.send("ping")
            with d.client() as b:  # the limit is per connection
                self.assertEqual(b.call("buffer.list"), [])
                bq = b.send("dispatch", noop())
                # While the hold runs, a's third and fourth requests are not
                # read: the buffer does not exist yet.
                self.assertEqual(b.call("buffer.list"), [])
                self.assertEqual(a.result(hold)["tasks"], 1)
                a.result(queued)
                self.assertEqual(a.result(alloc), {"name": "x", "bytes": 8})
                self.assertEqual(a.result(ping)["state"], "ready")
                b.result(bq)
            s = d.status()
            self.assertEqual(s["dispatches"]["rejected"], 0)
            samples, _ = parse_prometheus(d.call("metrics"))
            self.assertEqual(metric(samples, "ptod_errors_total", name="BUSY"), 0)

    def test_output_limit(self):
        """A client that never reads its responses is disconnected once they
        pile up past output_limit; others are not held up."""
        d = self.daemon(config={"daemon": {"output_limit": "64K"}})
        with d.client() as other:
            other.call("buffer.alloc", {"name": "big", "bytes": 1 << 20})
            hog = d.client()
            self.addCleanup(hog.close)
            for _ in range(64):
                try:
                    # Each answer fits output_limit (a larger read is refused
                    # up front); together they do not.
                    hog.send("buffer.read", {"name": "big", "bytes": 60000})
                except OSError:
                    break
            wait_until(lambda: "output_limit" in d.read_log(), what="the hog's disconnect")
            self.assertEqual(other.call("buffer.list"), [{"name": "big", "bytes": 1 << 20}])

    def test_allowed_uids_excludes_us(self):
        d = self.daemon(config={"daemon": {"allowed_uids": str(os.getuid() + 4242)}})
        with d.client() as c:
            try:
                c.send("buffer.alloc", {"name": "sneaky", "bytes": 8})
            except OSError:
                pass
            msgs = c.read_until_eof()
        self.assertEqual(len(msgs), 1, msgs)
        self.assertEqual(msgs[0][:2], [2, "error"])
        self.assertError(msgs[0][2][0], "PERMISSION_DENIED", contains=["uid %d" % os.getuid()])
        self.assertIn("Refused client", d.read_log())
        self.assertNotIn("sneaky", d.read_log())

    def test_allowed_gids_admits_our_group(self):
        d = self.daemon(config={"daemon": {"allowed_uids": str(os.getuid() + 4242),
                                           "allowed_gids": str(os.getgid())}})
        self.assertEqual(d.call("ping")["state"], "ready")

    def test_allow_list_with_another_user(self):
        """Root only: a peer with another uid, let in by the socket's group,
        is refused by the allow-list and changes nothing."""
        if os.geteuid() != 0:
            self.skipTest("needs root to connect as another user")
        nobody = 65534
        d = self.daemon(config={"daemon": {"allowed_uids": "0", "socket_group": str(nobody)}})
        st = os.stat(d.socket)
        self.assertEqual(st.st_gid, nobody)
        os.chmod(d.dir, 0o755)
        child = (
            "import os, socket, sys, msgpack\n"
            "os.setgroups([]); os.setgid(%d); os.setuid(%d)\n"
            "s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])\n"
            "try: s.sendall(msgpack.packb([0, 1, 'buffer.alloc', [{'name': 'sneaky', 'bytes': 8}]]))\n"
            "except OSError: pass\n"
            "u = msgpack.Unpacker(raw=False)\n"
            "while True:\n"
            "    try: b = s.recv(4096)\n"
            "    except ConnectionResetError: break\n"
            "    if not b: break\n"
            "    u.feed(b)\n"
            "print(repr(list(u)))\n" % (nobody, nobody))
        out = subprocess.run([sys.executable, "-c", child, d.socket], capture_output=True,
                             text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        msgs = eval(out.stdout)  # a repr of plain lists, dicts and strings
        self.assertEqual(len(msgs), 1, msgs)
        self.assertError(msgs[0][2][0], "PERMISSION_DENIED", contains=["uid %d" % nobody])
        self.assertEqual(d.call("buffer.list"), [])


class Socket(harness.DaemonTest):
    def tmpdir(self):
        path = tempfile.mkdtemp(prefix="ptod-test-")
        self.addCleanup(shutil.rmtree, path, True)
        return path

    def test_default_mode_is_0660(self):
        d = self.daemon()
        st = os.stat(d.socket)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)

    def test_custom_mode_and_group(self):
        d = self.daemon(config={"daemon": {"socket_mode": "0600", "socket_group": str(os.getgid())}})
        st = os.stat(d.socket)
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o600)
        self.assertEqual(st.st_gid, os.getgid())
        d.call("ping")

    def test_world_writable_mode_is_refused(self):
        d = self.daemon(config={"daemon": {"socket_mode": "0666"}}, ready=False)
        d.expected_exit = 78
        self.assertEqual(d.wait(), 78)
        self.assertIn("world-writable", d.read_log())
        self.assertFalse(os.path.exists(d.socket))

    def test_missing_directory_is_created(self):
        path = os.path.join(self.tmpdir(), "sub", "ptod.sock")
        d = self.daemon(socket_path=path)
        self.assertEqual(d.call("ping")["state"], "ready")
        self.assertEqual(stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) & 0o007, 0)

    def test_directory_others_can_write_is_refused(self):
        parent = os.path.join(self.tmpdir(), "open")
        os.mkdir(parent)
        os.chmod(parent, 0o777)  # anyone could swap the socket out
        d = self.daemon(socket_path=os.path.join(parent, "ptod.sock"), ready=False)
        d.expected_exit = 1
        self.assertEqual(d.wait(), 1)
        self.assertIn("is writable by others", d.read_log())
        # Sticky, like /tmp, keeps others from removing our socket but not
        # from taking its name while ptod restarts: refused as well
        # (test_socket_squat.py).  Sticky further up is fine.
        os.chmod(parent, 0o1777)
        own = os.path.join(parent, "own")
        os.mkdir(own, 0o750)
        d = self.daemon(socket_path=os.path.join(own, "ptod.sock"))
        self.assertEqual(d.call("ping")["state"], "ready")

    @unittest.skipUnless(os.geteuid() == 0, "needs root to hand a directory to another user")
    def test_directory_of_another_user_is_refused(self):
        parent = os.path.join(self.tmpdir(), "theirs")
        os.mkdir(parent, 0o755)
        os.chown(parent, 65534, 65534)
        d = self.daemon(socket_path=os.path.join(parent, "ptod.sock"), ready=False)
        d.expected_exit = 1
        self.assertEqual(d.wait(), 1)
        self.assertIn("belongs to uid 65534", d.read_log())

    @unittest.skipUnless(os.geteuid() == 0, "needs root to hand a directory to another user")
    def test_ancestor_of_another_user_is_refused(self):
        """Not only the parent: a directory further up that another user
        owns lets them rename our directory away and put theirs in place."""
        theirs = os.path.join(self.tmpdir(), "theirs")
        os.mkdir(theirs, 0o755)
        ours = os.path.join(theirs, "ours")
        os.mkdir(ours, 0o750)
        os.chown(theirs, 65534, 65534)
        d = self.daemon(socket_path=os.path.join(ours, "ptod.sock"), ready=False)
        d.expected_exit = 1
        self.assertEqual(d.wait(), 1)
        self.assertIn("Directory '%s' on the way to the socket belongs to uid 65534" % theirs,
                      d.read_log())
        self.assertNotIn("Prewarming", d.read_log())

    @unittest.skipUnless(os.geteuid() == 0, "needs root to hand a link to another user")
    def test_link_of_another_user_is_refused(self):
        base = self.tmpdir()
        real = os.path.join(base, "real")
        os.mkdir(real, 0o750)
        link = os.path.join(base, "link")
        os.symlink(real, link)
        os.lchown(link, 65534, 65534)
        d = self.daemon(socket_path=os.path.join(link, "ptod.sock"), ready=False)
        d.expected_exit = 1
        self.assertEqual(d.wait(), 1)
        self.assertIn("is a symbolic link of uid 65534", d.read_log())
        os.lchown(link, 0, 0)  # one of ours leads to a directory of ours: fine
        d = self.daemon(socket_path=os.path.join(link, "ptod.sock"))
        self.assertEqual(d.call("ping")["state"], "ready")

    def test_stale_socket_is_replaced(self):
        path = os.path.join(self.tmpdir(), "stale.sock")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.bind(path)
        s.close()  # the file stays, nobody listens: what a killed daemon leaves
        self.assertTrue(stat.S_ISSOCK(os.stat(path).st_mode))
        d = self.daemon(socket_path=path)
        self.assertEqual(d.call("ping")["state"], "ready")
        self.assertIn("Removed stale socket", d.read_log())
        d.stop()
        self.assertFalse(os.path.exists(path))  # removed at exit

    def test_live_daemon_is_not_replaced(self):
        first = self.daemon()
        second = self.daemon(socket_path=first.socket, ready=False)
        second.expected_exit = 1
        self.assertNotEqual(second.wait(), 0)
        self.assertIn("Another daemon is already serving on '%s'" % first.socket, second.read_log())
        # It noticed before building an arena, not after.
        self.assertNotIn("Prewarming", second.read_log())
        self.assertEqual(first.call("ping")["state"], "ready")
        self.assertTrue(os.path.exists(first.socket))

    def test_path_that_is_not_a_socket_is_refused(self):
        path = os.path.join(self.tmpdir(), "file.sock")
        with open(path, "w") as f:
            f.write("precious")
        d = self.daemon(socket_path=path, ready=False)
        d.expected_exit = None
        self.assertNotEqual(d.wait(), 0)
        self.assertIn("is not a socket", d.read_log())
        with open(path) as f:
            self.assertEqual(f.read(), "precious")


if __name__ == "__main__":
    harness.main()
