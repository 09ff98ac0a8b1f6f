# SPDX-License-Identifier: Apache-2.0
"""The connection under ptoclient.aio's AsyncClient: one socket driven by
the event loop's reader and writer callbacks, a queue of whole messages
to write, one reader handing each answer to the Call awaiting it (and
resuming the awaiting task in its own loop pass: ptoclient.aio_call),
deadlines, and cancellation (see ptoclient.aio for what a caller sees).

Owned by the event loop thread of the loop it was opened on; nothing here
is for other threads.  Everything is in Channel's own state, written only
by its methods (a Call's answer by the Call's methods, which Channel and
asyncio.Task call); AsyncClient adds the protocol's methods on top.
"""

import asyncio
import collections
import itertools
import math
import socket
import time
from typing import Any, Deque, Dict, Iterable, List, Optional, Set, Tuple

import msgpack

from .aio_call import Call
from .calls import (call_failure, deadline_at, gathered, lost_by_close, lost_by_error,
                    next_msgid)
from .errors import CallTimeout, ConnectionLost, ProtocolError, PtoError, error_from_wire
from .shm import fd_ancillary
from .wire import (ANSWER, FAILURE, Reader, advance, classify, pack_notification, pack_request,
                   pack_request_parts)

__all__ = ["Channel"]

_RECV_SIZE = 256 << 10
_IOV_MAX = 64             # buffers per sendmsg, well under Linux's 1024
_BATCH_BYTES = 64 << 10   # small messages written together, at most
_NOSIGNAL = socket.MSG_NOSIGNAL

def _set(future, result=None, exc=None):
    if future is not None and not future.done():
        if exc is None:
            future.set_result(result)
        else:
            future.set_exception(exc)


def _check_request(method: Any, params: Any) -> None:
    """TypeError unless method and params can make a request."""
    if not isinstance(method, str):
        raise TypeError("method must be a str, got %r." % (method,))
    if params is not None and not isinstance(params, dict):
        raise TypeError("params must be a dict (named parameters) or None, got %s."
                        % type(params).__name__)


class Channel:
    """One connection's traffic (see the module docstring).  Attributes:
    socket_path, timeout (the default per-call timeout), notifications
    (the daemon's notifications other than "error", newest 256)."""

    def __init__(self, sock: socket.socket, socket_path: str, timeout: Optional[float],
                 loop: asyncio.AbstractEventLoop) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self.notifications: Deque[Tuple[str, Any]] = collections.deque(maxlen=256)
        self._loop = loop
        self._sock = sock
        self._pending: Dict[int, Call] = {}   # msgid -> call, sent or queued, not answered
        self._sent: Dict[int, Call] = {}      # msgid -> call of send(), not yet collected
        self._dropped: Set[int] = set()        # msgids whose answers are read and dropped
        self._queue: Deque[Call] = collections.deque()  # to write, in order; [0] is being written
        self._wants_write = False
        self._flush_soon = False  # _flush_batch is scheduled
        self._failure: Optional[PtoError] = None
        self._send_error: Optional[OSError] = None
        self._next_id = 1
        self._deadline_timer: Optional[asyncio.TimerHandle] = None
        self._armed_for = math.inf  # when _deadline_timer fires
        self._packer = msgpack.Packer(use_bin_type=True)
        self._where = "ptod at %s" % socket_path
        self._reader = Reader(self._where)
        self._inbox: List[Any] = []
        self._answered: Deque[Call] = collections.deque()  # settled by _read, not yet woken
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
            msgid = call.msgid if call.off else None  # None: nothing of it was sent
            _set(call, exc=call_failure(exc, call.method, msgid, self._send_error))
        for call in queue:
            _set(call.written)
        if self._deadline_timer is not None:
            self._deadline_timer.cancel()
            self._deadline_timer = None

    # ---- writing ----------------------------------------------------------

    def _start(self, method: str, params: Any, bulk: bool = False, fd: Optional[int] = None,
               deadline: Optional[float] = None) -> Call:
        """Queue a request, to be answered by deadline (None: no limit); it
        is written as soon as the ones before it are (at once when the
        socket has room).  Raises the connection's failure."""
        if self._failure is not None:
            raise call_failure(self._failure, method, None, self._send_error)
        msgid = self._next_id
        if msgid in self._pending or msgid in self._sent or msgid in self._dropped:
            msgid = next_msgid(msgid, self._pending, self._sent, self._dropped)
        self._next_id = msgid + 1 if msgid < (1 << 32) - 1 else 1
        call = Call(self, msgid, method, params, bulk, fd)
        self._pending[msgid] = call
        self._enqueue(call)
        self._timer(call, deadline)
        return call

    def _enqueue(self, call: Call) -> None:
        queue = self._queue
        if queue or self._flush_soon:
            queue.append(call)  # written after the calls before it
        elif len(self._pending) > 1:
            # Other calls are in flight, so tasks woken by their answers
            # are likely making requests in this same loop step: write
            # them together at its end, in one system call.
            queue.append(call)
            self._flush_soon = True
            self._loop.call_soon(self._flush_batch)
        elif call.total or call.bulk or call.fd is not None:
            queue.append(call)
            self._flush()
        else:
            self._write_alone(call)

    def _write_alone(self, call: Call) -> None:
        """Write a small request that nothing is queued before (the case
        of requests made one at a time): packed and sent here, queued only
        for what the socket did not take (or when packing or the socket
        failed: _flush finds the failure again and handles it)."""
        sent = 0
        if self._pack(call) is None:
            try:
                sent = self._sock.send(call.parts[0], _NOSIGNAL)
            except OSError:
                pass
            if sent == call.total:
                call.off = sent
                call.parts = []
                return
        self._queue.append(call)
        if sent:
            self._written(sent)
        self._flush()

    def _flush_batch(self) -> None:
        self._flush_soon = False
        if self._failure is None:
            self._flush()

    def _pack(self, call: Call) -> Optional[Exception]:
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

    def _refuse_head(self, exc: Exception) -> None:
        """The queue's head could not be packed: its call fails with
        msgpack's error and leaves the queue."""
        call = self._queue.popleft()
        self._pending.pop(call.msgid, None)
        _set(call, exc=exc)
        _set(call.written)

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
            if not call.total:
                exc = self._pack(call)
                if exc is not None:
                    self._refuse_head(exc)
                    continue
            parts = call.parts
            try:
                if call.fd is not None and not call.off:
                    sent = sock.sendmsg(parts[:_IOV_MAX], fd_ancillary(call.fd),
                                        _NOSIGNAL)
                elif len(queue) > 1 and not call.bulk:
                    sent = sock.sendmsg(self._batch(), [], _NOSIGNAL)
                elif len(parts) == 1:
                    sent = sock.send(parts[0], _NOSIGNAL)
                else:
                    sent = sock.sendmsg(parts[:_IOV_MAX], [], _NOSIGNAL)
            except (BlockingIOError, InterruptedError):
                self._want_write(True)
                return
            except OSError as exc:
                self._write_failed(exc)
                return
            self._written(sent)
        if self._wants_write:
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
            if call.written is not None:
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
        while self._failure is None and self._read():
            pass
        self._wake_answered_soon()  # (the caller may be a task: no other task's step here)
        self._fail(lost_by_error(self.socket_path, exc))

    def _notify(self, method: str, params: Any) -> None:
        """Queue a notification (no answer) behind the requests queued."""
        note = Call(self, None, method, None, False, None)
        note.parts = [pack_notification(self._packer, method, params)]
        note.total = len(note.parts[0])
        self._enqueue(note)

    # ---- reading -----------------------------------------------------------

    def _on_readable(self) -> None:
        """The loop's reader callback: read what has come, then run the
        step of each task whose answer it brought, here rather than on the
        loop's next pass.  Such a step is the task's code up to its next
        await: the next request it makes is written from here too."""
        self._read()
        answered = self._answered
        try:
            while answered:
                answered.popleft().wake_now()
        except BaseException:  # a step raised (KeyboardInterrupt, SystemExit)
            self._wake_answered_soon()  # the others still wake
            raise

    def _wake_answered_soon(self) -> None:
        answered = self._answered
        while answered:
            answered.popleft().wake_soon()

    def _read(self) -> bool:
        """Read what has come and settle its answers (see _answered); False
        when nothing was there or the connection ended."""
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
            elif detail[2] is None:
                call.settle(detail[3], None)
                self._answered.append(call)
            else:
                call.settle(None, error_from_wire(detail[2]))
                self._answered.append(call)
        elif kind == FAILURE:
            self._fail(what)
        else:
            self.notifications.append((what, detail))

    # ---- waiting, cancelling ------------------------------------------------

    def _abandon(self, call: Call, exc: Optional[PtoError]) -> None:
        """The caller gave up on call (cancelled, or exc: its timeout):
        drop it from the queue when nothing of it was written, else send
        `cancel` after it and drop its answer.  Its answer is exc, else
        CancelledError (when not set already: Call.cancel sets it)."""
        if self._pending.get(call.msgid) is not call:
            return  # answered, or the connection ended
        del self._pending[call.msgid]
        call.given_up = True
        if not call.off:
            self._queue.remove(call)
        else:
            self._dropped.add(call.msgid)
            self._notify("cancel", {"msgid": call.msgid})
        _set(call.written)
        _set(call, exc=asyncio.CancelledError() if exc is None else exc)

    def _expire(self, call: Call) -> None:
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

    # Deadlines: each call's own (call.deadline, while it is pending) and
    # one loop timer per connection, armed for the earliest deadline given
    # since it last fired.  Firing, it expires the pending calls that are
    # due and arms itself for the earliest deadline left.  A call costs two
    # stores, not a TimerHandle or a heap entry; the timer scans the calls
    # pending once per deadline it was armed for (one of a call answered
    # since finds none due).

    def _timer(self, call: Call, deadline: Optional[float]) -> None:
        if deadline is None or self._pending.get(call.msgid) is not call:
            return  # no limit; or answered, refused, failed
        call.deadline = deadline
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
        now = time.monotonic()
        for call in [c for c in self._pending.values() if c.deadline <= now]:
            self._expire(call)  # (nothing when an earlier one ended the connection)
        earliest = min((c.deadline for c in self._pending.values()), default=math.inf)
        if earliest < math.inf:
            self._arm(earliest)

    def _deadline(self, timeout: Optional[float]) -> Optional[float]:
        return deadline_at(self.timeout if timeout is None else timeout)

    async def _call(self, method: str, params: Any, timeout: Optional[float],
                    bulk: bool = False) -> Any:
        return await self._start(method, params, bulk, None, self._deadline(timeout))

    # ---- low level: call, send, result, gather, cancel ---------------------

    async def call(self, method: str, params: Any = None, timeout: Optional[float] = None) -> Any:
        """One request and its answer; for methods without a helper."""
        _check_request(method, params)
        return await self._call(method, params, timeout)

    async def send(self, method: str, params: Any = None, timeout: Optional[float] = None) -> int:
        """Write one request and return its msgid for result(), once it is
        written whole (so a full socket holds the caller back); the
        timeout covers the write."""
        _check_request(method, params)
        return await self._send(self._start(method, params), self._deadline(timeout))

    async def _send(self, call: Call, deadline: Optional[float]) -> int:
        if call.off < call.total or not call.total:  # still queued
            call.written = self._loop.create_future()
            self._timer(call, deadline)
            try:
                await call.written
            except asyncio.CancelledError:
                self._abandon(call, None)
                raise
            finally:
                call.deadline = math.inf
        if call.given_up or (not call.off and call.done()):
            return call.result()  # raises: timed out, or not written (packing, failure)
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
        self._timer(call, deadline)
        return await call

    async def gather(self, msgids: Iterable[int], timeout: Optional[float] = None,
                     return_exceptions: bool = False) -> List[Any]:
        """The answers of several msgids in the order given, under one
        timeout (as Client.gather)."""
        deadline = self._deadline(timeout)
        out: List[Any] = []
        for msgid in msgids:
            left = math.inf if deadline is None else max(0.0, deadline - time.monotonic())
            try:
                out.append(await self.result(msgid, left))
            except PtoError as exc:
                out.append(exc)
        return gathered(out, return_exceptions)

    def cancel(self, msgid: int) -> None:
        """Send `cancel` for a request of send() / send_dispatch(); its
        result() then raises Cancelled if it had not started (or gives the
        run's answer if it had).  Nothing when msgid is not one of this
        connection's requests in flight."""
        call = self._sent.get(msgid)
        if call is not None and msgid in self._pending and self._failure is None:
            self._notify("cancel", {"msgid": msgid})

    def _start_dropping(self, method: str, params: Any) -> None:
        """Send a request whose answer nobody waits for (read and dropped)."""
        if self._failure is None:
            call = self._start(method, params)
            if self._pending.pop(call.msgid, None) is call:
                self._dropped.add(call.msgid)
