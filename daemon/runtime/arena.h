/* SPDX-License-Identifier: Apache-2.0 */
/* arena.h — the arena: layout, build into committed device memory, and the
 * single-slot cache.
 *
 * An arena holds two device regions: `meta` (per ring: task slots,
 * payloads, orchestrator slot fields, dependency edges; the ready and done
 * queues; the scope task list; the producer scratch; the tensor map
 * buckets) and `heap` (the four ring heaps, back to back).  Regions are
 * grow-only: a rebuild keeps a committed region that is already large
 * enough (and fits the memory allowed), so it pays initialisation only;
 * otherwise the region is released and committed again at its new size.
 * Initialisation touches the task slots, the queues and the buckets, never
 * the heaps or payloads (a run writes those before reading them).
 *
 * Called by rt_ensure_arena / rt_destroy on the device thread; the workers
 * are kept off the arena while it changes (rt_gate_close).
 */
#ifndef PTOD_RT_ARENA_H
#define PTOD_RT_ARENA_H

#include "rt_internal.h"

/* Device bytes (rounded by the device) an arena for `sizing` needs;
 * UINT64_MAX for an invalid or unrepresentable sizing. */
uint64_t arena_bytes(dev_device_t *dev, const pto_sizing_resolved_t *sizing);

/* rt_ensure_arena's work (see runtime.h). */
int arena_ensure(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing, uint64_t bytes_available,
                 bool lookup,
                 rt_arena_result_t *ret, pto_error_t *err);

/* Release both regions; the slot becomes empty. */
void arena_release(rt_runtime_t *rt);

#endif
