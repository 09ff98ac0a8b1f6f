/* SPDX-License-Identifier: Apache-2.0 */
/* test_seq_orch.c — the sequential executor itself: OUT tensors, scope
 * reclamation and the heap need it reports per ring, the heap limit, and the
 * program bugs it catches.  Other tests trust its figures, so they are
 * pinned here with hand-built orchestrations. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "seq_orch.h"

static int kernel_calls;

/* Writes 1, 2, 3, ... into its last tensor, which is a contiguous f32 view. */
static void fill_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *t = &args->tensor[args->ntensors - 1];
  float *p = pto_tensor_data(t);
  kernel_calls++;
  for (uint64_t i = 0; i < pto_tensor_numel(t); i++) p[i] = (float)(i + 1);
}

/* out[i] = 2 * in[i] over two contiguous f32 views. */
static void double_kernel(const pto_task_args_t *args) {
  const float *in = pto_tensor_data(&args->tensor[0]);
  float *out = pto_tensor_data(&args->tensor[1]);
  kernel_calls++;
  for (uint64_t i = 0; i < pto_tensor_numel(&args->tensor[1]); i++) out[i] = 2.0f * in[i];
}

/* Writes into its IN tensor 0: a program bug seq_orch must catch. */
static void scribble_kernel(const pto_task_args_t *args) {
  float *p = pto_tensor_data(&args->tensor[0]);
  kernel_calls++;
  p[0] += 1.0f;
}

static pto_task_args_t out_task(uint64_t floats) {
  pto_task_args_t ta;
  uint64_t shape[1] = {floats};
  memset(&ta, 0, sizeof ta);
  ta.ntensors = 1;
  ta.tensor[0] = pto_tensor_view(NULL, 0, PTO_F32, 0, 1, shape);
  ta.dir[0] = PTO_OUT;
  return ta;
}

static int submit_out(const pto_orch_api_t *api, pto_orch_t *orch, uint64_t floats) {
  pto_task_args_t ta = out_task(floats);
  return api->submit(orch, fill_kernel, &ta);
}

static pto_arg_t mem_arg(pto_arg_kind_t kind, float *base, uint64_t floats) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.base = base;
  a.base_bytes = floats * 4;
  a.bytes = floats * 4;
  return a;
}

static seq_orch_t *new_seq(void) {
  seq_orch_t *s = NULL;
  ck_assert_int_eq(seq_orch_new(&s), 0);
  kernel_calls = 0;
  return s;
}

static void expect_internal(seq_orch_t *s, pto_orchestrate_fn fn, const pto_arg_t *args,
                            uint32_t nargs, const char *msg) {
  ck_assert_int_eq(seq_orch_run(s, fn, args, nargs), -PTO_E_INTERNAL);
  ck_assert_int_eq(seq_orch_error(s)->code, PTO_E_INTERNAL);
  ck_assert_str_eq(seq_orch_error(s)->message, msg);
}

/* ---- OUT tensors -------------------------------------------------------- */

static pto_tensor_t seen_out;

/* A [3,5] OUT, then a task that doubles it into argument 0. */
static int orch_out_then_read(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                              uint32_t nargs) {
  pto_task_args_t ta;
  uint64_t shape[2] = {3, 5};
  int rc;
  (void)nargs;
  memset(&ta, 0, sizeof ta);
  ta.ntensors = 1;
  ta.tensor[0] = pto_tensor_view(NULL, 0, PTO_F32, 0, 2, shape);
  ta.dir[0] = PTO_OUT;
  rc = api->submit(orch, fill_kernel, &ta);
  if (rc) return rc;
  seen_out = ta.tensor[0];
  ta.ntensors = 2;
  ta.dir[0] = PTO_IN;
  ta.tensor[1] = pto_tensor_view(args[0].base, args[0].base_bytes, PTO_F32, 0, 2, shape);
  ta.dir[1] = PTO_OUT_EXISTING;
  return api->submit(orch, double_kernel, &ta);
}

START_TEST(test_out_tensors_are_filled_and_counted) {
  seq_orch_t *s = new_seq();
  float out[15];
  pto_arg_t args[1] = {mem_arg(PTO_ARG_OUTPUT, out, 15)};
  ck_assert_int_eq(seq_orch_run(s, orch_out_then_read, args, 1), 0);
  ck_assert_ptr_nonnull(seen_out.base);
  ck_assert_uint_eq(seen_out.buffer_bytes, 60);
  ck_assert_uint_eq(seen_out.offset, 0);
  ck_assert_uint_eq(seen_out.ndims, 2);
  ck_assert_int_eq(seen_out.strides[0], 5);
  ck_assert_int_eq(seen_out.strides[1], 1);
  for (int i = 0; i < 15; i++) ck_assert(out[i] == 2.0f * (float)(i + 1));
  ck_assert_uint_eq(seq_orch_stats(s)->tasks, 2);
  ck_assert_uint_eq(seq_orch_stats(s)->ring_peak_heap[0], 1024);
  ck_assert_uint_eq(seq_orch_stats(s)->ring_peak_tasks[0], 2);
  ck_assert_int_eq(seq_orch_error(s)->code, PTO_OK);
  seq_orch_free(s);
}
END_TEST

/* ---- reclamation and the heap need -------------------------------------- */

/* Two consecutive depth-1 scopes: the first one's heap is back before the
 * second asks; three top-level OUTs stay live together. */
static int orch_scopes(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                       uint32_t nargs) {
  int rc;
  (void)args;
  (void)nargs;
  api->scope_begin(orch);
  rc = submit_out(api, orch, 512); /* 2048 bytes */
  if (!rc) rc = submit_out(api, orch, 1);
  api->scope_end(orch);
  if (!rc) {
    api->scope_begin(orch);
    rc = submit_out(api, orch, 256); /* 1024 */
    api->scope_end(orch);
  }
  for (int i = 0; i < 3 && !rc; i++) rc = submit_out(api, orch, 300); /* 1200 -> 2048 each */
  return rc;
}

START_TEST(test_inner_scope_reclaims) {
  seq_orch_t *s = new_seq();
  const seq_orch_stats_t *st;
  ck_assert_int_eq(seq_orch_run(s, orch_scopes, NULL, 0), 0);
  st = seq_orch_stats(s);
  ck_assert_uint_eq(st->ring_peak_heap[1], 3072);
  ck_assert_uint_eq(st->ring_peak_tasks[1], 2);
  ck_assert_uint_eq(st->ring_tasks[1], 3);
  ck_assert_uint_eq(st->ring_peak_heap[0], 3 * 2048);
  ck_assert_uint_eq(st->ring_peak_tasks[0], 3);
  ck_assert_uint_eq(st->max_depth, 1);
  seq_orch_free(s);
}
END_TEST

/* Depth 3 and 4 share ring 3: a depth-4 scope that ended stays behind the
 * still-open depth-3 scope's task, which retires first. */
static int orch_ring3(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                      uint32_t nargs) {
  int rc;
  (void)args;
  (void)nargs;
  for (int d = 0; d < 3; d++) api->scope_begin(orch);
  rc = submit_out(api, orch, 256);
  for (int i = 0; i < 2 && !rc; i++) {
    api->scope_begin(orch);
    rc = submit_out(api, orch, 256);
    api->scope_end(orch);
  }
  for (int d = 0; d < 3; d++) api->scope_end(orch);
  return rc;
}

START_TEST(test_ring3_retires_in_order) {
  seq_orch_t *s = new_seq();
  ck_assert_int_eq(seq_orch_run(s, orch_ring3, NULL, 0), 0);
  ck_assert_uint_eq(seq_orch_stats(s)->ring_peak_heap[3], 3072);
  ck_assert_uint_eq(seq_orch_stats(s)->ring_tasks[3], 3);
  ck_assert_uint_eq(seq_orch_stats(s)->max_depth, 4);
  seq_orch_free(s);
}
END_TEST

/* ---- the heap limit and the first error --------------------------------- */

static int after_failure_rc;

static int orch_over_limit(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                           uint32_t nargs) {
  int rc = 0;
  (void)args;
  (void)nargs;
  api->scope_begin(orch);
  for (int i = 0; i < 3 && !rc; i++) rc = submit_out(api, orch, 256);
  /* the run has failed: nothing more runs, and a later fatal is ignored */
  after_failure_rc = submit_out(api, orch, 1);
  if (rc) api->fatal(orch, PTO_E_EXPLICIT_ORCH_FATAL, "too late");
  api->scope_end(orch);
  return rc;
}

START_TEST(test_heap_limit) {
  seq_orch_t *s = new_seq();
  const pto_error_t *err;
  seq_orch_set_ring_heap(s, 1, 2048);
  ck_assert_int_eq(seq_orch_run(s, orch_over_limit, NULL, 0), -PTO_E_HEAP_RING_DEADLOCK);
  err = seq_orch_error(s);
  ck_assert_int_eq(err->code, PTO_E_HEAP_RING_DEADLOCK);
  ck_assert_int_eq(err->ring, 1);
  ck_assert_uint_eq(err->requested, 1024);
  ck_assert_uint_eq(err->capacity, 2048);
  ck_assert_str_eq(err->message, "Ring 1 cannot reserve 1024 heap bytes for task 2: 2048 bytes are "
                                 "still live and the ring heap holds 2048.");
  ck_assert_str_eq(err->hint, "Raise ring_heap[1] to at least 3072 bytes, or submit the work in "
                              "scopes that end sooner.");
  ck_assert_int_eq(after_failure_rc, -PTO_E_HEAP_RING_DEADLOCK);
  ck_assert_int_eq(kernel_calls, 2);
  ck_assert_int_eq(seq_orch_stats(s)->orch_rc, -PTO_E_HEAP_RING_DEADLOCK);

  /* the limit on another ring does not apply; a later run starts afresh */
  seq_orch_set_ring_heap(s, 1, 0);
  seq_orch_set_ring_heap(s, 0, 1024);
  kernel_calls = 0;
  ck_assert_int_eq(seq_orch_run(s, orch_over_limit, NULL, 0), 0);
  ck_assert_int_eq(seq_orch_error(s)->code, PTO_OK);
  ck_assert_int_eq(kernel_calls, 4);
  ck_assert_uint_eq(seq_orch_stats(s)->ring_peak_heap[1], 4096);
  ck_assert_uint_eq(seq_orch_stats(s)->ring_peak_heap[0], 0);
  seq_orch_free(s);
}
END_TEST

static int orch_two_fatals(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                           uint32_t nargs) {
  int rc;
  (void)args;
  (void)nargs;
  rc = api->fatal(orch, PTO_E_INVALID_ARGS, "first: %d", 1);
  ck_assert_int_eq(rc, -PTO_E_INVALID_ARGS);
  api->fatal(orch, PTO_E_EXPLICIT_ORCH_FATAL, "second");
  after_failure_rc = submit_out(api, orch, 1);
  return rc;
}

START_TEST(test_first_error_wins) {
  seq_orch_t *s = new_seq();
  ck_assert_int_eq(seq_orch_run(s, orch_two_fatals, NULL, 0), -PTO_E_INVALID_ARGS);
  ck_assert_str_eq(seq_orch_error(s)->message, "first: 1");
  ck_assert_int_eq(after_failure_rc, -PTO_E_INVALID_ARGS);
  ck_assert_int_eq(kernel_calls, 0);
  ck_assert_uint_eq(seq_orch_stats(s)->tasks, 0);
  seq_orch_free(s);
}
END_TEST

/* ---- program bugs it catches -------------------------------------------- */

static int orch_scribble(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                         uint32_t nargs) {
  pto_task_args_t ta;
  uint64_t shape[1] = {4};
  (void)nargs;
  memset(&ta, 0, sizeof ta);
  ta.ntensors = 1;
  ta.tensor[0] = pto_tensor_view(args[0].base, args[0].base_bytes, PTO_F32, 0, 1, shape);
  ta.dir[0] = PTO_IN;
  return api->submit(orch, scribble_kernel, &ta);
}

START_TEST(test_catches_write_through_in) {
  seq_orch_t *s = new_seq();
  float buf[4] = {0};
  pto_arg_t args[1] = {mem_arg(PTO_ARG_BUFFER, buf, 4)};
  expect_internal(s, orch_scribble, args, 1,
                  "seq_orch: the kernel of task 0 wrote into tensor 0, which it was given as IN.");
  /* with the check off the write goes unnoticed */
  seq_orch_set_check_inputs(s, 0);
  ck_assert_int_eq(seq_orch_run(s, orch_scribble, args, 1), 0);
  seq_orch_free(s);
}
END_TEST

static uint64_t view_offset;
static pto_dir_t view_dir;

/* One task with a 4-element view of argument 0 at view_offset. */
static int orch_view(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                     uint32_t nargs) {
  pto_task_args_t ta;
  uint64_t shape[1] = {4};
  (void)nargs;
  memset(&ta, 0, sizeof ta);
  ta.ntensors = 1;
  ta.tensor[0] = pto_tensor_view(args[0].base, args[0].base_bytes, PTO_F32, view_offset, 1, shape);
  ta.dir[0] = view_dir;
  return api->submit(orch, fill_kernel, &ta);
}

START_TEST(test_catches_views_outside_arguments) {
  seq_orch_t *s = new_seq();
  float buf[16] = {0};
  pto_arg_t args[1] = {mem_arg(PTO_ARG_BUFFER, buf, 16)};
  args[0].bytes = 32; /* the argument is the first 8 floats of a 16-float buffer */
  view_dir = PTO_OUT_EXISTING;
  view_offset = 4;
  ck_assert_int_eq(seq_orch_run(s, orch_view, args, 1), 0);
  view_offset = 5;
  expect_internal(s, orch_view, args, 1,
                  "seq_orch: task 0, tensor 0 (OUT_EXISTING) spans bytes 20 to 36 of its buffer, "
                  "outside every memory argument and OUT tensor of the run.");
  ck_assert_int_eq(kernel_calls, 1);
  args[0].kind = PTO_ARG_INPUT;
  view_offset = 0;
  expect_internal(s, orch_view, args, 1,
                  "seq_orch: task 0, tensor 0 (OUT_EXISTING) writes into an argument of kind "
                  "input, which is read-only.");
  view_dir = PTO_IN;
  ck_assert_int_eq(seq_orch_run(s, orch_view, args, 1), -PTO_E_INTERNAL); /* fill writes IN */
  seq_orch_free(s);
}
END_TEST

/* An OUT made in a depth-1 scope, read at top level after the scope ended. */
static int orch_reclaimed(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                          uint32_t nargs) {
  pto_task_args_t ta = out_task(8);
  int rc;
  (void)nargs;
  api->scope_begin(orch);
  rc = api->submit(orch, fill_kernel, &ta);
  api->scope_end(orch);
  if (rc) return rc;
  ta.ntensors = 2;
  ta.dir[0] = PTO_IN;
  ta.tensor[1] = pto_tensor_view(args[0].base, args[0].base_bytes, PTO_F32, 0, 1, ta.tensor[0].shape);
  ta.dir[1] = PTO_OUT_EXISTING;
  return api->submit(orch, double_kernel, &ta);
}

START_TEST(test_catches_reclaimed_out) {
  seq_orch_t *s = new_seq();
  float buf[8];
  pto_arg_t args[1] = {mem_arg(PTO_ARG_OUTPUT, buf, 8)};
  expect_internal(s, orch_reclaimed, args, 1,
                  "seq_orch: task 1, tensor 0 names the OUT tensor of task 0, which ring 1 already "
                  "reclaimed (its scope ended).");
  seq_orch_free(s);
}
END_TEST

static int orch_extra_end(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                          uint32_t nargs) {
  (void)args;
  (void)nargs;
  api->scope_end(orch);
  return 0;
}

static int orch_left_open(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                          uint32_t nargs) {
  (void)args;
  (void)nargs;
  api->scope_begin(orch);
  api->scope_begin(orch);
  return submit_out(api, orch, 1);
}

static int orch_silent_failure(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                               uint32_t nargs) {
  (void)api;
  (void)orch;
  (void)args;
  (void)nargs;
  return -7;
}

static int orch_bad_task(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                         uint32_t nargs) {
  pto_task_args_t ta = out_task(0);
  (void)args;
  (void)nargs;
  return api->submit(orch, fill_kernel, &ta);
}

START_TEST(test_catches_api_misuse) {
  seq_orch_t *s = new_seq();
  expect_internal(s, orch_extra_end, NULL, 0,
                  "seq_orch: scope_end was called with no scope open; pair every scope_end with a "
                  "scope_begin.");
  expect_internal(s, orch_left_open, NULL, 0,
                  "seq_orch: the orchestration returned with 2 scopes still open; end every scope "
                  "it begins.");
  ck_assert_uint_eq(seq_orch_stats(s)->ring_tasks[2], 1);
  expect_internal(s, orch_silent_failure, NULL, 0,
                  "seq_orch: the orchestration returned -7 without reporting an error through "
                  "fatal() or a failed submit().");
  ck_assert_int_eq(seq_orch_stats(s)->orch_rc, -7);
  expect_internal(s, orch_bad_task, NULL, 0,
                  "seq_orch: task 0, tensor 0 has no elements (dimension 0 is 0).");
  seq_orch_free(s);
}
END_TEST

static Suite *seq_orch_suite(void) {
  Suite *s = suite_create("seq_orch");
  TCase *tc = tcase_create("seq_orch");
  tcase_add_test(tc, test_out_tensors_are_filled_and_counted);
  tcase_add_test(tc, test_inner_scope_reclaims);
  tcase_add_test(tc, test_ring3_retires_in_order);
  tcase_add_test(tc, test_heap_limit);
  tcase_add_test(tc, test_first_error_wins);
  tcase_add_test(tc, test_catches_write_through_in);
  tcase_add_test(tc, test_catches_views_outside_arguments);
  tcase_add_test(tc, test_catches_reclaimed_out);
  tcase_add_test(tc, test_catches_api_misuse);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(seq_orch_suite)
