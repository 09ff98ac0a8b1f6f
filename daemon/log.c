#include "log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
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

void log_msg(int level, const char *fmt, ...) {
  char line[2048];
  va_list ap;
  int n;
  size_t len;

  if (level > atomic_load(&log_level)) return;
  n = snprintf(line, sizeof(line), "<%d>", level);
  va_start(ap, fmt);
  vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
  va_end(ap);
  len = strlen(line);
  line[len++] = '\n';
  /* One write per line keeps lines whole when threads log at once. */
  (void)!write(STDERR_FILENO, line, len);
}
