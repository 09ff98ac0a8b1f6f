/* SPDX-License-Identifier: Apache-2.0 */
/* test_program_cost.c — the cost the shipped programs declare
 * (pto_program_cost, pto/program.h), which decides whether a dispatch may
 * run on the daemon's loop: for the arguments the orchestration accepts
 * it bounds the tasks the run really submits (counted by seq_orch); for
 * arguments the orchestration refuses it declares nothing (-1).  And the
 * daemon's conversion to time (jobs_cost_bound_ns): noop(1) is within
 * the loop's budget, noop(1, task_us = 1000) and noop(200) are not, and
 * nothing overflows into a small number. */
#include <check.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "program_open.h"
#include "jobs.h"
#include "seq_orch.h"

typedef struct costed {
  void *handle;
  const pto_program_t *prog;
  pto_cost_fn cost;
} costed_t;

static costed_t load(const char *name) {
  costed_t l;
  l.handle = program_open(name, &l.prog);
  *(void **)&l.cost = dlsym(l.handle, PTO_PROGRAM_COST_SYMBOL);
  ck_assert_msg(l.cost != NULL, "%s exports no %s", name, PTO_PROGRAM_COST_SYMBOL);
  return l;
}

static pto_arg_t int_arg(int64_t v) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = PTO_ARG_INT;
  a.i = v;
  return a;
}

/* f32 memory of n elements; cost functions see no memory (base NULL), the
 * run gets real memory. */
static pto_arg_t mem_arg(pto_arg_kind_t kind, float *base, uint64_t n) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.base = base;
  a.base_bytes = a.bytes = n * sizeof(float);
  return a;
}

/* The declared cost of `args`, checked against what the run submits. */
static pto_cost_t cost_bounds_run(const costed_t *l, pto_arg_t *args, uint32_t nargs) {
  pto_arg_t bare[8];
  pto_cost_t cost;
  seq_orch_t *seq;
  for (uint32_t i = 0; i < nargs; i++) {
    bare[i] = args[i];
    bare[i].base = NULL;
  }
  ck_assert_int_eq(l->cost(bare, nargs, &cost), 0);
  ck_assert_int_eq(seq_orch_new(&seq), 0);
  ck_assert_int_eq(seq_orch_run(seq, l->prog->orchestrate, args, nargs), 0);
  ck_assert_uint_le(seq_orch_stats(seq)->tasks, cost.tasks);
  ck_assert_uint_eq(seq_orch_stats(seq)->tasks, cost.tasks); /* exact here */
  seq_orch_free(seq);
  return cost;
}

START_TEST(noop_declares_its_tasks_and_sleep) {
  costed_t l = load("noop");
  pto_arg_t a[3] = {int_arg(5), int_arg(1), int_arg(3)};
  pto_cost_t c = cost_bounds_run(&l, a, 3);
  ck_assert_uint_eq(c.wait_us, 15);
  ck_assert_uint_eq(c.bytes + c.flops, 0);
  c = cost_bounds_run(&l, a, 1); /* task_us defaults to 0 */
  ck_assert_uint_eq(c.tasks, 5);
  ck_assert_uint_eq(c.wait_us, 0);
  /* What the orchestration refuses is not bounded. */
  a[0] = int_arg(-1);
  ck_assert_int_eq(l.cost(a, 1, &c), -1);
  a[0] = int_arg(1);
  a[2] = int_arg(10000001);
  ck_assert_int_eq(l.cost(a, 3, &c), -1);
  a[2].kind = PTO_ARG_FLOAT;
  ck_assert_int_eq(l.cost(a, 3, &c), -1);
  ck_assert_int_eq(l.cost(a, 0, &c), -1);
  dlclose(l.handle);
}
END_TEST

START_TEST(vector_add_and_matmul_declare_their_work) {
  costed_t va = load("vector_add"), mm = load("matmul");
  enum { N = 5000, M = 70, K = 65, P = 3 };
  float *x = calloc(N, sizeof(float)), *y = calloc(N, sizeof(float)), *z = calloc(N, sizeof(float));
  pto_arg_t v[3] = {mem_arg(PTO_ARG_INPUT, x, N), mem_arg(PTO_ARG_INPUT, y, N),
                    mem_arg(PTO_ARG_OUTPUT, z, N)};
  pto_arg_t m[6] = {mem_arg(PTO_ARG_INPUT, x, M * K), mem_arg(PTO_ARG_INPUT, y, K * P),
                    mem_arg(PTO_ARG_OUTPUT, z, M * P), int_arg(M), int_arg(P), int_arg(K)};
  pto_cost_t c = cost_bounds_run(&va, v, 3);
  ck_assert_uint_eq(c.tasks, 2); /* 4096-element tiles */
  ck_assert_uint_eq(c.flops, N);
  ck_assert_uint_eq(c.bytes, 3u * N * sizeof(float));
  c = cost_bounds_run(&mm, m, 6);
  ck_assert_uint_eq(c.tasks, 2 * 1 * 2); /* 64-wide tiles of m, n, k */
  ck_assert_uint_eq(c.flops, 2u * M * P * K);
  ck_assert_uint_ge(c.bytes, (uint64_t)(M * K + K * P + M * P) * sizeof(float));
  m[4] = int_arg(0);
  ck_assert_int_eq(mm.cost(m, 6, &c), -1);
  m[4] = int_arg(INT64_MAX);
  ck_assert_int_eq(mm.cost(m, 6, &c), -1); /* 2*m*n*k overflows */
  ck_assert_int_eq(va.cost(v, 2, &c), -1);
  free(x);
  free(y);
  free(z);
  dlclose(va.handle);
  dlclose(mm.handle);
}
END_TEST

START_TEST(bound_in_time_against_the_loop_budget) {
  pto_cost_t one = {.tasks = 1}, sleepy = {.tasks = 1, .wait_us = 1000}, many = {.tasks = 200};
  pto_cost_t huge = {.tasks = UINT64_MAX / 2, .wait_us = UINT64_MAX / 2};
  ck_assert_uint_le(jobs_cost_bound_ns(&one), JOBS_LOOP_BUDGET_NS);
  ck_assert_uint_gt(jobs_cost_bound_ns(&sleepy), JOBS_LOOP_BUDGET_NS);
  ck_assert_uint_gt(jobs_cost_bound_ns(&many), JOBS_LOOP_BUDGET_NS);
  ck_assert_uint_eq(jobs_cost_bound_ns(&huge), UINT64_MAX);
}
END_TEST

static Suite *program_cost_suite(void) {
  Suite *s = suite_create("program_cost");
  TCase *tc = tcase_create("program_cost");
  tcase_add_test(tc, noop_declares_its_tasks_and_sleep);
  tcase_add_test(tc, vector_add_and_matmul_declare_their_work);
  tcase_add_test(tc, bound_in_time_against_the_loop_budget);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(program_cost_suite)
