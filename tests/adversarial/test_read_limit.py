# SPDX-License-Identifier: Apache-2.0
"""buffer.read past output_limit (docs/reliability.md, "Attacks"): a read
larger than output_limit was encoded in full (+512 MiB RSS for a 512 MiB
read), then the connection was cut for holding too many unread answer
bytes, with no error answer.  Now its size is checked at admission (the
bytes asked for, or the buffer's size from offset on): INVALID_REQUEST
saying to read in parts, and the connection stays usable.
"""

from adversary import *  # noqa: F401,F403
import harness

MIB = 1 << 20


class ReadLimit(DaemonTest):
    def setUp(self):
        self.size = 16 * MIB * SCALE
        self.d = self.daemon(config={"daemon": {"output_limit": "1M"}}, env=harness.rss_env())
        self.c = self.d.client()
        self.addCleanup(self.c.close)
        self.c.call("buffer.alloc", {"name": "kv", "bytes": self.size})

    def check_refused(self, params, bytes_):
        rss_before = vmrss_kib(self.d.pid)
        err = self.c.call_err("buffer.read", params)
        self.assertError(err, "INVALID_REQUEST",
                         contains=["Reading %d bytes of buffer 'kv'" % bytes_,
                                   "output_limit = %d" % MIB, "read it in parts"])
        self.assertEqual(err.get("key"), "bytes")
        growth = vmrss_kib(self.d.pid) - rss_before
        # Still usable: a read of at most output_limit is answered.
        self.assertEqual(self.c.call("buffer.read", {"name": "kv", "bytes": MIB}), bytes(MIB))
        self.assertEqual(honest_ping(self.d)["state"], "ready")
        return growth

    def test_read_of_more_than_output_limit(self):
        growth = self.check_refused({"name": "kv", "bytes": self.size}, self.size)
        report(self, "read-limit", rss_growth_kib=growth, counted_kib=0)

    def test_read_to_the_end_of_a_buffer_larger_than_output_limit(self):
        self.check_refused({"name": "kv", "offset": MIB}, self.size - MIB)

    def test_read_of_exactly_output_limit_is_answered(self):
        self.assertEqual(len(self.c.call("buffer.read", {"name": "kv", "offset": self.size - MIB})),
                         MIB)


if __name__ == "__main__":
    main()
