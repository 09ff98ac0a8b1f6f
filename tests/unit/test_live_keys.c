/* SPDX-License-Identifier: Apache-2.0 */
/* What a reload runs for a changed key: cfg_live_changes, which ptod.c's
 * reload turns into appliers (one per cfg_apply_t class).  Each key row
 * changed alone must report exactly its own class, a key that needs a
 * restart none, and a key that changes back nothing: a row whose class is
 * not reported would change in the running cfg_t and never reach the
 * server, the dispatcher or the log.  The integration tests
 * (test_lifecycle.py's Reload) show each class taking effect in a daemon. */
#include <check.h>
#include <stdlib.h>

#include "check_main.h"
#include "config.h"

/* cfg with one byte of k's value flipped: another value for every type
 * (a number, a path's first character, a list's count, a level). */
static cfg_t changed_key(const cfg_t *cfg, const cfg_key_t *k) {
  cfg_t out = *cfg;
  ((unsigned char *)&out)[k->offset] ^= 1u;
  return out;
}

START_TEST(each_row_reports_its_class) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  cfg_t a;
  cfg_defaults(&a);
  for (size_t i = 0; i < n; i++) {
    const cfg_key_t *k = &keys[i];
    cfg_t b = changed_key(&a, k);
    unsigned want = k->apply == CFG_APPLY_RESTART ? 0 : 1u << k->apply;
    ck_assert_msg(cfg_diff(&a, &b, NULL, 0) != 0, "[%s] %s: the test's change is no change",
                  k->section, k->name);
    ck_assert_msg(cfg_live_changes(&a, &b) == want, "[%s] %s: classes %#x, want %#x", k->section,
                  k->name, cfg_live_changes(&a, &b), want);
    ck_assert_uint_eq(cfg_live_changes(&b, &b), 0);
  }
}
END_TEST

/* Two keys of different classes changed together report both; two of one
 * class report it once (its applier runs once). */
START_TEST(classes_combine) {
  cfg_t a, b;
  cfg_defaults(&a);
  b = a;
  b.daemon.max_clients++;
  b.daemon.max_message++;
  ck_assert_uint_eq(cfg_live_changes(&a, &b), 1u << CFG_APPLY_SERVER);
  b.daemon.queue_depth++;
  b.device.cores++;
  ck_assert_uint_eq(cfg_live_changes(&a, &b), (1u << CFG_APPLY_SERVER) | (1u << CFG_APPLY_QUEUE));
}
END_TEST

/* Every class but restart has a key: a class no row uses is dead code in
 * ptod.c. */
START_TEST(every_class_has_a_row) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  unsigned used = 0;
  for (size_t i = 0; i < n; i++) {
    ck_assert_int_lt(keys[i].apply, CFG_APPLY_COUNT);
    used |= 1u << keys[i].apply;
  }
  ck_assert_uint_eq(used, (1u << CFG_APPLY_COUNT) - 1);
}
END_TEST

static Suite *live_keys_suite(void) {
  Suite *s = suite_create("live_keys");
  TCase *tc = tcase_create("live_keys");
  tcase_add_test(tc, each_row_reports_its_class);
  tcase_add_test(tc, classes_combine);
  tcase_add_test(tc, every_class_has_a_row);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(live_keys_suite)
