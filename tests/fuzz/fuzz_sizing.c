/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz the sizing parsers of include/pto/sizing.h: the PTO2_RING_* text,
 * the config-file text, the msgpack form and pto_size_parse.
 *
 * Input: [selector] rest...
 *   field = (selector >> 2) % 3 (task_window, heap, dep_pool);
 *   selector & 3: 0 rest is a PTO2_RING_* value (pto_sizing_parse_env, and
 *   pto_sizing_from_environ with the variable set to it), 1 a [ring] value
 *   (pto_sizing_parse_config), 2 one msgpack object
 *   (pto_sizing_parse_msgpack), 3 a size (pto_size_parse, not
 *   NUL-terminated).
 *
 * Checked, against an independent reading of the documented grammar:
 *   - the text parsers accept exactly one number or four comma-separated
 *     ones (blanks around each allowed, K/M/G only in config values), with
 *     a lone value valid and list entries valid or 0, and return exactly
 *     those values; pto_size_parse returns the value, -EINVAL or -ERANGE as
 *     the grammar says;
 *   - every success yields values that pto_sizing_value_valid accepts, or
 *     0 in a list; every failure is INVALID_CONFIG with a message starting
 *     with the field's key and err.key = that key, and leaves the output
 *     untouched;
 *   - the text and msgpack forms of the same numbers give the same result
 *     and the same message (one set of RunConfig rules);
 *   - an environment value is accepted by the config grammar too, with the
 *     same values; pto_sizing_from_environ says what parse_env says, with
 *     the variable's name in front of the message.
 */
#include <pto/sizing.h>

#include "fuzz_common.h"

#define SENTINEL UINT64_C(0x5a5a5a5a5a5a5a5a)

typedef struct oracle {
  bool numeric;                /* every entry is a number that fits in 64 bits */
  bool ok;                     /* the parser must accept it */
  size_t count;                /* entries */
  uint64_t v[PTO_RING_COUNT];  /* the first four */
  uint64_t all[64];            /* every entry, when count <= 64 */
} oracle_t;

static bool blank(char c) { return c == ' ' || c == '\t'; }

/* One entry: digits, and with suffixes one K/M/G after them. */
static bool entry_value(const char *s, size_t len, bool suffixes, uint64_t *ret) {
  unsigned shift = 0;
  uint64_t v = 0;
  while (len > 0 && blank(*s)) s++, len--;
  while (len > 0 && blank(s[len - 1])) len--;
  if (suffixes && len > 0)
    shift = s[len - 1] == 'K' ? 10 : s[len - 1] == 'M' ? 20 : s[len - 1] == 'G' ? 30 : 0;
  if (shift) len--;
  if (len == 0) return false;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(s[i] - '0'), &v))
      return false;
  }
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *ret = v << shift;
  return true;
}

static oracle_t judge_text(pto_ring_field_t f, const char *text, bool suffixes) {
  oracle_t o = {.numeric = true};
  const char *p = text;
  for (;;) {
    const char *comma = strchr(p, ',');
    size_t len = comma ? (size_t)(comma - p) : strlen(p);
    uint64_t v = 0;
    if (!entry_value(p, len, suffixes, &v)) o.numeric = false;
    if (o.count < PTO_RING_COUNT) o.v[o.count] = v;
    if (o.count < 64) o.all[o.count] = v;
    o.count++;
    if (!comma) break;
    p = comma + 1;
  }
  o.ok = o.numeric && (o.count == 1 || o.count == PTO_RING_COUNT);
  for (size_t r = 0; o.ok && r < o.count; r++)
    o.ok = pto_sizing_value_valid(f, o.v[r]) || (o.count > 1 && o.v[r] == 0);
  if (o.ok && o.count == 1)
    for (int r = 1; r < PTO_RING_COUNT; r++) o.v[r] = o.v[0];
  return o;
}

static void check_failure(pto_ring_field_t f, int rc, const pto_error_t *err,
                          const uint64_t rings[PTO_RING_COUNT], const char *where) {
  const char *key = pto_sizing_field_key(f);
  fuzz_check_error(rc, err, where);
  FUZZ_CHECK(rc == -PTO_E_INVALID_CONFIG, "%s returned %d", where, rc);
  FUZZ_CHECK(strcmp(err->key, key) == 0, "%s: err.key \"%s\", expected \"%s\"", where, err->key,
             key);
  FUZZ_CHECK(strncmp(err->message, key, strlen(key)) == 0 && err->message[strlen(key)] == ' ',
             "%s: the message does not start with %s: %s", where, key, err->message);
  for (int r = 0; r < PTO_RING_COUNT; r++)
    FUZZ_CHECK(rings[r] == SENTINEL, "%s wrote ret_rings on failure", where);
}

static void check_values(pto_ring_field_t f, const uint64_t rings[PTO_RING_COUNT],
                         const char *where) {
  for (int r = 0; r < PTO_RING_COUNT; r++)
    FUZZ_CHECK(rings[r] == 0 || pto_sizing_value_valid(f, rings[r]), "%s accepted %s = %llu", where,
               pto_sizing_field_key(f), (unsigned long long)rings[r]);
}

/* The msgpack form of the same numbers: a scalar for one, else an array. */
static int parse_as_msgpack(pto_ring_field_t f, const oracle_t *o, uint64_t rings[PTO_RING_COUNT],
                            pto_error_t *err) {
  msgpack_object obj, items[64];
  memset(&obj, 0, sizeof(obj));
  if (o->count == 1) {
    obj.type = MSGPACK_OBJECT_POSITIVE_INTEGER;
    obj.via.u64 = o->all[0];
  } else {
    obj.type = MSGPACK_OBJECT_ARRAY;
    obj.via.array.size = (uint32_t)o->count;
    obj.via.array.ptr = items;
    for (size_t i = 0; i < o->count; i++) {
      memset(&items[i], 0, sizeof(items[i]));
      items[i].type = MSGPACK_OBJECT_POSITIVE_INTEGER;
      items[i].via.u64 = o->all[i];
    }
  }
  return pto_sizing_parse_msgpack(f, &obj, rings, err);
}

static void fill(uint64_t rings[PTO_RING_COUNT]) {
  for (int r = 0; r < PTO_RING_COUNT; r++) rings[r] = SENTINEL;
}

static void text_mode(pto_ring_field_t f, const char *text, bool suffixes) {
  const char *where = suffixes ? "pto_sizing_parse_config" : "pto_sizing_parse_env";
  uint64_t rings[PTO_RING_COUNT], other[PTO_RING_COUNT];
  pto_error_t err, err2;
  oracle_t o = judge_text(f, text, suffixes);
  int rc, rc2;

  fill(rings);
  pto_error_clear(&err);
  rc = suffixes ? pto_sizing_parse_config(f, text, rings, &err)
                : pto_sizing_parse_env(f, text, rings, &err);
  FUZZ_CHECK((rc == 0) == o.ok, "%s(\"%s\") returned %d (%s); the grammar says %s", where, text, rc,
             err.message, o.ok ? "valid" : "invalid");
  if (rc < 0) {
    check_failure(f, rc, &err, rings, where);
  } else {
    check_values(f, rings, where);
    FUZZ_CHECK(memcmp(rings, o.v, sizeof(rings)) == 0, "%s(\"%s\") read other values", where,
               text);
  }

  /* the same numbers as msgpack: the same verdict and message */
  if (o.numeric && o.count <= 64) {
    fill(other);
    pto_error_clear(&err2);
    rc2 = parse_as_msgpack(f, &o, other, &err2);
    FUZZ_CHECK(rc2 == rc, "\"%s\": text %d, msgpack %d", text, rc, rc2);
    if (rc < 0)
      FUZZ_CHECK(strcmp(err.message, err2.message) == 0, "\"%s\": text says \"%s\", msgpack \"%s\"",
                 text, err.message, err2.message);
    else
      FUZZ_CHECK(memcmp(rings, other, sizeof(rings)) == 0, "\"%s\": msgpack values differ", text);
  }

  if (suffixes) return;
  /* an environment value is a config value too (not the other way round:
   * "1G" is only a config value) */
  if (rc == 0) {
    fill(other);
    pto_error_clear(&err2);
    rc2 = pto_sizing_parse_config(f, text, other, &err2);
    FUZZ_CHECK(rc2 == 0 && memcmp(rings, other, sizeof(rings)) == 0,
               "\"%s\": accepted by parse_env, parse_config says %d (%s)", text, rc2, err2.message);
  }

  /* pto_sizing_from_environ with the variable set */
  {
    const char *var = pto_sizing_env_var(f);
    pto_sizing_t env;
    size_t vlen = strlen(var);
    FUZZ_CHECK(setenv(var, text, 1) == 0, "setenv failed");
    pto_error_clear(&err2);
    memset(&env, 0, sizeof(env));
    rc2 = pto_sizing_from_environ(&env, &err2);
    unsetenv(var);
    FUZZ_CHECK(rc2 == rc, "%s=\"%s\": from_environ %d, parse_env %d", var, text, rc2, rc);
    if (rc < 0) {
      fuzz_check_error(rc2, &err2, "pto_sizing_from_environ");
      FUZZ_CHECK(strcmp(err2.key, var) == 0, "from_environ: key \"%s\"", err2.key);
      FUZZ_CHECK(strncmp(err2.message, var, vlen) == 0 &&
                     strncmp(err2.message + vlen, ": ", 2) == 0 &&
                     strncmp(err2.message + vlen + 2, err.message,
                             strlen(err2.message) - vlen - 2) == 0,
                 "from_environ: \"%s\", parse_env: \"%s\"", err2.message, err.message);
    } else {
      for (int g = 0; g < PTO_FIELD_COUNT; g++)
        for (int r = 0; r < PTO_RING_COUNT; r++)
          FUZZ_CHECK(env.value[g][r] == (g == (int)f ? rings[r] : 0), "from_environ values");
    }
  }
}

static void msgpack_mode(pto_ring_field_t f, const uint8_t *data, size_t len) {
  msgpack_unpacked up;
  const msgpack_object *o;
  uint64_t rings[PTO_RING_COUNT];
  pto_error_t err;
  bool expect_ok;
  int rc;

  msgpack_unpacked_init(&up);
  if (!fuzz_unpack_exact(data, len, &up)) goto out;
  o = &up.data;
  fill(rings);
  pto_error_clear(&err);
  rc = pto_sizing_parse_msgpack(f, o, rings, &err);
  switch (o->type) {
    case MSGPACK_OBJECT_NIL: expect_ok = true; break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: expect_ok = pto_sizing_value_valid(f, o->via.u64); break;
    case MSGPACK_OBJECT_ARRAY:
      expect_ok = o->via.array.size == PTO_RING_COUNT;
      for (uint32_t i = 0; expect_ok && i < o->via.array.size; i++) {
        const msgpack_object *e = &o->via.array.ptr[i];
        expect_ok = e->type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
                    (e->via.u64 == 0 || pto_sizing_value_valid(f, e->via.u64));
      }
      break;
    default: expect_ok = false; break;
  }
  FUZZ_CHECK((rc == 0) == expect_ok, "pto_sizing_parse_msgpack returned %d (%s), expected %s", rc,
             err.message, expect_ok ? "success" : "failure");
  if (rc < 0) {
    check_failure(f, rc, &err, rings, "pto_sizing_parse_msgpack");
    goto out;
  }
  check_values(f, rings, "pto_sizing_parse_msgpack");
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    uint64_t want = o->type == MSGPACK_OBJECT_NIL                ? 0
                    : o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ? o->via.u64
                                                                 : o->via.array.ptr[r].via.u64;
    FUZZ_CHECK(rings[r] == want, "ring %d: %llu, expected %llu", r, (unsigned long long)rings[r],
               (unsigned long long)want);
  }
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    pto_error_t e2;
    pto_error_clear(&e2);
    FUZZ_CHECK(pto_sizing_check_value(f, o->via.u64, &e2) == 0, "check_value disagrees");
  }
out:
  msgpack_unpacked_destroy(&up);
}

static void size_mode(const char *s, size_t len) {
  uint64_t v = SENTINEL, want = 0;
  unsigned shift = 0;
  size_t digits = len;
  int expect = 0;
  bool overflow = false;
  int rc = pto_size_parse(s, len, &v);

  if (len > 0) shift = s[len - 1] == 'K' ? 10 : s[len - 1] == 'M' ? 20 : s[len - 1] == 'G' ? 30 : 0;
  if (shift) digits--;
  if (digits == 0) expect = -EINVAL;
  for (size_t i = 0; i < digits && expect == 0; i++) {
    if (s[i] < '0' || s[i] > '9')
      expect = -EINVAL;
    else if (__builtin_mul_overflow(want, 10, &want) ||
             __builtin_add_overflow(want, (uint64_t)(s[i] - '0'), &want))
      overflow = true;
  }
  if (expect == 0 && (overflow || (shift && want > (UINT64_MAX >> shift)))) expect = -ERANGE;
  FUZZ_CHECK(rc == expect, "pto_size_parse(\"%.*s\") returned %d, expected %d", (int)len, s, rc,
             expect);
  if (rc == 0)
    FUZZ_CHECK(v == want << shift, "pto_size_parse(\"%.*s\") = %llu, expected %llu", (int)len, s,
               (unsigned long long)v, (unsigned long long)(want << shift));
  else
    FUZZ_CHECK(v == SENTINEL, "pto_size_parse wrote its output on failure");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  pto_ring_field_t f;
  char *text;

  if (size < 1) return 0;
  f = (pto_ring_field_t)((data[0] >> 2) % PTO_FIELD_COUNT);
  switch (data[0] & 3) {
    case 0:
    case 1:
      text = malloc(size);
      memcpy(text, data + 1, size - 1);
      text[size - 1] = '\0';
      text_mode(f, text, (data[0] & 3) == 1);
      free(text);
      break;
    case 2: msgpack_mode(f, data + 1, size - 1); break;
    default:
      /* an exact-size copy, so ASan sees a read past the length */
      text = malloc(size - 1 ? size - 1 : 1);
      memcpy(text, data + 1, size - 1);
      size_mode(text, size - 1);
      free(text);
      break;
  }
  return 0;
}
