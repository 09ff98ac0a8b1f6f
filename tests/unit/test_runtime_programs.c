/* SPDX-License-Identifier: Apache-2.0 */
/* test_runtime_programs.c — the device programs of programs/, loaded by name
 * and run on the real runtime, checked against the plain references of
 * tests/common; among them the seed scenario (004): attention_prefill with a
 * ring-0 heap below the H*S*S*4 need fails with HEAP_RING_DEADLOCK on ring
 * 0 and passes at double the need, and the ring-0 peak it reports lies
 * between the two (and equals the need seq_orch computes). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "reference.h"
#include "runtime_fixture.h"
#include "seq_orch.h"

static float *dev_floats(fx_t *f, uint64_t n) { return (float *)(void *)fx_buffer(f, n); }

static void free_floats(fx_t *f, float *p, uint64_t n) { fx_free(f, (int32_t *)(void *)p, n); }

static pto_arg_t mem_arg(pto_arg_kind_t kind, float *p, uint64_t n) {
  pto_arg_t a = fx_arg_buffer((int32_t *)(void *)p, n);
  a.kind = kind;
  return a;
}

static void expect_close(const float *got, const float *want, uint64_t n, float tol) {
  for (uint64_t i = 0; i < n; i++)
    ck_assert_msg(fabsf(got[i] - want[i]) <= tol * (1.0f + fabsf(want[i])),
                  "element %llu: got %g, want %g", (unsigned long long)i, (double)got[i],
                  (double)want[i]);
}

static const pto_program_t *program(fx_t *f, const char *name) {
  const pto_program_t *p;
  pto_error_t err;
  ck_assert_msg(rt_program_get(f->rt, name, &p, &err) == 0, "%s", err.message);
  return p;
}

enum { S = 32, H = 3, D = 16, T = 40 };
#define SCORE_BYTES (S * S * 4) /* a multiple of 1024: the need is H * S*S*4 */
#define NEED (H * SCORE_BYTES)   /* 12288 */

START_TEST(test_seed_prefill_heap) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  uint64_t seed = 7, n = (uint64_t)S * H * D;
  pto_sizing_resolved_t small = fx_sizing(64, 8192, 64), dbl = fx_sizing(64, 2 * 16384, 64);
  float *q, *k, *v, *kv, *out, *want = malloc(n * sizeof(float));
  seq_orch_t *seq;
  const pto_program_t *p;

  fx_open(&f);
  p = program(&f, "attention_prefill");
  q = dev_floats(&f, n);
  k = dev_floats(&f, n);
  v = dev_floats(&f, n);
  kv = dev_floats(&f, 2u * T * H * D);
  out = dev_floats(&f, n);
  ref_fill_uniform(q, n, &seed);
  ref_fill_uniform(k, n, &seed);
  ref_fill_uniform(v, n, &seed);
  ref_attention_prefill(q, k, v, want, S, H, D);
  pto_arg_t args[8] = {mem_arg(PTO_ARG_INPUT, q, n),         mem_arg(PTO_ARG_INPUT, k, n),
                       mem_arg(PTO_ARG_INPUT, v, n),         mem_arg(PTO_ARG_BUFFER, kv, 2u * T * H * D),
                       mem_arg(PTO_ARG_OUTPUT, out, n),      fx_arg_int(S),
                       fx_arg_int(H),                        fx_arg_int(D)};

  /* Below the need (8 KiB < 12 KiB): ring 0 cannot hold the score tiles. */
  fx_arena(&f, &small);
  ck_assert_int_eq(rt_run(f.rt, p, args, 8, NULL, &st, &err), -PTO_E_HEAP_RING_DEADLOCK);
  ck_assert_int_eq(err.ring, 0);
  ck_assert_uint_eq(err.requested, SCORE_BYTES);
  ck_assert_uint_eq(err.capacity, 8192);
  ck_assert_str_eq(err.hint, "raise ring_heap[0] to at least 16384 (ring 0 needs 12288 bytes "
                             "live), or submit these tasks in a nested scope");

  /* At double the need (rounded to a power of two): it passes, correctly. */
  fx_arena(&f, &dbl);
  ck_assert_msg(rt_run(f.rt, p, args, 8, NULL, &st, &err) == 0, "%s", err.message);
  expect_close(out, want, n, 1e-4f);
  for (uint64_t i = 0; i < (uint64_t)S * H * D; i++) {
    ck_assert(kv[i] == k[i]);
    ck_assert(kv[(uint64_t)T * H * D + i] == v[i]);
  }
  ck_assert_uint_gt(st.peak_heap[0], 8192);
  ck_assert_uint_lt(st.peak_heap[0], 2 * 16384);
  ck_assert_uint_eq(st.peak_heap[0], NEED);
  ck_assert_uint_eq(st.tasks, 2 + 3 * H);
  ck_assert_uint_eq(st.peak_tasks[0], 2 + 3 * H);

  /* The sequential executor computes the same need. */
  ck_assert_int_eq(seq_orch_new(&seq), 0);
  seq_orch_set_check_inputs(seq, 0);
  ck_assert_int_eq(seq_orch_run(seq, p->orchestrate, args, 8), 0);
  ck_assert_uint_eq(seq_orch_stats(seq)->ring_peak_heap[0], st.peak_heap[0]);
  seq_orch_free(seq);

  free_floats(&f, q, n);
  free_floats(&f, k, n);
  free_floats(&f, v, n);
  free_floats(&f, kv, 2u * T * H * D);
  free_floats(&f, out, n);
  free(want);
  fx_close(&f);
}
END_TEST

START_TEST(test_matmul_and_vector_add) {
  enum { M = 150, N = 70, K = 200, V = 10000 };
  fx_t f;
  pto_error_t err;
  uint64_t seed = 3;
  pto_sizing_resolved_t s = fx_sizing(256, 1 << 16, 256);
  float *a, *b, *c, *want = malloc(sizeof(float) * (M * N > V ? M * N : V));

  fx_open(&f);
  fx_arena(&f, &s);
  a = dev_floats(&f, M * K);
  b = dev_floats(&f, K * N);
  c = dev_floats(&f, M * N);
  ref_fill_uniform(a, M * K, &seed);
  ref_fill_uniform(b, K * N, &seed);
  ref_matmul(a, b, want, M, N, K);
  pto_arg_t margs[6] = {mem_arg(PTO_ARG_INPUT, a, M * K), mem_arg(PTO_ARG_INPUT, b, K * N),
                        mem_arg(PTO_ARG_OUTPUT, c, M * N), fx_arg_int(M), fx_arg_int(N),
                        fx_arg_int(K)};
  for (int round = 0; round < 3; round++) {
    memset(c, 0, sizeof(float) * M * N);
    ck_assert_msg(rt_run(f.rt, program(&f, "matmul"), margs, 6, NULL, NULL, &err) == 0, "%s",
                  err.message);
    expect_close(c, want, M * N, 1e-4f);
  }
  free_floats(&f, a, M * K);
  free_floats(&f, b, K * N);
  free_floats(&f, c, M * N);

  a = dev_floats(&f, V);
  b = dev_floats(&f, V);
  c = dev_floats(&f, V);
  ref_fill_uniform(a, V, &seed);
  ref_fill_uniform(b, V, &seed);
  ref_vector_add(a, b, want, V);
  pto_arg_t vargs[3] = {mem_arg(PTO_ARG_INPUT, a, V), mem_arg(PTO_ARG_INPUT, b, V),
                        mem_arg(PTO_ARG_OUTPUT, c, V)};
  ck_assert_msg(rt_run(f.rt, program(&f, "vector_add"), vargs, 3, NULL, NULL, &err) == 0, "%s",
                err.message);
  expect_close(c, want, V, 0.0f);
  free_floats(&f, a, V);
  free_floats(&f, b, V);
  free_floats(&f, c, V);
  free(want);
  fx_close(&f);
}
END_TEST

START_TEST(test_decode_after_prefill_and_noop) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  uint64_t seed = 11, n = (uint64_t)S * H * D, hd = (uint64_t)H * D;
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  float *q = NULL, *k, *v, *kv, *out, *want = malloc(hd * sizeof(float));

  fx_open(&f);
  fx_arena(&f, &s);
  q = dev_floats(&f, n);
  k = dev_floats(&f, n);
  v = dev_floats(&f, n);
  kv = dev_floats(&f, 2u * T * hd);
  out = dev_floats(&f, n);
  ref_fill_uniform(q, n, &seed);
  ref_fill_uniform(k, n, &seed);
  ref_fill_uniform(v, n, &seed);
  pto_arg_t pargs[8] = {mem_arg(PTO_ARG_INPUT, q, n),    mem_arg(PTO_ARG_INPUT, k, n),
                        mem_arg(PTO_ARG_INPUT, v, n),    mem_arg(PTO_ARG_BUFFER, kv, 2u * T * hd),
                        mem_arg(PTO_ARG_OUTPUT, out, n), fx_arg_int(S),
                        fx_arg_int(H),                   fx_arg_int(D)};
  ck_assert_msg(rt_run(f.rt, program(&f, "attention_prefill"), pargs, 8, NULL, NULL, &err) == 0,
                "%s", err.message);
  /* Decode position S with new q/k/v rows (reusing the first rows' memory). */
  pto_arg_t dargs[8] = {mem_arg(PTO_ARG_INPUT, q, hd),    mem_arg(PTO_ARG_INPUT, k, hd),
                        mem_arg(PTO_ARG_INPUT, v, hd),    mem_arg(PTO_ARG_BUFFER, kv, 2u * T * hd),
                        mem_arg(PTO_ARG_OUTPUT, out, hd), fx_arg_int(S),
                        fx_arg_int(H),                    fx_arg_int(D)};
  ck_assert_msg(rt_run(f.rt, program(&f, "attention_decode"), dargs, 8, NULL, NULL, &err) == 0,
                "%s", err.message);
  ref_attention_decode(q, kv, want, T, S, H, D);
  expect_close(out, want, hd, 1e-4f);

  /* noop: 60 tasks in 4 nested scopes (one scope: fewer than the window), on ring 3. */
  pto_arg_t nargs[2] = {fx_arg_int(60), fx_arg_int(4)};
  ck_assert_msg(rt_run(f.rt, program(&f, "noop"), nargs, 2, NULL, &st, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(st.tasks, 60);
  ck_assert_uint_eq(st.ring_tasks[3], 60);

  free_floats(&f, q, n);
  free_floats(&f, k, n);
  free_floats(&f, v, n);
  free_floats(&f, kv, 2u * T * hd);
  free_floats(&f, out, n);
  free(want);
  fx_close(&f);
}
END_TEST

Suite *runtime_programs_suite(void) {
  Suite *s = suite_create("runtime_programs");
  TCase *tc = tcase_create("programs");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_seed_prefill_heap);
  tcase_add_test(tc, test_matmul_and_vector_add);
  tcase_add_test(tc, test_decode_after_prefill_and_noop);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(runtime_programs_suite)
