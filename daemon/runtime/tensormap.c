/* SPDX-License-Identifier: Apache-2.0 */
/* tensormap.c — overlap rules and the orchestrator-owned map. */
#include "tensormap.h"

#include <stddef.h>

static inline uint64_t tm_hash(const void *base, uint32_t bits) {
  return ((uint64_t)(uintptr_t)base * UINT64_C(0x9E3779B97F4A7C15)) >> (64 - bits);
}

void tm_extent(const pto_tensor_t *t, uint64_t *ret_lo, uint64_t *ret_hi) {
  int64_t lo = (int64_t)t->offset, hi = (int64_t)t->offset;
  uint64_t esz = pto_dtype_size(t->dtype);
  for (uint32_t d = 0; d < t->ndims; d++) {
    int64_t span = (int64_t)(t->shape[d] - 1) * t->strides[d];
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  *ret_lo = (uint64_t)lo * esz;
  *ret_hi = ((uint64_t)hi + 1) * esz;
}

bool tm_contiguous(const pto_tensor_t *t) {
  int64_t expect = 1;
  for (uint32_t d = t->ndims; d-- > 0;) {
    if (t->shape[d] == 1) continue;
    if (t->strides[d] != expect) return false;
    expect *= (int64_t)t->shape[d];
  }
  return true;
}

/* The view's coordinates in its row-major parent (whose extents the strides
 * imply), or false when the strides do not describe such a parent or the
 * view wraps past a row of it. */
static bool tm_coords(const pto_tensor_t *t, uint64_t c[PTO_MAX_DIMS]) {
  uint64_t rem = t->offset;
  for (uint32_t d = 0; d < t->ndims; d++) {
    if (t->strides[d] <= 0) return false;
    if (d > 0 && (t->strides[d - 1] % t->strides[d]) != 0) return false;
    c[d] = rem / (uint64_t)t->strides[d];
    rem %= (uint64_t)t->strides[d];
  }
  if (rem != 0) return false;
  for (uint32_t d = 1; d < t->ndims; d++) {
    uint64_t extent = (uint64_t)(t->strides[d - 1] / t->strides[d]);
    if (c[d] + t->shape[d] > extent) return false;
  }
  return true;
}

static bool tm_same_layout(const pto_tensor_t *a, const pto_tensor_t *b) {
  if (a->dtype != b->dtype || a->ndims != b->ndims) return false;
  for (uint32_t d = 0; d < a->ndims; d++)
    if (a->strides[d] != b->strides[d]) return false;
  return true;
}

tm_overlap_t tm_overlap(const pto_tensor_t *older, const pto_tensor_t *newer) {
  uint64_t olo, ohi, nlo, nhi;
  uint64_t co[PTO_MAX_DIMS], cn[PTO_MAX_DIMS];

  tm_extent(older, &olo, &ohi);
  tm_extent(newer, &nlo, &nhi);
  if (ohi <= nlo || nhi <= olo) return TM_DISJOINT;
  if (tm_same_layout(older, newer) && tm_coords(older, co) && tm_coords(newer, cn)) {
    bool covers = true;
    for (uint32_t d = 0; d < older->ndims; d++) {
      uint64_t oe = co[d] + older->shape[d], ne = cn[d] + newer->shape[d];
      if (oe <= cn[d] || ne <= co[d]) return TM_DISJOINT;
      if (cn[d] > co[d] || ne < oe) covers = false;
    }
    return covers ? TM_COVERS : TM_OVERLAP;
  }
  if (nlo <= olo && ohi <= nhi && tm_contiguous(newer)) return TM_COVERS;
  return TM_OVERLAP;
}

static inline rt_payload_t *tm_payload_of(rt_tm_entry_t *e) {
  return (rt_payload_t *)((uintptr_t)e & ~(uintptr_t)(RT_PAYLOAD_BYTES - 1));
}

static inline void tm_unlink(rt_tm_entry_t *e) {
  *e->pprev = e->next;
  if (e->next) e->next->pprev = e->pprev;
}

void tm_collect(struct pto_orch *o, const pto_tensor_t *v, bool replace, uint64_t *n) {
  rt_runtime_t *rt = o->rt;
  rt_tm_entry_t *e = o->buckets[tm_hash(v->base, o->bucket_bits)];

  while (e) {
    rt_tm_entry_t *next = e->next;
    rt_payload_t *p = tm_payload_of(e);
    uint32_t i = (uint32_t)(e - p->tm);
    rt_task_t *t = p->task;
    rt_ring_t *ring = &rt->rings[t->ring];
    rt_slot_orch_t *so = &ring->orch[t->id & ring->mask];
    const pto_tensor_t *pv = &p->args.tensor[i];

    if (t->id < atomic_load_explicit(&ring->last_alive, memory_order_acquire)) {
      tm_unlink(e); /* retired: its writes are complete and visible */
      so->tm_linked &= (uint8_t) ~(1u << i);
    } else if (pv->base == v->base) {
      tm_overlap_t ov = tm_overlap(pv, v);
      if (ov != TM_DISJOINT) {
        if (so->seen != o->epoch) {
          so->seen = o->epoch;
          if (*n < o->producers_cap) o->producers[*n] = t;
          (*n)++;
        }
        if (replace && ov == TM_COVERS) {
          tm_unlink(e);
          so->tm_linked &= (uint8_t) ~(1u << i);
        }
      }
    }
    e = next;
  }
}

void tm_insert(struct pto_orch *o, rt_payload_t *p, rt_slot_orch_t *so, uint32_t i) {
  rt_tm_entry_t **head = &o->buckets[tm_hash(p->args.tensor[i].base, o->bucket_bits)];
  rt_tm_entry_t *e = &p->tm[i];
  e->next = *head;
  e->pprev = head;
  if (*head) (*head)->pprev = &e->next;
  *head = e;
  so->tm_linked |= (uint8_t)(1u << i);
}

void tm_forget(rt_payload_t *p, rt_slot_orch_t *so) {
  uint32_t linked = so->tm_linked;
  for (uint32_t i = 0; linked; i++, linked >>= 1)
    if (linked & 1u) tm_unlink(&p->tm[i]);
  so->tm_linked = 0;
}
