# SPDX-License-Identifier: Apache-2.0
"""dispatch_many: one program and one config on several daemons at once."""

from .calls import deadline_at as _deadline, dispatch_params as _dispatch_params
from .client import DEFAULT_TIMEOUT, Client
from .wire import BULK_MIN
from .config import as_config
from .errors import MultiDispatchError, PtoError

__all__ = ["dispatch_many", "MultiResult"]


class MultiResult(dict):
    """{target: result map, or the PtoError that target failed with}, in the
    order the targets were given.  Each error's ``device`` names its target
    (an int device or a socket path), and so does its text."""

    @property
    def errors(self):
        return {k: v for k, v in self.items() if isinstance(v, PtoError)}

    @property
    def ok(self):
        return not self.errors

    def raise_for_errors(self):
        """Raise MultiDispatchError naming every failed target, if any failed."""
        errors = self.errors
        if errors:
            lines = "; ".join(str(e) for e in errors.values())
            raise MultiDispatchError("The dispatch failed on %d of %d targets: %s"
                                     % (len(errors), len(self), lines),
                                     results=dict(self), errors=errors)


def _label(target):
    if isinstance(target, Client):
        return target.socket_path
    return target


def dispatch_many(targets, program, config=None, deadline_ms=None, timeout=DEFAULT_TIMEOUT,
                  raise_on_error=False, connect_timeout=None):
    """Dispatch `program` with the same `config` to several daemons, each
    with its own arguments, and wait for all of them.

    targets: {target: args}, where a target is an int device (its default
        socket, as Client(device=N)), a str socket path, or a connected
        Client (used as is and left open; others are opened and closed here).
    config: a RunConfig, a dict or None: validated once, before anything is
        sent, and the same wire config goes to every target.
    timeout: one deadline in seconds for all the answers (None or math.inf:
        no limit); connecting to each target takes at most min(timeout, 10 s).

    Every request is sent before any answer is awaited, so the daemons run
    in parallel.  Returns a MultiResult; a target that cannot be reached or
    whose dispatch fails maps to its PtoError (``.device`` names it).  With
    raise_on_error, raises MultiDispatchError instead when any failed.
    """
    if not hasattr(targets, "items") or not targets:
        raise ValueError("targets must be a non-empty mapping {device or socket path: args}.")
    cfg = as_config(config)
    params = {}
    for target, args in targets.items():
        if not isinstance(target, (Client, str)) and \
                (isinstance(target, bool) or not isinstance(target, int)):
            raise TypeError("A target must be an int device, a socket path or a Client, got %r."
                            % (target,))
        try:
            params[target] = _dispatch_params(program, args, cfg, deadline_ms, None)
        except (TypeError, ValueError) as exc:
            raise type(exc)("%s: %s" % (_describe_target(target), exc)) from None
    deadline = _deadline(timeout)
    results = MultiResult()
    sent = {}
    opened = []
    try:
        for target in targets:
            try:
                if isinstance(target, Client):
                    client = target
                else:
                    path = target if isinstance(target, str) else None
                    device = target if isinstance(target, int) else 0
                    client = Client(socket_path=path, device=device, timeout=timeout,
                                    connect_timeout=connect_timeout)
                    opened.append(client)
                wire, largest = params[target]
                sent[target] = (client, client._send("dispatch", wire, deadline,
                                                     bulk=largest >= BULK_MIN))
            except PtoError as exc:
                exc.device = _label(target)
                results[target] = exc
            except ValueError as exc:  # a device number without a valid default path
                raise ValueError("%s: %s" % (_describe_target(target), exc)) from None
        for target, (client, msgid) in sent.items():
            try:
                results[target] = client._result(msgid, deadline)
            except PtoError as exc:
                exc.device = _label(target)
                results[target] = exc
    finally:
        for client in opened:
            client.close()
    ordered = MultiResult((t, results[t]) for t in targets)
    if raise_on_error:
        ordered.raise_for_errors()
    return ordered


def _describe_target(target):
    label = _label(target)
    return "device %d" % label if isinstance(label, int) else "daemon at %s" % label
