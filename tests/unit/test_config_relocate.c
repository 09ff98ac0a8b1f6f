/* SPDX-License-Identifier: Apache-2.0 */
/* The default programs directory of a relocatable install: config.c built
 * with a relative PTOD_DEFAULT_PROGRAMS_DIR finds it from the directory of
 * the running executable (/proc/self/exe), wherever the tree was put, and a
 * config file's [device] programs still wins. */
#include <check.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "config.h"

START_TEST(default_is_next_to_the_executable) {
  /* this executable is in tests/unit/; the relative path leads to the
   * build's programs */
  ck_assert_msg(PTOD_TEST_RELATIVE_PROGRAMS[0] != '/', "the test needs a relative default");
  char want[PATH_MAX];
  ck_assert_ptr_nonnull(realpath(PTOD_BUILD_PROGRAMS_DIR, want));
  cfg_t cfg;
  cfg_defaults(&cfg);
  ck_assert_str_eq(cfg.device.programs, want);

  pto_error_t err;
  ck_assert_int_eq(cfg_load(NULL, &cfg, &err), 0);
  ck_assert_str_eq(cfg.device.programs, want);
}
END_TEST

/* cfg_load of a temporary file holding text; returns cfg_load's result. */
static int load_text(const char *text, cfg_t *cfg, pto_error_t *err) {
  char path[] = "/tmp/ptod-reloc-XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  int rc = cfg_load(path, cfg, err);
  unlink(path);
  return rc;
}

START_TEST(config_file_wins) {
  cfg_t cfg;
  pto_error_t err;
  int rc = load_text("[device]\nprograms = /srv/my-programs\n", &cfg, &err);
  ck_assert_msg(rc == 0, "%s", err.message);
  ck_assert_str_eq(cfg.device.programs, "/srv/my-programs");
}
END_TEST

START_TEST(relative_in_a_file_is_refused) {
  /* the relative form is the build's, not the file's: a file must say
   * where, absolutely */
  cfg_t cfg;
  pto_error_t err;
  ck_assert_int_eq(load_text("[device]\nprograms = ../lib/ptod/programs\n", &cfg, &err),
                   -PTO_E_INVALID_CONFIG);
  ck_assert_msg(strstr(err.message, "must be an absolute path") != NULL, "%s", err.message);
}
END_TEST

static Suite *config_relocate_suite(void) {
  Suite *s = suite_create("config_relocate");
  TCase *tc = tcase_create("programs");
  tcase_add_test(tc, default_is_next_to_the_executable);
  tcase_add_test(tc, config_file_wins);
  tcase_add_test(tc, relative_in_a_file_is_refused);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(config_relocate_suite)
