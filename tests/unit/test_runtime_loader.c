/* SPDX-License-Identifier: Apache-2.0 */
/* test_runtime_loader.c — programs by bare name: loading, running, and every
 * refusal (path-like names, no such file, another program ABI, a name field
 * that differs from the file, no pto_program symbol), and the listing. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "runtime_fixture.h"

static void open_plugins(fx_t *f) {
  pto_error_t err;
  rt_options_t opts = {0};
  ck_assert_int_eq(dev_open("sim", NULL, &f->dev, &err), 0);
  opts.device = f->dev;
  opts.programs_dir = RT_TEST_PLUGIN_DIR;
  ck_assert_msg(rt_create(&opts, &f->rt, &err) == 0, "%s", err.message);
}

START_TEST(test_load_and_run) {
  fx_t f;
  pto_error_t err;
  const pto_program_t *p, *again;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 16);
  open_plugins(&f);
  fx_arena(&f, &s);
  ck_assert_msg(rt_program_get(f.rt, "rtplug_tiny", &p, &err) == 0, "%s", err.message);
  ck_assert_str_eq(p->name, "rtplug_tiny");
  ck_assert_uint_eq(p->nargs, 1);
  ck_assert_int_eq(rt_program_get(f.rt, "rtplug_tiny", &again, &err), 0);
  ck_assert_ptr_eq(p, again); /* loaded once */

  int32_t *x = fx_buffer(&f, 1);
  pto_arg_t args[1] = {fx_arg_buffer(x, 1)};
  ck_assert_msg(rt_run(f.rt, p, args, 1, NULL, NULL, &err) == 0, "%s", err.message);
  ck_assert_int_eq(x[0], 42);
  ck_assert_int_eq(rt_run(f.rt, p, args, 0, NULL, NULL, &err), -PTO_E_INVALID_ARGS);
  ck_assert_str_eq(err.message, "rtplug_tiny: expected one buffer of 4 bytes.");
  fx_free(&f, x, 1);
  fx_close(&f);
}
END_TEST

START_TEST(test_names_that_are_not_names) {
  static const char *const bad[] = {"../rtplug_tiny", "a/b", ".", "..", "", "rtplug_tiny.so",
                                    "/etc/passwd", "tiny prog", "caf\xc3\xa9",
                                    "b234567890123456789012345678901234567890123456789012345678901234x"};
  fx_t f;
  pto_error_t err;
  const pto_program_t *p = NULL;
  char msg[512];
  open_plugins(&f);
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(rt_program_get(f.rt, bad[i], &p, &err), -PTO_E_INVALID_REQUEST);
    ck_assert_int_eq(err.code, PTO_E_INVALID_REQUEST);
    ck_assert_ptr_null(p);
  }
  ck_assert_str_eq(err.message,
                   "Program name 'b234567890123456789012345678901234567890123456789012345678901234...' is "
                   "not valid: a program name is 1 to 64 characters from A-Z, a-z, 0-9, '_' and '-', "
                   "never a path.");
  ck_assert_int_eq(rt_program_get(f.rt, "../rtplug_tiny", &p, &err), -PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.message,
                   "Program name '../rtplug_tiny' is not valid: a program name is 1 to 64 characters "
                   "from A-Z, a-z, 0-9, '_' and '-', never a path.");
  /* 64 characters is still a name (there is no such file). */
  ck_assert_uint_eq(strlen(bad[9]), 65);
  ck_assert_int_eq(rt_program_get(f.rt, bad[9] + 1, &p, &err), -PTO_E_UNKNOWN_PROGRAM);
  ck_assert_int_eq(rt_program_get(f.rt, "nosuch", &p, &err), -PTO_E_UNKNOWN_PROGRAM);
  snprintf(msg, sizeof msg,
           "No program 'nosuch': there is no file '%s/nosuch.so'; the programs method lists the "
           "programs this ptod has.",
           RT_TEST_PLUGIN_DIR);
  ck_assert_str_eq(err.message, msg);
  fx_close(&f);
}
END_TEST

START_TEST(test_refused_plugins) {
  fx_t f;
  pto_error_t err;
  const pto_program_t *p = NULL;
  char msg[512];
  open_plugins(&f);
  ck_assert_int_eq(rt_program_get(f.rt, "rtplug_abi_two", &p, &err), -PTO_E_UNKNOWN_PROGRAM);
  ck_assert_str_eq(err.message,
                   "program 'rtplug_abi_two' was built for program ABI 2; this ptod speaks ABI 1 "
                   "(rebuild it against this ptod's pto/program.h).");
  ck_assert_int_eq(rt_program_get(f.rt, "rtplug_misnamed", &p, &err), -PTO_E_UNKNOWN_PROGRAM);
  snprintf(msg, sizeof msg,
           "Program file '%s/rtplug_misnamed.so' names itself 'other_name'; the name field must "
           "equal the file name without '.so' ('rtplug_misnamed').",
           RT_TEST_PLUGIN_DIR);
  ck_assert_str_eq(err.message, msg);
  ck_assert_int_eq(rt_program_get(f.rt, "rtplug_nosym", &p, &err), -PTO_E_UNKNOWN_PROGRAM);
  snprintf(msg, sizeof msg,
           "Program 'rtplug_nosym' ('%s/rtplug_nosym.so') does not export the symbol "
           "'pto_program'; declare it with PTO_PROGRAM_EXPORT.",
           RT_TEST_PLUGIN_DIR);
  ck_assert_str_eq(err.message, msg);
  ck_assert_ptr_null(p);
  fx_close(&f);
}
END_TEST

typedef struct listing {
  char text[1024];
} listing_t;

static void list_cb(void *data, const char *name, const pto_program_t *prog,
                    const pto_error_t *err) {
  listing_t *l = data;
  size_t len = strlen(l->text);
  snprintf(l->text + len, sizeof l->text - len, "%s:%s ", name,
           prog ? "ok" : pto_error_name(err->code));
}

START_TEST(test_listing) {
  fx_t f;
  listing_t l = {{0}};
  open_plugins(&f);
  ck_assert_int_eq(rt_programs_foreach(f.rt, list_cb, &l), 0);
  ck_assert_str_eq(l.text, "rtplug_abi_two:UNKNOWN_PROGRAM rtplug_misnamed:UNKNOWN_PROGRAM "
                           "rtplug_nosym:UNKNOWN_PROGRAM rtplug_tiny:ok ");
  fx_close(&f);
}
END_TEST

Suite *runtime_loader_suite(void) {
  Suite *s = suite_create("runtime_loader");
  TCase *tc = tcase_create("loader");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_load_and_run);
  tcase_add_test(tc, test_names_that_are_not_names);
  tcase_add_test(tc, test_refused_plugins);
  tcase_add_test(tc, test_listing);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(runtime_loader_suite)
