/* SPDX-License-Identifier: Apache-2.0 */
/* sockpath.h — the listening socket's file: where it may live, and binding it.
 *
 * A Unix socket is only as safe as the directories on its path: whoever can
 * write to one of them (or owns a symbolic link on the way) can swap the
 * socket for one of their own, and every client then talks to them.  So,
 * as OpenSSH's secure_path() does for its files, every component of the
 * path is checked, both as written and with symbolic links resolved:
 * each directory must belong to root or to the daemon's user and must not
 * be writable by group or others unless it is sticky (/tmp), and each
 * symbolic link must belong to root or to the daemon's user.  The
 * socket's own directory must not be writable by group or others even
 * when sticky: there anyone could take the name while ptod restarts.
 *
 * Nothing here logs except the notice that a stale socket was removed.
 */
#ifndef PTOD_SOCKPATH_H
#define PTOD_SOCKPATH_H

#include <sys/types.h>

#include <pto/errors.h>

/* Check every directory on the way to the socket at path (the file itself
 * need not exist), as above.  Returns 0, or -PTO_E_INVALID_CONFIG with a
 * sentence naming the directory at fault in ret_err. */
int sockpath_check_dirs(const char *path, pto_error_t *ret_err);

/* Create the socket's directory if it is missing (mode 0750), check the
 * path (sockpath_check_dirs), replace a stale socket file of a daemon that
 * is gone, and refuse one a live daemon answers on.  Then bind a new
 * listening socket there (nonblocking, close-on-exec), owner-only until its
 * group and mode are set (gid (gid_t)-1: keep the daemon's), and listen
 * with `backlog`.  Returns 0 with the fd in *ret_fd, or a negative error
 * with a sentence in ret_err; on error nothing is left behind. */
int sockpath_bind(const char *path, unsigned mode, gid_t gid, int backlog, int *ret_fd,
                  pto_error_t *ret_err);

#endif
