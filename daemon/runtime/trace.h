/* SPDX-License-Identifier: Apache-2.0 */
/* trace.h — what one run did, recorded only when asked (the DFX record
 * behind enable_swimlane, enable_scope_stats and enable_dep_gen).
 *
 * The caller creates a record (rt_trace_create), passes it in
 * rt_run_config.trace, and reads it once rt_run has returned; the runtime
 * never allocates one itself, and a run without one pays a single
 * predictable branch per task (bench_runtime shows no difference).
 *
 * Per task: its kernel, ring, scope, the submit / ready / start / end
 * times, the core that ran it, its heap bytes, the ring's use right after
 * its reservation and the producers the tensor map derived for it.  Per
 * scope: depth, ring, begin and end.  At level >= 2 also the phases of
 * the orchestrator (the orchestration, each wait for room on a ring) and
 * of the scheduler threads (the hand-off of each completion they took
 * up).  When a ring error stops the run, the request that failed (ring,
 * requested, capacity, the ring's use at that moment).
 *
 * Caps: at most max_tasks tasks, 4 x max_tasks dependencies, max_tasks
 * phases per lane and 4096 scopes are recorded; what does not fit is
 * counted in the *_dropped fields (the daemon refuses to hand out an
 * incomplete record, see docs/runtime.md), never silently lost.
 *
 * Threading: each field has one writer during a run — the orchestrator
 * (tasks, dependencies, scopes, its phases, the failure), the thread that
 * made a task ready (ready_ns), the thread that ran its kernel (start_ns,
 * end_ns, core), each scheduler its own phase lane — so recording takes no
 * lock; the run's end orders every write before rt_run returns.
 */
#ifndef PTOD_RT_TRACE_H
#define PTOD_RT_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include <pto/program.h>
#include <pto/sizing.h>

#define RT_TRACE_DEFAULT_MAX_TASKS 65536u
#define RT_TRACE_MAX_SCOPES 4096u
#define RT_TRACE_NONE UINT32_MAX /* no core (a kernel skipped after an error), no scope */

typedef struct rt_trace_task {
  pto_kernel_fn kernel;
  uint64_t submit_ns, ready_ns, start_ns, end_ns; /* from rt_trace.t0_ns; 0: not reached */
  uint64_t heap_bytes;                            /* its OUT request, rounded */
  uint64_t ring_tasks, ring_heap, ring_deps;      /* the ring's use once it was reserved */
  uint64_t id;                                    /* ring-local task id */
  uint32_t ring, scope, core;                     /* core: lane that ran it, RT_TRACE_NONE */
  uint32_t dep_begin, ndeps;                      /* its producers: deps[dep_begin ..] */
} rt_trace_task_t;

typedef struct rt_trace_scope {
  uint32_t depth, ring, parent; /* parent: RT_TRACE_NONE for the outermost */
  uint64_t begin_ns, end_ns;
  uint64_t tasks;
} rt_trace_scope_t;

typedef struct rt_trace_phase {
  const char *name; /* static string */
  uint32_t ring;    /* RT_TRACE_NONE when not about a ring */
  uint64_t begin_ns, end_ns;
} rt_trace_phase_t;

typedef struct rt_trace_lane {
  rt_trace_phase_t *phases;
  uint32_t nphases;
  uint64_t dropped;
} rt_trace_lane_t;

typedef struct rt_trace_failure {
  bool set;
  int code; /* PTO_E_* of the ring error */
  uint32_t ring, scope;
  const char *field; /* "ring_heap", "ring_task_window", "ring_dep_pool" */
  uint64_t at_ns, requested, capacity;
  uint64_t ring_tasks, ring_heap, ring_deps; /* the ring's use when it failed */
} rt_trace_failure_t;

typedef struct rt_trace {
  uint32_t level; /* enable_swimlane: >= 2 records phases too */
  uint32_t max_tasks;

  /* Filled by rt_run. */
  uint32_t ncores;              /* lanes 0..ncores-1: cores; ncores: the orchestrator */
  uint32_t nlanes;              /* then the schedulers */
  pto_sizing_resolved_t sizing; /* the arena's: each ring's capacities */
  uint64_t t0_ns, end_ns;

  rt_trace_task_t *tasks;
  uint32_t ntasks;
  uint64_t tasks_dropped;
  uint32_t *deps; /* producer task indices */
  uint32_t ndeps, max_deps;
  uint64_t deps_dropped;
  rt_trace_scope_t *scopes;
  uint32_t nscopes;
  uint64_t scopes_dropped;
  rt_trace_lane_t *lanes; /* nlanes */
  rt_trace_failure_t failure;

  /* Orchestrator scratch: the open scopes' indices, each ring's slot ->
   * task index (so a completing thread finds its record). */
  uint32_t scope_stack[64];
  uint32_t *slot_task[PTO_RING_COUNT];
  uint64_t slot_cap[PTO_RING_COUNT];
} rt_trace_t;

/* A record for runs of up to max_tasks tasks (0: the default) at swimlane
 * `level` (0 and 1: tasks only).  Memory is reserved, not touched, until
 * tasks are recorded.  Returns 0 or -ENOMEM.  Free with rt_trace_free
 * (NULL accepted). */
int rt_trace_create(uint32_t level, uint32_t max_tasks, rt_trace_t **ret);
void rt_trace_free(rt_trace_t *tr);

/* Whether anything was dropped against a cap. */
bool rt_trace_incomplete(const rt_trace_t *tr);

#endif
