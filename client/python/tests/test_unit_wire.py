# SPDX-License-Identifier: Apache-2.0
"""ptoclient.wire.Reader: messages out of a byte stream however it is cut,
large byte strings received in place (ptoclient.large), blocks reused only
once nobody refers to them."""

import os
import random
import sys
import unittest

import msgpack

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from ptoclient.errors import ProtocolError  # noqa: E402
from ptoclient.large import LARGE_FROM  # noqa: E402
from ptoclient.wire import BULK_MIN, Reader  # noqa: E402

MESSAGES = [
    [1, 1, None, {"a": 1}],
    [1, 2, None, bytes(range(256)) * 3072],                          # buffer.read's shape
    [1, 3, None, {"outputs": [None, b"x" * 200000, b"y" * 10, bytes(300 << 10)],
                  "arena": {"k": 1.5, "s": "t" * 70000}}],           # large bins inside a map
    [2, "note", [{"x": -5, "y": [1, 2, 3]}]],
    [1, 4, None, {"outputs": [b"z" * (1 << 20)], "t": 1}],
    [1, 5, {"code": 3}, None],
    [1, 6, None, b"q" * BULK_MIN],                                   # exactly the threshold
    [1, 7, None, [b"r" * (BULK_MIN - 1)]],                           # just under it
    [1, 8, None, "s" * (LARGE_FROM + 5)],                            # large, but no bin
]
STREAM = b"".join(msgpack.packb(m, use_bin_type=True) for m in MESSAGES)


def plain(obj):
    """obj with every bytearray as bytes, to compare with MESSAGES."""
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj)
    if isinstance(obj, list):
        return [plain(x) for x in obj]
    if isinstance(obj, dict):
        return {k: plain(v) for k, v in obj.items()}
    return obj


def read_all(stream, seed):
    """Every message of stream, read in random pieces, through feed() and
    (when the reader offers a target) recv-style through target()/filled()."""
    rnd = random.Random(seed)
    reader, out, i = Reader("test"), [], 0
    while i < len(stream):
        target = reader.target()
        if target is not None and rnd.random() < 0.5:
            n = min(len(target), rnd.randint(1, 300000), len(stream) - i)
            target[:n] = stream[i:i + n]
            target.release()
            reader.filled(n, out)
        else:
            n = rnd.choice([1, 7, 100, 4096, 65536, 262144, 1 << 20])
            reader.feed(memoryview(stream)[i:i + n], out)
        i += n
    return reader, out


class ReaderTest(unittest.TestCase):
    def test_messages_however_the_stream_is_cut(self):
        for seed in range(60):
            _, out = read_all(STREAM, seed)
            self.assertEqual([plain(m) for m in out], MESSAGES, "seed %d" % seed)

    def test_large_bins_are_bytearrays_however_they_came(self):
        # The type must not depend on how the bytes arrived: a message the
        # Unpacker completed in one piece gives the same types as one
        # assembled in place.
        for seed in list(range(20)) + ["whole"]:
            if seed == "whole":
                out = []
                Reader("test").feed(STREAM, out)
            else:
                out = read_all(STREAM, seed)[1]
            outputs = out[2][3]["outputs"]
            self.assertEqual([type(x) for x in outputs],
                             [type(None), bytearray, bytes, bytearray], "seed %s" % seed)
            self.assertIs(type(out[1][3]), bytearray)
            self.assertIs(type(out[6][3]), bytearray)
            self.assertIs(type(out[7][3][0]), bytes)
            self.assertIs(type(out[8][3]), str)

    def test_a_dropped_block_is_reused(self):
        answer = msgpack.packb([1, 1, None, b"a" * (1 << 20)], use_bin_type=True)
        reader, out = Reader("test"), []
        reader.feed(answer, out)
        first = id(out.pop()[3])  # dropped here: the reader may reuse it
        reader.feed(answer, out)
        self.assertEqual(id(out[0][3]), first)

    def test_a_block_still_referred_to_is_never_overwritten(self):
        reader, out = Reader("test"), []
        reader.feed(msgpack.packb([1, 1, None, b"a" * (1 << 20)], use_bin_type=True), out)
        view = memoryview(out.pop()[3])  # the result is dropped, a view of it is not
        for fill in (b"b", b"c", b"d"):
            reader.feed(msgpack.packb([1, 2, None, fill * (1 << 20)], use_bin_type=True), out)
            self.assertEqual(bytes(out.pop()[3][:1]), fill)
        self.assertEqual(bytes(view[:4]), b"aaaa")
        self.assertEqual(bytes(view[-4:]), b"aaaa")

    def test_invalid_msgpack_in_a_large_message(self):
        # [1, 1, nil, [bin, <0xc1>]]: 0xc1 starts no msgpack object
        bad = b"\x94\x01\x01\xc0\x92" + b"\xc6" + LARGE_FROM.to_bytes(4, "big") \
            + b"x" * LARGE_FROM + b"\xc1"
        reader, out = Reader("ptod at /x"), []
        with self.assertRaisesRegex(ProtocolError, "ptod at /x sent data that is not valid "
                                                   "msgpack"):
            for i in range(0, len(bad), 4096):
                reader.feed(bad[i:i + 4096], out)
        self.assertEqual(out, [])


if __name__ == "__main__":
    unittest.main()
