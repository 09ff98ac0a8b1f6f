# SPDX-License-Identifier: Apache-2.0
"""Fault injection on the real daemon: clients that die at every stage of
a request (mid-send, queued, running, mid-response; sockets closed
abruptly and client processes SIGKILLed, with randomised timing), clients
that stall half-way through a message, clients that never read their
responses, a thousand invalid sizing requests, requests over the memory
limit, the daemon SIGKILLed and restarted, and SIGTERM under load.

After each, the daemon serves everyone, its counters agree with what was
sent, the state it holds (buffers, arena, memory account) is exactly what
it was, its RSS stays bounded, and — in the ASan build — LeakSanitizer
finds nothing when it exits (the harness fails a test whose daemon log
holds any sanitizer report).

The random choices come from fixed seeds, so a run can be replayed; what
the tests assert does not depend on how the timing falls."""

import os
import random
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import harness  # noqa: E402
from harness import metric, noop, parse_prometheus, unf32, vector_add, wait_until  # noqa: E402

MIB = 1 << 20
PYTHON = "/usr/bin/python3"

# A client process: connects, sends what arrives on stdin (argv[2] bytes),
# reads argv[3] bytes of answers, says so, then waits to be killed.
VICTIM = r"""
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
data = sys.stdin.buffer.read(int(sys.argv[2]))
s.sendall(data)
want, got = int(sys.argv[3]), 0
while got < want:
    b = s.recv(min(65536, want - got))
    if not b:
        break
    got += len(b)
sys.stdout.write("ready %d\n" % got)
sys.stdout.flush()
time.sleep(600)
"""


def request(msgid, method, params=None):
    return msgpack.packb([0, msgid, method, [] if params is None else [params]], use_bin_type=True)


class Counted(harness.Client):
    """A client that counts the requests it sends (for ptod_requests_total)."""

    def __init__(self, path, **kw):
        super().__init__(path, **kw)
        self.count = 0

    def send(self, method, params=None, msgid=None):
        self.count += 1
        return super().send(method, params, msgid)


class Victim:
    """A client that sends `data`, reads `read` bytes of answers and then
    dies: its socket closed abruptly (in this process), or its process
    SIGKILLed."""

    def __init__(self, path, data, read=0, kill=False):
        self.kill = kill
        if kill:
            self.proc = subprocess.Popen([PYTHON, "-c", VICTIM, path, str(len(data)), str(read)],
                                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
            self.proc.stdin.write(data)
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
            assert line.startswith(b"ready"), line
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(path)
            self.sock.sendall(data)
            got = 0
            while got < read:
                b = self.sock.recv(min(65536, read - got))
                if not b:
                    break
                got += len(b)

    def die(self):
        if self.kill:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
        else:
            self.sock.close()


class KilledClients(harness.DaemonTest):
    ROUNDS = 50
    STAGES = ("mid-send", "queued", "running", "mid-response")

    def test_clients_killed_at_every_stage(self):
        rng = random.Random(20261129)
        d = self.daemon(config={"daemon": {"log_level": "info"}})
        big = bytes(rng.getrandbits(8) for _ in range(256)) * (16 * 1024)  # 4 MiB
        w = Counted(d.socket)
        self.addCleanup(w.close)
        w.call("buffer.alloc", {"name": "big", "bytes": len(big), "init": big})
        # The first dispatch with host arguments reserves the staging area
        # (grow-only): do it now, so that whether a victim's dispatch runs
        # or not cannot change the memory account compared below.
        self.assertEqual(unf32(w.call("dispatch", vector_add([1], [2]))["outputs"][2]), [3])
        start = w.call("status")
        fds = len(os.listdir("/proc/%d/fd" % d.pid))
        sent = {"requests": 0, "dispatches": 0}
        stages = {s: 0 for s in self.STAGES}
        killed = holds = 0

        def status():
            return w.call("status")

        for round_no in range(self.ROUNDS):
            stage = self.STAGES[round_no % len(self.STAGES)]
            stages[stage] += 1
            kill = rng.random() < 0.5
            killed += kill
            if stage == "mid-send":
                pings = rng.randint(0, 2)
                data = b"".join(request(100 + i, "ping") for i in range(pings))
                victim_req = rng.choice([
                    request(1, "dispatch", vector_add([1.0] * 16384, [2.0] * 16384)),
                    # if any of it were applied, `big` would show it
                    request(1, "buffer.write", {"name": "big", "offset": 0, "data": b"\xee" * (512 * 1024)}),
                    request(1, "buffer.alloc", {"name": "never", "bytes": 4096}),
                    request(1, "ping"),
                ])
                data += victim_req[:rng.randint(1, len(victim_req) - 1)]
                v = Victim(d.socket, data, kill=kill)
                time.sleep(rng.uniform(0, 0.02))
                v.die()
                sent["requests"] += pings
            elif stage == "queued":
                ok_before = status()["dispatches"]["ok"]
                hold = w.send("dispatch", noop(tasks=1, task_us=rng.randint(150, 400) * 1000))

                def holding():  # (or already done, on a machine slower than the hold)
                    s = status()
                    return s["queue"]["running"] == 1 or s["dispatches"]["ok"] > ok_before
                wait_until(holding, what="the hold to run")
                n = rng.randint(1, 3)
                data = b"".join(request(i + 1, "dispatch", vector_add([float(i)] * 64, [1.0] * 64))
                                for i in range(n))
                v = Victim(d.socket, data, kill=kill)
                time.sleep(rng.uniform(0, 0.05))
                v.die()
                self.assertEqual(w.result(hold)["tasks"], 1)
                sent["requests"] += n  # the hold is in w.count
                sent["dispatches"] += n + 1
                holds += 1
            elif stage == "running":
                ok_before = status()["dispatches"]["ok"]
                n = rng.randint(1, 2)
                data = b"".join(request(i + 1, "dispatch", noop(tasks=1, task_us=rng.randint(100, 300) * 1000))
                                for i in range(n))
                v = Victim(d.socket, data, kill=kill)

                def running():
                    s = status()
                    return s["queue"]["running"] == 1 or s["dispatches"]["ok"] > ok_before
                wait_until(running, what="the victim's dispatch to run")
                time.sleep(rng.uniform(0, 0.1))
                v.die()
                sent["requests"] += n
                sent["dispatches"] += n
            else:  # mid-response: 4 MiB answers, read in part
                n = rng.randint(2, 6)
                data = b"".join(request(i + 1, "buffer.read", {"name": "big"}) for i in range(n))
                v = Victim(d.socket, data, read=rng.randint(0, 3 * MIB), kill=kill)
                time.sleep(rng.uniform(0, 0.02))
                v.die()
                sent["requests"] += n

        # Every victim is gone and nothing of theirs is left in the daemon.
        def settled():
            s = status()
            return s["clients"] == 1 and s["queue"]["depth"] == 0 and s["queue"]["running"] == 0
        wait_until(settled, what="the victims' connections and requests to be gone")
        end = status()
        dispatches = end["dispatches"]
        # No descriptor of a dead client is left open.
        self.assertEqual(len(os.listdir("/proc/%d/fd" % d.pid)), fds)
        # Each whole dispatch ran (its response discarded if its client was
        # gone) or was dropped unrun; none failed, none was counted twice.
        self.assertEqual(dispatches["failed"], start["dispatches"]["failed"])
        self.assertEqual(dispatches["ok"] + dispatches["rejected"],
                         start["dispatches"]["ok"] + start["dispatches"]["rejected"] + sent["dispatches"])
        # A part of a message is never a request: the count of requests is
        # exactly the whole ones sent (the victims' and this test's own).
        samples, _ = parse_prometheus(w.call("metrics"))
        self.assertEqual(metric(samples, "ptod_requests_total"), sent["requests"] + w.count)
        # The state is what it was: no half-applied write, no allocation.
        self.assertEqual(w.call("buffer.list"), [{"name": "big", "bytes": len(big)}])
        self.assertEqual(w.call("buffer.read", {"name": "big"}), big)
        self.assertEqual(end["memory"], start["memory"])
        self.assertEqual(end["arena"]["key"], start["arena"]["key"])
        self.assertEqual(end["arena"]["builds"], start["arena"]["builds"])
        # And it serves everyone, several at once.
        errors = []

        def serve(i):
            try:
                with d.client() as c:
                    self.assertEqual(c.call("ping")["state"], "ready")
                    r = c.call("dispatch", vector_add([i, 1], [2, i]))
                    self.assertEqual(unf32(r["outputs"][2]), [i + 2, i + 1])
                    c.call("buffer.alloc", {"name": "after-%d" % i, "bytes": 8, "init": b"%08d" % i})
                    self.assertEqual(c.call("buffer.read", {"name": "after-%d" % i}), b"%08d" % i)
                    c.call("buffer.free", {"name": "after-%d" % i})
            except Exception as e:  # noqa: BLE001 — reported below
                errors.append(e)
        threads = [threading.Thread(target=serve, args=(i,)) for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(errors, [])
        harness.figures("killed_clients", rounds=self.ROUNDS, sigkilled=killed,
                        closed=self.ROUNDS - killed,
                        **{k.replace("-", "_"): v for k, v in stages.items()},
                        victim_requests=sent["requests"], victim_dispatches=sent["dispatches"] - holds,
                        victim_dispatches_ran=dispatches["ok"] - start["dispatches"]["ok"] - holds,
                        victim_dispatches_dropped_unrun=dispatches["rejected"] - start["dispatches"]["rejected"])


class StalledClients(harness.DaemonTest):
    def test_half_messages_never_block_others(self):
        """Clients that send part of a message and then nothing hold no one
        up; each is disconnected client_timeout after its last byte."""
        d = self.daemon(config={"daemon": {"client_timeout": "300s", "queue_depth": "512"}})
        rng = random.Random(7)
        wholes = [request(1, "ping"),
                  request(1, "dispatch", vector_add([1.0] * 4096, [2.0] * 4096)),
                  request(1, "buffer.write", {"name": "w", "data": bytes(512 * 1024)}),
                  request(1, "buffer.alloc", {"name": "stalled", "bytes": 64})]
        stalled = []
        for i in range(10):
            whole = wholes[i % len(wholes)]
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(60)
            s.connect(d.socket)
            cut = rng.randint(1, len(whole) - 2)  # one more byte still leaves it partial
            s.sendall(whole[:cut])
            stalled.append((s, whole[cut:cut + 1]))
        self.addCleanup(lambda: [s.close() for s, _ in stalled])
        with d.client() as c:
            c.call("buffer.alloc", {"name": "w", "bytes": 4096})
            # A worker pipelines 300 requests past them and gets every answer.
            ids = []
            for i in range(100):
                ids.append(("ping", c.send("ping")))
                ids.append(("add", i, c.send("dispatch", vector_add([i, 2 * i], [1, 1]))))
                ids.append(("write", i, c.send("buffer.write", {"name": "w", "offset": 4 * (i % 1024),
                                                                 "data": struct.pack("<I", i)})))
            for item in ids:
                if item[0] == "ping":
                    self.assertEqual(c.result(item[1])["state"], "ready")
                elif item[0] == "add":
                    self.assertEqual(unf32(c.result(item[2])["outputs"][2]), [item[1] + 1, 2 * item[1] + 1])
                else:
                    self.assertEqual(c.result(item[2]), {"bytes": 4})
            self.assertEqual(c.call("buffer.read", {"name": "w", "offset": 4 * 99, "bytes": 4}),
                             struct.pack("<I", 99))
            # The stalled ones were all there while it was served.
            self.assertEqual(c.call("status")["clients"], 11)
            self.assertNotIn("sent part of a message", d.read_log())
            # client_timeout is live: a short one applies from each stalled
            # client's next byte on.
            sections = {k: dict(v) for k, v in d.sections.items()}
            sections["daemon"]["client_timeout"] = "100ms"
            d.reload(sections)
            for s, byte in stalled:
                s.sendall(byte)
            for s, _ in stalled:
                data = b""
                while True:
                    try:
                        b = s.recv(65536)
                    except ConnectionResetError:
                        break
                    if not b:
                        break
                    data += b
                self.assertEqual(data, b"", "a partial message got an answer")
            wait_until(lambda: c.call("status")["clients"] == 1, what="the stalled clients to be dropped")
            self.assertEqual(d.read_log().count("to send one message"), 10)
            # None of the partial requests was applied.
            self.assertEqual(c.call("buffer.list"), [{"name": "w", "bytes": 4096}])
            self.assertEqual(c.call("ping")["state"], "ready")
        harness.figures("stalled_clients", stalled=len(stalled), served_meanwhile=len(ids),
                        disconnected=10)


class HalfClosed(harness.DaemonTest):
    def test_shut_down_sending_side_still_gets_every_answer(self):
        """A client that sends its requests and then shutdown(SHUT_WR) (as
        `nc -N` or a script piping a file does) is still reading: every
        request is answered, device work included, then the connection
        closes.  Only a peer that is gone (POLLHUP) loses its answers."""
        d = self.daemon()
        with d.client() as c:
            c.call("buffer.alloc", {"name": "kv", "bytes": 8})
            ids = [c.send("ping"),
                   c.send("dispatch", noop(tasks=1, task_us=200000)),
                   c.send("dispatch", vector_add([1, 2], [3, 4], out={"buffer": "kv"})),
                   c.send("buffer.read", {"name": "kv"}),
                   c.send("status")]
            c.send_raw(request(99, "ping")[:3])  # and a message it never finishes
            c.sock.shutdown(socket.SHUT_WR)
            msgs = c.read_until_eof()
        self.assertEqual(sorted(m[1] for m in msgs), ids)
        by_id = {m[1]: m for m in msgs}
        self.assertTrue(all(m[0] == 1 and m[2] is None for m in msgs), msgs)
        self.assertEqual(by_id[ids[1]][3]["tasks"], 1)
        self.assertEqual(unf32(by_id[ids[3]][3]), [4, 6])
        self.assertIn("shut down its side in the middle of a message", d.read_log())
        wait_until(lambda: d.status()["clients"] == 1, what="the connection to close")
        s = d.status()
        self.assertEqual((s["dispatches"]["ok"], s["dispatches"]["rejected"]), (2, 0))

    def test_unread_answers_at_the_shut_down_are_still_sent(self):
        """The same when the answers the client has not read yet fill the
        daemon's socket when it reads the EOF (the socket is then not
        writable, and that is not a peer that is gone): 20,000 pings sent,
        then shutdown(SHUT_WR), then read: 20,000 answers."""
        n = 20000
        d = self.daemon()
        with d.client() as c:
            c.sock.sendall(b"".join(request(i, "ping") for i in range(n)))
            c.sock.shutdown(socket.SHUT_WR)
            msgs = c.read_until_eof()
        self.assertEqual(len(msgs), n, "answers lost at the client's shutdown(SHUT_WR)")
        self.assertEqual(sorted(m[1] for m in msgs), list(range(n)))


class UnreadResponses(harness.DaemonTest):
    HOGS = 6
    READS = 48

    def test_clients_that_never_read_are_bounded_then_dropped(self):
        """Each hog asks for 48 MiB of answers and reads none: the daemon
        holds at most output_limit (plus the answer that crossed it) for
        it, drops it, and its RSS comes back."""
        d = self.daemon(config={"daemon": {"output_limit": "1M", "queue_depth": "512"}},
                        env=harness.rss_env())
        with d.client() as c:
            c.call("buffer.alloc", {"name": "big", "bytes": MIB, "init": bytes(range(256)) * 4096})
            for _ in range(3):  # warm the allocator with answers of this size
                c.call("buffer.read", {"name": "big"})
            before = harness.vmrss_kib(d.pid)
            sampler = harness.RssSampler(d.pid).start()
            hogs = []
            try:
                for _ in range(self.HOGS):
                    h = harness.Client(d.socket)
                    self.addCleanup(h.close)
                    data = b"".join(request(i + 1, "buffer.read", {"name": "big"}) for i in range(self.READS))
                    h.send_raw(data)
                    hogs.append(h)
                wait_until(lambda: d.read_log().count("output_limit 1048576") >= self.HOGS,
                           what="every hog to be dropped")
                wait_until(lambda: c.call("status")["clients"] == 1, what="the hogs' connections to close")
                wait_until(lambda: c.call("status")["queue"]["depth"] == 0, what="the hogs' requests to go")
            finally:
                sampler.stop()
            after = harness.vmrss_kib(d.pid)
            # Each hog got a part of its answers, then the end of the stream.
            got = []
            for h in hogs:
                msgs = h.read_until_eof()
                got.append(len(msgs))
                self.assertLess(len(msgs), self.READS)
                for m in msgs:
                    self.assertEqual(m[:3], [1, m[1], None])
            # The one who reads is served as before.
            self.assertEqual(c.call("buffer.read", {"name": "big", "offset": 255, "bytes": 2}), b"\xff\x00")
            s = c.call("status")
            self.assertEqual({k: s["queue"][k] for k in ("depth", "capacity", "running")},
                             {"depth": 0, "capacity": 512, "running": 0})
        unbounded = self.HOGS * self.READS * MIB // 1024
        harness.figures("unread_responses", build=harness.sanitizer() or "plain", hogs=self.HOGS,
                        asked_mib=self.HOGS * self.READS, output_limit_mib=1,
                        answers_received=sum(got),
                        rss_before_mib="%.1f" % (before / 1024), rss_peak_mib="%.1f" % (sampler.peak / 1024),
                        rss_after_mib="%.1f" % (after / 1024))
        # Holding every answer would take `unbounded`; the daemon holds a
        # small part of it at any time, and gives it back.
        self.assertLess(sampler.peak - before, unbounded // 3,
                        "RSS %d -> peak %d KiB" % (before, sampler.peak))
        self.assertLess(after - before, unbounded // 6, "RSS %d -> %d KiB" % (before, after))


def bad_ring_value(rng, field):
    """A value of ring field `field` that the RunConfig rules refuse."""
    kind = rng.randrange(9)
    if kind == 0:
        return rng.choice([True, False])
    if kind == 1:
        return rng.uniform(-1e6, 1e6)
    if kind == 2:
        return rng.choice(["", "1M", "256", "x", "4,4,4,4"])
    if kind == 3:
        return [1] * rng.choice([0, 1, 2, 3, 5, 8])  # not 4 entries
    if kind == 4:
        return {"x": 1}
    if kind == 5:  # 4 entries, one of them bad
        good = {"ring_task_window": 64, "ring_heap": 1 << 16, "ring_dep_pool": 64}[field]
        entries = [good] * 4
        bad = 0
        while bad == 0:  # 0 is a valid entry: "keep that ring's lower-precedence value"
            bad = bad_ring_value(rng, field) if rng.random() < 0.3 else bad_scalar(rng, field)
        entries[rng.randrange(4)] = bad
        return entries
    if kind == 6:
        return -rng.randint(1, 1 << 40)
    return bad_scalar(rng, field)


def bad_scalar(rng, field):
    """An integer out of the field's range (0 is valid only as a list entry)."""
    if field == "ring_task_window":
        return rng.choice([0, 1, 2, 3, 5, 6, 7, 12, 100, 1000, 3 << 10, 1 << 31, (1 << 30) + 1,
                           rng.randint(5, 1 << 20) | 1])
    if field == "ring_heap":
        return rng.choice([0, 1, 512, 1000, 1023, 1025, 3 << 20, rng.randint(1025, 1 << 30) | 1])
    return rng.choice([0, 1, 2, 3, 1 << 31, (1 << 32) + 7, 1 << 63])


class InvalidSizings(harness.DaemonTest):
    def test_a_thousand_invalid_sizings_leave_the_prewarmed_arena(self):
        rng = random.Random(1000)
        d = self.daemon()
        with d.client() as c:
            before = c.call("status")
            fields = ["ring_task_window", "ring_heap", "ring_dep_pool"]
            sent = {"dispatch": 0, "prewarm": 0}
            for batch in range(10):
                ids = []
                for _ in range(100):
                    config = {}
                    bad = rng.choice(fields)
                    config[bad] = bad_ring_value(rng, bad)
                    for other in fields:  # valid values beside it are not applied either
                        if other != bad and rng.random() < 0.3:
                            config[other] = {"ring_task_window": 512, "ring_heap": 1 << 18,
                                             "ring_dep_pool": 2048}[other]
                    if rng.random() < 0.1:
                        config["aicpu_thread_num"] = rng.choice([0, 1, 17, -3, "4", 4.5])
                    method = "dispatch" if rng.random() < 0.8 else "prewarm"
                    sent[method] += 1
                    params = noop(config=config) if method == "dispatch" else {"config": config}
                    ids.append((c.send(method, params), config))
                for msgid, config in ids:
                    err = c.error(msgid)
                    self.assertIn(err["name"], ("INVALID_CONFIG", "INVALID_REQUEST"), (config, err))
                    self.assertEqual(err["code"], harness.CODES[err["name"]])
                    self.assertTrue(err["message"], err)
            after = c.call("status")
            self.assertEqual(after["arena"], before["arena"])
            self.assertEqual(after["memory"], before["memory"])
            self.assertEqual(after["dispatches"]["ok"], before["dispatches"]["ok"])
            self.assertEqual(after["dispatches"]["failed"], before["dispatches"]["failed"])
            self.assertEqual(after["dispatches"]["rejected"], before["dispatches"]["rejected"] + sent["dispatch"])
            r = c.call("dispatch", noop())
            self.assertTrue(r["arena"]["hit"])
            self.assertIs(c.call("status")["arena"]["prewarm"]["first_dispatch_hit"], True)
            self.assertEqual(c.call("status")["arena"]["builds"], before["arena"]["builds"])
        harness.figures("invalid_sizings", requests=sum(sent.values()), **sent,
                        arena_builds_before=before["arena"]["builds"],
                        arena_builds_after=after["arena"]["builds"])


class OverMemory(harness.DaemonTest):
    def snapshot(self, c):
        s = c.call("status")
        arena = dict(s["arena"])
        # A request for another sizing is a miss, whether its build fits or
        # not; what must not move is the slot: key, sizing, bytes, builds.
        arena.pop("hits")
        arena.pop("misses")
        return {"buffers": c.call("buffer.list"),
                "contents": {b["name"]: c.call("buffer.read", {"name": b["name"]})
                             for b in c.call("buffer.list")},
                "arena": arena, "memory": s["memory"],
                "failed": s["dispatches"]["failed"], "ok": s["dispatches"]["ok"]}

    def test_requests_over_the_memory_limit_leave_all_state(self):
        d = self.daemon(config={"device": {"memory": "16M"}, "daemon": {"max_message": "32M"}})
        with d.client() as c:
            c.call("buffer.alloc", {"name": "kv", "bytes": 2 * MIB, "init": bytes(range(256)) * 8192})
            c.call("buffer.alloc", {"name": "small", "bytes": 8, "init": b"12345678"})
            base = self.snapshot(c)
            free = base["memory"]["free"]
            self.assertGreater(free, MIB)
            over = [
                ("buffer.alloc", {"name": "huge", "bytes": free + 4096}),
                ("buffer.alloc", {"name": "huge", "bytes": 1 << 40}),
                ("buffer.alloc", {"name": "huge", "bytes": free + 4096, "init": bytes(free + 4096)}),
                ("dispatch", noop(config={"ring_heap": 4 * MIB})),
                ("dispatch", noop(config={"ring_heap": [0, 0, 0, 1 << 40]})),
                ("dispatch", noop(config={"ring_task_window": 1 << 30})),
                ("dispatch", vector_add([1.0] * (free // 8), [1.0] * (free // 8))),
                ("dispatch", {"program": "vector_add", "args": [{"buffer": "kv"}, {"buffer": "kv"},
                                                                {"out": free + 4096}]}),
                ("prewarm", {"config": {"ring_heap": 8 * MIB}}),
                ("prewarm", {"config": {"ring_dep_pool": (1 << 31) - 1}}),
            ]
            failed = 0
            for method, params in over:
                with self.subTest(method=method, params=str(params)[:120]):
                    err = c.call_err(method, params)
                    self.assertError(err, "OUT_OF_MEMORY")
                    failed += method == "dispatch"
                    now = self.snapshot(c)
                    self.assertEqual(now["failed"], base["failed"] + failed)
                    now["failed"] = base["failed"]
                    self.assertEqual(now["contents"], base["contents"])
                    self.assertEqual({k: v for k, v in now.items() if k != "contents"},
                                     {k: v for k, v in base.items() if k != "contents"})
            # Past what any device could hold, the request is refused as such.
            err = c.call_err("buffer.alloc", {"name": "huge", "bytes": (1 << 64) - 1})
            self.assertError(err, "INVALID_REQUEST", contains=["bytes"])
            self.assertEqual(self.snapshot(c)["buffers"], base["buffers"])
            # The prewarmed arena is still in the slot: the next dispatch hits.
            r = c.call("dispatch", vector_add([1], [2]))
            self.assertTrue(r["arena"]["hit"])
            self.assertEqual(unf32(r["outputs"][2]), [3])
        harness.figures("over_memory", requests=len(over) + 1, state_changed=0)


class DaemonKilled(harness.DaemonTest):
    def test_sigkill_then_restart_comes_back_prewarmed(self):
        """What a crash loses (resident buffers, the arena: device memory is
        the daemon's memory on sim) and what it does not: the restarted
        daemon replaces the stale socket and is ready with its prewarm."""
        holder = tempfile.mkdtemp(prefix="ptod-kill-")
        self.addCleanup(shutil.rmtree, holder, True)
        path = os.path.join(holder, "ptod.sock")
        config = {"prewarm": {"task_window": "128", "dep_pool": "512"}}
        prewarm_sizing = dict(harness.SMALL_SIZING, ring_task_window=[128] * 4, ring_dep_pool=[512] * 4)
        for cycle in range(3):
            d = self.daemon(config=config, socket_path=path)
            log = d.read_log()
            if cycle:
                self.assertIn("Removed stale socket '%s'" % path, log)
            s = d.status()
            self.assertEqual(s["state"], "ready")
            self.assertEqual(s["arena"]["sizing"], prewarm_sizing)
            self.assertEqual(s["arena"]["prewarm"]["sizing"], prewarm_sizing)
            self.assertEqual(s["arena"]["builds"], 1)
            self.assertIsNone(s["arena"]["prewarm"]["first_dispatch_hit"])
            with d.client() as c:
                self.assertEqual(c.call("buffer.list"), [])  # the last crash took them
                r = c.call("dispatch", vector_add([1, 2], [3, 4], config={"ring_task_window": 128,
                                                                          "ring_dep_pool": 512}))
                self.assertTrue(r["arena"]["hit"])
                self.assertIs(c.call("status")["arena"]["prewarm"]["first_dispatch_hit"], True)
                c.call("buffer.alloc", {"name": "kv", "bytes": 4096})
                pending = None
                if cycle == 1:  # killed while a dispatch runs and others wait
                    pending = [c.send("dispatch", noop(tasks=1, task_us=2000000)),
                               c.send("dispatch", noop())]
                    wait_until(lambda: d.status()["queue"]["running"] == 1, what="the dispatch to run")
                d.expected_exit = -signal.SIGKILL
                d.signal(signal.SIGKILL)
                self.assertEqual(d.wait(), -signal.SIGKILL)
                # The client learns at once: the connection ends, no answer.
                self.assertEqual(c.read_until_eof(), [])
            self.assertTrue(os.path.exists(path), "SIGKILL leaves the socket file behind")
        harness.figures("daemon_killed", starts=3, sigkills=3, stale_socket_replaced=2,
                        ready_with_prewarm=3, first_dispatch_hit=3)


class SigtermUnderLoad(harness.DaemonTest):
    CLIENTS = 8
    WINDOW = 8

    def run_client(self, d, index, rng, report, progress):
        """Pipeline dispatches (and pings) until the daemon closes the
        connection; record what was sent and what came back."""
        c = harness.Client(d.socket)
        sent, answers, order = {}, {}, []
        inflight = 0
        sending = True
        try:
            while True:
                while sending and inflight < self.WINDOW and len(order) < 5000:
                    n = len(order)
                    if rng.random() < 0.2:
                        params, method, expect = None, "ping", None
                    else:
                        a = [float(index * 10000 + n), float(n % 7)]
                        b = [1.0, 2.0]
                        task_us = rng.choice([0, 0, 0, 2000])
                        method = "dispatch"
                        params = vector_add(a, b) if not task_us else noop(tasks=1, task_us=task_us)
                        expect = [a[0] + 1, a[1] + 2] if not task_us else "noop"
                    try:
                        msgid = c.send(method, params)
                    except OSError:
                        sending = False
                        break
                    sent[msgid] = (method, expect)
                    order.append(msgid)
                    inflight += 1
                msg = c.read_message()
                if msg is None:
                    break
                if msg[0] == 2:
                    answers.setdefault("notifications", []).append(msg)
                    continue
                assert msg[0] == 1, msg
                if msg[1] in answers:
                    answers.setdefault("duplicates", []).append(msg[1])
                answers[msg[1]] = (msg[2], msg[3])
                inflight -= 1
                progress.append(1)
        finally:
            c.close()
        report[index] = (sent, answers, order)

    def test_every_request_answered_once_or_never_read(self):
        rng = random.Random(15)
        totals = {"requests": 0, "results": 0, "shutting_down": 0, "unanswered": 0}
        for run in range(3):
            d = self.daemon(config={"daemon": {"queue_depth": "256", "log_level": "info"}})
            report, progress = {}, []
            threads = [threading.Thread(target=self.run_client,
                                        args=(d, i, random.Random(rng.random()), report, progress))
                       for i in range(self.CLIENTS)]
            for t in threads:
                t.start()
            # SIGTERM at a random point of the load, once it is under way.
            wait_until(lambda: len(progress) >= 100, what="the load to start")
            time.sleep(rng.uniform(0, 0.3))
            d.signal(signal.SIGTERM)
            for t in threads:
                t.join(120)
                self.assertFalse(t.is_alive(), "a client never saw its connection end")
            self.assertEqual(d.wait(), 0)
            for index in range(self.CLIENTS):
                sent, answers, order = report[index]
                self.assertNotIn("duplicates", answers)
                self.assertNotIn("notifications", answers)
                unanswered = [m for m in order if m not in answers]
                # The daemon reads a connection in order: a request it never
                # answered can only be one it never read, after every one
                # it did.
                self.assertEqual(unanswered, order[len(order) - len(unanswered):],
                                 "client %d: a request in the middle got no answer" % index)
                refused = False
                for msgid in order[:len(order) - len(unanswered)]:
                    method, expect = sent[msgid]
                    err, result = answers[msgid]
                    if err is not None:
                        # Only SHUTTING_DOWN, and only for device work; once a
                        # dispatch was refused, no later one of the
                        # connection ran.
                        self.assertEqual(err["name"], "SHUTTING_DOWN", err)
                        self.assertEqual(method, "dispatch")
                        refused = True
                        totals["shutting_down"] += 1
                        continue
                    totals["results"] += 1
                    if method == "ping":
                        self.assertIn(result["state"], ("ready", "draining"))
                    elif expect == "noop":
                        self.assertFalse(refused, "a dispatch ran after one before it was refused")
                        self.assertEqual(result["tasks"], 1)
                    else:
                        self.assertFalse(refused, "a dispatch ran after one before it was refused")
                        self.assertEqual(unf32(result["outputs"][2]), expect)
                totals["requests"] += len(order)
                totals["unanswered"] += len(unanswered)
            self.assertIn("Drained; exiting.", d.read_log())
        harness.figures("sigterm_under_load", runs=3, clients=self.CLIENTS, **totals, lost=0, duplicated=0)


if __name__ == "__main__":
    harness.main()
