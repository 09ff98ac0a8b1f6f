/* SPDX-License-Identifier: Apache-2.0 */
/* orch_check.c — what the orchestrator refuses, and the messages that say
 * why (orch_check.h). */
#include "orch_check.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "trace_rec.h"

#define ORCH_MAX_OUT_BYTES (UINT64_C(1) << 48)

/* ---- errors ------------------------------------------------------------ */

/* Errors are built in o->err (orchestrator thread only): the message
 * first (orch_message), then the code and details, then latched. */
static void orch_vmessage(pto_orch_t *o, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));
static void orch_vmessage(pto_orch_t *o, const char *fmt, va_list ap) {
  pto_error_clear(&o->err);
  vsnprintf(o->err.message, sizeof o->err.message, fmt, ap);
}

void orch_message(pto_orch_t *o, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  orch_vmessage(o, fmt, ap);
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
int orch_plain_error(pto_orch_t *o, int code, const char *hint) {
  o->err.code = code;
  snprintf(o->err.hint, sizeof o->err.hint, "%s", hint);
  return rt_fail(o->rt, &o->err);
}

static int orch_invalid(pto_orch_t *o, uint32_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int orch_invalid(pto_orch_t *o, uint32_t i, const char *fmt, ...) {
  va_list ap;
  pto_error_t *e = &o->err;
  va_start(ap, fmt);
  orch_vmessage(o, fmt, ap);
  va_end(ap);
  e->code = PTO_E_INVALID_ARGS;
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

int orch_check_args(pto_orch_t *o, pto_kernel_fn kernel, const pto_task_args_t *a,
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

/* ---- requests that can never fit ---------------------------------------- */

int orch_check_fits(pto_orch_t *o, uint32_t r, uint64_t heap_bytes) {
  rt_ring_t *ring = &o->rt->rings[r];
  rt_scope_t *sc = &o->scopes[o->depth];
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
  return 0;
}

int orch_check_producers(pto_orch_t *o, uint32_t r, uint64_t nprod) {
  rt_ring_t *ring = &o->rt->rings[r];
  if (nprod > ring->dep_size || nprod >= (uint64_t)RT_FANIN_BIAS) {
    orch_message(o, "A task on ring %u depends on %" PRIu64 " live producers, more than the "
                 "ring's whole dependency pool of %" PRIu64 " entries; it can never fit.",
                 r, nprod, ring->dep_size);
    return orch_ring_error(o, PTO_E_DEP_POOL_OVERFLOW, r, nprod, ring->dep_size, "ring_dep_pool",
                           "raise ring_dep_pool[%u] to at least %" PRIu64, r, nprod);
  }
  return 0;
}

/* ---- a reservation that stays short ------------------------------------- */

int orch_report_short(pto_orch_t *o, rt_ring_t *ring, unsigned shortage, bool structural,
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

/* ---- fatal() ------------------------------------------------------------ */

int orch_fatal(pto_orch_t *o, int code, const char *fmt, ...) {
  pto_error_t *e = &o->err;
  va_list ap;
  if (fmt) {
    va_start(ap, fmt);
    orch_vmessage(o, fmt, ap);
    va_end(ap);
  } else {
    orch_message(o, "The program reported a fatal error without a message.");
  }
  e->code = code == PTO_E_INVALID_ARGS ? PTO_E_INVALID_ARGS : PTO_E_EXPLICIT_ORCH_FATAL;
  snprintf(e->hint, sizeof e->hint, "%s",
           e->code == PTO_E_INVALID_ARGS
               ? "check the dispatch arguments against the program's argument list (programs)"
               : "the program reported this error itself; see its message");
  return rt_fail(o->rt, e);
}
