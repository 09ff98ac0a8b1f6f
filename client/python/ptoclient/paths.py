# SPDX-License-Identifier: Apache-2.0
"""Where a client finds ptod when not told: the built-in socket paths, and
which of them it may trust (proto/paths.h has the same rules in C).

A built-in path is only a guess, so a socket found there is used only when
nobody but the daemon meant could have put it there:

- the user's own path ($XDG_RUNTIME_DIR/ptod/... or /tmp/ptod-<uid>/...):
  the directory is a directory (not a symbolic link) owned by the caller's
  euid and writable by nobody else, and the socket is a socket owned by the
  caller's euid;
- the system path (/run/ptod/...): the directory and the socket belong to
  root or to the user ``ptod``, and nobody else can write the directory.

A socket that fails these is skipped with an UntrustedSocketWarning naming
why.  An explicit socket_path or $PTOD_SOCKET is the user's own choice and
is not checked.
"""

import os
import pwd
import stat
import warnings
from typing import Iterable, Optional, Tuple

from .errors import ConnectFailed

__all__ = ["UntrustedSocketWarning", "default_socket_path", "socket_path_for", "socket_trust",
           "DAEMON_USER"]

SOCKET_PATH_MAX = 108        # sizeof(sockaddr_un.sun_path), NUL included
DAEMON_USER = "ptod"         # the packaged daemon's user (ptod@.service)
ABSENT, TRUSTED, DENIED, UNTRUSTED = "absent", "trusted", "denied", "untrusted"


class UntrustedSocketWarning(UserWarning):
    """A built-in socket path holds a socket someone else could have put there."""


def socket_path_for(euid: int, xdg_runtime_dir: Optional[str], device: int) -> str:
    """ptod's built-in socket path for an effective uid and XDG_RUNTIME_DIR
    value (None = unset); proto/paths.h has the same rule."""
    if isinstance(device, bool) or not isinstance(device, int) or not 0 <= device <= 255:
        raise ValueError("device must be an integer in [0, 255], got %r." % (device,))
    if euid == 0:
        path = "/run/ptod/ptod%d.sock" % device
    elif xdg_runtime_dir and xdg_runtime_dir.startswith("/"):
        path = "%s/ptod/ptod%d.sock" % (xdg_runtime_dir, device)
    else:
        path = "/tmp/ptod-%d/ptod%d.sock" % (euid, device)
    if len(os.fsencode(path)) >= SOCKET_PATH_MAX:
        raise ValueError("The socket path %s is longer than a Unix socket path can be (%d bytes); "
                         "pass socket_path= explicitly." % (path, SOCKET_PATH_MAX - 1))
    return path


def _look(path: str):
    try:
        return os.lstat(path), None
    except PermissionError:
        return None, DENIED
    except OSError:
        return None, ABSENT


def socket_trust(path: str, owners: Iterable[int]) -> Tuple[str, str]:
    """(verdict, why): verdict is "absent", "trusted", "denied" (the caller
    may not look into the directory; a connect says why) or "untrusted"
    (why says who else could have put the socket there).  The directory
    and the socket must belong to one of the uids in owners."""
    owners = set(owners)
    folder = os.path.dirname(path)
    st, verdict = _look(folder)
    if st is None:
        return verdict, ""
    if not stat.S_ISDIR(st.st_mode):
        return UNTRUSTED, "'%s' is not a directory (a symbolic link or a file)." % folder
    if st.st_uid not in owners:
        return UNTRUSTED, "its directory '%s' belongs to uid %d." % (folder, st.st_uid)
    if st.st_mode & 0o022:
        return UNTRUSTED, ("its directory '%s' (mode %04o) is writable by others."
                           % (folder, stat.S_IMODE(st.st_mode)))
    st, verdict = _look(path)
    if st is None:
        return verdict, ""
    if not stat.S_ISSOCK(st.st_mode):
        return UNTRUSTED, "'%s' is not a socket." % path
    if st.st_uid not in owners:
        return UNTRUSTED, "the socket belongs to uid %d." % st.st_uid
    return TRUSTED, ""


def _system_owners():
    try:
        return (0, pwd.getpwnam(DAEMON_USER).pw_uid)
    except KeyError:
        return (0,)


def _judge(path, owners):
    verdict, why = socket_trust(path, owners)
    if verdict == UNTRUSTED:
        warnings.warn("Skipped the socket '%s', which this user cannot trust: %s Give the socket "
                      "path explicitly (or PTOD_SOCKET) if you trust it." % (path, why),
                      UntrustedSocketWarning, stacklevel=4)
    return verdict


def default_socket_path(device: int = 0) -> str:
    """Where a client connects to ptod for `device` unless told otherwise:
    the path a daemon of this user listens on (/run/ptod/ptod<device>.sock
    for root, else $XDG_RUNTIME_DIR/ptod/ptod<device>.sock when
    XDG_RUNTIME_DIR is absolute, else /tmp/ptod-<uid>/ptod<device>.sock)
    when a trusted socket is there; else the system daemon's
    /run/ptod/ptod<device>.sock when a trusted socket is there or this user
    may not look (the connect then says which group to join); else the
    user's path when no socket is there at all; else the system path.
    A socket skipped as untrusted is named in an UntrustedSocketWarning;
    ConnectFailed when every built-in path holds one."""
    euid = os.geteuid()
    own = socket_path_for(euid, os.environ.get("XDG_RUNTIME_DIR"), device)
    system = socket_path_for(0, None, device)
    verdict = _judge(own, _system_owners() if own == system else (euid,))
    if verdict in (TRUSTED, DENIED):
        return own
    if own != system:
        sys_verdict = _judge(system, _system_owners())
        if sys_verdict in (TRUSTED, DENIED):
            return system
        if verdict == ABSENT:
            return own
        if sys_verdict == ABSENT:
            return system
    elif verdict == ABSENT:
        return own
    raise ConnectFailed("No built-in socket for device %d can be trusted (see the warnings); "
                        "pass socket_path= explicitly if you trust one." % device)
