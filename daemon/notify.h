/* SPDX-License-Identifier: Apache-2.0 */
/* notify.h — the systemd service protocol, without libsystemd: readiness
 * and status notifications, the watchdog interval, and sockets passed by
 * socket activation.  Outside systemd (no NOTIFY_SOCKET, no LISTEN_FDS)
 * every call is a harmless no-op. */
#ifndef PTOD_NOTIFY_H
#define PTOD_NOTIFY_H

#include <stdint.h>

/* Send one notification ("READY=1", "STATUS=prewarming", lines joined with
 * '\n') to $NOTIFY_SOCKET.  Returns 0 (also when there is no socket) or
 * -errno. */
int notify_send(const char *state);

/* printf-style notify_send. */
int notify_sendf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* "RELOADING=1" with the MONOTONIC_USEC= that Type=notify-reload wants. */
int notify_reloading(void);

/* The watchdog interval from $WATCHDOG_USEC when it is meant for this
 * process ($WATCHDOG_PID unset or ours), else 0. */
uint64_t notify_watchdog_usec(void);

/* The listening socket systemd passed ($LISTEN_PID is us, $LISTEN_FDS >= 1):
 * returns 1 and the fd (3) in *ret_fd after checking that it is a listening
 * AF_UNIX stream socket, 0 when none was passed, or a negative errno
 * (-ENOTSOCK, -EINVAL for another kind of socket, -E2BIG for more than
 * one).  Unsets the LISTEN_* variables so children do not inherit them. */
int notify_listen_fd(int *ret_fd);

#endif
