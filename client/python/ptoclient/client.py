# SPDX-License-Identifier: Apache-2.0
"""Client: one msgpack-RPC connection to one ptod.

Blocking calls, one per method of the protocol, each with its own timeout:

    with Client() as c:               # $PTOD_SOCKET, else device 0's socket
        c.ping()
        r = c.dispatch("vector_add", [Data(a), Data(b), Out(n)],
                       config=RunConfig(ring_heap=[512 << 20, 0, 0, 0]))

Pipelining: send many requests, then collect each answer by its msgid, in
any order (the daemon may answer out of order):

    ids = [c.send_dispatch("noop", [100]) for _ in range(8)]
    results = c.gather(ids)            # or c.result(ids[3]) one at a time

Timeouts.  Every call takes ``timeout`` (seconds; None = the client's
default, DEFAULT_TIMEOUT = 300 s unless the constructor says otherwise;
math.inf = no limit).  The finite default is there so that a stopped daemon
never hangs a caller forever.  When it expires the call raises
CallTimeout; the connection stays open and usable, and the answer, if it
comes later, is discarded.  The daemon has no cancel: the request may still
run; give a dispatch ``deadline_ms`` so that it never starts late.  Only
when a request could not be written whole in time is the connection closed
(a half-written message would corrupt the stream); the error says so.

Failures.  A daemon error map raises its PtoError subclass.  An error
notification ``[2, "error", [{code, name, message}]]`` (the daemon refusing
the connection with PERMISSION_DENIED or BUSY, or closing it after
MESSAGE_TOO_LARGE) raises that error from every pending call and every later
one.  A daemon that exits or closes the connection mid-call raises
ConnectionLost (a ConnectionError) at once, never a hang.

Threads.  A Client may be shared by threads: requests are written whole
under a lock, and whichever waiting thread holds the read role reads answers
for all of them.  close() makes the calls of other threads fail with
ConnectionLost.
"""

import collections
from typing import Any, Deque, Dict, Iterable, List, Optional, Set, Tuple
import math
import mmap
import os
import select
import socket
import threading
import time

import msgpack

from .shm import Region, fd_ancillary, make_memfd, region_name
from .env import SOCKET_ENV, SizingEnvWarning, sizing_env_note, warn_sizing_env  # noqa: F401
from .where import check_where
from .paths import default_socket_path, socket_path_for  # noqa: F401
from .wire import (ANSWER, BULK_MIN, FAILURE, Reader, advance, classify, pack_request,
                   pack_request_parts)
from .calls import (CONNECT_TIMEOUT, DEFAULT_TIMEOUT, buffer_alloc_params,  # noqa: F401
                    buffer_read_params, buffer_write_params, bench_summary, call_failure,
                    check_bench_counts, check_region_size, choose_socket_path, connect_failed,
                    connect_timeout_for, deadline_at as _deadline, dispatch_params, gathered,
                    lost_by_close, lost_by_error, next_msgid, prewarm_params,
                    serving_keys, shm_unsupported)
from .errors import CallTimeout, ConnectionLost, ProtocolError, PtoError, error_from_wire

__all__ = ["Client", "default_socket_path", "socket_path_for", "DEFAULT_TIMEOUT"]
_RECV_SIZE = 256 << 10     # what one read takes; a Unix socket rarely holds more
_MSGID_MAX = (1 << 32) - 1
_IOV_MAX = 64                # buffers per sendmsg, well under Linux's 1024


def _left(deadline):
    return None if deadline is None else deadline - time.monotonic()


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


class Client:
    """A connection to one ptod (see the module docstring).

    socket_path: the daemon's socket.  Default: when device is given,
        $PTOD_SOCKET_<device> when set (and not empty), else
        default_socket_path(device); else $PTOD_SOCKET when set, else the
        same for device 0.
    device: the device number whose built-in socket to use.
    timeout: the default per-call timeout in seconds (None or math.inf: no
        limit); each call may give its own.
    connect_timeout: for connecting (default: the smaller of timeout and 10 s).
    """

    def __init__(self, socket_path: Optional[str] = None, device: Optional[int] = None,
                 timeout: Optional[float] = DEFAULT_TIMEOUT,
                 connect_timeout: Optional[float] = None) -> None:
        _deadline(timeout)  # validate
        warn_sizing_env()
        self.device = device
        self.socket_path = socket_path = choose_socket_path(socket_path, device)
        self.where: Optional[Tuple[Any, Any]] = None  # the daemon's (device, platform), once check_where asked
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
        self._features: Optional[List[str]] = None  # ping's, once asked
        self._regions: Set[str] = set()  # names of this connection's open regions
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

    def __repr__(self):
        return "Client(%r)" % self.socket_path

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
        deadline = _deadline(self.timeout if timeout is None else timeout)
        return self._send(method, params, deadline)

    def _send(self, method, params, deadline, fd=None, bulk=False):
        """fd: passed with the request's first bytes (SCM_RIGHTS).  bulk:
        params may hold bytes-like values of BULK_MIN bytes or more, which
        are then sent from where they lie rather than packed (see
        ptoclient.wire)."""
        if not isinstance(method, str):
            raise TypeError("method must be a str, got %r." % (method,))
        if params is not None and not isinstance(params, dict):
            raise TypeError("params must be a dict (named parameters) or None, got %s."
                            % type(params).__name__)
        self._lock.acquire()
        try:
            if self._failure is not None:
                raise self._call_failure(method, None)
            msgid = self._alloc_id()
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
        try:
            while True:
                lock.acquire()
                try:
                    if held:
                        held = False
                        self._end_reading()
                    while True:
                        if method is None:
                            method = self._pending.get(msgid)
                            if method is None:
                                raise ValueError("No pending call with msgid %r on this "
                                                 "connection (already collected, timed out, or "
                                                 "never sent)." % (msgid,))
                        elif msgid not in self._pending:
                            raise ValueError("The call with msgid %d was collected by another "
                                             "thread." % msgid)
                        if msgid in self._results:
                            error, result = self._results.pop(msgid)
                            del self._pending[msgid]
                            if error is not None:
                                raise error_from_wire(error)
                            return result
                        if self._failure is not None:
                            del self._pending[msgid]
                            raise self._call_failure(method, msgid)
                        if not expired and not self._reading:
                            self._reading = held = True
                            break
                        left = _left(deadline)
                        if expired or (left is not None and left <= 0):
                            del self._pending[msgid]
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
        self._handle_inbox()
        self._reading = False
        if self._waiting:
            self._cond.notify_all()

    def _handle_inbox(self):
        """Handle the whole messages read so far, in order (lock held)."""
        inbox = self._inbox
        if inbox:
            for msg in inbox:
                if self._failure is not None:
                    break  # nothing after the end counts
                self._handle(msg)
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
        try:
            n = self._sock.recv_into(self._rbuf)
        except (BlockingIOError, InterruptedError):
            return "again" if wait else "empty"
        except OSError as exc:
            self._fail_read(lost_by_error(self.socket_path, exc))
            return "failed"
        if not n:
            self._fail_read(lost_by_close(self.socket_path))
            return "failed"
        try:
            got = self._reader.feed(self._rview[:n], self._inbox)
        except ProtocolError as exc:
            self._fail_read(exc)
            return "failed"
        return "message" if got else "again"

    def _handle(self, msg):
        """One message off the wire (lock held)."""
        kind, what, detail = classify(msg, self._reader.where)
        if kind == ANSWER:
            if what in self._pending and what not in self._results:
                self._results[what] = (detail[2], detail[3])
            else:
                self._abandoned.discard(what)  # the late answer of a timed-out call
        elif kind == FAILURE:
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

    # ---- methods of the protocol ---------------------------------------

    def ping(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """{version, device, state}."""
        return self.call("ping", None, timeout)

    def status(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        return self.call("status", None, timeout)

    def metrics(self, timeout: Optional[float] = None) -> str:
        """The Prometheus text exposition (str)."""
        return self.call("metrics", None, timeout)

    def programs(self, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """[{name, description, args}]."""
        return self.call("programs", None, timeout)

    @staticmethod
    def dispatch_params(program: str, args: Iterable[Any] = (), config: Any = None,
                        deadline_ms: Optional[int] = None, client: Any = None, *,
                        priority: Optional[int] = None,
                        request_id: Optional[str] = None) -> Dict[str, Any]:
        """The params map of a dispatch (validated, encoded); what dispatch()
        and send_dispatch() send.  client: the connection it is for (a
        region argument must be one of its regions)."""
        return dispatch_params(program, args, config, deadline_ms, client, priority,
                               request_id)[0]

    def dispatch(self, program: str, args: Iterable[Any] = (), config: Any = None,
                 deadline_ms: Optional[int] = None, timeout: Optional[float] = None, *,
                 priority: Optional[int] = None,
                 request_id: Optional[str] = None) -> Dict[str, Any]:
        """Run `program` once; returns the result map (outputs as bytes, one
        entry per argument; arena, sizing with source, peaks, timing_us,
        tasks; dfx when the config set a DFX flag, see ptoclient.dfx).
        config: a RunConfig, a dict (see RunConfig.from_dict), PyPTO's
        RunConfig (see RunConfig.from_pypto) or None; its platform and
        device_id are checked against the daemon first (where.check_where).
        deadline_ms: the daemon gives up (DEADLINE_EXCEEDED) if the run has
        not started by then.  priority ([-8, 7], lower runs sooner) and
        request_id (1-64 printable ASCII characters) are protocol 1.2's,
        sent only when given, as on every device request below."""
        params, largest = dispatch_params(program, args, config, deadline_ms, self, priority,
                                          request_id)
        if config is not None:
            check_where(self, config, timeout)
        return self._call("dispatch", params, timeout, largest >= BULK_MIN)

    def send_dispatch(self, program: str, args: Iterable[Any] = (), config: Any = None,
                      deadline_ms: Optional[int] = None, timeout: Optional[float] = None, *,
                      priority: Optional[int] = None, request_id: Optional[str] = None) -> int:
        """Pipelined dispatch: send it and return its msgid for result()."""
        params, largest = dispatch_params(program, args, config, deadline_ms, self, priority,
                                          request_id)
        if config is not None:
            check_where(self, config, timeout)
        deadline = _deadline(self.timeout if timeout is None else timeout)
        return self._send("dispatch", params, deadline, bulk=largest >= BULK_MIN)

    def buffer_alloc(self, name: str, nbytes: Optional[int] = None, init: Any = None,
                     timeout: Optional[float] = None, *, priority: Optional[int] = None,
                     request_id: Optional[str] = None) -> Dict[str, Any]:
        """Allocate a resident buffer; init (bytes-like) fills it, and sets
        nbytes when nbytes is None.  Returns {name, bytes}."""
        params, bulk = buffer_alloc_params(name, nbytes, init)
        serving_keys(params, priority, request_id)
        return self._call("buffer.alloc", params, timeout, bulk)

    def buffer_write(self, name: str, data: Any, offset: Optional[int] = None,
                     timeout: Optional[float] = None, *, priority: Optional[int] = None,
                     request_id: Optional[str] = None) -> Dict[str, Any]:
        """Write data at offset (default 0): bytes-like data (sent without a
        copy), or a region slice (region[a:b], a Region for all of it),
        which the daemon copies from shared memory.  Returns {bytes}."""
        params, bulk = buffer_write_params(self, name, data, offset)
        serving_keys(params, priority, request_id)
        return self._call("buffer.write", params, timeout, bulk)

    def buffer_read(self, name: str, offset: Optional[int] = None, nbytes: Optional[int] = None,
                    timeout: Optional[float] = None, into: Any = None, *,
                    priority: Optional[int] = None, request_id: Optional[str] = None) -> Any:
        """Read nbytes (default: to the end) from offset (default 0); returns
        bytes.  into: a region slice (or Region) that the daemon copies the
        bytes into instead (nbytes defaults to its size); returns {bytes}."""
        params = buffer_read_params(self, name, offset, nbytes, into)
        serving_keys(params, priority, request_id)
        return self.call("buffer.read", params, timeout)

    def buffer_free(self, name: str, timeout: Optional[float] = None, *,
                    priority: Optional[int] = None,
                    request_id: Optional[str] = None) -> Dict[str, Any]:
        """Free a resident buffer.  Returns {bytes}."""
        return self.call("buffer.free", serving_keys({"name": name}, priority, request_id),
                         timeout)

    def buffer_list(self, timeout: Optional[float] = None, *, priority: Optional[int] = None,
                    request_id: Optional[str] = None) -> List[Dict[str, Any]]:
        """[{name, bytes}]."""
        return self.call("buffer.list", serving_keys({}, priority, request_id) or None, timeout)

    # ---- shared memory ----------------------------------------------

    def features(self, timeout: Optional[float] = None) -> List[str]:
        """What the daemon speaks beyond protocol version 1 (ping's
        ``features``: "dfx", "shm"); asked once per connection."""
        if self._features is None:
            feats = self.ping(timeout).get("features") or []
            self._features = [f for f in feats if isinstance(f, str)]
        return list(self._features)

    def shm(self, nbytes: int, timeout: Optional[float] = None) -> Region:
        """Create a shared-memory region of nbytes bytes (zero-filled) and
        register it on this connection (see ptoclient.shm).  Raises
        Unsupported when the daemon's ping lists no "shm", and the daemon's
        error otherwise (OutOfMemory over its shm_limit, ...)."""
        check_region_size(nbytes)
        deadline = _deadline(self.timeout if timeout is None else timeout)
        left = _left(deadline)
        if "shm" not in self.features(math.inf if left is None else max(0.0, left)):
            raise shm_unsupported(self.socket_path)
        name = region_name()
        fd = make_memfd(nbytes)
        try:
            mm = mmap.mmap(fd, nbytes)
            try:
                params = {"name": name, "bytes": nbytes}
                self._result(self._send("shm.register", params, deadline, fd), deadline)
            except BaseException:
                mm.close()
                raise
        finally:
            os.close(fd)  # the map (and the daemon) keep the memory
        with self._lock:
            self._regions.add(name)
        return Region(self, name, nbytes, mm)

    def _shm_closed(self, region: Region) -> None:
        """Region.close: unregister it while the connection works."""
        with self._lock:
            if region.name not in self._regions:
                return
            self._regions.discard(region.name)
            if self._failure is not None:
                return  # the daemon dropped it with the connection
        self.call("shm.unregister", {"name": region.name})

    def shm_list(self, timeout: Optional[float] = None) -> List[Dict[str, Any]]:
        """The regions the daemon holds for this connection: [{name, bytes}]."""
        return self.call("shm.list", None, timeout)

    def prewarm(self, config: Any = None, timeout: Optional[float] = None, *,
                priority: Optional[int] = None,
                request_id: Optional[str] = None) -> Dict[str, Any]:
        """Build the arena for this config's sizing now (None: the daemon's
        baseline); returns the `arena` map of status."""
        params = serving_keys(prewarm_params(config) or {}, priority, request_id)
        return self.call("prewarm", params or None, timeout)

    def advise(self, timeout: Optional[float] = None) -> Dict[str, Any]:
        """{observed, recommended, config}."""
        return self.call("advise", None, timeout)

    # ---- repeated dispatch ------------------------------------------

    def bench(self, program, args=(), config=None, repeat=10, warmup=1, deadline_ms=None,
              timeout=None):
        """Dispatch one program warmup + repeat times, one after another,
        with the very same params (arguments and config) every time,
        warm-up included.  Returns a dict:

            program, repeat, warmup, config (the wire config sent, or None)
            wall_us     per measured run, measured here (send to answer)
            run_us, total_us   the daemon's timing_us per measured run
            min_us, median_us, p99_us   of wall_us (p99: nearest rank)
            arena_hits, arena_misses    over the measured runs
            warmup_arena_hits, warmup_arena_misses
            last        the last run's result map
        """
        check_bench_counts(repeat, warmup)
        params, largest = dispatch_params(program, args, config, deadline_ms, self)
        runs = []
        for _ in range(warmup + repeat):
            start = time.perf_counter()
            res = self._call("dispatch", params, timeout, largest >= BULK_MIN)
            runs.append(((time.perf_counter() - start) * 1e6, res))
        return bench_summary(program, repeat, warmup, params, runs)

