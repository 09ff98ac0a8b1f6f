/* SPDX-License-Identifier: Apache-2.0 */
/* test_runtime.c — the ring runtime's semantics, proved by outputs:
 * dependencies (read-after-write, write-after-write, overlapping slices of
 * 1-D and 2-D buffers), heap wrap-around through a small heap, an inner
 * scope reclaiming while ring 0 is pinned, per-ring peaks, and an idle
 * runtime using no CPU.  Kernels of the early tasks sleep, so that a
 * missing dependency would let a later task run first and change the
 * output. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

#include "check_main.h"
#include "runtime_fixture.h"
#include "rt_internal.h"
#include "tensormap.h"

#define SLOW_US 3000

/* ---- read-after-write and write-after-write ----------------------------- */

/* x := 1 (slow), then five INOUT steps x := x*10 + k: 123456 only in order. */
static int orch_chain(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                      uint32_t nargs) {
  pto_task_args_t a;
  int rc;
  (void)nargs;
  fx_task(&a);
  fx_tensor(&a, fx_view(args[0].base, 4, 0, 4), PTO_OUT_EXISTING);
  fx_scalar(&a, 1);
  fx_scalar(&a, SLOW_US);
  rc = api->submit(o, fx_k_fill, &a);
  for (int k = 2; k <= 6 && !rc; k++) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 4, 0, 4), PTO_INOUT);
    fx_scalar(&a, k);
    fx_scalar(&a, k % 2 ? SLOW_US / 3 : 0);
    rc = api->submit(o, fx_k_step, &a);
  }
  /* A reader of the result, into a second buffer. */
  if (!rc) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 4, 0, 4), PTO_IN);
    fx_tensor(&a, fx_view(args[1].base, 4, 0, 4), PTO_OUT_EXISTING);
    rc = api->submit(o, fx_k_copy, &a);
  }
  return rc;
}

START_TEST(test_raw_and_waw_chain) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 4), *y = fx_buffer(&f, 4);
  pto_arg_t args[2] = {fx_arg_buffer(x, 4), fx_arg_buffer(y, 4)};
  for (int round = 0; round < 3; round++) {
    memset(y, 0, 16);
    ck_assert_msg(fx_run(&f, orch_chain, args, 2, &st, &err) == 0, "%s", err.message);
    for (int i = 0; i < 4; i++) {
      ck_assert_int_eq(x[i], 123456);
      ck_assert_int_eq(y[i], 123456);
    }
    ck_assert_uint_eq(st.tasks, 7);
    ck_assert_uint_eq(st.ring_tasks[0], 7);
    ck_assert_uint_eq(st.peak_tasks[0], 7); /* top level: all live until the end */
  }
  fx_free(&f, x, 4);
  fx_free(&f, y, 4);
  fx_close(&f);
}
END_TEST

/* x := 1, two INOUT steps in a scope, then copied out: y = 123. */
static int orch_wrap_small(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                           uint32_t nargs) {
  pto_task_args_t a;
  int rc;
  (void)nargs;
  fx_task(&a);
  fx_tensor(&a, fx_view(args[0].base, 4, 0, 1), PTO_OUT_EXISTING);
  fx_scalar(&a, 1);
  rc = api->submit(o, fx_k_fill, &a);
  api->scope_begin(o);
  for (int k = 2; k <= 3 && !rc; k++) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 4, 0, 1), PTO_INOUT);
    fx_scalar(&a, k);
    rc = api->submit(o, fx_k_step, &a);
  }
  api->scope_end(o);
  if (!rc) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 4, 0, 1), PTO_IN);
    fx_tensor(&a, fx_view(args[1].base, 4, 0, 1), PTO_OUT_EXISTING);
    rc = api->submit(o, fx_k_copy, &a);
  }
  return rc;
}

/* ---- overlapping slices -------------------------------------------------- */

/* Two slow writers fill halves of x (1s, 2s); a reader of the middle copies
 * it out; a writer of the first quarter (INOUT) runs after the first half's
 * writer; a final reader sees everything. */
static int orch_slices(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                       uint32_t nargs) {
  pto_task_args_t a;
  int32_t *x = args[0].base, *y = args[1].base, *z = args[2].base;
  int rc = 0;
  (void)nargs;
  for (int half = 0; half < 2 && !rc; half++) {
    fx_task(&a);
    fx_tensor(&a, fx_view(x, 64, (uint64_t)half * 32, 32), PTO_OUT_EXISTING);
    fx_scalar(&a, half + 1);
    fx_scalar(&a, half ? SLOW_US : 2 * SLOW_US);
    rc = api->submit(o, fx_k_fill, &a);
  }
  if (!rc) {
    fx_task(&a);
    fx_tensor(&a, fx_view(x, 64, 16, 32), PTO_IN);
    fx_tensor(&a, fx_view(y, 32, 0, 32), PTO_OUT_EXISTING);
    rc = api->submit(o, fx_k_copy, &a);
  }
  if (!rc) {
    fx_task(&a);
    fx_tensor(&a, fx_view(x, 64, 0, 16), PTO_INOUT);
    fx_scalar(&a, 7);
    rc = api->submit(o, fx_k_step, &a);
  }
  if (!rc) {
    fx_task(&a);
    fx_tensor(&a, fx_view(x, 64, 0, 64), PTO_IN);
    fx_tensor(&a, fx_view(z, 64, 0, 64), PTO_OUT_EXISTING);
    rc = api->submit(o, fx_k_copy, &a);
  }
  return rc;
}

START_TEST(test_overlapping_slices) {
  fx_t f;
  pto_error_t err;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 64), *y = fx_buffer(&f, 32), *z = fx_buffer(&f, 64);
  pto_arg_t args[3] = {fx_arg_buffer(x, 64), fx_arg_buffer(y, 32), fx_arg_buffer(z, 64)};
  ck_assert_msg(fx_run(&f, orch_slices, args, 3, NULL, &err) == 0, "%s", err.message);
  for (int i = 0; i < 32; i++) ck_assert_int_eq(y[i], i < 16 ? 1 : 2);
  for (int i = 0; i < 64; i++) ck_assert_int_eq(z[i], i < 16 ? 17 : i < 32 ? 1 : 2);
  fx_free(&f, x, 64);
  fx_free(&f, y, 32);
  fx_free(&f, z, 64);
  fx_close(&f);
}
END_TEST

/* An 8x8 matrix written as four slow 4x4 tiles; a reader of each tile and
 * of a 4x4 window straddling all four copies them out. */
static pto_tensor_t tile(void *base, uint64_t r0, uint64_t c0, uint64_t rows, uint64_t cols) {
  uint64_t shape[2] = {rows, cols};
  pto_tensor_t t = pto_tensor_view(base, 64 * sizeof(int32_t), PTO_I32, r0 * 8 + c0, 2, shape);
  t.strides[0] = 8;
  t.strides[1] = 1;
  return t;
}

static void k_fill2(const pto_task_args_t *a) {
  const pto_tensor_t *t = &a->tensor[0];
  fx_sleep_us((uint64_t)a->scalar[1].i);
  for (uint64_t r = 0; r < t->shape[0]; r++)
    for (uint64_t c = 0; c < t->shape[1]; c++)
      ((int32_t *)pto_tensor_data(t))[(int64_t)r * t->strides[0] + (int64_t)c] =
          (int32_t)a->scalar[0].i;
}

static void k_copy2(const pto_task_args_t *a) {
  const pto_tensor_t *s = &a->tensor[0], *d = &a->tensor[1];
  for (uint64_t r = 0; r < s->shape[0]; r++)
    for (uint64_t c = 0; c < s->shape[1]; c++)
      ((int32_t *)pto_tensor_data(d))[r * s->shape[1] + c] =
          ((int32_t *)pto_tensor_data(s))[(int64_t)r * s->strides[0] + (int64_t)c];
}

static int orch_tiles(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                      uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)nargs;
  for (int t = 0; t < 4 && !rc; t++) {
    fx_task(&a);
    fx_tensor(&a, tile(args[0].base, (uint64_t)(t / 2) * 4, (uint64_t)(t % 2) * 4, 4, 4),
              PTO_OUT_EXISTING);
    fx_scalar(&a, t + 1);
    fx_scalar(&a, (4 - t) * 1000);
    rc = api->submit(o, k_fill2, &a);
  }
  for (int t = 0; t < 5 && !rc; t++) {
    fx_task(&a);
    fx_tensor(&a,
              t < 4 ? tile(args[0].base, (uint64_t)(t / 2) * 4, (uint64_t)(t % 2) * 4, 4, 4)
                    : tile(args[0].base, 2, 2, 4, 4),
              PTO_IN);
    fx_tensor(&a, fx_view(args[1].base, 80, (uint64_t)t * 16, 16), PTO_OUT_EXISTING);
    rc = api->submit(o, k_copy2, &a);
  }
  return rc;
}

START_TEST(test_overlapping_tiles) {
  fx_t f;
  pto_error_t err;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  fx_arena(&f, &s);
  int32_t *m = fx_buffer(&f, 64), *out = fx_buffer(&f, 80);
  pto_arg_t args[2] = {fx_arg_buffer(m, 64), fx_arg_buffer(out, 80)};
  ck_assert_msg(fx_run(&f, orch_tiles, args, 2, NULL, &err) == 0, "%s", err.message);
  for (int t = 0; t < 4; t++)
    for (int i = 0; i < 16; i++) ck_assert_int_eq(out[t * 16 + i], t + 1);
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++)
      ck_assert_int_eq(out[64 + r * 4 + c], (r + 2 < 4 ? 0 : 2) + (c + 2 < 4 ? 1 : 2));
  fx_free(&f, m, 64);
  fx_free(&f, out, 80);
  fx_close(&f);
}
END_TEST

/* The overlap rules themselves (what the map decides, not how fast). */
START_TEST(test_overlap_rules) {
  static int32_t buf[64];
  pto_tensor_t a = fx_view(buf, 64, 0, 32), b = fx_view(buf, 64, 32, 32), c = fx_view(buf, 64, 0, 64);
  ck_assert_int_eq(tm_overlap(&a, &b), TM_DISJOINT);
  ck_assert_int_eq(tm_overlap(&a, &c), TM_COVERS);
  ck_assert_int_eq(tm_overlap(&c, &a), TM_OVERLAP);
  /* Tiles of one matrix: disjoint by dimension though their byte ranges meet. */
  pto_tensor_t t00 = tile(buf, 0, 0, 4, 4), t01 = tile(buf, 0, 4, 4, 4), mid = tile(buf, 2, 2, 4, 4);
  ck_assert_int_eq(tm_overlap(&t00, &t01), TM_DISJOINT);
  ck_assert_int_eq(tm_overlap(&t00, &mid), TM_OVERLAP);
  ck_assert_int_eq(tm_overlap(&t00, &t00), TM_COVERS);
  /* Different strides over shared bytes: assume overlap. */
  pto_tensor_t col = fx_view(buf, 64, 1, 8);
  col.strides[0] = 8;
  ck_assert_int_eq(tm_overlap(&t01, &col), TM_OVERLAP);
  ck_assert(!tm_contiguous(&col));
  ck_assert(tm_contiguous(&c));
}
END_TEST

/* ---- heap wrap-around and scopes ----------------------------------------- */

#define WRAP_ITERS 300

/* Per iteration, in a scope (ring 1): a task fills a new OUT of 700 ints
 * (2800 bytes -> 3072 on the heap) with i, a second sums it into out[i].
 * Ring 1's heap is 16 KiB, so the allocations wrap around it many times. */
static int orch_wrap(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                     uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)nargs;
  /* Ring 0 stays pinned by one top-level task the whole run. */
  fx_task(&a);
  fx_tensor(&a, fx_out(16), PTO_OUT);
  fx_scalar(&a, 5);
  rc = api->submit(o, fx_k_fill, &a);
  for (int i = 0; i < WRAP_ITERS && !rc; i++) {
    pto_tensor_t tmp;
    api->scope_begin(o);
    fx_task(&a);
    fx_tensor(&a, fx_out(700), PTO_OUT);
    fx_scalar(&a, i);
    fx_scalar(&a, i % 50 == 0 ? 500 : 0);
    rc = api->submit(o, fx_k_fill, &a);
    tmp = a.tensor[0];
    if (!rc) {
      fx_task(&a);
      fx_tensor(&a, tmp, PTO_IN);
      fx_tensor(&a, fx_view(args[0].base, WRAP_ITERS, (uint64_t)i, 1), PTO_OUT_EXISTING);
      rc = api->submit(o, fx_k_sum, &a);
    }
    api->scope_end(o);
  }
  return rc;
}

START_TEST(test_heap_wraps_in_inner_scope) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(16, 16384, 64);
  fx_arena(&f, &s);
  int32_t *out = fx_buffer(&f, WRAP_ITERS);
  pto_arg_t args[1] = {fx_arg_buffer(out, WRAP_ITERS)};
  for (int round = 0; round < 2; round++) {
    memset(out, 0xff, WRAP_ITERS * sizeof(int32_t));
    ck_assert_msg(fx_run(&f, orch_wrap, args, 1, &st, &err) == 0, "%s", err.message);
    for (int i = 0; i < WRAP_ITERS; i++) ck_assert_int_eq(out[i], 700 * i);
    ck_assert_uint_eq(st.ring_tasks[0], 1);
    ck_assert_uint_eq(st.ring_tasks[1], 2 * WRAP_ITERS);
    ck_assert_uint_eq(st.peak_tasks[0], 1);
    ck_assert_uint_eq(st.peak_heap[0], 1024);
    /* Far more went through ring 1 than its heap holds: it was reclaimed. */
    ck_assert_uint_le(st.peak_heap[1], 16384);
    ck_assert_uint_ge(st.peak_heap[1], 3072);
    ck_assert_uint_le(st.peak_tasks[1], 15);
    ck_assert_uint_ge(st.peak_dep_pool[1], 1);
  }
  fx_free(&f, out, WRAP_ITERS);
  fx_close(&f);
}
END_TEST

/* Many empty tasks through a small window on every ring depth, nested
 * scopes deeper than 3 sharing ring 3. */
static int orch_many(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                     uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)nargs;
  (void)args;
  for (int i = 0; i < 2000 && !rc; i++) {
    int depth = 1 + i % 5;
    for (int d = 0; d < depth; d++) api->scope_begin(o);
    fx_task(&a);
    rc = api->submit(o, fx_k_nop, &a);
    for (int d = 0; d < depth; d++) api->scope_end(o);
  }
  return rc;
}

START_TEST(test_many_tasks_small_windows) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(4, 1024, 4);
  fx_arena(&f, &s);
  ck_assert_msg(fx_run(&f, orch_many, NULL, 0, &st, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(st.tasks, 2000);
  ck_assert_uint_eq(st.ring_tasks[0], 0);
  ck_assert_uint_eq(st.ring_tasks[1], 400);
  ck_assert_uint_eq(st.ring_tasks[2], 400);
  ck_assert_uint_eq(st.ring_tasks[3], 1200);
  for (int r = 1; r < 4; r++) ck_assert_uint_le(st.peak_tasks[r], 3);
  fx_close(&f);
}
END_TEST

/* ---- many kernels at once --------------------------------------------------- */

/* 32 slow independent kernels on 2 cores, then one reader of all their
 * outputs: while kernels wait, cores leave completions to the schedulers. */
static int orch_parallel(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                         uint32_t nargs) {
  pto_task_args_t a;
  int rc = 0;
  (void)nargs;
  for (int i = 0; i < 32 && !rc; i++) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 32, (uint64_t)i, 1), PTO_OUT_EXISTING);
    fx_scalar(&a, i);
    fx_scalar(&a, 1000);
    rc = api->submit(o, fx_k_fill, &a);
  }
  if (!rc) {
    fx_task(&a);
    fx_tensor(&a, fx_view(args[0].base, 32, 0, 32), PTO_IN);
    fx_tensor(&a, fx_view(args[1].base, 1, 0, 1), PTO_OUT_EXISTING);
    rc = api->submit(o, fx_k_sum, &a);
  }
  return rc;
}

START_TEST(test_parallel_kernels_use_schedulers) {
  fx_t f;
  pto_error_t err;
  uint64_t by_schedulers = 0;
  fx_open_with(&f, 2, 200, 5000);
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 32), *sum = fx_buffer(&f, 1);
  pto_arg_t args[2] = {fx_arg_buffer(x, 32), fx_arg_buffer(sum, 1)};
  for (int round = 0; round < 3; round++) {
    sum[0] = -1;
    ck_assert_msg(fx_run(&f, orch_parallel, args, 2, NULL, &err) == 0, "%s", err.message);
    ck_assert_int_eq(sum[0], 31 * 32 / 2);
  }
  for (uint32_t i = f.rt->ncores; i < f.rt->ncores + f.rt->nsched; i++)
    by_schedulers += atomic_load(&f.rt->workers[i].completed);
  ck_assert_uint_gt(by_schedulers, 0);
  fx_free(&f, x, 32);
  fx_free(&f, sum, 1);
  fx_close(&f);
}
END_TEST

/* ---- random programs against sequential execution --------------------------- */

/* Random tasks over a buffer of 32 slots of 8 ints: each INOUTs a range of
 * slots (x = x*3 + c + sum of its inputs) and reads up to three other
 * ranges (IN).  A slot once read is never written again, so the only
 * orderings that matter are the ones the runtime tracks (read-after-write,
 * INOUT after write); submission order is then the one true result.
 * Scopes open and close at random, kernels sleep at random. */
#define RND_SLOTS 32
#define RND_SLOT 8
#define RND_TASKS 400

typedef struct rnd_task {
  int close, open; /* scopes to close, then to open, before it */
  uint32_t out_first, out_n;
  uint32_t nin, in_first[3], in_n[3];
  int32_t c;
  int32_t sleep_us;
} rnd_task_t;

static rnd_task_t rnd_tasks[RND_TASKS];
static int rnd_ntasks;

static uint64_t rnd_next(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static void rnd_generate(uint64_t seed) {
  bool frozen[RND_SLOTS] = {0};
  int depth = 0, count[8] = {0};
  rnd_ntasks = 0;
  for (int i = 0; i < RND_TASKS; i++) {
    rnd_task_t *t = &rnd_tasks[rnd_ntasks];
    uint32_t first = (uint32_t)(rnd_next(&seed) % RND_SLOTS), n = 1 + (uint32_t)(rnd_next(&seed) % 3);
    bool ok = first + n <= RND_SLOTS;
    for (uint32_t k = first; ok && k < first + n; k++) ok = !frozen[k];
    if (!ok) continue;
    memset(t, 0, sizeof *t);
    t->out_first = first;
    t->out_n = n;
    t->c = (int32_t)(rnd_next(&seed) % 100);
    t->sleep_us = rnd_next(&seed) % 4 == 0 ? (int32_t)(rnd_next(&seed) % 300) : 0;
    for (int j = 0; j < 3; j++) {
      uint32_t f = (uint32_t)(rnd_next(&seed) % RND_SLOTS), m = 1 + (uint32_t)(rnd_next(&seed) % 4);
      if (f + m > RND_SLOTS || (f < first + n && first < f + m) || rnd_next(&seed) % 3 == 0) continue;
      t->in_first[t->nin] = f;
      t->in_n[t->nin] = m;
      t->nin++;
    }
    for (uint32_t j = 0; j < t->nin; j++)
      for (uint32_t k = t->in_first[j]; k < t->in_first[j] + t->in_n[j]; k++) frozen[k] = true;
    /* Scopes at depth 1..5, at most 10 tasks each (the windows hold 63). */
    t->close = (int)(rnd_next(&seed) % 3);
    if (t->close > depth) t->close = depth;
    if (count[depth - t->close] >= 10 && t->close < depth) t->close++;
    t->open = (int)(rnd_next(&seed) % 3);
    if (depth - t->close + t->open < 1 || count[depth - t->close] >= 10) t->open++;
    if (depth - t->close + t->open > 5) t->open = 5 - (depth - t->close);
    depth -= t->close;
    for (int d = 0; d < t->open; d++) count[++depth] = 0;
    count[depth]++;
    rnd_ntasks++;
  }
}

static void k_mix(const pto_task_args_t *a) {
  uint32_t add = (uint32_t)a->scalar[0].i;
  if (a->scalar[1].i) fx_sleep_us((uint64_t)a->scalar[1].i);
  for (uint32_t j = 1; j < a->ntensors; j++)
    for (uint64_t i = 0; i < pto_tensor_numel(&a->tensor[j]); i++)
      add += (uint32_t)*fx_at(&a->tensor[j], i);
  for (uint64_t i = 0; i < pto_tensor_numel(&a->tensor[0]); i++) {
    int32_t *x = fx_at(&a->tensor[0], i);
    *x = (int32_t)((uint32_t)*x * 3u + add);
  }
}

static void rnd_args(const rnd_task_t *t, int32_t *buf, pto_task_args_t *a) {
  fx_task(a);
  fx_tensor(a, fx_view(buf, RND_SLOTS * RND_SLOT, t->out_first * RND_SLOT, t->out_n * RND_SLOT),
            PTO_INOUT);
  for (uint32_t j = 0; j < t->nin; j++)
    fx_tensor(a, fx_view(buf, RND_SLOTS * RND_SLOT, t->in_first[j] * RND_SLOT, t->in_n[j] * RND_SLOT),
              PTO_IN);
  fx_scalar(a, t->c);
  fx_scalar(a, t->sleep_us);
}

static int orch_random(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                       uint32_t nargs) {
  pto_task_args_t a;
  int depth = 0, rc = 0;
  (void)nargs;
  for (int i = 0; i < rnd_ntasks && !rc; i++) {
    for (int d = 0; d < rnd_tasks[i].close; d++, depth--) api->scope_end(o);
    for (int d = 0; d < rnd_tasks[i].open; d++, depth++) api->scope_begin(o);
    rnd_args(&rnd_tasks[i], args[0].base, &a);
    rc = api->submit(o, k_mix, &a);
  }
  for (; depth > 0; depth--) api->scope_end(o);
  return rc;
}

START_TEST(test_random_programs_match_sequential) {
  fx_t f;
  pto_error_t err;
  static int32_t want[RND_SLOTS * RND_SLOT];
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(64, 4096, 256);
  fx_arena(&f, &s);
  int32_t *buf = fx_buffer(&f, RND_SLOTS * RND_SLOT);
  pto_arg_t args[1] = {fx_arg_buffer(buf, RND_SLOTS * RND_SLOT)};
  for (uint64_t seed = 1; seed <= 12; seed++) {
    pto_task_args_t a;
    rnd_generate(seed * 7919);
    for (int i = 0; i < RND_SLOTS * RND_SLOT; i++) want[i] = buf[i] = i;
    for (int i = 0; i < rnd_ntasks; i++) {
      rnd_task_t t = rnd_tasks[i];
      t.sleep_us = 0;
      rnd_args(&t, want, &a);
      k_mix(&a);
    }
    ck_assert_msg(fx_run(&f, orch_random, args, 1, NULL, &err) == 0, "seed %llu: %s",
                  (unsigned long long)seed, err.message);
    for (int i = 0; i < RND_SLOTS * RND_SLOT; i++)
      ck_assert_msg(buf[i] == want[i], "seed %llu, element %d: %d, want %d",
                    (unsigned long long)seed, i, buf[i], want[i]);
  }
  fx_free(&f, buf, RND_SLOTS * RND_SLOT);
  fx_close(&f);
}
END_TEST

/* ---- back-to-back runs ------------------------------------------------------ */

/* Short runs one after another: each must end only when its own tasks have
 * retired (no thread finishing the previous run may end the next). */
START_TEST(test_back_to_back_runs) {
  fx_t f;
  pto_error_t err;
  rt_run_stats_t st;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  fx_arena(&f, &s);
  int32_t *x = fx_buffer(&f, 4), *y = fx_buffer(&f, 4);
  pto_arg_t args[2] = {fx_arg_buffer(x, 4), fx_arg_buffer(y, 4)};
  for (int round = 0; round < 300; round++) {
    memset(x, 0, 16);
    memset(y, 0, 16);
    ck_assert_msg(fx_run(&f, orch_wrap_small, args, 2, &st, &err) == 0, "%s", err.message);
    ck_assert_int_eq(y[0], 123);
    ck_assert_uint_eq(st.tasks, 4);
  }
  fx_free(&f, x, 4);
  fx_free(&f, y, 4);
  fx_close(&f);
}
END_TEST

/* ---- idle ---------------------------------------------------------------- */

static double cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

START_TEST(test_idle_uses_no_cpu) {
  fx_t f;
  pto_error_t err;
  double before, used;
  fx_open(&f);
  pto_sizing_resolved_t s = fx_sizing(64, 1 << 16, 64);
  fx_arena(&f, &s);
  ck_assert_msg(fx_run(&f, orch_many, NULL, 0, NULL, &err) == 0, "%s", err.message);
  fx_sleep_us(50000); /* let every bounded spin end */
  before = cpu_seconds();
  fx_sleep_us(1000000);
  used = cpu_seconds() - before;
  /* Eight threads (orchestrator, 3 schedulers, 4 cores) asleep: well under
   * 5% of one CPU over the second. */
  ck_assert_msg(used < 0.05, "an idle runtime used %.3f s of CPU in 1 s", used);
  fx_close(&f);
}
END_TEST

Suite *runtime_suite(void) {
  Suite *s = suite_create("runtime");
  TCase *tc = tcase_create("semantics");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_raw_and_waw_chain);
  tcase_add_test(tc, test_overlapping_slices);
  tcase_add_test(tc, test_overlapping_tiles);
  tcase_add_test(tc, test_overlap_rules);
  tcase_add_test(tc, test_heap_wraps_in_inner_scope);
  tcase_add_test(tc, test_many_tasks_small_windows);
  tcase_add_test(tc, test_parallel_kernels_use_schedulers);
  tcase_add_test(tc, test_random_programs_match_sequential);
  tcase_add_test(tc, test_back_to_back_runs);
  tcase_add_test(tc, test_idle_uses_no_cpu);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(runtime_suite)
