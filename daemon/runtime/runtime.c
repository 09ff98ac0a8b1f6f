/* SPDX-License-Identifier: Apache-2.0 */
/* runtime.c — create/destroy, runs, the error latch and the arena gate. */
#include "runtime.h"

#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arena.h"
#include "orch.h"
#include "park.h"
#include "programs.h"
#include "quiet_thread.h"
#include "rt_internal.h"
#include "scheduler.h"
#include "trace_rec.h"

uint64_t rt_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t rt_pow2_at_least(uint64_t v) {
  uint64_t p = 1;
  if (v > (UINT64_C(1) << 63)) return UINT64_MAX;
  while (p < v) p <<= 1;
  return p;
}

/* ---- errors and the end of a run --------------------------------------- */

int rt_fail(rt_runtime_t *rt, const pto_error_t *e) {
  int zero = 0;
  if (atomic_compare_exchange_strong(&rt->err_code, &zero, e->code)) {
    rt->run_err = *e;
    atomic_store_explicit(&rt->err_ready, true, memory_order_release);
    /* An orchestrator waiting for retirement must notice at once; cores
     * skip kernels from now on. */
    rt_park_wake_all(&rt->retire_park);
    return -e->code;
  }
  return -zero;
}

void rt_check_done(rt_runtime_t *rt) {
  uint64_t gen = atomic_load(&rt->orch_done_gen), prev = gen - 1;
  if (gen == 0 || atomic_load(&rt->done_gen) == gen) return;
  for (int r = 0; r < PTO_RING_COUNT; r++)
    if (atomic_load(&rt->rings[r].last_alive) != atomic_load(&rt->rings[r].submitted)) return;
  if (atomic_compare_exchange_strong(&rt->done_gen, &prev, gen)) rt_park_wake_all(&rt->done_park);
}

/* ---- the arena gate ---------------------------------------------------- */

void rt_gate_close(rt_runtime_t *rt) {
  atomic_store(&rt->gate, false);
  /* A worker inside the arena leaves it within one loop iteration or its
   * bounded spin. */
  for (uint32_t i = 0; i < rt->nworkers_started; i++)
    for (uint32_t spins = 0; atomic_load(&rt->workers[i].active); spins++) {
      if (spins < 64)
        sched_yield();
      else
        nanosleep(&(struct timespec){0, 100000}, NULL);
    }
}

void rt_gate_open(rt_runtime_t *rt) { atomic_store(&rt->gate, true); }

/* ---- create / destroy -------------------------------------------------- */

static int rt_bad_option(pto_error_t *err, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int rt_bad_option(pto_error_t *err, const char *key, const char *fmt, ...) {
  va_list ap;
  pto_error_clear(err);
  if (err) {
    err->code = PTO_E_INVALID_CONFIG;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
    snprintf(err->key, sizeof err->key, "%s", key);
  }
  return -PTO_E_INVALID_CONFIG;
}

static void rt_stop_threads(rt_runtime_t *rt) {
  atomic_store(&rt->stop, true);
  rt_park_wake_all(&rt->retire_park);
  rt_park_wake_all(&rt->core_park);
  rt_park_wake_all(&rt->sched_park);
  rt_park_wake_all(&rt->idle_park);
  for (uint32_t i = 0; i < rt->nworkers_started; i++) pthread_join(rt->workers[i].thread, NULL);
  rt->nworkers_started = 0;
}

void rt_destroy(rt_runtime_t *rt) {
  if (!rt) return;
  rt_stop_threads(rt);
  arena_release(rt);
  progs_close(rt->programs);
  pthread_mutex_destroy(&rt->stats_lock);
  pthread_mutex_destroy(&rt->wd_lock);
  free(rt->workers);
  free(rt->programs_dir);
  free(rt);
}

int rt_create(const rt_options_t *opts, rt_runtime_t **ret_rt, pto_error_t *err) {
  rt_runtime_t *rt;
  uint32_t aicpu, cores;
  int rc;

  if (!opts || !opts->device)
    return rt_bad_option(err, "device", "The runtime needs a device; open one with dev_open().");
  if (!opts->programs_dir || !opts->programs_dir[0])
    return rt_bad_option(err, "programs",
                         "The runtime needs a programs directory; set [device] programs.");
  aicpu = opts->aicpu_thread_num ? opts->aicpu_thread_num : RT_DEFAULT_AICPU_THREADS;
  if (aicpu < 2 || aicpu > RT_MAX_AICPU_THREADS)
    return rt_bad_option(err, "aicpu_thread_num",
                         "aicpu_thread_num must be in [2, %u] (one orchestrator and at least one "
                         "scheduler), got %u.",
                         RT_MAX_AICPU_THREADS, aicpu);
  cores = opts->cores ? opts->cores : dev_core_count(opts->device);
  if (cores < 1 || cores > RT_MAX_CORES)
    return rt_bad_option(err, "cores", "cores must be in [1, %u], got %u.", RT_MAX_CORES, cores);

  rt = calloc(1, sizeof *rt);
  if (!rt) return pto_error_set(err, PTO_E_INTERNAL, "Out of host memory creating the runtime.");
  rt->dev = opts->device;
  rt->ncores = cores;
  rt->nsched = aicpu - 1;
  rt->default_deadlock_timeout_ns =
      UINT64_C(1000000) *
      (opts->deadlock_timeout_ms ? opts->deadlock_timeout_ms : RT_DEFAULT_DEADLOCK_TIMEOUT_MS);
  rt->default_run_timeout_ns =
      UINT64_C(1000000) * (opts->run_timeout_ms ? opts->run_timeout_ms : RT_DEFAULT_RUN_TIMEOUT_MS);
  rt->deadlock_timeout_ns = rt->default_deadlock_timeout_ns;
  rt->run_timeout_ns = rt->default_run_timeout_ns;
  rt->spin_ns = UINT64_C(1000) * (opts->spin_us ? opts->spin_us : RT_DEFAULT_SPIN_US);
  pthread_mutex_init(&rt->stats_lock, NULL);
  pthread_mutex_init(&rt->wd_lock, NULL);
  atomic_init(&rt->wd_slice_ns, rt->default_run_timeout_ns / 4 < 1000000u
                                    ? 1000000u
                                    : rt->default_run_timeout_ns / 4);
  rt_park_init(&rt->retire_park);
  rt_park_init(&rt->sched_park);
  rt_park_init(&rt->core_park);
  rt_park_init(&rt->done_park);
  rt_park_init(&rt->idle_park);
  atomic_init(&rt->active_sched, rt->nsched);
  rt->orch.rt = rt;
  rt->helper.rt = rt;
  rt->helper.core = true;
  rt->helper.index = cores;
  rt->programs_dir = strdup(opts->programs_dir);
  rt->workers = calloc(rt->ncores + rt->nsched, sizeof *rt->workers);
  if (!rt->programs_dir || !rt->workers || progs_open(opts->programs_dir, &rt->programs) < 0) {
    rt_destroy(rt);
    return pto_error_set(err, PTO_E_INTERNAL, "Out of host memory creating the runtime.");
  }

  rc = 0;
  for (uint32_t i = 0; rc == 0 && i < rt->ncores + rt->nsched; i++) {
    rt_worker_t *w = &rt->workers[i];
    w->rt = rt;
    w->core = i < rt->ncores;
    w->index = w->core ? i : i - rt->ncores;
    rc = quiet_thread_create(&w->thread, NULL, sched_worker_main, w);
    if (rc == 0) rt->nworkers_started++;
  }
  if (rc != 0) {
    rt_destroy(rt);
    return pto_error_set(err, PTO_E_INTERNAL, "Could not start the runtime's threads: %s.",
                         strerror(rc));
  }
  *ret_rt = rt;
  return 0;
}

/* ---- programs and the arena ---------------------------------------------- */

int rt_program_get(rt_runtime_t *rt, const char *name, const pto_program_t **ret_prog,
                   pto_error_t *err) {
  return progs_get(rt->programs, name, ret_prog, err);
}

int rt_program_cost(rt_runtime_t *rt, const pto_program_t *prog, const pto_arg_t *args,
                    uint32_t nargs, pto_cost_t *ret_cost) {
  pto_cost_fn cost = progs_cost_fn(rt->programs, prog);
  return cost ? (cost(args, nargs, ret_cost) == 0 ? 0 : -1) : -1;
}

int rt_programs_foreach(rt_runtime_t *rt, rt_program_cb cb, void *data) {
  return progs_foreach(rt->programs, cb, data);
}

uint64_t rt_arena_bytes(const rt_runtime_t *rt, const pto_sizing_resolved_t *sizing) {
  return arena_bytes(rt->dev, sizing);
}

int rt_ensure_arena(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing,
                    uint64_t bytes_available, rt_arena_result_t *ret, pto_error_t *err) {
  return arena_ensure(rt, sizing, bytes_available, true, ret, err);
}

int rt_prewarm_arena(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing,
                     uint64_t bytes_available, rt_arena_result_t *ret, pto_error_t *err) {
  return arena_ensure(rt, sizing, bytes_available, false, ret, err);
}

void rt_cache_stats(const rt_runtime_t *rt, rt_cache_stats_t *ret) {
  rt_runtime_t *m = (rt_runtime_t *)rt;
  pthread_mutex_lock(&m->stats_lock);
  *ret = m->cache;
  pthread_mutex_unlock(&m->stats_lock);
}

/* ---- runs -------------------------------------------------------------- */

/* Anything that moves: submissions, retirements, kernels run. */
static uint64_t rt_progress(rt_runtime_t *rt) {
  uint64_t p = 0;
  for (int r = 0; r < PTO_RING_COUNT; r++)
    p += atomic_load_explicit(&rt->rings[r].submitted, memory_order_relaxed) +
         atomic_load_explicit(&rt->rings[r].last_alive, memory_order_relaxed);
  for (uint32_t i = 0; i < rt->ncores; i++)
    p += atomic_load_explicit(&rt->workers[i].completed, memory_order_relaxed);
  return p + atomic_load_explicit(&rt->helper.completed, memory_order_relaxed);
}

static void rt_timeout(rt_runtime_t *rt, uint64_t idle_ns, uint64_t timeout_ns) {
  pto_error_t e;
  uint64_t live = 0;
  for (int r = 0; r < PTO_RING_COUNT; r++)
    live += atomic_load(&rt->rings[r].submitted) - atomic_load(&rt->rings[r].last_alive);
  pto_error_set(&e, PTO_E_SCHEDULER_TIMEOUT,
                "The run made no progress for %" PRIu64 " ms (run_timeout %" PRIu64
                " ms): no task was submitted, finished or retired while %" PRIu64
                " task(s) were live; the run was stopped.",
                idle_ns / 1000000u, timeout_ns / 1000000u, live);
  e.requested = idle_ns / 1000000u;
  e.capacity = timeout_ns / 1000000u;
  snprintf(e.key, sizeof e.key, "run_timeout");
  snprintf(e.hint, sizeof e.hint,
           "raise run_timeout above %" PRIu64 " ms if a kernel legitimately runs that long, "
           "or find the kernel or orchestration that hangs",
           timeout_ns / 1000000u);
  rt_fail(rt, &e);
}

void rt_watchdog(rt_runtime_t *rt) {
  pthread_mutex_lock(&rt->wd_lock);
  if (rt->wd_gen && !rt_failed(rt)) {
    uint64_t now = rt_now_ns(), p = rt_progress(rt);
    if (p != rt->wd_progress) {
      rt->wd_progress = p;
      rt->wd_at = now;
    } else if (now - rt->wd_at >= rt->wd_timeout_ns) {
      rt_timeout(rt, now - rt->wd_at, rt->wd_timeout_ns);
    }
  }
  pthread_mutex_unlock(&rt->wd_lock);
}

/* Wait for the end of run `gen`, watching for lack of progress, and run
 * the run's ready tasks meanwhile: a small run then needs no other thread
 * (and pays no wake-up), a large one gets one more pair of hands. */
static void rt_wait_done(rt_runtime_t *rt, uint64_t gen) {
  uint64_t start = rt_now_ns(), slice = atomic_load(&rt->wd_slice_ns);
  uint32_t iter = 0;

  while (atomic_load_explicit(&rt->done_gen, memory_order_acquire) != gen) {
    uint64_t now;
    uint32_t key;
    if (sched_help(rt, &rt->helper, false)) {
      start = rt_now_ns();
      iter = 0;
      continue;
    }
    now = rt_now_ns();
    if (now - start < rt->spin_ns) {
      rt_spin_pause(++iter);
      continue;
    }
    key = rt_park_prepare(&rt->done_park);
    if (atomic_load(&rt->done_gen) == gen) {
      rt_park_cancel(&rt->done_park);
      break;
    }
    rt_park_wait(&rt->done_park, key, slice);
    rt_watchdog(rt);
  }
}

/* The schedulers that take part in a run of cfg: all of them unless cfg
 * names a thread count.  Returns 0, or INVALID_CONFIG for a count this
 * runtime cannot give. */
static int rt_run_schedulers(const rt_runtime_t *rt, const rt_run_config_t *cfg,
                             uint32_t *ret_active, pto_error_t *err) {
  *ret_active = rt->nsched;
  if (!cfg || !cfg->aicpu_thread_num) return 0;
  if (cfg->aicpu_thread_num < 2 || cfg->aicpu_thread_num > rt->nsched + 1) {
    pto_error_set(err, PTO_E_INVALID_CONFIG,
                  "aicpu_thread_num must be in [2, %u] (this ptod starts %u threads), got %u.",
                  rt->nsched + 1, rt->nsched + 1, cfg->aicpu_thread_num);
    if (err) snprintf(err->key, sizeof err->key, "aicpu_thread_num");
    return -PTO_E_INVALID_CONFIG;
  }
  *ret_active = cfg->aicpu_thread_num - 1;
  return 0;
}

/* Set up the run before it is published: no error, fresh peaks, the
 * program and its arguments, the run's timeouts and its schedulers. */
static void rt_run_prepare(rt_runtime_t *rt, const pto_program_t *prog, const pto_arg_t *args,
                           uint32_t nargs, const rt_run_config_t *cfg, uint32_t active) {
  atomic_store(&rt->err_code, 0);
  atomic_store(&rt->err_ready, false);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    rt_ring_t *ring = &rt->rings[r];
    ring->run_first_id = ring->next_id;
    ring->peak_tasks = ring->peak_heap = ring->peak_deps = 0;
  }
  rt->prog = prog;
  rt->args = args;
  rt->nargs = nargs;
  rt->deadlock_timeout_ns = cfg && cfg->deadlock_timeout_ms
                                ? UINT64_C(1000000) * cfg->deadlock_timeout_ms
                                : rt->default_deadlock_timeout_ns;
  rt->run_timeout_ns = cfg && cfg->run_timeout_ms ? UINT64_C(1000000) * cfg->run_timeout_ms
                                                  : rt->default_run_timeout_ns;
  if (active != atomic_load(&rt->active_sched)) {
    atomic_store(&rt->active_sched, active);
    rt_park_wake_all(&rt->idle_park);
  }
}

/* Have the watchdog watch run `gen`, started at t0, for its run_timeout. */
static void rt_watch_begin(rt_runtime_t *rt, uint64_t gen, uint64_t t0) {
  uint64_t slice = rt->run_timeout_ns / 4, old;
  if (slice < 1000000u) slice = 1000000u;
  old = atomic_exchange(&rt->wd_slice_ns, slice);
  /* Scheduler 0 may sleep with the longer slice: have it take this one
   * (it reads the slice after announcing its sleep, so this is never
   * lost). */
  if (slice < old) rt_park_wake_all(&rt->sched_park);
  pthread_mutex_lock(&rt->wd_lock);
  rt->wd_gen = gen;
  rt->wd_timeout_ns = rt->run_timeout_ns;
  rt->wd_progress = rt_progress(rt);
  rt->wd_at = t0;
  pthread_mutex_unlock(&rt->wd_lock);
}

static void rt_watch_end(rt_runtime_t *rt) {
  pthread_mutex_lock(&rt->wd_lock);
  rt->wd_gen = 0;
  pthread_mutex_unlock(&rt->wd_lock);
}

/* The run's figures, from the rings; the run began at t0. */
static void rt_run_stats(const rt_runtime_t *rt, uint64_t t0, rt_run_stats_t *ret_stats) {
  memset(ret_stats, 0, sizeof *ret_stats);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    const rt_ring_t *ring = &rt->rings[r];
    ret_stats->ring_tasks[r] = ring->next_id - ring->run_first_id;
    ret_stats->tasks += ret_stats->ring_tasks[r];
    ret_stats->peak_tasks[r] = ring->peak_tasks;
    ret_stats->peak_heap[r] = ring->peak_heap;
    ret_stats->peak_dep_pool[r] = ring->peak_deps;
  }
  ret_stats->run_us = (rt_now_ns() - t0) / 1000u;
}

int rt_run(rt_runtime_t *rt, const pto_program_t *prog, const pto_arg_t *args, uint32_t nargs,
           const rt_run_config_t *cfg, rt_run_stats_t *ret_stats, pto_error_t *err) {
  uint32_t active;
  rt_trace_t *tr = cfg ? cfg->trace : NULL;
  uint64_t t0, gen;
  int code;

  if (!rt->arena.valid)
    return pto_error_set(err, PTO_E_INTERNAL,
                         "No arena is built; call rt_ensure_arena before rt_run.");
  if (!prog || !prog->orchestrate)
    return pto_error_set(err, PTO_E_INTERNAL, "rt_run needs a program with an orchestration.");
  code = rt_run_schedulers(rt, cfg, &active, err);
  if (code) return code;
  rt_run_prepare(rt, prog, args, nargs, cfg, active);

  t0 = rt_now_ns();
  if (tr && trace_begin(tr, rt, t0) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Out of host memory for the run's DFX record.");
  rt->orch.trace = tr;
  atomic_store_explicit(&rt->trace, tr, memory_order_relaxed);
  gen = atomic_fetch_add_explicit(&rt->run_gen, 1, memory_order_release) + 1;
  rt_watch_begin(rt, gen, t0);
  /* The orchestration runs here: no hand-off to start it. */
  orch_run(rt, gen);
  rt_wait_done(rt, gen);
  rt_watch_end(rt);
  if (tr) {
    trace_end(tr, rt_now_ns());
    rt->orch.trace = NULL;
    atomic_store_explicit(&rt->trace, NULL, memory_order_relaxed);
  }

  if (ret_stats) rt_run_stats(rt, t0, ret_stats);
  code = atomic_load(&rt->err_code);
  if (!code) {
    pto_error_clear(err);
    return 0;
  }
  while (!atomic_load_explicit(&rt->err_ready, memory_order_acquire)) sched_yield();
  if (err) *err = rt->run_err;
  return -code;
}
