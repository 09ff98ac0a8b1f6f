# SPDX-License-Identifier: Apache-2.0
"""Errors raised by the ptod client.

Every error this package raises while talking to a daemon is a `PtoError`:

* a daemon error map ``{"code", "name", "message", ...detail}`` becomes the
  subclass named after ``name`` (``HEAP_RING_DEADLOCK`` -> `HeapRingDeadlock`,
  ``INVALID_CONFIG`` -> `InvalidConfig`, ...), carrying ``code``, ``name``,
  ``message`` and the detail keys (``ring``, ``requested``, ``capacity``,
  ``hint``, ``key``; all of them also in ``detail``);
* failures on the client's side are `ClientError` subclasses with ``code``
  None: `ConnectFailed` and `ConnectionLost` (both also `ConnectionError`),
  `CallTimeout` (also `TimeoutError`) and `ProtocolError`.

Invalid arguments given to this package (a bad `RunConfig` value, an object
that cannot be a dispatch argument) are ``ValueError`` / ``TypeError`` at the
call site, before anything is sent.
"""

from typing import Any, Optional
__all__ = [
    "PtoError", "RuntimeFailure", "ClientError", "ConnectFailed", "ConnectionLost",
    "CallTimeout", "ProtocolError", "Unsupported", "MultiDispatchError", "error_from_wire",
    "ERROR_CLASSES",
    "ScopeDeadlock", "HeapRingDeadlock", "FlowControlDeadlock", "DepPoolOverflow",
    "InvalidArgs", "ExplicitOrchFatal", "TensormapOverflow", "SchedulerTimeout",
    "InvalidRequest", "InvalidConfig", "UnknownMethod", "UnknownProgram", "Busy",
    "DeadlineExceeded", "ShuttingDown", "OutOfMemory", "NotFound", "AlreadyExists",
    "PermissionDenied", "MessageTooLarge", "Internal", "Cancelled",
]

# Detail keys that get their own attribute (None when absent).
_DETAIL_ATTRS = ("ring", "requested", "capacity", "hint", "key")


def _rebuild(cls, message, code, name, detail, device):
    err = cls.__new__(cls, message)
    PtoError.__init__(err, message, code=code, name=name, detail=detail)
    err.device = device
    return err


class PtoError(Exception):
    # set from the detail map (_DETAIL_ATTRS); None when the error has none
    ring: Optional[int]
    requested: Any
    capacity: Any
    hint: Optional[str]
    key: Optional[str]
    device: Any

    """An error from ptod or from talking to it.

    Attributes: ``code`` (int, or None for a client-side error), ``name``
    (``"HEAP_RING_DEADLOCK"``), ``message`` (the daemon's sentence),
    ``detail`` (dict of every other key of the error map), ``ring``,
    ``requested``, ``capacity``, ``hint``, ``key`` (from detail, or None),
    ``dfx`` (a failed dispatch's DFX artefacts when its config asked for
    them, see ptoclient.dfx; else None) and ``device`` (which daemon
    answered, when `dispatch_many` knows it).
    """

    def __init__(self, message, *, code=None, name=None, detail=None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.name = name
        self.detail = dict(detail or {})
        for attr in _DETAIL_ATTRS:
            setattr(self, attr, self.detail.get(attr))
        self.dfx = self.detail.get("dfx")
        self.device = None

    def __str__(self):
        text = self.message
        if self.name is not None:
            text = "%s (%s): %s" % (self.name, self.code, text) if self.code is not None \
                else "%s: %s" % (self.name, text)
        if self.hint and self.hint not in self.message:
            text += " Hint: %s" % self.hint
        if self.device is not None:
            where = "device %d" % self.device if isinstance(self.device, int) \
                else "daemon at %s" % self.device
            text = "%s: %s" % (where, text)
        return text

    def __reduce__(self):
        # Keyword-only constructor arguments do not survive the default
        # exception pickling; serving processes hand errors across queues.
        return (_rebuild, (type(self), self.message, self.code, self.name, self.detail,
                           self.device))

    def copy(self):
        """A fresh instance with the same contents (to raise the same error
        again in another call without sharing its traceback)."""
        return _rebuild(type(self), self.message, self.code, self.name, self.detail, self.device)


class RuntimeFailure(PtoError):
    """The device runtime failed the run (codes below 1000, numbered as in the
    reference runtime)."""


class ScopeDeadlock(RuntimeFailure): pass
class HeapRingDeadlock(RuntimeFailure): pass
class FlowControlDeadlock(RuntimeFailure): pass
class DepPoolOverflow(RuntimeFailure): pass
class InvalidArgs(RuntimeFailure): pass
class ExplicitOrchFatal(RuntimeFailure): pass
class TensormapOverflow(RuntimeFailure): pass
class SchedulerTimeout(RuntimeFailure): pass

class InvalidRequest(PtoError): pass
class InvalidConfig(PtoError): pass
class UnknownMethod(PtoError): pass
class UnknownProgram(PtoError): pass
class Busy(PtoError): pass
class DeadlineExceeded(PtoError): pass
class ShuttingDown(PtoError): pass
class OutOfMemory(PtoError): pass
class NotFound(PtoError): pass
class AlreadyExists(PtoError): pass
class PermissionDenied(PtoError): pass
class MessageTooLarge(PtoError): pass
class Internal(PtoError): pass


class Cancelled(PtoError):
    """The request was cancelled before it started (protocol 1.2's `cancel`
    of a request sent with send() / send_dispatch(); the asyncio client
    raises asyncio.CancelledError instead for a call whose task was
    cancelled)."""


# name -> (code, class), as in docs/protocol.md, "The error map".
ERROR_CLASSES = {
    "SCOPE_DEADLOCK": (1, ScopeDeadlock),
    "HEAP_RING_DEADLOCK": (2, HeapRingDeadlock),
    "FLOW_CONTROL_DEADLOCK": (3, FlowControlDeadlock),
    "DEP_POOL_OVERFLOW": (4, DepPoolOverflow),
    "INVALID_ARGS": (5, InvalidArgs),
    "EXPLICIT_ORCH_FATAL": (9, ExplicitOrchFatal),
    "TENSORMAP_OVERFLOW": (11, TensormapOverflow),
    "SCHEDULER_TIMEOUT": (100, SchedulerTimeout),
    "INVALID_REQUEST": (1000, InvalidRequest),
    "INVALID_CONFIG": (1001, InvalidConfig),
    "UNKNOWN_METHOD": (1002, UnknownMethod),
    "UNKNOWN_PROGRAM": (1003, UnknownProgram),
    "BUSY": (1004, Busy),
    "DEADLINE_EXCEEDED": (1005, DeadlineExceeded),
    "SHUTTING_DOWN": (1006, ShuttingDown),
    "OUT_OF_MEMORY": (1007, OutOfMemory),
    "NOT_FOUND": (1008, NotFound),
    "ALREADY_EXISTS": (1009, AlreadyExists),
    "PERMISSION_DENIED": (1010, PermissionDenied),
    "MESSAGE_TOO_LARGE": (1011, MessageTooLarge),
    "CANCELLED": (1012, Cancelled),
    "INTERNAL": (1099, Internal),
}
_BY_CODE = {code: cls for code, cls in ERROR_CLASSES.values()}


class ClientError(PtoError):
    """A failure on the client's side of the socket (``code`` is None)."""

    NAME = "CLIENT_ERROR"

    def __init__(self, message, *, code=None, name=None, detail=None):
        super().__init__(message, code=code, name=name or self.NAME, detail=detail)


class ConnectFailed(ClientError, ConnectionError):
    """The socket could not be connected (no daemon there, or no access)."""

    NAME = "CONNECT_FAILED"


class ConnectionLost(ClientError, ConnectionError):
    """The connection ended before the answer came: the daemon exited,
    restarted or closed it, or the client was closed."""

    NAME = "CONNECTION_LOST"


class CallTimeout(ClientError, TimeoutError):
    """No answer within the call's timeout.  See Client for what happens to
    the connection."""

    NAME = "TIMEOUT"


class ProtocolError(ClientError):
    """The peer sent something that is not ptod's msgpack-RPC; the connection
    is closed."""

    NAME = "PROTOCOL_ERROR"


class Unsupported(ClientError):
    """The daemon does not speak this part of the protocol (its ping lists
    no such feature); C's PTO_E_UNSUPPORTED."""

    NAME = "UNSUPPORTED"


class MultiDispatchError(PtoError):
    """`dispatch_many(..., raise_on_error=True)` failed on some devices.
    ``results`` holds every device's result or error; ``errors`` the failed
    ones."""

    def __init__(self, message, *, results=None, errors=None):
        super().__init__(message, name="MULTI_DISPATCH_FAILED")
        self.results = results if results is not None else {}
        self.errors = errors if errors is not None else {}

    def __reduce__(self):
        return (MultiDispatchError._rebuild_multi, (self.message, self.results, self.errors))

    @staticmethod
    def _rebuild_multi(message, results, errors):
        return MultiDispatchError(message, results=results, errors=errors)


def error_from_wire(err):
    """The `PtoError` for a response's error object.

    A map with a known ``name`` (or, failing that, ``code``) gives that
    subclass; an unknown name keeps its code and name on a plain PtoError
    (a newer daemon); anything else a third-party server might send as an
    error (a string, a list) becomes a PtoError with that text.
    """
    if not isinstance(err, dict):
        return PtoError("The server answered with the error %r." % (err,))
    name = err.get("name")
    code = err.get("code")
    message = err.get("message")
    if not isinstance(message, str):
        message = "No message." if message is None else str(message)
    detail = {k: v for k, v in err.items() if k not in ("code", "name", "message")}
    cls = None
    if isinstance(name, str) and name in ERROR_CLASSES:
        cls = ERROR_CLASSES[name][1]
    elif isinstance(code, int) and not isinstance(code, bool):
        cls = _BY_CODE.get(code)
    if cls is None:
        cls = RuntimeFailure if isinstance(code, int) and 0 < code < 1000 else PtoError
    return cls(message, code=code, name=name if isinstance(name, str) else None, detail=detail)
