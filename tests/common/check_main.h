/* SPDX-License-Identifier: Apache-2.0 */
/* check_main.h — the main() of a Check test program: run one suite in
 * Check's normal mode and exit with EXIT_FAILURE when any test failed.
 *
 *   PTO_CHECK_MAIN(reader_suite)   defines int main(void) running reader_suite()
 *   return pto_check_run(s);       in a main() that chooses its suite itself
 */
#ifndef PTOD_TESTS_CHECK_MAIN_H
#define PTOD_TESTS_CHECK_MAIN_H

#include <check.h>
#include <stdlib.h>

static inline int pto_check_run(Suite *s) {
  SRunner *sr = srunner_create(s);
  int failed;
  srunner_run_all(sr, CK_NORMAL);
  failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

#define PTO_CHECK_MAIN(suite_fn) \
  int main(void) { return pto_check_run(suite_fn()); }

#endif
