/* SPDX-License-Identifier: Apache-2.0 */
/* orch_check.h — what the orchestrator refuses (internal to orch.c and
 * orch_check.c): the checks of a task's arguments, the requests that can
 * never fit their ring, a reservation that stays short, and fatal().
 *
 * Orchestrator thread only.  Every error is built in o->err and latched as
 * the run's error (rt_fail; the first error wins); the functions that
 * report one return -code of the error latched now.
 */
#ifndef PTOD_RT_ORCH_CHECK_H
#define PTOD_RT_ORCH_CHECK_H

#include "rt_internal.h"

/* Heap bytes an OUT tensor takes on its ring: its size, rounded up. */
static inline uint64_t orch_round_heap(uint64_t bytes) {
  return (bytes + RT_HEAP_ALIGN - 1) & ~(RT_HEAP_ALIGN - 1);
}

/* Start an error: clear o->err and write its message. */
void orch_message(pto_orch_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Latch o->err, with its message written, as a run-level error of the
 * orchestration (no ring) with `hint`. */
int orch_plain_error(pto_orch_t *o, int code, const char *hint);

/* Check a task's kernel and arguments (direction, dtype, shape, views
 * inside their buffers); on success *ret_heap is the heap bytes its OUT
 * tensors take.  An error is INVALID_ARGS. */
int orch_check_args(pto_orch_t *o, pto_kernel_fn kernel, const pto_task_args_t *a,
                    uint64_t *ret_heap);

/* A task on ring r asking for heap_bytes that can never fit: its scope
 * already holds window - 1 tasks (SCOPE_DEADLOCK), or the request is larger
 * than the ring's heap (HEAP_RING_DEADLOCK).  0 when it may fit. */
int orch_check_fits(pto_orch_t *o, uint32_t r, uint64_t heap_bytes);

/* A task on ring r with nprod producers more than its ring's whole
 * dependency pool (or than fanin can count): DEP_POOL_OVERFLOW.  0 when it
 * may fit. */
int orch_check_producers(pto_orch_t *o, uint32_t r, uint64_t nprod);

/* What a reservation found short (orch_reserve), as bits. */
enum { ORCH_SHORT_HEAP = 1, ORCH_SHORT_SLOT = 2, ORCH_SHORT_DEPS = 4 };

/* Report the first of `shortage` (heap, then task window, then dependency
 * pool) on `ring`, whose oldest live task is `la`: `structural` when that
 * task's scope is still open (nothing can retire), else after waited_ms of
 * no retirement (deadlock_timeout). */
int orch_report_short(pto_orch_t *o, rt_ring_t *ring, unsigned shortage, bool structural,
                      uint64_t la, uint64_t heap_bytes, uint64_t ndeps, uint64_t waited_ms);

/* The programs' fatal(): INVALID_ARGS stays INVALID_ARGS, any other code
 * becomes EXPLICIT_ORCH_FATAL; fmt may be NULL. */
int orch_fatal(pto_orch_t *o, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
