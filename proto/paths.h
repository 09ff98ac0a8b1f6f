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
 * no socket at its own default path uses that system path when a socket
 * is there (pto_find_socket_path), so an ordinary user's ptoctl reaches
 * the system daemon without --socket.
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

/* Where a client connects by default: this user's path (the rule above
 * without the systemd row) when a socket is there, else
 * /run/ptod/ptod<device>.sock when a socket is there, else this user's
 * path (so a failed connect names the path a daemon of this user would
 * use).  Same returns. */
int pto_find_socket_path(int device, char *buf, size_t len);

/* The same rule for a given effective uid, RUNTIME_DIRECTORY and
 * XDG_RUNTIME_DIR (NULL = unset), so every branch can be tested without
 * changing users. */
int pto_socket_path_for(uid_t euid, const char *service_dir, const char *xdg_runtime_dir,
                        int device, char *buf, size_t len);

#endif
