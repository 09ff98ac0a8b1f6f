/* SPDX-License-Identifier: Apache-2.0 */
/* seq_orch.h — a sequential implementation of pto_orch_api_t, for tests.
 *
 * It runs a program's orchestration on the calling thread and each kernel at
 * once, inside submit(): submission order is always a valid execution order,
 * so a correct program produces the same outputs here as on the real
 * runtime.  It exists to test programs in isolation, and to give the
 * runtime's tests a second implementation to compare with (outputs, ring
 * peaks, errors).
 *
 * What it models, and nothing more:
 * - Scopes.  The orchestration starts at depth 0 (the implicit outermost
 *   scope); scope_begin/scope_end nest; a task's ring is min(depth, 3).
 * - OUT tensors.  Each is malloc'ed with exactly numel * dtype size bytes
 *   (so AddressSanitizer catches a kernel that runs past it), filled with
 *   0xff bytes (NaN as f32, so reading before writing shows), and handed
 *   back as the runtime does: base, buffer_bytes = those bytes, offset 0,
 *   row-major strides.  On its ring's heap it counts as the runtime counts
 *   it: rounded up to 1024 bytes; a task's request is the sum over its OUTs.
 * - Reclamation.  Every task submitted so far has run, and so have all its
 *   consumers, so a task becomes reclaimable exactly when the scope that owns
 *   it has ended.  Per ring, tasks retire strictly in submission order: a
 *   reclaimable task behind an unreclaimable one keeps its heap.  Top-level
 *   (ring 0) tasks are therefore live until the orchestration returns.
 *   Reclaimed OUT tensors are poisoned with 0xff and kept until the run
 *   ends, so a later task that still names one fails (see below) instead of
 *   reading memory the runtime would have handed to someone else.
 * - The heap need.  Per ring, the peak over all submits of (live heap bytes
 *   + the submitting task's request): the smallest ring_heap that lets the
 *   run through on the real runtime, not counting the padding the runtime
 *   loses when an allocation skips the end of its ring.  With a ring heap
 *   set (seq_orch_set_ring_heap), a submit over it fails with
 *   HEAP_RING_DEADLOCK: everything reclaimable has been reclaimed already, so
 *   waiting could never help.
 * - The task window need.  Per ring, the peak number of tasks not yet
 *   reclaimed (the runtime needs ring_task_window > that).
 * Not modelled: dependency edges and the pools they use, the tensor map,
 * task window limits, parallelism, timing.
 *
 * Checks it adds, which the real runtime may not make: each is reported as
 * PTO_E_INTERNAL with a message starting "seq_orch:", because it is a bug in
 * the program (or in the test), not an error a user could cause:
 * - scope_end with no scope open; returning with scopes still open; returning
 *   non-zero without reporting an error;
 * - more than PTO_MAX_TASK_TENSORS / PTO_MAX_TASK_SCALARS, a bad direction,
 *   dtype or ndims (1..PTO_MAX_DIMS), a tensor with no elements, an OUT
 *   tensor with a base or of more than 2^48 bytes;
 * - a non-OUT view that does not lie inside one memory argument of the run
 *   (same base, inside [offset, offset + bytes), buffer_bytes equal to the
 *   argument's base_bytes) or inside a live OUT tensor of this run;
 * - a write (INOUT, OUT_EXISTING) into an argument of kind PTO_ARG_INPUT;
 * - a view of an OUT tensor that was already reclaimed;
 * - with input checking on (the default), a kernel that changed an element
 *   of a tensor it was given as IN (views that overlap one of the task's
 *   written views are not checked).
 * The first error wins: its code and message stay, later fatal() calls are
 * ignored, and every later submit() returns -code without running anything.
 *
 * Not thread-safe: one run at a time per seq_orch_t.
 */
#ifndef PTO_TEST_SEQ_ORCH_H
#define PTO_TEST_SEQ_ORCH_H

#include <stdint.h>

#include <pto/errors.h>
#include <pto/program.h>

#define SEQ_ORCH_RINGS 4
#define SEQ_ORCH_HEAP_ALIGN 1024u

typedef struct seq_orch seq_orch_t;

/* What the last run did.  Reset at the start of every run. */
typedef struct seq_orch_stats {
  int orch_rc;                               /* what the orchestration returned */
  uint64_t tasks;                            /* tasks run */
  uint64_t ring_tasks[SEQ_ORCH_RINGS];       /* tasks run per ring */
  uint64_t ring_peak_tasks[SEQ_ORCH_RINGS];  /* peak tasks not yet reclaimed */
  uint64_t ring_peak_heap[SEQ_ORCH_RINGS];   /* the heap need, bytes (see above) */
  uint32_t max_depth;                        /* deepest scope reached; 0 = top level only */
} seq_orch_stats_t;

/* A new executor: no ring heap limits, input checking on.  Returns 0 or
 * -ENOMEM; free it with seq_orch_free. */
int seq_orch_new(seq_orch_t **ret_seq);
/* Frees everything; NULL is accepted. */
void seq_orch_free(seq_orch_t *seq);

/* Limit ring `ring` (0..3) to `bytes` of heap for the next runs; 0 means no
 * limit (the default). */
void seq_orch_set_ring_heap(seq_orch_t *seq, uint32_t ring, uint64_t bytes);
/* Turn the check that kernels leave their IN tensors alone on (non-zero, the
 * default) or off (to save the copies on large runs). */
void seq_orch_set_check_inputs(seq_orch_t *seq, int on);

/* Run `orchestrate` (usually a program's) over `args`, which must stay valid
 * and whose memory the kernels write in place.  Returns 0, or -code of the
 * first error (seq_orch_error has the details).  Every OUT tensor is freed
 * before it returns. */
int seq_orch_run(seq_orch_t *seq, pto_orchestrate_fn orchestrate, const pto_arg_t *args,
                 uint32_t nargs);

/* The last run's statistics and error (code PTO_OK after a success).  Owned
 * by seq, valid until the next run or seq_orch_free.  A HEAP_RING_DEADLOCK
 * fills ring, requested (the task's request), capacity and hint. */
const seq_orch_stats_t *seq_orch_stats(const seq_orch_t *seq);
const pto_error_t *seq_orch_error(const seq_orch_t *seq);

/* The function table seq_orch_run hands to the orchestration; static. */
const pto_orch_api_t *seq_orch_api(void);

#endif
