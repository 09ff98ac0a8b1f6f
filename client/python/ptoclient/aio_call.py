# SPDX-License-Identifier: Apache-2.0
"""One request of ptoclient.aio on its way, and its answer: what a
coroutine of AsyncClient awaits.

A Call is awaitable by one task, as an asyncio.Future is (it has the part
of Future's interface that asyncio.Task uses), with one thing more: the
connection's reader wakes the awaiting task with wake_now(), which runs
the task's next step at once, in the reader's own pass of the event loop,
where a Future's callbacks wait for the loop's next pass.  A loop pass is
most of what an answer costs a task awaiting requests one at a time.
Every other wake-up (failures, timeouts, cancellation) goes through
call_soon, as a Future's does.

Cancelling the awaiting task gives the call up: Call.cancel() (which
Task.cancel() calls) tells the Channel, which drops the request or sends
``cancel`` for it (Channel._abandon).

Owned by the event loop thread of its Channel, and written by the Channel
and by the task awaiting it only.
"""

import asyncio
import contextvars
import math
from typing import TYPE_CHECKING, Any, Generator, List, Optional

if TYPE_CHECKING:
    from .aio_channel import Channel

__all__ = ["Call"]

_PENDING, _RESULT, _FAILED = 0, 1, 2


class Call:
    """One request (or notification: never awaited) on its way: queued
    until written whole, pending until answered, and its answer."""

    parts: List[Any]
    _value: Any
    _context: Any

    __slots__ = ("msgid", "method", "params", "bulk", "fd", "parts", "off", "total", "written",
                 "deadline", "given_up", "_channel", "_loop", "_asyncio_future_blocking",
                 "_state", "_value", "_wakeup", "_context")

    def __init__(self, channel: "Channel", msgid: Any, method: str, params: Any, bulk: bool,
                 fd: Optional[int]) -> None:
        self.msgid = msgid
        self.method = method
        self.params = params
        self.bulk = bulk
        self.fd = fd                  # passed with the first byte (SCM_RIGHTS)
        # parts: what is left to write, set once packed
        self.off = 0                  # bytes written
        self.total = 0                # bytes of the message; 0 until packed
        self.written: Optional[asyncio.Future] = None  # set when it leaves the queue
        self.deadline = math.inf      # when it expires (time.monotonic), while it can
        self.given_up = False         # cancelled, or its timeout expired
        self._channel = channel
        self._loop = channel._loop    # read by Task (no get_loop(): one call less)
        self._asyncio_future_blocking = False  # asyncio's: True while yielded to a Task
        self._state = _PENDING        # and _value: the result, or the exception to raise
        self._wakeup: Any = None      # the awaiting task's callback, until it is called
        # (and _context: the contextvars.Context to call it in)

    # ---- the answer ---------------------------------------------------------

    def settle(self, result: Any, exc: Optional[BaseException]) -> bool:
        """Set the answer (exc: the exception to raise) without waking the
        awaiting task; False when it was set already."""
        if self._state != _PENDING:
            return False
        if exc is None:
            self._state, self._value = _RESULT, result
        else:
            self._state, self._value = _FAILED, exc
        return True

    def set_result(self, result: Any) -> None:
        if self.settle(result, None):
            self.wake_soon()

    def set_exception(self, exc: BaseException) -> None:
        if self.settle(None, exc):
            self.wake_soon()

    def done(self) -> bool:
        return self._state != _PENDING

    def result(self) -> Any:
        """The answer, or raises its exception (InvalidStateError before)."""
        if self._state == _RESULT:
            return self._value
        if self._state == _PENDING:
            raise asyncio.InvalidStateError("The answer of %s has not come yet." % self.method)
        raise self._value

    # ---- what asyncio.Task uses -----------------------------------------------

    def add_done_callback(self, fn: Any, *, context: Any = None) -> None:
        """Wake the awaiting task with fn when the answer is set."""
        if self._wakeup is not None:
            raise RuntimeError("The answer of a request is awaited by one task only.")
        self._wakeup = fn
        self._context = context if context is not None else contextvars.copy_context()
        if self._state != _PENDING:
            self.wake_soon()

    def cancel(self, msg: Any = None) -> bool:
        """The awaiting task is cancelled: it raises CancelledError, and the
        request is given up (Channel._abandon).  False once answered."""
        exc = asyncio.CancelledError() if msg is None else asyncio.CancelledError(msg)
        if not self.settle(None, exc):
            return False
        self.wake_soon()
        self._channel._abandon(self, None)
        return True

    def cancelled(self) -> bool:
        return self._state == _FAILED and isinstance(self._value, asyncio.CancelledError)

    def __await__(self) -> Generator[Any, None, Any]:
        if self._state == _PENDING:
            self._asyncio_future_blocking = True
            yield self  # to the Task, which calls add_done_callback
        if self._state == _RESULT:
            return self._value
        return self.result()

    __iter__ = __await__

    # ---- waking the awaiting task -----------------------------------------------

    def wake_soon(self) -> None:
        """Wake the awaiting task on the loop's next pass, as a Future does."""
        fn = self._wakeup
        if fn is not None:
            self._wakeup = None
            self._loop.call_soon(fn, self, context=self._context)

    def wake_now(self) -> None:
        """Run the awaiting task's next step now, once the answer is set.
        Only from a loop callback, outside every task's step (asyncio runs
        one task's step at a time)."""
        fn = self._wakeup
        if fn is not None:
            self._wakeup = None
            self._context.run(fn, self)
