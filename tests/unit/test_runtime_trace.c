/* SPDX-License-Identifier: Apache-2.0 */
/* test_runtime_trace — the runtime's DFX record (trace.h): what a traced
 * run records per task and scope, that it matches the run's stats, the
 * cap, and the failing request of a heap deadlock.  Label `runtime`: runs
 * under ThreadSanitizer too (recording takes no lock). */
#include <check.h>
#include <stdlib.h>

#include "check_main.h"
#include "runtime_fixture.h"
#include "trace.h"

static void k_touch(const pto_task_args_t *a) {
  if (a->ntensors) *fx_at(&a->tensor[0], 0) += 1;
}

/* args: buffer, chains, chain length, heap bytes per task, nested (0/1).
 * Chain c: tasks INOUT on element c of the buffer (each depends on the
 * one before), each also with an OUT of `heap` bytes. */
static int orch_chains(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                       uint32_t nargs) {
  int32_t *buf = args[0].base;
  int64_t chains = args[1].i, len = args[2].i, heap = args[3].i, nested = args[4].i;
  (void)nargs;
  if (nested) api->scope_begin(o);
  for (int64_t k = 0; k < len; k++)
    for (int64_t c = 0; c < chains; c++) {
      pto_task_args_t ta;
      int rc;
      fx_task(&ta);
      fx_tensor(&ta, fx_view(buf, 64, (uint64_t)c, 1), PTO_INOUT);
      if (heap) fx_tensor(&ta, fx_out((uint64_t)heap / 4), PTO_OUT);
      rc = api->submit(o, k_touch, &ta);
      if (rc) return rc;
    }
  if (nested) api->scope_end(o);
  return 0;
}

static const pto_program_t chains_prog = {PTO_PROGRAM_ABI_VERSION, "chains", "", 0, NULL,
                                          orch_chains};

static int run_chains(fx_t *f, rt_trace_t *tr, int64_t chains, int64_t len, int64_t heap,
                      int64_t nested, rt_run_stats_t *st, pto_error_t *err) {
  int32_t *buf = fx_buffer(f, 64);
  pto_arg_t args[5] = {fx_arg_buffer(buf, 64), fx_arg_int(chains), fx_arg_int(len),
                       fx_arg_int(heap), fx_arg_int(nested)};
  rt_run_config_t cfg = {.trace = tr};
  int rc = rt_run(f->rt, &chains_prog, args, 5, &cfg, st, err);
  fx_free(f, buf, 64);
  return rc;
}

START_TEST(records_every_task_and_its_dependencies) {
  fx_t f;
  rt_trace_t *tr;
  rt_run_stats_t st;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(64, 1u << 20, 256);
  uint64_t peak[3][PTO_RING_COUNT] = {{0}};

  fx_open(&f);
  fx_arena(&f, &s);
  ck_assert_int_eq(rt_trace_create(2, 0, &tr), 0);
  ck_assert_int_eq(run_chains(&f, tr, 3, 4, 2048, 1, &st, &err), 0);
  ck_assert_uint_eq(tr->ntasks, 12);
  ck_assert(!rt_trace_incomplete(tr));
  ck_assert_uint_eq(tr->nscopes, 2); /* the outermost and the nested one */
  ck_assert_uint_eq(tr->scopes[1].depth, 1);
  ck_assert_uint_eq(tr->scopes[1].ring, 1);
  ck_assert_uint_eq(tr->scopes[1].tasks, 12);
  for (uint32_t i = 0; i < tr->ntasks; i++) {
    const rt_trace_task_t *k = &tr->tasks[i];
    ck_assert(k->kernel == k_touch);
    ck_assert_uint_eq(k->ring, 1);
    ck_assert_uint_eq(k->scope, 1);
    ck_assert_uint_le(k->core, tr->ncores); /* a core, or the orchestrator */
    ck_assert_uint_le(k->submit_ns, k->ready_ns);
    ck_assert_uint_le(k->ready_ns, k->start_ns);
    ck_assert_uint_le(k->start_ns, k->end_ns);
    ck_assert_uint_le(k->end_ns, tr->end_ns);
    ck_assert_uint_eq(k->heap_bytes, 2048);
    /* Task i continues chain i % 3: it depends on task i - 3 alone. */
    if (i < 3) {
      ck_assert_uint_eq(k->ndeps, 0);
    } else {
      ck_assert_uint_eq(k->ndeps, 1);
      ck_assert_uint_eq(tr->deps[k->dep_begin], i - 3);
    }
    if (k->ring_tasks > peak[0][k->ring]) peak[0][k->ring] = k->ring_tasks;
    if (k->ring_heap > peak[1][k->ring]) peak[1][k->ring] = k->ring_heap;
    if (k->ring_deps > peak[2][k->ring]) peak[2][k->ring] = k->ring_deps;
  }
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    ck_assert_uint_eq(peak[0][r], st.peak_tasks[r]);
    ck_assert_uint_eq(peak[1][r], st.peak_heap[r]);
    ck_assert_uint_eq(peak[2][r], st.peak_dep_pool[r]);
  }
  /* Level 2: the orchestration is a phase of the orchestrator's lane. */
  ck_assert_uint_ge(tr->lanes[tr->ncores].nphases, 1);
  ck_assert_str_eq(tr->lanes[tr->ncores].phases[0].name, "orchestrate");
  rt_trace_free(tr);
  fx_close(&f);
}
END_TEST

START_TEST(a_run_past_the_cap_is_marked_incomplete) {
  fx_t f;
  rt_trace_t *tr;
  rt_run_stats_t st;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(64, 1u << 20, 256);

  fx_open(&f);
  fx_arena(&f, &s);
  ck_assert_int_eq(rt_trace_create(1, 8, &tr), 0);
  ck_assert_int_eq(run_chains(&f, tr, 2, 10, 0, 1, &st, &err), 0);
  ck_assert_uint_eq(st.tasks, 20);
  ck_assert_uint_eq(tr->ntasks, 8);
  ck_assert_uint_eq(tr->tasks_dropped, 12);
  ck_assert(rt_trace_incomplete(tr));
  /* The same record serves the next run from scratch. */
  ck_assert_int_eq(run_chains(&f, tr, 2, 2, 0, 0, &st, &err), 0);
  ck_assert_uint_eq(tr->ntasks, 4);
  ck_assert(!rt_trace_incomplete(tr));
  rt_trace_free(tr);
  fx_close(&f);
}
END_TEST

START_TEST(a_heap_deadlock_records_the_failing_request) {
  fx_t f;
  rt_trace_t *tr;
  rt_run_stats_t st;
  pto_error_t err;
  pto_sizing_resolved_t s = fx_sizing(64, 8192, 256);

  fx_open(&f);
  fx_arena(&f, &s);
  ck_assert_int_eq(rt_trace_create(2, 0, &tr), 0);
  /* Top level: every task stays live, 4 x 2 KiB fill ring 0's 8 KiB. */
  ck_assert_int_eq(run_chains(&f, tr, 5, 1, 2048, 0, &st, &err), -PTO_E_HEAP_RING_DEADLOCK);
  ck_assert(tr->failure.set);
  ck_assert_int_eq(tr->failure.code, PTO_E_HEAP_RING_DEADLOCK);
  ck_assert_uint_eq(tr->failure.ring, 0);
  ck_assert_str_eq(tr->failure.field, "ring_heap");
  ck_assert_uint_eq(tr->failure.requested, 2048);
  ck_assert_uint_eq(tr->failure.capacity, 8192);
  ck_assert_uint_eq(tr->failure.ring_heap, 8192);
  ck_assert_uint_eq(tr->failure.ring_tasks, 4);
  ck_assert_uint_eq(tr->failure.scope, 0);
  ck_assert_uint_eq(tr->ntasks, 4);
  ck_assert_uint_eq(tr->tasks[3].ring_heap, 8192);
  rt_trace_free(tr);
  /* Untraced, the runtime is none the worse. */
  ck_assert_int_eq(run_chains(&f, NULL, 2, 1, 2048, 0, &st, &err), 0);
  fx_close(&f);
}
END_TEST

static Suite *runtime_trace_suite(void) {
  Suite *s = suite_create("runtime_trace");
  TCase *tc = tcase_create("trace");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, records_every_task_and_its_dependencies);
  tcase_add_test(tc, a_run_past_the_cap_is_marked_incomplete);
  tcase_add_test(tc, a_heap_deadlock_records_the_failing_request);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(runtime_trace_suite)
