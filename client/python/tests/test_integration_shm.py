# SPDX-License-Identifier: Apache-2.0
"""The Python client's shared-memory regions (ptoclient.shm) and its inline
data without copies, against the real ptod of this build tree (started by
tests/integration/harness.py).  The NumPy tests skip where numpy is not
installed; everything else runs without it."""

import array
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
from ptoclient import Client, Data, InOut, Out, Region, RunConfig, f32, from_f32  # noqa: E402
from ptoclient.errors import InvalidArgs, NotFound, OutOfMemory  # noqa: E402

try:
    import numpy
except ImportError:
    numpy = None

T = 240  # per-call limit: only reached when something hangs
MIB = 1 << 20
# 64 MiB of f32 per argument: 4096 tasks of one scope, a window that holds them.
BIG = RunConfig(ring_task_window=8192)


def fd_count():
    return len(os.listdir("/proc/self/fd"))


class ShmCase(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.d = harness.Daemon(config={"daemon": {"shm_limit": "256M", "max_message": "512M",
                                                  "input_limit": "1G",
                                                  # the 192 MiB inline twin is about
                                                  # the bytes, not the clock (slow
                                                  # under sanitizers on a loaded machine)
                                                  "client_timeout": "600s"}})

    @classmethod
    def tearDownClass(cls):
        cls.d.stop()

    def client(self):
        c = Client(self.d.socket, timeout=T)
        self.addCleanup(c.close)
        return c


class Regions(ShmCase):
    def test_vector_add_through_a_region(self):
        c = self.client()
        self.assertIn("shm", c.features())
        with c.shm(36) as r:
            self.assertEqual(len(r), 36)
            self.assertEqual(bytes(r.buffer), bytes(36))  # zero-filled
            self.assertIn({"name": r.name, "bytes": 36}, c.shm_list())
            r.buffer[0:24] = f32([1, 2, 3, 10, 20, 30])
            res = c.dispatch("vector_add", [r[0:12], r[12:24], r.arg(24, 12, dir="out")])
            self.assertEqual(res["outputs"], [None, None, None])
            self.assertEqual(list(from_f32(r.buffer[24:36])), [11.0, 22.0, 33.0])
            # again, the output slice by .out(), the inputs changed in place
            r[0:12].buffer[:] = f32([5, 5, 5])
            c.dispatch("vector_add", [r[0:12], r[12:24], r[24:36].out()])
            self.assertEqual(list(from_f32(r.buffer[24:36])), [15.0, 25.0, 35.0])
        self.assertTrue(r.closed)
        self.assertEqual(c.shm_list(), [])

    def test_big_inout_matches_inline(self):
        c = self.client()
        n = 16 * MIB
        nbytes = 4 * n
        a = array.array("f", [float(i % 1000) * 0.5 for i in range(1024)]) * (n // 1024)
        b = array.array("f", [float(i % 777) for i in range(1024)]) * (n // 1024)
        inline = c.dispatch("vector_add", [a, b, InOut(bytes(nbytes))], config=BIG)["outputs"][2]
        with c.shm(3 * nbytes) as r:
            r.buffer[0:nbytes] = memoryview(a).cast("B")
            r.buffer[nbytes:2 * nbytes] = memoryview(b).cast("B")
            res = c.dispatch("vector_add", [r[0:nbytes], r[nbytes:2 * nbytes],
                                            r.arg(2 * nbytes, nbytes, dir="inout")], config=BIG)
            self.assertIsNone(res["outputs"][2])
            self.assertTrue(r.buffer[2 * nbytes:] == inline)
            self.assertEqual(from_f32(r.buffer[2 * nbytes + 4000:2 * nbytes + 4004])[0],
                             a[1000] + b[1000])

    def test_buffer_write_and_read_through_a_region(self):
        c = self.client()
        c.buffer_alloc("kv", 4096)
        with c.shm(8192) as r:
            r.buffer[100:1100] = bytes(i * 7 % 256 for i in range(1000))
            self.assertEqual(c.buffer_write("kv", r[100:1100], offset=50), {"bytes": 1000})
            self.assertEqual(c.buffer_read("kv", offset=50, nbytes=1000), bytes(r.buffer[100:1100]))
            self.assertEqual(c.buffer_read("kv", offset=50, into=r[5000:6000]), {"bytes": 1000})
            self.assertEqual(bytes(r.buffer[5000:6000]), bytes(r.buffer[100:1100]))
            self.assertEqual(r.buffer[4999], 0)
            self.assertEqual(r.buffer[6000], 0)
            # a whole region, both ways
            with c.shm(4096) as whole:
                self.assertEqual(c.buffer_read("kv", into=whole), {"bytes": 4096})
                self.assertEqual(bytes(whole.buffer), c.buffer_read("kv"))
                self.assertEqual(c.buffer_write("kv", whole), {"bytes": 4096})

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_numpy_views_share_the_region(self):
        c = self.client()
        with c.shm(3 * 4 * 1000) as r:
            a, b = r.array("f4", 1000), r.array("f4", (10, 100), offset=4000)
            out = r.array(numpy.float32, offset=8000)
            self.assertEqual(out.shape, (1000,))
            a[:] = numpy.arange(1000, dtype=numpy.float32)
            b[:] = 2.0
            self.assertEqual(from_f32(r.buffer[4:8])[0], 1.0)  # a's memory is the region's
            c.dispatch("vector_add", [r[0:4000], r[4000:8000], r[8000:12000].out()])
            numpy.testing.assert_array_equal(out, numpy.arange(1000, dtype=numpy.float32) + 2)
            with self.assertRaises(ValueError):
                r.array("f4", 1001, offset=8000)
            del a, b, out
        self.assertTrue(r.closed)


class Errors(ShmCase):
    def test_a_closed_region(self):
        c = self.client()
        r = c.shm(64)
        arg = r[0:12]
        name = r.name
        r.close()
        r.close()  # idempotent
        for use in (lambda: c.dispatch("vector_add", [arg, arg, Out(12)]),
                    lambda: r.buffer, lambda: r[0:4], lambda: c.buffer_write("x", arg)):
            with self.assertRaises(ValueError) as cm:
                use()
            self.assertIn("closed", str(cm.exception))
        # The daemon has forgotten it too.
        with self.assertRaises(NotFound) as cm:
            c.dispatch("vector_add", [{"shm": name, "offset": 0, "bytes": 12}, Data(f32([1] * 3)),
                                      Out(12)])
        self.assertIn(name, cm.exception.message)

    def test_a_region_of_another_connection(self):
        c, other = self.client(), self.client()
        with c.shm(64) as r:
            with self.assertRaises(ValueError) as cm:
                other.dispatch("vector_add", [r[0:12], r[12:24], r[24:36].out()])
            self.assertIn("another connection", str(cm.exception))
            other.buffer_alloc("b-other", 64)
            with self.assertRaises(ValueError):
                other.buffer_read("b-other", into=r[0:8])

    def test_ranges(self):
        c = self.client()
        with c.shm(4096) as r:
            with self.assertRaises(ValueError):
                r.arg(4000, 200)  # outside the region: refused here
            with self.assertRaises(ValueError):
                r[0:100:2]
            with self.assertRaises(ValueError):
                r.arg(0, 4, dir="sideways")
            with self.assertRaises(TypeError):
                r[3]
            # the daemon's own check, passed through
            with self.assertRaises(InvalidArgs) as cm:
                c.dispatch("vector_add", [r[0:12], {"shm": r.name, "offset": 4090, "bytes": 12},
                                          r[24:36].out()])
            self.assertIn("args[1]", cm.exception.message)
            c.buffer_alloc("b-ranges", 64)
            with self.assertRaises(ValueError):
                c.buffer_read("b-ranges", nbytes=16, into=r[0:8])

    def test_over_shm_limit(self):
        c = self.client()
        before = fd_count()
        with self.assertRaises(OutOfMemory) as cm:
            c.shm(512 * MIB)
        self.assertIn("shm_limit", cm.exception.message)
        self.assertEqual(fd_count(), before)
        self.assertEqual(c.shm_list(), [])

    def test_no_fd_left_behind(self):
        c = self.client()
        before = fd_count()
        regions = [c.shm(64 * 1024) for _ in range(16)]
        # One each: Python's mmap keeps a dup of the memfd (the memfd's own
        # fd is closed once registered).
        self.assertEqual(fd_count(), before + 16)
        self.assertEqual(len({r.name for r in regions}), 16)
        self.assertEqual(len(c.shm_list()), 16)
        for r in regions:
            r.close()
        self.assertEqual(fd_count(), before)
        self.assertEqual(c.shm_list(), [])

    def test_close_after_the_client(self):
        c = Client(self.d.socket, timeout=T)
        r = c.shm(64)
        self.assertIsInstance(r, Region)
        c.close()
        r.close()  # nothing to unregister: the daemon dropped it with the connection
        self.assertTrue(r.closed)


class InlineWithoutCopy(ShmCase):
    def test_memoryview_and_bytearray(self):
        c = self.client()
        raw = bytearray(f32([1, 2, 3, 10, 20, 30]))
        view = memoryview(raw)
        r = c.dispatch("vector_add", [view[0:12], Data(view[12:24]), Out(12)])
        self.assertEqual(list(from_f32(r["outputs"][2])), [11.0, 22.0, 33.0])
        c.buffer_alloc("b-inline", 12)
        c.buffer_write("b-inline", view[0:12])
        self.assertEqual(c.buffer_read("b-inline"), bytes(raw[0:12]))

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_numpy_arrays(self):
        c = self.client()
        a = numpy.arange(12, dtype=numpy.float32).reshape(3, 4)
        b = numpy.full((3, 4), 0.5, dtype=numpy.float32)
        r = c.dispatch("vector_add", [a, Data(b), Out(a.nbytes)])
        numpy.testing.assert_array_equal(numpy.frombuffer(r["outputs"][2], numpy.float32),
                                         (a + b).ravel())
        # a view that is not contiguous goes as its C-order copy
        r = c.dispatch("vector_add", [a.T, b.T, Out(a.nbytes)])
        numpy.testing.assert_array_equal(numpy.frombuffer(r["outputs"][2], numpy.float32),
                                         (a.T + b.T).ravel())


if __name__ == "__main__":
    unittest.main()
