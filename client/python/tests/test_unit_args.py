# SPDX-License-Identifier: Apache-2.0
"""Argument encoding, dispatch params, socket paths and error objects."""

import array
import os
import pickle
import shutil
import socket
import sys
import tempfile
import unittest
from unittest import mock
import warnings

import msgpack

try:
    import numpy
except ImportError:  # the client works without numpy; its tests skip
    numpy = None

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

import ptoclient  # noqa: E402
from ptoclient import (Buffer, Client, Data, InOut, Out, RunConfig, Scalar,  # noqa: E402
                       encode_arg, encode_args, f32, from_f32, socket_path_for)
from ptoclient.wire import BULK_MIN, pack_request, pack_request_parts  # noqa: E402
from ptoclient.errors import (CallTimeout, ConnectionLost, HeapRingDeadlock,  # noqa: E402
                              InvalidConfig, PtoError, RuntimeFailure, error_from_wire)


class Args(unittest.TestCase):
    def test_buffer_forms(self):
        self.assertEqual(Buffer("kv").to_wire(), {"buffer": "kv"})
        self.assertEqual(Buffer("kv", offset=64, bytes=128).to_wire(),
                         {"buffer": "kv", "offset": 64, "bytes": 128})
        self.assertEqual(Buffer("kv", 0, 16).to_wire(), {"buffer": "kv", "offset": 0, "bytes": 16})
        self.assertEqual(Buffer("kv", bytes=16).to_wire(), {"buffer": "kv", "bytes": 16})
        for bad in ("", None, 3):
            with self.assertRaises(ValueError):
                Buffer(bad)
        for bad in (-1, 1.5, True):
            with self.assertRaises(ValueError):
                Buffer("kv", offset=bad)

    def test_data_forms(self):
        self.assertEqual(Data(b"\x01\x02").to_wire(), {"data": b"\x01\x02"})
        self.assertEqual(Data(b"\x01", inout=True).to_wire(), {"data": b"\x01", "dir": "inout"})
        self.assertEqual(InOut(b"\x01").to_wire(), {"data": b"\x01", "dir": "inout"})
        floats = array.array("f", [1.0, 2.0])
        self.assertEqual(Data(floats).to_wire(), {"data": floats.tobytes()})
        self.assertEqual(Data(memoryview(b"abcd")[1:3]).data, b"bc")
        self.assertEqual(Data(bytearray(b"xy")).data, b"xy")
        # not copied: the message is encoded from the caller's memory
        buf = bytearray(b"ab")
        d = Data(buf)
        buf[0] = 0x7A
        self.assertEqual(d.data, b"zb")
        self.assertTrue(d.data.readonly)
        self.assertEqual(msgpack.packb(d.to_wire()), msgpack.packb({"data": b"zb"}))
        # memory that is not contiguous is copied once
        strided = memoryview(b"abcdef")[::2]
        self.assertEqual(Data(strided).data, b"ace")
        self.assertIsInstance(Data(strided).data, bytes)
        with self.assertRaises(TypeError):
            Data("text")
        with self.assertRaises(TypeError):
            Data([1.0, 2.0])

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_data_from_numpy_without_copy(self):
        a = numpy.arange(6, dtype=numpy.float32).reshape(2, 3)
        d = Data(a)
        self.assertEqual(len(d.data), 24)
        a[1, 2] = 42.0
        self.assertEqual(from_f32(d.data)[5], 42.0)  # the array's own memory
        self.assertEqual(msgpack.packb(encode_arg(a)), msgpack.packb({"data": a.tobytes()}))
        # a transposed view is not C-contiguous: copied in C order
        self.assertEqual(Data(a.T).data, a.T.tobytes())

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_data_from_an_empty_numpy_array(self):
        self.assertEqual(Data(numpy.zeros((0, 3), dtype=numpy.float32)).data, b"")
        self.assertEqual(encode_arg(numpy.zeros((2, 0))), {"data": b""})

    def test_out_and_scalar(self):
        self.assertEqual(Out(16).to_wire(), {"out": 16})
        self.assertEqual(Out(0).to_wire(), {"out": 0})
        with self.assertRaises(ValueError):
            Out(-1)
        self.assertEqual(Scalar(3).to_wire(), {"scalar": 3})
        self.assertEqual(Scalar(-3).to_wire(), {"scalar": -3})
        self.assertEqual(Scalar(0.5).to_wire(), {"scalar": 0.5})
        with self.assertRaises(TypeError):
            Scalar(True)
        with self.assertRaises(TypeError):
            Scalar("3")
        with self.assertRaises(ValueError):
            Scalar(1 << 64)

    def test_plain_values(self):
        self.assertEqual(encode_arg(7), {"scalar": 7})
        self.assertEqual(encode_arg(1.25), {"scalar": 1.25})
        self.assertEqual(encode_arg(b"\x00"), {"data": b"\x00"})
        self.assertEqual(encode_arg(array.array("f", [1.0])), {"data": f32([1.0])})
        raw = {"buffer": "kv", "future": 1}
        self.assertIs(encode_arg(raw), raw)  # raw wire forms pass through
        with self.assertRaises(TypeError) as cm:
            encode_arg(True, 2)
        self.assertTrue(str(cm.exception).startswith("args[2]: a bool"))
        with self.assertRaises(TypeError) as cm:
            encode_arg("kv", 0)
        self.assertIn("Buffer('kv')", str(cm.exception))
        with self.assertRaises(TypeError) as cm:
            encode_arg(object(), 1)
        self.assertTrue(str(cm.exception).startswith("args[1]: cannot send an object of type"))

    def test_encode_args(self):
        self.assertEqual(encode_args([Buffer("kv"), Data(b"a"), Out(4), 3, 0.5]),
                         [{"buffer": "kv"}, {"data": b"a"}, {"out": 4}, {"scalar": 3},
                          {"scalar": 0.5}])
        self.assertEqual(encode_args((-(1 << 63), (1 << 64) - 1)),
                         [{"scalar": -(1 << 63)}, {"scalar": (1 << 64) - 1}])
        with self.assertRaises(ValueError) as cm:
            encode_args([1, Out(2), 1 << 64])
        self.assertEqual(str(cm.exception), "args[2]: Scalar %d does not fit in 64 bits."
                         % (1 << 64))
        with self.assertRaises(TypeError) as cm:
            encode_args(iter([1, "kv"]))
        self.assertTrue(str(cm.exception).startswith("args[1]: a str"))
        self.assertEqual(encode_args(()), [])
        self.assertEqual(encode_args(None), [])
        with self.assertRaises(TypeError):
            encode_args(b"abc")

    def test_f32(self):
        data = f32([1.0, -2.5, 3.0])
        self.assertEqual(len(data), 12)
        self.assertEqual(list(from_f32(data)), [1.0, -2.5, 3.0])
        with self.assertRaises(ValueError):
            from_f32(b"\x00\x00\x00")


class Wire(unittest.TestCase):
    """Requests with large values go out as parts: msgpack's bytes, with the
    large values themselves in between (sent from where they lie)."""

    def setUp(self):
        self.packer = msgpack.Packer(use_bin_type=True)

    def parts(self, params):
        parts = pack_request_parts(self.packer, 7, "dispatch", params)
        self.assertEqual(b"".join(parts), msgpack.packb([0, 7, "dispatch", [params]]))
        return parts

    def test_small_requests_are_one_part(self):
        self.assertEqual(len(self.parts({"program": "noop", "args": [{"scalar": 1}]})), 1)
        self.assertEqual(pack_request_parts(self.packer, 1, "ping", None),
                         [msgpack.packb([0, 1, "ping", []])])
        small = b"x" * (BULK_MIN - 1)
        self.assertEqual(len(self.parts({"args": [{"data": small}]})), 1)
        params = {"program": "noop", "args": [{"data": small}]}
        self.assertEqual(pack_request(self.packer, 7, "dispatch", params),
                         b"".join(self.parts(params)))

    def test_large_values_are_not_copied(self):
        big = bytes(BULK_MIN)
        mutable = bytearray(b"\x01" * (BULK_MIN + 1))
        view = memoryview(array.array("f", [1.5] * BULK_MIN)).cast("B")
        params = {"program": "p", "args": [Data(big).to_wire(), Data(mutable, inout=True).to_wire(),
                                           {"data": view}, {"scalar": 3}, {"data": b"tiny"}],
                  "config": {"ring_heap": [1 << 20, 0, 0, 0]}}
        parts = self.parts(params)
        self.assertEqual(len(parts), 7)
        self.assertIs(parts[1], big)
        self.assertIs(parts[5], view)
        mutable[0] = 2  # the part is the caller's memory
        self.assertEqual(parts[3][0], 2)

    @unittest.skipIf(numpy is None, "numpy is not installed")
    def test_a_numpy_array_is_sent_from_its_memory(self):
        a = numpy.arange(BULK_MIN, dtype=numpy.float32).reshape(256, -1)
        parts = self.parts({"args": [encode_arg(a)]})
        self.assertEqual(len(parts), 3)
        a[0, 1] = 42.0
        self.assertEqual(from_f32(parts[1][4:8])[0], 42.0)

    def test_what_msgpack_refuses_is_refused(self):
        strided = memoryview(bytes(2 * BULK_MIN))[::2]
        with self.assertRaises(BufferError):
            pack_request_parts(self.packer, 1, "x", {"data": strided})
        with self.assertRaises(TypeError):
            pack_request_parts(self.packer, 1, "x", {"data": object()})
        # and the packer is left as it was
        self.parts({"program": "noop", "args": [{"data": bytes(BULK_MIN)}]})


class DispatchParams(unittest.TestCase):
    def test_params(self):
        p = Client.dispatch_params("vector_add", [Data(b"a"), Data(b"b"), Out(4)])
        self.assertEqual(p, {"program": "vector_add",
                             "args": [{"data": b"a"}, {"data": b"b"}, {"out": 4}]})
        p = Client.dispatch_params("noop", [10], RunConfig(ring_heap=[2048, 0, 0, 0]), 50)
        self.assertEqual(p, {"program": "noop", "args": [{"scalar": 10}],
                             "config": {"ring_heap": [2048, 0, 0, 0]}, "deadline_ms": 50})
        # an empty config sends no config key; a dict config passes unknown keys through
        self.assertNotIn("config", Client.dispatch_params("noop", [], RunConfig()))
        p = Client.dispatch_params("noop", [], {"ring_task_window": 64, "future_knob": True})
        self.assertEqual(p["config"], {"ring_task_window": 64, "future_knob": True})

    def test_params_errors(self):
        with self.assertRaises(ValueError):
            Client.dispatch_params("", [])
        with self.assertRaises(ValueError):
            Client.dispatch_params("noop", [], None, -1)
        with self.assertRaises(ValueError) as cm:
            Client.dispatch_params("noop", [], {"ring_heap": 1000})
        self.assertEqual(str(cm.exception),
                         "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000")


class SocketPath(unittest.TestCase):
    def test_rules(self):
        self.assertEqual(socket_path_for(0, "/run/user/0", 3), "/run/ptod/ptod3.sock")
        self.assertEqual(socket_path_for(1000, "/run/user/1000", 2),
                         "/run/user/1000/ptod/ptod2.sock")
        self.assertEqual(socket_path_for(1000, "relative/dir", 1), "/tmp/ptod-1000/ptod1.sock")
        self.assertEqual(socket_path_for(1000, "", 0), "/tmp/ptod-1000/ptod0.sock")
        self.assertEqual(socket_path_for(1000, None, 255), "/tmp/ptod-1000/ptod255.sock")

    def test_bad_device_and_long_path(self):
        for bad in (-1, 256, True, "0"):
            with self.assertRaises(ValueError):
                socket_path_for(1000, None, bad)
        with self.assertRaises(ValueError):
            socket_path_for(1000, "/" + "d" * 100, 0)

    def planted(self, mode=0o700):
        """An XDG_RUNTIME_DIR whose ptod/ptod0.sock is a listening socket
        in a directory of `mode`, both owned by this process's euid."""
        runtime = tempfile.mkdtemp(prefix="ptoclient-trust-")
        self.addCleanup(shutil.rmtree, runtime, True)
        os.mkdir(os.path.join(runtime, "ptod"))
        os.chmod(os.path.join(runtime, "ptod"), mode)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(sock.close)
        path = os.path.join(runtime, "ptod", "ptod0.sock")
        sock.bind(path)
        return runtime, path

    def default_as(self, euid, runtime):
        with mock.patch("ptoclient.paths.os.geteuid", return_value=euid), \
                mock.patch.dict(os.environ, {"XDG_RUNTIME_DIR": runtime}), \
                warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            path = ptoclient.default_socket_path(0)
        return path, [str(w.message) for w in caught
                      if issubclass(w.category, ptoclient.UntrustedSocketWarning)]

    def as_owner(self, planted):
        """The uid whose files the planted ones are: this process's, or as
        root (whose own path is /run/ptod) a user the files are given to."""
        if os.geteuid() != 0:
            return os.geteuid()
        os.chown(os.path.dirname(planted), 4242, -1)
        os.chown(planted, 4242, -1)
        return 4242

    def test_own_socket_is_used(self):
        runtime, planted = self.planted()
        self.assertEqual(self.default_as(self.as_owner(planted), runtime), (planted, []))

    def test_socket_of_another_uid_is_skipped_with_a_warning(self):
        # The directory and socket belong to this process's euid, not to the
        # user asking: someone else could have planted it (issue 18, item 7).
        runtime, planted = self.planted()
        me = os.geteuid()
        path, warned = self.default_as(me + 4242, runtime)
        self.assertEqual(path, "/run/ptod/ptod0.sock")
        self.assertEqual(len(warned), 1)
        self.assertIn("Skipped the socket '%s'" % planted, warned[0])
        self.assertIn("belongs to uid %d" % me, warned[0])

    def test_socket_in_a_directory_others_can_write_is_skipped(self):
        runtime, planted = self.planted(mode=0o1777)  # sticky does not help
        path, warned = self.default_as(self.as_owner(planted), runtime)
        self.assertEqual(path, "/run/ptod/ptod0.sock")
        self.assertEqual(len(warned), 1)
        self.assertIn("(mode 1777) is writable by others", warned[0])

    def test_default_uses_this_process(self):
        path = ptoclient.default_socket_path(1)
        if os.geteuid() == 0:
            self.assertEqual(path, "/run/ptod/ptod1.sock")
        else:
            self.assertTrue(path.endswith("/ptod1.sock"), path)


class Errors(unittest.TestCase):
    def test_from_wire(self):
        err = error_from_wire({"code": 2, "name": "HEAP_RING_DEADLOCK",
                               "message": "Ring 0 ran out of heap.", "ring": 0,
                               "requested": 4096, "capacity": 1024,
                               "hint": "Raise ring_heap[0] to 4096.", "key": "ring_heap"})
        self.assertIsInstance(err, HeapRingDeadlock)
        self.assertIsInstance(err, RuntimeFailure)
        self.assertEqual((err.code, err.name, err.message), (2, "HEAP_RING_DEADLOCK",
                                                             "Ring 0 ran out of heap."))
        self.assertEqual((err.ring, err.requested, err.capacity, err.key),
                         (0, 4096, 1024, "ring_heap"))
        self.assertEqual(err.detail["hint"], "Raise ring_heap[0] to 4096.")
        self.assertEqual(str(err), "HEAP_RING_DEADLOCK (2): Ring 0 ran out of heap. "
                                   "Hint: Raise ring_heap[0] to 4096.")
        err.device = 1
        self.assertTrue(str(err).startswith("device 1: HEAP_RING_DEADLOCK"))

    def test_code_fallbacks(self):
        self.assertIsInstance(error_from_wire({"code": 1001, "message": "x"}), InvalidConfig)
        newer = error_from_wire({"code": 1500, "name": "SOMETHING_NEW", "message": "m"})
        self.assertIs(type(newer), PtoError)
        self.assertEqual((newer.code, newer.name), (1500, "SOMETHING_NEW"))
        self.assertIsInstance(error_from_wire({"code": 12, "name": "X", "message": "m"}),
                              RuntimeFailure)
        text = error_from_wire("plain text error")
        self.assertIs(type(text), PtoError)
        self.assertIn("plain text error", str(text))

    def test_client_errors_are_builtin_types_too(self):
        lost = ConnectionLost("gone")
        self.assertIsInstance(lost, ConnectionError)
        self.assertIsInstance(lost, PtoError)
        self.assertIsNone(lost.code)
        self.assertEqual(str(lost), "CONNECTION_LOST: gone")
        self.assertIsInstance(CallTimeout("late"), TimeoutError)

    def test_pickle(self):
        err = error_from_wire({"code": 1001, "name": "INVALID_CONFIG", "message": "bad",
                               "key": "ring_heap"})
        err.device = "/tmp/x.sock"
        back = pickle.loads(pickle.dumps(err))
        self.assertIs(type(back), InvalidConfig)
        self.assertEqual((back.code, back.key, back.device, str(back)),
                         (1001, "ring_heap", "/tmp/x.sock", str(err)))
        back = pickle.loads(pickle.dumps(ConnectionLost("gone")))
        self.assertIsInstance(back, ConnectionLost)
        self.assertEqual(back.message, "gone")


if __name__ == "__main__":
    unittest.main(verbosity=2)
