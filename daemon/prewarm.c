/* SPDX-License-Identifier: Apache-2.0 */
#include "prewarm.h"

#include <string.h>

void prewarm_record_init(prewarm_record_t *rec) {
  memset(rec, 0, sizeof(*rec));
  pthread_mutex_init(&rec->lock, NULL);
  rec->first_dispatch_hit = -1;
}

void prewarm_record_destroy(prewarm_record_t *rec) { pthread_mutex_destroy(&rec->lock); }

void prewarm_record_set(prewarm_record_t *rec, const pto_sizing_resolved_t *sizing) {
  pthread_mutex_lock(&rec->lock);
  rec->sizing = *sizing;
  rec->key = pto_sizing_key(sizing);
  rec->first_dispatch_hit = -1;
  pthread_mutex_unlock(&rec->lock);
}

bool prewarm_record_dispatch(prewarm_record_t *rec, bool hit) {
  bool first;
  /* Every write is the device thread's (or start-up's, before any job),
   * so it reads without the lock: once decided, a dispatch takes none. */
  if (rec->first_dispatch_hit >= 0) return false;
  pthread_mutex_lock(&rec->lock);
  first = rec->first_dispatch_hit < 0;
  if (first) rec->first_dispatch_hit = hit ? 1 : 0;
  pthread_mutex_unlock(&rec->lock);
  return first;
}

int prewarm_record_first_hit(prewarm_record_t *rec) {
  int hit;
  pthread_mutex_lock(&rec->lock);
  hit = rec->first_dispatch_hit;
  pthread_mutex_unlock(&rec->lock);
  return hit;
}

void prewarm_record_sizing(prewarm_record_t *rec, pto_sizing_resolved_t *ret) {
  pthread_mutex_lock(&rec->lock);
  *ret = rec->sizing;
  pthread_mutex_unlock(&rec->lock);
}

void prewarm_arena_snapshot(prewarm_record_t *rec, rt_runtime_t *rt, proto_arena_t *ret) {
  rt_cache_stats_t cs;
  memset(ret, 0, sizeof(*ret));
  rt_cache_stats(rt, &cs);
  if (cs.valid) pto_sizing_from_resolved(&cs.sizing, &ret->sizing);
  ret->key = cs.valid ? cs.key : 0;
  ret->bytes = cs.bytes;
  ret->build_us = cs.last_build_us;
  ret->builds = cs.builds;
  ret->hits = cs.hits;
  ret->misses = cs.misses;
  pthread_mutex_lock(&rec->lock);
  pto_sizing_from_resolved(&rec->sizing, &ret->prewarm.sizing);
  ret->prewarm.key = rec->key;
  ret->prewarm.first_dispatch_hit =
      rec->first_dispatch_hit < 0 ? PROTO_UNSET : rec->first_dispatch_hit;
  pthread_mutex_unlock(&rec->lock);
}
