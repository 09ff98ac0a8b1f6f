/* SPDX-License-Identifier: Apache-2.0 */
/* paths.h — where ptod listens when nothing says otherwise.
 *
 * ptod (without a [daemon] socket key) and ptoctl (without --socket) agree on
 * one built-in path per device, so an operator never has to spell it out:
 *
 *   root (euid 0)                          /run/ptod/ptod<device>.sock
 *   a systemd service (RUNTIME_DIRECTORY)  $RUNTIME_DIRECTORY/ptod<device>.sock
 *   anyone else, XDG_RUNTIME_DIR absolute  $XDG_RUNTIME_DIR/ptod/ptod<device>.sock
 *   anyone else                            /tmp/ptod-<uid>/ptod<device>.sock
 *
 * The systemd row is for ptod@.service, which runs as the user ptod with
 * RuntimeDirectory=ptod: it listens on /run/ptod/ptod<device>.sock, the
 * same path as the socket unit.  A client (no RUNTIME_DIRECTORY) that finds
 * no trusted socket at its own default path uses that system path when a
 * trusted socket is there (pto_find_socket_path), so an ordinary user's
 * ptoctl reaches the system daemon without --socket, and a socket another
 * user planted under /tmp is never taken for a daemon.
 *
 * Nothing here creates the directory.  The daemon creates the last
 * directory (0700 for the per-user ones); under /tmp it must check that an
 * existing ptod-<uid> is a directory owned by that uid and not writable by
 * others, since anyone can create names there first.
 */
#ifndef PTO_PATHS_H
#define PTO_PATHS_H

#include <stddef.h>
#include <sys/types.h>

/* sizeof(struct sockaddr_un.sun_path) on Linux, NUL included: a path that
 * does not fit cannot be bound. */
#define PTO_SOCKET_PATH_MAX 108

/* The built-in socket path for this process (geteuid(), XDG_RUNTIME_DIR).
 * device must be in 0..255.  Returns 0, -EINVAL for a bad device, or
 * -ENAMETOOLONG when the path (NUL included) does not fit in len or in
 * PTO_SOCKET_PATH_MAX; buf is then left empty. */
int pto_default_socket_path(int device, char *buf, size_t len);

/* The user the packaged daemon runs as (ptod@.service, the socket unit's
 * SocketUser=): besides root, the only owner a client trusts for the
 * system path. */
#define PTO_DAEMON_USER "ptod"

/* What a client may make of a built-in socket path.  A default path is
 * only a guess, so a client uses one only when nobody but the daemon it
 * means could have put the socket there:
 *   - its own path ($XDG_RUNTIME_DIR/ptod/..., /tmp/ptod-<uid>/...): the
 *     directory is a directory (not a symbolic link) owned by the caller's
 *     euid and writable by nobody else, and the socket is a socket (not a
 *     link) owned by the caller's euid;
 *   - the system path (/run/ptod/...): the directory and the socket belong
 *     to root or to the user PTO_DAEMON_USER, and nobody else can write
 *     the directory.
 * An explicit path or $PTOD_SOCKET is the user's own choice and is not
 * checked. */
typedef enum pto_socket_trust {
  PTO_SOCKET_ABSENT,    /* no socket there */
  PTO_SOCKET_TRUSTED,   /* as above */
  PTO_SOCKET_DENIED,    /* the caller may not look into the directory: a
                           connect will say "permission denied" and why */
  PTO_SOCKET_UNTRUSTED, /* why says who else could have put it there */
} pto_socket_trust_t;

/* Judge the socket at path by the rules above: its directory and the
 * socket must belong to one of the nowners uids in owners.  why (len
 * bytes, may be NULL) gets a sentence for PTO_SOCKET_UNTRUSTED. */
pto_socket_trust_t pto_socket_trust(const char *path, const uid_t *owners, size_t nowners,
                                    char *why, size_t len);

/* Where a client connects by default: this user's path (the rule above
 * without the systemd row) when a trusted socket is there, else
 * /run/ptod/ptod<device>.sock when a trusted socket is there or the caller
 * may not look (so the connect says "permission denied"), else this
 * user's path when no socket is there at all (so a failed connect names
 * the path a daemon of this user would use), else the system path.
 * Returns 0, -EINVAL / -ENAMETOOLONG as pto_default_socket_path, or
 * -EPERM (buf empty) when both paths hold a socket that cannot be trusted.
 * ret_skipped (len skipped_len, may be NULL) gets "" or one sentence per
 * path skipped because it could not be trusted, for the caller to show as
 * a warning. */
int pto_find_socket_path(int device, char *buf, size_t len, char *ret_skipped,
                         size_t skipped_len);

/* The same rule for a given effective uid, RUNTIME_DIRECTORY and
 * XDG_RUNTIME_DIR (NULL = unset), so every branch can be tested without
 * changing users. */
int pto_socket_path_for(uid_t euid, const char *service_dir, const char *xdg_runtime_dir,
                        int device, char *buf, size_t len);

#endif
