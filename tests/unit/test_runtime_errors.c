/* SPDX-License-Identifier: Apache-2.0 */
/* test_runtime_errors.c — every runtime error provoked and reported with
 * its fields (code, ring, requested, capacity, key, hint, message), and a
 * correct run after each one: a failed run never poisons the runtime.
 *
 * Structural deadlocks and oversized requests must be reported at once:
 * those tests run with a deadlock_timeout of 60 s, longer than the test's
 * own timeout, so waiting for the backstop would fail them. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "rt_internal.h"
#include "runtime_fixture.h"

/* The runtime under test, for kernels that hold their core until the run
 * has failed: whatever depends on them can then only run after the error,
 * however slow the machine is. */
static rt_runtime_t *g_rt;

static void k_until_failed(const pto_task_args_t *a) {
  while (!rt_failed(g_rt)) fx_sleep_us(1000);
  if (a->ntensors) *fx_at(&a->tensor[0], 0) = 1;
}

/* ---- the run that must succeed after every error ------------------------- */

static int orch_good(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                     uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)nargs;
  for (int d = 0; d < 2 && !rc; d++) {
    api->scope_begin(o);
    fx_task(&a);
    fx_tensor(&a, fx_out(8), PTO_OUT);
    fx_scalar(&a, 4 + d);
    rc = api->submit(o, fx_k_fill, &a);
    if (!rc) {
      pto_tensor_t tmp = a.tensor[0];
      fx_task(&a);
      fx_tensor(&a, tmp, PTO_IN);
      fx_tensor(&a, fx_view(args[0].base, 2, (uint64_t)d, 1), PTO_OUT_EXISTING);
      rc = api->submit(o, fx_k_sum, &a);
    }
    api->scope_end(o);
  }
  return rc;
}

static void expect_good_run(fx_t *f) {
  pto_error_t err;
  int32_t *out = fx_buffer(f, 2);
  pto_arg_t args[1] = {fx_arg_buffer(out, 2)};
  ck_assert_msg(fx_run(f, orch_good, args, 1, NULL, &err) == 0, "run after error: %s",
                err.message);
  ck_assert_int_eq(err.code, PTO_OK);
  ck_assert_int_eq(out[0], 32);
  ck_assert_int_eq(out[1], 40);
  fx_free(f, out, 2);
}

/* A runtime whose deadlock backstop is far away, and a small arena. */
static void open_strict(fx_t *f, const pto_sizing_resolved_t *s) {
  fx_open_with(f, 4, 60000, 60000);
  fx_arena(f, s);
}

static void expect_error(const pto_error_t *err, int rc, int code, int ring, uint64_t requested,
                         uint64_t capacity, const char *key, const char *hint) {
  ck_assert_int_eq(rc, -code);
  ck_assert_int_eq(err->code, code);
  ck_assert_int_eq(err->ring, ring);
  ck_assert_uint_eq(err->requested, requested);
  ck_assert_uint_eq(err->capacity, capacity);
  ck_assert_str_eq(err->key, key);
  ck_assert_str_eq(err->hint, hint);
}

/* What an orchestration saw, checked on the test's thread afterwards (the
 * orchestration runs on the runtime's orchestrator thread). */
static int seen[4];

/* ---- SCOPE_DEADLOCK -------------------------------------------------------- */

static int orch_scope_full(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                           uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)args;
  (void)nargs;
  api->scope_begin(o);
  for (int i = 0; i < 8 && !rc; i++) {
    fx_task(&a);
    rc = api->submit(o, fx_k_nop, &a);
  }
  /* Later calls keep returning the latched error. */
  fx_task(&a);
  seen[0] = rc;
  seen[1] = api->submit(o, fx_k_nop, &a);
  api->scope_end(o);
  return rc;
}

START_TEST(test_scope_deadlock) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  pto_sizing_resolved_t s = fx_sizing(8, 4096, 16);
  open_strict(&f, &s);
  int rc = fx_run(&f, orch_scope_full, NULL, 0, &st, &err);
  expect_error(&err, rc, PTO_E_SCOPE_DEADLOCK, 1, 8, 7, "ring_task_window",
               "raise ring_task_window[1] to at least 16, or split the scope at depth 1 into "
               "smaller scopes");
  ck_assert_str_eq(err.message,
                   "The scope at depth 1 already holds 7 tasks on ring 1, the most its task window "
                   "of 8 allows (window - 1); another task can never fit.");
  ck_assert_int_eq(seen[0], -PTO_E_SCOPE_DEADLOCK);
  ck_assert_int_eq(seen[1], -PTO_E_SCOPE_DEADLOCK);
  ck_assert_uint_eq(st.ring_tasks[1], 7);
  ck_assert_uint_eq(st.peak_tasks[1], 7);
  expect_good_run(&f);
  fx_close(&f);
}
END_TEST

/* ---- HEAP_RING_DEADLOCK ------------------------------------------------------ */

/* Top-level tasks, 1024 heap bytes each, into a 4096-byte ring 0. */
static int orch_heap_full(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                          uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)args;
  (void)nargs;
  for (int i = 0; i < 5 && !rc; i++) {
    fx_task(&a);
    fx_tensor(&a, fx_out(256), PTO_OUT);
    fx_scalar(&a, i);
    rc = api->submit(o, fx_k_fill, &a);
  }
  return rc;
}

START_TEST(test_heap_ring_deadlock_structural) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 16);
  open_strict(&f, &s);
  int rc = fx_run(&f, orch_heap_full, NULL, 0, &st, &err);
  expect_error(&err, rc, PTO_E_HEAP_RING_DEADLOCK, 0, 1024, 4096, "ring_heap",
               "raise ring_heap[0] to at least 8192 (ring 0 needs 5120 bytes live), or submit "
               "these tasks in a nested scope");
  ck_assert_str_eq(err.message,
                   "Ring 0's heap is exhausted: a task needs 1024 bytes while live tasks hold 4096 "
                   "of the ring's 4096 bytes, and the oldest of them belongs to the top level, "
                   "whose tasks stay live until the orchestration returns, so none can be "
                   "reclaimed.");
  ck_assert_uint_eq(st.ring_tasks[0], 4);
  ck_assert_uint_eq(st.peak_heap[0], 4096);
  expect_good_run(&f);
  fx_close(&f);
}
END_TEST

static int orch_oversized(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                          uint32_t nargs) {
  pto_task_args_t a;
  int rc;
  (void)args;
  (void)nargs;
  api->scope_begin(o);
  fx_task(&a);
  fx_tensor(&a, fx_out(1000), PTO_OUT); /* 4000 bytes -> 4096 on the heap */
  fx_scalar(&a, 1);
  rc = api->submit(o, fx_k_fill, &a);
  api->scope_end(o);
  return rc;
}

START_TEST(test_oversized_request) {
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(16, 2048, 16);
  open_strict(&f, &s);
  int rc = fx_run(&f, orch_oversized, NULL, 0, NULL, &err);
  expect_error(&err, rc, PTO_E_HEAP_RING_DEADLOCK, 1, 4096, 2048, "ring_heap",
               "raise ring_heap[1] to at least 4096");
  ck_assert_str_eq(err.message,
                   "A task on ring 1 needs 4096 heap bytes for its OUT tensors, more than the "
                   "whole ring heap of 2048 bytes; it can never fit.");
  expect_good_run(&f);
  fx_close(&f);
}
END_TEST

/* ---- FLOW_CONTROL_DEADLOCK -------------------------------------------------------- */

/* Depth 3 and 4 share ring 3: the depth-3 task pins the ring while the
 * depth-4 scope fills its window (6 tasks, fewer than window - 1). */
static int orch_window_full(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                            uint32_t nargs) {
  pto_task_args_t a;
  int rc;
  (void)args;
  (void)nargs;
  for (int d = 0; d < 3; d++) api->scope_begin(o);
  fx_task(&a);
  rc = api->submit(o, fx_k_nop, &a);
  api->scope_begin(o);
  for (int i = 0; i < 7 && !rc; i++) {
    fx_task(&a);
    rc = api->submit(o, fx_k_nop, &a);
  }
  for (int d = 0; d < 4; d++) api->scope_end(o);
  return rc;
}

START_TEST(test_flow_control_deadlock_structural) {
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(8, 4096, 16);
  open_strict(&f, &s);
  int rc = fx_run(&f, orch_window_full, NULL, 0, NULL, &err);
  expect_error(&err, rc, PTO_E_FLOW_CONTROL_DEADLOCK, 3, 8, 7, "ring_task_window",
               "raise ring_task_window[3] to at least 16, or end scopes sooner");
  ck_assert_str_eq(err.message,
                   "Ring 3's task window is full: 7 tasks are live, the most a window of 8 holds, "
                   "and the oldest of them belongs to a scope that is still open, so none can "
                   "retire.");
  expect_good_run(&f);
  fx_close(&f);
}
END_TEST

/* A closed scope whose tasks (running until the run fails) fill ring 1's
 * window; the next scope waits for them past the (short) deadlock timeout. */
static int orch_window_slow(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                            uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)args;
  (void)nargs;
  api->scope_begin(o);
  for (int i = 0; i < 3 && !rc; i++) {
    fx_task(&a);
    rc = api->submit(o, k_until_failed, &a);
  }
  api->scope_end(o);
  api->scope_begin(o);
  if (!rc) {
    fx_task(&a);
    rc = api->submit(o, fx_k_nop, &a);
  }
  api->scope_end(o);
  return rc;
}

START_TEST(test_flow_control_deadlock_backstop) {
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(4, 4096, 16);
  fx_open_with(&f, 4, 50, 60000);
  g_rt = f.rt;
  fx_arena(&f, &s);
  int rc = fx_run(&f, orch_window_slow, NULL, 0, NULL, &err);
  expect_error(&err, rc, PTO_E_FLOW_CONTROL_DEADLOCK, 1, 4, 3, "ring_task_window",
               "raise ring_task_window[1] to at least 8");
  ck_assert_msg(strncmp(err.message, "Ring 1's task window stayed full for ", 37) == 0, "%s",
                err.message);
  ck_assert_msg(strstr(err.message, " ms (deadlock_timeout): 3 tasks are live in a window of 4 "
                                    "and none retired.") != NULL,
                "%s", err.message);
  expect_good_run(&f);
  fx_close(&f);
}
END_TEST

/* ---- DEP_POOL_OVERFLOW ---------------------------------------------------------- */

/* `writers` tasks fill slices of x at top level; `readers` tasks read all of x. */
static int orch_deps(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                     uint32_t nargs) {
  pto_task_args_t a;
  int writers = (int)args[1].i, readers = (int)args[2].i, rc = 0;
  (void)nargs;
  for (int w = 0; w < writers && !rc; w++) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 64, (uint64_t)w * 8, 8), PTO_OUT_EXISTING);
    fx_scalar(&a, w);
    rc = api->submit(o, fx_k_fill, &a);
  }
  for (int r = 0; r < readers && !rc; r++) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 64, 0, (uint64_t)writers * 8), PTO_IN);
    fx_tensor(&a, fx_view(args[3].base, 8, (uint64_t)r, 1), PTO_OUT_EXISTING);
    rc = api->submit(o, fx_k_sum, &a);
  }
  return rc;
}

START_TEST(test_dep_pool_overflow) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 4);
  open_strict(&f, &s);
  int32_t *x = fx_buffer(&f, 64), *sums = fx_buffer(&f, 8);
  pto_arg_t args[4] = {fx_arg_buffer(x, 64), fx_arg_int(2), fx_arg_int(3), fx_arg_buffer(sums, 8)};

  /* Two readers of two writers fill the pool; the third reader cannot fit
   * while the top level pins them. */
  int rc = fx_run(&f, orch_deps, args, 4, &st, &err);
  expect_error(&err, rc, PTO_E_DEP_POOL_OVERFLOW, 0, 2, 4, "ring_dep_pool",
               "raise ring_dep_pool[0] to at least 6");
  ck_assert_str_eq(err.message,
                   "Ring 0's dependency pool is exhausted: a task needs 2 entries while live tasks "
                   "hold 4 of the pool's 4, and the oldest of them belongs to the top level, whose "
                   "tasks stay live until the orchestration returns, so none can be reclaimed.");
  ck_assert_uint_eq(st.peak_dep_pool[0], 4);
  expect_good_run(&f);

  /* One reader of five writers can never fit a pool of four. */
  args[1] = fx_arg_int(5);
  args[2] = fx_arg_int(1);
  rc = fx_run(&f, orch_deps, args, 4, NULL, &err);
  expect_error(&err, rc, PTO_E_DEP_POOL_OVERFLOW, 0, 5, 4, "ring_dep_pool",
               "raise ring_dep_pool[0] to at least 5");
  ck_assert_str_eq(err.message,
                   "A task on ring 0 depends on 5 live producers, more than the ring's whole "
                   "dependency pool of 4 entries; it can never fit.");
  expect_good_run(&f);

  /* Within the pool: the sums see every writer. */
  args[1] = fx_arg_int(2);
  args[2] = fx_arg_int(2);
  ck_assert_msg(fx_run(&f, orch_deps, args, 4, &st, &err) == 0, "%s", err.message);
  ck_assert_int_eq(sums[0], 8);
  ck_assert_int_eq(sums[1], 8);
  fx_free(&f, x, 64);
  fx_free(&f, sums, 8);
  fx_close(&f);
}
END_TEST

/* ---- errors the orchestration reports ------------------------------------------------ */

/* A slow task, a task that depends on it, then fatal(): the dependent
 * task's kernel must never run. */
static int orch_fatal(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                      uint32_t nargs) {
  pto_task_args_t a;
  int rc;
  (void)nargs;
  fx_task(&a);
  fx_tensor(&a, fx_view(args[0].base, 2, 0, 1), PTO_OUT_EXISTING);
  seen[0] = api->submit(o, k_until_failed, &a);
  fx_task(&a);
  fx_tensor(&a, fx_view(args[0].base, 2, 0, 1), PTO_IN);
  fx_tensor(&a, fx_view(args[0].base, 2, 1, 1), PTO_OUT_EXISTING);
  seen[1] = api->submit(o, fx_k_copy, &a);
  rc = api->fatal(o, (int)args[1].i, "the program gave up at step %d", 7);
  /* First error wins. */
  seen[2] = api->fatal(o, PTO_E_EXPLICIT_ORCH_FATAL, "second");
  fx_task(&a);
  seen[3] = api->submit(o, fx_k_nop, &a);
  return rc;
}

START_TEST(test_explicit_fatal_and_invalid_args) {
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 16);
  fx_open(&f);
  g_rt = f.rt;
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 2);
  pto_arg_t args[2] = {fx_arg_buffer(x, 2), fx_arg_int(PTO_E_EXPLICIT_ORCH_FATAL)};
  int rc = fx_run(&f, orch_fatal, args, 2, NULL, &err);
  expect_error(&err, rc, PTO_E_EXPLICIT_ORCH_FATAL, PTO_NO_RING, 0, 0, "",
               "the program reported this error itself; see its message");
  ck_assert_str_eq(err.message, "the program gave up at step 7");
  ck_assert_int_eq(seen[0], 0);
  ck_assert_int_eq(seen[1], 0);
  ck_assert_int_eq(seen[2], -PTO_E_EXPLICIT_ORCH_FATAL);
  ck_assert_int_eq(seen[3], -PTO_E_EXPLICIT_ORCH_FATAL);
  ck_assert_int_eq(x[1], 0); /* the dependent kernel was skipped */
  expect_good_run(&f);

  args[1] = fx_arg_int(PTO_E_INVALID_ARGS);
  x[0] = x[1] = 0;
  rc = fx_run(&f, orch_fatal, args, 2, NULL, &err);
  expect_error(&err, rc, PTO_E_INVALID_ARGS, PTO_NO_RING, 0, 0, "",
               "check the dispatch arguments against the program's argument list (programs)");
  ck_assert_str_eq(err.message, "the program gave up at step 7");
  ck_assert_int_eq(seen[2], -PTO_E_INVALID_ARGS);
  expect_good_run(&f);
  fx_free(&f, x, 2);
  fx_close(&f);
}
END_TEST

/* Task arguments the runtime refuses. */
static int orch_bad_task(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                         uint32_t nargs) {
  pto_task_args_t a;
  (void)nargs;
  fx_task(&a);
  switch (args[1].i) {
  case 0: a.ntensors = 9; break;
  case 1: fx_tensor(&a, fx_view(args[0].base, 64, 60, 8), PTO_IN); break;
  case 2:
    fx_tensor(&a, fx_out(4), PTO_OUT);
    a.tensor[0].base = args[0].base;
    break;
  default: fx_tensor(&a, fx_view(args[0].base, 64, 0, 8), (pto_dir_t)7); break;
  }
  return api->submit(o, fx_k_nop, &a);
}

START_TEST(test_invalid_task_args) {
  static const char *const msgs[] = {
      "A task has 9 tensors; at most 8 are allowed.",
      "tensor[0] (offset 60, 1 dimensions) reaches outside its buffer of 256 bytes; a view must "
      "lie inside base .. base + buffer_bytes.",
      "tensor[0] is PTO_OUT but already has a base; leave base NULL, the runtime allocates OUT "
      "tensors.",
      "tensor[0] has direction 7; use PTO_IN, PTO_INOUT, PTO_OUT_EXISTING or PTO_OUT.",
  };
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 16);
  fx_open(&f);
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 64);
  for (int i = 0; i < 4; i++) {
    pto_arg_t args[2] = {fx_arg_buffer(x, 64), fx_arg_int(i)};
    int rc = fx_run(&f, orch_bad_task, args, 2, NULL, &err);
    expect_error(&err, rc, PTO_E_INVALID_ARGS, PTO_NO_RING, 0, 0, i ? "tensor[0]" : "",
                 "fix the task arguments the orchestration passes to submit()");
    ck_assert_str_eq(err.message, msgs[i]);
    expect_good_run(&f);
  }
  fx_free(&f, x, 64);
  fx_close(&f);
}
END_TEST

/* Orchestrations that break the scope rules or return an error silently. */
static int orch_misbehave(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                          uint32_t nargs) {
  (void)nargs;
  switch (args[0].i) {
  case 0: api->scope_end(o); return 0;
  case 1: api->scope_begin(o); api->scope_begin(o); return 0;
  default: return -42;
  }
}

START_TEST(test_orchestration_misuse) {
  static const char *const msgs[] = {
      "The orchestration called scope_end() without a matching scope_begin().",
      "The orchestration of program 'test' returned with 2 scope(s) still open; call scope_end() "
      "once for every scope_begin().",
      "The orchestration of program 'test' returned -42 without reporting an error; a program "
      "reports errors through fatal().",
  };
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 16);
  fx_open(&f);
  fx_arena(&f, &s);
  for (int i = 0; i < 3; i++) {
    pto_arg_t args[1] = {fx_arg_int(i)};
    int rc = fx_run(&f, orch_misbehave, args, 1, NULL, &err);
    ck_assert_int_eq(rc, -PTO_E_EXPLICIT_ORCH_FATAL);
    ck_assert_int_eq(err.code, PTO_E_EXPLICIT_ORCH_FATAL);
    ck_assert_str_eq(err.message, msgs[i]);
    expect_good_run(&f);
  }
  fx_close(&f);
}
END_TEST

/* ---- SCHEDULER_TIMEOUT ------------------------------------------------------------------ */

static int orch_hang(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                     uint32_t nargs) {
  pto_task_args_t a;
  int rc;
  (void)nargs;
  fx_task(&a);
  fx_tensor(&a, fx_view(args[1].base, 1, 0, 1), PTO_OUT_EXISTING);
  fx_tensor(&a, fx_view(args[0].base, 1, 0, 1), PTO_INOUT); /* only to order the next task */
  rc = api->submit(o, k_until_failed, &a); /* runs past the 100 ms run timeout */
  if (rc) return rc;
  /* Waits for the sleeper; must be skipped once the run has timed out. */
  fx_task(&a);
  fx_tensor(&a, fx_view(args[0].base, 1, 0, 1), PTO_INOUT);
  fx_scalar(&a, 1);
  return api->submit(o, fx_k_step, &a);
}

START_TEST(test_scheduler_timeout) {
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(16, 4096, 16);
  fx_open_with(&f, 2, 60000, 100);
  g_rt = f.rt;
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 1), *done = fx_buffer(&f, 1);
  pto_arg_t args[2] = {fx_arg_buffer(x, 1), fx_arg_buffer(done, 1)};
  int rc = fx_run(&f, orch_hang, args, 2, NULL, &err);
  ck_assert_int_eq(rc, -PTO_E_SCHEDULER_TIMEOUT);
  ck_assert_int_eq(err.code, PTO_E_SCHEDULER_TIMEOUT);
  ck_assert_int_eq(err.ring, PTO_NO_RING);
  ck_assert_uint_ge(err.requested, 100);
  ck_assert_uint_eq(err.capacity, 100);
  ck_assert_str_eq(err.key, "run_timeout");
  ck_assert_str_eq(err.hint, "raise run_timeout above 100 ms if a kernel legitimately runs that "
                             "long, or find the kernel or orchestration that hangs");
  ck_assert_msg(strstr(err.message, " ms (run_timeout 100 ms): no task was submitted, finished or "
                                    "retired while 2 task(s) were live; the run was stopped.") !=
                    NULL,
                "%s", err.message);
  ck_assert_int_eq(x[0], 0); /* the task waiting for the hung one was skipped */
  expect_good_run(&f);
  fx_free(&f, x, 1);
  fx_free(&f, done, 1);
  fx_close(&f);
}
END_TEST

Suite *runtime_errors_suite(void) {
  Suite *s = suite_create("runtime_errors");
  TCase *tc = tcase_create("errors");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, test_scope_deadlock);
  tcase_add_test(tc, test_heap_ring_deadlock_structural);
  tcase_add_test(tc, test_oversized_request);
  tcase_add_test(tc, test_flow_control_deadlock_structural);
  tcase_add_test(tc, test_flow_control_deadlock_backstop);
  tcase_add_test(tc, test_dep_pool_overflow);
  tcase_add_test(tc, test_explicit_fatal_and_invalid_args);
  tcase_add_test(tc, test_invalid_task_args);
  tcase_add_test(tc, test_orchestration_misuse);
  tcase_add_test(tc, test_scheduler_timeout);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(runtime_errors_suite)
