# SPDX-License-Identifier: Apache-2.0
"""The loop never waits on a client (docs/reliability.md, "Attacks"): a
client passes, with SCM_RIGHTS, a TCP socket whose close waits (unsent data
and SO_LINGER {1, 60}), or replaces the config file by a FIFO, whose open()
waits for a writer.  Before, the loop thread closed the last reference to
the socket (or opened the FIFO on SIGHUP) and every other client waited:
60 s, or for ever.  The same when the socket was still queued, unread, in
a connection the daemon closed (the kernel drops it in the closing
thread).  Now a passed fd that is not a memfd is closed on a helper
thread, so is every closed connection's socket, and the config is opened
with O_NONBLOCK and must be a regular file.

The assertion is never a wall time: the honest client's timeout is well
below the time the attacker's socket lingers, so an answer at all shows
that the loop did not wait for it.
"""

import array
import errno
import os
import signal
import socket
import struct

from adversary import *  # noqa: F401,F403
import harness

LINGER_S = 60
HONEST_TIMEOUT_S = 20  # well below LINGER_S: an answer proves the loop did not wait


def lingering_tcp_socket():
    """A connected TCP socket whose close() waits LINGER_S seconds: its peer
    (kept open, never read) has a full receive window, so data stays unsent,
    and SO_LINGER is {1, LINGER_S}.  Returns (socket, what to keep open)."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    s.connect(listener.getsockname())
    peer, _ = listener.accept()
    s.setblocking(False)
    chunk = b"x" * 65536
    try:
        while True:
            s.send(chunk)
    except BlockingIOError:
        pass
    s.setblocking(True)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, LINGER_S))
    return s, (listener, peer)


def send_with_fds(sock, msgid, method, fds):
    data = harness.msgpack.packb([0, msgid, method, []], use_bin_type=True)
    sock.sendmsg([data], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))])


class LingerFd(DaemonTest):
    def setUp(self):
        self.d = self.daemon()
        self.kept = []
        self.addCleanup(lambda: [k.close() for pair in self.kept for k in pair])

    def pass_lingering_socket(self):
        """An attacker connection passes a lingering TCP socket with a ping,
        closes its own copy and leaves."""
        tcp, keep = lingering_tcp_socket()
        self.kept.append(keep)
        with harness.Client(self.d.socket, timeout=HONEST_TIMEOUT_S) as attacker:
            send_with_fds(attacker.sock, 1, "ping", [tcp.fileno()])
            tcp.close()  # the daemon holds the last reference now
            attacker.recv(1)

    def test_parked_tcp_socket_closed_off_the_loop(self):
        self.pass_lingering_socket()
        # The attacker's connection closed: the daemon drops what it parked.
        self.assertEqual(honest_ping(self.d, timeout=HONEST_TIMEOUT_S)["state"], "ready")
        report(self, "linger-fd", honest_errors=0)

    def test_register_with_a_tcp_socket_is_refused_and_closed_off_the_loop(self):
        tcp, keep = lingering_tcp_socket()
        self.kept.append(keep)
        with harness.Client(self.d.socket, timeout=HONEST_TIMEOUT_S) as c:
            data = harness.msgpack.packb([0, 1, "shm.register", [{"name": "r", "bytes": 4096}]],
                                         use_bin_type=True)
            # The fd with the first byte; the rest once our copy is closed,
            # so that the daemon's is the last whatever it does with it.
            c.sock.sendmsg([data[:1]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                                         array.array("i", [tcp.fileno()]))])
            tcp.close()
            c.send_raw(data[1:])
            self.assertError(c.error(1), "INVALID_ARGS", contains=["not a memfd"])
            self.assertEqual(honest_ping(self.d, timeout=HONEST_TIMEOUT_S)["state"], "ready")
            self.assertEqual(c.call("shm.list"), [])


class UnreadFd(DaemonTest):
    def test_fd_still_queued_in_the_socket_when_the_connection_closes(self):
        # max_pending = 1 and a long dispatch: the daemon stops reading the
        # attacker, whose ping with the lingering socket stays in the Unix
        # socket's queue, unread.  Closing the connection drops it there.
        d = self.daemon(config={"daemon": {"max_pending": "1"}})
        tcp, keep = lingering_tcp_socket()
        self.addCleanup(lambda: [k.close() for k in keep])
        with d.client(timeout=HONEST_TIMEOUT_S) as honest:
            attacker = harness.Client(d.socket, timeout=HONEST_TIMEOUT_S)
            attacker.send("dispatch", harness.noop(task_us=harness.HOLD_US // 4))
            wait_until(lambda: honest.call("status")["queue"]["running"] == 1,
                       what="the dispatch to run")
            send_with_fds(attacker.sock, 2, "ping", [tcp.fileno()])
            tcp.close()
            attacker.close()
            # The daemon closes the attacker's connection once its dispatch
            # is done; then the honest client is still answered.
            wait_until(lambda: honest.call("status")["clients"] == 1,
                       what="the attacker's connection to close")
            self.assertEqual(honest.call("ping")["state"], "ready")


class FifoConfig(DaemonTest):
    def test_reload_of_a_fifo_config_is_refused(self):
        d = self.daemon()
        os.unlink(d.config_path)
        os.mkfifo(d.config_path)
        self.addCleanup(self.unblock, d.config_path)
        start = len(d.notify.snapshot())
        d.signal(signal.SIGHUP)
        i = d.notify.wait_for("RELOADING=1", start=start)
        # open() of a FIFO with no writer would wait for ever.
        self.assertEqual(honest_ping(d, timeout=HONEST_TIMEOUT_S)["state"], "ready")
        d.notify.wait_for("READY=1", start=i + 1)
        self.assertIn("is not a regular file", d.read_log())

    def test_start_with_a_fifo_config_fails(self):
        tmp = harness.tempfile.mkdtemp(prefix="ptod-test-")
        self.addCleanup(harness.shutil.rmtree, tmp, True)
        path = os.path.join(tmp, "ptod.conf")
        os.mkfifo(path)
        proc = harness.subprocess.run([harness.PTOD, "--config", path], timeout=HONEST_TIMEOUT_S,
                                      stdout=harness.subprocess.PIPE,
                                      stderr=harness.subprocess.STDOUT, text=True)
        self.assertEqual(proc.returncode, 78, proc.stdout)
        self.assertIn("is not a regular file", proc.stdout)

    @staticmethod
    def unblock(path):
        """Let a daemon stuck in open() of the FIFO (the old code) go on."""
        try:
            fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK)
            os.close(fd)
        except OSError as e:
            if e.errno != errno.ENXIO:
                raise


if __name__ == "__main__":
    main()
