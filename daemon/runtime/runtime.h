/* SPDX-License-Identifier: Apache-2.0 */
/* runtime.h — the ring runtime, as the daemon's device thread drives it.
 *
 * The runtime runs device programs (include/pto/program.h) on one device:
 * the thread that calls rt_run is the run's orchestrator: it runs the
 * program's orchestration, which submits tasks, and then helps run them
 * until the run is over; scheduler threads resolve dependencies and retire
 * tasks; core threads run the kernels.  The scheduler and core threads are
 * created by rt_create and kept until rt_destroy; between runs they sleep
 * (an idle runtime uses no CPU).  A run of one short task wakes none of
 * them: its caller does it all, with no hand-off to pay.
 * The semantics (four rings, scopes, the tensor map, errors) are written
 * for program authors in docs/runtime.md; include/pto/program.h is the
 * programs' side of the contract.
 *
 * A run needs an arena: everything a run uses for one resolved sizing
 * vector (task windows, heaps, dependency pools, tensor map, queues),
 * committed in device memory when it is built, so that a run allocates
 * nothing.  The runtime caches exactly one arena (the single slot, keyed on
 * pto_sizing_key + pto_sizing_equal); rt_ensure_arena returns at once on a
 * hit and rebuilds on a miss, keeping committed regions that are already
 * large enough (a rebuild into them pays initialisation only).
 *
 * Threading: rt_ensure_arena, rt_run and rt_destroy must be called from one
 * thread at a time (the holder of the daemon's device token, dispatch.h:
 * its device thread, or its loop for a run bounded before it starts).
 * rt_cache_stats, rt_program_get, rt_program_cost, rt_programs_foreach and
 * rt_arena_bytes may be called from any thread at any time.
 *
 * Errors: functions return 0 or -PTO_E_* and fill the caller's pto_error_t
 * (code, message, and for ring errors ring/requested/capacity/hint).  A
 * failed run never poisons the runtime: the next run starts clean.
 */
#ifndef PTOD_RUNTIME_H
#define PTOD_RUNTIME_H

#include <stdbool.h>
#include <stdint.h>

#include <pto/errors.h>
#include <pto/program.h>
#include <pto/sizing.h>

#include "device.h"

typedef struct rt_runtime rt_runtime_t;

#define RT_DEFAULT_AICPU_THREADS 4u
#define RT_MAX_AICPU_THREADS 64u
#define RT_MAX_CORES 256u
#define RT_DEFAULT_DEADLOCK_TIMEOUT_MS 500u
#define RT_DEFAULT_RUN_TIMEOUT_MS 10000u
#define RT_DEFAULT_SPIN_US 100u
#define RT_MAX_SCOPE_DEPTH 64u

typedef struct rt_options {
  dev_device_t *device;         /* required; not owned, must outlive the runtime */
  const char *programs_dir;     /* required: where NAME.so programs live (copied) */
  uint32_t cores;               /* core threads; 0: dev_core_count(device) */
  uint32_t aicpu_thread_num;    /* orchestrator + schedulers, >= 2; 0: 4 */
  uint32_t deadlock_timeout_ms; /* backstop: no reclamation for this long; 0: 500 */
  uint32_t run_timeout_ms;      /* no progress at all for this long; 0: 10000 */
  uint32_t spin_us;             /* an idle thread spins (yielding) this long, then sleeps; 0: 100 */
} rt_options_t;

/* Start the runtime: check the options, open the programs directory (it
 * need not hold anything yet), start every thread.  No arena is built yet.
 * Bad options: -PTO_E_INVALID_CONFIG naming the option.  Free with
 * rt_destroy. */
int rt_create(const rt_options_t *opts, rt_runtime_t **ret_rt, pto_error_t *err);

/* Stop and join every thread, release the arena's device memory, unload
 * every program.  Waits for a kernel still running.  NULL is accepted. */
void rt_destroy(rt_runtime_t *rt);

/* ---- programs ---------------------------------------------------------- */

/* The program NAME, loaded once from PROGRAMS_DIR/NAME.so and kept until
 * rt_destroy.  NAME must be 1..64 characters of [A-Za-z0-9_-]: anything
 * else (a path, ".", "..") is refused with -PTO_E_INVALID_REQUEST without
 * touching the file system.  No such file: -PTO_E_UNKNOWN_PROGRAM.  A file
 * that is not a valid program (dlopen fails, no `pto_program` symbol, a
 * different program ABI, a name field that differs from the file name, no
 * orchestration): -PTO_E_UNKNOWN_PROGRAM with a message saying why, e.g.
 * "program 'x' was built for program ABI 2; this ptod speaks ABI 1 ...".
 * The returned pointer stays valid until rt_destroy. */
int rt_program_get(rt_runtime_t *rt, const char *name, const pto_program_t **ret_prog,
                   pto_error_t *err);

/* The cost of running `prog` (one rt_program_get returned) with `args`
 * (base NULL), as its optional `pto_program_cost` declares it
 * (pto/program.h).  Returns 0 with *ret_cost, or -1 when the program
 * declares none or cannot bound these arguments. */
int rt_program_cost(rt_runtime_t *rt, const pto_program_t *prog, const pto_arg_t *args,
                    uint32_t nargs, pto_cost_t *ret_cost);

/* Called once per candidate file NAME.so of the programs directory (with a
 * valid NAME), in name order: prog is the loaded program, or NULL with err
 * saying why it cannot be loaded. */
typedef void (*rt_program_cb)(void *data, const char *name, const pto_program_t *prog,
                              const pto_error_t *err);
/* Returns 0, or -errno when the directory cannot be read. */
int rt_programs_foreach(rt_runtime_t *rt, rt_program_cb cb, void *data);

/* ---- the arena and its single-slot cache ------------------------------ */

/* Device bytes an arena for `sizing` commits (rounded as the device rounds):
 * what the daemon must account before asking for it.  UINT64_MAX when the
 * sizing is invalid or too large to represent. */
uint64_t rt_arena_bytes(const rt_runtime_t *rt, const pto_sizing_resolved_t *sizing);

typedef struct rt_arena_result {
  bool hit;          /* the slot already held this sizing */
  uint64_t build_us; /* 0 on a hit */
  uint64_t key;      /* pto_sizing_key(sizing) */
  uint64_t bytes;    /* device bytes the arena holds now (committed, kept regions included) */
} rt_arena_result_t;

/* Make the slot hold an arena for `sizing`.  `bytes_available` is how much
 * device memory the arena may hold in total (the device limit minus what
 * resident buffers use).  A hit returns at once.  A miss builds: when the
 * sizing needs more than bytes_available it fails with -PTO_E_OUT_OF_MEMORY
 * (requested = bytes needed, capacity = bytes_available) BEFORE touching
 * the current arena, which stays cached; an invalid sizing fails with
 * -PTO_E_INVALID_CONFIG the same way.  A commit that fails inside the build
 * returns -PTO_E_OUT_OF_MEMORY and leaves the slot empty; the runtime stays
 * usable and the next call builds again.  ret may be NULL. */
int rt_ensure_arena(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing,
                    uint64_t bytes_available, rt_arena_result_t *ret, pto_error_t *err);

/* The same for a prewarm, which is no dispatch's lookup: a build counts
 * in `builds`, nothing counts in `hits` or `misses` (so those two say how
 * dispatches fared against the slot). */
int rt_prewarm_arena(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing,
                     uint64_t bytes_available, rt_arena_result_t *ret, pto_error_t *err);

typedef struct rt_cache_stats {
  bool valid;                   /* the slot holds an arena */
  pto_sizing_resolved_t sizing; /* its sizing (values only; sources zero) */
  uint64_t key;
  uint64_t bytes;               /* device bytes held (0 when empty) */
  uint64_t builds, hits, misses; /* hits, misses: rt_ensure_arena lookups only */
  uint64_t last_build_us, total_build_us;
} rt_cache_stats_t;

void rt_cache_stats(const rt_runtime_t *rt, rt_cache_stats_t *ret);

/* ---- runs ------------------------------------------------------------- */

struct rt_trace;

typedef struct rt_run_config {
  uint32_t aicpu_thread_num;    /* 0: the runtime's; else 2..rt_options.aicpu_thread_num */
  struct rt_trace *trace;       /* NULL, or a record to fill (trace.h); not owned */
  uint32_t deadlock_timeout_ms; /* 0: rt_options' */
  uint32_t run_timeout_ms;      /* 0: rt_options' (a reload changes these per run) */
} rt_run_config_t;

/* Per ring: `peak_tasks` is the most tasks live at once (the window must
 * exceed it); `peak_heap` the most OUT request bytes live at a submit, the
 * submitting task's included, wrap padding not (the heap must hold it);
 * `peak_dep_pool` the most dependency entries in use. */
typedef struct rt_run_stats {
  uint64_t tasks;                         /* tasks submitted */
  uint64_t ring_tasks[PTO_RING_COUNT];    /* per ring */
  uint64_t peak_tasks[PTO_RING_COUNT];
  uint64_t peak_heap[PTO_RING_COUNT];
  uint64_t peak_dep_pool[PTO_RING_COUNT];
  uint64_t run_us; /* from the start to the last task retired */
} rt_run_stats_t;

/* Run `prog` over `args` (the daemon's pto_arg_t, pointing at device memory
 * it committed through the device interface; they must stay valid until
 * rt_run returns) on the cached arena.  Returns 0, or -code of the first
 * error (err has the details: ring, requested, capacity, key, hint; see
 * docs/runtime.md for each code).  rt_run returns only when no task of the
 * run is left: a failed run stops submitting, skips the kernels not yet
 * started, waits for those running (a kernel that never returns blocks it
 * for good: threads cannot be killed), and leaves the runtime ready for the
 * next run.  Stats are filled on success and on failure (what ran until
 * the error).  Before anything runs: no arena built, -PTO_E_INTERNAL;
 * cfg->aicpu_thread_num outside [2, the runtime's], -PTO_E_INVALID_CONFIG.
 * cfg and ret_stats may be NULL. */
int rt_run(rt_runtime_t *rt, const pto_program_t *prog, const pto_arg_t *args, uint32_t nargs,
           const rt_run_config_t *cfg, rt_run_stats_t *ret_stats, pto_error_t *err);

#endif
