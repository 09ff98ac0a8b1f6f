/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_dfx — libptoclient and DFX: the artefacts in
 * pto_dispatch_result_t.dfx, those of a failed dispatch through
 * pto_client_error_dfx(), and the advise result's per-program part, all
 * against a real ptod. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"

static tdaemon_t daemon_;

static void setup(void) { tdaemon_start(&daemon_, NULL); }
static void teardown(void) { tdaemon_stop(&daemon_); }

static bool has(const pto_bytes_t *b, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; b->ptr && i + n <= b->len; i++)
    if (memcmp(b->ptr + i, needle, n) == 0) return true;
  return false;
}

START_TEST(artefacts_in_the_result) {
  pto_client_t *c;
  pto_config_t *cfg;
  pto_dispatch_result_t *r;
  pto_error_t err;
  float a[3] = {1, 2, 3}, b[3] = {10, 20, 30};
  pto_dispatch_arg_t args[] = {pto_arg_input(a, sizeof a), pto_arg_input(b, sizeof b),
                               pto_arg_output(sizeof a)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};

  ck_assert_int_eq(pto_client_connect(daemon_.socket, WAIT_MS, &c, &err), 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "enable_swimlane", 1, &err), 0);
  ck_assert_int_eq(pto_config_set_bool(cfg, "enable_dep_gen", true, &err), 0);
  req.config = cfg;
  ck_assert_msg(pto_client_dispatch(c, &req, -1, &r, &err) == 0, "%s", err.message);
  ck_assert(has(&r->dfx.swimlane, "\"traceEvents\""));
  ck_assert(has(&r->dfx.swimlane, "\"name\": \"vector_add_kernel\""));
  ck_assert(has(&r->dfx.dep_graph, "digraph \"vector_add\""));
  ck_assert_ptr_null(r->dfx.scope_stats.ptr); /* not asked for */
  ck_assert_ptr_null(r->dfx.refused);
  pto_result_free(r);
  /* Without the flags: nothing. */
  req.config = NULL;
  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &r, &err), 0);
  ck_assert_ptr_null(r->dfx.swimlane.ptr);
  ck_assert_ptr_null(r->dfx.dep_graph.ptr);
  pto_result_free(r);
  ck_assert_ptr_null(pto_client_error_dfx(c));
  pto_config_free(cfg);
  pto_client_close(c);
}
END_TEST

/* noop: 4 tasks at top level in a window of 4 (3 slots): SCOPE_DEADLOCK. */
START_TEST(artefacts_of_a_failed_dispatch) {
  pto_client_t *c;
  pto_config_t *cfg;
  pto_dispatch_result_t *r = NULL;
  const pto_dfx_t *dfx;
  pto_advise_t *adv;
  pto_error_t err;
  pto_dispatch_arg_t args[] = {pto_arg_int(4), pto_arg_int(0), pto_arg_int(0)};
  pto_dispatch_req_t req = {.program = "noop", .args = args, .nargs = 3};

  ck_assert_int_eq(pto_client_connect(daemon_.socket, WAIT_MS, &c, &err), 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "enable_swimlane", 2, &err), 0);
  ck_assert_int_eq(pto_config_set_bool(cfg, "enable_scope_stats", true, &err), 0);
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_TASK_WINDOW, 4, &err), 0);
  req.config = cfg;
  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &r, &err), -PTO_E_SCOPE_DEADLOCK);
  ck_assert_ptr_null(r);
  dfx = pto_client_error_dfx(c);
  ck_assert_ptr_nonnull(dfx);
  ck_assert(has(&dfx->swimlane, "\"SCOPE_DEADLOCK on ring 0\""));
  ck_assert(has(&dfx->scope_stats, "\"error\": \"SCOPE_DEADLOCK\""));
  ck_assert_ptr_null(dfx->dep_graph.ptr);

  /* A success afterwards leaves the failure's artefacts where they were. */
  args[0] = pto_arg_int(3);
  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &r, &err), 0);
  pto_result_free(r);
  ck_assert_ptr_eq(pto_client_error_dfx(c), dfx);

  ck_assert_int_eq(pto_client_advise(c, -1, &adv, &err), 0);
  ck_assert_uint_eq(adv->nprograms, 1);
  ck_assert_str_eq(adv->programs[0].program, "noop");
  ck_assert_uint_eq(adv->programs[0].dispatches, 1); /* the failed one does not count */
  ck_assert_uint_eq(adv->programs[0].observed.value[PTO_FIELD_TASK_WINDOW][0], 3);
  ck_assert_uint_eq(adv->programs[0].recommended.value[PTO_FIELD_TASK_WINDOW][0], 4);
  ck_assert_uint_eq(adv->nsizings, 1);
  pto_result_free(adv);
  pto_config_free(cfg);
  pto_client_close(c);
}
END_TEST

static Suite *client_dfx_suite(void) {
  Suite *s = suite_create("client_dfx");
  TCase *tc = tcase_create("dfx");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, artefacts_in_the_result);
  tcase_add_test(tc, artefacts_of_a_failed_dispatch);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_dfx_suite)
