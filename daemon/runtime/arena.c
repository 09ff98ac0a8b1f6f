/* SPDX-License-Identifier: Apache-2.0 */
/* arena.c — arena layout, build and the single-slot cache. */
#include "arena.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "queue.h"

#define ARENA_MIN_BUCKET_BITS 10u
#define ARENA_MAX_BUCKET_BITS 20u

typedef struct arena_layout {
  uint64_t payloads[PTO_RING_COUNT], tasks[PTO_RING_COUNT], orch[PTO_RING_COUNT],
      edges[PTO_RING_COUNT];
  uint64_t ready, done, qcap;
  uint64_t scope_tasks;
  uint64_t producers, producers_cap;
  uint64_t buckets;
  uint32_t bucket_bits;
  uint64_t meta_bytes;
  uint64_t heap_off[PTO_RING_COUNT];
  uint64_t heap_bytes;
} arena_layout_t;

/* Place `count` items of `size` bytes at the next `align` boundary. */
static bool arena_place(uint64_t *pos, uint64_t count, uint64_t size, uint64_t align,
                        uint64_t *ret_off) {
  uint64_t off, bytes;
  if (*pos > UINT64_MAX - align) return false;
  off = (*pos + align - 1) / align * align;
  if (__builtin_mul_overflow(count, size, &bytes) || off > UINT64_MAX - bytes) return false;
  *ret_off = off;
  *pos = off + bytes;
  return true;
}

static bool arena_valid_sizing(const pto_sizing_resolved_t *s) {
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++)
      if (!pto_sizing_value_valid((pto_ring_field_t)f, s->value[f][r])) return false;
  return true;
}

static bool arena_layout(const pto_sizing_resolved_t *s, arena_layout_t *l) {
  uint64_t pos = 0, windows = 0, max_dep = 0, hpos = 0;
  bool ok = true;

  memset(l, 0, sizeof *l);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    uint64_t w = s->value[PTO_FIELD_TASK_WINDOW][r], dep = s->value[PTO_FIELD_DEP_POOL][r];
    uint64_t heap = s->value[PTO_FIELD_HEAP][r];
    windows += w; /* each <= 2^30 */
    if (dep > max_dep) max_dep = dep;
    ok = ok && arena_place(&pos, w, sizeof(rt_payload_t), RT_PAYLOAD_BYTES, &l->payloads[r]);
    ok = ok && arena_place(&pos, w, sizeof(rt_task_t), RT_CACHELINE, &l->tasks[r]);
    ok = ok && arena_place(&pos, w, sizeof(rt_slot_orch_t), RT_CACHELINE, &l->orch[r]);
    ok = ok && arena_place(&pos, dep, sizeof(rt_edge_t), RT_CACHELINE, &l->edges[r]);
    l->heap_off[r] = hpos;
    if (hpos > UINT64_MAX - heap) return false;
    hpos += heap;
  }
  l->heap_bytes = hpos;
  /* Every task in flight fits each queue at once; the scope list holds at
   * most the live tasks of every ring. */
  l->qcap = 1;
  while (l->qcap < windows) l->qcap <<= 1;
  l->bucket_bits = ARENA_MIN_BUCKET_BITS;
  while (l->bucket_bits < ARENA_MAX_BUCKET_BITS && (UINT64_C(1) << l->bucket_bits) < windows)
    l->bucket_bits++;
  l->producers_cap = max_dep;
  ok = ok && arena_place(&pos, l->qcap, sizeof(rt_cell_t), RT_CACHELINE, &l->ready);
  ok = ok && arena_place(&pos, l->qcap, sizeof(rt_cell_t), RT_CACHELINE, &l->done);
  ok = ok && arena_place(&pos, windows, sizeof(rt_task_t *), RT_CACHELINE, &l->scope_tasks);
  ok = ok && arena_place(&pos, max_dep, sizeof(rt_task_t *), RT_CACHELINE, &l->producers);
  ok = ok && arena_place(&pos, UINT64_C(1) << l->bucket_bits, sizeof(rt_tm_entry_t *),
                         RT_CACHELINE, &l->buckets);
  l->meta_bytes = pos;
  return ok;
}

static uint64_t arena_add_sat(uint64_t a, uint64_t b) {
  return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

uint64_t arena_bytes(dev_device_t *dev, const pto_sizing_resolved_t *sizing) {
  arena_layout_t l;
  if (!arena_valid_sizing(sizing) || !arena_layout(sizing, &l)) return UINT64_MAX;
  return arena_add_sat(dev_mem_round(dev, l.meta_bytes), dev_mem_round(dev, l.heap_bytes));
}

static uint64_t arena_region_bytes(dev_device_t *dev, const rt_region_t *g) {
  return g->base ? dev_mem_round(dev, g->bytes) : 0;
}

static void arena_region_release(dev_device_t *dev, rt_region_t *g) {
  if (g->base) dev_mem_release(dev, g->base, g->bytes);
  g->base = NULL;
  g->bytes = 0;
}

void arena_release(rt_runtime_t *rt) {
  rt->arena.valid = false;
  arena_region_release(rt->dev, &rt->arena.meta);
  arena_region_release(rt->dev, &rt->arena.heap);
}

/* Wire and initialise every structure over the committed regions. */
static void arena_init(rt_runtime_t *rt, const arena_layout_t *l, const pto_sizing_resolved_t *s) {
  char *m = rt->arena.meta.base, *h = rt->arena.heap.base;
  pto_orch_t *o = &rt->orch;

  for (uint32_t r = 0; r < PTO_RING_COUNT; r++) {
    rt_ring_t *ring = &rt->rings[r];
    ring->index = r;
    ring->window = s->value[PTO_FIELD_TASK_WINDOW][r];
    ring->mask = ring->window - 1;
    ring->heap_size = s->value[PTO_FIELD_HEAP][r];
    ring->dep_size = s->value[PTO_FIELD_DEP_POOL][r];
    ring->heap = h + l->heap_off[r];
    ring->payloads = (rt_payload_t *)(void *)(m + l->payloads[r]);
    ring->tasks = (rt_task_t *)(void *)(m + l->tasks[r]);
    ring->orch = (rt_slot_orch_t *)(void *)(m + l->orch[r]);
    ring->edges = (rt_edge_t *)(void *)(m + l->edges[r]);
    /* Ids start at 1: a zeroed slot's consumed_id (0) never matches the id
     * its first task gets. */
    memset(ring->tasks, 0, ring->window * sizeof(rt_task_t));
    memset(ring->orch, 0, ring->window * sizeof(rt_slot_orch_t));
    ring->next_id = 1;
    ring->heap_head = 0;
    ring->heap_requests = 0;
    ring->dep_head = 0;
    ring->run_first_id = 1;
    ring->peak_tasks = ring->peak_heap = ring->peak_deps = 0;
    atomic_store(&ring->submitted, 1);
    atomic_store(&ring->last_alive, 1);
    atomic_store(&ring->heap_tail, 0);
    atomic_store(&ring->dep_tail, 0);
    atomic_store(&ring->adv_lock, 0);
  }
  rt_queue_init(&rt->ready, (rt_cell_t *)(void *)(m + l->ready), l->qcap);
  rt_queue_init(&rt->done, (rt_cell_t *)(void *)(m + l->done), l->qcap);
  o->scope_tasks = (rt_task_t **)(void *)(m + l->scope_tasks);
  o->nscope_tasks = 0;
  o->producers = (rt_task_t **)(void *)(m + l->producers);
  o->producers_cap = l->producers_cap;
  o->buckets = (rt_tm_entry_t **)(void *)(m + l->buckets);
  o->bucket_bits = l->bucket_bits;
  memset(o->buckets, 0, (sizeof *o->buckets) << l->bucket_bits);
  o->epoch = 0;
}

static int arena_oom(pto_error_t *err, uint64_t need, uint64_t avail) {
  pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                "The arena for this sizing needs %" PRIu64 " bytes of device memory but only "
                "%" PRIu64 " bytes are available (the device memory limit minus resident "
                "buffers); lower ring_heap or ring_task_window, free buffers, or raise the memory "
                "limit.",
                need, avail);
  if (err) {
    err->requested = need;
    err->capacity = avail;
    snprintf(err->hint, sizeof err->hint,
             "lower the sizing (ring_heap, ring_task_window) to need at most %" PRIu64 " bytes",
             avail);
  }
  return -PTO_E_OUT_OF_MEMORY;
}

/* Make `g` hold at least `bytes` (exactly `bytes` when it must change). */
static int arena_region_fit(rt_runtime_t *rt, rt_region_t *g, uint64_t bytes, bool keep) {
  void *p;
  int rc;
  if (keep) return 0;
  arena_region_release(rt->dev, g);
  rc = dev_mem_commit(rt->dev, bytes, &p);
  if (rc < 0) return rc;
  g->base = p;
  g->bytes = bytes;
  return 0;
}

static void arena_result(rt_arena_result_t *ret, bool hit, uint64_t build_us, uint64_t key,
                         uint64_t bytes) {
  if (!ret) return;
  ret->hit = hit;
  ret->build_us = build_us;
  ret->key = key;
  ret->bytes = bytes;
}

/* Whether the slot holds the arena of `sizing`; a hit counts when it is a
 * lookup (not a prewarm).  A miss is counted by arena_count_miss once the
 * sizing is known to be valid. */
static bool arena_cached(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing, bool lookup) {
  const rt_arena_t *a = &rt->arena;
  bool hit;
  pthread_mutex_lock(&rt->stats_lock);
  hit = a->valid && pto_sizing_equal(&a->sizing, sizing);
  if (hit && lookup) rt->cache.hits++;
  pthread_mutex_unlock(&rt->stats_lock);
  return hit;
}

static void arena_count_miss(rt_runtime_t *rt, bool lookup) {
  if (!lookup) return;
  pthread_mutex_lock(&rt->stats_lock);
  rt->cache.misses++;
  pthread_mutex_unlock(&rt->stats_lock);
}

/* Grow-only: keep a region that is large enough, unless keeping it would
 * hold more than the memory allowed (the larger meta region goes first). */
static void arena_choose_kept(rt_runtime_t *rt, uint64_t need_meta, uint64_t need_heap,
                              uint64_t bytes_available, bool *ret_keep_meta,
                              bool *ret_keep_heap) {
  uint64_t have_meta = arena_region_bytes(rt->dev, &rt->arena.meta);
  uint64_t have_heap = arena_region_bytes(rt->dev, &rt->arena.heap);
  bool keep_meta = have_meta >= need_meta, keep_heap = have_heap >= need_heap;
  if ((keep_meta ? have_meta : need_meta) + (keep_heap ? have_heap : need_heap) >
      bytes_available) {
    if (keep_meta && have_meta > need_meta) keep_meta = false;
    if ((keep_meta ? have_meta : need_meta) + (keep_heap ? have_heap : need_heap) >
        bytes_available)
      keep_heap = false;
  }
  *ret_keep_meta = keep_meta;
  *ret_keep_heap = keep_heap;
}

/* The slot's counters after a build of build_us (or, with ok false, after
 * a build that failed and left the slot empty). */
static void arena_note_build(rt_runtime_t *rt, bool ok, uint64_t build_us) {
  pthread_mutex_lock(&rt->stats_lock);
  rt->cache.valid = ok;
  if (!ok) {
    rt->cache.bytes = 0;
  } else {
    rt->cache.sizing = rt->arena.sizing;
    rt->cache.key = rt->arena.key;
    rt->cache.bytes = arena_region_bytes(rt->dev, &rt->arena.meta) +
                      arena_region_bytes(rt->dev, &rt->arena.heap);
    rt->cache.builds++;
    rt->cache.last_build_us = build_us;
    rt->cache.total_build_us += build_us;
  }
  pthread_mutex_unlock(&rt->stats_lock);
}

/* Build the arena of `sizing` (layout l) in the slot, reusing what it
 * can; the workers are kept off it meanwhile. */
static int arena_build(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing, uint64_t key,
                       const arena_layout_t *l, uint64_t need_meta, uint64_t need_heap,
                       uint64_t bytes_available, uint64_t *ret_build_us) {
  rt_arena_t *a = &rt->arena;
  uint64_t t0 = rt_now_ns();
  bool keep_meta, keep_heap;
  int rc;

  rt_gate_close(rt);
  a->valid = false;
  arena_choose_kept(rt, need_meta, need_heap, bytes_available, &keep_meta, &keep_heap);
  rc = arena_region_fit(rt, &a->meta, l->meta_bytes, keep_meta);
  if (rc == 0) rc = arena_region_fit(rt, &a->heap, l->heap_bytes, keep_heap);
  if (rc < 0) {
    arena_release(rt);
    arena_note_build(rt, false, 0);
    return rc;
  }
  arena_init(rt, l, sizing);
  memset(&a->sizing, 0, sizeof a->sizing);
  memcpy(a->sizing.value, sizing->value, sizeof a->sizing.value);
  a->key = key;
  a->valid = true;
  *ret_build_us = (rt_now_ns() - t0) / 1000u;
  arena_note_build(rt, true, *ret_build_us);
  rt_gate_open(rt);
  return 0;
}

int arena_ensure(rt_runtime_t *rt, const pto_sizing_resolved_t *sizing, uint64_t bytes_available,
                 bool lookup, rt_arena_result_t *ret, pto_error_t *err) {
  rt_arena_t *a = &rt->arena;
  uint64_t key, need_meta, need_heap, need, build_us = 0;
  arena_layout_t l;
  int rc;

  /* The slot's sizing was checked and keyed when its arena was built: the
   * same sizing again (every dispatch of one serving loop) skips both. */
  if (arena_cached(rt, sizing, lookup)) {
    arena_result(ret, true, 0, a->key,
                 arena_region_bytes(rt->dev, &a->meta) + arena_region_bytes(rt->dev, &a->heap));
    return 0;
  }
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      rc = pto_sizing_check_value((pto_ring_field_t)f, sizing->value[f][r], err);
      if (rc) return rc;
    }
  arena_count_miss(rt, lookup);
  key = pto_sizing_key(sizing);

  if (!arena_layout(sizing, &l)) return arena_oom(err, UINT64_MAX, bytes_available);
  need_meta = dev_mem_round(rt->dev, l.meta_bytes);
  need_heap = dev_mem_round(rt->dev, l.heap_bytes);
  need = arena_add_sat(need_meta, need_heap);
  if (need > bytes_available) return arena_oom(err, need, bytes_available);
  if (arena_build(rt, sizing, key, &l, need_meta, need_heap, bytes_available, &build_us) < 0)
    return arena_oom(err, need, bytes_available);
  arena_result(ret, false, build_us, key, rt->cache.bytes);
  return 0;
}
