/* SPDX-License-Identifier: Apache-2.0 */
/* log.h — the daemon's log: lines on stderr with syslog "<N>" priority
 * prefixes, which journald turns into levels.  Thread-safe: each line is
 * one write(2).  Only the daemon logs; proto/ and runtime/ return errors. */
#ifndef PTOD_LOG_H
#define PTOD_LOG_H

#include <stdbool.h>
#include <stdint.h>
#include <syslog.h> /* LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG */

/* Lines above `level` are dropped.  Default LOG_INFO. */
void log_set_level(int level);
int log_get_level(void);

/* "err", "warning", "notice", "info", "debug" -> level; -1 if none. */
int log_level_from_name(const char *name);
const char *log_level_name(int level);

void log_msg(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A line a client caused (it sent something bad, went quiet, was refused):
 * logged like log_msg, but at most LOG_CLIENT_BURST such lines per
 * LOG_CLIENT_INTERVAL_S seconds for all clients together, as journald's
 * RateLimitBurst does, so hostile clients cannot flood the journal.  The
 * first line after a window with suppressed lines says how many were
 * dropped.  Debug lines (log_level = debug) have a budget of their own, so
 * a client's connects and disconnects never crowd out the warnings.
 * Thread-safe. */
#define LOG_CLIENT_BURST 50
#define LOG_CLIENT_INTERVAL_S 10
void log_client(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* One cause (the listener out of fds, ...) logged at most once a second:
 * log_cause_due says whether its line is due now, and *ret_suppressed how
 * many times the cause came since its last line (to say so in the line,
 * which then goes through log_client).  The caller serialises calls on one
 * cause (one thread, or its lock). */
typedef struct log_cause {
  uint64_t last_ns; /* CLOCK_MONOTONIC of its last line, when logged */
  bool logged;
  unsigned long long suppressed;
} log_cause_t;
bool log_cause_due(log_cause_t *cause, unsigned long long *ret_suppressed);

/* Lines log_client dropped since start-up (for tests and metrics). */
unsigned long long log_client_suppressed(void);

#define log_err(...) log_msg(LOG_ERR, __VA_ARGS__)
#define log_warning(...) log_msg(LOG_WARNING, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_NOTICE, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif
