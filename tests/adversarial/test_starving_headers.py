# SPDX-License-Identifier: Apache-2.0
"""Headers that announce huge messages (issue 18, item 2): connections send
the first bytes of a message announcing a large bin, then nothing more.

The daemon must charge what it received, not what a header announces, and
a connection over its share must not starve the others: while all clients
together are over clients_memory, every connection may still hold a small
allowance (64 KiB), so an honest ping is read and answered.  On 934b52e
the read buffer was grown at once to what the header announced and counted
so: a few 36-byte connections put the daemon over clients_memory, and from
then on only one connection (an attacker, mid-message) was read.
"""

import socket
import struct
import threading

import msgpack

from adversary import *  # noqa: F401,F403

KIB = 1024
MIB = 1 << 20


def announcing_header(data_bytes):
    """The first bytes of a buffer.write whose data is a bin of data_bytes:
    everything up to the bin's body."""
    empty = msgpack.packb([0, 1, "buffer.write", [{"name": "w", "data": b""}]],
                          use_bin_type=True)
    assert empty.endswith(b"\xc4\x00")
    return empty[:-2] + b"\xc6" + struct.pack(">I", data_bytes)


def twenty_honest_pings(daemon):
    """An honest client pings 20 times (or fails); returns its HonestPinger."""
    honest = HonestPinger(daemon, timeout=30).start()
    wait_until(lambda: len(honest.latencies) >= 20 or honest.errors, what="20 honest pings")
    return honest.stop()


def connect(path):
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(120)
    sock.connect(path)
    return sock


class StarvingHeaders(DaemonTest):
    ATTACKERS = 8 * SCALE
    CONFIG = {"daemon": {"clients_memory": "64M", "max_message": "32M", "client_timeout": "3600s"}}

    def test_headers_are_charged_what_was_received(self):
        """8 connections send a 36-byte header announcing a ~32 MiB bin
        (clients_memory 64M): the daemon counts the bytes received, and an
        honest ping is answered."""
        d = self.daemon(config=self.CONFIG, env=rss_env())
        header = announcing_header(32 * MIB - 128)
        base = d.status()["client_memory"]["input"]
        rest = vmrss_kib(d.pid)
        attackers = [connect(d.socket) for _ in range(self.ATTACKERS)]
        try:
            for s in attackers:
                s.sendall(header)
            expected = base + self.ATTACKERS * len(header)
            wait_until(lambda: d.status()["client_memory"]["input"] >= expected,
                       what="the headers to be read")
            counted = d.status()["client_memory"]["input"] - base
            honest = twenty_honest_pings(d)
            growth = vmrss_kib(d.pid) - rest
        finally:
            for s in attackers:
                s.close()
        report(self, "starving-headers", rss_growth_kib=growth, counted_kib=counted // KIB,
               honest_p99_ms="%.1f" % honest.p99_ms(), honest_errors=len(honest.errors))
        self.assertEqual(honest.errors, [])
        self.assertEqual(counted, self.ATTACKERS * len(header))
        self.assertLessEqual(growth, rss_bound_kib(counted / KIB))

    def test_honest_ping_is_answered_while_clients_are_over_clients_memory(self):
        """4 connections each send 8 MiB of a ~32 MiB message and stall
        (clients_memory 16M, so all clients are over it): an honest ping
        on a new connection is still read and answered, and the daemon
        holds no more than it counts, within its bound."""
        config = {"daemon": dict(self.CONFIG["daemon"], clients_memory="16M")}
        d = self.daemon(config=config, env=rss_env())
        header = announcing_header(32 * MIB - 128)
        rest = vmrss_kib(d.pid)
        attackers = [connect(d.socket) for _ in range(4 * SCALE)]
        senders = []

        def send_part(sock):
            try:
                sock.sendall(header + bytes(8 * MIB))
            except OSError:
                pass  # closed at the end of the test, still blocked

        try:
            for s in attackers:
                t = threading.Thread(target=send_part, args=(s,), daemon=True)
                t.start()
                senders.append(t)
            wait_until(lambda: d.status()["client_memory"]["input"] >= 16 * MIB,
                       what="all clients to be over clients_memory")
            held = d.status()["client_memory"]["input"]
            honest = twenty_honest_pings(d)
            growth = vmrss_kib(d.pid) - rest
        finally:
            for s in attackers:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            for t in senders:
                t.join()
        report(self, "over-clients-memory", rss_growth_kib=growth, counted_kib=held // KIB,
               honest_p99_ms="%.1f" % honest.p99_ms(), honest_errors=len(honest.errors))
        self.assertEqual(honest.errors, [])
        # All clients together: clients_memory, one message finishing (the
        # pass) and each connection's allowance.
        self.assertLessEqual(held, 16 * MIB + 32 * MIB + (len(attackers) + 2) * 64 * KIB)
        self.assertLessEqual(growth, rss_bound_kib(held / KIB))
        # All clients together: 1.25 x clients_memory + 64 MiB.
        self.assertLessEqual(growth, rss_bound_kib(16 * KIB, slack_kib=64 * KIB))


if __name__ == "__main__":
    main()
