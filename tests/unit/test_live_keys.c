/* SPDX-License-Identifier: Apache-2.0 */
/* Every key the configuration table marks live has a way to take effect in
 * a reload (ptod.c's table), and no key that needs a restart has one: a
 * key added to config.c without its applier fails here, not silently in a
 * reload. */
#include <check.h>
#include <stdlib.h>

#include "check_main.h"
#include "config.h"
#include "ptod_run.h"

START_TEST(every_live_key_is_applied) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(ptod_live_key_applied(keys[i].section, keys[i].name) == keys[i].live,
                  "[%s] %s is %s but %s in ptod.c's live-key table", keys[i].section,
                  keys[i].name, keys[i].live ? "live" : "restart-only",
                  keys[i].live ? "missing" : "listed");
}
END_TEST

static Suite *live_keys_suite(void) {
  Suite *s = suite_create("live_keys");
  TCase *tc = tcase_create("live_keys");
  tcase_add_test(tc, every_live_key_is_applied);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(live_keys_suite)
