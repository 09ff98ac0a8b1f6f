# SPDX-License-Identifier: Apache-2.0
"""Run a command as systemd's RestrictAddressFamilies= would: socket() of
any address family not named fails with EAFNOSUPPORT (a seccomp filter
through Debian's libseccomp, which systemd itself uses; socketpair() is not
restricted, as under systemd).

    restrict_families.py AF_UNIX AF_INET ... -- COMMAND ARGS...
"""

import ctypes
import errno
import os
import socket
import sys

SCMP_ACT_ALLOW = 0x7FFF0000
SCMP_ACT_ERRNO = 0x00050000
SCMP_CMP_EQ = 4
AF_MAX = 46  # Linux 6.x


class ArgCmp(ctypes.Structure):
    _fields_ = [("arg", ctypes.c_uint), ("op", ctypes.c_int),
                ("datum_a", ctypes.c_uint64), ("datum_b", ctypes.c_uint64)]


def restrict(allowed):
    lib = ctypes.CDLL("libseccomp.so.2", use_errno=True)
    lib.seccomp_init.restype = ctypes.c_void_p
    lib.seccomp_init.argtypes = [ctypes.c_uint32]
    lib.seccomp_syscall_resolve_name.argtypes = [ctypes.c_char_p]
    lib.seccomp_rule_add_array.argtypes = [ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int,
                                           ctypes.c_uint, ctypes.POINTER(ArgCmp)]
    lib.seccomp_load.argtypes = [ctypes.c_void_p]
    ctx = lib.seccomp_init(SCMP_ACT_ALLOW)
    if not ctx:
        raise SystemExit("restrict_families: seccomp_init failed")
    nr = lib.seccomp_syscall_resolve_name(b"socket")
    for family in range(AF_MAX):
        if family in allowed:
            continue
        cmp = ArgCmp(0, SCMP_CMP_EQ, family, 0)
        rc = lib.seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO | errno.EAFNOSUPPORT, nr, 1,
                                        ctypes.byref(cmp))
        if rc < 0:
            raise SystemExit("restrict_families: seccomp_rule_add: %s" % os.strerror(-rc))
    rc = lib.seccomp_load(ctx)
    if rc < 0:
        raise SystemExit("restrict_families: seccomp_load: %s" % os.strerror(-rc))


def main(argv):
    sep = argv.index("--")
    restrict({int(getattr(socket, name)) for name in argv[1:sep]})
    os.execv(argv[sep + 1], argv[sep + 1:])


if __name__ == "__main__":
    main(sys.argv)
