# SPDX-License-Identifier: Apache-2.0
"""Unread answers and pending requests (issue 18, item 1): a client pipelines
requests and never reads what comes back.

The daemon must count what it really holds for such a client — each answer
at its allocated size, each pending request with its decoded form — so that
output_limit, input_limit and clients_memory bound the daemon's memory, not
a fraction of it.  On 934b52e every ping answer was an 8 KiB sbuffer counted
by its ~70-byte length, and every pending request held msgpack-c's two
8 KiB zone chunks counted as its wire bytes: RSS grew 10-75x what status
counted.
"""

import contextlib
import os
import signal
import socket
import time

import msgpack

from adversary import *  # noqa: F401,F403

KIB = 1024
MIB = 1 << 20


def pipeline(path, method, params, count, first_id=1):
    """A connection that sends `count` requests and reads nothing.  Returns
    the socket, and whether the daemon cut it off while it was sending."""
    sock = connect_unix(path, 120)  # waits behind a full backlog: hundreds connect at once
    body = [] if params is None else [params]
    batch = b"".join(msgpack.packb([0, first_id + i, method, body], use_bin_type=True)
                     for i in range(count))
    try:
        sock.sendall(batch)
    except (BrokenPipeError, ConnectionResetError):
        return sock, True
    return sock, False


class UnreadPings(DaemonTest):
    OUTPUT_LIMIT = MIB * SCALE

    def test_unread_pings_cost_what_is_counted(self):
        """Pings pipelined without reading: the attacker is cut at
        output_limit, the daemon's RSS grows by about what that limit
        counts, not 73 times it, and is back within 32 MiB of rest 5 s
        after."""
        d = self.daemon(config={"daemon": {"output_limit": str(self.OUTPUT_LIMIT)}},
                        env=rss_env())
        honest = HonestPinger(d).start()
        rest = vmrss_kib(d.pid)
        sampler = RssSampler(d.pid).start()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(120)
        sock.connect(d.socket)
        batch = b"".join(msgpack.packb([0, i, "ping", []]) for i in range(20000))
        cut = False
        try:
            for _ in range(1000):  # a bound, not a figure: ~1.4 GiB of answers
                sock.sendall(batch)
        except (BrokenPipeError, ConnectionResetError):
            cut = True
        finally:
            sampler.stop()
            sock.close()
            honest.stop()
        self.assertTrue(cut, "the attacker was never disconnected")
        wait_until(lambda: "output_limit %d" % self.OUTPUT_LIMIT in d.read_log(),
                   what="the output_limit disconnect to be logged")
        growth = sampler.peak - rest
        counted = self.OUTPUT_LIMIT // KIB
        time.sleep(5)  # the target: RSS back 5 s after the attacker left
        after = vmrss_kib(d.pid)
        report(self, "unread-pings", rss_growth_kib=growth, counted_kib=counted,
               rss_after_kib=after, rss_rest_kib=rest, honest_p99_ms="%.1f" % honest.p99_ms(),
               honest_errors=len(honest.errors))
        if RSS_GIVEN_BACK:
            self.assertLessEqual(after, rest + 32 * KIB)
        self.assertEqual(honest.errors, [])
        self.assertTrue(honest.latencies, "the honest client was never answered")
        self.assertLessEqual(growth, rss_bound_kib(counted),
                             "RSS grew %d KiB for %d KiB counted" % (growth, counted))

    def test_unread_pings_are_charged_about_their_bytes(self):
        """20,000 pings never read: what the daemon holds for their answers
        (status's most_output) is about their bytes — small answers queued
        behind others share blocks.  On 2deab0c each 88-byte answer cost an
        allocation and a chunk record, 160 bytes."""
        d = self.daemon()
        count = 20000
        answer = len(msgpack.packb([1, count, None, d.call("ping")]))
        calls = []

        def others():  # requests other than the pings: each of these calls counts itself
            calls.append(1)
            return metric(parse_prometheus(d.call("metrics"))[0], "ptod_requests_total") - len(calls)

        base = others()
        sock, cut = pipeline(d.socket, "ping", None, count)
        self.addCleanup(sock.close)
        self.assertFalse(cut)
        wait_until(lambda: others() - base >= count, what="every ping to be answered")
        held = d.status()["client_memory"]["per_connection"]["most_output"]
        report(self, "unread-ping-bytes", answers_bytes=count * answer, held_bytes=held)
        # At most all of them are queued (the socket took some):
        self.assertLessEqual(held, 1.1 * count * answer + 64 * KIB,
                             "%d bytes held for %d answers of %d bytes" % (held, count, answer))

    def test_honest_request_waits_one_turn_not_the_whole_pipeline(self):
        """Pipelined pings already waiting in the daemon's socket when an
        honest request arrives: the loop serves the honest one after one
        turn of the pipeline (1 ms of it), not after every ping it read
        with it.  On 2deab0c the daemon read and answered 4 x 64 KiB of
        pings (all of them here) first.  (SIGSTOP only lines the bytes up:
        nothing here is timed.)"""
        d = self.daemon()
        attacker = harness.Client(d.socket)
        honest = harness.Client(d.socket)
        self.addCleanup(attacker.close)
        self.addCleanup(honest.close)
        attacker.call("ping")  # both accepted before the daemon stops
        before = metric(parse_prometheus(honest.call("metrics"))[0], "ptod_requests_total")
        ping = msgpack.packb([0, 7, "ping", []])
        sent = 0
        os.kill(d.pid, signal.SIGSTOP)
        try:
            attacker.sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                while True:  # as many as the socket takes: ~20,000
                    sent += attacker.sock.send(ping * 1024)
            msgid = honest.send("metrics")
        finally:
            os.kill(d.pid, signal.SIGCONT)
        pings = sent // len(ping)
        served = metric(parse_prometheus(honest.result(msgid))[0], "ptod_requests_total")
        ahead = served - before - 1  # less the honest request itself
        report(self, "pipeline-turns", pings_queued=pings, served_before_honest=ahead)
        self.assertGreater(pings, 4096)
        self.assertLess(ahead, pings / 2, "the honest request waited for %d of %d pings" %
                        (ahead, pings))


class PendingDispatches(DaemonTest):
    CONNECTIONS = 32 * SCALE
    QUEUE_DEPTH = 65536  # the most queue_depth takes: every attacker's dispatch fits
    EACH = min(1024, QUEUE_DEPTH // CONNECTIONS)

    @contextlib.contextmanager
    def queue_behind_hold(self, d, total):
        """Every attacker's dispatch queued behind one long noop that holds
        the device: yields the attackers' sockets, closed at exit.  The hold
        is a time (the device has no other gate), so where reading them all
        took longer than it (a sanitizer build on a loaded machine), the
        attack is run again behind a hold four times longer: the
        measurement is always taken with everything queued."""
        for hold in holds(d, task_us=10000000):
            sockets = [pipeline(d.socket, "dispatch", noop(), self.EACH)[0]
                       for _ in range(self.CONNECTIONS)]
            try:
                wait_until(lambda: (lambda s: s["queue"]["depth"] >= total or
                                    s["dispatches"]["ok"] > hold.ran)(d.status()),
                           what="every dispatch to be queued, or the hold to end")
                if hold.lasted():
                    yield sockets
                    return
            finally:
                for s in sockets:
                    s.close()
                hold.client.close()
            wait_until(lambda: d.status()["queue"]["depth"] == 0, what="the queue to empty")

    def test_pending_requests_cost_what_is_counted_and_go_back(self):
        """32 connections pipeline 1024 no-op dispatches each (256 x 256 at
        scale 8) behind a held device, reading nothing: the daemon's RSS
        grows by about what status counts as client input, and 5 s after
        they leave it is back within 32 MiB of where it was."""
        # Room for every attacker (beyond max_clients, connect() waits in
        # the backlog, and a full backlog refuses with EAGAIN: at scale 8,
        # 256 attackers and the honest clients), and for all their
        # dispatches in the queue.
        total = self.CONNECTIONS * self.EACH
        d = self.daemon(config={"daemon": {"queue_depth": str(self.QUEUE_DEPTH),
                                           "max_clients": str(self.CONNECTIONS + 8)}},
                        env=rss_env())
        honest = HonestPinger(d).start()
        base = d.status()["client_memory"]["input"]
        rest = vmrss_kib(d.pid)
        total = self.CONNECTIONS * self.EACH
        with self.queue_behind_hold(d, total) as sockets:
            memory = d.status()["client_memory"]
            counted = (memory["input"] - base) // KIB
            growth = vmrss_kib(d.pid) - rest
            # Shown per connection too: each attacker holds its share.
            self.assertEqual(memory["per_connection"]["input_limit"], 256 * MIB)
            self.assertGreaterEqual(memory["per_connection"]["most_input"],
                                    0.9 * counted * KIB / self.CONNECTIONS)
            samples, _ = parse_prometheus(d.call("metrics"))
            self.assertGreaterEqual(
                metric(samples, "ptod_client_connection_held_max_bytes", use="input"),
                0.9 * counted * KIB / self.CONNECTIONS)
        wait_until(lambda: d.status()["queue"]["depth"] == 0, what="the queue to empty")
        # (The honest pinger's own request may be in flight: a few bytes.)
        wait_until(lambda: d.status()["client_memory"]["input"] <= base + 64 * KIB,
                   what="the attackers' requests to be released")
        time.sleep(5)  # the target: RSS back 5 s after the attacker left
        after = vmrss_kib(d.pid)
        honest.stop()
        report(self, "pending-dispatches", rss_growth_kib=growth, counted_kib=counted,
               rss_after_kib=after, rss_rest_kib=rest,
               honest_p99_ms="%.1f" % honest.p99_ms(), honest_errors=len(honest.errors))
        self.assertEqual(honest.errors, [])
        self.assertTrue(honest.latencies, "the honest client was never answered")
        self.assertLessEqual(growth, rss_bound_kib(counted),
                             "RSS grew %d KiB for %d KiB counted" % (growth, counted))
        if RSS_GIVEN_BACK:
            self.assertLessEqual(after, rest + 32 * KIB,
                                 "RSS %d KiB 5 s after the burst, %d KiB before" % (after, rest))


if __name__ == "__main__":
    main()
