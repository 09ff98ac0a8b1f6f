# SPDX-License-Identifier: Apache-2.0
"""What the blocking Client and the asyncio client (ptoclient.aio) share
above the bytes: which socket to connect to and why a connect failed, the
validated params map of each method, the serving keys of protocol 1.2
(priority, request_id), timeouts, and the error a call raises once its
connection has ended.  Pure functions: no socket, no event loop, no lock.
"""

import grp
import math
import os
import statistics
import time
from typing import Any, Dict, List, Optional, Tuple

from .args import _encode_args_sized, _to_bytes
from .config import as_config
from .env import SOCKET_ENV, device_socket_env
from .errors import ConnectFailed, ConnectionLost, PtoError, Unsupported
from .paths import default_socket_path
from .shm import BYTES_MAX, Region, ShmArg
from .wire import BULK_MIN

__all__ = ["DEFAULT_TIMEOUT", "CONNECT_TIMEOUT", "PRIORITY_MIN", "PRIORITY_MAX",
           "REQUEST_ID_MAX", "choose_socket_path", "connect_timeout_for", "connect_failed",
           "deadline_at", "dispatch_params", "serving_keys", "buffer_alloc_params",
           "buffer_write_params", "buffer_read_params", "prewarm_params", "check_region_size",
           "check_bench_counts", "bench_summary", "call_failure", "next_msgid",
           "lost_by_error", "lost_by_close", "shm_unsupported", "gathered"]

DEFAULT_TIMEOUT = 300.0
CONNECT_TIMEOUT = 10.0
PRIORITY_MIN, PRIORITY_MAX = -8, 7   # client/python/README.md: lower runs sooner, 0 the default
REQUEST_ID_MAX = 64                  # bytes of printable ASCII
MSGID_MAX = (1 << 32) - 1

# ---- connecting -------------------------------------------------------


def choose_socket_path(socket_path: Optional[str], device: Optional[int]) -> str:
    """socket_path when given; else $PTOD_SOCKET when device is None and it
    is set (and not empty); else $PTOD_SOCKET_<device> when set (and not
    empty); else the built-in path of device (default 0)."""
    if socket_path is not None:
        return socket_path
    env = os.environ.get(SOCKET_ENV)
    if device is None and env:
        return env
    n = 0 if device is None else device
    return device_socket_env(n) or default_socket_path(n)


def connect_timeout_for(timeout: Optional[float], connect_timeout: Optional[float]) -> float:
    """The connect limit: connect_timeout, else the smaller of the call
    timeout and CONNECT_TIMEOUT."""
    if connect_timeout is not None:
        return connect_timeout
    if timeout is not None and timeout < CONNECT_TIMEOUT:
        return timeout
    return CONNECT_TIMEOUT


def _denied_why(path):
    """Why a connect to path was refused, as far as this process can tell:
    the group of its directory when this process is not in it."""
    try:
        gid = os.stat(os.path.dirname(path) or ".").st_gid
    except OSError:
        gid = None
    if gid is not None and gid != os.getegid() and gid not in os.getgroups():
        try:
            name = grp.getgrgid(gid).gr_name
        except KeyError:
            name = str(gid)
        return ("you are not in group '%s'; ask the operator to add you to it (then log in "
                "again)." % name)
    return "ask the operator to give your user access to the socket."


def connect_failed(exc: BaseException, path: str, limit: float) -> ConnectFailed:
    """The ConnectFailed for exc, raised by connecting to path within limit
    seconds (a TimeoutError when the limit passed)."""
    where = "ptod at %s" % path
    if isinstance(exc, FileNotFoundError):
        return ConnectFailed("Cannot connect to %s: no such socket. Is ptod running for this "
                             "device (systemctl status ptod@N), and is this its socket?" % where)
    if isinstance(exc, ConnectionRefusedError):
        return ConnectFailed("Cannot connect to %s: connection refused (a socket file with no "
                             "daemon behind it; start ptod or check the path)." % where)
    if isinstance(exc, PermissionError):
        return ConnectFailed("Cannot connect to %s: permission denied; %s"
                             % (where, _denied_why(path)))
    if isinstance(exc, TimeoutError):
        return ConnectFailed("Cannot connect to %s: not accepted within %g s (the daemon is "
                             "stopped or overloaded)." % (where, limit))
    text = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
    return ConnectFailed("Cannot connect to %s: %s." % (where, text))


# ---- timeouts and msgids ----------------------------------------------

_SECONDS = (float, int)
_INF = math.inf  # a global, not an attribute: deadline_at runs on every call


def deadline_at(timeout: Any) -> Optional[float]:
    """time.monotonic() + timeout, or None for no limit (None, math.inf);
    ValueError for anything that is not a number of seconds >= 0."""
    if type(timeout) in _SECONDS and 0 <= timeout < _INF:
        return time.monotonic() + timeout  # the common case, checked in one go
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float, type(None))) \
            or (timeout is not None and (timeout < 0 or math.isnan(timeout))):
        raise ValueError("timeout must be a number of seconds >= 0 (math.inf or None: no limit), "
                         "got %r." % (timeout,))
    if timeout is None or math.isinf(timeout):
        return None
    return time.monotonic() + timeout


def next_msgid(start: int, *taken: Any) -> int:
    """The first uint32 msgid from start (1 after MSGID_MAX) that is in
    none of the containers taken (after a wrap some may still be)."""
    msgid = start
    while any(msgid in ids for ids in taken):
        msgid = msgid + 1 if msgid < MSGID_MAX else 1
    return msgid


def lost_by_error(path: str, exc: OSError) -> ConnectionLost:
    """The end of a connection whose read (or write) failed with exc."""
    return ConnectionLost("The connection to ptod at %s failed: %s."
                          % (path, exc.strerror or exc))


def lost_by_close(path: str) -> ConnectionLost:
    """The end of a connection that the daemon closed."""
    return ConnectionLost("ptod at %s closed the connection (the daemon exited, restarted or "
                          "dropped this client; see its log)." % path)


def shm_unsupported(path: str) -> Unsupported:
    return Unsupported("ptod at %s does not support shared-memory arguments: its ping lists no "
                       "\"shm\" feature. Upgrade the daemon, or send the data inline (Data)."
                       % path)


def call_failure(failure: PtoError, method: str, msgid: Optional[int],
                 send_error: Optional[OSError] = None) -> PtoError:
    """The error one call raises once its connection has ended with
    failure (msgid None: the call was never sent)."""
    if not isinstance(failure, ConnectionLost):
        return failure.copy()
    what = method if msgid is None else "%s (msgid %d)" % (method, msgid)
    text = failure.message
    if send_error is not None:
        text += " (Writing to it had failed: %s.)" % (send_error.strerror or send_error)
    prefix = "Cannot send %s: " % what if msgid is None else "No answer to %s: " % what
    return ConnectionLost(prefix + text)


def gathered(out: List[Any], return_exceptions: bool) -> List[Any]:
    """gather's answer from the results and PtoErrors collected, in order:
    out itself, or (without return_exceptions) the first error raised."""
    if not return_exceptions:
        for item in out:
            if isinstance(item, PtoError):
                raise item
    return out


# ---- params of the methods --------------------------------------------


def serving_keys(params: Dict[str, Any], priority: Any, request_id: Any) -> Dict[str, Any]:
    """Add protocol 1.2's priority and request_id to a device request's
    params, each only when given (a daemon of protocol 1.1 refuses them by
    name as unknown keys); ValueError for a value the contract refuses."""
    if priority is not None:
        if isinstance(priority, bool) or not isinstance(priority, int) \
                or not PRIORITY_MIN <= priority <= PRIORITY_MAX:
            raise ValueError("priority must be an integer in [%d, %d] (lower runs sooner, 0 is "
                             "the default), got %r." % (PRIORITY_MIN, PRIORITY_MAX, priority))
        params["priority"] = priority
    if request_id is not None:
        if not isinstance(request_id, str) or not 1 <= len(request_id) <= REQUEST_ID_MAX \
                or not all(" " <= ch <= "~" for ch in request_id):
            raise ValueError("request_id must be a str of 1 to %d printable ASCII characters, "
                             "got %r." % (REQUEST_ID_MAX, request_id))
        params["request_id"] = request_id
    return params


def dispatch_params(program: Any, args: Any, config: Any, deadline_ms: Any, client: Any,
                    priority: Any = None, request_id: Any = None) -> Tuple[Dict[str, Any], int]:
    """A dispatch's params map (validated, encoded) and the size of its
    largest inline data.  client: the connection it is for (a region
    argument must be one of its regions), or None."""
    if not isinstance(program, str) or not program:
        raise ValueError("program must be a non-empty str, got %r." % (program,))
    wire, largest = _encode_args_sized(args, client)
    params: Dict[str, Any] = {"program": program, "args": wire}
    cfg = as_config(config) if config is not None else None
    if cfg is not None:
        wire_config = cfg.to_wire()
        if wire_config:
            params["config"] = wire_config
    if deadline_ms is not None:
        if isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int) or deadline_ms < 0:
            raise ValueError("deadline_ms must be an integer >= 0 (milliseconds), got %r."
                             % (deadline_ms,))
        params["deadline_ms"] = deadline_ms
    if priority is not None or request_id is not None:
        serving_keys(params, priority, request_id)
    return params, largest


def buffer_alloc_params(name: str, nbytes: Optional[int], init: Any) -> Tuple[Dict[str, Any], bool]:
    """buffer.alloc's params, and whether they carry bulk data."""
    params: Dict[str, Any] = {"name": name}
    if init is not None:
        init = _to_bytes(init, "buffer_alloc init")
        if nbytes is None:
            nbytes = len(init)
    if nbytes is None:
        raise ValueError("buffer_alloc needs nbytes or init.")
    params["bytes"] = nbytes
    if init is not None:
        params["init"] = init
    return params, init is not None and len(init) >= BULK_MIN


def buffer_write_params(client: Any, name: str, data: Any,
                        offset: Optional[int]) -> Tuple[Dict[str, Any], bool]:
    """buffer.write's params (bytes-like data, or a region slice of
    client's), and whether they carry bulk data."""
    params: Dict[str, Any] = {"name": name}
    if offset is not None:
        params["offset"] = offset
    src = data.arg() if isinstance(data, Region) else data
    if isinstance(src, ShmArg):
        src.check(client, "buffer_write")
        params.update(shm=src.region.name, shm_offset=src.offset, bytes=src.nbytes)
        return params, False
    params["data"] = _to_bytes(data, "buffer_write data")
    return params, len(params["data"]) >= BULK_MIN


def buffer_read_params(client: Any, name: str, offset: Optional[int], nbytes: Optional[int],
                       into: Any) -> Dict[str, Any]:
    """buffer.read's params (into: a region slice of client's, or None)."""
    params: Dict[str, Any] = {"name": name}
    if offset is not None:
        params["offset"] = offset
    if into is not None:
        dst = into.arg() if isinstance(into, Region) else into
        if not isinstance(dst, ShmArg):
            raise TypeError("buffer_read into= needs a region slice (region[a:b]) or a "
                            "Region, got %s." % type(into).__name__)
        dst.check(client, "buffer_read")
        if nbytes is not None and nbytes > dst.nbytes:
            raise ValueError("buffer_read of %d bytes does not fit into the %d bytes of %r."
                             % (nbytes, dst.nbytes, dst))
        params.update(bytes=dst.nbytes if nbytes is None else nbytes,
                      shm=dst.region.name, shm_offset=dst.offset)
    elif nbytes is not None:
        params["bytes"] = nbytes
    return params


def prewarm_params(config: Any) -> Optional[Dict[str, Any]]:
    """prewarm's params (None: the daemon's baseline)."""
    cfg = as_config(config)
    wire = cfg.to_wire() if cfg is not None else {}
    return {"config": wire} if wire else None


def check_region_size(nbytes: Any) -> None:
    if isinstance(nbytes, bool) or not isinstance(nbytes, int) or not 1 <= nbytes <= BYTES_MAX:
        raise ValueError("A shared-memory region must be 1 to %d bytes, got %r."
                         % (BYTES_MAX, nbytes))


# ---- bench ------------------------------------------------------------


def check_bench_counts(repeat: Any, warmup: Any) -> None:
    for what, value, low in (("repeat", repeat, 1), ("warmup", warmup, 0)):
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError("%s must be an integer >= %d, got %r." % (what, low, value))


def bench_summary(program: str, repeat: int, warmup: int, params: Dict[str, Any],
                  runs: List[Tuple[float, Dict[str, Any]]]) -> Dict[str, Any]:
    """Client.bench's dict from the (wall_us, result) of every run, warm-up
    first."""
    wall, run, total = [], [], []
    hits = [0, 0]
    misses = [0, 0]
    for i, (elapsed, res) in enumerate(runs):
        measured = i >= warmup
        arena = res.get("arena") or {}
        (hits if arena.get("hit") else misses)[measured] += 1
        if measured:
            wall.append(elapsed)
            timing = res.get("timing_us") or {}
            run.append(timing.get("run"))
            total.append(timing.get("total"))
    ordered = sorted(wall)
    return {
        "program": program, "repeat": repeat, "warmup": warmup,
        "config": params.get("config"),
        "wall_us": wall, "run_us": run, "total_us": total,
        "min_us": ordered[0], "median_us": statistics.median(ordered),
        "p99_us": ordered[max(0, math.ceil(0.99 * len(ordered)) - 1)],
        "arena_hits": hits[1], "arena_misses": misses[1],
        "warmup_arena_hits": hits[0], "warmup_arena_misses": misses[0],
        "last": runs[-1][1],
    }
