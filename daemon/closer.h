/* SPDX-License-Identifier: Apache-2.0 */
/* closer.h — closing file descriptors that a client handed over, off the
 * loop thread.
 *
 * close() of the last reference to some files waits: a TCP socket with
 * unsent data and SO_LINGER {1, N} waits up to N seconds, a FUSE or NFS
 * file waits for its flush, a serial tty drains its output.  A client can
 * pass any of them with SCM_RIGHTS, so the loop never closes a passed fd
 * that is not a memfd itself: it hands it to closer_close, whose one
 * helper thread closes it (a memfd's close only frees pages, and the
 * loop closes those directly).
 *
 * The thread starts on the first call and lives until the process exits
 * (a close it is stuck in must not hold up shut-down, so it is never
 * joined).  Any thread may call these.
 */
#ifndef PTOD_CLOSER_H
#define PTOD_CLOSER_H

#include <stdbool.h>
#include <stdint.h>

/* Close fd on the helper thread (owned by the closer from now on).  If
 * the thread cannot be started or the queue cannot grow, the fd is made
 * to close without waiting (SO_LINGER {1, 0} where it is a socket) and
 * closed here. */
void closer_close(int fd);

/* Whether fd is a memfd (or another shmem or hugetlbfs file: F_GET_SEALS
 * works on it), the one kind a client may pass, and one whose close never
 * waits. */
bool closer_is_memfd(int fd);

/* fds handed over and not yet closed (a stuck close shows here). */
uint64_t closer_pending(void);

#endif
