# SPDX-License-Identifier: Apache-2.0
"""Priorities (docs/protocol.md, "Priority", protocol 1.2): device requests
take "priority" in [-8, 7], lower first; equal priorities keep 1.1's
fairness across connections and each connection's order; a running request
is never pre-empted; [daemon] priority_aging lets a request that waited that
long run as if -8.  The order is read from the order of one connection's
answers, or, across connections, from which write to one buffer came last,
with everything lined up behind a hold of the device (harness.holds).
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import holds, metric, noop, parse_prometheus  # noqa: E402


def sync(client):
    client.call("ping")


def answer_order(client, msgids):
    """The msgids in the order their answers came (all must succeed)."""
    order, left = [], set(msgids)
    while left:
        msg = client.read_message()
        assert msg is not None and msg[0] == 1 and msg[2] is None, msg
        order.append(msg[1])
        left.discard(msg[1])
    return order


class PriorityParam(harness.DaemonTest):
    def test_bad_priorities_are_invalid_request_naming_the_key(self):
        d = self.daemon()
        with d.client() as c:
            for bad in (True, 1.0, 8, -9, "1"):
                for method, params in (("dispatch", noop()),
                                       ("buffer.alloc", {"name": "b", "bytes": 8}),
                                       ("buffer.free", {"name": "b"}),
                                       ("prewarm", {})):
                    err = c.call_err(method, dict(params, priority=bad))
                    self.assertError(err, "INVALID_REQUEST", contains=["priority"])
                    self.assertEqual(err.get("key"), "priority", err)
            self.assertEqual(c.call("dispatch", noop(priority=-8))["tasks"], 1)
            self.assertEqual(c.call("dispatch", noop(priority=7))["tasks"], 1)
            self.assertEqual(c.call("buffer.alloc", {"name": "b", "bytes": 8, "priority": -3}),
                             {"name": "b", "bytes": 8})

    def test_buffer_list_takes_a_priority_and_ignores_it(self):
        """buffer.list is a buffer.* method, so it takes a priority (the
        range is checked), but it is answered at once on the loop."""
        d = self.daemon()
        with d.client() as c:
            self.assertEqual(c.call("buffer.list", {"priority": -8}), [])
            self.assertError(c.call_err("buffer.list", {"priority": 8}), "INVALID_REQUEST",
                             contains=["priority"])
            self.assertError(c.call_err("status", {"priority": 0}), "INVALID_REQUEST")


class PriorityOrder(harness.DaemonTest):
    def test_within_a_connection_more_urgent_first_same_priority_in_order(self):
        d = self.daemon()
        for hold in holds(d):
            with d.client() as c:
                sent = [(c.send("dispatch", noop(priority=p)), p) for p in (0, 0, 7, -1, -1, 0, -8)]
                sync(c)
                s = d.status()["queue"]
                lasted = hold.lasted()
                order = answer_order(c, [m for m, _ in sent])
            hold.end()
            if lasted:
                break
        prio = dict(sent)
        # Most urgent first; among equals, the order they were sent in.
        self.assertEqual(order, sorted((m for m, _ in sent), key=lambda m: (prio[m], m)))
        self.assertEqual(s["by_priority"], dict({str(p): 0 for p in range(-8, 8)},
                                                **{"-8": 1, "-1": 2, "0": 3, "7": 1}))

    def last_writer(self, d, first_priority, second_priority):
        """Connection one writes "1" into a buffer, then connection two
        writes "2"; which of them ran last?"""
        with d.client() as setup:
            setup.call("buffer.alloc", {"name": "log", "bytes": 1})
        for hold in holds(d):
            with d.client() as one, d.client() as two:
                a = one.send("buffer.write", {"name": "log", "data": b"1",
                                              "priority": first_priority})
                sync(one)
                b = two.send("buffer.write", {"name": "log", "data": b"2",
                                              "priority": second_priority})
                sync(two)
                lasted = hold.lasted()
                one.result(a)
                two.result(b)
            hold.end()
            if lasted:
                break
        with d.client() as reader:
            return reader.call("buffer.read", {"name": "log"})

    def test_across_connections_the_more_urgent_runs_first(self):
        d = self.daemon()
        self.assertEqual(self.last_writer(d, 0, -1), b"1")

    def test_across_connections_equal_priorities_keep_the_round_robin(self):
        d = self.daemon()
        self.assertEqual(self.last_writer(d, 3, 3), b"2")

    def test_running_request_is_not_preempted(self):
        """A -8 dispatch sent while a 7 runs on the same connection is
        answered after it: the run finished first."""
        d = self.daemon()
        task_us = harness.HOLD_US
        while True:
            with d.client() as c:
                ran = d.status()["dispatches"]["ok"]
                slow = c.send("dispatch", noop(task_us=task_us, priority=7))
                harness.wait_until(lambda: d.status()["queue"]["running"] == 1, what="the run")
                urgent = c.send("dispatch", noop(priority=-8))
                sync(c)
                s = d.status()
                order = answer_order(c, [slow, urgent])
            if s["dispatches"]["ok"] == ran and s["queue"]["by_priority"]["-8"] == 1:
                break  # the -8 was queued while the 7 ran
            task_us *= 4
        self.assertEqual(order, [slow, urgent])


class Aging(harness.DaemonTest):
    AGING_MS = 5

    def order_behind_hold(self, d, aging):
        for hold in holds(d):
            with d.client() as c:
                low = c.send("dispatch", noop(priority=7))
                rest = [c.send("dispatch", noop()) for _ in range(20)]
                sync(c)
                if aging:
                    # The low request has waited at least this long once the
                    # hold is found still running after it.
                    time.sleep(2 * self.AGING_MS / 1000)
                lasted = hold.lasted()
                order = answer_order(c, [low] + rest)
            hold.end()
            if lasted:
                return low, order

    def test_without_aging_a_low_priority_waits_for_every_other(self):
        d = self.daemon()
        low, order = self.order_behind_hold(d, aging=False)
        self.assertEqual(order[-1], low)

    def test_aged_request_runs_as_if_minus_8_and_aging_is_live_on_reload(self):
        d = self.daemon()
        d.reload(dict(d.sections, daemon=dict(d.sections.get("daemon", {}),
                                              priority_aging="%dms" % self.AGING_MS)))
        low, order = self.order_behind_hold(d, aging=True)
        # Every request aged; the oldest, the low one, went first.
        self.assertEqual(order[0], low)


class PriorityFigures(harness.DaemonTest):
    def test_metrics_show_waiting_requests_per_priority(self):
        d = self.daemon()
        for hold in holds(d):
            with d.client() as c:
                ids = [c.send("dispatch", noop(priority=p)) for p in (-2, -2, 5)]
                sync(c)
                samples, types = parse_prometheus(d.call("metrics"))
                lasted = hold.lasted()
                for i in ids:
                    c.result(i)
            hold.end()
            if lasted:
                break
        self.assertEqual(types["ptod_queue_waiting"], "gauge")
        self.assertEqual(metric(samples, "ptod_queue_waiting", priority="-2"), 2)
        self.assertEqual(metric(samples, "ptod_queue_waiting", priority="5"), 1)
        self.assertEqual(metric(samples, "ptod_queue_waiting", priority="0"), 0)


if __name__ == "__main__":
    harness.main()
