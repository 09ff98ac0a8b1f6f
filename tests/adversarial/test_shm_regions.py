# SPDX-License-Identifier: Apache-2.0
"""shm regions (docs/reliability.md, "Attacks"): one connection registered
65,394 regions of 4 KiB (one memfd, passed again and again) and exhausted
vm.max_map_count, after which every other client's first request got
INTERNAL "out of memory"; a client's sparse memfd had its pages faulted in
by the daemon and charged to the daemon's cgroup; and a shm.register
refused while its params were decoded left its fd queued, so the next
register mapped the stale fd (wrong data, no error).  And nothing bounded the
bytes of all connections together: 64 connections x a 16 GiB region (1 TiB
mapped) were all accepted.

Now shm_regions bounds one connection's regions and shm_regions_total all
of them, shm_limit_total the bytes of all of them (OUT_OF_MEMORY past any), status and metrics show the regions
and their bytes, a memfd with holes is refused, and a register refused at
any stage consumes the fds it came with.
"""

import fcntl
import os

from adversary import *  # noqa: F401,F403
import harness
from test_shm import memfd, register, send_with_fds

PAGE = 4096


class RegionCount(DaemonTest):
    def test_regions_per_connection_bounded(self):
        d = self.daemon()  # shm_regions = 1024, the default
        limit = 1024
        fd, _ = memfd(PAGE)
        self.addCleanup(os.close, fd)
        pinger = HonestPinger(d).start()
        with d.client() as attacker:
            for i in range(limit):
                register(attacker, "r%d" % i, fd, PAGE)
            err = attacker.error(send_with_fds(attacker, "shm.register",
                                               {"name": "one-more", "bytes": PAGE}, [fd]))
            self.assertError(err, "OUT_OF_MEMORY", contains=["shm_regions = 1024"])
            self.assertEqual(len(attacker.call("shm.list")), limit)
            s = d.status()["shm"]
            self.assertEqual((s["regions"], s["bytes"]), (limit, limit * PAGE))
            samples, _ = harness.parse_prometheus(d.call("metrics"))
            self.assertEqual(harness.metric(samples, "ptod_shm_regions"), limit)
            self.assertEqual(harness.metric(samples, "ptod_shm_mapped_bytes"), limit * PAGE)
        pinger.stop()
        self.assertEqual(pinger.errors, [])
        self.assertTrue(pinger.latencies)
        wait_until(lambda: d.status()["shm"]["regions"] == 0, what="the regions to go")
        report(self, "shm-regions", honest_p99_ms=round(pinger.p99_ms(), 2),
               honest_errors=len(pinger.errors))

    def test_regions_of_all_connections_bounded(self):
        d = self.daemon(config={"daemon": {"shm_regions": "4", "shm_regions_total": "6"}})
        fd, _ = memfd(PAGE)
        self.addCleanup(os.close, fd)
        with d.client() as a, d.client() as b:
            for i in range(4):
                register(a, "a%d" % i, fd, PAGE)
            register(b, "b0", fd, PAGE)
            register(b, "b1", fd, PAGE)
            err = b.error(send_with_fds(b, "shm.register", {"name": "b2", "bytes": PAGE}, [fd]))
            self.assertError(err, "OUT_OF_MEMORY", contains=["shm_regions_total = 6"])
            self.assertEqual(d.status()["shm"]["regions"], 6)
            a.call("shm.unregister", {"name": "a0"})
            register(b, "b2", fd, PAGE)


class BytesOfAllConnections(DaemonTest):
    def test_bytes_of_all_connections_bounded(self):
        region, total = 1 << 20, 2 << 20
        d = self.daemon(config={"daemon": {"shm_limit": "1M", "shm_limit_total": "2M"}})
        fd, _ = memfd(region)
        self.addCleanup(os.close, fd)
        pinger = HonestPinger(d).start()
        with d.client() as a, d.client() as b, d.client() as c:
            register(a, "a", fd, region)  # each connection within its shm_limit
            register(b, "b", fd, region)
            msgid = send_with_fds(c, "shm.register", {"name": "c", "bytes": region}, [fd])
            err = c.error(msgid)
            self.assertError(err, "OUT_OF_MEMORY", contains=["'c'", "shm_limit_total = %d" % total])
            self.assertEqual((err["requested"], err["capacity"]), (region, 0))
            self.assertEqual(c.call("shm.list"), [])
            s = d.status()["shm"]
            self.assertEqual((s["bytes"], s["bytes_limit"]), (total, total))
            samples, _ = harness.parse_prometheus(d.call("metrics"))
            self.assertEqual(harness.metric(samples, "ptod_shm_mapped_limit_bytes"), total)
            # Room given back is room for anyone.
            a.call("shm.unregister", {"name": "a"})
            self.assertEqual(register(c, "c", fd, region), {"name": "c", "bytes": region})
        pinger.stop()
        self.assertEqual(pinger.errors, [])
        report(self, "shm-bytes-total", honest_errors=len(pinger.errors))


class SparseMemfd(DaemonTest):
    def test_memfd_with_holes_is_refused(self):
        d = self.daemon()
        fd = os.memfd_create("sparse", os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
        self.addCleanup(os.close, fd)
        os.ftruncate(fd, 64 * PAGE)
        os.pwrite(fd, b"x", 0)  # one page of 64 allocated
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        with d.client() as c:
            err = c.error(send_with_fds(c, "shm.register", {"name": "r", "bytes": 64 * PAGE}, [fd]))
            self.assertError(err, "INVALID_ARGS", contains=["allocated", "posix_fallocate"])
            self.assertEqual(c.call("shm.list"), [])
            os.posix_fallocate(fd, 0, 64 * PAGE)
            self.assertEqual(register(c, "r", fd, 64 * PAGE), {"name": "r", "bytes": 64 * PAGE})


class StaleFd(DaemonTest):
    def check_refused_register_consumes_its_fd(self, bad_params):
        d = self.daemon()
        small, _ = memfd(PAGE)
        big, big_map = memfd(2 * PAGE)
        self.addCleanup(os.close, small)
        self.addCleanup(os.close, big)
        big_map[:4] = b"big!"
        with d.client() as c:
            err = c.error(send_with_fds(c, "shm.register", bad_params, [small]))
            self.assertError(err, "INVALID_REQUEST")
            # The next register maps its own fd, not the refused one's.
            self.assertEqual(register(c, "r", big, 2 * PAGE), {"name": "r", "bytes": 2 * PAGE})
            c.call("buffer.alloc", {"name": "b", "bytes": 2 * PAGE})
            c.call("buffer.write", {"name": "b", "shm": "r", "bytes": 2 * PAGE})
            self.assertEqual(c.call("buffer.read", {"name": "b", "bytes": 4}), b"big!")

    def test_bad_name(self):
        self.check_refused_register_consumes_its_fd({"name": "bad name!", "bytes": PAGE})

    def test_unknown_key(self):
        self.check_refused_register_consumes_its_fd({"name": "r", "bytes": PAGE, "colour": 1})


if __name__ == "__main__":
    main()
