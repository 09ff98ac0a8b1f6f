/* SPDX-License-Identifier: Apache-2.0 */
/* The error table (include/pto/errors.h) against the protocol's list and
 * libptoclient's own codes:
 * every name <-> code <-> message, unknown codes and names, pto_error_set. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/errors.h>

#include "check_main.h"

/* The names and codes of docs/protocol.md, "The error map", written out
 * here rather than taken from the X-macro, so a renumbered or dropped code
 * fails. */
static const struct {
  const char *name;
  int code;
} protocol_errors[] = {
    {"SCOPE_DEADLOCK", 1},
    {"HEAP_RING_DEADLOCK", 2},
    {"FLOW_CONTROL_DEADLOCK", 3},
    {"DEP_POOL_OVERFLOW", 4},
    {"INVALID_ARGS", 5},
    {"EXPLICIT_ORCH_FATAL", 9},
    {"TENSORMAP_OVERFLOW", 11},
    {"SCHEDULER_TIMEOUT", 100},
    {"INVALID_REQUEST", 1000},
    {"INVALID_CONFIG", 1001},
    {"UNKNOWN_METHOD", 1002},
    {"UNKNOWN_PROGRAM", 1003},
    {"BUSY", 1004},
    {"DEADLINE_EXCEEDED", 1005},
    {"SHUTTING_DOWN", 1006},
    {"OUT_OF_MEMORY", 1007},
    {"NOT_FOUND", 1008},
    {"ALREADY_EXISTS", 1009},
    {"PERMISSION_DENIED", 1010},
    {"MESSAGE_TOO_LARGE", 1011},
    {"CANCELLED", 1012},
    {"INTERNAL", 1099},
};
#define PROTOCOL_COUNT (sizeof(protocol_errors) / sizeof(protocol_errors[0]))

/* The table itself, through its own macro. */
static const struct {
  const char *name;
  int code;
  const char *message;
} table[] = {
#define ROW_(name, code, msg) {#name, code, msg},
    PTO_ERROR_MAP(ROW_)
#undef ROW_
};
#define TABLE_COUNT (sizeof(table) / sizeof(table[0]))

/* libptoclient's own codes, from 2000 up: never on the wire. */
static const struct {
  const char *name;
  int code;
} local_errors[] = {
    {"CONNECT_FAILED", 2001},   {"CONNECTION_LOST", 2002},  {"TIMEOUT", 2003},
    {"PROTOCOL_ERROR", 2004},   {"NO_MEMORY", 2005},        {"INVALID_ARGUMENT", 2006},
    {"UNSUPPORTED", 2007},
};
#define LOCAL_COUNT (sizeof(local_errors) / sizeof(local_errors[0]))

START_TEST(protocol_codes_and_names) {
  size_t wire = 0;
  for (size_t i = 0; i < TABLE_COUNT; i++) wire += table[i].code < PTO_LOCAL_ERROR_FIRST;
  ck_assert_uint_eq(wire, PROTOCOL_COUNT);
  ck_assert_uint_eq(TABLE_COUNT, PROTOCOL_COUNT + LOCAL_COUNT);
  for (size_t i = 0; i < LOCAL_COUNT; i++) {
    ck_assert_str_eq(pto_error_name(local_errors[i].code), local_errors[i].name);
    ck_assert_int_eq(pto_error_from_name(local_errors[i].name), local_errors[i].code);
  }
  for (size_t i = 0; i < PROTOCOL_COUNT; i++) {
    const char *name = protocol_errors[i].name;
    int code = protocol_errors[i].code;
    ck_assert_msg(pto_error_name(code) != NULL, "code %d has no name", code);
    ck_assert_str_eq(pto_error_name(code), name);
    ck_assert_int_eq(pto_error_from_name(name), code);
    ck_assert_ptr_nonnull(pto_error_default_message(code));
  }
  ck_assert_int_eq(PTO_E_HEAP_RING_DEADLOCK, 2);
  ck_assert_int_eq(PTO_E_INVALID_CONFIG, 1001);
  ck_assert_int_eq(PTO_E_INTERNAL, 1099);
}
END_TEST

START_TEST(table_round_trips) {
  for (size_t i = 0; i < TABLE_COUNT; i++) {
    ck_assert_str_eq(pto_error_name(table[i].code), table[i].name);
    ck_assert_int_eq(pto_error_from_name(table[i].name), table[i].code);
    ck_assert_str_eq(pto_error_default_message(table[i].code), table[i].message);
    /* a full sentence */
    size_t n = strlen(table[i].message);
    ck_assert_uint_gt(n, 2);
    ck_assert_msg(table[i].message[0] >= 'A' && table[i].message[0] <= 'Z', "%s", table[i].message);
    ck_assert_int_eq(table[i].message[n - 1], '.');
    for (size_t j = 0; j < i; j++) {
      ck_assert_int_ne(table[i].code, table[j].code);
      ck_assert_str_ne(table[i].name, table[j].name);
    }
  }
}
END_TEST

START_TEST(unknown_codes_and_names) {
  static const int unknown[] = {0, -1, 6, 7, 8, 10, 12, 99, 101, 999, 1013, 1098, 1100, -1001};
  for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++) {
    ck_assert_ptr_null(pto_error_name(unknown[i]));
    ck_assert_ptr_null(pto_error_default_message(unknown[i]));
  }
  ck_assert_int_eq(pto_error_from_name("NOPE"), -1);
  ck_assert_int_eq(pto_error_from_name("busy"), -1); /* names are exact */
  ck_assert_int_eq(pto_error_from_name(""), -1);
  ck_assert_int_eq(pto_error_from_name(NULL), -1);
}
END_TEST

START_TEST(error_set_and_clear) {
  pto_error_t err;
  memset(&err, 0x7f, sizeof(err));
  pto_error_clear(&err);
  ck_assert_int_eq(err.code, PTO_OK);
  ck_assert_int_eq(err.ring, PTO_NO_RING);
  ck_assert_str_eq(err.message, "");
  ck_assert_str_eq(err.key, "");
  ck_assert_str_eq(err.hint, "");

  err.ring = 2;
  err.requested = 5;
  snprintf(err.key, sizeof(err.key), "k");
  snprintf(err.hint, sizeof(err.hint), "h");
  ck_assert_int_eq(pto_error_set(&err, PTO_E_BUSY, "queue %d of %d", 64, 64), -PTO_E_BUSY);
  ck_assert_int_eq(err.code, PTO_E_BUSY);
  ck_assert_str_eq(err.message, "queue 64 of 64");
  /* the detail of an earlier error does not leak into this one */
  ck_assert_int_eq(err.ring, PTO_NO_RING);
  ck_assert_uint_eq(err.requested, 0);
  ck_assert_str_eq(err.key, "");
  ck_assert_str_eq(err.hint, "");

  /* too long: cut and terminated */
  char longer[1000];
  memset(longer, 'x', sizeof(longer) - 1);
  longer[sizeof(longer) - 1] = '\0';
  pto_error_set(&err, PTO_E_INTERNAL, "%s", longer);
  ck_assert_uint_eq(strlen(err.message), sizeof(err.message) - 1);

  /* err may be NULL: the code still comes back */
  ck_assert_int_eq(pto_error_set(NULL, PTO_E_NOT_FOUND, "no %s", "kv"), -PTO_E_NOT_FOUND);
  pto_error_clear(NULL);
}
END_TEST

static Suite *errors_suite(void) {
  Suite *s = suite_create("errors");
  TCase *tc = tcase_create("table");
  tcase_add_test(tc, protocol_codes_and_names);
  tcase_add_test(tc, table_round_trips);
  tcase_add_test(tc, unknown_codes_and_names);
  tcase_add_test(tc, error_set_and_clear);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(errors_suite)
