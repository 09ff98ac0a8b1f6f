# SPDX-License-Identifier: Apache-2.0
"""The connection layer as its users meet it (docs/protocol.md, "Flow control,
fairness and memory"): a pipelining client is never refused, one connection's
pipeline does not delay the others, every byte held for a client is bounded,
answers are never lost to a later error, slow and idle clients are cut off,
and what the daemon echoes or logs for a client stays bounded and valid.

Each test reproduces one measurement of the connection-layer issue; RSS
bounds are wide (an order of magnitude under what the old daemon took).
"""

import os
import socket
import struct
import sys
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import harness  # noqa: E402
from harness import hold_device, metric, noop, parse_prometheus, wait_until  # noqa: E402

MIB = 1 << 20


def request(msgid, method, params=None):
    return msgpack.packb([0, msgid, method, [] if params is None else [params]], use_bin_type=True)


def array_header(n):
    return b"\xdd" + struct.pack(">I", n)


def send_until_refused(client, data):
    """Send data; a daemon that refuses the message closes before it has
    all of it, which is fine: its answer is already on the way."""
    try:
        client.send_raw(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


class Pipelining(harness.DaemonTest):
    def test_pipeline_beyond_queue_depth_is_answered_not_refused(self):
        """250 noops back to back on one connection (queue_depth 64): every
        one succeeds, none is BUSY."""
        d = self.daemon()
        with d.client() as c:
            c.send_raw(b"".join(request(i, "dispatch", noop()) for i in range(1, 251)))
            for i in range(1, 251):
                self.assertEqual(c.result(i)["tasks"], 1)
            s = c.call("status")
        self.assertEqual(s["dispatches"]["ok"], 250)
        self.assertEqual(s["dispatches"]["rejected"], 0)

    def test_pipeline_beyond_max_pending_waits_in_the_socket(self):
        """A pipeline four times max_pending deep: reading pauses and
        resumes; every request is answered, in the connection's order for
        the device."""
        d = self.daemon(config={"daemon": {"max_pending": "8"}})
        with d.client() as c:
            c.send_raw(b"".join(request(i, "buffer.alloc", {"name": "b%d" % i, "bytes": 8})
                                for i in range(1, 33)))
            for i in range(1, 33):
                self.assertEqual(c.result(i), {"name": "b%d" % i, "bytes": 8})
            self.assertEqual(len(c.call("buffer.list")), 32)

    def test_queue_full_busy_fails_fast(self):
        d = self.daemon(config={"daemon": {"queue_depth": "4", "queue_full": "busy"}})
        with d.client() as c:
            hold = hold_device(d, c)
            sent = [c.send("dispatch", noop()) for _ in range(20)]
            outcomes = []
            for msgid in sent:
                err, _ = c.recv(msgid)
                outcomes.append(err["name"] if err else "ok")
            c.result(hold)
        self.assertEqual(outcomes.count("ok"), 4, outcomes)
        self.assertEqual(outcomes.count("BUSY"), 16, outcomes)


class Fairness(harness.DaemonTest):
    def test_light_connection_is_not_queued_behind_a_pipeline(self):
        """A connection pipelines 300 dispatches of 3 ms; another's single
        noop waits a few dispatches, not the pipeline (FIFO: ~900 ms)."""
        d = self.daemon(config={"daemon": {"queue_depth": "512"}})
        with d.client() as heavy, d.client() as light:
            heavy.send_raw(b"".join(request(i, "dispatch", noop(task_us=3000)) for i in range(1, 301)))
            first = heavy.result(1)
            heavy.result(2)
            run_us = max(first["timing_us"]["run"], 1)
            result = light.call("dispatch", noop())
            for i in range(3, 301):
                heavy.result(i)
        # A few dispatches' worth of waiting; the whole pipeline would be
        # about 300 of them.
        self.assertLess(result["timing_us"]["queue"], 30 * run_us,
                        (result["timing_us"], run_us))


class Memory(harness.DaemonTest):
    def rss_growth_kib(self, d, attack):
        before = harness.vmrss_kib(d.pid)
        sampler = harness.RssSampler(d.pid).start()
        try:
            attack()
        finally:
            sampler.stop()
        harness.figures(self, rss_before_kib=before, rss_peak_kib=sampler.peak)
        return sampler.peak - before

    def test_loop_answers_count_against_output_limit(self):
        """16 clients pipeline `metrics` and never read, output_limit = 1K:
        each is cut off at its limit and the daemon stays small (the old one
        grew by 333 MiB)."""
        d = self.daemon(config={"daemon": {"output_limit": "1K"}}, env=harness.rss_env())
        hogs = []

        def attack():
            for _ in range(16):
                h = harness.Client(d.socket)
                self.addCleanup(h.close)
                h.sock.setblocking(False)
                data = b"".join(request(i, "metrics") for i in range(1, 20001))
                try:
                    h.sock.send(data)
                except (BlockingIOError, BrokenPipeError, ConnectionResetError):
                    pass
                hogs.append(h)
            wait_until(lambda: d.status()["clients"] == 1, what="the hogs to be cut off")

        growth = self.rss_growth_kib(d, attack)
        self.assertLess(growth, 64 * 1024)
        self.assertGreaterEqual(d.read_log().count("output_limit 1024"), 1)
        self.assertEqual(d.status()["client_memory"]["output"], 0)

    def test_a_message_of_nils_is_refused_at_its_header(self):
        """A 64 MiB message of nils would decode to 1.6 GiB: refused by
        max_objects when its header arrives, answered to its msgid."""
        d = self.daemon(env=harness.rss_env())
        with d.client() as c:
            head = b"\x94\x00\x07\xa4ping\x91" + array_header(64 * MIB - 64)

            def attack():
                send_until_refused(c, head + b"\xc0" * MIB)
                msgs = c.read_until_eof()
                self.assertEqual(len(msgs), 1, msgs)
                self.assertEqual(msgs[0][:2], [1, 7])
                self.assertEqual(msgs[0][2]["name"], "MESSAGE_TOO_LARGE")
                self.assertIn("max_objects = 1048576", msgs[0][2]["message"])

            self.assertLess(self.rss_growth_kib(d, attack), 64 * 1024)
        self.assertEqual(d.call("ping")["state"], "ready")

    def test_many_small_args_are_refused_before_they_queue(self):
        """Dispatches whose args are long arrays of tiny maps: under
        max_objects they are refused at admission (noop takes 3 args) and
        never queued; over it they are refused by the reader."""
        d = self.daemon(env=harness.rss_env())
        held = {}

        def attack():
            with d.client() as c:
                hold = hold_device(d, c)
                args = [{"scalar": 1}] * 300000  # 900k objects, under the cap
                ids = [c.send("dispatch", {"program": "noop", "args": args}) for _ in range(6)]
                for msgid in ids:
                    self.assertError(c.error(msgid), "INVALID_ARGS", contains=["at most 3 arguments"])
                held["queue"] = c.call("status")["queue"]["depth"]
                c.result(hold)
            with d.client() as c:
                send_until_refused(c, request(9, "dispatch",
                                              {"program": "noop", "args": [{"out": 0}] * 2000000}))
                msgs = c.read_until_eof()
                self.assertEqual(msgs[0][2]["name"], "MESSAGE_TOO_LARGE")

        growth = self.rss_growth_kib(d, attack)
        self.assertEqual(held["queue"], 0)
        self.assertLess(growth, 256 * 1024)
        # What is left is the status request's own connection: its read
        # buffer and the request itself.
        wait_until(lambda: d.status()["client_memory"]["input"] < 128 * 1024,
                   what="the input to be released")

    def test_input_budget_pauses_reading(self):
        """A client pipelining 1 MiB writes while the device is held: the
        daemon stops reading it at input_limit (4M here) and every write is
        applied once the device is free."""
        d = self.daemon(config={"daemon": {"input_limit": "4M"}}, env=harness.rss_env())
        payload = bytes(MIB)
        stream = b"".join(request(i, "buffer.write", {"name": "w", "data": payload})
                          for i in range(1, 41))
        with d.client() as c:
            c.call("buffer.alloc", {"name": "w", "bytes": MIB})
            for hold in harness.holds(d, task_us=10000000):
                c.sock.setblocking(False)
                sent, stalled_since = 0, time.monotonic()
                # Until the daemon has taken nothing for half a second.
                while sent < len(stream) and time.monotonic() - stalled_since < 0.5:
                    try:
                        sent += c.sock.send(stream[sent:])
                        stalled_since = time.monotonic()
                    except BlockingIOError:
                        time.sleep(0.01)
                held_throughout = hold.lasted()
                if held_throughout:
                    self.assertLess(sent, len(stream),
                                    "the daemon read everything while the device was held")
                    self.assertLessEqual(d.status()["client_memory"]["input"], 4 * MIB + 4 * MIB)
                hold.end()
                c.sock.setblocking(True)
                c.send_raw(stream[sent:])
                for i in range(1, 41):
                    self.assertEqual(c.result(i), {"bytes": MIB})
                if held_throughout:
                    return


class NoLostAnswers(harness.DaemonTest):
    def check_answered_then_closed(self, bad):
        d = self.daemon()
        with d.client() as c:
            c.send_raw(request(1, "dispatch", noop(task_us=20000)) + bad)
            msgs = c.read_until_eof()
        self.assertGreaterEqual(len(msgs), 2, msgs)
        self.assertEqual(msgs[0][:3], [1, 1, None])
        self.assertEqual(msgs[0][3]["tasks"], 1)
        return msgs[1:]

    def test_reserved_byte(self):
        last = self.check_answered_then_closed(b"\xc1")
        self.assertEqual(last[0][:2], [2, "error"])
        self.assertEqual(last[0][2][0]["name"], "INVALID_REQUEST")

    def test_negative_msgid(self):
        last = self.check_answered_then_closed(msgpack.packb([0, -1, "ping", []]))
        self.assertEqual(last[0][:2], [2, "error"])

    def test_oversized_header(self):
        last = self.check_answered_then_closed(b"\x94\x00\x05\xa4ping\x91\xc6\xff\xff\xff\xff")
        self.assertEqual(last[0][:2], [1, 5])
        self.assertEqual(last[0][2]["name"], "MESSAGE_TOO_LARGE")


class Timeouts(harness.DaemonTest):
    def test_client_timeout_counts_from_the_first_byte(self):
        """One byte every 200 ms does not reset client_timeout (1 s): the
        client is cut off long before its 40-byte message is complete."""
        d = self.daemon(config={"daemon": {"client_timeout": "1s"}})
        msg = request(1, "buffer.list", {"x": "y" * 30})
        self.assertGreater(len(msg), 35)
        with d.client() as c:
            start = time.monotonic()
            cut = False
            for b in msg[:-1]:
                try:
                    c.send_raw(bytes([b]))
                except (BrokenPipeError, ConnectionResetError):
                    cut = True
                    break
                time.sleep(0.2)
            elapsed = time.monotonic() - start
            self.assertTrue(cut, "still connected after %.1f s" % elapsed)
        self.assertIn("client_timeout = 1000 ms", d.read_log())

    def test_idle_timeout(self):
        d = self.daemon(config={"daemon": {"idle_timeout": "300ms"}})
        with d.client() as c:
            self.assertEqual(c.call("ping")["state"], "ready")
            self.assertEqual(c.read_until_eof(), [])

    def test_huge_deadline_means_none(self):
        d = self.daemon()
        with d.client() as c:
            for deadline in (2 ** 60, 2 ** 63 - 1):
                self.assertEqual(c.call("dispatch", noop(deadline_ms=deadline))["tasks"], 1)


class Echoes(harness.DaemonTest):
    def test_unknown_utf8_key_is_cut_on_a_character(self):
        """A 90-byte key of two-byte characters comes back whole characters
        only, in an error map that is valid UTF-8, and the connection goes
        on."""
        d = self.daemon()
        key = "é" * 45
        with d.client() as c:
            raw = request(1, "dispatch", {"program": "noop", "args": [], key: 1})
            c.send_raw(raw)
            err = c.error(1)  # raw=False: invalid UTF-8 would raise here
            self.assertError(err, "INVALID_REQUEST", contains=["unknown key 'é"])
            shown = err["message"].split("'")[1]
            self.assertTrue(set(shown.rstrip(".")) <= {"é"}, shown)
            self.assertTrue(key.startswith(shown.rstrip(".")))
            err = c.call_err("dispatch", {"program": "noop", "args": [{key: None}]})
            self.assertIn("is nil", err["message"])
            self.assertEqual(c.call("ping")["state"], "ready")

    def test_invalid_utf8_is_escaped(self):
        d = self.daemon()
        with d.client() as c:
            raw = (b"\x94\x00\x02\xa8dispatch\x91\x83\xa7program\xa4noop\xa4args\x90"
                   b"\xa4\xff\xfe\xc3\x28\x01")
            c.send_raw(raw)
            err = c.error(2)
            self.assertIn("\\xff\\xfe\\xc3(", err["message"])


class Reload(harness.DaemonTest):
    def test_lower_max_message_applies_to_existing_connections(self):
        d = self.daemon()
        with d.client() as c:
            c.call("buffer.alloc", {"name": "b", "bytes": 256 * 1024})
            sections = dict(d.sections)
            sections["daemon"] = dict(sections["daemon"], max_message="64K")
            d.reload(sections)
            self.assertEqual(c.call("ping")["state"], "ready")
            c.send("buffer.write", {"name": "b", "data": bytes(128 * 1024)})
            msgs = c.read_until_eof()
        self.assertEqual(msgs[0][2]["name"], "MESSAGE_TOO_LARGE", msgs)
        self.assertIn("max_message (65536 bytes)", msgs[0][2]["message"])


class Logs(harness.DaemonTest):
    def test_client_caused_lines_are_rate_limited(self):
        """200 clients each sending garbage at log_level = info: at most the
        burst is logged, the rest counted and reported."""
        d = self.daemon(config={"daemon": {"log_level": "info"}})
        for _ in range(200):
            with d.client() as c:
                c.send_raw(b"\xc1")
                c.read_until_eof()
        lines = d.read_log().count("cannot be read")
        self.assertLessEqual(lines, 50)
        samples, _ = parse_prometheus(d.call("metrics"))
        self.assertGreaterEqual(metric(samples, "ptod_log_lines_suppressed_total"), 150)
        time.sleep(10.5)  # the next window: its first line reports the count
        with d.client() as c:
            c.send_raw(b"\xc1")
            c.read_until_eof()
        wait_until(lambda: "Suppressed" in d.read_log(), what="the suppressed-lines report")


if __name__ == "__main__":
    harness.main()
