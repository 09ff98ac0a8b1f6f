/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration file of config.h. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <unistd.h>

#include <ini.h>

#include "listen_addr.h"

#ifndef PTOD_DEFAULT_PROGRAMS_DIR
#error "PTOD_DEFAULT_PROGRAMS_DIR must name the installed programs directory"
#endif
/* PTOD_DEFAULT_PROGRAMS_DIR is absolute, or relative to the directory of the
 * ptod executable (../lib/<multiarch>/ptod/programs from bin/): then the
 * table's default does not parse and default_programs_dir() fills it in. */
#define PROGRAMS_DIR_IS_RELATIVE (PTOD_DEFAULT_PROGRAMS_DIR[0] != '/')

#define KIB(n) ((uint64_t)(n) << 10)
#define MIB(n) ((uint64_t)(n) << 20)
#define GIB(n) ((uint64_t)(n) << 30)

/* The key table is config_keys.c's. */
#define key_table (cfg_key_table(NULL))
#define KEY_COUNT (cfg_key_count())


static const char *const sections[] = {"daemon", "device", "metrics", "ring", "prewarm"};
#define SECTION_COUNT (sizeof(sections) / sizeof(sections[0]))

static const struct {
  const char *name;
  int level;
} log_levels[] = {
    {"err", LOG_ERR},   {"warning", LOG_WARNING}, {"notice", LOG_NOTICE},
    {"info", LOG_INFO}, {"debug", LOG_DEBUG},
};
/* [daemon] queue_full, by cfg_queue_full_t. */
static const char *const queue_full_names[] = {[CFG_QUEUE_WAIT] = "wait", [CFG_QUEUE_BUSY] = "busy"};

#define LOG_LEVEL_COUNT (sizeof(log_levels) / sizeof(log_levels[0]))

static const char *const platforms[] = {"sim"};
#define PLATFORM_COUNT (sizeof(platforms) / sizeof(platforms[0]))


static bool section_known(const char *s, size_t len) {
  for (size_t i = 0; i < SECTION_COUNT; i++)
    if (strlen(sections[i]) == len && memcmp(sections[i], s, len) == 0) return true;
  return false;
}

/* ---- text helpers ------------------------------------------------------- */

static bool all_digits(const char *s, size_t len) {
  if (len == 0) return false;
  for (size_t i = 0; i < len; i++)
    if (s[i] < '0' || s[i] > '9') return false;
  return true;
}

/* Decimal digits only, no overflow. */
static bool parse_u64(const char *s, size_t len, uint64_t *ret) {
  if (!all_digits(s, len)) return false;
  uint64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (v > (UINT64_MAX - d) / 10) return false;
    v = v * 10 + d;
  }
  *ret = v;
  return true;
}

/* Sizes as the file writes them: the largest of G, M, K that divides. */
static int format_size(uint64_t v, char *buf, size_t len) {
  if (v != 0 && v % GIB(1) == 0) return snprintf(buf, len, "%" PRIu64 "G", v >> 30);
  if (v != 0 && v % MIB(1) == 0) return snprintf(buf, len, "%" PRIu64 "M", v >> 20);
  if (v != 0 && v % KIB(1) == 0) return snprintf(buf, len, "%" PRIu64 "K", v >> 10);
  return snprintf(buf, len, "%" PRIu64, v);
}

static int format_duration(uint64_t ms, char *buf, size_t len) {
  if (ms % 1000 == 0) return snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
  return snprintf(buf, len, "%" PRIu64 "ms", ms);
}

/* "30s", "500ms", "30" (seconds). */
static bool parse_duration(const char *s, uint64_t *ret_ms) {
  size_t len = strlen(s);
  uint64_t mult = 1000;
  if (len > 2 && strcmp(s + len - 2, "ms") == 0) {
    mult = 1;
    len -= 2;
  } else if (len > 1 && s[len - 1] == 's') {
    len -= 1;
  }
  uint64_t v;
  if (!parse_u64(s, len, &v) || v > UINT64_MAX / mult) return false;
  *ret_ms = v * mult;
  return true;
}

typedef struct why {
  char text[sizeof(((pto_error_t *)0)->message)];
  char hint[sizeof(((pto_error_t *)0)->hint)];
} why_t;

static int because(why_t *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int because(why_t *why, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why->text, sizeof(why->text), fmt, ap);
  va_end(ap);
  return -1;
}

/* ---- user and group names ------------------------------------------------ */

static int lookup_id(bool group, const char *s, size_t len, uint32_t *ret, why_t *why) {
  uint64_t v;
  if (all_digits(s, len)) {
    if (!parse_u64(s, len, &v) || v >= UINT32_MAX)
      return because(why, "%s id %.*s is out of range; ids are below 4294967295.",
                     group ? "group" : "user", (int)len, s);
    *ret = (uint32_t)v;
    return 0;
  }
  if (len >= CFG_NAME_MAX)
    return because(why, "the %s name \"%.*s...\" is longer than %d characters.",
                   group ? "group" : "user", 20, s, CFG_NAME_MAX - 1);
  char name[CFG_NAME_MAX];
  memcpy(name, s, len);
  name[len] = '\0';
  char buf[16384];
  int rc;
  if (group) {
    struct group gr, *res = NULL;
    rc = getgrnam_r(name, &gr, buf, sizeof(buf), &res);
    if (rc == 0 && res) {
      *ret = (uint32_t)gr.gr_gid;
      return 0;
    }
  } else {
    struct passwd pw, *res = NULL;
    rc = getpwnam_r(name, &pw, buf, sizeof(buf), &res);
    if (rc == 0 && res) {
      *ret = (uint32_t)pw.pw_uid;
      return 0;
    }
  }
  /* getpwnam_r(3): these too mean "no such name", depending on the NSS module */
  if (rc != 0 && rc != ENOENT && rc != ESRCH && rc != EBADF && rc != EPERM)
    return because(why, "cannot look up the %s \"%s\": %s.", group ? "group" : "user", name,
                   strerror(rc));
  return because(why, "there is no %s named \"%s\"; create it, or give a numeric %s id.",
                 group ? "group" : "user", name, group ? "group" : "user");
}

/* ---- one value ---------------------------------------------------------- */

static const char *size_range_text(uint64_t v, char *buf, size_t len) {
  format_size(v, buf, len);
  return buf;
}

/* Parse value for key into dst (key->size bytes).  On failure, why says
 * what was wrong and what to write instead. */
static int parse_value(const cfg_key_t *k, const char *value, void *dst, why_t *why) {
  size_t len = strlen(value);
  uint64_t v;
  char a[32], b[32];
  switch (k->type) {
    case CFG_T_SOCKET:
      if (len == 0) {
        memset(dst, 0, k->size);
        return 0;
      }
      if (value[0] != '/') return because(why, "the socket path must be absolute (start with /).");
      if (len >= k->size)
        return because(why,
                       "the socket path is %zu bytes long; a Unix socket path holds at most %zu.",
                       len, k->size - 1);
      memset(dst, 0, k->size);
      memcpy(dst, value, len);
      return 0;
    case CFG_T_LISTEN: {
      char reason[160];
      if (len && listen_addr_check(value, reason, sizeof reason) < 0)
        return because(why, "%s", reason);
      if (len >= k->size) return because(why, "the value is longer than %zu bytes.", k->size - 1);
      memset(dst, 0, k->size);
      memcpy(dst, value, len);
      return 0;
    }
    case CFG_T_FILE:
    case CFG_T_DIR:
      if (len == 0) {
        if (k->min) return because(why, "expected a directory, got an empty value.");
        memset(dst, 0, k->size);
        return 0;
      }
      if (value[0] != '/')
        return because(why, "the %s must be an absolute path (start with /).",
                       k->type == CFG_T_FILE ? "file" : "directory");
      if (len >= k->size) return because(why, "the path is longer than %zu bytes.", k->size - 1);
      memset(dst, 0, k->size);
      memcpy(dst, value, len);
      return 0;
    case CFG_T_MODE: {
      if (len == 0 || len > 4) goto bad_mode;
      uint32_t mode = 0;
      for (size_t i = 0; i < len; i++) {
        if (value[i] < '0' || value[i] > '7') goto bad_mode;
        mode = mode * 8 + (uint32_t)(value[i] - '0');
      }
      if (mode > 0777)
        return because(why, "expected permission bits only (at most 0777), such as 0660.");
      if (mode & 0002)
        return because(why,
                       "the socket must not be world-writable (o+w): any local user could "
                       "drive the device. Use 0660 with socket_group, or 0600.");
      memcpy(dst, &mode, sizeof(mode));
      return 0;
    bad_mode:
      return because(why, "expected an octal permission mode such as 0660.");
    }
    case CFG_T_GROUP: {
      cfg_group_t g;
      memset(&g, 0, sizeof(g));
      g.gid = CFG_NO_GID;
      if (len > 0) {
        if (lookup_id(true, value, len, &g.gid, why) < 0) return -1;
        if (!all_digits(value, len)) memcpy(g.name, value, len); /* lookup_id checked the length */
      }
      memcpy(dst, &g, sizeof(g));
      return 0;
    }
    case CFG_T_UIDS:
    case CFG_T_GIDS: {
      bool group = k->type == CFG_T_GIDS;
      cfg_ids_t ids;
      memset(&ids, 0, sizeof(ids));
      const char *p = value;
      while (len > 0) {
        const char *comma = strchr(p, ',');
        size_t n = comma ? (size_t)(comma - p) : strlen(p);
        const char *s = p;
        while (n > 0 && (*s == ' ' || *s == '\t')) {
          s++;
          n--;
        }
        while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) n--;
        if (n == 0)
          return because(why, "expected %s names or ids separated by commas, got an empty entry.",
                         group ? "group" : "user");
        if (ids.count == CFG_MAX_IDS)
          return because(why, "more than %d entries; allow a group instead of many users.",
                         CFG_MAX_IDS);
        if (lookup_id(group, s, n, &ids.id[ids.count], why) < 0) return -1;
        ids.count++;
        if (!comma) break;
        p = comma + 1;
      }
      memcpy(dst, &ids, sizeof(ids));
      return 0;
    }
    case CFG_T_UINT:
      if (!parse_u64(value, len, &v) || v < k->min || v > k->max)
        return because(why, "expected an integer from %" PRIu64 " to %" PRIu64 ".", k->min, k->max);
      {
        uint32_t u = (uint32_t)v;
        memcpy(dst, &u, sizeof(u));
      }
      return 0;
    case CFG_T_SIZE: {
      int rc = pto_size_parse(value, len, &v);
      if (rc < 0 || v < k->min || v > k->max) {
        if (k->max == UINT64_MAX)
          return because(why,
                         "expected a size of at least %s: a number of bytes, or a number ending "
                         "in K, M or G (upper case).",
                         size_range_text(k->min, a, sizeof(a)));
        return because(why,
                       "expected a size from %s to %s: a number of bytes, or a number ending in "
                       "K, M or G (upper case).",
                       size_range_text(k->min, a, sizeof(a)),
                       size_range_text(k->max, b, sizeof(b)));
      }
      memcpy(dst, &v, sizeof(v));
      return 0;
    }
    case CFG_T_DURATION:
      if (!parse_duration(value, &v) || v < k->min || v > k->max) {
        format_duration(k->min, a, sizeof(a));
        format_duration(k->max, b, sizeof(b));
        return because(why,
                       "expected a duration from %s to %s: a number ending in ms or s (a bare "
                       "number is seconds).",
                       a, b);
      }
      memcpy(dst, &v, sizeof(v));
      return 0;
    case CFG_T_QUEUE_FULL:
      for (uint32_t i = 0; i < sizeof(queue_full_names) / sizeof(queue_full_names[0]); i++) {
        if (strcmp(value, queue_full_names[i]) == 0) {
          memcpy(dst, &i, sizeof(i));
          return 0;
        }
      }
      return because(why, "expected wait or busy.");
    case CFG_T_LOGLEVEL:
      for (size_t i = 0; i < LOG_LEVEL_COUNT; i++) {
        if (strcmp(value, log_levels[i].name) == 0) {
          memcpy(dst, &log_levels[i].level, sizeof(int));
          return 0;
        }
      }
      return because(why, "expected one of err, warning, notice, info, debug.");
    case CFG_T_PLATFORM:
      for (size_t i = 0; i < PLATFORM_COUNT; i++) {
        if (strcmp(value, platforms[i]) == 0) {
          memset(dst, 0, k->size);
          memcpy(dst, value, len);
          return 0;
        }
      }
      return because(why, "unknown platform; the known platforms are: sim.");
    case CFG_T_RING: {
      pto_error_t err;
      uint64_t rings[PTO_RING_COUNT];
      pto_error_clear(&err);
      if (pto_sizing_parse_config((pto_ring_field_t)k->field, value, rings, &err) < 0) {
        snprintf(why->hint, sizeof(why->hint), "%s", err.hint);
        return because(why, "%s", err.message);
      }
      memcpy(dst, rings, sizeof(rings));
      return 0;
    }
  }
  return because(why, "internal error: key type %d.", (int)k->type);
}

/* ---- formatting a value -------------------------------------------------- */

static const void *value_at(const cfg_t *cfg, const cfg_key_t *k) {
  return (const char *)cfg + k->offset;
}

static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n =
      vsnprintf(buf && *pos < len ? buf + *pos : NULL, buf && *pos < len ? len - *pos : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *pos += (size_t)n;
}

static int format_ids(const cfg_ids_t *ids, char *buf, size_t len) {
  size_t pos = 0;
  if (buf && len) buf[0] = '\0';
  for (uint32_t i = 0; i < ids->count; i++)
    append(buf, len, &pos, "%s%" PRIu32, i ? "," : "", ids->id[i]);
  return (int)pos;
}

int cfg_format_value(const cfg_t *cfg, const cfg_key_t *k, char *buf, size_t len) {
  const void *p = value_at(cfg, k);
  uint32_t u32;
  uint64_t u64;
  int level;
  switch (k->type) {
    case CFG_T_SOCKET:
    case CFG_T_DIR:
    case CFG_T_FILE:
    case CFG_T_LISTEN:
    case CFG_T_PLATFORM: return snprintf(buf, len, "%s", (const char *)p);
    case CFG_T_MODE: memcpy(&u32, p, sizeof(u32)); return snprintf(buf, len, "%04" PRIo32, u32);
    case CFG_T_GROUP: {
      const cfg_group_t *g = p;
      if (g->gid == CFG_NO_GID) return snprintf(buf, len, "%s", "");
      return snprintf(buf, len, "%" PRIu32, g->gid);
    }
    case CFG_T_UIDS:
    case CFG_T_GIDS: return format_ids(p, buf, len);
    case CFG_T_UINT: memcpy(&u32, p, sizeof(u32)); return snprintf(buf, len, "%" PRIu32, u32);
    case CFG_T_SIZE: memcpy(&u64, p, sizeof(u64)); return format_size(u64, buf, len);
    case CFG_T_DURATION: memcpy(&u64, p, sizeof(u64)); return format_duration(u64, buf, len);
    case CFG_T_QUEUE_FULL:
      memcpy(&u32, p, sizeof(u32));
      return snprintf(buf, len, "%s", u32 < 2 ? queue_full_names[u32] : "?");
    case CFG_T_LOGLEVEL:
      memcpy(&level, p, sizeof(level));
      for (size_t i = 0; i < LOG_LEVEL_COUNT; i++)
        if (log_levels[i].level == level) return snprintf(buf, len, "%s", log_levels[i].name);
      return snprintf(buf, len, "%d", level);
    case CFG_T_RING: {
      uint64_t rings[PTO_RING_COUNT];
      memcpy(rings, p, sizeof(rings));
      /* K/M/G for bytes only: a window of 1K tasks reads worse than 1024 */
      bool bytes = k->field == PTO_FIELD_HEAP;
      char one[32];
      if (rings[0] != 0 && rings[0] == rings[1] && rings[1] == rings[2] && rings[2] == rings[3]) {
        if (bytes) return format_size(rings[0], buf, len);
        return snprintf(buf, len, "%" PRIu64, rings[0]);
      }
      size_t pos = 0;
      if (buf && len) buf[0] = '\0';
      for (int r = 0; r < PTO_RING_COUNT; r++) {
        if (bytes)
          format_size(rings[r], one, sizeof(one));
        else
          snprintf(one, sizeof(one), "%" PRIu64, rings[r]);
        append(buf, len, &pos, "%s%s", r ? "," : "", one);
      }
      return (int)pos;
    }
  }
  return snprintf(buf, len, "?");
}

/* ---- defaults ------------------------------------------------------------ */

/* The programs directory of the install this executable belongs to, found as
 * git's RUNTIME_PREFIX finds its prefix: /proc/self/exe's directory joined
 * with the relative PTOD_DEFAULT_PROGRAMS_DIR, resolved when it exists.
 * Without /proc the relative path is kept, and loading the programs then
 * fails naming it. */
static void default_programs_dir(char *buf, size_t len) {
  char exe[PATH_MAX], real[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
  if (!slash) {
    snprintf(buf, len, "%s", PTOD_DEFAULT_PROGRAMS_DIR);
    return;
  }
  *slash = '\0';
  int w = snprintf(buf, len, "%s/%s", exe, PTOD_DEFAULT_PROGRAMS_DIR);
  if (w > 0 && (size_t)w < len && realpath(buf, real)) snprintf(buf, len, "%.*s", (int)len - 1, real);
}

void cfg_defaults(cfg_t *ret_cfg) {
  cfg_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  for (size_t i = 0; i < KEY_COUNT; i++) {
    why_t why;
    /* The table's defaults are tested to parse; nothing here can fail. */
    (void)parse_value(&key_table[i], key_table[i].def, (char *)&cfg + key_table[i].offset, &why);
  }
  (void)pto_default_socket_path((int)cfg.device.id, cfg.daemon.socket, sizeof(cfg.daemon.socket));
  if (PROGRAMS_DIR_IS_RELATIVE) default_programs_dir(cfg.device.programs, sizeof(cfg.device.programs));
  *ret_cfg = cfg;
}

/* ---- reading the file ---------------------------------------------------- */

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
    char known[512];
    size_t pos = 0;
    known[0] = '\0';
    for (size_t i = 0; i < KEY_COUNT; i++)
      if (strcmp(key_table[i].section, section) == 0)
        append(known, sizeof(known), &pos, "%s%s", pos ? ", " : "", key_table[i].name);
    fail_at(ld, ld->lineno, key_id, "", "%sunknown key; the keys of [%s] are %s.", ld->err_prefix,
            section, known);
    return 1;
  }
  size_t idx = (size_t)(k - key_table);
  if (ld->first_line[idx]) {
    fail_at(ld, ld->lineno, key_id, "", "%salready set on line %d; keep one of the two.",
            ld->err_prefix, ld->first_line[idx]);
    return 1;
  }
  ld->first_line[idx] = ld->lineno;
  why_t why;
  why.text[0] = why.hint[0] = '\0';
  if (parse_value(k, value, (char *)&ld->cfg + k->offset, &why) < 0)
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

/* ---- sizings, print, diff ------------------------------------------------ */

void cfg_resolve_sizings(const cfg_t *cfg, const pto_sizing_t *env,
                         pto_sizing_resolved_t *ret_baseline, pto_sizing_resolved_t *ret_prewarm) {
  if (ret_baseline) pto_sizing_resolve(NULL, env, &cfg->ring, ret_baseline);
  if (ret_prewarm) pto_sizing_resolve(&cfg->prewarm, env, &cfg->ring, ret_prewarm);
}

/* What a printed value leaves unsaid. */
static const char *value_note(const cfg_t *cfg, const cfg_key_t *k, char *buf, size_t len) {
  const void *p = value_at(cfg, k);
  buf[0] = '\0';
  switch (k->type) {
    case CFG_T_GROUP: {
      const cfg_group_t *g = p;
      if (g->gid == CFG_NO_GID) return "the daemon's primary group";
      if (g->name[0]) snprintf(buf, len, "%s", g->name);
      return buf;
    }
    case CFG_T_UIDS:
    case CFG_T_GIDS:
      return ((const cfg_ids_t *)p)->count ? "" : "any peer that can open the socket";
    case CFG_T_DIR:
    case CFG_T_FILE:
    case CFG_T_LISTEN: return ((const char *)p)[0] ? "" : "none";
    case CFG_T_RING: {
      uint64_t rings[PTO_RING_COUNT];
      memcpy(rings, p, sizeof(rings));
      if (rings[0] || rings[1] || rings[2] || rings[3]) return "";
      return strcmp(k->section, "ring") == 0 ? "unset" : "the baseline";
    }
    default: return "";
  }
}

static void print_sizing(FILE *out, const char *title, const pto_sizing_resolved_t *s,
                         const pto_sizing_t *overlay) {
  char hex[17];
  pto_sizing_key_hex(pto_sizing_key(s), hex);
  fprintf(out, "# %s (key %s):\n", title, hex);
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    fprintf(out, "#   %s = [", pto_sizing_field_name((pto_ring_field_t)f));
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      char v[32];
      if (f == PTO_FIELD_HEAP)
        pto_size_format(s->value[f][r], v, sizeof(v));
      else
        snprintf(v, sizeof(v), "%" PRIu64, s->value[f][r]);
      const char *src = overlay && overlay->value[f][r]
                            ? "prewarm"
                            : pto_sizing_source_name((pto_sizing_source_t)s->source[f][r]);
      fprintf(out, "%s%s (%s)", r ? ", " : "", v, src);
    }
    fprintf(out, "]\n");
  }
}

void cfg_print(const cfg_t *cfg, const pto_sizing_t *env, const char *source_name, FILE *out) {
  fprintf(out, "# ptod effective configuration (%s)\n",
          source_name ? source_name : "built-in defaults");
  const char *section = "";
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    if (strcmp(section, k->section) != 0) {
      section = k->section;
      fprintf(out, "\n[%s]\n", section);
    }
    char value[PATH_MAX + 32], note[CFG_NAME_MAX];
    cfg_format_value(cfg, k, value, sizeof(value));
    const char *n = value_note(cfg, k, note, sizeof(note));
    if (n[0])
      fprintf(out, "%s = %s%s; %s\n", k->name, value, value[0] ? " " : "", n);
    else
      fprintf(out, "%s = %s\n", k->name, value);
  }
  pto_sizing_resolved_t baseline, prewarm;
  cfg_resolve_sizings(cfg, env, &baseline, &prewarm);
  fprintf(out,
          "\n# Resolved sizings, per ring 0..3 (request > PTO2_RING_* environment > [ring] > "
          "built-in default):\n");
  print_sizing(out, "baseline", &baseline, NULL);
  print_sizing(out, pto_sizing_equal(&baseline, &prewarm) ? "prewarm, the baseline" : "prewarm",
               &prewarm, &cfg->prewarm);
}

unsigned cfg_diff(const cfg_t *old_cfg, const cfg_t *new_cfg, char *report, size_t len) {
  unsigned changed = 0;
  size_t pos = 0;
  if (report && len) report[0] = '\0';
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    if (memcmp(value_at(old_cfg, k), value_at(new_cfg, k), k->size) == 0) continue;
    char a[PATH_MAX + 32], b[PATH_MAX + 32];
    cfg_format_value(old_cfg, k, a, sizeof(a));
    cfg_format_value(new_cfg, k, b, sizeof(b));
    /* Names resolve to the same ids, paths and values print the same: what
     * prints the same is the same setting. */
    if (strcmp(a, b) == 0) continue;
    changed |= k->live ? CFG_CHANGED_LIVE : CFG_CHANGED_RESTART;
    append(report, len, &pos, "[%s] %s: %s -> %s%s\n", k->section, k->name, a[0] ? a : "\"\"",
           b[0] ? b : "\"\"", k->live ? "" : " (needs a restart)");
  }
  return changed;
}

void cfg_merge_live(const cfg_t *running, const cfg_t *loaded, cfg_t *ret_cfg) {
  cfg_t out = *loaded;
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    if (!k->live) memcpy((char *)&out + k->offset, value_at(running, k), k->size);
  }
  *ret_cfg = out;
}
