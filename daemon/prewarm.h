/* SPDX-License-Identifier: Apache-2.0 */
/* prewarm.h — the record of the prewarmed sizing: which sizing start-up (or
 * the last reload or `prewarm` request) built, and whether the first
 * dispatch after it found that arena.  Written on the device thread (and at
 * start-up, before any job), read on the loop: behind its own lock, which
 * the device thread, the only writer, need not take to read. */
#ifndef PTOD_PREWARM_H
#define PTOD_PREWARM_H

#include <pthread.h>
#include <stdbool.h>

#include <pto/sizing.h>

#include "methods.h"
#include "runtime.h"

typedef struct prewarm_record {
  pthread_mutex_t lock;
  pto_sizing_resolved_t sizing;
  uint64_t key;
  int first_dispatch_hit; /* -1 until a dispatch reaches the arena, then 0 or 1 */
} prewarm_record_t;

void prewarm_record_init(prewarm_record_t *rec);
void prewarm_record_destroy(prewarm_record_t *rec);

/* `sizing` was just built as the prewarmed arena. */
void prewarm_record_set(prewarm_record_t *rec, const pto_sizing_resolved_t *sizing);

/* A dispatch reached the arena (hit or not); only the first one counts.
 * Returns true when this was that first one. */
bool prewarm_record_dispatch(prewarm_record_t *rec, bool hit);

/* -1 until a dispatch reached the arena after the prewarm, then whether it
 * hit (1) or not (0). */
int prewarm_record_first_hit(prewarm_record_t *rec);

/* The prewarmed sizing as it is now. */
void prewarm_record_sizing(prewarm_record_t *rec, pto_sizing_resolved_t *ret);

/* The `arena` map of status and prewarm: the runtime's single slot and
 * this record.  Any thread. */
void prewarm_arena_snapshot(prewarm_record_t *rec, rt_runtime_t *rt, proto_arena_t *ret);

#endif
