"""Requests as bytes on the wire (PROTOCOL.md, "Transport and framing").

A request is the msgpack array [0, msgid, method, [params]] (or [] for no
params).  pack_request gives it as one bytes object; pack_request_parts
gives the same bytes as a list of buffers in which every large bytes-like
value is the caller's own memory, for socket.sendmsg(): packing a large
argument would copy it twice (into msgpack's buffer, then into the bytes),
and at 256 MiB those copies cost more than the socket does.

Both take a msgpack.Packer(use_bin_type=True) to reuse: making one costs
more than packing a small request.  A Packer is not for two threads at once.
"""

from typing import Any, List

__all__ = ["BULK_MIN", "pack_request", "pack_request_parts"]

# From this size on a bytes-like value is sent from where it lies.  Walking
# the request costs a few microseconds, which two copies of 128 KiB cost
# too.  msgpack frames it as bin 32 (0xc6 + a 4-byte length) from 64 KiB on,
# so the parts are byte for byte what msgpack.packb gives.
BULK_MIN = 128 << 10
_BIN32_MAX = (1 << 32) - 1


def pack_request(packer: Any, msgid: int, method: str, params: Any) -> bytes:
    """[0, msgid, method, [params]] (params None: []), packed."""
    return packer.pack([0, msgid, method, [] if params is None else [params]])


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
