/* SPDX-License-Identifier: Apache-2.0 */
/* orch.c — submit, scopes, back-pressure and the ring errors. */
#include "orch.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "park.h"
#include "queue.h"
#include "scheduler.h"
#include "tensormap.h"
#include "trace_rec.h"

#define ORCH_MAX_OUT_BYTES (UINT64_C(1) << 48)

static inline rt_slot_orch_t *orch_slot(rt_runtime_t *rt, const rt_task_t *t) {
  rt_ring_t *ring = &rt->rings[t->ring];
  return &ring->orch[t->id & ring->mask];
}

static inline uint64_t orch_round_heap(uint64_t bytes) {
  return (bytes + RT_HEAP_ALIGN - 1) & ~(RT_HEAP_ALIGN - 1);
}

/* ---- errors ------------------------------------------------------------ */

/* Errors are built in o->err (orchestrator thread only): the message
 * first (orch_message), then the code and details, then latched. */
static void orch_message(pto_orch_t *o, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void orch_message(pto_orch_t *o, const char *fmt, ...) {
  va_list ap;
  pto_error_clear(&o->err);
  va_start(ap, fmt);
  vsnprintf(o->err.message, sizeof o->err.message, fmt, ap);
  va_end(ap);
}

static int orch_ring_error(pto_orch_t *o, int code, uint32_t ring, uint64_t requested,
                           uint64_t capacity, const char *key, const char *hint_fmt, ...)
    __attribute__((format(printf, 7, 8)));
static int orch_ring_error(pto_orch_t *o, int code, uint32_t ring, uint64_t requested,
                           uint64_t capacity, const char *key, const char *hint_fmt, ...) {
  va_list ap;
  pto_error_t *e = &o->err;
  e->code = code;
  e->ring = (int)ring;
  e->requested = requested;
  e->capacity = capacity;
  snprintf(e->key, sizeof e->key, "%s", key);
  va_start(ap, hint_fmt);
  vsnprintf(e->hint, sizeof e->hint, hint_fmt, ap);
  va_end(ap);
  if (o->trace) trace_failure(o->trace, &o->rt->rings[ring], e, o->depth);
  return rt_fail(o->rt, e);
}

/* A run-level error of the orchestration (no ring). */
static int orch_plain_error(pto_orch_t *o, int code, const char *hint) {
  o->err.code = code;
  snprintf(o->err.hint, sizeof o->err.hint, "%s", hint);
  return rt_fail(o->rt, &o->err);
}

static int orch_invalid(pto_orch_t *o, uint32_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int orch_invalid(pto_orch_t *o, uint32_t i, const char *fmt, ...) {
  va_list ap;
  pto_error_t *e = &o->err;
  pto_error_clear(e);
  e->code = PTO_E_INVALID_ARGS;
  va_start(ap, fmt);
  vsnprintf(e->message, sizeof e->message, fmt, ap);
  va_end(ap);
  if (i != UINT32_MAX) snprintf(e->key, sizeof e->key, "tensor[%u]", i);
  snprintf(e->hint, sizeof e->hint,
           "fix the task arguments the orchestration passes to submit()");
  return rt_fail(o->rt, e);
}

/* Who holds the oldest live task of a ring whose scope is open, in words. */
static const char *orch_holder(uint32_t ring) {
  return ring == 0 ? "the top level, whose tasks stay live until the orchestration returns"
                   : "a scope that is still open";
}

/* ---- argument checks --------------------------------------------------- */

static bool orch_dtype_ok(pto_dtype_t d) {
  return d == PTO_F32 || d == PTO_I32 || d == PTO_I64 || d == PTO_U8;
}

/* Check one tensor; for OUT, return its heap bytes. */
static int orch_check_tensor(pto_orch_t *o, const pto_task_args_t *a, uint32_t i,
                             uint64_t *ret_bytes) {
  const pto_tensor_t *t = &a->tensor[i];
  pto_dir_t dir = a->dir[i];
  uint64_t numel = 1, esz;

  if (dir != PTO_IN && dir != PTO_INOUT && dir != PTO_OUT_EXISTING && dir != PTO_OUT)
    return orch_invalid(o, i,
                        "tensor[%u] has direction %d; use PTO_IN, PTO_INOUT, PTO_OUT_EXISTING or "
                        "PTO_OUT.",
                        i, (int)dir);
  if (!orch_dtype_ok(t->dtype))
    return orch_invalid(o, i, "tensor[%u] has dtype %d, which is not a pto_dtype_t.", i,
                        (int)t->dtype);
  if (t->ndims < 1 || t->ndims > PTO_MAX_DIMS)
    return orch_invalid(o, i, "tensor[%u] has %u dimensions; a tensor has 1 to %d.", i, t->ndims,
                        PTO_MAX_DIMS);
  esz = pto_dtype_size(t->dtype);
  for (uint32_t d = 0; d < t->ndims; d++) {
    if (t->shape[d] == 0)
      return orch_invalid(o, i, "tensor[%u] has no elements (dimension %u is 0).", i, d);
    if (__builtin_mul_overflow(numel, t->shape[d], &numel) || numel > ORCH_MAX_OUT_BYTES)
      return orch_invalid(o, i, "tensor[%u] has more than 2^48 elements.", i);
  }
  if (dir == PTO_OUT) {
    if (t->base)
      return orch_invalid(o, i,
                          "tensor[%u] is PTO_OUT but already has a base; leave base NULL, the "
                          "runtime allocates OUT tensors.",
                          i);
    if (numel * esz > ORCH_MAX_OUT_BYTES)
      return orch_invalid(o, i, "tensor[%u] is a PTO_OUT of more than 2^48 bytes.", i);
    *ret_bytes = numel * esz;
    return 0;
  }
  if (!t->base)
    return orch_invalid(o, i,
                        "tensor[%u] has no base address; only PTO_OUT tensors are allocated by "
                        "the runtime.",
                        i);
  /* The view must lie inside its buffer: kernels trust it, and the tensor
   * map compares views of one base only. */
  {
    int64_t lo = 0, hi = 0, span;
    if (t->offset > INT64_MAX) goto outside;
    lo = hi = (int64_t)t->offset;
    for (uint32_t d = 0; d < t->ndims; d++) {
      if (__builtin_mul_overflow((int64_t)(t->shape[d] - 1), t->strides[d], &span)) goto outside;
      if (span < 0 ? __builtin_add_overflow(lo, span, &lo) : __builtin_add_overflow(hi, span, &hi))
        goto outside;
    }
    if (lo < 0 || hi == INT64_MAX || (uint64_t)hi + 1 > t->buffer_bytes / esz) goto outside;
    return 0;
  outside:
    return orch_invalid(o, i,
                        "tensor[%u] (offset %" PRIu64 ", %u dimensions) reaches outside its "
                        "buffer of %" PRIu64 " bytes; a view must lie inside base .. base + "
                        "buffer_bytes.",
                        i, t->offset, t->ndims, t->buffer_bytes);
  }
}

static int orch_check_args(pto_orch_t *o, pto_kernel_fn kernel, const pto_task_args_t *a,
                           uint64_t *ret_heap) {
  uint64_t heap = 0;
  if (!kernel)
    return orch_invalid(o, UINT32_MAX, "submit() got no kernel; pass the kernel function.");
  if (!a) return orch_invalid(o, UINT32_MAX, "submit() got no task arguments (NULL).");
  if (a->ntensors > PTO_MAX_TASK_TENSORS)
    return orch_invalid(o, UINT32_MAX, "A task has %u tensors; at most %d are allowed.",
                        a->ntensors, PTO_MAX_TASK_TENSORS);
  if (a->nscalars > PTO_MAX_TASK_SCALARS)
    return orch_invalid(o, UINT32_MAX, "A task has %u scalars; at most %d are allowed.",
                        a->nscalars, PTO_MAX_TASK_SCALARS);
  for (uint32_t i = 0; i < a->ntensors; i++) {
    uint64_t bytes = 0;
    int rc = orch_check_tensor(o, a, i, &bytes);
    if (rc) return rc;
    heap += orch_round_heap(bytes); /* at most 8 * 2^48: no overflow */
  }
  *ret_heap = heap;
  return 0;
}

/* ---- reservation ------------------------------------------------------- */

enum { ORCH_SHORT_HEAP = 1, ORCH_SHORT_SLOT = 2, ORCH_SHORT_DEPS = 4 };

static int orch_report_short(pto_orch_t *o, rt_ring_t *ring, unsigned shortage, bool structural,
                             uint64_t la, uint64_t heap_bytes, uint64_t ndeps, uint64_t waited_ms) {
  uint32_t r = ring->index;
  uint64_t id = ring->next_id;
  uint64_t live_tasks = id - la;
  const char *why = structural ? orch_holder(r) : NULL;

  if (shortage & ORCH_SHORT_HEAP) {
    uint64_t live = live_tasks ? ring->heap_requests - ring->orch[la & ring->mask].heap_before : 0;
    uint64_t need = live + heap_bytes;
    uint64_t fit = rt_pow2_at_least(need > ring->heap_size ? need : ring->heap_size + 1);
    if (structural)
      orch_message(o, "Ring %u's heap is exhausted: a task needs %" PRIu64 " bytes while live "
                   "tasks hold %" PRIu64 " of the ring's %" PRIu64 " bytes, and the oldest of "
                   "them belongs to %s, so none can be reclaimed.",
                   r, heap_bytes, live, ring->heap_size, why);
    else
      orch_message(o, "Ring %u's heap stayed exhausted for %" PRIu64 " ms (deadlock_timeout): a "
                   "task needs %" PRIu64 " bytes while %" PRIu64 " live tasks hold %" PRIu64
                   " of the ring's %" PRIu64 " bytes and none retired.",
                   r, waited_ms, heap_bytes, live_tasks, live, ring->heap_size);
    return orch_ring_error(o, PTO_E_HEAP_RING_DEADLOCK, r, heap_bytes, ring->heap_size,
                           "ring_heap",
                           "raise ring_heap[%u] to at least %" PRIu64 " (ring %u needs %" PRIu64
                           " bytes live)%s",
                           r, fit, r, need,
                           structural && r < 3 ? ", or submit these tasks in a nested scope" : "");
  }
  if (shortage & ORCH_SHORT_SLOT) {
    uint64_t fit = rt_pow2_at_least(live_tasks + 2 > ring->window * 2 ? live_tasks + 2
                                                                       : ring->window * 2);
    if (structural)
      orch_message(o, "Ring %u's task window is full: %" PRIu64 " tasks are live, the most a "
                   "window of %" PRIu64 " holds, and the oldest of them belongs to %s, so none "
                   "can retire.",
                   r, live_tasks, ring->window, why);
    else
      orch_message(o, "Ring %u's task window stayed full for %" PRIu64
                   " ms (deadlock_timeout): %" PRIu64 " tasks are live in a window of %" PRIu64
                   " and none retired.",
                   r, waited_ms, live_tasks, ring->window);
    return orch_ring_error(o, PTO_E_FLOW_CONTROL_DEADLOCK, r, live_tasks + 1, ring->window - 1,
                           "ring_task_window",
                           "raise ring_task_window[%u] to at least %" PRIu64 "%s", r, fit,
                           structural ? ", or end scopes sooner" : "");
  }
  {
    uint64_t used = ring->dep_head - atomic_load(&ring->dep_tail);
    uint64_t need = used + ndeps;
    if (structural)
      orch_message(o, "Ring %u's dependency pool is exhausted: a task needs %" PRIu64 " entries "
                   "while live tasks hold %" PRIu64 " of the pool's %" PRIu64 ", and the oldest "
                   "of them belongs to %s, so none can be reclaimed.",
                   r, ndeps, used, ring->dep_size, why);
    else
      orch_message(o, "Ring %u's dependency pool stayed exhausted for %" PRIu64 " ms "
                   "(deadlock_timeout): a task needs %" PRIu64 " entries while live tasks hold "
                   "%" PRIu64 " of the pool's %" PRIu64 " and none retired.",
                   r, waited_ms, ndeps, used, ring->dep_size);
    return orch_ring_error(o, PTO_E_DEP_POOL_OVERFLOW, r, ndeps, ring->dep_size, "ring_dep_pool",
                           "raise ring_dep_pool[%u] to at least %" PRIu64, r, need);
  }
}

/* Take a task slot, heap_bytes of heap and ndeps dependency entries on the
 * ring, all together, waiting for retirement while any is short.  Returns 0
 * with *ret_heap_pos (the heap position of the allocation), or the run's
 * error. */
static int orch_reserve(pto_orch_t *o, rt_ring_t *ring, uint64_t heap_bytes, uint64_t ndeps,
                        uint64_t *ret_heap_pos) {
  rt_runtime_t *rt = o->rt;
  const uint64_t id = ring->next_id, H = ring->heap_size;
  uint64_t last_la = UINT64_MAX, progress_at = 0, spin_start = 0, wait_from = 0;
  uint32_t iter = 0;
  bool helping = true;

  for (;;) {
    uint64_t la = atomic_load_explicit(&ring->last_alive, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&ring->heap_tail, memory_order_acquire);
    uint64_t dtail = atomic_load_explicit(&ring->dep_tail, memory_order_acquire);
    uint64_t head = ring->heap_head, pad = 0, now;
    unsigned shortage = 0;
    bool rebase = false;

    if (id - la >= ring->window - 1) shortage |= ORCH_SHORT_SLOT;
    if (heap_bytes) {
      uint64_t used = head - tail, off = head & (H - 1);
      if (off + heap_bytes > H) pad = H - off; /* never straddle the wrap */
      if (used + pad + heap_bytes > H) {
        if (used == 0)
          rebase = true; /* empty: restart at offset 0 whatever the padding */
        else
          shortage |= ORCH_SHORT_HEAP;
      }
    }
    if (ring->dep_head - dtail + ndeps > ring->dep_size) shortage |= ORCH_SHORT_DEPS;

    if (!shortage) {
      uint64_t live_heap, used_pos;
      head += pad;
      /* Empty heap: no retirement can write the tail now (every task that
       * holds heap has retired), so the orchestrator may move it. */
      if (rebase) atomic_store_explicit(&ring->heap_tail, head, memory_order_release);
      *ret_heap_pos = head;
      ring->heap_head = head + heap_bytes;
      /* Requests live (no padding), as of la; the tail may be newer than
       * la, so the positions used bound it too (both over-estimate at most). */
      live_heap = (id > la ? ring->heap_requests - ring->orch[la & ring->mask].heap_before : 0) +
                  heap_bytes;
      used_pos = ring->heap_head - (rebase ? head : tail);
      if (live_heap > used_pos) live_heap = used_pos;
      if (id - la + 1 > ring->peak_tasks) ring->peak_tasks = id - la + 1;
      if (live_heap > ring->peak_heap) ring->peak_heap = live_heap;
      if (o->trace) {
        o->rec_tasks = id - la + 1;
        o->rec_heap = live_heap;
        if (wait_from)
          trace_phase(o->trace, trace_orch_lane(rt), "wait for room", ring->index, wait_from,
                      rt_now_ns());
      }
      return 0;
    }

    if (rt_failed(rt)) return -atomic_load(&rt->err_code);
    /* Nothing on a ring retires before its oldest task: if that task's
     * scope is still open, no amount of waiting helps. */
    if (id > la && ring->orch[la & ring->mask].scope_open)
      return orch_report_short(o, ring, shortage, true, la, heap_bytes, ndeps, 0);

    now = rt_now_ns();
    if (!wait_from) wait_from = now;
    if (la != last_la) {
      last_la = la;
      progress_at = now;
      spin_start = now;
      iter = 0;
      helping = true;
    } else if (now - progress_at >= rt->deadlock_timeout_ns) {
      return orch_report_short(o, ring, shortage, false, la, heap_bytes, ndeps,
                               (now - progress_at) / 1000000u);
    }
    /* What we wait for is tasks finishing: run a short one rather than
     * watch (on a 2-vCPU machine the cores may be waiting for this CPU
     * anyway).  Once one is handed back, leave the rest to the cores
     * until the ring moves. */
    if (helping) {
      if (sched_help(rt, &rt->helper, true)) continue;
      helping = false;
    }
    if (o->owed_wake) {
      /* About to wait: a task queued without a wake needs a core now. */
      o->owed_wake = false;
      rt_park_notify(&rt->core_park);
    }
    if (now - spin_start < rt->spin_ns) {
      rt_spin_pause(++iter);
      continue;
    }
    {
      uint32_t key = rt_park_prepare(&rt->retire_park);
      if (atomic_load(&ring->last_alive) != la || rt_failed(rt)) {
        rt_park_cancel(&rt->retire_park);
        continue;
      }
      rt_park_wait(&rt->retire_park, key, progress_at + rt->deadlock_timeout_ns - now);
    }
  }
}

/* ---- the API ----------------------------------------------------------- */

static int orch_submit(pto_orch_t *o, pto_kernel_fn kernel, pto_task_args_t *args) {
  rt_runtime_t *rt = o->rt;
  uint32_t r = o->depth < PTO_RING_COUNT - 1 ? o->depth : PTO_RING_COUNT - 1;
  rt_ring_t *ring = &rt->rings[r];
  rt_scope_t *sc = &o->scopes[o->depth];
  uint64_t heap_bytes = 0, heap_pos = 0, nprod = 0, id, dep_pos, cursor = 0, submit_ns = 0;
  uint32_t nwait = 0, nedges = 0;
  rt_task_t *t;
  rt_payload_t *p;
  rt_slot_orch_t *so;
  int rc, code = atomic_load_explicit(&rt->err_code, memory_order_relaxed);

  if (code) return -code;
  if (o->trace) submit_ns = rt_now_ns();
  rc = orch_check_args(o, kernel, args, &heap_bytes);
  if (rc) return rc;

  if (sc->ntasks >= ring->window - 1) {
    orch_message(o, "The scope at depth %u already holds %" PRIu64 " tasks on ring %u, the "
                 "most its task window of %" PRIu64 " allows (window - 1); another task can "
                 "never fit.",
                 o->depth, sc->ntasks, r, ring->window);
    return orch_ring_error(o, PTO_E_SCOPE_DEADLOCK, r, sc->ntasks + 1, ring->window - 1,
                           "ring_task_window",
                           "raise ring_task_window[%u] to at least %" PRIu64
                           ", or split the scope at depth %u into smaller scopes",
                           r, rt_pow2_at_least(sc->ntasks + 2), o->depth);
  }
  if (heap_bytes > ring->heap_size) {
    orch_message(o, "A task on ring %u needs %" PRIu64 " heap bytes for its OUT tensors, more "
                 "than the whole ring heap of %" PRIu64 " bytes; it can never fit.",
                 r, heap_bytes, ring->heap_size);
    return orch_ring_error(o, PTO_E_HEAP_RING_DEADLOCK, r, heap_bytes, ring->heap_size,
                           "ring_heap", "raise ring_heap[%u] to at least %" PRIu64, r,
                           rt_pow2_at_least(heap_bytes));
  }

  o->epoch++;
  for (uint32_t i = 0; i < args->ntensors; i++)
    if (args->dir[i] != PTO_OUT)
      tm_collect(o, &args->tensor[i], args->dir[i] == PTO_INOUT, &nprod);
  if (nprod > ring->dep_size || nprod >= (uint64_t)RT_FANIN_BIAS) {
    orch_message(o, "A task on ring %u depends on %" PRIu64 " live producers, more than the "
                 "ring's whole dependency pool of %" PRIu64 " entries; it can never fit.",
                 r, nprod, ring->dep_size);
    return orch_ring_error(o, PTO_E_DEP_POOL_OVERFLOW, r, nprod, ring->dep_size, "ring_dep_pool",
                           "raise ring_dep_pool[%u] to at least %" PRIu64, r, nprod);
  }

  rc = orch_reserve(o, ring, heap_bytes, nprod, &heap_pos);
  if (rc) return rc;

  id = ring->next_id;
  t = &ring->tasks[id & ring->mask];
  p = &ring->payloads[id & ring->mask];
  so = &ring->orch[id & ring->mask];
  tm_forget(p, so); /* the slot's previous task retired */

  t->id = id;
  t->kernel = kernel;
  t->ring = (uint8_t)r;
  t->has_heap = heap_bytes != 0;
  t->heap_end = heap_pos + heap_bytes;
  atomic_store_explicit(&t->fanout, NULL, memory_order_relaxed);
  atomic_store_explicit(&t->fanin, RT_FANIN_BIAS, memory_order_relaxed);
  atomic_store_explicit(&t->pins, 2, memory_order_relaxed);
  p->task = t;
  so->seen = 0;
  so->scope_open = 1;
  so->heap_before = ring->heap_requests;
  ring->heap_requests += heap_bytes;

  /* The kernel's copy: only what it may read. */
  p->args.ntensors = args->ntensors;
  p->args.nscalars = args->nscalars;
  for (uint32_t i = 0; i < args->ntensors; i++) {
    p->args.dir[i] = args->dir[i];
    if (args->dir[i] == PTO_OUT) {
      pto_tensor_t *v = &args->tensor[i];
      uint64_t bytes = pto_tensor_numel(v) * pto_dtype_size(v->dtype);
      char *base = ring->heap + ((heap_pos + cursor) & (ring->heap_size - 1));
      *v = pto_tensor_view(base, bytes, v->dtype, 0, v->ndims, v->shape);
      cursor += orch_round_heap(bytes);
    }
    p->args.tensor[i] = args->tensor[i];
  }
  for (uint32_t i = 0; i < args->nscalars; i++) p->args.scalar[i] = args->scalar[i];

  /* Edges: one per producer that is not yet CONSUMED.  One still running
   * gets the edge in its fanout list, and pins itself for it when it
   * completes (sched_complete); one that has completed is pinned here.
   * Either way the producer stays live until this task completes, and it
   * takes one atomic operation on the producer's line, not two. */
  dep_pos = ring->dep_head;
  for (uint64_t k = 0; k < nprod; k++) {
    rt_task_t *pt = o->producers[k];
    rt_edge_t *edge, *head;
    int32_t pins;
    if (pt == t) continue; /* the slot's previous task, retired */
    edge = &ring->edges[dep_pos % ring->dep_size];
    edge->producer = pt;
    edge->consumer = t;
    head = atomic_load_explicit(&pt->fanout, memory_order_acquire);
    while (head != RT_FANOUT_CLOSED) {
      edge->next = head;
      if (atomic_compare_exchange_weak_explicit(&pt->fanout, &head, edge, memory_order_release,
                                                memory_order_acquire))
        break;
    }
    if (head != RT_FANOUT_CLOSED) {
      nwait++;
    } else {
      /* Completed.  Acquire: a producer found CONSUMED (pins 0) gets no
       * edge, so this is what orders its kernel's writes before this
       * task's reads. */
      pins = atomic_load_explicit(&pt->pins, memory_order_acquire);
      do {
        if (pins == 0) break;
      } while (!atomic_compare_exchange_weak_explicit(&pt->pins, &pins, pins + 1,
                                                      memory_order_acquire, memory_order_acquire));
      if (pins == 0) continue;
    }
    dep_pos++;
    nedges++;
  }
  ring->dep_head = dep_pos;
  t->ndeps = nedges;
  t->dep_end = dep_pos;
  {
    uint64_t used = dep_pos - atomic_load_explicit(&ring->dep_tail, memory_order_relaxed);
    if (used > ring->peak_deps) ring->peak_deps = used;
    if (o->trace) o->rec_deps = used;
  }

  for (uint32_t i = 0; i < args->ntensors; i++)
    if (args->dir[i] != PTO_IN) tm_insert(o, p, so, i);

  if (o->trace)
    trace_submit(o->trace, o, ring, t, submit_ns, heap_bytes, o->producers, nprod < o->producers_cap ? nprod : o->producers_cap);
  o->scope_tasks[o->nscope_tasks++] = t;
  sc->ntasks++;
  ring->next_id = id + 1;
  atomic_store_explicit(&ring->submitted, id + 1, memory_order_release);

  /* Drop the bias: whoever takes fanin to 0 (here or a producer) queues it. */
  if (nwait == 0 ||
      atomic_fetch_sub_explicit(&t->fanin, RT_FANIN_BIAS - (int32_t)nwait, memory_order_acq_rel) ==
          RT_FANIN_BIAS - (int32_t)nwait) {
    if (o->trace) trace_ready(o->trace, rt, t, rt_now_ns());
    if (kernel == atomic_load_explicit(&rt->tiny_kernel, memory_order_relaxed) &&
        !rt_queue_nonempty(&rt->ready)) {
      /* Shorter than any hand-off (orch.h): run it here, now. */
      sched_run_inline(rt, &rt->helper, t);
      return 0;
    }
    /* A lone ready task is this thread's to run once it has room to
     * (orch.h); a second one is work for a core. */
    rt_queue_push(&rt->ready, t);
    if (o->owed_wake || rt_queue_depth(&rt->ready) > 1) {
      o->owed_wake = false;
      rt_park_notify(&rt->core_park);
    } else {
      o->owed_wake = true;
    }
  }
  return 0;
}

static void orch_scope_begin(pto_orch_t *o) {
  if (o->overflow || o->depth + 1 >= RT_MAX_SCOPE_DEPTH) {
    if (!o->overflow) {
      orch_message(o, "The orchestration nested scopes deeper than %u; end scopes before "
                   "opening more.",
                   RT_MAX_SCOPE_DEPTH - 1);
      orch_plain_error(o, PTO_E_EXPLICIT_ORCH_FATAL, "nest fewer scopes");
    }
    o->overflow++;
    return;
  }
  o->depth++;
  if (o->trace) trace_scope_begin(o->trace, o->depth, rt_now_ns());
  o->scopes[o->depth].begin = o->nscope_tasks;
  o->scopes[o->depth].ntasks = 0;
}

/* End the innermost scope: drop the scope pin of each of its tasks. */
static void orch_scope_close(pto_orch_t *o) {
  rt_runtime_t *rt = o->rt;
  uint64_t begin = o->scopes[o->depth].begin;
  for (uint64_t k = begin; k < o->nscope_tasks; k++) {
    rt_task_t *t = o->scope_tasks[k];
    orch_slot(rt, t)->scope_open = 0;
    sched_release(rt, t);
  }
  o->nscope_tasks = begin;
  if (o->trace) trace_scope_end(o->trace, o->depth, rt_now_ns());
  if (o->depth > 0) o->depth--;
}

static void orch_scope_end(pto_orch_t *o) {
  if (o->overflow) {
    o->overflow--;
    return;
  }
  if (o->depth == 0) {
    orch_message(o, "The orchestration called scope_end() without a matching scope_begin().");
    orch_plain_error(o, PTO_E_EXPLICIT_ORCH_FATAL, "call scope_end() once for every scope_begin()");
    return;
  }
  orch_scope_close(o);
}

static int orch_fatal(pto_orch_t *o, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int orch_fatal(pto_orch_t *o, int code, const char *fmt, ...) {
  pto_error_t *e = &o->err;
  va_list ap;
  pto_error_clear(e);
  e->code = code == PTO_E_INVALID_ARGS ? PTO_E_INVALID_ARGS : PTO_E_EXPLICIT_ORCH_FATAL;
  if (fmt) {
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
  } else {
    snprintf(e->message, sizeof e->message,
             "The program reported a fatal error without a message.");
  }
  snprintf(e->hint, sizeof e->hint, "%s",
           e->code == PTO_E_INVALID_ARGS
               ? "check the dispatch arguments against the program's argument list (programs)"
               : "the program reported this error itself; see its message");
  return rt_fail(o->rt, e);
}

static const pto_orch_api_t orch_api_table = {
    .abi_version = PTO_PROGRAM_ABI_VERSION,
    .scope_begin = orch_scope_begin,
    .scope_end = orch_scope_end,
    .submit = orch_submit,
    .fatal = orch_fatal,
};

const pto_orch_api_t *orch_api(void) { return &orch_api_table; }

/* ---- the thread -------------------------------------------------------- */

void orch_run(rt_runtime_t *rt, uint64_t gen) {
  pto_orch_t *o = &rt->orch;
  const pto_program_t *prog = rt->prog;
  uint64_t orch_from = o->trace ? rt_now_ns() : 0;
  int rc;

  o->depth = 0;
  o->overflow = 0;
  o->owed_wake = false;
  o->scopes[0].begin = 0;
  o->scopes[0].ntasks = 0;
  o->nscope_tasks = 0;
  if (o->trace) trace_scope_begin(o->trace, 0, orch_from);

  rc = prog->orchestrate(&orch_api_table, o, rt->args, rt->nargs);
  if (o->trace)
    trace_phase(o->trace, trace_orch_lane(rt), "orchestrate", RT_TRACE_NONE, orch_from,
                rt_now_ns());
  if (!rt_failed(rt) && (rc != 0 || o->depth != 0 || o->overflow != 0)) {
    if (rc != 0)
      orch_message(o, "The orchestration of program '%s' returned %d without reporting an error; "
                   "a program reports errors through fatal().",
                   prog->name, rc);
    else
      orch_message(o, "The orchestration of program '%s' returned with %u scope(s) still open; "
                   "call scope_end() once for every scope_begin().",
                   prog->name, o->depth + o->overflow);
    orch_plain_error(o, PTO_E_EXPLICIT_ORCH_FATAL, "fix the program's orchestration");
  }
  while (o->depth > 0) orch_scope_close(o);
  orch_scope_close(o); /* the implicit outermost scope */
  /* A first task still queued is the caller's to run now (rt_run helps). */
  o->owed_wake = false;
  atomic_store(&rt->orch_done_gen, gen);
  rt_check_done(rt);
}
