# SPDX-License-Identifier: Apache-2.0
"""Dispatch arguments and their wire forms (docs/protocol.md, "dispatch").

    Buffer("kv")                       {"buffer": "kv"}
    Buffer("kv", offset=o, bytes=n)    {"buffer": "kv", "offset": o, "bytes": n}
    Data(x)                            {"data": bin}                  host input
    Data(x, inout=True) / InOut(x)     {"data": bin, "dir": "inout"}  copied in and back out
    Out(n)                             {"out": n}                     n bytes of host output
    Scalar(v), or a plain int / float  {"scalar": v}

    region[a:b], region.arg(o, n, dir)  {"shm": name, "offset": o, "bytes": n, "dir": d}
                                       bytes of a shared-memory region (ptoclient.shm)

Data accepts bytes, bytearray, memoryview, array.array, NumPy arrays or
anything else with the buffer protocol, without copying it: data of 128
KiB or more is written to the socket straight from the caller's memory
(ptoclient.wire), smaller data is packed into the request when it is sent,
so do not change it until the call that sends it has returned.  (Only
memory that is not contiguous is copied, once, at construction.)  A plain
bytes-like argument is a host input (Data(x)); a dict is sent as a raw wire
argument, unchanged (for forms this client does not know yet).

The result's ``outputs`` has one entry per argument: bytes for Data(inout)
and Out arguments, None for the others.  f32() and from_f32() convert
between float sequences and little-endian f32 bytes.
"""

import array
from typing import Any, Callable, Dict, Iterable
import struct
import sys

from .shm import Region, ShmArg

__all__ = ["Buffer", "Data", "InOut", "Out", "Scalar", "encode_arg", "encode_args",
           "f32", "from_f32"]

_INT64_MIN = -(1 << 63)
_UINT64_MAX = (1 << 64) - 1


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _check_count(what, value, allow_none=True):
    if value is None and allow_none:
        return None
    if not _is_int(value) or value < 0 or value > _UINT64_MAX:
        raise ValueError("%s must be a non-negative integer, got %r." % (what, value))
    return value


def _to_bytes(data, what):
    """bytes-like data -> bytes, or a read-only 1-D memoryview of bytes over
    the caller's memory (no copy) that msgpack packs as bin."""
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        raise TypeError("%s needs bytes-like data (bytes, bytearray, memoryview, array.array), "
                        "got a str; encode it first." % what)
    try:
        view = memoryview(data)
    except TypeError:
        raise TypeError("%s needs bytes-like data (bytes, bytearray, memoryview, array.array), "
                        "got %s." % (what, type(data).__name__)) from None
    if not view.c_contiguous:
        with view:
            return view.tobytes()
    if view.nbytes == 0:
        return b""  # cast() refuses views with a 0 in their shape
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    return view.toreadonly()


class Buffer:
    """A device-resident buffer by name, or a slice [offset, offset+bytes) of one."""

    __slots__ = ("name", "offset", "bytes")

    def __init__(self, name, offset=None, bytes=None):  # noqa: A002 (the wire key)
        if not isinstance(name, str) or not name:
            raise ValueError("Buffer name must be a non-empty string, got %r." % (name,))
        self.name = name
        self.offset = _check_count("Buffer offset", offset)
        self.bytes = _check_count("Buffer bytes", bytes)

    def to_wire(self):
        arg = {"buffer": self.name}
        if self.offset is not None:
            arg["offset"] = self.offset
        if self.bytes is not None:
            arg["bytes"] = self.bytes
        return arg

    def __repr__(self):
        extra = "".join(", %s=%d" % (k, getattr(self, k)) for k in ("offset", "bytes")
                        if getattr(self, k) is not None)
        return "Buffer(%r%s)" % (self.name, extra)


class Data:
    """Host bytes copied to the device for the run (and back, when inout)."""

    __slots__ = ("data", "inout")

    def __init__(self, data, inout=False):
        self.data = _to_bytes(data, "Data")
        self.inout = bool(inout)

    def to_wire(self):
        if self.inout:
            return {"data": self.data, "dir": "inout"}
        return {"data": self.data}

    def __repr__(self):
        return "Data(<%d bytes>%s)" % (len(self.data), ", inout=True" if self.inout else "")


def InOut(data):  # noqa: N802 (reads like the other argument classes)
    """Data(data, inout=True)."""
    return Data(data, inout=True)


class Out:
    """nbytes of host output, returned in the result's outputs."""

    __slots__ = ("nbytes",)

    def __init__(self, nbytes):
        self.nbytes = _check_count("Out size", nbytes, allow_none=False)

    def to_wire(self):
        return {"out": self.nbytes}

    def __repr__(self):
        return "Out(%d)" % self.nbytes


class Scalar:
    """An int (int64 or uint64 range) or float scalar argument."""

    __slots__ = ("value",)

    def __init__(self, value):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise TypeError("Scalar needs an int or a float, got %r." % (value,))
        if isinstance(value, int) and not _INT64_MIN <= value <= _UINT64_MAX:
            raise ValueError("Scalar %d does not fit in 64 bits." % value)
        self.value = value

    def to_wire(self):
        return {"scalar": self.value}

    def __repr__(self):
        return "Scalar(%r)" % (self.value,)


def encode_arg(arg, index=None, client=None):
    """One argument -> its wire map (see the module docstring).  client:
    the connection it is for, which a region argument must belong to."""
    to_wire = _TO_WIRE.get(type(arg))
    if to_wire is not None:
        return to_wire(arg)
    where = "" if index is None else "args[%d]: " % index
    if isinstance(arg, Region):
        arg = arg.arg()
    if isinstance(arg, ShmArg):
        if client is not None:
            arg.check(client, "args[%d]" % index if index is not None else "argument")
        return arg.to_wire()
    if isinstance(arg, (Buffer, Data, Out, Scalar)):
        return arg.to_wire()
    if isinstance(arg, bool):
        raise TypeError("%sa bool is not a dispatch argument; pass Scalar(int(x)) if you mean "
                        "0 or 1." % where)
    if isinstance(arg, (int, float)):
        try:
            return Scalar(arg).to_wire()
        except ValueError as exc:
            raise ValueError(where + str(exc)) from None
    if isinstance(arg, dict):
        return arg
    if isinstance(arg, str):
        raise TypeError("%sa str is not a dispatch argument; use Buffer(%r) for a resident "
                        "buffer or Data(text.encode()) for host bytes." % (where, arg))
    if isinstance(arg, (bytes, bytearray, memoryview, array.array)) or _has_buffer(arg):
        # Data(arg): the view goes into the message as it is, no copy
        return Data(arg).to_wire()
    raise TypeError("%scannot send an object of type %s; use Buffer(name), Data(bytes), "
                    "Out(nbytes) or Scalar(value)." % (where, type(arg).__name__))


def _has_buffer(obj):
    try:
        memoryview(obj).release()
        return True
    except TypeError:
        return False


# The argument classes by exact type: the common case costs one lookup.
_TO_WIRE: Dict[type, Callable[[Any], Dict[str, Any]]] = {
    Buffer: Buffer.to_wire, Data: Data.to_wire, Out: Out.to_wire, Scalar: Scalar.to_wire}


def encode_args(args, client=None):
    """A sequence of arguments -> the wire ``args`` list (client: as for
    encode_arg)."""
    return _encode_args_sized(args, client)[0]


def _encode_args_sized(args, client=None):
    """encode_args, and the size of the largest inline data among them (what
    decides whether the request is sent from the caller's memory, see
    ptoclient.wire)."""
    kind = type(args)
    if kind is not list and kind is not tuple:
        if args is None:
            return [], 0
        if isinstance(args, (str, bytes, dict)) or not hasattr(args, "__iter__"):
            raise TypeError("args must be a list of arguments, got %s." % type(args).__name__)
    wire = []
    largest = 0
    for arg in args:
        if type(arg) is int and _INT64_MIN <= arg <= _UINT64_MAX:
            wire.append({"scalar": arg})
            continue
        arg = encode_arg(arg, len(wire), client)
        wire.append(arg)
        data = arg.get("data") if type(arg) is dict else None
        if data is not None and type(data) in _BYTES_LIKE and len(data) > largest:
            largest = len(data)
    return wire, largest


_BYTES_LIKE = (bytes, bytearray, memoryview)


def f32(values: Iterable[float]) -> bytes:
    """Floats -> little-endian f32 bytes."""
    values = list(values)
    return struct.pack("<%df" % len(values), *values)


def from_f32(data: Any) -> "array.array[float]":
    """Little-endian f32 bytes -> array.array('f')."""
    if len(data) % 4:
        raise ValueError("f32 data must be a multiple of 4 bytes, got %d." % len(data))
    out = array.array("f")
    out.frombytes(bytes(data))
    if sys.byteorder != "little":
        out.byteswap()
    return out
