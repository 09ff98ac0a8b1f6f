# SPDX-License-Identifier: Apache-2.0
"""Shared-memory arguments (docs/protocol.md, `shm`): a client registers a
sealed memfd on its connection (the fd as SCM_RIGHTS on the request's
sendmsg), then names byte ranges of it in dispatch args and buffer.write /
buffer.read instead of sending the bytes in messages.

Every error of the contract, correct results through regions for the
programs, a region shared by prefill and decode, a 256 MiB weight load, and
the mapping gone from /proc/PID/maps once the connection closes.
"""

import array
import fcntl
import mmap
import os
import socket
import struct
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import msgpack  # noqa: E402

import harness  # noqa: E402
from harness import f32, unf32, wait_until  # noqa: E402

MIB = 1 << 20
ALL_SEALS = fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL


def memfd(size, name="ptod-test", seals=ALL_SEALS):
    """A memfd of `size` bytes (allocated) with `seals`, and a writable map of it."""
    fd = os.memfd_create(name, os.MFD_ALLOW_SEALING | os.MFD_CLOEXEC)
    os.ftruncate(fd, size)
    os.posix_fallocate(fd, 0, size)  # the daemon refuses a memfd with holes
    if seals:
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, seals)
    return fd, mmap.mmap(fd, size)


def send_with_fds(client, method, params, fds):
    """Send one request whose sendmsg carries `fds`; returns its msgid."""
    msgid = client.next_id
    client.next_id += 1
    data = msgpack.packb([0, msgid, method, [] if params is None else [params]], use_bin_type=True)
    anc = [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds))] if fds else []
    client.sock.sendmsg([data], anc)
    return msgid


def register(client, name, fd, size):
    return client.result(send_with_fds(client, "shm.register", {"name": name, "bytes": size}, [fd]))


def mapped_names(pid):
    with open("/proc/%d/maps" % pid) as f:
        return f.read()


class Errors(harness.DaemonTest):
    def setUp(self):
        self.d = self.daemon(config={"daemon": {"shm_limit": "8M"}})
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    def register_err(self, fds, params=None):
        return self.c.error(send_with_fds(self.c, "shm.register",
                                          params or {"name": "r", "bytes": 4096}, fds))

    def test_no_fd(self):
        self.assertError(self.register_err([]), "INVALID_REQUEST", contains=["no file descriptor"])

    def test_two_fds(self):
        a, _ = memfd(4096)
        b, _ = memfd(4096)
        self.assertError(self.register_err([a, b]), "INVALID_REQUEST",
                         contains=["2 file descriptors", "exactly one"])
        self.assertEqual(self.c.call("shm.list"), [])

    def test_unsealed_memfd(self):
        fd, _ = memfd(4096, seals=0)
        self.assertError(self.register_err([fd]), "INVALID_ARGS", contains=["F_SEAL_SHRINK"])

    def test_regular_file(self):
        with tempfile.TemporaryFile() as f:
            f.truncate(4096)
            self.assertError(self.register_err([f.fileno()]), "INVALID_ARGS",
                             contains=["not a memfd"])

    def test_too_small(self):
        fd, _ = memfd(4096)
        err = self.register_err([fd], {"name": "r", "bytes": 8192})
        self.assertError(err, "INVALID_ARGS", contains=["fewer than the 8192"])

    def test_name_twice(self):
        fd, _ = memfd(4096)
        register(self.c, "r", fd, 4096)
        fd2, _ = memfd(4096)
        self.assertError(self.register_err([fd2]), "ALREADY_EXISTS")

    def test_over_shm_limit(self):
        fd, _ = memfd(6 * MIB)
        register(self.c, "a", fd, 6 * MIB)
        fd2, _ = memfd(4 * MIB)
        err = self.register_err([fd2], {"name": "b", "bytes": 4 * MIB})
        self.assertError(err, "OUT_OF_MEMORY", contains=["shm_limit"])

    def test_range_outside_the_region(self):
        fd, _ = memfd(4096)
        register(self.c, "r", fd, 4096)
        err = self.c.call_err("dispatch", {"program": "vector_add", "args": [
            {"shm": "r", "offset": 0, "bytes": 4096}, {"shm": "r", "offset": 4000, "bytes": 200},
            {"shm": "r", "offset": 0, "bytes": 4096, "dir": "out"}]})
        self.assertError(err, "INVALID_ARGS", contains=["args[1]", "outside region 'r'"])
        err = self.c.call_err("buffer.write", {"name": "x", "shm": "nope", "bytes": 8})
        self.assertError(err, "NOT_FOUND", contains=["'nope'"])

    def test_fd_on_another_method_is_never_taken(self):
        fd, mm = memfd(4096)
        # A ping that carries an fd: answered, the fd left unclaimed...
        self.assertEqual(self.c.result(send_with_fds(self.c, "ping", None, [fd]))["state"], "ready")
        # ...so the next shm.register (with none of its own) takes it.
        self.assertEqual(self.c.call("shm.register", {"name": "r", "bytes": 4096}),
                         {"name": "r", "bytes": 4096})

    def test_ninth_unclaimed_fd_closes_the_connection(self):
        fd, _ = memfd(4096)
        for _ in range(9):
            send_with_fds(self.c, "ping", None, [fd])
        msgs = self.c.read_until_eof()
        self.assertEqual(msgs[-1][:2], [2, "error"])
        self.assertIn("more than 8 file descriptors", msgs[-1][2][0]["message"])
        self.assertEqual(self.d.call("ping")["state"], "ready")

    def test_unregister(self):
        fd, _ = memfd(4096)
        register(self.c, "r", fd, 4096)
        self.assertEqual(self.c.call("shm.list"), [{"name": "r", "bytes": 4096}])
        self.assertEqual(self.c.call("shm.unregister", {"name": "r"}), {"bytes": 4096})
        self.assertEqual(self.c.call("shm.list"), [])
        self.assertError(self.c.call_err("shm.unregister", {"name": "r"}), "NOT_FOUND")


class Off(harness.DaemonTest):
    def test_shm_limit_0_turns_the_path_off(self):
        d = self.daemon(config={"daemon": {"shm_limit": "0"}})
        with d.client() as c:
            self.assertEqual(c.call("ping")["features"], ["dfx", "cancel", "priority", "request_id"])
            fd, _ = memfd(4096)
            err = c.error(send_with_fds(c, "shm.register", {"name": "r", "bytes": 4096}, [fd]))
            self.assertError(err, "OUT_OF_MEMORY", contains=["shm_limit = 0"])


class DataPath(harness.DaemonTest):
    def setUp(self):
        self.d = self.daemon(config={"device": {"memory": "1G"}})
        self.c = self.d.client()
        self.addCleanup(self.c.close)

    def test_vector_add_through_a_region(self):
        n = 1000
        fd, mm = memfd(3 * 4 * n, name="va")
        register(self.c, "va", fd, 3 * 4 * n)
        mm[0:4 * n] = f32(range(n))
        mm[4 * n:8 * n] = f32([10.0] * n)
        r = self.c.call("dispatch", {"program": "vector_add", "args": [
            {"shm": "va", "offset": 0, "bytes": 4 * n},
            {"shm": "va", "offset": 4 * n, "bytes": 4 * n},
            {"shm": "va", "offset": 8 * n, "bytes": 4 * n, "dir": "out"}]})
        self.assertEqual(r["outputs"], [None, None, None])
        self.assertEqual(unf32(mm[8 * n:12 * n]), [i + 10.0 for i in range(n)])

    def test_matmul_through_a_region(self):
        """matmul reading a and b from the region and writing c into it: the
        same bytes as inline."""
        m = n = k = 64
        a = [float(i % 7) for i in range(m * k)]
        b = [float(i % 5) for i in range(k * n)]
        size = 4 * (m * k + k * n + m * n)
        fd, mm = memfd(size, name="mm")
        register(self.c, "mm", fd, size)
        mm[0:4 * m * k] = f32(a)
        mm[4 * m * k:4 * (m * k + k * n)] = f32(b)
        c_off = 4 * (m * k + k * n)
        inline = self.c.call("dispatch", {"program": "matmul", "args": [
            {"data": f32(a)}, {"data": f32(b)}, {"out": 4 * m * n},
            {"scalar": m}, {"scalar": n}, {"scalar": k}]})
        r = self.c.call("dispatch", {"program": "matmul", "args": [
            {"shm": "mm", "offset": 0, "bytes": 4 * m * k},
            {"shm": "mm", "offset": 4 * m * k, "bytes": 4 * k * n},
            {"shm": "mm", "offset": c_off, "bytes": 4 * m * n, "dir": "out"},
            {"scalar": m}, {"scalar": n}, {"scalar": k}]})
        self.assertIsNone(r["outputs"][2])
        self.assertEqual(bytes(mm[c_off:c_off + 4 * m * n]), inline["outputs"][2])

    def test_prefill_and_decode_share_a_region(self):
        """One region holds the inputs of a prefill and then of a decode
        step over the KV cache the prefill filled."""
        S, H, D, T = 4, 2, 8, 8
        qkv = 4 * S * H * D
        step = 4 * H * D
        size = 3 * qkv + qkv + 3 * step + step
        fd, mm = memfd(size, name="serve")
        register(self.c, "io", fd, size)
        self.c.call("buffer.alloc", {"name": "kv", "bytes": 2 * T * H * D * 4})
        vals = [0.01 * i for i in range(S * H * D)]
        for j in range(3):
            mm[j * qkv:(j + 1) * qkv] = f32(vals)
        pre = self.c.call("dispatch", {"program": "attention_prefill", "args": [
            {"shm": "io", "offset": 0, "bytes": qkv}, {"shm": "io", "offset": qkv, "bytes": qkv},
            {"shm": "io", "offset": 2 * qkv, "bytes": qkv}, {"buffer": "kv"},
            {"shm": "io", "offset": 3 * qkv, "bytes": qkv, "dir": "out"},
            {"scalar": S}, {"scalar": H}, {"scalar": D}]})
        self.assertIsNone(pre["outputs"][4])
        base = 4 * qkv
        for j in range(3):
            mm[base + j * step:base + (j + 1) * step] = f32([0.5] * (H * D))
        dec = self.c.call("dispatch", {"program": "attention_decode", "args": [
            {"shm": "io", "offset": base, "bytes": step},
            {"shm": "io", "offset": base + step, "bytes": step},
            {"shm": "io", "offset": base + 2 * step, "bytes": step}, {"buffer": "kv"},
            {"shm": "io", "offset": base + 3 * step, "bytes": step, "dir": "out"},
            {"scalar": S}, {"scalar": H}, {"scalar": D}]})
        self.assertIsNone(dec["outputs"][4])
        out = unf32(mm[base + 3 * step:base + 4 * step])
        # The same decode with inline bytes gives the same answer.
        self.c.call("buffer.free", {"name": "kv"})
        self.c.call("buffer.alloc", {"name": "kv", "bytes": 2 * T * H * D * 4})
        self.c.call("dispatch", {"program": "attention_prefill", "args": [
            {"data": f32(vals)}, {"data": f32(vals)}, {"data": f32(vals)}, {"buffer": "kv"},
            {"out": qkv}, {"scalar": S}, {"scalar": H}, {"scalar": D}]})
        ref = self.c.call("dispatch", {"program": "attention_decode", "args": [
            {"data": f32([0.5] * (H * D))}, {"data": f32([0.5] * (H * D))},
            {"data": f32([0.5] * (H * D))}, {"buffer": "kv"}, {"out": step},
            {"scalar": S}, {"scalar": H}, {"scalar": D}]})
        self.assertEqual(out, unf32(ref["outputs"][4]))

    def test_256_mib_weight_load_and_read_back(self):
        size = 256 * MIB
        fd, mm = memfd(size, name="weights")
        register(self.c, "w", fd, size)
        pattern = bytes(range(256)) * 4096  # 1 MiB
        for off in range(0, size, MIB):
            mm[off:off + MIB] = pattern
        self.c.call("buffer.alloc", {"name": "weights", "bytes": size})
        self.assertEqual(self.c.call("buffer.write", {"name": "weights", "shm": "w", "bytes": size}),
                         {"bytes": size})
        mm[0:size] = bytes(size)  # clear the region, then read the buffer back into it
        self.assertEqual(self.c.call("buffer.read", {"name": "weights", "bytes": size, "shm": "w"}),
                         {"bytes": size})
        self.assertEqual(mm[:MIB], pattern)
        self.assertEqual(mm[size - MIB:], pattern)
        # A part, at offsets on both sides.
        self.assertEqual(self.c.call("buffer.read", {"name": "weights", "offset": 7, "bytes": 9,
                                                     "shm": "w", "shm_offset": 100}), {"bytes": 9})
        self.assertEqual(mm[100:109], pattern[7:16])

    def test_mapping_goes_with_the_connection(self):
        fd, mm = memfd(4096, name="ptod-gone-test")
        with self.d.client() as c:
            register(c, "r", fd, 4096)
            self.assertIn("ptod-gone-test", mapped_names(self.d.pid))
        wait_until(lambda: "ptod-gone-test" not in mapped_names(self.d.pid),
                   what="the region to be unmapped")


if __name__ == "__main__":
    harness.main()
