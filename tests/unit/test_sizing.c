/* SPDX-License-Identifier: Apache-2.0 */
/* The ring sizing vector (include/pto/sizing.h): parsing from msgpack, the
 * environment and the config file with RunConfig's exact messages, the
 * precedence chain with sources, the cache key and the formatters. */
#include <check.h>
#include <errno.h>
#include <inttypes.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/sizing.h>

#include "check_main.h"

#define TW PTO_FIELD_TASK_WINDOW
#define HEAP PTO_FIELD_HEAP
#define DEP PTO_FIELD_DEP_POOL
#define SENTINEL UINT64_C(0x5a5a5a5a5a5a5a5a)

/* ---- building msgpack values -------------------------------------------- */

/* Pack a value described by a tiny language, then decode it, so the parser
 * sees exactly what msgpack-c hands the daemon.  Space-separated items:
 *   uN  positive integer    iN  signed integer (negative ones decode as such)
 *   t f booleans            dX  float64          FX  float32
 *   sTEXT string            n   nil              [N  array header of N items
 *   {   empty map           B   4 bytes of bin */
typedef struct mp {
  msgpack_sbuffer sb;
  msgpack_unpacked up;
} mp_t;

static const msgpack_object *mp_build(mp_t *m, const char *spec) {
  msgpack_packer pk;
  msgpack_sbuffer_init(&m->sb);
  msgpack_packer_init(&pk, &m->sb, msgpack_sbuffer_write);
  char *copy = strdup(spec);
  for (char *tok = copy, *next; tok && *tok; tok = next) {
    next = strchr(tok, ' ');
    if (next) *next++ = '\0';
    switch (tok[0]) {
      case 'u': msgpack_pack_uint64(&pk, strtoull(tok + 1, NULL, 10)); break;
      case 'i': msgpack_pack_int64(&pk, strtoll(tok + 1, NULL, 10)); break;
      case 't': msgpack_pack_true(&pk); break;
      case 'f': msgpack_pack_false(&pk); break;
      case 'd': msgpack_pack_double(&pk, strtod(tok + 1, NULL)); break;
      case 'F': msgpack_pack_float(&pk, strtof(tok + 1, NULL)); break;
      case 's':
        msgpack_pack_str(&pk, strlen(tok + 1));
        msgpack_pack_str_body(&pk, tok + 1, strlen(tok + 1));
        break;
      case 'n': msgpack_pack_nil(&pk); break;
      case '[': msgpack_pack_array(&pk, (size_t)strtoul(tok + 1, NULL, 10)); break;
      case '{': msgpack_pack_map(&pk, 0); break;
      case 'B':
        msgpack_pack_bin(&pk, 4);
        msgpack_pack_bin_body(&pk, "abcd", 4);
        break;
      default: ck_abort_msg("bad spec item %s", tok);
    }
  }
  free(copy);
  msgpack_unpacked_init(&m->up);
  size_t off = 0;
  ck_assert_int_eq(msgpack_unpack_next(&m->up, m->sb.data, m->sb.size, &off),
                   MSGPACK_UNPACK_SUCCESS);
  return &m->up.data;
}

static void mp_free(mp_t *m) {
  msgpack_unpacked_destroy(&m->up);
  msgpack_sbuffer_destroy(&m->sb);
}

static int parse_mp(pto_ring_field_t field, const char *spec, uint64_t rings[4], pto_error_t *err) {
  mp_t m;
  for (int r = 0; r < 4; r++) rings[r] = SENTINEL;
  pto_error_clear(err);
  int rc = pto_sizing_parse_msgpack(field, mp_build(&m, spec), rings, err);
  mp_free(&m);
  return rc;
}

/* A rejected value: the code, the exact message, the key, and no output. */
static void expect_reject(int rc, const pto_error_t *err, const uint64_t rings[4], const char *key,
                          const char *message) {
  ck_assert_int_eq(rc, -PTO_E_INVALID_CONFIG);
  ck_assert_int_eq(err->code, PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err->message, message);
  ck_assert_str_eq(err->key, key);
  ck_assert_msg(err->hint[0] != '\0', "no hint for: %s", message);
  for (int r = 0; r < 4; r++) ck_assert_uint_eq(rings[r], SENTINEL);
}

static void expect_rings(const uint64_t rings[4], uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  ck_assert_uint_eq(rings[0], a);
  ck_assert_uint_eq(rings[1], b);
  ck_assert_uint_eq(rings[2], c);
  ck_assert_uint_eq(rings[3], d);
}

#define TW_MSG "ring_task_window must be a power of 2 >= 4, got "
#define HEAP_MSG "ring_heap must be a power of 2 >= 1024 (bytes per ring), got "
#define DEP_MSG "ring_dep_pool must be in [4, INT32_MAX], got "
#define TW_ENTRY "ring_task_window entries must be a power of 2 >= 4 (or 0 to keep default), got "
#define HEAP_ENTRY "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got "
#define DEP_ENTRY "ring_dep_pool entries must be in [4, INT32_MAX] (or 0 to keep default), got "

/* ---- msgpack: scalars ----------------------------------------------------- */

START_TEST(mp_nil_is_unset) {
  uint64_t rings[4];
  pto_error_t err;
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    ck_assert_int_eq(parse_mp((pto_ring_field_t)f, "n", rings, &err), 0);
    expect_rings(rings, 0, 0, 0, 0);
  }
  /* A NULL object (key absent) is unset too. */
  for (int r = 0; r < 4; r++) rings[r] = SENTINEL;
  ck_assert_int_eq(pto_sizing_parse_msgpack(HEAP, NULL, rings, &err), 0);
  expect_rings(rings, 0, 0, 0, 0);
}
END_TEST

START_TEST(mp_scalar_applies_to_all_rings) {
  uint64_t rings[4];
  pto_error_t err;
  ck_assert_int_eq(parse_mp(TW, "u128", rings, &err), 0);
  expect_rings(rings, 128, 128, 128, 128);
  ck_assert_int_eq(parse_mp(HEAP, "u536870912", rings, &err), 0);
  expect_rings(rings, 536870912, 536870912, 536870912, 536870912);
  ck_assert_int_eq(parse_mp(DEP, "u5", rings, &err), 0);
  expect_rings(rings, 5, 5, 5, 5);
}
END_TEST

START_TEST(mp_scalar_bounds) {
  uint64_t rings[4];
  pto_error_t err;
  /* accepted edges */
  ck_assert_int_eq(parse_mp(TW, "u4", rings, &err), 0);
  ck_assert_int_eq(parse_mp(TW, "u1073741824", rings, &err), 0);
  ck_assert_int_eq(parse_mp(HEAP, "u1024", rings, &err), 0);
  ck_assert_int_eq(parse_mp(HEAP, "u1099511627776", rings, &err), 0);       /* 2^40 */
  ck_assert_int_eq(parse_mp(HEAP, "u9223372036854775808", rings, &err), 0); /* 2^63: no cap */
  ck_assert_int_eq(parse_mp(DEP, "u4", rings, &err), 0);
  ck_assert_int_eq(parse_mp(DEP, "u2147483647", rings, &err), 0);
  ck_assert_int_eq(parse_mp(DEP, "u1000", rings, &err), 0); /* no power of 2 needed */

  expect_reject(parse_mp(TW, "u3", rings, &err), &err, rings, "ring_task_window", TW_MSG "3");
  expect_reject(parse_mp(TW, "u2", rings, &err), &err, rings, "ring_task_window", TW_MSG "2");
  expect_reject(parse_mp(TW, "u6", rings, &err), &err, rings, "ring_task_window", TW_MSG "6");
  expect_reject(parse_mp(TW, "u2147483648", rings, &err), &err, rings, "ring_task_window",
                TW_MSG "2147483648");
  expect_reject(parse_mp(HEAP, "u1000", rings, &err), &err, rings, "ring_heap", HEAP_MSG "1000");
  expect_reject(parse_mp(HEAP, "u512", rings, &err), &err, rings, "ring_heap", HEAP_MSG "512");
  expect_reject(parse_mp(HEAP, "u1536", rings, &err), &err, rings, "ring_heap", HEAP_MSG "1536");
  expect_reject(parse_mp(DEP, "u3", rings, &err), &err, rings, "ring_dep_pool", DEP_MSG "3");
  expect_reject(parse_mp(DEP, "u2147483648", rings, &err), &err, rings, "ring_dep_pool",
                DEP_MSG "2147483648");
  expect_reject(parse_mp(DEP, "u18446744073709551615", rings, &err), &err, rings, "ring_dep_pool",
                DEP_MSG "18446744073709551615");
}
END_TEST

START_TEST(mp_scalar_zero_rejected) {
  uint64_t rings[4];
  pto_error_t err;
  expect_reject(parse_mp(TW, "u0", rings, &err), &err, rings, "ring_task_window", TW_MSG "0");
  expect_reject(parse_mp(HEAP, "u0", rings, &err), &err, rings, "ring_heap", HEAP_MSG "0");
  expect_reject(parse_mp(DEP, "u0", rings, &err), &err, rings, "ring_dep_pool", DEP_MSG "0");
}
END_TEST

START_TEST(mp_scalar_wrong_types) {
  uint64_t rings[4];
  pto_error_t err;
  expect_reject(parse_mp(HEAP, "i-5", rings, &err), &err, rings, "ring_heap", HEAP_MSG "-5");
  expect_reject(parse_mp(HEAP, "i-9223372036854775807", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "-9223372036854775807");
  expect_reject(parse_mp(HEAP, "t", rings, &err), &err, rings, "ring_heap", HEAP_MSG "true");
  expect_reject(parse_mp(HEAP, "f", rings, &err), &err, rings, "ring_heap", HEAP_MSG "false");
  expect_reject(parse_mp(HEAP, "d1.5", rings, &err), &err, rings, "ring_heap", HEAP_MSG "1.5");
  expect_reject(parse_mp(HEAP, "F1.5", rings, &err), &err, rings, "ring_heap", HEAP_MSG "1.5");
  expect_reject(parse_mp(HEAP, "d2048", rings, &err), &err, rings, "ring_heap", HEAP_MSG "2048.0");
  expect_reject(parse_mp(TW, "d0.1", rings, &err), &err, rings, "ring_task_window", TW_MSG "0.1");
  expect_reject(parse_mp(HEAP, "s1M", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"1M\"");
  expect_reject(parse_mp(DEP, "s16384", rings, &err), &err, rings, "ring_dep_pool",
                DEP_MSG "\"16384\"");
  expect_reject(parse_mp(DEP, "{", rings, &err), &err, rings, "ring_dep_pool", DEP_MSG "a map of 0");
  expect_reject(parse_mp(DEP, "B", rings, &err), &err, rings, "ring_dep_pool",
                DEP_MSG "a bin of 4 bytes");
  expect_reject(parse_mp(TW, "t", rings, &err), &err, rings, "ring_task_window", TW_MSG "true");
  expect_reject(parse_mp(DEP, "f", rings, &err), &err, rings, "ring_dep_pool", DEP_MSG "false");
}
END_TEST

START_TEST(mp_string_is_quoted_and_escaped) {
  uint64_t rings[4];
  pto_error_t err;
  mp_t m;
  msgpack_packer pk;
  /* a quote and a control byte must not break the message */
  msgpack_sbuffer_init(&m.sb);
  msgpack_packer_init(&pk, &m.sb, msgpack_sbuffer_write);
  msgpack_pack_str(&pk, 4);
  msgpack_pack_str_body(&pk, "a\"\n1", 4);
  msgpack_unpacked_init(&m.up);
  size_t off = 0;
  ck_assert_int_eq(msgpack_unpack_next(&m.up, m.sb.data, m.sb.size, &off), MSGPACK_UNPACK_SUCCESS);
  for (int r = 0; r < 4; r++) rings[r] = SENTINEL;
  pto_error_clear(&err);
  expect_reject(pto_sizing_parse_msgpack(HEAP, &m.up.data, rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"a\\\"\\x0a1\"");
  mp_free(&m);

  /* a long string is cut, not allowed to push the message past its buffer */
  char spec[300] = "s";
  memset(spec + 1, 'x', 250);
  spec[251] = '\0';
  ck_assert_int_eq(parse_mp(HEAP, spec, rings, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_ptr_nonnull(strstr(err.message, "got \"xxxx"));
  ck_assert_ptr_nonnull(strstr(err.message, "...\""));
  ck_assert_uint_lt(strlen(err.message), 200);
}
END_TEST

/* ---- msgpack: lists ---------------------------------------------------------- */

START_TEST(mp_list_per_ring) {
  uint64_t rings[4];
  pto_error_t err;
  ck_assert_int_eq(parse_mp(TW, "[4 u256 u128 u64 u4", rings, &err), 0);
  expect_rings(rings, 256, 128, 64, 4);
  /* 0 keeps the ring's lower-precedence value */
  ck_assert_int_eq(parse_mp(HEAP, "[4 u536870912 u0 u0 u0", rings, &err), 0);
  expect_rings(rings, 536870912, 0, 0, 0);
  ck_assert_int_eq(parse_mp(DEP, "[4 u0 u7 u0 u2147483647", rings, &err), 0);
  expect_rings(rings, 0, 7, 0, 2147483647);
  /* all zeros: nothing set here */
  ck_assert_int_eq(parse_mp(HEAP, "[4 u0 u0 u0 u0", rings, &err), 0);
  expect_rings(rings, 0, 0, 0, 0);
}
END_TEST

START_TEST(mp_list_length) {
  uint64_t rings[4];
  pto_error_t err;
  expect_reject(parse_mp(HEAP, "[3 u1024 u1024 u1024", rings, &err), &err, rings, "ring_heap",
                "ring_heap must have exactly 4 entries (one per scope-depth ring), got 3");
  expect_reject(parse_mp(HEAP, "[5 u1024 u1024 u1024 u1024 u1024", rings, &err), &err, rings,
                "ring_heap",
                "ring_heap must have exactly 4 entries (one per scope-depth ring), got 5");
  expect_reject(parse_mp(TW, "[0", rings, &err), &err, rings, "ring_task_window",
                "ring_task_window must have exactly 4 entries (one per scope-depth ring), got 0");
  expect_reject(parse_mp(DEP, "[1 u16", rings, &err), &err, rings, "ring_dep_pool",
                "ring_dep_pool must have exactly 4 entries (one per scope-depth ring), got 1");
}
END_TEST

START_TEST(mp_list_bad_entries) {
  uint64_t rings[4];
  pto_error_t err;
  expect_reject(parse_mp(HEAP, "[4 u1024 u1000 u0 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "1000");
  expect_reject(parse_mp(TW, "[4 u3 u0 u0 u0", rings, &err), &err, rings, "ring_task_window",
                TW_ENTRY "3");
  expect_reject(parse_mp(TW, "[4 u0 u0 u0 u2147483648", rings, &err), &err, rings,
                "ring_task_window", TW_ENTRY "2147483648");
  expect_reject(parse_mp(DEP, "[4 u2 u0 u0 u0", rings, &err), &err, rings, "ring_dep_pool",
                DEP_ENTRY "2");
  expect_reject(parse_mp(DEP, "[4 u0 u2147483648 u0 u0", rings, &err), &err, rings, "ring_dep_pool",
                DEP_ENTRY "2147483648");
  /* False must not pose as 0, nor True as 1. */
  expect_reject(parse_mp(HEAP, "[4 f u0 u0 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "false");
  expect_reject(parse_mp(HEAP, "[4 u1024 t u0 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "true");
  expect_reject(parse_mp(HEAP, "[4 u0 u0 d1024 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "1024.0");
  expect_reject(parse_mp(HEAP, "[4 u0 u0 u0 s1M", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "\"1M\"");
  expect_reject(parse_mp(HEAP, "[4 i-1024 u0 u0 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "-1024");
  expect_reject(parse_mp(HEAP, "[4 n u0 u0 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "nil");
  expect_reject(parse_mp(HEAP, "[4 [1 u1024 u0 u0 u0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "an array of 1");
}
END_TEST

/* ---- environment and config text ------------------------------------------- */

static int parse_env(pto_ring_field_t f, const char *text, uint64_t rings[4], pto_error_t *err) {
  for (int r = 0; r < 4; r++) rings[r] = SENTINEL;
  pto_error_clear(err);
  return pto_sizing_parse_env(f, text, rings, err);
}

static int parse_cfg(pto_ring_field_t f, const char *text, uint64_t rings[4], pto_error_t *err) {
  for (int r = 0; r < 4; r++) rings[r] = SENTINEL;
  pto_error_clear(err);
  return pto_sizing_parse_config(f, text, rings, err);
}

START_TEST(env_forms) {
  uint64_t rings[4];
  pto_error_t err;
  ck_assert_int_eq(parse_env(HEAP, "1024", rings, &err), 0);
  expect_rings(rings, 1024, 1024, 1024, 1024);
  ck_assert_int_eq(parse_env(HEAP, "536870912,0,1024,0", rings, &err), 0);
  expect_rings(rings, 536870912, 0, 1024, 0);
  ck_assert_int_eq(parse_env(TW, " 128 , 0,64 ,\t4 ", rings, &err), 0);
  expect_rings(rings, 128, 0, 64, 4);
  ck_assert_int_eq(parse_env(DEP, "0,0,0,0", rings, &err), 0);
  expect_rings(rings, 0, 0, 0, 0);
  ck_assert_int_eq(parse_env(DEP, "01024", rings, &err), 0);
  expect_rings(rings, 1024, 1024, 1024, 1024);
}
END_TEST

START_TEST(env_rejects) {
  uint64_t rings[4];
  pto_error_t err;
  expect_reject(parse_env(HEAP, "1000", rings, &err), &err, rings, "ring_heap", HEAP_MSG "1000");
  expect_reject(parse_env(HEAP, "0", rings, &err), &err, rings, "ring_heap", HEAP_MSG "0");
  expect_reject(parse_env(HEAP, "-5", rings, &err), &err, rings, "ring_heap", HEAP_MSG "-5");
  expect_reject(parse_env(HEAP, "", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"\"");
  expect_reject(parse_env(HEAP, "   ", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"\"");
  expect_reject(parse_env(HEAP, "12x", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"12x\"");
  expect_reject(parse_env(HEAP, "1.5", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"1.5\"");
  expect_reject(parse_env(HEAP, "true", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"true\"");
  expect_reject(parse_env(HEAP, "0x400", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"0x400\"");
  expect_reject(parse_env(HEAP, "+1024", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"+1024\"");
  /* no size suffixes in the environment */
  expect_reject(parse_env(HEAP, "512M", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"512M\"");
  /* past UINT64_MAX: rejected, never wrapped to a small valid value */
  expect_reject(parse_env(HEAP, "18446744073709552640", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"18446744073709552640\"");
  expect_reject(parse_env(HEAP, "18446744073709551615", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "18446744073709551615");
  /* lists */
  expect_reject(parse_env(HEAP, "1024,1024,1024", rings, &err), &err, rings, "ring_heap",
                "ring_heap must have exactly 4 entries (one per scope-depth ring), got 3");
  expect_reject(parse_env(HEAP, "1024,1024,1024,1024,1024", rings, &err), &err, rings, "ring_heap",
                "ring_heap must have exactly 4 entries (one per scope-depth ring), got 5");
  expect_reject(parse_env(HEAP, "1024,1024,1024,1024,", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "\"\"");
  expect_reject(parse_env(HEAP, "1024,1024,1024,", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "\"\"");
  expect_reject(parse_env(HEAP, ",1024,1024,1024", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "\"\"");
  expect_reject(parse_env(HEAP, "1024,abc,0,0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "\"abc\"");
  expect_reject(parse_env(HEAP, "1024,1000,0,0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "1000");
  expect_reject(parse_env(HEAP, "1024,-1,0,0", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "-1");
  expect_reject(parse_env(TW, "4,4,4,3", rings, &err), &err, rings, "ring_task_window",
                TW_ENTRY "3");
  expect_reject(parse_env(DEP, "2,4,4,4", rings, &err), &err, rings, "ring_dep_pool",
                DEP_ENTRY "2");
  expect_reject(parse_env(TW, "1 024", rings, &err), &err, rings, "ring_task_window",
                TW_MSG "\"1 024\"");
}
END_TEST

START_TEST(config_suffixes) {
  uint64_t rings[4];
  pto_error_t err;
  ck_assert_int_eq(parse_cfg(HEAP, "512M", rings, &err), 0);
  expect_rings(rings, UINT64_C(512) << 20, UINT64_C(512) << 20, UINT64_C(512) << 20,
               UINT64_C(512) << 20);
  ck_assert_int_eq(parse_cfg(HEAP, "256M,0,0,0", rings, &err), 0);
  expect_rings(rings, UINT64_C(256) << 20, 0, 0, 0);
  ck_assert_int_eq(parse_cfg(HEAP, "1G, 1K ,0, 1048576", rings, &err), 0);
  expect_rings(rings, UINT64_C(1) << 30, 1024, 0, 1048576);
  ck_assert_int_eq(parse_cfg(TW, "16K", rings, &err), 0);
  expect_rings(rings, 16384, 16384, 16384, 16384);
  ck_assert_int_eq(parse_cfg(DEP, "0K,0,0,0", rings, &err), 0);
  expect_rings(rings, 0, 0, 0, 0);

  expect_reject(parse_cfg(HEAP, "1000", rings, &err), &err, rings, "ring_heap", HEAP_MSG "1000");
  expect_reject(parse_cfg(HEAP, "1000K", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "1024000");
  expect_reject(parse_cfg(HEAP, "512m", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"512m\"");
  expect_reject(parse_cfg(HEAP, "512MiB", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"512MiB\"");
  expect_reject(parse_cfg(HEAP, "512 M", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"512 M\"");
  expect_reject(parse_cfg(HEAP, "M", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"M\"");
  expect_reject(parse_cfg(HEAP, "1T", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"1T\"");
  expect_reject(parse_cfg(HEAP, "17179869184G", rings, &err), &err, rings, "ring_heap",
                HEAP_MSG "\"17179869184G\"");
  expect_reject(parse_cfg(TW, "2G", rings, &err), &err, rings, "ring_task_window",
                TW_MSG "2147483648");
  expect_reject(parse_cfg(DEP, "2G", rings, &err), &err, rings, "ring_dep_pool",
                DEP_MSG "2147483648");
  expect_reject(parse_cfg(HEAP, "1M,1M,1M,", rings, &err), &err, rings, "ring_heap",
                HEAP_ENTRY "\"\"");
  expect_reject(parse_cfg(HEAP, "1M,1M", rings, &err), &err, rings, "ring_heap",
                "ring_heap must have exactly 4 entries (one per scope-depth ring), got 2");
  expect_reject(parse_cfg(HEAP, "-1M", rings, &err), &err, rings, "ring_heap", HEAP_MSG "\"-1M\"");
}
END_TEST

START_TEST(size_parse) {
  uint64_t v = 0;
  ck_assert_int_eq(pto_size_parse("0", 1, &v), 0);
  ck_assert_uint_eq(v, 0);
  ck_assert_int_eq(pto_size_parse("1K", 2, &v), 0);
  ck_assert_uint_eq(v, 1024);
  ck_assert_int_eq(pto_size_parse("3M", 2, &v), 0);
  ck_assert_uint_eq(v, UINT64_C(3) << 20);
  ck_assert_int_eq(pto_size_parse("4G", 2, &v), 0);
  ck_assert_uint_eq(v, UINT64_C(4) << 30);
  ck_assert_int_eq(pto_size_parse("18446744073709551615", 20, &v), 0);
  ck_assert_uint_eq(v, UINT64_MAX);
  ck_assert_int_eq(pto_size_parse("17179869183G", 12, &v), 0);
  ck_assert_uint_eq(v, UINT64_C(17179869183) << 30);
  /* len bounds the text: "64Mxyz" read as its first 3 bytes */
  ck_assert_int_eq(pto_size_parse("64Mxyz", 3, &v), 0);
  ck_assert_uint_eq(v, UINT64_C(64) << 20);

  ck_assert_int_eq(pto_size_parse("18446744073709551616", 20, &v), -ERANGE);
  ck_assert_int_eq(pto_size_parse("17179869184G", 12, &v), -ERANGE);
  ck_assert_int_eq(pto_size_parse("99999999999999999999999", 23, &v), -ERANGE);
  ck_assert_int_eq(pto_size_parse("", 0, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse("K", 1, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse("1k", 2, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse("1KB", 3, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse("1T", 2, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse("-1", 2, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse(" 1", 2, &v), -EINVAL);
  ck_assert_int_eq(pto_size_parse("99999999999999999999x", 21, &v), -EINVAL);
}
END_TEST

START_TEST(environ_reads_variables) {
  pto_sizing_t env;
  pto_error_t err;
  unsetenv("PTO2_RING_TASK_WINDOW");
  unsetenv("PTO2_RING_HEAP");
  unsetenv("PTO2_RING_DEP_POOL");
  ck_assert_int_eq(pto_sizing_from_environ(&env, &err), 0);
  for (int f = 0; f < PTO_FIELD_COUNT; f++) expect_rings(env.value[f], 0, 0, 0, 0);

  setenv("PTO2_RING_TASK_WINDOW", "131072", 1);
  setenv("PTO2_RING_HEAP", "536870912,0,0,1024", 1);
  setenv("PTO2_RING_DEP_POOL", "0,0,0,131072", 1);
  ck_assert_int_eq(pto_sizing_from_environ(&env, &err), 0);
  expect_rings(env.value[TW], 131072, 131072, 131072, 131072);
  expect_rings(env.value[HEAP], 536870912, 0, 0, 1024);
  expect_rings(env.value[DEP], 0, 0, 0, 131072);
}
END_TEST

START_TEST(environ_names_the_variable) {
  pto_sizing_t env;
  pto_error_t err;
  memset(&env, 0x5a, sizeof(env));
  setenv("PTO2_RING_HEAP", "1000", 1);
  ck_assert_int_eq(pto_sizing_from_environ(&env, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_int_eq(err.code, PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message,
                   "PTO2_RING_HEAP: ring_heap must be a power of 2 >= 1024 (bytes per ring), "
                   "got 1000");
  ck_assert_str_eq(err.key, "PTO2_RING_HEAP");
  ck_assert_uint_eq(env.value[0][0], UINT64_C(0x5a5a5a5a5a5a5a5a)); /* untouched */

  unsetenv("PTO2_RING_HEAP");
  setenv("PTO2_RING_TASK_WINDOW", "64,64,64", 1);
  ck_assert_int_eq(pto_sizing_from_environ(&env, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message,
                   "PTO2_RING_TASK_WINDOW: ring_task_window must have exactly 4 "
                   "entries (one per scope-depth ring), got 3");
  ck_assert_str_eq(err.key, "PTO2_RING_TASK_WINDOW");

  unsetenv("PTO2_RING_TASK_WINDOW");
  setenv("PTO2_RING_DEP_POOL", "", 1);
  ck_assert_int_eq(pto_sizing_from_environ(&env, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message,
                   "PTO2_RING_DEP_POOL: ring_dep_pool must be in [4, INT32_MAX], "
                   "got \"\"");
}
END_TEST

START_TEST(check_value_messages) {
  pto_error_t err;
  ck_assert_int_eq(pto_sizing_check_value(HEAP, 1024, &err), 0);
  ck_assert_int_eq(pto_sizing_check_value(HEAP, 1000, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, HEAP_MSG "1000");
  ck_assert_str_eq(err.key, "ring_heap");
  ck_assert_str_eq(err.hint, "Use 1024 or a larger power of 2.");
  ck_assert_int_eq(pto_sizing_check_value(HEAP, 3000, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.hint, "Use a power of 2 such as 2048 or 4096.");
  ck_assert_int_eq(pto_sizing_check_value(TW, UINT64_C(1) << 31, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, TW_MSG "2147483648");
  ck_assert_str_eq(err.hint, "Use a power of 2 from 4 to 1073741824 (2^30).");
  ck_assert_int_eq(pto_sizing_check_value(DEP, 0, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, DEP_MSG "0");
  /* err may be NULL */
  ck_assert_int_eq(pto_sizing_check_value(DEP, 1, NULL), -PTO_E_INVALID_CONFIG);
}
END_TEST

START_TEST(value_valid_table) {
  static const struct {
    int field;
    uint64_t value;
    bool ok;
  } cases[] = {
      {TW, 0, false},
      {TW, 2, false},
      {TW, 4, true},
      {TW, 5, false},
      {TW, 16384, true},
      {TW, UINT64_C(1) << 30, true},
      {TW, UINT64_C(1) << 31, false},
      {TW, UINT64_C(1) << 63, false},
      {HEAP, 0, false},
      {HEAP, 512, false},
      {HEAP, 1024, true},
      {HEAP, 1025, false},
      {HEAP, UINT64_C(1) << 63, true},
      {HEAP, UINT64_MAX, false},
      {DEP, 0, false},
      {DEP, 3, false},
      {DEP, 4, true},
      {DEP, 12345, true},
      {DEP, INT32_MAX, true},
      {DEP, (uint64_t)INT32_MAX + 1, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    ck_assert_msg(
        pto_sizing_value_valid((pto_ring_field_t)cases[i].field, cases[i].value) == cases[i].ok,
        "field %d value %" PRIu64, cases[i].field, cases[i].value);
}
END_TEST

START_TEST(names) {
  ck_assert_str_eq(pto_sizing_field_key(TW), "ring_task_window");
  ck_assert_str_eq(pto_sizing_field_key(HEAP), "ring_heap");
  ck_assert_str_eq(pto_sizing_field_key(DEP), "ring_dep_pool");
  ck_assert_str_eq(pto_sizing_field_name(TW), "task_window");
  ck_assert_str_eq(pto_sizing_field_name(HEAP), "heap");
  ck_assert_str_eq(pto_sizing_field_name(DEP), "dep_pool");
  ck_assert_str_eq(pto_sizing_env_var(TW), "PTO2_RING_TASK_WINDOW");
  ck_assert_str_eq(pto_sizing_env_var(HEAP), "PTO2_RING_HEAP");
  ck_assert_str_eq(pto_sizing_env_var(DEP), "PTO2_RING_DEP_POOL");
  ck_assert_ptr_null(pto_sizing_field_key((pto_ring_field_t)3));
  ck_assert_ptr_null(pto_sizing_field_name((pto_ring_field_t)-1));
  ck_assert_str_eq(pto_sizing_source_name(PTO_SOURCE_DEFAULT), "default");
  ck_assert_str_eq(pto_sizing_source_name(PTO_SOURCE_CONFIG), "config");
  ck_assert_str_eq(pto_sizing_source_name(PTO_SOURCE_ENV), "env");
  ck_assert_str_eq(pto_sizing_source_name(PTO_SOURCE_REQUEST), "request");
  ck_assert_ptr_null(pto_sizing_source_name((pto_sizing_source_t)4));

  ck_assert_int_eq(pto_sizing_field_from_key("ring_task_window", 16), TW);
  ck_assert_int_eq(pto_sizing_field_from_key("heap", 4), HEAP);
  ck_assert_int_eq(pto_sizing_field_from_key("ring_dep_pool", 13), DEP);
  ck_assert_int_eq(pto_sizing_field_from_key("dep_pool", 8), DEP);
  /* msgpack strings are not NUL-terminated: the length decides */
  ck_assert_int_eq(pto_sizing_field_from_key("ring_heapXYZ", 9), HEAP);
  ck_assert_int_eq(pto_sizing_field_from_key("ring_heap", 8), -1);
  ck_assert_int_eq(pto_sizing_field_from_key("Heap", 4), -1);
  ck_assert_int_eq(pto_sizing_field_from_key("", 0), -1);
  ck_assert_int_eq(pto_sizing_field_from_key(NULL, 0), -1);
}
END_TEST

/* ---- precedence ------------------------------------------------------------- */

static const uint64_t level_value[PTO_FIELD_COUNT][3] = {
    /* request, env, config: distinct valid values per field */
    {64, 128, 256},
    {UINT64_C(1) << 20, UINT64_C(2) << 20, UINT64_C(4) << 20},
    {100, 200, 300},
};
static const uint64_t default_value[PTO_FIELD_COUNT] = {16384, UINT64_C(256) << 20, 16384};

START_TEST(precedence_matrix) {
  /* Every field, every ring, every combination of levels set for that one
   * cell: the highest set level wins, and no other cell moves. */
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      for (unsigned mask = 0; mask < 8; mask++) {
        pto_sizing_t req, env, cfg;
        memset(&req, 0, sizeof(req));
        memset(&env, 0, sizeof(env));
        memset(&cfg, 0, sizeof(cfg));
        if (mask & 1) req.value[f][r] = level_value[f][0];
        if (mask & 2) env.value[f][r] = level_value[f][1];
        if (mask & 4) cfg.value[f][r] = level_value[f][2];
        pto_sizing_resolved_t out;
        pto_sizing_resolve(&req, &env, &cfg, &out);
        uint64_t want;
        int src;
        if (mask & 1) {
          want = level_value[f][0];
          src = PTO_SOURCE_REQUEST;
        } else if (mask & 2) {
          want = level_value[f][1];
          src = PTO_SOURCE_ENV;
        } else if (mask & 4) {
          want = level_value[f][2];
          src = PTO_SOURCE_CONFIG;
        } else {
          want = default_value[f];
          src = PTO_SOURCE_DEFAULT;
        }
        for (int f2 = 0; f2 < PTO_FIELD_COUNT; f2++) {
          for (int r2 = 0; r2 < PTO_RING_COUNT; r2++) {
            bool cell = f2 == f && r2 == r;
            ck_assert_msg(out.value[f2][r2] == (cell ? want : default_value[f2]),
                          "f=%d r=%d mask=%u: [%d][%d] = %" PRIu64, f, r, mask, f2, r2,
                          out.value[f2][r2]);
            ck_assert_int_eq(out.source[f2][r2], cell ? src : PTO_SOURCE_DEFAULT);
          }
        }
      }
    }
  }
}
END_TEST

START_TEST(precedence_lists_fall_through_per_ring) {
  uint64_t rings[4];
  pto_error_t err;
  pto_sizing_t req, env, cfg;
  memset(&req, 0, sizeof(req));
  memset(&env, 0, sizeof(env));
  memset(&cfg, 0, sizeof(cfg));
  ck_assert_int_eq(parse_mp(HEAP, "[4 u0 u2048 u0 u0", rings, &err), 0);
  memcpy(req.value[HEAP], rings, sizeof(rings));
  ck_assert_int_eq(pto_sizing_parse_env(HEAP, "4096,4096,0,0", env.value[HEAP], &err), 0);
  ck_assert_int_eq(pto_sizing_parse_config(HEAP, "8K,8K,8K,0", cfg.value[HEAP], &err), 0);
  ck_assert_int_eq(pto_sizing_parse_config(TW, "1K", cfg.value[TW], &err), 0);
  pto_sizing_resolved_t out;
  pto_sizing_resolve(&req, &env, &cfg, &out);
  expect_rings(out.value[HEAP], 4096, 2048, 8192, UINT64_C(256) << 20);
  ck_assert_int_eq(out.source[HEAP][0], PTO_SOURCE_ENV);
  ck_assert_int_eq(out.source[HEAP][1], PTO_SOURCE_REQUEST);
  ck_assert_int_eq(out.source[HEAP][2], PTO_SOURCE_CONFIG);
  ck_assert_int_eq(out.source[HEAP][3], PTO_SOURCE_DEFAULT);
  expect_rings(out.value[TW], 1024, 1024, 1024, 1024);
  for (int r = 0; r < 4; r++) ck_assert_int_eq(out.source[TW][r], PTO_SOURCE_CONFIG);
  expect_rings(out.value[DEP], 16384, 16384, 16384, 16384);

  /* NULL levels are "nothing set there" */
  pto_sizing_resolve(NULL, NULL, NULL, &out);
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < 4; r++) {
      ck_assert_uint_eq(out.value[f][r], default_value[f]);
      ck_assert_int_eq(out.source[f][r], PTO_SOURCE_DEFAULT);
    }
  pto_sizing_resolve(NULL, &env, NULL, &out);
  ck_assert_int_eq(out.source[HEAP][1], PTO_SOURCE_ENV);
}
END_TEST

START_TEST(from_resolved_round_trips) {
  pto_sizing_t cfg, back;
  pto_error_t err;
  memset(&cfg, 0, sizeof(cfg));
  ck_assert_int_eq(pto_sizing_parse_config(HEAP, "512M,0,1G,0", cfg.value[HEAP], &err), 0);
  pto_sizing_resolved_t a, b;
  pto_sizing_resolve(NULL, NULL, &cfg, &a);
  pto_sizing_from_resolved(&a, &back);
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < 4; r++) ck_assert_uint_eq(back.value[f][r], a.value[f][r]);
  /* as a request it reproduces the same vector, every value from the request */
  pto_sizing_resolve(&back, NULL, NULL, &b);
  ck_assert(pto_sizing_equal(&a, &b));
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < 4; r++) ck_assert_int_eq(b.source[f][r], PTO_SOURCE_REQUEST);
}
END_TEST

/* ---- the key ------------------------------------------------------------------ */

static uint64_t fnv1a(const unsigned char *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ULL; /* 14695981039346656037 */
  for (size_t i = 0; i < n; i++) {
    h ^= p[i];
    h *= 0x100000001b3ULL; /* 1099511628211 */
  }
  return h;
}

/* The documented layout, written out independently: ring by ring,
 * task_window[r], heap[r], dep_pool[r], each as 8 little-endian bytes. */
static uint64_t reference_key(const pto_sizing_resolved_t *s) {
  unsigned char bytes[96];
  size_t o = 0;
  for (int r = 0; r < 4; r++) {
    const uint64_t v3[3] = {s->value[TW][r], s->value[HEAP][r], s->value[DEP][r]};
    for (int i = 0; i < 3; i++)
      for (int b = 0; b < 8; b++) bytes[o++] = (unsigned char)(v3[i] >> (8 * b));
  }
  return fnv1a(bytes, sizeof(bytes));
}

START_TEST(key_fnv_vectors) {
  /* the reference FNV-1a-64 itself, against published vectors */
  ck_assert_uint_eq(fnv1a((const unsigned char *)"", 0), 0xcbf29ce484222325ULL);
  ck_assert_uint_eq(fnv1a((const unsigned char *)"a", 1), 0xaf63dc4c8601ec8cULL);
  ck_assert_uint_eq(fnv1a((const unsigned char *)"foobar", 6), 0x85944171f73967e8ULL);

  pto_sizing_resolved_t s;
  pto_sizing_resolve(NULL, NULL, NULL, &s);
  ck_assert_uint_eq(pto_sizing_key(&s), reference_key(&s));
  /* pinned (computed outside this code base): the key of the built-in
   * defaults is what clients see in status before any dispatch */
  ck_assert_uint_eq(pto_sizing_key(&s), 0xef9b6111db51b6a5ULL);
  s.value[HEAP][2] = UINT64_C(1) << 40;
  s.value[TW][3] = 4;
  s.value[DEP][0] = 2147483647;
  ck_assert_uint_eq(pto_sizing_key(&s), reference_key(&s));

  char hex[17];
  pto_sizing_key_hex(0x1, hex);
  ck_assert_str_eq(hex, "0000000000000001");
  pto_sizing_key_hex(0xcbf29ce484222325ULL, hex);
  ck_assert_str_eq(hex, "cbf29ce484222325");
}
END_TEST

START_TEST(key_equal_however_spelled) {
  pto_error_t err;
  uint64_t rings[4];
  /* unset vs every default written out */
  pto_sizing_t explicit_defaults;
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < 4; r++) explicit_defaults.value[f][r] = default_value[f];
  pto_sizing_resolved_t unset, spelled;
  pto_sizing_resolve(NULL, NULL, NULL, &unset);
  pto_sizing_resolve(&explicit_defaults, NULL, NULL, &spelled);
  ck_assert(pto_sizing_equal(&unset, &spelled));
  ck_assert_uint_eq(pto_sizing_key(&unset), pto_sizing_key(&spelled));

  /* scalar vs list of four, and a level vs another level */
  pto_sizing_t a, b, c;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  memset(&c, 0, sizeof(c));
  ck_assert_int_eq(parse_mp(HEAP, "u536870912", rings, &err), 0);
  memcpy(a.value[HEAP], rings, sizeof(rings));
  ck_assert_int_eq(parse_mp(HEAP, "[4 u536870912 u536870912 u536870912 u536870912", rings, &err),
                   0);
  memcpy(b.value[HEAP], rings, sizeof(rings));
  ck_assert_int_eq(pto_sizing_parse_config(HEAP, "512M", c.value[HEAP], &err), 0);
  pto_sizing_resolved_t ra, rb, rc;
  pto_sizing_resolve(&a, NULL, NULL, &ra);
  pto_sizing_resolve(&b, NULL, NULL, &rb);
  pto_sizing_resolve(NULL, NULL, &c, &rc);
  ck_assert(pto_sizing_equal(&ra, &rb));
  ck_assert(pto_sizing_equal(&ra, &rc));
  ck_assert_uint_eq(pto_sizing_key(&ra), pto_sizing_key(&rb));
  ck_assert_uint_eq(pto_sizing_key(&ra), pto_sizing_key(&rc));
  ck_assert(!pto_sizing_equal(&ra, &unset));
}
END_TEST

START_TEST(key_differs_in_any_value) {
  pto_sizing_resolved_t base;
  pto_sizing_resolve(NULL, NULL, NULL, &base);
  uint64_t k0 = pto_sizing_key(&base);
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      pto_sizing_resolved_t s = base;
      s.value[f][r] *= 2;
      ck_assert_msg(pto_sizing_key(&s) != k0, "field %d ring %d", f, r);
      ck_assert(!pto_sizing_equal(&s, &base));
      ck_assert_uint_eq(pto_sizing_key(&s), reference_key(&s));
    }
  }
  /* swapping two rings' values is a different vector too */
  pto_sizing_resolved_t s = base;
  s.value[HEAP][0] = 1024;
  pto_sizing_resolved_t t = base;
  t.value[HEAP][1] = 1024;
  ck_assert(pto_sizing_key(&s) != pto_sizing_key(&t));
  /* sources are not part of the key */
  pto_sizing_resolved_t u = base;
  u.source[HEAP][0] = PTO_SOURCE_REQUEST;
  ck_assert(pto_sizing_equal(&u, &base));
  ck_assert_uint_eq(pto_sizing_key(&u), k0);
}
END_TEST

/* ---- formatting ----------------------------------------------------------------- */

static void expect_size(uint64_t v, const char *want) {
  char buf[64];
  int n = pto_size_format(v, buf, sizeof(buf));
  ck_assert_str_eq(buf, want);
  ck_assert_int_eq(n, (int)strlen(want));
}

START_TEST(size_format) {
  expect_size(0, "0 B");
  expect_size(16, "16 B");
  expect_size(1000, "1000 B");
  expect_size(1024, "1 KiB");
  expect_size(1536, "1536 B");
  expect_size(4096, "4 KiB");
  expect_size(UINT64_C(512) << 20, "512 MiB");
  expect_size(UINT64_C(1) << 30, "1 GiB");
  expect_size(UINT64_C(3) << 30, "3 GiB");
  expect_size(UINT64_C(1025) << 20, "1025 MiB");
  expect_size(UINT64_C(1) << 40, "1 TiB");
  expect_size(UINT64_C(1) << 63, "8 EiB");
  expect_size(UINT64_MAX, "18446744073709551615 B");
}
END_TEST

START_TEST(sizing_format) {
  pto_sizing_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  cfg.value[HEAP][0] = UINT64_C(512) << 20;
  cfg.value[TW][3] = 64;
  pto_sizing_resolved_t s;
  pto_sizing_resolve(NULL, NULL, &cfg, &s);
  const char *want =
      "task_window=[16384, 16384, 16384, 64] "
      "heap=[512 MiB, 256 MiB, 256 MiB, 256 MiB] "
      "dep_pool=[16384, 16384, 16384, 16384]";
  char buf[256];
  ck_assert_int_eq(pto_sizing_format(&s, buf, sizeof(buf)), (int)strlen(want));
  ck_assert_str_eq(buf, want);
  /* like snprintf: the length it needed, a cut but terminated buffer */
  char small[12];
  ck_assert_int_eq(pto_sizing_format(&s, small, sizeof(small)), (int)strlen(want));
  ck_assert_str_eq(small, "task_window");
  ck_assert_int_eq(pto_sizing_format(&s, NULL, 0), (int)strlen(want));
}
END_TEST

static Suite *sizing_suite(void) {
  Suite *s = suite_create("sizing");
  TCase *tc = tcase_create("msgpack");
  tcase_add_test(tc, mp_nil_is_unset);
  tcase_add_test(tc, mp_scalar_applies_to_all_rings);
  tcase_add_test(tc, mp_scalar_bounds);
  tcase_add_test(tc, mp_scalar_zero_rejected);
  tcase_add_test(tc, mp_scalar_wrong_types);
  tcase_add_test(tc, mp_string_is_quoted_and_escaped);
  tcase_add_test(tc, mp_list_per_ring);
  tcase_add_test(tc, mp_list_length);
  tcase_add_test(tc, mp_list_bad_entries);
  suite_add_tcase(s, tc);

  tc = tcase_create("text");
  tcase_add_test(tc, env_forms);
  tcase_add_test(tc, env_rejects);
  tcase_add_test(tc, config_suffixes);
  tcase_add_test(tc, size_parse);
  tcase_add_test(tc, environ_reads_variables);
  tcase_add_test(tc, environ_names_the_variable);
  tcase_add_test(tc, check_value_messages);
  tcase_add_test(tc, value_valid_table);
  tcase_add_test(tc, names);
  suite_add_tcase(s, tc);

  tc = tcase_create("resolve");
  tcase_add_test(tc, precedence_matrix);
  tcase_add_test(tc, precedence_lists_fall_through_per_ring);
  tcase_add_test(tc, from_resolved_round_trips);
  tcase_add_test(tc, key_fnv_vectors);
  tcase_add_test(tc, key_equal_however_spelled);
  tcase_add_test(tc, key_differs_in_any_value);
  tcase_add_test(tc, size_format);
  tcase_add_test(tc, sizing_format);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(sizing_suite)
