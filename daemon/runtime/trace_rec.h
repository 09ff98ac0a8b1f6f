/* SPDX-License-Identifier: Apache-2.0 */
/* trace_rec.h — the runtime's recording hooks (internal to daemon/runtime).
 *
 * Each hook is a branch on a pointer that is NULL unless the run was
 * given a record (trace.h): the cost of recording lives behind it.  Who
 * calls which hook, and from which thread, is what keeps the record free
 * of locks (see the threading note of trace.h).
 */
#ifndef PTOD_RT_TRACE_REC_H
#define PTOD_RT_TRACE_REC_H

#include "rt_internal.h"
#include "trace.h"

/* rt_run, before the orchestration starts: reset the record for this run
 * on this arena.  -ENOMEM when its scratch cannot be allocated. */
int trace_begin(rt_trace_t *tr, rt_runtime_t *rt, uint64_t t0_ns);
void trace_end(rt_trace_t *tr, uint64_t end_ns);

/* Orchestrator thread.  trace_submit: after t is wired and before it can
 * become ready elsewhere (the bias still held); producers[0..nprod) as the
 * tensor map derived them; the ring's use as the peaks saw it is in
 * o->rec_tasks, rec_heap, rec_deps. */
void trace_submit(rt_trace_t *tr, pto_orch_t *o, const rt_ring_t *ring, const rt_task_t *t,
                  uint64_t submit_ns, uint64_t heap_bytes, rt_task_t *const *producers,
                  uint64_t nprod);
void trace_scope_begin(rt_trace_t *tr, uint32_t depth, uint64_t now_ns);
void trace_scope_end(rt_trace_t *tr, uint32_t depth, uint64_t now_ns);
void trace_failure(rt_trace_t *tr, const rt_ring_t *ring, const pto_error_t *e, uint32_t depth);

/* The thread that made t ready (its last producer completed). */
void trace_ready(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t, uint64_t now_ns);
/* The thread that ran t's kernel, on lane `lane`, from t0 to t1. */
void trace_ran(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t, uint32_t lane,
               uint64_t t0_ns, uint64_t t1_ns);
/* Scheduler lane `lane` takes up the completion of t, whose kernel ended
 * on a core: the hand-off, from that end to now, is its phase
 * "hand-off".  Called before the completion, which may end the run. */
void trace_handoff(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t, uint32_t lane,
                   uint64_t now_ns);
/* Lane `lane`'s own phase (only its thread writes a lane). */
void trace_phase(rt_trace_t *tr, uint32_t lane, const char *name, uint32_t ring, uint64_t begin_ns,
                 uint64_t end_ns);

/* The record of the run in progress, for the worker threads. */
static inline rt_trace_t *trace_of(rt_runtime_t *rt) {
  return atomic_load_explicit(&rt->trace, memory_order_relaxed);
}

/* Lane of the orchestrator (rt_run's caller) and of scheduler i. */
static inline uint32_t trace_orch_lane(const rt_runtime_t *rt) { return rt->ncores; }
static inline uint32_t trace_sched_lane(const rt_runtime_t *rt, uint32_t i) {
  return rt->ncores + 1 + i;
}

#endif
