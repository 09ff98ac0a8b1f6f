# SPDX-License-Identifier: Apache-2.0
"""ptoclient.aio: the asyncio client of ptod, for serving processes.

    import ptoclient.aio
    from ptoclient import Data, Out

    async with ptoclient.aio.connect() as dev:   # $PTOD_SOCKET, else device 0's socket
        r = await dev.dispatch("vector_add", [Data(a), Data(b), Out(n)],
                               priority=-1, request_id="req-42")

Every method of the blocking Client is a coroutine here, with the same
parameters, results and exceptions (the same code builds the params and
reads the answers: ptoclient.calls and ptoclient.wire).

Concurrency.  Any number of tasks may await calls on one connection at
once: requests are written whole, one after another, in the order they
were made; one reader hands each answer to the future of its msgid,
whatever order the daemon answers in.  Requests made in one loop step
while others are in flight go out together in one system call.  A request
waits for the socket when it is full (packed only when it is written: the
bytes held are those of the message being written, or of up to 64 KiB of
small ones written together), and answers keep being read meanwhile.  A
connection belongs to the event loop it was opened on.  An answer resumes
the task awaiting it in the loop pass that read it (its next step runs in
the connection's reader callback: see ptoclient.aio_call), not a pass
later as an asyncio.Future would.

Cancellation.  Cancelling a task that awaits a call (task.cancel(),
asyncio.wait_for, a TaskGroup failing) sends the daemon protocol 1.2's
``cancel`` notification for the request, unless nothing of it was written
yet (then it is simply not sent), and re-raises CancelledError; the answer
that may still come (CANCELLED, or the result of a run that had started)
is read and dropped.  A call's own ``timeout`` expiring does the same and
raises CallTimeout; a request written in part is finished first (never
cut half-way), so the connection stays usable.  A daemon of protocol 1.1 ignores ``cancel`` (it is a
notification): the request then runs, and its answer is dropped.

Priority and request ids.  Device requests (dispatch, buffer_*, prewarm)
take ``priority`` (an int in [-8, 7], lower runs sooner, 0 the default)
and ``request_id`` (1 to 64 printable ASCII characters, echoed by the
daemon in the result, errors, logs and DFX).  Each is sent only when
given: a daemon of protocol 1.1 refuses them by name (InvalidRequest).

Failures.  The connection ending (the daemon exits, closes or resets it,
sends its error notification, or sends what is not msgpack-RPC) fails
every call in flight once, with the same PtoError as the blocking client,
and every later call.
"""

import asyncio
import math
import mmap
import os
import socket
import time
from typing import Any, Dict, Generator, Iterable, List, Optional, Set, Tuple

from .aio_call import Call
from .aio_channel import Channel
from .calls import (DEFAULT_TIMEOUT, buffer_alloc_params, buffer_read_params,
                    buffer_write_params, bench_summary, check_bench_counts, check_region_size,
                    choose_socket_path, connect_failed, connect_timeout_for, deadline_at,
                    dispatch_params, prewarm_params, serving_keys, shm_unsupported)
from .env import warn_sizing_env
from .shm import Region, make_memfd, region_name
from .where import where_mismatch, where_needed
from .wire import BULK_MIN

__all__ = ["connect", "AsyncClient", "AsyncRegion", "DEFAULT_TIMEOUT"]


class AsyncClient(Channel):
    """A connection to one ptod on an asyncio event loop; make it with
    connect().  The attributes are the blocking Client's: socket_path,
    device, timeout, where, notifications."""

    def __init__(self, sock: socket.socket, socket_path: str, device: Optional[int],
                 timeout: Optional[float], loop: asyncio.AbstractEventLoop) -> None:
        super().__init__(sock, socket_path, timeout, loop)
        self.device = device
        self.where: Optional[Tuple[Any, Any]] = None
        self._features: Optional[List[str]] = None  # ping's, once asked
        self._regions: Set[str] = set()  # names of this connection's open regions

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._close()

    def __repr__(self) -> str:
        return "AsyncClient(%r)" % self.socket_path

    # ---- methods of the protocol ---------------------------------------------

    async def ping(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        return await self._call("ping", None, timeout)

    async def status(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        return await self._call("status", None, timeout)

    async def metrics(self, timeout: Optional[float] = None) -> str:
        return await self._call("metrics", None, timeout)

    async def programs(self, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        return await self._call("programs", None, timeout)

    async def advise(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        return await self._call("advise", None, timeout)

    async def features(self, timeout: Optional[float] = None) -> List[str]:
        """ping's ``features``, asked once per connection."""
        if self._features is None:
            feats = (await self.ping(timeout)).get("features") or []
            self._features = [f for f in feats if isinstance(f, str)]
        return list(self._features)

    async def _check_where(self, config: Any, timeout: Optional[float]) -> None:
        cfg = where_needed(config)
        if cfg is None:
            return
        if self.where is None:
            st = await self.status(timeout)
            self.where = (st.get("device"), st.get("platform"))
        why = where_mismatch(cfg, self.where, self.socket_path)
        if why is not None:
            raise ValueError(why)

    async def _dispatch_call(self, program, args, config, deadline_ms, timeout, priority,
                             request_id, deadline) -> Call:
        params, largest = dispatch_params(program, args, config, deadline_ms, self, priority,
                                          request_id)
        if config is not None:
            await self._check_where(config, timeout)
        return self._start("dispatch", params, largest >= BULK_MIN, None, deadline)

    async def dispatch(self, program: str, args: Iterable[Any] = (), config: Any = None,
                       deadline_ms: Optional[int] = None, timeout: Optional[float] = None, *,
                       priority: Optional[int] = None,
                       request_id: Optional[str] = None) -> Dict[str, Any]:
        """Run program once (as Client.dispatch); priority and request_id
        as in the module docstring."""
        deadline = deadline_at(self.timeout if timeout is None else timeout)
        if config is None:  # nothing to check first: the common case, one coroutine less
            params, largest = dispatch_params(program, args, None, deadline_ms, self, priority,
                                              request_id)
            return await self._start("dispatch", params, largest >= BULK_MIN, None, deadline)
        return await (await self._dispatch_call(program, args, config, deadline_ms, timeout,
                                                priority, request_id, deadline))

    async def send_dispatch(self, program: str, args: Iterable[Any] = (), config: Any = None,
                            deadline_ms: Optional[int] = None, timeout: Optional[float] = None,
                            *, priority: Optional[int] = None,
                            request_id: Optional[str] = None) -> int:
        """Pipelined dispatch: its msgid, once written, for result()."""
        deadline = self._deadline(timeout)
        call = await self._dispatch_call(program, args, config, deadline_ms, timeout, priority,
                                         request_id, None)
        return await self._send(call, deadline)

    async def buffer_alloc(self, name: str, nbytes: Optional[int] = None, init: Any = None,
                           timeout: Optional[float] = None, *, priority: Optional[int] = None,
                           request_id: Optional[str] = None) -> Dict[str, Any]:
        params, bulk = buffer_alloc_params(name, nbytes, init)
        serving_keys(params, priority, request_id)
        return await self._call("buffer.alloc", params, timeout, bulk)

    async def buffer_write(self, name: str, data: Any, offset: Optional[int] = None,
                           timeout: Optional[float] = None, *, priority: Optional[int] = None,
                           request_id: Optional[str] = None) -> Dict[str, Any]:
        params, bulk = buffer_write_params(self, name, data, offset)
        serving_keys(params, priority, request_id)
        return await self._call("buffer.write", params, timeout, bulk)

    async def buffer_read(self, name: str, offset: Optional[int] = None,
                          nbytes: Optional[int] = None, timeout: Optional[float] = None,
                          into: Any = None, *, priority: Optional[int] = None,
                          request_id: Optional[str] = None) -> Any:
        params = buffer_read_params(self, name, offset, nbytes, into)
        serving_keys(params, priority, request_id)
        return await self._call("buffer.read", params, timeout)

    async def buffer_free(self, name: str, timeout: Optional[float] = None, *,
                          priority: Optional[int] = None,
                          request_id: Optional[str] = None) -> Dict[str, Any]:
        params = serving_keys({"name": name}, priority, request_id)
        return await self._call("buffer.free", params, timeout)

    async def buffer_list(self, timeout: Optional[float] = None, *,
                          priority: Optional[int] = None,
                          request_id: Optional[str] = None) -> List[Dict[str, Any]]:
        params = serving_keys({}, priority, request_id)
        return await self._call("buffer.list", params or None, timeout)

    async def prewarm(self, config: Any = None, timeout: Optional[float] = None, *,
                      priority: Optional[int] = None,
                      request_id: Optional[str] = None) -> Dict[str, Any]:
        params = serving_keys(prewarm_params(config) or {}, priority, request_id)
        return await self._call("prewarm", params or None, timeout)

    async def bench(self, program: str, args: Iterable[Any] = (), config: Any = None,
                    repeat: int = 10, warmup: int = 1, deadline_ms: Optional[int] = None,
                    timeout: Optional[float] = None) -> Dict[str, Any]:
        """As Client.bench: warmup + repeat dispatches one after another."""
        check_bench_counts(repeat, warmup)
        params, largest = dispatch_params(program, args, config, deadline_ms, self)
        runs = []
        for _ in range(warmup + repeat):
            start = time.perf_counter()
            res = await self._call("dispatch", params, timeout, largest >= BULK_MIN)
            runs.append(((time.perf_counter() - start) * 1e6, res))
        return bench_summary(program, repeat, warmup, params, runs)

    @staticmethod
    def dispatch_params(program: str, args: Iterable[Any] = (), config: Any = None,
                        deadline_ms: Optional[int] = None, client: Any = None, *,
                        priority: Optional[int] = None,
                        request_id: Optional[str] = None) -> Dict[str, Any]:
        """The params map a dispatch sends (as Client.dispatch_params)."""
        return dispatch_params(program, args, config, deadline_ms, client, priority,
                               request_id)[0]

    # ---- shared memory --------------------------------------------------------

    async def shm(self, nbytes: int, timeout: Optional[float] = None) -> "AsyncRegion":
        """A shared-memory region registered on this connection (as
        Client.shm); close it with ``await region.aclose()`` or ``async
        with``, or close()."""
        check_region_size(nbytes)
        deadline = self._deadline(timeout)
        left = math.inf if deadline is None else max(0.0, deadline - time.monotonic())
        if "shm" not in await self.features(left):
            raise shm_unsupported(self.socket_path)
        name = region_name()
        fd = make_memfd(nbytes)
        try:
            mm = mmap.mmap(fd, nbytes)
            call = None
            try:
                call = self._start("shm.register", {"name": name, "bytes": nbytes}, fd=fd,
                                   deadline=deadline)
                await call
            except BaseException:
                mm.close()
                if call is not None and call.given_up and call.off:
                    # Gave up after the daemon may have registered it: let
                    # it go rather than hold it until the connection ends.
                    self._unregister(name)
                raise
        finally:
            os.close(fd)  # the map (and the daemon) keep the memory
        self._regions.add(name)
        return AsyncRegion(self, name, nbytes, mm, self._region_closed)

    def _forget_region(self, name: str) -> bool:
        """True when name was an open region of this working connection."""
        if name not in self._regions:
            return False
        self._regions.discard(name)
        return self._failure is None

    def _region_closed(self, region: Region) -> None:
        """Region.close: unregister it, without waiting for the answer."""
        if self._forget_region(region.name):
            self._unregister(region.name)

    def _unregister(self, name: str) -> None:
        """Send shm.unregister for name; its answer is dropped."""
        self._start_dropping("shm.unregister", {"name": name})

    async def shm_list(self, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        return await self._call("shm.list", None, timeout)


class AsyncRegion(Region):
    """A Region of an AsyncClient: ``async with`` or ``await aclose()``
    unregisters it and waits for the daemon's answer; close() sends the
    unregister without waiting."""

    async def aclose(self) -> None:
        client = self.client
        assert isinstance(client, AsyncClient)
        if not self.closed and client._forget_region(self.name):
            try:
                await client.call("shm.unregister", {"name": self.name})
            finally:
                self.close()  # forgotten: unmaps only
        else:
            self.close()

    async def __aenter__(self) -> "AsyncRegion":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


# ---- connecting ----------------------------------------------------------------


class _Connect:
    """What connect() returns: await it for an AsyncClient, or use it as
    ``async with`` (the connection is closed at the end)."""

    def __init__(self, socket_path, device, timeout, connect_timeout):
        deadline_at(timeout)  # validate
        self._args = (socket_path, device, timeout, connect_timeout)
        self._client: Optional[AsyncClient] = None

    def __await__(self) -> Generator[Any, None, AsyncClient]:
        return self._open().__await__()

    async def __aenter__(self) -> AsyncClient:
        self._client = await self._open()
        return self._client

    async def __aexit__(self, *exc: Any) -> None:
        if self._client is not None:
            await self._client.close()

    async def _open(self) -> AsyncClient:
        socket_path, device, timeout, connect_timeout = self._args
        warn_sizing_env()
        path = choose_socket_path(socket_path, device)
        limit = connect_timeout_for(timeout, connect_timeout)
        loop = asyncio.get_running_loop()
        sock = socket.socket(socket.AF_UNIX,
                             socket.SOCK_STREAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
        try:
            connecting = loop.sock_connect(sock, path)
            await (connecting if math.isinf(limit) else asyncio.wait_for(connecting, limit))
        except asyncio.TimeoutError:
            sock.close()
            raise connect_failed(TimeoutError(), path, limit) from None
        except OSError as exc:
            sock.close()
            raise connect_failed(exc, path, limit) from None
        except BaseException:
            sock.close()
            raise
        return AsyncClient(sock, path, device, timeout, loop)


def connect(socket_path: Optional[str] = None, device: Optional[int] = None,
            timeout: Optional[float] = DEFAULT_TIMEOUT,
            connect_timeout: Optional[float] = None) -> _Connect:
    """A connection to ptod, as Client(...) makes one: socket_path, else
    $PTOD_SOCKET when device is None and it is set, else the built-in
    socket of device (default 0).  ``async with connect() as dev:``, or
    ``dev = await connect()`` (then ``await dev.close()``)."""
    return _Connect(socket_path, device, timeout, connect_timeout)
