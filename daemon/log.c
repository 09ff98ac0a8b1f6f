/* SPDX-License-Identifier: Apache-2.0 */
#include "log.h"

#include <stdarg.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int log_level = LOG_INFO;

static const char *const level_names[] = {
    [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
    [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

void log_set_level(int level) { atomic_store(&log_level, level); }

int log_get_level(void) { return atomic_load(&log_level); }

int log_level_from_name(const char *name) {
  for (int level = LOG_ERR; level <= LOG_DEBUG; level++)
    if (strcmp(level_names[level], name) == 0) return level;
  return -1;
}

const char *log_level_name(int level) {
  return level >= LOG_ERR && level <= LOG_DEBUG ? level_names[level] : "?";
}

static void log_line(int level, const char *fmt, va_list ap) {
  char line[2048];
  int n;
  size_t len;

  n = snprintf(line, sizeof(line), "<%d>", level);
  vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  len = strlen(line);
  line[len++] = '\n';
  /* One write per line keeps lines whole when threads log at once. */
  (void)!write(STDERR_FILENO, line, len);
}

void log_msg(int level, const char *fmt, ...) {
  va_list ap;
  if (level > atomic_load(&log_level)) return;
  va_start(ap, fmt);
  log_line(level, fmt, ap);
  va_end(ap);
}

/* The client-caused lines' window: its start (ns, CLOCK_MONOTONIC), the
 * lines logged in it and the lines dropped. A window lasts exactly
 * LOG_CLIENT_INTERVAL_S from its first line: a start rounded down to the
 * second made some windows shorter, letting BURST + n lines through in
 * less than one interval. */
static pthread_mutex_t client_lock = PTHREAD_MUTEX_INITIALIZER;
/* One budget for debug lines, one for the others (log_client). */
static struct client_budget {
  uint64_t window_ns;
  bool started;
  unsigned lines;
  unsigned long long dropped;
} client_budget[2];
static unsigned long long client_dropped_total;

void log_client(int level, const char *fmt, ...) {
  struct timespec ts;
  struct client_budget *b = &client_budget[level >= LOG_DEBUG];
  unsigned long long dropped = 0;
  uint64_t now;
  bool show;
  va_list ap;

  if (level > atomic_load(&log_level)) return;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  pthread_mutex_lock(&client_lock);
  if (!b->started || now - b->window_ns >= (uint64_t)LOG_CLIENT_INTERVAL_S * 1000000000u) {
    dropped = b->dropped;
    b->started = true;
    b->window_ns = now;
    b->lines = 0;
    b->dropped = 0;
  }
  show = b->lines < LOG_CLIENT_BURST;
  if (show) {
    b->lines++;
  } else {
    b->dropped++;
    client_dropped_total++;
  }
  pthread_mutex_unlock(&client_lock);
  if (dropped)
    log_msg(LOG_NOTICE,
            "Suppressed %llu %slog lines caused by clients (at most %d are logged per %d s).",
            dropped, level >= LOG_DEBUG ? "debug " : "", LOG_CLIENT_BURST, LOG_CLIENT_INTERVAL_S);
  if (!show) return;
  va_start(ap, fmt);
  log_line(level, fmt, ap);
  va_end(ap);
}

unsigned long long log_client_suppressed(void) {
  unsigned long long n;
  pthread_mutex_lock(&client_lock);
  n = client_dropped_total;
  pthread_mutex_unlock(&client_lock);
  return n;
}

bool log_cause_due(log_cause_t *cause, unsigned long long *ret_suppressed) {
  struct timespec ts;
  uint64_t now;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  if (cause->logged && now - cause->last_ns < 1000000000u) {
    cause->suppressed++;
    return false;
  }
  *ret_suppressed = cause->suppressed;
  cause->suppressed = 0;
  cause->last_ns = now;
  cause->logged = true;
  return true;
}
