/* SPDX-License-Identifier: Apache-2.0 */
/* queue.h — a bounded MPMC queue of tasks (Vyukov's array queue).
 *
 * Each cell carries a sequence number: a producer may fill cell i when its
 * seq equals the enqueue position, a consumer may take it when seq equals
 * position + 1.  No locks, one CAS per operation.  The arena sizes every
 * queue to hold every task that can be in flight at once, so a push never
 * finds it full.  The cells live in the arena; rt_queue_init (re)numbers
 * them.
 */
#ifndef PTOD_RT_QUEUE_H
#define PTOD_RT_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_internal.h"

/* `cap` is a power of two; cells has cap entries. */
static inline void rt_queue_init(rt_queue_t *q, rt_cell_t *cells, uint64_t cap) {
  q->cells = cells;
  q->mask = cap - 1;
  for (uint64_t i = 0; i < cap; i++) {
    atomic_init(&cells[i].seq, i);
    cells[i].task = NULL;
  }
  atomic_init(&q->head, 0);
  atomic_init(&q->tail, 0);
}

/* Returns false only when full (which the sizing rules out). */
static inline bool rt_queue_push(rt_queue_t *q, rt_task_t *t) {
  uint64_t pos = atomic_load_explicit(&q->head, memory_order_relaxed);
  rt_cell_t *c;
  for (;;) {
    c = &q->cells[pos & q->mask];
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - pos);
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&q->head, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed))
        break;
    } else if (dif < 0) {
      return false;
    } else {
      pos = atomic_load_explicit(&q->head, memory_order_relaxed);
    }
  }
  c->task = t;
  atomic_store_explicit(&c->seq, pos + 1, memory_order_release);
  return true;
}

/* NULL when empty. */
static inline rt_task_t *rt_queue_pop(rt_queue_t *q) {
  uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
  rt_cell_t *c;
  rt_task_t *t;
  for (;;) {
    c = &q->cells[pos & q->mask];
    uint64_t seq = atomic_load_explicit(&c->seq, memory_order_acquire);
    int64_t dif = (int64_t)(seq - (pos + 1));
    if (dif == 0) {
      if (atomic_compare_exchange_weak_explicit(&q->tail, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed))
        break;
    } else if (dif < 0) {
      return NULL;
    } else {
      pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
    }
  }
  t = c->task;
  atomic_store_explicit(&c->seq, pos + q->mask + 1, memory_order_release);
  return t;
}

/* Whether a pop would find something now (a hint: it may change at once). */
static inline bool rt_queue_nonempty(rt_queue_t *q) {
  uint64_t pos = atomic_load_explicit(&q->tail, memory_order_relaxed);
  uint64_t seq = atomic_load_explicit(&q->cells[pos & q->mask].seq, memory_order_acquire);
  return seq == pos + 1;
}

/* About how many tasks are queued (a hint). */
static inline uint64_t rt_queue_depth(rt_queue_t *q) {
  uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
  uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
  return head > tail ? head - tail : 0;
}

#endif
