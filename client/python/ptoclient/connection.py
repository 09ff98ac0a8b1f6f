# SPDX-License-Identifier: Apache-2.0
"""The connection under ptoclient.Client: one blocking socket shared by
threads, requests written whole under a lock, answers read by whichever
waiting thread holds the read role and handed to their msgids, timeouts,
and the end of the connection (see ptoclient.client for what a caller
sees).  Client adds the protocol's methods on top, as AsyncClient does
over ptoclient.aio_channel.

Threads: any; the state below is guarded by _lock (_send_lock orders the
writes), and written only by Connection's methods.
"""

import collections
import math
import select
import socket
import threading
import time
from typing import Any, Deque, Dict, Iterable, List, Optional, Set, Tuple

import msgpack

from .calls import (call_failure, connect_failed, connect_timeout_for, deadline_at as _deadline,
                    gathered, lost_by_close, lost_by_error, next_msgid)
from .errors import CallTimeout, ConnectionLost, ProtocolError, PtoError, error_from_wire
from .shm import fd_ancillary
from .wire import ANSWER, FAILURE, Reader, advance, classify, pack_request, pack_request_parts

__all__ = ["Connection"]

_RECV_SIZE = 256 << 10     # what one read takes; a Unix socket rarely holds more
_MSGID_MAX = (1 << 32) - 1
_IOV_MAX = 64                # buffers per sendmsg, well under Linux's 1024


def _left(deadline):
    return None if deadline is None else deadline - time.monotonic()


def _check_request(method, params):
    """TypeError unless method is a str and params a dict or None."""
    if not isinstance(method, str):
        raise TypeError("method must be a str, got %r." % (method,))
    if params is not None and not isinstance(params, dict):
        raise TypeError("params must be a dict (named parameters) or None, got %s."
                        % type(params).__name__)


def _wait_fd(fd, events, deadline):
    """Poll one fd; True when ready (or in error), False at the deadline."""
    poller = select.poll()
    poller.register(fd, events)
    while True:
        left = _left(deadline)
        if left is not None and left <= 0:
            return False
        ms = -1 if left is None else max(1, int(math.ceil(left * 1000)))
        try:
            if poller.poll(ms):
                return True
        except InterruptedError:
            continue


class Connection:
    """One connection's traffic (see the module docstring).  Attributes:
    socket_path, timeout (the default per-call timeout), notifications
    (the daemon's notifications other than "error", newest 256)."""

    def __init__(self, socket_path: str, timeout: Optional[float],
                 connect_timeout: Optional[float]) -> None:
        self.socket_path = socket_path
        self.timeout = timeout
        self.notifications: Deque[Tuple[str, Any]] = collections.deque(maxlen=256)  # (method, params), except "error"
        self._lock = threading.Lock()  # guards the state below; _cond waits on it
        self._cond = threading.Condition(self._lock)
        self._waiting = 0  # threads in _cond.wait: nobody to notify when 0
        self._send_lock = threading.Lock()
        self._pending: Dict[int, str] = {}  # msgid -> method, sent and not yet collected
        self._results: Dict[int, Tuple[Any, Any]] = {}  # msgid -> (error, result), answered and not yet collected
        self._abandoned: Set[int] = set()  # msgids whose call timed out; their answers are dropped
        self._failure: Optional[PtoError] = None  # the PtoError that ended the connection
        self._send_error: Optional[OSError] = None  # OSError of a failed write; the read side tells why
        self._reading = False
        self._closed = False
        self._next_id = 1
        self._packer = msgpack.Packer(use_bin_type=True)  # used under _send_lock
        self._reader = Reader("ptod at %s" % socket_path)
        self._inbox: List[Any] = []  # messages read, not yet handled (the read role's)
        self._rbuf = bytearray(_RECV_SIZE)
        self._rview = memoryview(self._rbuf)
        self._sock = self._connect(connect_timeout)
        self._poller = select.poll()  # the read role's, on the socket for POLLIN
        self._poller.register(self._sock.fileno(), select.POLLIN)


    # ---- connection -----------------------------------------------------

    def _connect(self, connect_timeout):
        limit = connect_timeout_for(self.timeout, connect_timeout)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
        sock.settimeout(None if math.isinf(limit) else limit)
        try:
            sock.connect(self.socket_path)
        except OSError as exc:  # socket.timeout is TimeoutError
            sock.close()
            raise connect_failed(exc, self.socket_path, limit) from None
        sock.setblocking(False)
        return sock

    def close(self) -> None:
        """Close the connection; pending calls (in other threads) get
        ConnectionLost.  Idempotent."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._fail(ConnectionLost("The client closed its connection to ptod at %s."
                                      % self.socket_path))
        self._sock.close()

    @property
    def closed(self):
        """True once the connection can no longer be used."""
        with self._lock:
            return self._failure is not None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # ---- low level: send, result, call -----------------------------------
    #
    # A call costs microseconds of Python on top of the daemon's round
    # trip, and that is what bench_latency compares with the C client.  So
    # the hot path takes _lock once to send and twice per answer, with
    # acquire()/release() (half the cost of `with`), and never asks the
    # unpacker for a message it does not hold (the StopIteration costs as
    # much as packing the request).

    def send(self, method: str, params: Any = None, timeout: Optional[float] = None) -> int:
        """Send one request; returns its msgid for result().

        params: None (sent as []) or a dict (sent as [dict]).  Raises
        TypeError for a value msgpack cannot encode, CallTimeout when the
        request could not be written in time, or the connection's failure.
        A write to a daemon that already closed the connection does not
        raise here: result() reports why it closed.
        """
        _check_request(method, params)
        deadline = _deadline(self.timeout if timeout is None else timeout)
        return self._send(method, params, deadline)

    def _send(self, method, params, deadline, fd=None, bulk=False):
        """send() for a method and params of this client's own making
        (_check_request's checks are the public entries').  fd: passed with
        the request's first bytes (SCM_RIGHTS).  bulk: params may hold
        bytes-like values of BULK_MIN bytes or more, which are then sent
        from where they lie rather than packed (see ptoclient.wire)."""
        self._lock.acquire()
        try:
            if self._failure is not None:
                raise self._call_failure(method, None)
            msgid = self._next_id
            if msgid in self._pending or msgid in self._abandoned or msgid == _MSGID_MAX:
                msgid = self._alloc_id()
            else:
                self._next_id = msgid + 1
            self._pending[msgid] = method
        finally:
            self._lock.release()
        self._write(msgid, method, params, deadline, fd, bulk)
        return msgid

    def _alloc_id(self):
        """The next uint32 msgid, skipping any still in use after a wrap
        (lock held)."""
        msgid = self._next_id
        if msgid in self._pending or msgid in self._abandoned:  # only after a wrap
            msgid = next_msgid(msgid, self._pending, self._abandoned)
        self._next_id = msgid + 1 if msgid < _MSGID_MAX else 1
        return msgid

    def _write(self, msgid, method, params, deadline, fd, bulk):
        """Pack the request msgid and write it whole (as _send says)."""
        if not self._send_lock.acquire(False):
            left = _left(deadline)
            if not self._send_lock.acquire(timeout=-1 if left is None else max(0.0, left)):
                with self._lock:
                    self._pending.pop(msgid, None)
                raise CallTimeout("Could not send %s to ptod at %s within the timeout: other "
                                  "threads were still writing. Nothing was sent; the connection "
                                  "stays usable." % (method, self.socket_path))
        off = total = 0
        try:
            try:
                if bulk:
                    parts = pack_request_parts(self._packer, msgid, method, params)
                else:
                    parts = [pack_request(self._packer, msgid, method, params)]
            except BaseException:
                with self._lock:
                    del self._pending[msgid]
                raise
            total = sum(len(part) for part in parts) if bulk else len(parts[0])
            while off < total:
                if self._send_error is not None or self._failure is not None:
                    return  # the connection is gone; result() says why
                try:
                    if len(parts) == 1 and (fd is None or off):
                        sent = self._sock.send(parts[0], socket.MSG_NOSIGNAL)
                    else:
                        ancillary = fd_ancillary(fd) if fd is not None and off == 0 else []
                        sent = self._sock.sendmsg(parts[:_IOV_MAX], ancillary, socket.MSG_NOSIGNAL)
                    off += sent
                    if off < total:
                        parts = advance(parts, sent)
                    continue
                except (BlockingIOError, InterruptedError):
                    pass
                except OSError as exc:
                    # EPIPE / ECONNRESET: the daemon closed the connection, maybe
                    # after an error notification still waiting to be read.
                    with self._lock:
                        self._send_error = exc
                    return
                # The socket is full.  Keep reading answers meanwhile: a
                # server that blocks writing answers to us stops reading our
                # requests, and both sides would wait for each other.
                if self._drain():
                    continue
                sock_fd = self._sock.fileno()
                with self._lock:
                    events = select.POLLOUT if self._reading else select.POLLOUT | select.POLLIN
                if sock_fd < 0 or _wait_fd(sock_fd, events, deadline):
                    continue
                with self._lock:
                    self._pending.pop(msgid, None)
                    if off == 0:
                        raise CallTimeout("Could not send %s to ptod at %s within the timeout "
                                          "(the daemon is not reading). Nothing was sent; the "
                                          "connection stays usable." % (method, self.socket_path))
                    self._fail(ConnectionLost(
                        "The connection to ptod at %s was closed because a %s request could only "
                        "be written in part before its timeout." % (self.socket_path, method)))
                raise CallTimeout("Could not send %s to ptod at %s within the timeout; it was "
                                  "written in part, so the connection was closed."
                                  % (method, self.socket_path))
        except BaseException:
            # Interrupted (e.g. KeyboardInterrupt) half-way through a message:
            # the stream can no longer be parsed by the daemon.
            if 0 < off < total:
                with self._lock:
                    self._fail(ConnectionLost(
                        "The connection to ptod at %s was closed because sending a %s request "
                        "was interrupted half-way." % (self.socket_path, method)))
            raise
        finally:
            self._send_lock.release()

    def result(self, msgid: int, timeout: Optional[float] = None) -> Any:
        """The result of the request `msgid` (from send() / send_dispatch()),
        waiting for it; raises its PtoError.  Each msgid is collected once."""
        deadline = _deadline(self.timeout if timeout is None else timeout)
        return self._result(msgid, deadline)

    def _result(self, msgid, deadline):
        method = None
        held = False  # this thread holds the read role
        expired = False
        lock = self._lock
        pending, results = self._pending, self._results
        try:
            while True:
                lock.acquire()
                try:
                    if held:
                        held = False
                        self._end_reading()
                    while True:
                        # An answered call is still pending (_handle_inbox
                        # records only those): the common case first.
                        if msgid in results:
                            error, result = results.pop(msgid)
                            del pending[msgid]
                            if error is not None:
                                raise error_from_wire(error)
                            return result
                        if method is None:
                            method = pending.get(msgid)
                            if method is None:
                                raise ValueError("No pending call with msgid %r on this "
                                                 "connection (already collected, timed out, or "
                                                 "never sent)." % (msgid,))
                        elif msgid not in pending:
                            raise ValueError("The call with msgid %d was collected by another "
                                             "thread." % msgid)
                        if self._failure is not None:
                            del pending[msgid]
                            raise self._call_failure(method, msgid)
                        if not expired and not self._reading:
                            self._reading = held = True
                            break
                        left = _left(deadline)
                        if expired or (left is not None and left <= 0):
                            del pending[msgid]
                            self._abandoned.add(msgid)
                            raise CallTimeout(
                                "No answer to %s (msgid %d) from ptod at %s within the timeout. "
                                "The request may still run in the daemon (use deadline_ms so "
                                "that a dispatch never starts late); this connection stays "
                                "usable and the late answer will be discarded."
                                % (method, msgid, self.socket_path))
                        self._waiting += 1
                        try:
                            self._cond.wait(left)
                        finally:
                            self._waiting -= 1
                finally:
                    lock.release()
                step = "again"
                while step == "again":
                    step = self._read(deadline, wait=True)
                expired = step == "timeout"
        finally:
            if held:
                with lock:
                    self._end_reading()

    def call(self, method: str, params: Any = None, timeout: Optional[float] = None) -> Any:
        """send() then result() under one timeout; for methods this client
        has no helper for yet."""
        _check_request(method, params)
        return self._call(method, params, timeout)

    def _call(self, method, params, timeout, bulk=False):
        deadline = _deadline(self.timeout if timeout is None else timeout)
        return self._result(self._send(method, params, deadline, None, bulk), deadline)

    def gather(self, msgids: Iterable[int], timeout: Optional[float] = None,
               return_exceptions: bool = False) -> List[Any]:
        """The results of several msgids, in the order given, under one
        timeout.  With return_exceptions a failed call gives its PtoError in
        place of its result (others are still collected); without, the first
        failure is raised after every answer has been collected."""
        deadline = _deadline(self.timeout if timeout is None else timeout)
        out: List[Any] = []
        for msgid in msgids:
            try:
                out.append(self._result(msgid, deadline))
            except PtoError as exc:
                out.append(exc)
        return gathered(out, return_exceptions)

    # ---- reading ------------------------------------------------------
    #
    # One thread at a time holds the read role (_reading): it reads, and
    # puts the whole messages it read into _inbox, which only it touches;
    # when it gives the role up (_end_reading, lock held) they are handled
    # and the waiting threads woken.

    def _drain(self):
        """Handle whatever has arrived, without waiting, when no other
        thread holds the read role.  True when it handled something (an
        answer, or the end of the connection)."""
        with self._lock:
            if self._reading or self._failure is not None:
                return False
            self._reading = True
        handled = False
        try:
            while True:
                step = self._read(None, wait=False)
                if step == "message":
                    handled = True
                elif step == "failed":
                    return True
                elif step == "empty":
                    return handled
                # "again": part of a message was read; read on
        finally:
            with self._lock:
                self._end_reading()

    def _end_reading(self):
        """Give up the read role: handle what it read, wake the waiters
        (lock held)."""
        if self._inbox:
            self._handle_inbox()
        self._reading = False
        if self._waiting:
            self._cond.notify_all()

    def _handle_inbox(self):
        """Handle the whole messages read so far, in order (lock held)."""
        inbox = self._inbox
        pending, results = self._pending, self._results
        for msg in inbox:
            if self._failure is not None:
                break  # nothing after the end counts
            # The common message, an answer, is recognised here without a
            # call; anything else as classify() says.
            if not (type(msg) is list and len(msg) == 4 and msg[0] == 1
                    and type(msg[1]) is int):
                kind, what, detail = classify(msg, self._reader.where)
                if kind != ANSWER:
                    self._not_answer(kind, what, detail)
                    continue
            what = msg[1]
            if what in pending and what not in results:
                results[what] = (msg[2], msg[3])
            else:
                self._abandoned.discard(what)  # the late answer of a timed-out call
        inbox.clear()

    def _fail_read(self, exc):
        """The stream ended under the read role: the messages read before
        the end are handled first (an answer that came before a reset is
        still its call's result), then the connection fails."""
        with self._lock:
            self._handle_inbox()
            self._fail(exc)

    def _read(self, deadline, wait):
        """One read (read role held): wait for data until the deadline
        ("timeout"), or not at all ("empty" when there is none), read it,
        and put every message it completes into the inbox ("message";
        "again" when none, or when the wait ended early); a broken stream
        fails the connection ("failed")."""
        if wait:
            ms = None
            if deadline is not None:
                ms = (deadline - time.monotonic()) * 1000  # poll() rounds it up
                if ms <= 0:
                    return "timeout"
            # A socket closed meanwhile (close()) shows as POLLNVAL, then
            # fails recv_into.
            try:
                if not self._poller.poll(ms):
                    return "again"  # timed out, or woken early: the caller looks again
            except InterruptedError:
                return "again"
        target = self._reader.target()  # a large answer's bytes go straight to their place
        try:
            n = self._sock.recv_into(self._rbuf if target is None else target)
        except (BlockingIOError, InterruptedError):
            return "again" if wait else "empty"
        except OSError as exc:
            self._fail_read(lost_by_error(self.socket_path, exc))
            return "failed"
        finally:
            if target is not None:
                target.release()  # the block is the answer's; no view of ours may outlive the read
        if not n:
            self._fail_read(lost_by_close(self.socket_path))
            return "failed"
        try:
            if target is None:
                got = self._reader.feed(self._rview[:n], self._inbox)
            else:
                got = self._reader.filled(n, self._inbox)
        except ProtocolError as exc:
            self._fail_read(exc)
            return "failed"
        return "message" if got else "again"

    def _not_answer(self, kind, what, detail):
        """A message off the wire that is not an answer, as classify() gave
        it (lock held)."""
        if kind == FAILURE:
            # The daemon closes the connection after its error notification:
            # every pending call fails with this error.
            self._fail(what)
        else:
            self.notifications.append((what, detail))

    def _fail(self, exc):
        """Record why the connection ended (the first reason wins), wake
        every waiter (lock held)."""
        if self._failure is None:
            self._failure = exc
            try:
                self._sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self._cond.notify_all()

    def _call_failure(self, method, msgid):
        """The error one call raises once the connection has ended."""
        assert self._failure is not None  # only called once the connection has ended
        return call_failure(self._failure, method, msgid, self._send_error)
