# SPDX-License-Identifier: Apache-2.0
"""The cancel notification (docs/protocol.md, "Cancelling a request",
protocol 1.2): a queued request of the same connection is taken out of its
line, releases what it held and is answered CANCELLED at once; a running,
answered, unknown or other connection's request is left alone; every
request gets exactly one answer.  Requests are lined up behind a hold of
the device (harness.holds), never behind a guess at how long things take.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import harness  # noqa: E402
from harness import holds, metric, noop, parse_prometheus, wait_until  # noqa: E402
from test_shm import mapped_names, memfd, register  # noqa: E402


def cancel(client, msgid):
    client.send_raw(msgpack.packb([2, "cancel", [{"msgid": msgid}]], use_bin_type=True))


def sync(client):
    """Every message sent on client before this has been read and acted on
    (a connection's messages are taken in order)."""
    client.call("ping")


def outcome(client, msgid):
    err, _ = client.recv(msgid)
    return err["name"] if err else "ok"


class CancelQueued(harness.DaemonTest):
    def test_queued_request_is_answered_cancelled_and_never_runs(self):
        d = self.daemon()
        for hold in holds(d):
            with d.client() as c:
                ids = [c.send("dispatch", noop()) for _ in range(3)]
                cancel(c, ids[1])
                sync(c)
                lasted = hold.lasted()
                errs = [c.recv(i)[0] for i in ids]
            hold.end()
            if lasted:
                break
        self.assertIsNone(errs[0])
        self.assertIsNone(errs[2])
        self.assertError(errs[1], "CANCELLED", contains=["msgid %d" % ids[1], "dispatch"])
        s = d.status()
        self.assertEqual(s["queue"]["cancelled"], 1)
        self.assertEqual(s["dispatches"]["ok"], hold.ran + 3)  # the hold and the two others
        samples, _ = parse_prometheus(d.call("metrics"))
        self.assertEqual(metric(samples, "ptod_requests_cancelled_total"), 1)
        self.assertEqual(metric(samples, "ptod_errors_total", name="CANCELLED"), 1)

    def test_buffer_request_is_cancelled_too(self):
        d = self.daemon()
        for hold in holds(d):
            with d.client() as c:
                msgid = c.send("buffer.alloc", {"name": "never", "bytes": 64, "priority": 3})
                cancel(c, msgid)
                sync(c)
                lasted = hold.lasted()
                err = c.error(msgid)
                names = [b["name"] for b in c.call("buffer.list")]
            hold.end()
            if lasted:
                break
        self.assertError(err, "CANCELLED", contains=["buffer.alloc"])
        self.assertNotIn("never", names)

    def test_thousand_queued_dispatches_cancelled(self):
        """1,000 dispatches queued, then 1,000 cancels: every one CANCELLED,
        none run, and the bytes counted for the connection go back."""
        d = self.daemon(config={"daemon": {"max_pending": "2048"}})
        n = 1000
        with d.client() as probe:
            base = probe.call("status")["client_memory"]["input"]
        for hold in holds(d):
            with d.client() as c:
                c.send_raw(b"".join(msgpack.packb([0, i, "dispatch", [noop()]], use_bin_type=True)
                                    for i in range(1, n + 1)))
                c.next_id = n + 1
                sync(c)
                queued = d.status()["client_memory"]["input"]
                c.send_raw(b"".join(msgpack.packb([2, "cancel", [{"msgid": i}]], use_bin_type=True)
                                    for i in range(1, n + 1)))
                sync(c)
                lasted = hold.lasted()
                outcomes = [outcome(c, i) for i in range(1, n + 1)]
                memory = d.status()["client_memory"]["input"]
            hold.end()
            if lasted:
                break
        self.assertEqual(outcomes, ["CANCELLED"] * n)
        s = d.status()
        self.assertEqual(s["dispatches"]["ok"], hold.ran + 1)  # the hold only
        self.assertEqual(s["queue"]["cancelled"], n)
        self.assertEqual(s["queue"]["depth"], 0)
        # What the requests held was given back with their answers: what is
        # left is the connection's read buffer (at most 64 KiB kept) and the
        # hold's request.
        harness.figures(self, base=base, queued=queued, after=memory)
        self.assertGreater(queued - base, n * 512)
        self.assertLessEqual(memory, base + 64 * 1024 + 4096, (memory, base))

    def test_cancelled_request_lets_go_of_its_shm_region(self):
        """A queued dispatch keeps its region mapped after shm.unregister;
        cancelled, it lets go, and the daemon unmaps the region."""
        d = self.daemon()
        fd, mm = memfd(4096, name="ptod-cancel-test")
        self.addCleanup(os.close, fd)
        self.addCleanup(mm.close)
        for hold in holds(d):
            with d.client() as c:
                register(c, "r", fd, 4096)
                msgid = c.send("dispatch", harness.vector_add(
                    [1.0] * 4, [2.0] * 4, out={"shm": "r", "offset": 0, "bytes": 16, "dir": "out"}))
                self.assertEqual(c.call("shm.unregister", {"name": "r"}), {"bytes": 4096})
                held = "ptod-cancel-test" in mapped_names(d.pid)
                cancel(c, msgid)
                sync(c)
                lasted = hold.lasted()
                err = c.error(msgid) if lasted else c.recv(msgid)[0]
                if lasted:
                    wait_until(lambda: "ptod-cancel-test" not in mapped_names(d.pid),
                               what="the cancelled request's region to be unmapped")
            hold.end()
            if lasted:
                break
        self.assertTrue(held, "the queued request did not hold its region")
        self.assertError(err, "CANCELLED")


class CancelIgnored(harness.DaemonTest):
    def test_running_request_is_not_stopped(self):
        d = self.daemon()
        for hold in holds(d):
            cancel(hold.client, hold.msgid)
            sync(hold.client)
            lasted = hold.lasted()
            result = hold.end()
            if lasted:
                break
        self.assertEqual(result["tasks"], 1)
        self.assertEqual(d.status()["queue"]["cancelled"], 0)

    def test_unknown_answered_and_other_connections_msgids_are_ignored(self):
        d = self.daemon()
        with d.client() as c, d.client() as other:
            answered = c.send("dispatch", noop())
            c.result(answered)
            for hold in holds(d):
                queued = c.send("dispatch", noop())
                cancel(other, queued)      # another connection's msgid
                cancel(c, 4000000000)      # no such request
                cancel(c, answered)        # answered already
                sync(other)
                sync(c)
                lasted = hold.lasted()
                self.assertEqual(c.result(queued)["tasks"], 1)
                hold.end()
                if lasted:
                    break
            self.assertEqual(c.notifications + other.notifications, [])
            self.assertEqual(d.status()["queue"]["cancelled"], 0)

    def test_malformed_cancels_are_ignored_and_logged(self):
        """Like any notification, a malformed cancel gets no answer; the
        daemon logs it, and the connection and its requests go on."""
        d = self.daemon()
        for hold in holds(d):
            with d.client() as c:
                queued = c.send("dispatch", noop())
                for params in ([], [{}], [{"msgid": "1"}], [{"msgid": -1}],
                               [{"msgid": queued, "extra": 1}], [{"id": queued}]):
                    c.send_raw(msgpack.packb([2, "cancel", params], use_bin_type=True))
                sync(c)
                lasted = hold.lasted()
                self.assertEqual(c.result(queued)["tasks"], 1)
                self.assertEqual(c.notifications, [])
            hold.end()
            if lasted:
                break
        self.assertEqual(d.status()["queue"]["cancelled"], 0)
        self.assertIn("cancel notification that is not valid", d.read_log())


class CancelRace(harness.DaemonTest):
    def test_cancel_crossing_its_answer_leaves_exactly_one_answer(self):
        """Cancels sent right behind their requests, with nothing holding the
        device: each request is answered exactly once, ok or CANCELLED
        (harness.Client fails on a second answer to one msgid)."""
        d = self.daemon(config={"daemon": {"max_pending": "1024"}})
        n = 300
        with d.client() as c:
            c.send_raw(b"".join(
                msgpack.packb([0, i, "dispatch", [noop()]], use_bin_type=True) +
                msgpack.packb([2, "cancel", [{"msgid": i}]], use_bin_type=True)
                for i in range(1, n + 1)))
            c.next_id = n + 1
            outcomes = [outcome(c, i) for i in range(1, n + 1)]
            sync(c)  # a duplicate answer would come before this one
            self.assertEqual(c.backlog, {})
        self.assertEqual(set(outcomes) - {"ok", "CANCELLED"}, set())
        s = d.status()
        self.assertEqual(s["queue"]["cancelled"], outcomes.count("CANCELLED"))
        self.assertEqual(s["dispatches"]["ok"], outcomes.count("ok"))


if __name__ == "__main__":
    harness.main()
