/* SPDX-License-Identifier: Apache-2.0 */
/* trace.c — the DFX record of a run (trace.h) and its hooks (trace_rec.h). */
#include "trace.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "trace_rec.h"

int rt_trace_create(uint32_t level, uint32_t max_tasks, rt_trace_t **ret) {
  rt_trace_t *tr = calloc(1, sizeof *tr);
  if (!tr) return -ENOMEM;
  tr->level = level;
  tr->max_tasks = max_tasks ? max_tasks : RT_TRACE_DEFAULT_MAX_TASKS;
  tr->max_deps = tr->max_tasks * 4u;
  /* calloc of this size maps zero pages: only what a run records is touched. */
  tr->tasks = calloc(tr->max_tasks, sizeof *tr->tasks);
  tr->deps = calloc(tr->max_deps, sizeof *tr->deps);
  tr->scopes = calloc(RT_TRACE_MAX_SCOPES, sizeof *tr->scopes);
  if (!tr->tasks || !tr->deps || !tr->scopes) {
    rt_trace_free(tr);
    return -ENOMEM;
  }
  *ret = tr;
  return 0;
}

static void trace_free_lanes(rt_trace_t *tr) {
  for (uint32_t i = 0; tr->lanes && i < tr->nlanes; i++) free(tr->lanes[i].phases);
  free(tr->lanes);
  tr->lanes = NULL;
  tr->nlanes = 0;
}

void rt_trace_free(rt_trace_t *tr) {
  if (!tr) return;
  trace_free_lanes(tr);
  for (int r = 0; r < PTO_RING_COUNT; r++) free(tr->slot_task[r]);
  free(tr->tasks);
  free(tr->deps);
  free(tr->scopes);
  free(tr);
}

bool rt_trace_incomplete(const rt_trace_t *tr) {
  bool dropped = tr->tasks_dropped || tr->deps_dropped || tr->scopes_dropped;
  for (uint32_t i = 0; i < tr->nlanes; i++) dropped = dropped || tr->lanes[i].dropped;
  return dropped;
}

/* ---- the hooks ---------------------------------------------------------- */

int trace_begin(rt_trace_t *tr, rt_runtime_t *rt, uint64_t t0_ns) {
  uint32_t nlanes = rt->ncores + 1 + rt->nsched;

  trace_free_lanes(tr);
  tr->lanes = calloc(nlanes, sizeof *tr->lanes);
  if (!tr->lanes) return -ENOMEM;
  tr->nlanes = nlanes;
  if (tr->level >= 2)
    for (uint32_t i = 0; i < nlanes; i++) {
      tr->lanes[i].phases = calloc(tr->max_tasks, sizeof *tr->lanes[i].phases);
      if (!tr->lanes[i].phases) return -ENOMEM;
    }
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    uint64_t window = rt->rings[r].window;
    if (tr->slot_cap[r] < window) {
      free(tr->slot_task[r]);
      tr->slot_task[r] = malloc(window * sizeof *tr->slot_task[r]);
      tr->slot_cap[r] = tr->slot_task[r] ? window : 0;
      if (!tr->slot_task[r]) return -ENOMEM;
    }
    memset(tr->slot_task[r], 0xff, window * sizeof *tr->slot_task[r]);
  }
  tr->ncores = rt->ncores;
  tr->sizing = rt->arena.sizing;
  tr->t0_ns = t0_ns;
  tr->end_ns = 0;
  tr->ntasks = tr->ndeps = tr->nscopes = 0;
  tr->tasks_dropped = tr->deps_dropped = tr->scopes_dropped = 0;
  memset(&tr->failure, 0, sizeof tr->failure);
  return 0;
}

void trace_end(rt_trace_t *tr, uint64_t end_ns) { tr->end_ns = end_ns - tr->t0_ns; }

static inline uint64_t rel(const rt_trace_t *tr, uint64_t ns) {
  return ns > tr->t0_ns ? ns - tr->t0_ns : 0;
}

static uint32_t current_scope(const rt_trace_t *tr, uint32_t depth) {
  return depth < 64 ? tr->scope_stack[depth] : RT_TRACE_NONE;
}

void trace_submit(rt_trace_t *tr, pto_orch_t *o, const rt_ring_t *ring, const rt_task_t *t,
                  uint64_t submit_ns, uint64_t heap_bytes, rt_task_t *const *producers,
                  uint64_t nprod) {
  uint32_t idx = tr->ntasks, *slot = &tr->slot_task[ring->index][t->id & ring->mask];
  rt_trace_task_t *rec;
  uint32_t scope = current_scope(tr, o->depth);

  if (scope != RT_TRACE_NONE) tr->scopes[scope].tasks++;
  if (idx >= tr->max_tasks) {
    *slot = RT_TRACE_NONE;
    tr->tasks_dropped++;
    return;
  }
  *slot = idx;
  rec = &tr->tasks[idx];
  tr->ntasks = idx + 1;
  rec->kernel = t->kernel;
  rec->id = t->id;
  rec->ring = ring->index;
  rec->scope = scope;
  rec->core = RT_TRACE_NONE;
  rec->submit_ns = rel(tr, submit_ns);
  rec->heap_bytes = heap_bytes;
  rec->ring_tasks = o->rec_tasks;
  rec->ring_heap = o->rec_heap;
  rec->ring_deps = o->rec_deps;
  rec->dep_begin = tr->ndeps;
  rec->ndeps = 0;
  for (uint64_t k = 0; k < nprod; k++) {
    const rt_task_t *p = producers[k];
    const rt_ring_t *pr = &o->rt->rings[p->ring];
    uint32_t pidx;
    if (p == t) continue; /* the slot's previous task, retired */
    pidx = tr->slot_task[p->ring][p->id & pr->mask];
    if (pidx == RT_TRACE_NONE) continue; /* itself dropped: already counted */
    if (tr->ndeps >= tr->max_deps) {
      tr->deps_dropped++;
      continue;
    }
    tr->deps[tr->ndeps++] = pidx;
    rec->ndeps++;
  }
}

void trace_scope_begin(rt_trace_t *tr, uint32_t depth, uint64_t now_ns) {
  uint32_t idx = tr->nscopes;
  if (depth >= 64) return;
  if (idx >= RT_TRACE_MAX_SCOPES) {
    tr->scopes_dropped++;
    tr->scope_stack[depth] = RT_TRACE_NONE;
    return;
  }
  tr->nscopes = idx + 1;
  tr->scopes[idx] = (rt_trace_scope_t){
      .depth = depth,
      .ring = depth < PTO_RING_COUNT - 1 ? depth : PTO_RING_COUNT - 1,
      .parent = depth ? tr->scope_stack[depth - 1] : RT_TRACE_NONE,
      .begin_ns = rel(tr, now_ns),
  };
  tr->scope_stack[depth] = idx;
}

void trace_scope_end(rt_trace_t *tr, uint32_t depth, uint64_t now_ns) {
  uint32_t idx = current_scope(tr, depth);
  if (idx != RT_TRACE_NONE) tr->scopes[idx].end_ns = rel(tr, now_ns);
}

void trace_failure(rt_trace_t *tr, const rt_ring_t *ring, const pto_error_t *e, uint32_t depth) {
  rt_trace_failure_t *f = &tr->failure;
  uint64_t la = atomic_load(&ring->last_alive), id = ring->next_id;
  if (f->set) return;
  f->set = true;
  f->code = e->code;
  f->ring = ring->index;
  f->scope = current_scope(tr, depth);
  f->field = e->code == PTO_E_HEAP_RING_DEADLOCK ? "ring_heap"
             : e->code == PTO_E_DEP_POOL_OVERFLOW ? "ring_dep_pool"
                                                  : "ring_task_window";
  f->at_ns = rel(tr, rt_now_ns());
  f->requested = e->requested;
  f->capacity = e->capacity;
  f->ring_tasks = id - la;
  f->ring_heap = id > la ? ring->heap_requests - ring->orch[la & ring->mask].heap_before : 0;
  f->ring_deps = ring->dep_head - atomic_load(&ring->dep_tail);
}

static rt_trace_task_t *task_of(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t) {
  uint32_t idx = tr->slot_task[t->ring][t->id & rt->rings[t->ring].mask];
  return idx == RT_TRACE_NONE ? NULL : &tr->tasks[idx];
}

void trace_ready(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t, uint64_t now_ns) {
  rt_trace_task_t *rec = task_of(tr, rt, t);
  if (rec) rec->ready_ns = rel(tr, now_ns);
}

void trace_ran(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t, uint32_t lane,
               uint64_t t0_ns, uint64_t t1_ns) {
  rt_trace_task_t *rec = task_of(tr, rt, t);
  if (!rec) return;
  rec->start_ns = rel(tr, t0_ns);
  rec->end_ns = rel(tr, t1_ns);
  rec->core = lane;
}

void trace_phase(rt_trace_t *tr, uint32_t lane, const char *name, uint32_t ring, uint64_t begin_ns,
                 uint64_t end_ns) {
  rt_trace_lane_t *l;
  if (tr->level < 2 || lane >= tr->nlanes) return;
  l = &tr->lanes[lane];
  if (l->nphases >= tr->max_tasks) {
    l->dropped++;
    return;
  }
  l->phases[l->nphases++] =
      (rt_trace_phase_t){name, ring, rel(tr, begin_ns), rel(tr, end_ns)};
}

void trace_handoff(rt_trace_t *tr, const rt_runtime_t *rt, const rt_task_t *t, uint32_t lane,
                   uint64_t now_ns) {
  rt_trace_task_t *rec = task_of(tr, rt, t);
  if (rec && rec->core != RT_TRACE_NONE)
    trace_phase(tr, lane, "hand-off", t->ring, tr->t0_ns + rec->end_ns, now_ns);
}
