/* SPDX-License-Identifier: Apache-2.0 */
/* runtime_fixture.h — shared set-up for the runtime tests: a sim device, a
 * runtime with small timeouts, sizings, device buffers, and a few tiny
 * kernels over int32 vectors.  Header-only (static functions); each test
 * file includes it once.
 */
#ifndef PTO_TEST_RUNTIME_FIXTURE_H
#define PTO_TEST_RUNTIME_FIXTURE_H

#include <check.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <pto/program.h>
#include <pto/sizing.h>

#include "device.h"
#include "runtime.h"

typedef struct fx {
  dev_device_t *dev;
  rt_runtime_t *rt;
} fx_t;

static inline void fx_sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* A runtime over a fresh sim device with `cores` cores. */
static inline void fx_open_with(fx_t *f, uint32_t cores, uint32_t deadlock_ms, uint32_t run_timeout_ms) {
  pto_error_t err;
  dev_options_t dopts = {.cores = cores};
  rt_options_t opts = {0};
  ck_assert_int_eq(dev_open("sim", &dopts, &f->dev, &err), 0);
  opts.device = f->dev;
  opts.programs_dir = PTOD_BUILD_PROGRAMS_DIR;
  opts.deadlock_timeout_ms = deadlock_ms;
  opts.run_timeout_ms = run_timeout_ms;
  ck_assert_msg(rt_create(&opts, &f->rt, &err) == 0, "rt_create: %s", err.message);
}

static inline void fx_open(fx_t *f) { fx_open_with(f, 4, 200, 5000); }

static inline void fx_close(fx_t *f) {
  rt_destroy(f->rt);
  dev_close(f->dev);
}

/* The same value on every ring. */
static inline pto_sizing_resolved_t fx_sizing(uint64_t window, uint64_t heap, uint64_t dep) {
  pto_sizing_resolved_t s;
  memset(&s, 0, sizeof s);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    s.value[PTO_FIELD_TASK_WINDOW][r] = window;
    s.value[PTO_FIELD_HEAP][r] = heap;
    s.value[PTO_FIELD_DEP_POOL][r] = dep;
  }
  return s;
}

static inline void fx_arena(fx_t *f, const pto_sizing_resolved_t *s) {
  pto_error_t err;
  ck_assert_msg(rt_ensure_arena(f->rt, s, UINT64_C(1) << 34, NULL, &err) == 0,
                "rt_ensure_arena: %s", err.message);
}

/* A device buffer of n int32, zeroed; release with fx_free. */
static inline int32_t *fx_buffer(fx_t *f, uint64_t n) {
  void *p = NULL;
  ck_assert_int_eq(dev_mem_commit(f->dev, n * sizeof(int32_t), &p), 0);
  return p;
}

static inline void fx_free(fx_t *f, int32_t *p, uint64_t n) { dev_mem_release(f->dev, p, n * sizeof(int32_t)); }

static inline pto_arg_t fx_arg_buffer(int32_t *p, uint64_t n) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = PTO_ARG_BUFFER;
  a.base = p;
  a.base_bytes = n * sizeof(int32_t);
  a.bytes = a.base_bytes;
  return a;
}

static inline pto_arg_t fx_arg_int(int64_t v) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = PTO_ARG_INT;
  a.i = v;
  return a;
}

/* A 1-D int32 view [off, off + n) of a buffer of `total` elements. */
static inline pto_tensor_t fx_view(void *base, uint64_t total, uint64_t off, uint64_t n) {
  uint64_t shape[1] = {n};
  return pto_tensor_view(base, total * sizeof(int32_t), PTO_I32, off, 1, shape);
}

static inline pto_tensor_t fx_out(uint64_t n) {
  uint64_t shape[1] = {n};
  return pto_tensor_view(NULL, 0, PTO_I32, 0, 1, shape);
}

static inline void fx_task(pto_task_args_t *a) { memset(a, 0, sizeof *a); }

static inline void fx_tensor(pto_task_args_t *a, pto_tensor_t t, pto_dir_t dir) {
  a->tensor[a->ntensors] = t;
  a->dir[a->ntensors] = dir;
  a->ntensors++;
}

static inline void fx_scalar(pto_task_args_t *a, int64_t v) { a->scalar[a->nscalars++].i = v; }

/* Kernels.  Element i of a 1-D view: */
static inline int32_t *fx_at(const pto_tensor_t *t, uint64_t i) {
  return (int32_t *)pto_tensor_data(t) + (int64_t)i * t->strides[0];
}

/* tensor[0] (written) := scalar[0]; sleeps scalar[1] us first. */
static inline void fx_k_fill(const pto_task_args_t *a) {
  if (a->nscalars > 1 && a->scalar[1].i) fx_sleep_us((uint64_t)a->scalar[1].i);
  for (uint64_t i = 0; i < pto_tensor_numel(&a->tensor[0]); i++)
    *fx_at(&a->tensor[0], i) = (int32_t)a->scalar[0].i;
}

/* tensor[0] (INOUT) := tensor[0] * 10 + scalar[0]; sleeps scalar[1] us first. */
static inline void fx_k_step(const pto_task_args_t *a) {
  if (a->nscalars > 1 && a->scalar[1].i) fx_sleep_us((uint64_t)a->scalar[1].i);
  for (uint64_t i = 0; i < pto_tensor_numel(&a->tensor[0]); i++)
    *fx_at(&a->tensor[0], i) = *fx_at(&a->tensor[0], i) * 10 + (int32_t)a->scalar[0].i;
}

/* tensor[1] := tensor[0] (element-wise copy); sleeps scalar[0] us first. */
static inline void fx_k_copy(const pto_task_args_t *a) {
  if (a->nscalars > 0 && a->scalar[0].i) fx_sleep_us((uint64_t)a->scalar[0].i);
  for (uint64_t i = 0; i < pto_tensor_numel(&a->tensor[1]); i++)
    *fx_at(&a->tensor[1], i) = *fx_at(&a->tensor[0], i);
}

/* tensor[1][0] := sum of tensor[0]. */
static inline void fx_k_sum(const pto_task_args_t *a) {
  int64_t s = 0;
  for (uint64_t i = 0; i < pto_tensor_numel(&a->tensor[0]); i++) s += *fx_at(&a->tensor[0], i);
  *fx_at(&a->tensor[1], 0) = (int32_t)s;
}

static inline void fx_k_nop(const pto_task_args_t *a) { (void)a; }

static inline void fx_k_sleep(const pto_task_args_t *a) { fx_sleep_us((uint64_t)a->scalar[0].i); }

/* A program around an orchestration function of the test. */
static inline pto_program_t fx_program(const char *name, pto_orchestrate_fn fn) {
  pto_program_t p;
  memset(&p, 0, sizeof p);
  p.abi_version = PTO_PROGRAM_ABI_VERSION;
  p.name = name;
  p.description = "test program";
  p.orchestrate = fn;
  return p;
}

static inline int fx_run(fx_t *f, pto_orchestrate_fn fn, const pto_arg_t *args, uint32_t nargs,
                  rt_run_stats_t *stats, pto_error_t *err) {
  pto_program_t p = fx_program("test", fn);
  return rt_run(f->rt, &p, args, nargs, NULL, stats, err);
}

#endif
