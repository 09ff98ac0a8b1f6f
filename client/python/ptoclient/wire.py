# SPDX-License-Identifier: Apache-2.0
"""Messages as bytes on the wire (docs/protocol.md, "Transport and framing"):
what the blocking Client and the asyncio client (ptoclient.aio) both send
and read.

A request is the msgpack array [0, msgid, method, [params]] (or [] for no
params).  pack_request gives it as one bytes object; pack_request_parts
gives the same bytes as a list of buffers in which every large bytes-like
value is the caller's own memory, for socket.sendmsg(): packing a large
argument would copy it twice (into msgpack's buffer, then into the bytes),
and at 256 MiB those copies cost more than the socket does.

Both take a msgpack.Packer(use_bin_type=True) to reuse: making one costs
more than packing a small request.  A Packer is not for two threads at once.

Reading: a Reader turns the bytes read into whole messages, and classify()
says what one message is (an answer, a notification, the daemon's error
notification, or something that is not msgpack-RPC).
"""

from typing import Any, List, Optional, Tuple

import msgpack

from .errors import ProtocolError, PtoError, error_from_wire
from .large import LARGE_FROM, BlockPool, LargeMessage

__all__ = ["BULK_MIN", "pack_request", "pack_request_parts", "pack_notification", "advance",
           "Reader", "classify", "ANSWER", "NOTIFICATION", "FAILURE"]

# From this size on a bytes-like value is sent from where it lies.  Walking
# the request costs a few microseconds, which two copies of 128 KiB cost
# too.  msgpack frames it as bin 32 (0xc6 + a 4-byte length) from 64 KiB on,
# so the parts are byte for byte what msgpack.packb gives.
BULK_MIN = 128 << 10
_BIN32_MAX = (1 << 32) - 1


def pack_request(packer: Any, msgid: int, method: str, params: Any) -> bytes:
    """[0, msgid, method, [params]] (params None: []), packed."""
    return packer.pack([0, msgid, method, [] if params is None else [params]])


def pack_notification(packer: Any, method: str, params: Any) -> bytes:
    """[2, method, [params]] (params None: []), packed."""
    return packer.pack([2, method, [] if params is None else [params]])


def advance(parts: List[Any], sent: int) -> List[Any]:
    """The buffers `parts` less their first `sent` bytes (fewer than all)."""
    i = 0
    while sent >= len(parts[i]):
        sent -= len(parts[i])
        i += 1
    rest = parts[i:]
    if sent:
        rest[0] = memoryview(rest[0])[sent:]
    return rest


def pack_request_parts(packer: Any, msgid: int, method: str, params: Any) -> List[Any]:
    """pack_request's bytes as a list of buffers: bytearrays made here, and
    the bytes-like values of at least BULK_MIN bytes themselves (bytes,
    bytearray, or contiguous 1-D memoryviews of bytes, as ptoclient.args
    makes them).  Only dicts and lists are walked; anything else is packed
    by msgpack, so what msgpack refuses raises its error here too."""
    parts: List[Any] = []
    head = bytearray()

    def walk(obj):
        nonlocal head
        kind = type(obj)
        if kind is dict:
            head += packer.pack_map_header(len(obj))
            for key, value in obj.items():
                head += packer.pack(key)
                walk(value)
        elif kind is list:
            head += packer.pack_array_header(len(obj))
            for value in obj:
                walk(value)
        elif _is_bulk(obj, kind):
            head += b"\xc6"
            head += len(obj).to_bytes(4, "big")
            parts.append(head)
            parts.append(obj)
            head = bytearray()
        else:
            head += packer.pack(obj)

    walk([0, msgid, method, [] if params is None else [params]])
    parts.append(head)
    return parts


def _is_bulk(obj, kind):
    if kind is memoryview:
        if obj.ndim != 1 or obj.format != "B" or not obj.c_contiguous:
            return False
    elif kind is not bytes and kind is not bytearray:
        return False
    return BULK_MIN <= len(obj) <= _BIN32_MAX


_UNSET = object()


class Reader:
    """Whole messages out of the bytes of one connection, as they come.

    Small messages go through msgpack's Unpacker.  A message still
    incomplete after LARGE_FROM bytes is assembled by ptoclient.large
    instead, and its byte strings of BULK_MIN bytes or more come out as
    bytearrays received in place (reused once the caller has dropped
    them); so that the type does not depend on how the bytes arrived, such
    byte strings are bytearrays in every message."""

    def __init__(self, where: str) -> None:
        self.where = where  # "ptod at PATH", for the errors
        self._unpacker = self._new_unpacker()
        self._fed = 0  # bytes fed: all used when its tell() says as much
        self._at = 0  # tell() at the start of the message being unpacked
        self._partial = bytearray()  # the bytes of that message so far, under LARGE_FROM
        self._large: Optional[LargeMessage] = None  # a large message being assembled
        self._pool = BlockPool()

    @staticmethod
    def _new_unpacker():
        return msgpack.Unpacker(raw=False, max_buffer_size=0, strict_map_key=False)

    def feed(self, data: Any, out: List[Any]) -> bool:
        """Append to out every message that data completes; True when it
        completed one.  Raises ProtocolError (after appending the messages
        before it) when the stream is not msgpack or an answer is larger
        than 4 GiB."""
        got = False
        while self._large is not None:
            try:
                whole, used = self._large.feed(data)
            except ProtocolError as exc:
                raise self._invalid(exc) from None
            if not whole:
                return got
            got = self._end_large(out)
            data = data[used:]
            if not data:
                return got
        return self._unpack(data, out) or got

    def target(self) -> Optional[memoryview]:
        """Where the next bytes read should go (a memoryview to recv_into,
        then filled()), or None: read anywhere and feed() them."""
        return None if self._large is None else self._large.target()

    def filled(self, n: int, out: List[Any]) -> bool:
        """n bytes were read into target(); True when that completed a
        message (appended to out)."""
        try:
            whole = self._large.filled(n)  # type: ignore[union-attr]
        except ProtocolError as exc:
            raise self._invalid(exc) from None
        return whole and self._end_large(out)

    def _end_large(self, out):
        large = self._large
        self._large = None
        try:
            out.append(large.message())  # type: ignore[union-attr]
        except ProtocolError as exc:
            raise self._invalid(exc) from None
        return True

    def _invalid(self, exc):
        return ProtocolError("%s sent data that is not valid msgpack (%s); the connection was "
                             "closed." % (self.where, exc))

    def _unpack(self, data, out):
        unpacker = self._unpacker
        try:
            unpacker.feed(data)
        except msgpack.BufferFull:
            raise ProtocolError("An answer from %s is larger than 4 GiB; the connection was "
                                "closed." % self.where) from None
        self._fed += len(data)
        got = False
        while True:
            try:
                msg = next(unpacker, _UNSET)
            except Exception as exc:  # malformed stream: msgpack raises several types
                raise self._invalid(exc) from None
            if msg is _UNSET:
                self._keep_partial(data)
                return got
            at = unpacker.tell()
            if at - self._at >= BULK_MIN:
                msg = _large_bins_in_blocks(msg, self._pool)
            self._at = at
            out.append(msg)
            got = True
            if at == self._fed:
                self._partial.clear()
                return got  # all it holds is used: asking again would raise StopIteration

    def _keep_partial(self, data):
        """Keep the bytes of the incomplete message; from LARGE_FROM on,
        hand it to a LargeMessage."""
        partial = self._fed - self._at
        if partial <= len(data):
            self._partial[:] = data[len(data) - partial:]
        else:
            self._partial += data
        if partial < LARGE_FROM:
            return
        self._large = LargeMessage(self._pool, BULK_MIN)
        self._unpacker = self._new_unpacker()
        self._fed = self._at = 0
        head = self._partial
        self._partial = bytearray()
        try:
            whole, _ = self._large.feed(head)  # incomplete: the unpacker said so
        except ProtocolError as exc:
            raise self._invalid(exc) from None
        assert not whole


def _large_bins_in_blocks(obj, pool):
    """obj with its byte strings of BULK_MIN bytes or more as bytearrays
    (a message that the Unpacker completed, as a LargeMessage gives it)."""
    kind = type(obj)
    if kind is bytes and len(obj) >= BULK_MIN:
        block = pool.take(len(obj))
        block[:] = obj
        return block
    if kind is list:
        return [_large_bins_in_blocks(value, pool) for value in obj]
    if kind is dict:
        return {key: _large_bins_in_blocks(value, pool) for key, value in obj.items()}
    return obj


ANSWER, NOTIFICATION, FAILURE = 1, 2, 3


def classify(msg: Any, where: str) -> Tuple[int, Any, Any]:
    """What one message is:
    (ANSWER, msgid, msg)  a response; msg[2] is its error, msg[3] its result;
    (NOTIFICATION, method, params)  any notification but "error";
    (FAILURE, exc, None)  the daemon's error notification (it closes the
        connection after it) or a message that is not msgpack-RPC: exc
        (a PtoError) ends the connection."""
    if isinstance(msg, list) and len(msg) == 4 and msg[0] == 1 and isinstance(msg[1], int):
        return ANSWER, msg[1], msg
    if isinstance(msg, list) and len(msg) == 3 and msg[0] == 2 and isinstance(msg[1], str):
        params = msg[2]
        if msg[1] == "error":
            err = params[0] if isinstance(params, list) and params else params
            exc: PtoError = error_from_wire(err)
            return FAILURE, exc, None
        return NOTIFICATION, msg[1], params
    shown = repr(msg) if len(repr(msg)) < 200 else "a long message"
    return FAILURE, ProtocolError("%s sent %s, which is not a msgpack-RPC response or "
                                  "notification; the connection was closed." % (where, shown)), None
