/* SPDX-License-Identifier: Apache-2.0 */
/* The per-ring sizing vector of include/pto/sizing.h.
 *
 * Messages follow PyPTO's RunConfig word for word, because users paste them
 * into searches and compare them with what RunConfig told them. */
#include <pto/sizing.h>

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "describe_text.h"
#include "sizing_internal.h"

static const char *const field_keys[PTO_FIELD_COUNT] = {"ring_task_window", "ring_heap",
                                                        "ring_dep_pool"};
static const char *const field_names[PTO_FIELD_COUNT] = {"task_window", "heap", "dep_pool"};
static const char *const env_vars[PTO_FIELD_COUNT] = {"PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP",
                                                      "PTO2_RING_DEP_POOL"};
/* What a single value must be; the scalar message is "<key> must <rule>, got X". */
static const char *const scalar_rules[PTO_FIELD_COUNT] = {
    "be a power of 2 >= 4", "be a power of 2 >= 1024 (bytes per ring)", "be in [4, INT32_MAX]"};
/* The list-entry message is "<key> entries must <rule> (or 0 to keep default), got X". */
static const char *const entry_rules[PTO_FIELD_COUNT] = {
    "be a power of 2 >= 4", "be a power of 2 >= 1024", "be in [4, INT32_MAX]"};
static const uint64_t field_defaults[PTO_FIELD_COUNT] = {PTO_DEFAULT_TASK_WINDOW, PTO_DEFAULT_HEAP,
                                                         PTO_DEFAULT_DEP_POOL};
static const char *const source_names[] = {"default", "config", "env", "request"};

#define FIELD_OK(f) ((unsigned)(f) < PTO_FIELD_COUNT)

const char *pto_sizing_field_key(pto_ring_field_t field) {
  return FIELD_OK(field) ? field_keys[field] : NULL;
}

const char *pto_sizing_field_name(pto_ring_field_t field) {
  return FIELD_OK(field) ? field_names[field] : NULL;
}

const char *pto_sizing_env_var(pto_ring_field_t field) {
  return FIELD_OK(field) ? env_vars[field] : NULL;
}

const char *pto_sizing_source_name(pto_sizing_source_t source) {
  return (unsigned)source < sizeof(source_names) / sizeof(source_names[0]) ? source_names[source]
                                                                           : NULL;
}

int pto_sizing_field_from_key(const char *key, size_t len) {
  if (!key) return -1;
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    if (strlen(field_keys[f]) == len && memcmp(field_keys[f], key, len) == 0) return f;
    if (strlen(field_names[f]) == len && memcmp(field_names[f], key, len) == 0) return f;
  }
  return -1;
}

static bool is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

bool pto_sizing_value_valid(pto_ring_field_t field, uint64_t value) {
  switch (field) {
    case PTO_FIELD_TASK_WINDOW: return is_pow2(value) && value >= 4 && value <= PTO_MAX_TASK_WINDOW;
    case PTO_FIELD_HEAP: return is_pow2(value) && value >= 1024;
    case PTO_FIELD_DEP_POOL: return value >= 4 && value <= INT32_MAX;
  }
  return false;
}

/* ---- messages ---------------------------------------------------------- */

static void show_u64(shown_t *out, uint64_t v) {
  snprintf(out->text, sizeof(out->text), "%" PRIu64, v);
}

/* What would have been accepted, for err->hint. */
static void value_hint(pto_ring_field_t field, uint64_t v, bool entry, char *hint, size_t len) {
  const char *zero = entry ? " (0 keeps the lower-precedence value)" : "";
  if (field == PTO_FIELD_DEP_POOL) {
    snprintf(hint, len, "Use a value from 4 to 2147483647%s.", zero);
    return;
  }
  uint64_t min = field == PTO_FIELD_HEAP ? 1024 : 4;
  if (field == PTO_FIELD_TASK_WINDOW && v > PTO_MAX_TASK_WINDOW) {
    snprintf(hint, len, "Use a power of 2 from 4 to 1073741824 (2^30)%s.", zero);
    return;
  }
  if (v <= min) {
    snprintf(hint, len, "Use %" PRIu64 " or a larger power of 2%s.", min, zero);
    return;
  }
  uint64_t below = UINT64_C(1) << (63 - __builtin_clzll(v));
  if (below == UINT64_C(1) << 63 ||
      (field == PTO_FIELD_TASK_WINDOW && below >= PTO_MAX_TASK_WINDOW)) {
    snprintf(hint, len, "Use a power of 2 such as %" PRIu64 "%s.", below, zero);
    return;
  }
  snprintf(hint, len, "Use a power of 2 such as %" PRIu64 " or %" PRIu64 "%s.", below, below * 2,
           zero);
}

int sizing_fail_scalar(pto_ring_field_t field, const shown_t *got, pto_error_t *err) {
  int rc = pto_error_set(err, PTO_E_INVALID_CONFIG, "%s must %s, got %s", field_keys[field],
                         scalar_rules[field], got->text);
  if (err) snprintf(err->key, sizeof(err->key), "%s", field_keys[field]);
  return rc;
}

int sizing_fail_entry(pto_ring_field_t field, const shown_t *got, pto_error_t *err) {
  int rc =
      pto_error_set(err, PTO_E_INVALID_CONFIG, "%s entries must %s (or 0 to keep default), got %s",
                    field_keys[field], entry_rules[field], got->text);
  if (err) snprintf(err->key, sizeof(err->key), "%s", field_keys[field]);
  return rc;
}

int sizing_fail_count(pto_ring_field_t field, uint64_t count, pto_error_t *err) {
  int rc = pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "%s must have exactly 4 entries (one per scope-depth ring), got %" PRIu64,
                         field_keys[field], count);
  if (err) {
    snprintf(err->key, sizeof(err->key), "%s", field_keys[field]);
    snprintf(err->hint, sizeof(err->hint),
             "Give one value for all four rings, or four values for rings 0 to 3 (0 keeps a "
             "ring's lower-precedence value).");
  }
  return rc;
}

void sizing_type_hint(pto_ring_field_t field, pto_error_t *err) {
  if (err)
    snprintf(err->hint, sizeof(err->hint),
             "Give an integer%s, or a list of 4 integers (one per ring).",
             field == PTO_FIELD_HEAP ? " (bytes per ring)" : "");
}

int pto_sizing_check_value(pto_ring_field_t field, uint64_t value, pto_error_t *ret_err) {
  if (!FIELD_OK(field))
    return pto_error_set(ret_err, PTO_E_INVALID_CONFIG, "Unknown ring field %d.", (int)field);
  if (pto_sizing_value_valid(field, value)) return 0;
  shown_t got;
  show_u64(&got, value);
  int rc = sizing_fail_scalar(field, &got, ret_err);
  if (ret_err) {
    if (value == 0)
      snprintf(ret_err->hint, sizeof(ret_err->hint),
               "Leave the field out (nil) to keep the lower-precedence value; 0 is not a size.");
    else
      value_hint(field, value, false, ret_err->hint, sizeof(ret_err->hint));
  }
  return rc;
}

int sizing_check_entry(pto_ring_field_t field, uint64_t value, pto_error_t *err) {
  if (value == 0 || pto_sizing_value_valid(field, value)) return 0;
  shown_t got;
  show_u64(&got, value);
  int rc = sizing_fail_entry(field, &got, err);
  if (err) value_hint(field, value, true, err->hint, sizeof(err->hint));
  return rc;
}

/* ---- text -------------------------------------------------------------- */

static bool is_digit(char c) { return c >= '0' && c <= '9'; }
static bool is_blank(char c) { return c == ' ' || c == '\t'; }

int pto_size_parse(const char *text, size_t len, uint64_t *ret_bytes) {
  if (!text || len == 0) return -EINVAL;
  unsigned shift = 0;
  switch (text[len - 1]) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    default: break;
  }
  size_t ndigits = shift ? len - 1 : len;
  if (ndigits == 0) return -EINVAL;
  uint64_t v = 0;
  bool overflow = false;
  for (size_t i = 0; i < ndigits; i++) {
    if (!is_digit(text[i])) return -EINVAL;
    unsigned d = (unsigned)(text[i] - '0');
    if (v > (UINT64_MAX - d) / 10)
      overflow = true; /* keep scanning: junk further on is still -EINVAL */
    else
      v = v * 10 + d;
  }
  if (overflow) return -ERANGE;
  if (shift && v > (UINT64_MAX >> shift)) return -ERANGE;
  if (ret_bytes) *ret_bytes = v << shift;
  return 0;
}

typedef enum token_kind { TOKEN_VALUE, TOKEN_NEGATIVE, TOKEN_BAD } token_kind_t;

/* One number of an environment or config value, spaces already trimmed.
 * "-5" is an integer RunConfig would echo bare; anything else unparsable is
 * echoed quoted. */
static token_kind_t parse_token(const char *s, size_t len, bool suffixes, uint64_t *ret) {
  if (len >= 2 && s[0] == '-') {
    for (size_t i = 1; i < len; i++)
      if (!is_digit(s[i])) return TOKEN_BAD;
    return TOKEN_NEGATIVE;
  }
  if (!suffixes) {
    for (size_t i = 0; i < len; i++)
      if (!is_digit(s[i])) return TOKEN_BAD;
  }
  return pto_size_parse(s, len, ret) == 0 ? TOKEN_VALUE : TOKEN_BAD;
}

typedef struct token {
  const char *s;
  size_t len;
} token_t;

static token_t trim(const char *s, size_t len) {
  while (len > 0 && is_blank(*s)) {
    s++;
    len--;
  }
  while (len > 0 && is_blank(s[len - 1])) len--;
  return (token_t){s, len};
}

static int parse_text(pto_ring_field_t field, const char *text, bool suffixes,
                      uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *err) {
  if (!FIELD_OK(field))
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Unknown ring field %d.", (int)field);
  if (!text) text = "";
  uint64_t count = 1;
  for (const char *p = text; *p; p++)
    if (*p == ',') count++;

  uint64_t rings[PTO_RING_COUNT] = {0};
  uint64_t value = 0;
  const char *p = text;
  for (uint64_t i = 0; i < count; i++) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    token_t t = trim(p, len);
    token_kind_t kind = parse_token(t.s, t.len, suffixes, &value);
    if (kind != TOKEN_VALUE) {
      shown_t got;
      if (kind == TOKEN_NEGATIVE)
        snprintf(got.text, sizeof(got.text), "%.*s", (int)(t.len < 40 ? t.len : 40), t.s);
      else
        proto_describe_text(t.s, t.len, got.text, sizeof(got.text));
      int rc = count == 1 ? sizing_fail_scalar(field, &got, err)
                          : sizing_fail_entry(field, &got, err);
      if (err)
        snprintf(err->hint, sizeof(err->hint),
                 "Give one integer%s for all four rings, or four separated by commas%s.",
                 field == PTO_FIELD_HEAP ? " (bytes per ring)" : "",
                 suffixes ? "; numbers may end in K, M or G" : " (no size suffixes here)");
      return rc;
    }
    if (i < PTO_RING_COUNT) rings[i] = value;
    p = comma ? comma + 1 : p + len;
  }
  if (count != 1 && count != PTO_RING_COUNT) return sizing_fail_count(field, count, err);
  if (count == 1) {
    int rc = pto_sizing_check_value(field, rings[0], err);
    if (rc < 0) return rc;
    for (int r = 1; r < PTO_RING_COUNT; r++) rings[r] = rings[0];
  } else {
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      int rc = sizing_check_entry(field, rings[r], err);
      if (rc < 0) return rc;
    }
  }
  memcpy(ret_rings, rings, sizeof(rings));
  return 0;
}

int pto_sizing_parse_env(pto_ring_field_t field, const char *text,
                         uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *ret_err) {
  return parse_text(field, text, false, ret_rings, ret_err);
}

int pto_sizing_parse_config(pto_ring_field_t field, const char *text,
                            uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *ret_err) {
  return parse_text(field, text, true, ret_rings, ret_err);
}

int pto_sizing_from_environ(pto_sizing_t *ret_env, pto_error_t *ret_err) {
  pto_sizing_t env;
  memset(&env, 0, sizeof(env));
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    const char *text = getenv(env_vars[f]);
    if (!text) continue;
    int rc = pto_sizing_parse_env((pto_ring_field_t)f, text, env.value[f], ret_err);
    if (rc < 0) {
      if (ret_err) {
        /* "PTO2_RING_HEAP: " in front, the message cut if it must be */
        const size_t cap = sizeof(ret_err->message);
        size_t name_len = strlen(env_vars[f]);
        size_t msg_len = strnlen(ret_err->message, cap - 1);
        if (name_len + 2 + msg_len > cap - 1) msg_len = cap - 1 - name_len - 2;
        memmove(ret_err->message + name_len + 2, ret_err->message, msg_len);
        memcpy(ret_err->message, env_vars[f], name_len);
        memcpy(ret_err->message + name_len, ": ", 2);
        ret_err->message[name_len + 2 + msg_len] = '\0';
        snprintf(ret_err->key, sizeof(ret_err->key), "%s", env_vars[f]);
      }
      return rc;
    }
  }
  if (ret_env) *ret_env = env;
  return 0;
}

/* ---- resolve, key ------------------------------------------------------ */

void pto_sizing_resolve(const pto_sizing_t *request, const pto_sizing_t *env,
                        const pto_sizing_t *config, pto_sizing_resolved_t *ret) {
  pto_sizing_resolved_t out;
  memset(&out, 0, sizeof(out));
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      if (request && request->value[f][r]) {
        out.value[f][r] = request->value[f][r];
        out.source[f][r] = PTO_SOURCE_REQUEST;
      } else if (env && env->value[f][r]) {
        out.value[f][r] = env->value[f][r];
        out.source[f][r] = PTO_SOURCE_ENV;
      } else if (config && config->value[f][r]) {
        out.value[f][r] = config->value[f][r];
        out.source[f][r] = PTO_SOURCE_CONFIG;
      } else {
        out.value[f][r] = field_defaults[f];
        out.source[f][r] = PTO_SOURCE_DEFAULT;
      }
    }
  }
  *ret = out;
}

void pto_sizing_from_resolved(const pto_sizing_resolved_t *resolved, pto_sizing_t *ret) {
  pto_sizing_t out;
  memcpy(out.value, resolved->value, sizeof(out.value));
  *ret = out;
}

/* Standard FNV-1a-64 (offset basis 14695981039346656037, prime
 * 1099511628211), so any client can recompute a key from a sizing. */
uint64_t pto_sizing_key(const pto_sizing_resolved_t *sizing) {
  uint64_t h = UINT64_C(14695981039346656037);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    for (int f = 0; f < PTO_FIELD_COUNT; f++) {
      uint64_t v = sizing->value[f][r];
      for (int b = 0; b < 8; b++) {
        h ^= (v >> (8 * b)) & 0xff;
        h *= UINT64_C(1099511628211);
      }
    }
  }
  return h;
}

bool pto_sizing_equal(const pto_sizing_resolved_t *a, const pto_sizing_resolved_t *b) {
  return memcmp(a->value, b->value, sizeof(a->value)) == 0;
}

void pto_sizing_key_hex(uint64_t key, char buf[17]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 15; i >= 0; i--, key >>= 4) buf[i] = digits[key & 15];
  buf[16] = '\0';
}

/* ---- formatting -------------------------------------------------------- */

int pto_size_format(uint64_t bytes, char *buf, size_t len) {
  static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  int unit = -1;
  uint64_t v = bytes;
  while (v != 0 && (v & 1023) == 0 && unit + 1 < (int)(sizeof(units) / sizeof(units[0]))) {
    v >>= 10;
    unit++;
  }
  if (unit < 0) return snprintf(buf, len, "%" PRIu64 " B", bytes);
  return snprintf(buf, len, "%" PRIu64 " %s", v, units[unit]);
}

/* snprintf into buf at *pos, keeping the total length needed in *pos even
 * after buf is full, as snprintf itself does. */
static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t len, size_t *pos, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(*pos < len ? buf + *pos : NULL, *pos < len ? len - *pos : 0, fmt, ap);
  va_end(ap);
  if (n > 0) *pos += (size_t)n;
}

int pto_sizing_format(const pto_sizing_resolved_t *sizing, char *buf, size_t len) {
  size_t pos = 0;
  if (buf && len) buf[0] = '\0';
  if (!buf) len = 0;
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    append(buf, len, &pos, "%s%s=[", f ? " " : "", field_names[f]);
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      char one[32];
      if (f == PTO_FIELD_HEAP)
        pto_size_format(sizing->value[f][r], one, sizeof(one));
      else
        snprintf(one, sizeof(one), "%" PRIu64, sizing->value[f][r]);
      append(buf, len, &pos, "%s%s", r ? ", " : "", one);
    }
    append(buf, len, &pos, "]");
  }
  return pos > INT32_MAX ? INT32_MAX : (int)pos;
}
