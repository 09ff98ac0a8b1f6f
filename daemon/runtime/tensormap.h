/* SPDX-License-Identifier: Apache-2.0 */
/* tensormap.h — the tensor map: which live task last wrote which region.
 *
 * Keyed by a view's buffer base (every view of one buffer lands in the same
 * bucket); each entry is one written tensor of one task, embedded in that
 * task's payload, so the map needs no pool and cannot overflow.  The
 * orchestrator thread alone reads and writes it, so it takes no locks.  An
 * entry is live while its task has not retired (id >= last_alive of its
 * ring); dead entries are unlinked when a lookup meets them and, at the
 * latest, when the task's slot is reused.
 *
 * Overlap of two views of one buffer is decided as the reference runtime
 * does, conservatively ("when in doubt, assume overlap"): byte ranges that
 * do not meet are disjoint; views with equal dtype, rank and strides over a
 * row-major parent are compared dimension by dimension; anything else that
 * shares bytes overlaps.
 */
#ifndef PTOD_RT_TENSORMAP_H
#define PTOD_RT_TENSORMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_internal.h"

typedef enum tm_overlap {
  TM_DISJOINT = 0,
  TM_OVERLAP = 1,
  TM_COVERS = 2, /* the newer view contains every element of the older one */
} tm_overlap_t;

/* How `newer` relates to `older`; both are valid views of the same base. */
tm_overlap_t tm_overlap(const pto_tensor_t *older, const pto_tensor_t *newer);

/* Whether the view's elements are one dense row-major range. */
bool tm_contiguous(const pto_tensor_t *t);

/* Byte range [lo, hi) the view touches inside its buffer.  The view must
 * have been validated (no overflow, every dimension > 0). */
void tm_extent(const pto_tensor_t *t, uint64_t *ret_lo, uint64_t *ret_hi);

/* Add to o->producers every live task whose written region overlaps `v`
 * (each task once per epoch: bump o->epoch before the first call of a
 * submit); with `replace`, also unlink the entries `v` covers (an INOUT
 * writer takes their place).  *n counts producers found, even beyond
 * o->producers_cap (only the first cap are stored). */
void tm_collect(struct pto_orch *o, const pto_tensor_t *v, bool replace, uint64_t *n);

/* Link tensor i of the payload as the newest writer of its region. */
void tm_insert(struct pto_orch *o, rt_payload_t *p, rt_slot_orch_t *so, uint32_t i);

/* Unlink every entry of the slot's previous task (before the slot is reused). */
void tm_forget(rt_payload_t *p, rt_slot_orch_t *so);

#endif
