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
connection belongs to the event loop it was opened on.

Cancellation.  Cancelling a task that awaits a call (task.cancel(),
asyncio.wait_for, a TaskGroup failing) sends the daemon protocol 1.2's
``cancel`` notification for the request, unless nothing of it was written
yet (then it is simply not sent), and re-raises CancelledError; the answer
that may still come (CANCELLED, or the result of a run that had started)
is read and dropped.  A call's own ``timeout`` expiring does the same and
raises CallTimeout.  A daemon of protocol 1.1 ignores ``cancel`` (it is a
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
import collections
import heapq
import itertools
import math
import mmap
import os
import socket
import time
from typing import Any, Deque, Dict, Generator, Iterable, List, Optional, Set, Tuple

import msgpack

from .calls import (DEFAULT_TIMEOUT, buffer_alloc_params, buffer_read_params,
                    buffer_write_params, bench_summary, call_failure, check_bench_counts,
                    check_region_size, choose_socket_path, connect_failed, connect_timeout_for,
                    deadline_at, dispatch_params, lost_by_close, lost_by_error, next_msgid,
                    prewarm_params, serving_keys, shm_unsupported)
from .env import warn_sizing_env
from .errors import CallTimeout, ConnectionLost, ProtocolError, PtoError, error_from_wire
from .shm import Region, fd_ancillary, make_memfd, region_name
from .where import where_mismatch, where_needed
from .wire import (ANSWER, BULK_MIN, FAILURE, Reader, advance, classify, pack_notification,
                   pack_request, pack_request_parts)

__all__ = ["connect", "AsyncClient", "AsyncRegion", "DEFAULT_TIMEOUT"]

_RECV_SIZE = 256 << 10
_IOV_MAX = 64             # buffers per sendmsg, well under Linux's 1024
_BATCH_BYTES = 64 << 10   # small messages written together, at most


class _Call:
    """One request (future set) or notification (future None) on its way:
    queued until written whole, pending until answered."""

    __slots__ = ("msgid", "method", "params", "bulk", "fd", "future", "parts", "off", "total",
                 "written", "deadline", "given_up")

    def __init__(self, msgid, method, params, bulk, fd, future):
        self.msgid = msgid
        self.method = method
        self.params = params
        self.bulk = bulk
        self.fd = fd                  # passed with the first byte (SCM_RIGHTS)
        self.future = future          # the answer: result, or the PtoError
        self.parts: List[Any] = []    # what is left to write, once packed
        self.off = 0                  # bytes written
        self.total = 0                # bytes of the message; 0 until packed
        self.written: Optional[asyncio.Future] = None  # set when it leaves the queue
        self.deadline: Optional[float] = None  # when it expires (time.monotonic), while it can
        self.given_up = False         # cancelled, or its timeout expired


def _set(future, result=None, exc=None):
    if future is not None and not future.done():
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)


class AsyncClient:
    """A connection to one ptod on an asyncio event loop; make it with
    connect().  The attributes are the blocking Client's: socket_path,
    device, timeout, where, notifications."""

    def __init__(self, sock: socket.socket, socket_path: str, device: Optional[int],
                 timeout: Optional[float], loop: asyncio.AbstractEventLoop) -> None:
        self.socket_path = socket_path
        self.device = device
        self.timeout = timeout
        self.where: Optional[Tuple[Any, Any]] = None
        self.notifications: Deque[Tuple[str, Any]] = collections.deque(maxlen=256)
        self._loop = loop
        self._sock = sock
        self._pending: Dict[int, _Call] = {}   # msgid -> call, sent or queued, not answered
        self._sent: Dict[int, _Call] = {}      # msgid -> call of send(), not yet collected
        self._dropped: Set[int] = set()        # msgids whose answers are read and dropped
        self._queue: Deque[_Call] = collections.deque()  # to write, in order; [0] is being written
        self._wants_write = False
        self._flush_soon = False  # _flush_batch is scheduled
        self._failure: Optional[PtoError] = None
        self._send_error: Optional[OSError] = None
        self._next_id = 1
        self._deadlines: List[Tuple[float, int, _Call]] = []  # heap; see _timer
        self._deadline_seq = itertools.count()
        self._deadline_timer: Optional[asyncio.TimerHandle] = None
        self._armed_for = math.inf  # when _deadline_timer fires
        self._features: Optional[List[str]] = None
        self._regions: Set[str] = set()
        self._packer = msgpack.Packer(use_bin_type=True)
        self._where = "ptod at %s" % socket_path
        self._reader = Reader(self._where)
        self._inbox: List[Any] = []
        self._rbuf = bytearray(_RECV_SIZE)
        self._rview = memoryview(self._rbuf)
        loop.add_reader(sock.fileno(), self._on_readable)

    # ---- connection -----------------------------------------------------

    async def close(self) -> None:
        """Close the connection; calls in flight raise ConnectionLost.
        Idempotent."""
        self._close()

    def _close(self) -> None:
        if self._sock.fileno() < 0:
            return
        self._fail(ConnectionLost("The client closed its connection to ptod at %s."
                                  % self.socket_path))
        self._sock.close()

    @property
    def closed(self) -> bool:
        """True once the connection can no longer be used."""
        return self._failure is not None

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._close()

    def __repr__(self) -> str:
        return "AsyncClient(%r)" % self.socket_path

    def _fail(self, exc: PtoError) -> None:
        """End the connection with exc (the first reason wins): every call
        in flight fails with it, once."""
        if self._failure is not None:
            return
        self._failure = exc
        fd = self._sock.fileno()
        if fd >= 0:
            self._loop.remove_reader(fd)
            self._loop.remove_writer(fd)
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._wants_write = False
        pending, self._pending = self._pending, {}
        queue, self._queue = self._queue, collections.deque()
        self._dropped.clear()
        for call in pending.values():
            call.deadline = None
            msgid = call.msgid if call.off else None  # None: nothing of it was sent
            _set(call.future, exc=call_failure(exc, call.method, msgid, self._send_error))
        for call in queue:
            _set(call.written)
        self._deadlines.clear()
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    # ---- writing ----------------------------------------------------------

    def _start(self, method: str, params: Any, bulk: bool = False,
               fd: Optional[int] = None) -> _Call:
        """Queue a request; it is written as soon as the ones before it are
        (at once when the socket has room).  Raises the connection's
        failure."""
        if not isinstance(method, str):
            raise TypeError("method must be a str, got %r." % (method,))
        if params is not None and not isinstance(params, dict):
            raise TypeError("params must be a dict (named parameters) or None, got %s."
                            % type(params).__name__)
        if self._failure is not None:
            raise call_failure(self._failure, method, None, self._send_error)
        msgid = self._next_id
        if msgid in self._pending or msgid in self._sent or msgid in self._dropped:
            msgid = next_msgid(msgid, self._pending, self._sent, self._dropped)
        self._next_id = msgid + 1 if msgid < (1 << 32) - 1 else 1
        call = _Call(msgid, method, params, bulk, fd, self._loop.create_future())
        self._pending[msgid] = call
        self._enqueue(call)
        return call

    def _enqueue(self, call: _Call) -> None:
        self._queue.append(call)
        if len(self._queue) == 1 and not self._flush_soon:
            if len(self._pending) > 1:
                # Other calls are in flight, so tasks woken by their answers
                # are likely making requests in this same loop step: write
                # them together at its end, in one system call.
                self._flush_soon = True
                self._loop.call_soon(self._flush_batch)
            else:
                self._flush()

    def _flush_batch(self) -> None:
        self._flush_soon = False
        if self._failure is None:
            self._flush()

    def _pack(self, call: _Call) -> Optional[Exception]:
        """Pack call's message; the error when msgpack cannot encode its
        params."""
        try:
            if call.bulk:
                call.parts = pack_request_parts(self._packer, call.msgid, call.method, call.params)
            else:
                call.parts = [pack_request(self._packer, call.msgid, call.method, call.params)]
        except Exception as exc:  # TypeError, ValueError, OverflowError from msgpack
            return exc
        call.params = None
        call.total = sum(len(p) for p in call.parts) if call.bulk else len(call.parts[0])
        return None

    def _pack_head(self) -> bool:
        """Pack the queue's head; False when it could not be (its call
        fails with msgpack's error and leaves the queue)."""
        call = self._queue[0]
        exc = self._pack(call)
        if exc is None:
            return True
        self._queue.popleft()
        self._pending.pop(call.msgid, None)
        _set(call.future, exc=exc)
        _set(call.written)
        return False

    def _batch(self) -> List[Any]:
        """The buffers of the queue's head and of the small messages behind
        it, packed now, up to _IOV_MAX buffers or _BATCH_BYTES."""
        bufs = list(self._queue[0].parts)
        size = 0
        for call in itertools.islice(self._queue, 1, None):
            if len(bufs) >= _IOV_MAX or size >= _BATCH_BYTES or call.fd is not None \
                    or call.bulk or (not call.total and self._pack(call) is not None):
                break  # (one that msgpack refuses fails when it is the head)
            bufs.append(call.parts[0])
            size += call.total
        return bufs

    def _flush(self) -> None:
        """Write from the queue until it is empty or the socket is full."""
        queue = self._queue
        sock = self._sock
        while queue:
            call = queue[0]
            if not call.total and not self._pack_head():
                continue
            parts = call.parts
            try:
                if call.fd is not None and not call.off:
                    sent = sock.sendmsg(parts[:_IOV_MAX], fd_ancillary(call.fd),
                                        socket.MSG_NOSIGNAL)
                elif len(queue) > 1 and not call.bulk:
                    sent = sock.sendmsg(self._batch(), [], socket.MSG_NOSIGNAL)
                elif len(parts) == 1:
                    sent = sock.send(parts[0], socket.MSG_NOSIGNAL)
                else:
                    sent = sock.sendmsg(parts[:_IOV_MAX], [], socket.MSG_NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                self._want_write(True)
                return
            except OSError as exc:
                self._write_failed(exc)
                return
            self._written(sent)
        self._want_write(False)

    def _written(self, sent: int) -> None:
        """Account sent bytes to the messages at the queue's head."""
        queue = self._queue
        while sent:
            call = queue[0]
            left = call.total - call.off
            if sent < left:
                call.off += sent
                call.parts = advance(call.parts, sent)
                return
            sent -= left
            call.off = call.total
            queue.popleft()
            call.parts = []
            _set(call.written)

    def _want_write(self, on: bool) -> None:
        if on != self._wants_write:
            self._wants_write = on
            if on:
                self._loop.add_writer(self._sock.fileno(), self._flush)
            else:
                self._loop.remove_writer(self._sock.fileno())

    def _write_failed(self, exc: OSError) -> None:
        """EPIPE / ECONNRESET: the daemon closed the connection, maybe after
        an error notification still to be read, which then says why."""
        self._send_error = exc
        while self._failure is None and self._on_readable():
            pass
        self._fail(lost_by_error(self.socket_path, exc))

    def _notify(self, method: str, params: Any) -> None:
        """Queue a notification (no answer) behind the requests queued."""
        note = _Call(None, method, None, False, None, None)
        note.parts = [pack_notification(self._packer, method, params)]
        note.total = len(note.parts[0])
        self._enqueue(note)

    # ---- reading -----------------------------------------------------------

    def _on_readable(self) -> bool:
        """Read what has come and hand out its answers; False when nothing
        was there or the connection ended."""
        try:
            n = self._sock.recv_into(self._rbuf)
        except (BlockingIOError, InterruptedError):
            return False
        except OSError as exc:
            self._fail(lost_by_error(self.socket_path, exc))
            return False
        if not n:
            self._fail(lost_by_close(self.socket_path))
            return False
        inbox = self._inbox
        failure: Optional[PtoError] = None
        try:
            self._reader.feed(self._rview[:n], inbox)
        except ProtocolError as exc:
            failure = exc  # after the messages before it: an answer read first still counts
        for msg in inbox:
            self._handle(msg)
            if self._failure is not None:
                break  # nothing after the end counts
        inbox.clear()
        if failure is not None:
            self._fail(failure)
        return self._failure is None

    def _handle(self, msg: Any) -> None:
        kind, what, detail = classify(msg, self._where)
        if kind == ANSWER:
            call = self._pending.pop(what, None)
            if call is None:
                self._dropped.discard(what)  # the late answer of a cancelled call
                return
            call.deadline = None
            error = detail[2]
            if error is None:
                _set(call.future, detail[3])
            else:
                _set(call.future, exc=error_from_wire(error))
        elif kind == FAILURE:
            self._fail(what)
        else:
            self.notifications.append((what, detail))

    # ---- waiting, cancelling ------------------------------------------------

    def _abandon(self, call: _Call, exc: Optional[PtoError]) -> None:
        """The caller gave up on call (cancelled, or exc: its timeout):
        drop it from the queue when nothing of it was written, else send
        `cancel` after it and drop its answer."""
        if self._pending.get(call.msgid) is not call:
            return  # answered, or the connection ended
        del self._pending[call.msgid]
        call.given_up = True
        call.deadline = None
        if not call.off:
            self._queue.remove(call)
        else:
            self._dropped.add(call.msgid)
            self._notify("cancel", {"msgid": call.msgid})
        _set(call.written)
        _set(call.future, exc=exc)

    def _expire(self, call: _Call) -> None:
        if call.off:
            text = ("No answer to %s (msgid %d) from ptod at %s within the timeout. A cancel was "
                    "sent: the request does not start if it had not (a running one finishes); "
                    "this connection stays usable and the late answer will be discarded."
                    % (call.method, call.msgid, self.socket_path))
        else:
            text = ("Could not send %s to ptod at %s within the timeout (the daemon is not "
                    "reading). Nothing was sent; the connection stays usable."
                    % (call.method, self.socket_path))
        self._abandon(call, CallTimeout(text))

    # Deadlines: one heap per connection and one loop timer for its
    # earliest entry, not a TimerHandle per call (a third of a pipelined
    # call's cost).  An entry is live while its call's deadline is still
    # the entry's; answered calls leave theirs to be skipped or compacted.

    def _timer(self, call: _Call, deadline: Optional[float]) -> None:
        if deadline is None or call.future.done():
            return
        call.deadline = deadline
        heap = self._deadlines
        heapq.heappush(heap, (deadline, next(self._deadline_seq), call))
        if len(heap) > 2 * len(self._pending) + 64:
            heap[:] = [e for e in heap if e[2].deadline == e[0]]
            heapq.heapify(heap)
        if deadline < self._armed_for:
            self._arm(deadline)

    def _arm(self, deadline: float) -> None:
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
        self._armed_for = deadline
        self._deadline_timer = self._loop.call_later(max(0.0, deadline - time.monotonic()),
                                                     self._expire_due)

    def _expire_due(self) -> None:
        self._deadline_timer = None
        self._armed_for = math.inf
        heap = self._deadlines
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            deadline, _, call = heapq.heappop(heap)
            if call.deadline == deadline:
                call.deadline = None
                self._expire(call)
        if heap:
            self._arm(heap[0][0])

    async def _wait(self, call: _Call, deadline: Optional[float]) -> Any:
        """The answer of call by deadline (see the module docstring for
        cancellation and timeouts)."""
        self._timer(call, deadline)
        try:
            return await call.future
        except asyncio.CancelledError:
            self._abandon(call, None)
            raise

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        return deadline_at(self.timeout if timeout is None else timeout)

    async def _call(self, method: str, params: Any, timeout: Optional[float],
                    bulk: bool = False) -> Any:
        deadline = self._deadline(timeout)
        return await self._wait(self._start(method, params, bulk), deadline)

    # ---- low level: call, send, result, gather, cancel ---------------------

    async def call(self, method: str, params: Any = None, timeout: Optional[float] = None) -> Any:
        """One request and its answer; for methods without a helper."""
        return await self._call(method, params, timeout)

    async def send(self, method: str, params: Any = None, timeout: Optional[float] = None) -> int:
        """Write one request and return its msgid for result(), once it is
        written whole (so a full socket holds the caller back); the
        timeout covers the write."""
        return await self._send(self._start(method, params), self._deadline(timeout))

    async def _send(self, call: _Call, deadline: Optional[float]) -> int:
        if call.off < call.total or not call.total:  # still queued
            call.written = self._loop.create_future()
            self._timer(call, deadline)
            try:
                await call.written
            except asyncio.CancelledError:
                self._abandon(call, None)
                raise
            finally:
                call.deadline = None
        if call.given_up or (not call.off and call.future.done()):
            return call.future.result()  # raises: timed out, or not written (packing, failure)
        self._sent[call.msgid] = call
        return call.msgid

    async def result(self, msgid: int, timeout: Optional[float] = None) -> Any:
        """The answer of a request sent with send() / send_dispatch();
        raises its PtoError.  Each msgid is collected once."""
        deadline = self._deadline(timeout)
        call = self._sent.pop(msgid, None)
        if call is None:
            raise ValueError("No pending call with msgid %r on this connection (already "
                             "collected, timed out, or never sent)." % (msgid,))
        return await self._wait(call, deadline)

    async def gather(self, msgids: Iterable[int], timeout: Optional[float] = None,
                     return_exceptions: bool = False) -> List[Any]:
        """The answers of several msgids in the order given, under one
        timeout (as Client.gather)."""
        deadline = self._deadline(timeout)
        out: List[Any] = []
        first_error = None
        for msgid in msgids:
            try:
                left = math.inf if deadline is None else max(0.0, deadline - time.monotonic())
                out.append(await self.result(msgid, left))
            except PtoError as exc:
                out.append(exc)
                if first_error is None:
                    first_error = exc
        if first_error is not None and not return_exceptions:
            raise first_error
        return out

    def cancel(self, msgid: int) -> None:
        """Send `cancel` for a request of send() / send_dispatch(); its
        result() then raises Cancelled if it had not started (or gives the
        run's answer if it had).  Nothing when msgid is not one of this
        connection's requests in flight."""
        call = self._sent.get(msgid)
        if call is not None and msgid in self._pending and self._failure is None:
            self._notify("cancel", {"msgid": msgid})

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
                             request_id) -> _Call:
        params, largest = dispatch_params(program, args, config, deadline_ms, self, priority,
                                          request_id)
        if config is not None:
            await self._check_where(config, timeout)
        return self._start("dispatch", params, largest >= BULK_MIN)

    async def dispatch(self, program: str, args: Iterable[Any] = (), config: Any = None,
                       deadline_ms: Optional[int] = None, timeout: Optional[float] = None, *,
                       priority: Optional[int] = None,
                       request_id: Optional[str] = None) -> Dict[str, Any]:
        """Run program once (as Client.dispatch); priority and request_id
        as in the module docstring."""
        deadline = self._deadline(timeout)
        if config is None:  # nothing to check first: the common case, one coroutine less
            params, largest = dispatch_params(program, args, None, deadline_ms, self, priority,
                                              request_id)
            call = self._start("dispatch", params, largest >= BULK_MIN)
        else:
            call = await self._dispatch_call(program, args, config, deadline_ms, timeout,
                                             priority, request_id)
        return await self._wait(call, deadline)

    async def send_dispatch(self, program: str, args: Iterable[Any] = (), config: Any = None,
                            deadline_ms: Optional[int] = None, timeout: Optional[float] = None,
                            *, priority: Optional[int] = None,
                            request_id: Optional[str] = None) -> int:
        """Pipelined dispatch: its msgid, once written, for result()."""
        deadline = self._deadline(timeout)
        call = await self._dispatch_call(program, args, config, deadline_ms, timeout, priority,
                                         request_id)
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
                call = self._start("shm.register", {"name": name, "bytes": nbytes}, fd=fd)
                await self._wait(call, deadline)
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
        return AsyncRegion(self, name, nbytes, mm)

    def _forget_region(self, name: str) -> bool:
        """True when name was an open region of this working connection."""
        if name not in self._regions:
            return False
        self._regions.discard(name)
        return self._failure is None

    def _shm_closed(self, region: Region) -> None:
        """Region.close: unregister it, without waiting for the answer."""
        if self._forget_region(region.name):
            self._unregister(region.name)

    def _unregister(self, name: str) -> None:
        """Send shm.unregister for name; its answer is dropped."""
        if self._failure is None:
            call = self._start("shm.unregister", {"name": name})
            if self._pending.pop(call.msgid, None) is call:
                self._dropped.add(call.msgid)

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
