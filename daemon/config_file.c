/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the configuration file of config.h: INI text through libinih into
 * cfg_t, every problem reported with its line. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>

#include "config.h"
#include "config_value.h"

/* A section is known when some key row names it. */
static bool section_known(const char *s, size_t len) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++)
    if (strlen(keys[i].section) == len && memcmp(keys[i].section, s, len) == 0) return true;
  return false;
}

typedef struct load {
  const char *path;
  cfg_t cfg;
  /* the reader's position */
  const char *data;
  size_t size, pos;
  int lineno;
  /* A line inih should hand to on_key as a key = value: unless on_key
   * takes it before the next line is read, inih found no key in it. */
  int pending_line;
  char pending_text[81];
  bool skip_section; /* in a section whose bad header was reported */
  /* Every problem goes to report; the first is cfg_load's error. */
  unsigned problems;
  pto_error_t first;
  cfg_problem_fn *report;
  void *user;
  char err_prefix[256 + CFG_LINE_MAX]; /* "[section] key = value: " */
  int first_line[CFG_KEYS_MAX];        /* where each key was set, 0 = not yet */
} load_t;

static void problem(load_t *ld, const pto_error_t *p) {
  if (ld->problems++ == 0) ld->first = *p;
  if (ld->report && ld->problems <= CFG_PROBLEMS_SHOWN) ld->report(p, ld->user);
}

/* A problem of a line: "PATH:LINE: text", with its key and hint. */
static void fail_at(load_t *ld, int line, const char *key, const char *hint, const char *fmt,
                    ...) __attribute__((format(printf, 5, 6)));
static void fail_at(load_t *ld, int line, const char *key, const char *hint, const char *fmt,
                    ...) {
  char text[sizeof(ld->first.message)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  pto_error_t p;
  pto_error_clear(&p);
  pto_error_set(&p, PTO_E_INVALID_CONFIG, "%s:%d: %s", ld->path, line, text);
  snprintf(p.key, sizeof(p.key), "%s", key);
  snprintf(p.hint, sizeof(p.hint), "%s", hint);
  problem(ld, &p);
}

static void syntax_error(load_t *ld, int line, const char *text, size_t len) {
  fail_at(ld, line, "", "",
          "expected a [section] header, a key = value line or a comment, got \"%.*s\".",
          (int)(len > 80 ? 80 : len), text);
}

/* The pending line was no key = value line after all. */
static void flush_pending(load_t *ld) {
  if (!ld->pending_line) return;
  syntax_error(ld, ld->pending_line, ld->pending_text, strlen(ld->pending_text));
  ld->pending_line = 0;
}

/* A [section] header: an unknown or unclosed one is reported here, and the
 * keys under it are not (inih would never show the handler a header with
 * no keys, nor stop on one that is unclosed). */
static void check_header(load_t *ld, const char *str) {
  const char *close = strchr(str, ']');
  if (!close) {
    syntax_error(ld, ld->lineno, str, strlen(str));
  } else if (!section_known(str + 1, (size_t)(close - str - 1))) {
    fail_at(ld, ld->lineno, "", "",
            "unknown section [%.*s]; the sections are [daemon], [device], [metrics], "
            "[ring] and [prewarm].",
            (int)(close - str - 1), str + 1);
  }
  ld->skip_section = !close || !section_known(str + 1, (size_t)(close - str - 1));
}

/* inih's fgets: one line at a time, so the handler knows the line number.
 * Leading blanks are dropped (inih would read an indented line as the
 * continuation of the previous value); an overlong line or one with a NUL
 * byte is reported and read as a blank one, so the lines after it are
 * checked too. */
static char *read_line(char *str, int num, void *stream) {
  load_t *ld = stream;
  flush_pending(ld);
  if (ld->pos >= ld->size || num < 2) return NULL;
  const char *start = ld->data + ld->pos;
  const char *nl = memchr(start, '\n', ld->size - ld->pos);
  size_t raw = nl ? (size_t)(nl - start) : ld->size - ld->pos;
  ld->pos += raw + (nl ? 1 : 0);
  ld->lineno++;
  size_t len = raw;
  if (len > 0 && start[len - 1] == '\r') len--;
  size_t max = (size_t)num - 2 < CFG_LINE_MAX ? (size_t)num - 2 : CFG_LINE_MAX;
  str[0] = '\0';
  if (len > max) {
    fail_at(ld, ld->lineno, "", "", "the line is %zu characters long; lines are at most %zu.", len,
            max);
    return str;
  }
  if (memchr(start, '\0', len)) {
    fail_at(ld, ld->lineno, "", "", "the line holds a NUL byte; the file must be text.");
    return str;
  }
  size_t skip = 0;
  if (ld->lineno == 1 && len >= 3 && memcmp(start, "\xEF\xBB\xBF", 3) == 0) skip = 3;
  while (skip < len && (start[skip] == ' ' || start[skip] == '\t')) skip++;
  memcpy(str, start + skip, len - skip);
  str[len - skip] = '\0';
  if (str[0] == '[') {
    check_header(ld, str);
  } else if (str[0] != '\0' && str[0] != ';' && str[0] != '#') {
    ld->pending_line = ld->lineno;
    snprintf(ld->pending_text, sizeof(ld->pending_text), "%s", str);
  }
  return str;
}

/* A key no row names: say which keys its section has. */
static void unknown_key(load_t *ld, const char *key_id, const char *section) {
  size_t n, pos = 0;
  const cfg_key_t *keys = cfg_key_table(&n);
  char known[512];
  known[0] = '\0';
  for (size_t i = 0; i < n; i++)
    if (strcmp(keys[i].section, section) == 0)
      cfg_append(known, sizeof(known), &pos, "%s%s", pos ? ", " : "", keys[i].name);
  fail_at(ld, ld->lineno, key_id, "", "%sunknown key; the keys of [%s] are %s.", ld->err_prefix,
          section, known);
}

/* Every problem is reported and the parse goes on (1), so the lines after
 * it are checked too. */
static int on_key(void *user, const char *section, const char *name, const char *value) {
  load_t *ld = user;
  ld->pending_line = 0;
  if (ld->skip_section) return 1;
  if (section[0] == '\0') {
    fail_at(ld, ld->lineno, name, "",
            "%s = %s: a key outside any section; put it under [daemon], [device], [metrics], "
            "[ring] or [prewarm].",
            name, value);
    return 1;
  }
  snprintf(ld->err_prefix, sizeof(ld->err_prefix), "[%s] %s = %s: ", section, name, value);
  char key_id[64];
  snprintf(key_id, sizeof(key_id), "%s.%s", section, name);
  const cfg_key_t *k = cfg_key_find(section, name);
  if (!k) {
    unknown_key(ld, key_id, section);
    return 1;
  }
  size_t idx = (size_t)(k - cfg_key_table(NULL));
  if (ld->first_line[idx]) {
    fail_at(ld, ld->lineno, key_id, "", "%salready set on line %d; keep one of the two.",
            ld->err_prefix, ld->first_line[idx]);
    return 1;
  }
  ld->first_line[idx] = ld->lineno;
  cfg_why_t why;
  why.text[0] = why.hint[0] = '\0';
  if (cfg_parse_value(k, value, (char *)&ld->cfg + k->offset, &why) < 0)
    fail_at(ld, ld->lineno, key_id, why.hint, "%s%s", ld->err_prefix, why.text);
  return 1;
}

/* The config file, opened so that nothing at the path can make us wait:
 * O_NONBLOCK, because open() of a FIFO put there blocks until a writer
 * comes (it would freeze a SIGHUP reload on the loop thread), and only a
 * regular file is read (a FIFO, a device or a socket is refused). */
static int open_config(const char *path, int *ret_fd, pto_error_t *err) {
  struct stat st;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Cannot open the config file %s: %s.", path,
                         strerror(errno));
  if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "The config file %s is not a regular file (a directory, FIFO, device "
                         "or socket is never read); point --config at a file.",
                         path);
  }
  *ret_fd = fd;
  return 0;
}

static int read_file(const char *path, char **ret_data, size_t *ret_size, pto_error_t *err) {
  int fd = -1;
  if (open_config(path, &fd, err) < 0) return -PTO_E_INVALID_CONFIG;
  char *data = malloc(CFG_FILE_MAX + 1);
  if (!data) {
    close(fd);
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Out of memory reading %s.", path);
  }
  size_t size = 0;
  for (;;) {
    ssize_t n = read(fd, data + size, CFG_FILE_MAX + 1 - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      free(data);
      close(fd);
      return pto_error_set(err, PTO_E_INVALID_CONFIG, "Cannot read the config file %s: %s.", path,
                           strerror(e));
    }
    if (n == 0) break;
    size += (size_t)n;
    if (size > CFG_FILE_MAX) {
      free(data);
      close(fd);
      return pto_error_set(err, PTO_E_INVALID_CONFIG,
                           "The config file %s is larger than %u bytes; it cannot be a ptod "
                           "configuration.",
                           path, CFG_FILE_MAX);
    }
  }
  close(fd);
  *ret_data = data;
  *ret_size = size;
  return 0;
}

/* The socket that nothing set: the built-in path of the final device id. */
static int fill_socket(cfg_t *cfg, const char *path, pto_error_t *err) {
  if (cfg->daemon.socket[0]) return 0;
  int rc =
      pto_default_socket_path((int)cfg->device.id, cfg->daemon.socket, sizeof(cfg->daemon.socket));
  if (rc < 0) {
    pto_error_set(err, PTO_E_INVALID_CONFIG,
                  "%s%sthe built-in socket path for device %" PRIu32
                  " under XDG_RUNTIME_DIR=%s is longer than a Unix socket address allows; set "
                  "[daemon] socket.",
                  path ? path : "", path ? ": " : "", cfg->device.id,
                  getenv("XDG_RUNTIME_DIR") ? getenv("XDG_RUNTIME_DIR") : "");
    if (err) snprintf(err->key, sizeof(err->key), "daemon.socket");
    return -PTO_E_INVALID_CONFIG;
  }
  return 0;
}

/* Parse the file's text in ld->data over the defaults, reporting every
 * problem. */
static void parse(load_t *ld) {
  cfg_defaults(&ld->cfg);
  ld->cfg.daemon.socket[0] = '\0'; /* filled once the device id is known */
  int parse_rc = ini_parse_stream(read_line, ld, on_key, ld);
  flush_pending(ld);
  if (parse_rc != 0 && !ld->problems) {
    /* inih stopped on something read_line and on_key let through */
    pto_error_t p;
    pto_error_set(&p, PTO_E_INVALID_CONFIG, "Cannot parse %s (inih error %d).", ld->path,
                  parse_rc);
    problem(ld, &p);
  }
}

int cfg_load_report(const char *path, cfg_t *ret_cfg, pto_error_t *ret_err, cfg_problem_fn *report,
                    void *user) {
  if (!path) {
    cfg_t cfg;
    cfg_defaults(&cfg);
    int rc = fill_socket(&cfg, NULL, ret_err);
    if (rc < 0) return rc;
    *ret_cfg = cfg;
    return 0;
  }
  load_t *ld = calloc(1, sizeof(*ld));
  if (!ld) return pto_error_set(ret_err, PTO_E_INVALID_CONFIG, "Out of memory reading %s.", path);
  ld->path = path;
  ld->report = report;
  ld->user = user;
  pto_error_t e;
  pto_error_clear(&e);
  char *data = NULL;
  if (read_file(path, &data, &ld->size, &e) < 0) {
    problem(ld, &e);
  } else {
    ld->data = data;
    parse(ld);
  }
  if (!ld->problems && fill_socket(&ld->cfg, path, &e) < 0) problem(ld, &e);
  if (report && ld->problems > CFG_PROBLEMS_SHOWN) {
    pto_error_set(&e, PTO_E_INVALID_CONFIG, "%s: %u more problems not shown.", path,
                  ld->problems - CFG_PROBLEMS_SHOWN);
    report(&e, user);
  }
  int rc = 0;
  if (ld->problems) {
    if (ret_err) *ret_err = ld->first;
    rc = -PTO_E_INVALID_CONFIG;
  } else {
    *ret_cfg = ld->cfg;
  }
  free(data);
  free(ld);
  return rc;
}

int cfg_load(const char *path, cfg_t *ret_cfg, pto_error_t *ret_err) {
  return cfg_load_report(path, ret_cfg, ret_err, NULL, NULL);
}
