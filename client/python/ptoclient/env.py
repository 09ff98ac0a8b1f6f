# SPDX-License-Identifier: Apache-2.0
"""What a client reads from its environment.

PTOD_SOCKET names the default daemon's socket, like DOCKER_HOST; PTOD_SOCKET_<N>
names device N's (one variable per device, as a container given several
devices through CDI gets them).  PTO2_RING_*
is the daemon's (it sizes the rings of every dispatch that does not size
them itself); in a client's own environment it does nothing, so the client
says so, once.
"""

import os
import warnings
from typing import Mapping, Optional

__all__ = ["SOCKET_ENV", "DEVICE_SOCKET_ENV_PREFIX", "SizingEnvWarning", "device_socket_env",
           "sizing_env_note", "warn_sizing_env"]

# Names the socket of the default daemon, like DOCKER_HOST: Client() with
# neither socket_path nor device uses it before device 0's built-in path.
SOCKET_ENV = "PTOD_SOCKET"
# PTOD_SOCKET_<N> names device N's socket: Client(device=N), and Client()
# when PTOD_SOCKET is unset (device 0), use it before the built-in path.
DEVICE_SOCKET_ENV_PREFIX = "PTOD_SOCKET_"
_ENV_VARS = (("PTO2_RING_TASK_WINDOW", "ring_task_window"), ("PTO2_RING_HEAP", "ring_heap"),
             ("PTO2_RING_DEP_POOL", "ring_dep_pool"))
_warned_env = False


def device_socket_env(device: int, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """$PTOD_SOCKET_<device> when set and not empty, else None (also for a
    device that is not an int in 0..255)."""
    if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device <= 255:
        return None
    env = os.environ if environ is None else environ
    return env.get("%s%d" % (DEVICE_SOCKET_ENV_PREFIX, device)) or None


class SizingEnvWarning(UserWarning):
    """PTO2_RING_* is set in this client's environment, where it sizes nothing."""


def sizing_env_note(environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """The note about PTO2_RING_* in this process's environment (the same
    text as libptoclient's pto_client_env_sizing_note), or None when none is
    set.  Ring sizing from the environment is the daemon's."""
    env = os.environ if environ is None else environ
    found = [(var, key, env[var]) for var, key in _ENV_VARS if var in env]
    if not found:
        return None
    them = "it" if len(found) == 1 else "them"
    return ("%s %s set in this client's environment, but ring sizing from the environment is "
            "the daemon's: this client's dispatches do not use %s. To make %s take effect, put "
            "%s in the dispatch's config (%s), or in the daemon's environment (systemctl edit "
            "ptod@0: [Service] Environment=%s)."
            % (", ".join(v for v, _, _ in found), "is" if len(found) == 1 else "are", them, them,
               them, ", ".join("%s=%.24s" % (k, x) for _, k, x in found),
               " ".join("%s=%.24s" % (v, x) for v, _, x in found)))


def warn_sizing_env() -> None:
    """warnings.warn the sizing_env_note once per process, if there is one."""
    global _warned_env
    if _warned_env:
        return
    note = sizing_env_note()
    if note:
        _warned_env = True
        warnings.warn(note, SizingEnvWarning, stacklevel=3)
