/* SPDX-License-Identifier: Apache-2.0 */
/* The value types of config_value.h: one row per cfg_type_t. */
#include "config_value.h"

#include <errno.h>
#include <grp.h>
#include <inttypes.h>
#include <pwd.h>
#include <stdarg.h>
#include <string.h>
#include <syslog.h>

#include "listen_addr.h"

#define KIB(n) ((uint64_t)(n) << 10)
#define MIB(n) ((uint64_t)(n) << 20)
#define GIB(n) ((uint64_t)(n) << 30)

/* A value written as one of a few names. */
typedef struct choice {
  const char *name;
  int value;
} choice_t;

static const choice_t log_levels[] = {
    {"err", LOG_ERR},   {"warning", LOG_WARNING}, {"notice", LOG_NOTICE},
    {"info", LOG_INFO}, {"debug", LOG_DEBUG},
};
#define LOG_LEVEL_COUNT (sizeof(log_levels) / sizeof(log_levels[0]))

/* [daemon] queue_full. */
static const choice_t queue_fulls[] = {{"wait", CFG_QUEUE_WAIT}, {"busy", CFG_QUEUE_BUSY}};
#define QUEUE_FULL_COUNT (sizeof(queue_fulls) / sizeof(queue_fulls[0]))

static const choice_t *choice_named(const choice_t *c, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(c[i].name, name) == 0) return &c[i];
  return NULL;
}

static const char *choice_name(const choice_t *c, size_t n, int value) {
  for (size_t i = 0; i < n; i++)
    if (c[i].value == value) return c[i].name;
  return NULL;
}

static const char *const platforms[] = {"sim"};
#define PLATFORM_COUNT (sizeof(platforms) / sizeof(platforms[0]))

/* ---- text helpers ------------------------------------------------------- */

void cfg_append(char *buf, size_t len, size_t *pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n =
      vsnprintf(buf && *pos < len ? buf + *pos : NULL, buf && *pos < len ? len - *pos : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *pos += (size_t)n;
}

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
static int format_size_text(uint64_t v, char *buf, size_t len) {
  if (v != 0 && v % GIB(1) == 0) return snprintf(buf, len, "%" PRIu64 "G", v >> 30);
  if (v != 0 && v % MIB(1) == 0) return snprintf(buf, len, "%" PRIu64 "M", v >> 20);
  if (v != 0 && v % KIB(1) == 0) return snprintf(buf, len, "%" PRIu64 "K", v >> 10);
  return snprintf(buf, len, "%" PRIu64, v);
}

static int format_duration_text(uint64_t ms, char *buf, size_t len) {
  if (ms % 1000 == 0) return snprintf(buf, len, "%" PRIu64 "s", ms / 1000);
  return snprintf(buf, len, "%" PRIu64 "ms", ms);
}

/* "30s", "500ms", "30" (seconds). */
static bool parse_duration_text(const char *s, uint64_t *ret_ms) {
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

static int because(cfg_why_t *why, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int because(cfg_why_t *why, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why->text, sizeof(why->text), fmt, ap);
  va_end(ap);
  return -1;
}

/* The text as the value of a char[k->size] member. */
static void store_text(const cfg_key_t *k, const char *v, size_t len, void *dst) {
  memset(dst, 0, k->size);
  memcpy(dst, v, len);
}

/* ---- user and group names ------------------------------------------------ */

/* Resolve the name (NUL-terminated, shorter than CFG_NAME_MAX). */
static int lookup_name(bool group, const char *name, uint32_t *ret, cfg_why_t *why) {
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

static int lookup_id(bool group, const char *s, size_t len, uint32_t *ret, cfg_why_t *why) {
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
  return lookup_name(group, name, ret, why);
}

/* ---- parsing, one function per type -------------------------------------- */

typedef int parse_fn(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why);

static int parse_socket(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  if (len > 0 && v[0] != '/')
    return because(why, "the socket path must be absolute (start with /).");
  if (len >= k->size)
    return because(why, "the socket path is %zu bytes long; a Unix socket path holds at most %zu.",
                   len, k->size - 1);
  store_text(k, v, len, dst);
  return 0;
}

static int parse_listen(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  char reason[160];
  if (len && listen_addr_check(v, reason, sizeof reason) < 0) return because(why, "%s", reason);
  if (len >= k->size) return because(why, "the value is longer than %zu bytes.", k->size - 1);
  store_text(k, v, len, dst);
  return 0;
}

/* CFG_T_DIR and CFG_T_FILE; a DIR whose min is 1 must be set. */
static int parse_path(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  if (len == 0 && k->min) return because(why, "expected a directory, got an empty value.");
  if (len > 0 && v[0] != '/')
    return because(why, "the %s must be an absolute path (start with /).",
                   k->type == CFG_T_FILE ? "file" : "directory");
  if (len >= k->size) return because(why, "the path is longer than %zu bytes.", k->size - 1);
  store_text(k, v, len, dst);
  return 0;
}

static int parse_mode(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  (void)k;
  uint32_t mode = 0;
  bool octal = len > 0 && len <= 4;
  for (size_t i = 0; octal && i < len; i++) {
    octal = v[i] >= '0' && v[i] <= '7';
    mode = mode * 8 + (uint32_t)(v[i] - '0');
  }
  if (!octal) return because(why, "expected an octal permission mode such as 0660.");
  if (mode > 0777)
    return because(why, "expected permission bits only (at most 0777), such as 0660.");
  if (mode & 0002)
    return because(why,
                   "the socket must not be world-writable (o+w): any local user could "
                   "drive the device. Use 0660 with socket_group, or 0600.");
  memcpy(dst, &mode, sizeof(mode));
  return 0;
}

static int parse_group(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  (void)k;
  cfg_group_t g;
  memset(&g, 0, sizeof(g));
  g.gid = CFG_NO_GID;
  if (len > 0) {
    if (lookup_id(true, v, len, &g.gid, why) < 0) return -1;
    if (!all_digits(v, len)) memcpy(g.name, v, len); /* lookup_id checked the length */
  }
  memcpy(dst, &g, sizeof(g));
  return 0;
}

/* CFG_T_UIDS and CFG_T_GIDS: a comma list, blanks around entries ignored. */
static int parse_ids(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  bool group = k->type == CFG_T_GIDS;
  cfg_ids_t ids;
  memset(&ids, 0, sizeof(ids));
  const char *p = v;
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

static int parse_uint(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  uint64_t n;
  if (!parse_u64(v, len, &n) || n < k->min || n > k->max)
    return because(why, "expected an integer from %" PRIu64 " to %" PRIu64 ".", k->min, k->max);
  uint32_t u = (uint32_t)n;
  memcpy(dst, &u, sizeof(u));
  return 0;
}

static int parse_size(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  uint64_t n;
  char a[32], b[32];
  if (pto_size_parse(v, len, &n) < 0 || n < k->min || n > k->max) {
    format_size_text(k->min, a, sizeof(a));
    format_size_text(k->max, b, sizeof(b));
    if (k->max == UINT64_MAX)
      return because(why,
                     "expected a size of at least %s: a number of bytes, or a number ending "
                     "in K, M or G (upper case).",
                     a);
    return because(why,
                   "expected a size from %s to %s: a number of bytes, or a number ending in "
                   "K, M or G (upper case).",
                   a, b);
  }
  memcpy(dst, &n, sizeof(n));
  return 0;
}

static int parse_duration(const cfg_key_t *k, const char *v, size_t len, void *dst,
                          cfg_why_t *why) {
  (void)len;
  uint64_t ms;
  char a[32], b[32];
  if (!parse_duration_text(v, &ms) || ms < k->min || ms > k->max) {
    format_duration_text(k->min, a, sizeof(a));
    format_duration_text(k->max, b, sizeof(b));
    return because(why,
                   "expected a duration from %s to %s: a number ending in ms or s (a bare "
                   "number is seconds).",
                   a, b);
  }
  memcpy(dst, &ms, sizeof(ms));
  return 0;
}

static int parse_queue_full(const cfg_key_t *k, const char *v, size_t len, void *dst,
                            cfg_why_t *why) {
  (void)k, (void)len;
  const choice_t *c = choice_named(queue_fulls, QUEUE_FULL_COUNT, v);
  if (!c) return because(why, "expected wait or busy.");
  uint32_t u = (uint32_t)c->value;
  memcpy(dst, &u, sizeof(u));
  return 0;
}

static int parse_log_level(const cfg_key_t *k, const char *v, size_t len, void *dst,
                           cfg_why_t *why) {
  (void)k, (void)len;
  const choice_t *c = choice_named(log_levels, LOG_LEVEL_COUNT, v);
  if (!c) return because(why, "expected one of err, warning, notice, info, debug.");
  memcpy(dst, &c->value, sizeof(int));
  return 0;
}

static int parse_platform(const cfg_key_t *k, const char *v, size_t len, void *dst,
                          cfg_why_t *why) {
  for (size_t i = 0; i < PLATFORM_COUNT; i++) {
    if (strcmp(v, platforms[i]) == 0) {
      store_text(k, v, len, dst);
      return 0;
    }
  }
  return because(why, "unknown platform; the known platforms are: sim.");
}

static int parse_ring(const cfg_key_t *k, const char *v, size_t len, void *dst, cfg_why_t *why) {
  (void)len;
  pto_error_t err;
  uint64_t rings[PTO_RING_COUNT];
  pto_error_clear(&err);
  if (pto_sizing_parse_config((pto_ring_field_t)k->field, v, rings, &err) < 0) {
    snprintf(why->hint, sizeof(why->hint), "%s", err.hint);
    return because(why, "%s", err.message);
  }
  memcpy(dst, rings, sizeof(rings));
  return 0;
}

/* ---- formatting and notes, one function per type -------------------------- */

typedef int format_fn(const cfg_key_t *k, const void *p, char *buf, size_t len);
typedef const char *note_fn(const cfg_key_t *k, const void *p, char *buf, size_t len);

static int format_text(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  return snprintf(buf, len, "%s", (const char *)p);
}

static int format_mode(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  uint32_t mode;
  memcpy(&mode, p, sizeof(mode));
  return snprintf(buf, len, "%04" PRIo32, mode);
}

static int format_group(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  const cfg_group_t *g = p;
  if (g->gid == CFG_NO_GID) return snprintf(buf, len, "%s", "");
  return snprintf(buf, len, "%" PRIu32, g->gid);
}

static int format_ids(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  const cfg_ids_t *ids = p;
  size_t pos = 0;
  if (buf && len) buf[0] = '\0';
  for (uint32_t i = 0; i < ids->count; i++)
    cfg_append(buf, len, &pos, "%s%" PRIu32, i ? "," : "", ids->id[i]);
  return (int)pos;
}

static int format_uint(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  uint32_t u;
  memcpy(&u, p, sizeof(u));
  return snprintf(buf, len, "%" PRIu32, u);
}

static int format_size(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  uint64_t v;
  memcpy(&v, p, sizeof(v));
  return format_size_text(v, buf, len);
}

static int format_duration(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  uint64_t ms;
  memcpy(&ms, p, sizeof(ms));
  return format_duration_text(ms, buf, len);
}

static int format_queue_full(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  uint32_t u;
  memcpy(&u, p, sizeof(u));
  const char *name = u <= INT32_MAX ? choice_name(queue_fulls, QUEUE_FULL_COUNT, (int)u) : NULL;
  return snprintf(buf, len, "%s", name ? name : "?");
}

static int format_log_level(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  int level;
  memcpy(&level, p, sizeof(level));
  const char *name = choice_name(log_levels, LOG_LEVEL_COUNT, level);
  if (name) return snprintf(buf, len, "%s", name);
  return snprintf(buf, len, "%d", level);
}

/* One value for all four rings when they agree, else four; K/M/G for bytes
 * only: a window of 1K tasks reads worse than 1024. */
static int format_ring(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  uint64_t rings[PTO_RING_COUNT];
  memcpy(rings, p, sizeof(rings));
  bool bytes = k->field == PTO_FIELD_HEAP;
  bool same = rings[0] != 0 && rings[0] == rings[1] && rings[1] == rings[2] && rings[2] == rings[3];
  size_t pos = 0;
  if (buf && len) buf[0] = '\0';
  for (int r = 0; r < (same ? 1 : PTO_RING_COUNT); r++) {
    char one[32];
    if (bytes)
      format_size_text(rings[r], one, sizeof(one));
    else
      snprintf(one, sizeof(one), "%" PRIu64, rings[r]);
    cfg_append(buf, len, &pos, "%s%s", r ? "," : "", one);
  }
  return (int)pos;
}

static const char *note_group(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k;
  const cfg_group_t *g = p;
  if (g->gid == CFG_NO_GID) return "the daemon's primary group";
  if (g->name[0]) snprintf(buf, len, "%s", g->name);
  return buf;
}

static const char *note_ids(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k, (void)buf, (void)len;
  return ((const cfg_ids_t *)p)->count ? "" : "any peer that can open the socket";
}

static const char *note_unset_path(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)k, (void)buf, (void)len;
  return ((const char *)p)[0] ? "" : "none";
}

static const char *note_ring(const cfg_key_t *k, const void *p, char *buf, size_t len) {
  (void)buf, (void)len;
  uint64_t rings[PTO_RING_COUNT];
  memcpy(rings, p, sizeof(rings));
  if (rings[0] || rings[1] || rings[2] || rings[3]) return "";
  return strcmp(k->section, "ring") == 0 ? "unset" : "the baseline";
}

/* ---- the value types ------------------------------------------------------ */

static const struct value_type {
  parse_fn *parse;
  format_fn *format;
  note_fn *note; /* NULL: nothing to add */
} value_types[] = {
    [CFG_T_SOCKET] = {parse_socket, format_text, NULL},
    [CFG_T_DIR] = {parse_path, format_text, note_unset_path},
    [CFG_T_MODE] = {parse_mode, format_mode, NULL},
    [CFG_T_GROUP] = {parse_group, format_group, note_group},
    [CFG_T_UIDS] = {parse_ids, format_ids, note_ids},
    [CFG_T_GIDS] = {parse_ids, format_ids, note_ids},
    [CFG_T_UINT] = {parse_uint, format_uint, NULL},
    [CFG_T_SIZE] = {parse_size, format_size, NULL},
    [CFG_T_DURATION] = {parse_duration, format_duration, NULL},
    [CFG_T_LOGLEVEL] = {parse_log_level, format_log_level, NULL},
    [CFG_T_QUEUE_FULL] = {parse_queue_full, format_queue_full, NULL},
    [CFG_T_PLATFORM] = {parse_platform, format_text, NULL},
    [CFG_T_RING] = {parse_ring, format_ring, note_ring},
    [CFG_T_LISTEN] = {parse_listen, format_text, note_unset_path},
    [CFG_T_FILE] = {parse_path, format_text, note_unset_path},
};
#define VALUE_TYPE_COUNT (sizeof(value_types) / sizeof(value_types[0]))
_Static_assert(VALUE_TYPE_COUNT == CFG_T_FILE + 1, "a cfg_type_t without its row");

int cfg_parse_value(const cfg_key_t *k, const char *text, void *dst, cfg_why_t *why) {
  if ((size_t)k->type >= VALUE_TYPE_COUNT)
    return because(why, "internal error: key type %d.", (int)k->type);
  return value_types[k->type].parse(k, text, strlen(text), dst, why);
}

int cfg_format_value(const cfg_t *cfg, const cfg_key_t *k, char *buf, size_t len) {
  if ((size_t)k->type >= VALUE_TYPE_COUNT) return snprintf(buf, len, "?");
  return value_types[k->type].format(k, (const char *)cfg + k->offset, buf, len);
}

const char *cfg_value_note(const cfg_t *cfg, const cfg_key_t *k, char *buf, size_t len) {
  buf[0] = '\0';
  if ((size_t)k->type >= VALUE_TYPE_COUNT || !value_types[k->type].note) return "";
  return value_types[k->type].note(k, (const char *)cfg + k->offset, buf, len);
}
