/* SPDX-License-Identifier: Apache-2.0 */
/* Every key the configuration table marks live has a way to take effect in
 * a reload (ptod.c's table), and no key that needs a restart has one: a
 * key added to config.c without its applier fails here, not silently in a
 * reload. */
#include <check.h>
#include <stdlib.h>

#include "config.h"
#include "ptod_run.h"

START_TEST(every_live_key_is_applied) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(ptod_live_key_applied(keys[i].section, keys[i].name) == cfg_key_live(&keys[i]),
                  "[%s] %s is %s but %s in ptod.c's live-key table", keys[i].section,
                  keys[i].name, cfg_key_live(&keys[i]) ? "live" : "restart-only",
                  cfg_key_live(&keys[i]) ? "missing" : "listed");
}
END_TEST

int main(void) {
  Suite *s = suite_create("live_keys");
  TCase *tc = tcase_create("live_keys");
  SRunner *sr;
  int failed;
  tcase_add_test(tc, every_live_key_is_applied);
  suite_add_tcase(s, tc);
  sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
