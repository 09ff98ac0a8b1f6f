/* SPDX-License-Identifier: Apache-2.0 */
/* bench_runtime — the ring runtime's cost per task, in-process (ptoruntime
 * linked directly, no daemon, no socket).
 *
 * One run submits N empty tasks (N = 1k ... 1M) in scopes of 1024 (ring 1,
 * so tasks retire as the run goes, the steady state of a long program), on
 * the sim device with its default 4 cores and 4 AICPU threads:
 *   deps 0  no tensors: nothing to resolve
 *   deps 1  every task INOUT on one buffer: a chain, each waits for the last
 *   deps 4  task t INOUT on buffer t%4 and IN on the other three: each
 *           depends on the 4 tasks before it
 * The run time is rt_run's wall time.  Per variant: the least-squares
 * slope of run time over N (the cost of one more task) and its intercept
 * (the fixed cost of a run), and for each N the cost per task (run time /
 * N) against the slope (1.00 = exactly linear). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/program.h>
#include <pto/sizing.h>

#include "bench.h"
#include "device.h"
#include "runtime.h"

#define CHUNK 1024
#define NBUF 4

static void empty_kernel(const pto_task_args_t *args) { (void)args; }

static int orch_tasks(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                      uint32_t nargs) {
  int64_t n = args[0].i, deps = args[1].i;
  uint64_t shape[1] = {16};
  pto_tensor_t buf[NBUF];
  (void)nargs;
  for (int b = 0; b < NBUF; b++) buf[b] = pto_arg_tensor(&args[2 + b], PTO_I32, 1, shape);
  for (int64_t t = 0; t < n;) {
    api->scope_begin(orch);
    for (int64_t k = 0; k < CHUNK && t < n; k++, t++) {
      pto_task_args_t ta;
      int rc;
      ta.ntensors = 0;
      ta.nscalars = 0;
      if (deps == 1) {
        ta.ntensors = 1;
        ta.tensor[0] = buf[0];
        ta.dir[0] = PTO_INOUT;
      } else if (deps == 4) {
        ta.ntensors = NBUF;
        for (int b = 0; b < NBUF; b++) {
          ta.tensor[b] = buf[(t + b) % NBUF];
          ta.dir[b] = b == 0 ? PTO_INOUT : PTO_IN;
        }
      }
      rc = api->submit(orch, empty_kernel, &ta);
      if (rc) return rc;
    }
    api->scope_end(orch);
  }
  return 0;
}

static const pto_program_t prog = {
    PTO_PROGRAM_ABI_VERSION, "bench_tasks", "N empty tasks with 0, 1 or 4 deps", 0, NULL,
    orch_tasks,
};

static void check(int rc, const pto_error_t *err, const char *what) {
  if (rc < 0) {
    fprintf(stderr, "bench_runtime: %s: %s\n", what, err->message);
    exit(1);
  }
}

/* Least squares y = a + b x. */
static void fit(const double *x, const double *y, int n, double *ret_a, double *ret_b) {
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (int i = 0; i < n; i++) {
    sx += x[i];
    sy += y[i];
    sxx += x[i] * x[i];
    sxy += x[i] * y[i];
  }
  *ret_b = (n * sxy - sx * sy) / (n * sxx - sx * sx);
  *ret_a = (sy - *ret_b * sx) / n;
}

int main(int argc, char **argv) {
  static const int64_t sizes_full[] = {1000, 4000, 16000, 64000, 256000, 1000000};
  static const int64_t sizes_smoke[] = {1000, 4000};
  static const int deps_list[] = {0, 1, 4};
  const int64_t *sizes;
  int nsizes;
  bench_opts_t o;
  dev_device_t *dev;
  rt_runtime_t *rt;
  rt_options_t ropts;
  pto_sizing_resolved_t sizing;
  pto_error_t err;
  void *mem[NBUF];
  pto_arg_t args[2 + NBUF];
  char key[64], note[256];

  bench_parse_args(argc, argv, "runtime cost per task, in-process", &o);
  bench_header("Runtime per-task cost, in-process (sim device, 4 cores, 4 AICPU threads)");
  sizes = o.smoke ? sizes_smoke : sizes_full;
  nsizes = o.smoke ? 2 : 6;

  check(dev_open("sim", NULL, &dev, &err), &err, "dev_open");
  memset(&ropts, 0, sizeof ropts);
  ropts.device = dev;
  ropts.programs_dir = bench_programs_dir();
  check(rt_create(&ropts, &rt, &err), &err, "rt_create");
  memset(&sizing, 0, sizeof sizing);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    sizing.value[PTO_FIELD_TASK_WINDOW][r] = 8192;
    sizing.value[PTO_FIELD_HEAP][r] = 1024;
    sizing.value[PTO_FIELD_DEP_POOL][r] = 8192 * NBUF;
  }
  check(rt_ensure_arena(rt, &sizing, UINT64_C(1) << 34, NULL, &err), &err, "rt_ensure_arena");
  memset(args, 0, sizeof args);
  args[0].kind = PTO_ARG_INT;
  args[1].kind = PTO_ARG_INT;
  for (int b = 0; b < NBUF; b++) {
    if (dev_mem_commit(dev, 64, &mem[b]) < 0) {
      fprintf(stderr, "bench_runtime: dev_mem_commit failed\n");
      return 1;
    }
    args[2 + b].kind = PTO_ARG_BUFFER;
    args[2 + b].base = mem[b];
    args[2 + b].base_bytes = 64;
    args[2 + b].bytes = 64;
  }
  printf("scopes of %d tasks on ring 1, window 8192; %d repetitions, medians\n", CHUNK, o.reps);

  for (int di = 0; di < 3; di++) {
    double x[8], y[8], a, b, worst = 0, *samples;
    if (o.only) {
      /* --only deps=D[:N]: repeat runs of N tasks (default 1000000), for a
       * profiler. */
      int deps = -1;
      long long n = 1000000;
      if (sscanf(o.only, "deps=%d:%lld", &deps, &n) < 1 || deps != deps_list[di]) continue;
      args[0].i = n;
      args[1].i = deps;
      for (int r = 0; r < o.reps; r++) {
        uint64_t t0 = bench_now_ns();
        check(rt_run(rt, &prog, args, 2 + NBUF, NULL, NULL, &err), &err, "rt_run");
        printf("deps %d, %lld tasks: %.3f us/task\n", deps, n,
               (double)(bench_now_ns() - t0) / 1000.0 / (double)n);
      }
      continue;
    }
    samples = calloc((size_t)o.reps, sizeof(double));
    if (!samples) return 1;
    args[1].i = deps_list[di];
    /* Warm-up: threads, caches, the arena's pages. */
    args[0].i = 20000;
    check(rt_run(rt, &prog, args, 2 + NBUF, NULL, NULL, &err), &err, "rt_run");
    printf("deps %d:\n", deps_list[di]);
    for (int si = 0; si < nsizes; si++) {
      args[0].i = sizes[si];
      for (int r = 0; r < o.reps; r++) {
        rt_run_stats_t st;
        uint64_t t0 = bench_now_ns();
        check(rt_run(rt, &prog, args, 2 + NBUF, NULL, &st, &err), &err, "rt_run");
        samples[r] = (double)(bench_now_ns() - t0) / 1000.0;
        if (st.tasks != (uint64_t)sizes[si]) {
          fprintf(stderr, "bench_runtime: ran %llu tasks, not %lld\n",
                  (unsigned long long)st.tasks, (long long)sizes[si]);
          return 1;
        }
      }
      x[si] = (double)sizes[si];
      y[si] = bench_median(samples, (size_t)o.reps);
    }
    fit(x, y, nsizes, &a, &b);
    for (int si = 0; si < nsizes; si++) {
      double per = y[si] / x[si], lin = per / b;
      printf("  %8lld tasks: %10.0f us  %6.3f us/task  = %5.2f x the slope\n", (long long)sizes[si],
             y[si], per, lin);
      if (si >= 2 && (lin > 1 ? lin - 1 : 1 - lin) > worst) worst = lin > 1 ? lin - 1 : 1 - lin;
    }
    snprintf(key, sizeof key, "runtime.deps%d.slope", deps_list[di]);
    snprintf(note, sizeof note, "us per task, least-squares slope over %lld..%lld tasks; target <= 1",
             (long long)sizes[0], (long long)sizes[nsizes - 1]);
    bench_figure(key, b, "us/task", note);
    snprintf(key, sizeof key, "runtime.deps%d.fixed", deps_list[di]);
    bench_figure(key, a, "us", "intercept: the fixed cost of a run");
    snprintf(key, sizeof key, "runtime.deps%d.per_task_1M", deps_list[di]);
    bench_figure(key, y[nsizes - 1] / x[nsizes - 1], "us/task", "run time / tasks at the largest size");
    snprintf(key, sizeof key, "runtime.deps%d.nonlinearity", deps_list[di]);
    bench_figure(key, 100.0 * worst, "%",
                 "largest |(time / tasks) / slope - 1| from 16k tasks up; 0 = linear");
    free(samples);
  }

  for (int b = 0; b < NBUF; b++) dev_mem_release(dev, mem[b], 64);
  rt_destroy(rt);
  dev_close(dev);
  return 0;
}
