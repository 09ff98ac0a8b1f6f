# SPDX-License-Identifier: Apache-2.0
"""Shared-memory regions (docs/protocol.md, "Shared-memory arguments").

A region is a sealed memfd mapped here and in ptod, registered on one
connection.  Dispatch arguments and buffer writes and reads name byte ranges
of it, so the bytes never travel in a message:

    with c.shm(3 * 12) as r:                 # Client.shm: create and register
        a = r.array("f4", 3)                 # NumPy views, no copy (or r.buffer)
        a[:] = [1, 2, 3]
        r.array("f4", 3, offset=12)[:] = [10, 20, 30]
        c.dispatch("vector_add", [r[0:12], r[12:24], r.arg(24, 12, dir="out")])
        print(r.array("f4", 3, offset=24))   # [11. 22. 33.]

``r[a:b]`` is an input argument of the bytes [a, b); ``r.arg(offset,
nbytes, dir)`` or ``r[a:b].out()`` / ``.inout()`` give the other directions.
The daemon writes outputs into the region and answers None for them in
``outputs``.  Do not change bytes a request reads, nor read bytes it writes,
until its answer has come.  A region belongs to the connection it was
created on; close() (or the ``with`` block) unregisters it, and closing the
client drops every region of its connection.  An open region holds one fd
(Python's mmap keeps a duplicate of the memfd); close() releases it.
"""

import array
import fcntl
import itertools
import mmap
import os
import socket
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional, Tuple, Union

if TYPE_CHECKING:
    from .aio import AsyncClient
    from .client import Client

__all__ = ["Region", "ShmArg", "DIRECTIONS", "make_memfd", "fd_ancillary", "region_name"]

DIRECTIONS = ("in", "out", "inout")
BYTES_MAX = 1 << 40  # the protocol's largest region
_region_ids = itertools.count(1)


def region_name() -> str:
    """A region name unique in this process."""
    return "py-%d-%d" % (os.getpid(), next(_region_ids))


def make_memfd(nbytes: int) -> int:
    """A memfd of nbytes bytes, its pages reserved (so a machine short of
    memory fails here, not with SIGBUS later) and sealed against any change
    of size.  Returns the fd (close-on-exec)."""
    fd = os.memfd_create("ptoclient-shm", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, nbytes)
        os.posix_fallocate(fd, 0, nbytes)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS,
                    fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
    except BaseException:
        os.close(fd)
        raise
    return fd


def fd_ancillary(fd: int) -> list:
    """The sendmsg() ancillary data that passes fd (SCM_RIGHTS)."""
    return [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))]


def _count(what: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError("%s must be an integer >= 0, got %r." % (what, value))
    return value


class Region:
    """A shared-memory region of one Client's connection; make it with
    Client.shm(nbytes) (or ptoclient.aio's AsyncClient.shm)."""

    def __init__(self, client: Union["Client", "AsyncClient"], name: str, nbytes: int,
                 mm: mmap.mmap, on_close: Callable[["Region"], None]) -> None:
        """on_close(region): the client's part of close(), called once, by
        the first close(), before the memory is unmapped (the client
        unregisters the region while its connection works)."""
        self.client = client
        self._on_close = on_close
        self.name = name
        self.nbytes = nbytes
        self._mm: Optional[mmap.mmap] = mm
        self._view: Optional[memoryview] = memoryview(mm)

    @property
    def closed(self) -> bool:
        return self._view is None

    def _live(self) -> memoryview:
        if self._view is None:
            raise ValueError("The shared-memory region %r is closed; create another with "
                             "Client.shm()." % self.name)
        return self._view

    @property
    def buffer(self) -> memoryview:
        """The whole region as a writable memoryview of bytes (no copy)."""
        return self._live()

    def __len__(self) -> int:
        return self.nbytes

    def array(self, dtype: Any, shape: Union[int, Tuple[int, ...], None] = None,
              offset: int = 0) -> Any:
        """A NumPy array viewing the region from offset (no copy): `shape`
        elements of dtype (default: as many as fit).  Needs numpy."""
        import numpy  # only here: the client works without numpy

        dt = numpy.dtype(dtype)
        view = self._live()
        _count("offset", offset)
        if shape is None:
            count = (self.nbytes - offset) // dt.itemsize
            dims: Tuple[int, ...] = (count,)
        else:
            dims = (shape,) if isinstance(shape, int) else tuple(shape)
            count = 1
            for d in dims:
                count *= _count("shape", d)
        if offset + count * dt.itemsize > self.nbytes:
            raise ValueError("%d elements of %s at offset %d do not fit in the %d-byte region %r."
                             % (count, dt, offset, self.nbytes, self.name))
        return numpy.frombuffer(view, dtype=dt, count=count, offset=offset).reshape(dims)

    def arg(self, offset: int = 0, nbytes: Optional[int] = None, dir: str = "in") -> "ShmArg":  # noqa: A002
        """A dispatch argument naming [offset, offset + nbytes) (default: to
        the end), read by the program ("in"), written ("out") or both
        ("inout")."""
        self._live()
        offset = _count("offset", offset)
        if nbytes is None:
            nbytes = max(0, self.nbytes - offset)
        return ShmArg(self, offset, _count("nbytes", nbytes), dir)

    def __getitem__(self, key: slice) -> "ShmArg":
        if not isinstance(key, slice):
            raise TypeError("Index a region with a slice of bytes, region[start:stop], got %r."
                            % (key,))
        start, stop, step = key.indices(self.nbytes)
        if step != 1:
            raise ValueError("A region slice must be contiguous (step 1), got step %d." % step)
        return self.arg(start, max(0, stop - start))

    def close(self) -> None:
        """Unregister the region (when its connection still works) and
        unmap it.  Views of it (buffer, array()) that are still alive keep
        the memory mapped until they go.  Idempotent."""
        if self._view is None:
            return
        try:
            self._view.release()
        except BufferError:
            pass  # a NumPy array made by array() still uses it
        self._view = None
        mm, self._mm = self._mm, None
        try:
            self._on_close(self)
        finally:
            if mm is not None:
                try:
                    mm.close()
                except BufferError:
                    pass  # a caller's view still uses it: unmapped when that goes

    def __enter__(self) -> "Region":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "Region(%r, %d bytes%s)" % (self.name, self.nbytes,
                                            ", closed" if self.closed else "")


class ShmArg:
    """Bytes [offset, offset + nbytes) of a region, as a dispatch argument
    (dir "in", "out" or "inout") or the source / target of buffer_write /
    buffer_read (dir does not matter there)."""

    __slots__ = ("region", "offset", "nbytes", "dir")

    def __init__(self, region: Region, offset: int, nbytes: int, dir: str = "in") -> None:  # noqa: A002
        if dir not in DIRECTIONS:
            raise ValueError("dir must be one of %s, got %r." % (", ".join(DIRECTIONS), dir))
        if offset + nbytes > region.nbytes:
            raise ValueError("Bytes [%d, %d) are outside the %d-byte region %r."
                             % (offset, offset + nbytes, region.nbytes, region.name))
        self.region = region
        self.offset = offset
        self.nbytes = nbytes
        self.dir = dir

    def out(self) -> "ShmArg":
        return ShmArg(self.region, self.offset, self.nbytes, "out")

    def inout(self) -> "ShmArg":
        return ShmArg(self.region, self.offset, self.nbytes, "inout")

    @property
    def buffer(self) -> memoryview:
        """These bytes as a writable memoryview (no copy)."""
        return self.region.buffer[self.offset:self.offset + self.nbytes]

    def check(self, client: Any, what: str) -> None:
        """Raise ValueError unless the region is open and client's."""
        self.region._live()
        if self.region.client is not client:
            raise ValueError("%s: the shared-memory region %r belongs to another connection "
                             "(%s); a region is used on the connection that created it."
                             % (what, self.region.name, self.region.client.socket_path))

    def to_wire(self) -> Dict[str, Any]:
        self.region._live()
        return {"shm": self.region.name, "offset": self.offset, "bytes": self.nbytes,
                "dir": self.dir}

    def __repr__(self) -> str:
        return "ShmArg(%r, offset=%d, nbytes=%d, dir=%r)" % (self.region.name, self.offset,
                                                             self.nbytes, self.dir)
