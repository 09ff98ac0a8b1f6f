# SPDX-License-Identifier: Apache-2.0
"""Large messages read in place (see ptoclient.wire.Reader).

A message that is still incomplete after LARGE_FROM bytes is taken out of
msgpack's Unpacker and assembled here: its headers are walked as they come,
every byte string (bin) of bin_min bytes (wire.BULK_MIN) or more is
received straight into a bytearray of its own, and the rest of the message
(its small part, where each such byte string is replaced by a placeholder
ext) is unpacked by msgpack once the message is whole, the placeholders
swapped back for the bytearrays.  So 64 MiB of outputs cost one copy (the
kernel's, into the bytearray) and no msgpack buffer that grows by doubling.

Blocks: a fresh 64 MiB bytearray is 16,384 pages the kernel faults in one
at a time, which costs far more than copying the bytes (10-20 us a page on
a loaded virtual machine).  So the reader keeps the last BLOCKS_KEPT blocks
it handed out (up to KEEP_MAX bytes each), and reuses one of the size
needed once nothing but the reader refers to it any more: the caller has
dropped the result it was in.  A block still referred to (by the result,
or a memoryview or NumPy array over it) is never reused.

Threads: a LargeMessage and a BlockPool belong to their Reader, which is
used by one thread at a time (the connection's read role).
"""

import sys
from typing import Any, List, Optional, Tuple

import msgpack

from .errors import ProtocolError

__all__ = ["LARGE_FROM", "KEEP_MAX", "BLOCKS_KEPT", "BlockPool", "LargeMessage"]

LARGE_FROM = 256 << 10     # a message still incomplete with this many bytes is assembled here
KEEP_MAX = 65 << 20        # the largest block kept for reuse (as libptoclient's CLIENT_KEEP_MAX)
BLOCKS_KEPT = 2            # a caller often holds one result while it asks for the next

_SLOT = 0x7f  # the placeholder ext's type; the protocol sends no ext

# Header sizes of the fixed-size types, by first byte (0xc0..0xdf), and the
# byte count of the length field of the variable ones.
_FIXED = {0xc0: 1, 0xc2: 1, 0xc3: 1, 0xca: 5, 0xcb: 9, 0xcc: 2, 0xcd: 3, 0xce: 5, 0xcf: 9,
          0xd0: 2, 0xd1: 3, 0xd2: 5, 0xd3: 9, 0xd4: 3, 0xd5: 4, 0xd6: 6, 0xd7: 10, 0xd8: 18}
_SIZED = {0xc4: 1, 0xc5: 2, 0xc6: 4, 0xd9: 1, 0xda: 2, 0xdb: 4}   # bin 8/16/32, str 8/16/32
_EXT = {0xc7: 1, 0xc8: 2, 0xc9: 4}
_CONTAINER = {0xdc: (2, 1), 0xdd: (4, 1), 0xde: (2, 2), 0xdf: (4, 2)}  # array/map 16/32
_BINS = (0xc4, 0xc5, 0xc6)


def _header(buf, pos, end):
    """The msgpack object whose first byte is buf[pos]: (header length,
    payload length, children), or None when buf[pos:end] does not hold its
    whole header yet.  Raises ProtocolError for the unused byte 0xc1."""
    b = buf[pos]
    if b <= 0x7f or b >= 0xe0:
        return 1, 0, 0
    if b <= 0x8f:
        return 1, 0, 2 * (b & 0x0f)
    if b <= 0x9f:
        return 1, 0, b & 0x0f
    if b <= 0xbf:
        return 1, b & 0x1f, 0
    fixed = _FIXED.get(b)
    if fixed is not None:
        return fixed, 0, 0
    width = _SIZED.get(b) or _EXT.get(b)
    if width is not None:
        extra = 1 if b in _EXT else 0  # an ext's type byte
        if end - pos < 1 + width + extra:
            return None
        return 1 + width + extra, int.from_bytes(buf[pos + 1:pos + 1 + width], "big"), 0
    if b in _CONTAINER:
        width, per = _CONTAINER[b]
        if end - pos < 1 + width:
            return None
        return 1 + width, 0, per * int.from_bytes(buf[pos + 1:pos + 1 + width], "big")
    raise ProtocolError("not valid msgpack (byte 0x%02x starts no object)" % b)


class BlockPool:
    """The blocks large byte strings are received into (module docstring)."""

    def __init__(self) -> None:
        self._kept: List[bytearray] = []  # newest last

    def take(self, nbytes: int) -> bytearray:
        """A bytearray of nbytes that nobody else refers to: a kept one of
        that size when there is one, else a new one (then kept, when not
        over KEEP_MAX, in place of the oldest)."""
        kept = self._kept
        for i in range(len(kept)):
            # 2: the list's reference and getrefcount's argument.
            if len(kept[i]) == nbytes and sys.getrefcount(kept[i]) == 2:
                block = kept.pop(i)
                kept.append(block)
                return block
        block = bytearray(nbytes)
        if nbytes <= KEEP_MAX:
            if len(kept) >= BLOCKS_KEPT:
                del kept[0]
            kept.append(block)
        return block

    def clear(self) -> None:
        self._kept.clear()


class LargeMessage:
    """One message being assembled (module docstring): feed() its bytes,
    or recv into target() and say how many came with filled()."""

    def __init__(self, pool: BlockPool, bin_min: int) -> None:
        self._pool = pool
        self._bin_min = bin_min     # a byte string this long or longer gets a block
        self._small = bytearray()   # the message less its large byte strings
        self._pos = 0               # where the next object's header starts in _small
        self._left = [1]            # objects still to come, per open container
        self._blocks: List[bytearray] = []
        self._block: Optional[memoryview] = None  # the block being filled
        self._filled = 0

    def target(self) -> Optional[memoryview]:
        """Where the next bytes go when a block is being filled (a
        memoryview to recv_into), else None: feed() them."""
        block = self._block
        return None if block is None else block[self._filled:]

    def filled(self, n: int) -> bool:
        """n bytes came into target(); True when the message is whole."""
        self._filled += n
        if self._filled < len(self._block):  # type: ignore[arg-type]
            return False
        self._end_block()
        return self._walk()

    def feed(self, data: Any) -> Tuple[bool, int]:
        """Take bytes from data: (whole, used), whole when the message
        ended within data, after its first `used` bytes (the rest are the
        next message's)."""
        used = 0
        block = self._block
        if block is not None:
            used = min(len(data), len(block) - self._filled)
            block[self._filled:self._filled + used] = data[:used]
            if self.filled(used):
                return True, used
            if self._block is not None:
                return False, used
        self._small += data[used:]
        if not self._walk():
            return False, len(data)
        return True, len(data) - (len(self._small) - self._pos)

    def _end_block(self) -> None:
        self._block.release()  # type: ignore[union-attr]
        self._block = None

    def _walk(self) -> bool:
        """Walk the headers in _small from _pos; True when the message is
        whole (_small[_pos:] then holds the next message's bytes).  A large
        byte string's header starts a block; the walk waits for it."""
        small, left = self._small, self._left
        while self._block is None:
            if not left:
                return True
            pos, end = self._pos, len(small)
            if pos >= end:
                return False
            got = _header(small, pos, end)
            if got is None:
                return False
            head, size, children = got
            if size >= self._bin_min and small[pos] in _BINS:
                self._start_block(head, size)
                continue
            if pos + head + size > end:
                return False
            self._pos = pos + head + size
            left[-1] -= 1
            if children:
                left.append(children)
            while left and left[-1] == 0:
                left.pop()
        return False

    def _start_block(self, head: int, size: int) -> None:
        """The byte string at _pos is large: a placeholder in _small for it,
        its bytes already in _small into its block, and what came after it
        left in _small to walk on."""
        small, pos = self._small, self._pos
        block = self._pool.take(size)
        body = pos + head
        have = min(len(small) - body, size)
        block[:have] = small[body:body + have]
        small[pos:body + have] = bytes((0xd6, _SLOT)) + len(self._blocks).to_bytes(4, "big")
        self._pos = pos + 6
        self._blocks.append(block)
        self._left[-1] -= 1
        while self._left and self._left[-1] == 0:
            self._left.pop()
        self._filled = have
        if have < size:
            self._block = memoryview(block)

    def message(self) -> Any:
        """The whole message, unpacked (after feed() or filled() said so)."""
        blocks = self._blocks

        def ext(code, data):
            if code == _SLOT and len(data) == 4:
                index = int.from_bytes(data, "big")
                if index < len(blocks):
                    return blocks[index]
            return msgpack.ExtType(code, data)

        try:
            return msgpack.unpackb(self._small[:self._pos], raw=False, strict_map_key=False,
                                   ext_hook=ext)
        except Exception as exc:  # malformed: msgpack raises several types
            raise ProtocolError("not valid msgpack (%s)" % exc) from None
