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

import math
import mmap
import os
import time
from typing import Any, Dict, Iterable, List, Optional, Set, Tuple

from .calls import (DEFAULT_TIMEOUT, buffer_alloc_params, buffer_read_params,
                    buffer_write_params, bench_summary, check_bench_counts, check_region_size,
                    choose_socket_path, deadline_at as _deadline, dispatch_params,
                    prewarm_params, serving_keys, shm_unsupported)
from .connection import Connection
from .env import warn_sizing_env
from .paths import default_socket_path, socket_path_for  # noqa: F401
from .shm import Region, make_memfd, region_name
from .where import check_where
from .wire import BULK_MIN

__all__ = ["Client", "default_socket_path", "socket_path_for", "DEFAULT_TIMEOUT"]


class Client(Connection):
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
        socket_path = choose_socket_path(socket_path, device)
        self.where: Optional[Tuple[Any, Any]] = None  # the daemon's (device, platform), once check_where asked
        self._features: Optional[List[str]] = None  # ping's, once asked
        self._regions: Set[str] = set()  # names of this connection's open regions
        super().__init__(socket_path, timeout, connect_timeout)

    def __repr__(self):
        return "Client(%r)" % self.socket_path

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
        """Run `program` once; returns the result map (outputs as bytes, a
        bytearray from wire.BULK_MIN bytes on (see the README), one entry
        per argument; arena, sizing with source, peaks, timing_us,
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
        bytes (a bytearray from wire.BULK_MIN bytes on, read in place).
        into: a region slice (or Region) that the daemon copies the
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
        left = math.inf if deadline is None else max(0.0, deadline - time.monotonic())
        if "shm" not in self.features(left):
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
        return Region(self, name, nbytes, mm, self._region_closed)

    def _region_closed(self, region: Region) -> None:
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

