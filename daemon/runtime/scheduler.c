/* scheduler.c — the worker threads and the completion / retirement path. */
#include "scheduler.h"

#include "park.h"
#include "queue.h"

void sched_make_ready(rt_runtime_t *rt, rt_task_t *t) {
  rt_queue_push(&rt->ready, t);
  rt_park_notify(&rt->core_park);
}

/* Walk the ring's head over every consecutive CONSUMED task.  Under a
 * try-lock: a thread that fails to take it leaves the walk to the holder,
 * which looks at the new head once more after letting go. */
static void sched_advance(rt_runtime_t *rt, rt_ring_t *ring) {
  for (;;) {
    uint32_t unlocked = 0;
    uint64_t la, start, heap_end = 0, dep_end = 0;
    bool heap = false;

    if (!atomic_compare_exchange_strong(&ring->adv_lock, &unlocked, 1)) return;
    la = start = atomic_load_explicit(&ring->last_alive, memory_order_relaxed);
    for (;;) {
      rt_task_t *h = &ring->tasks[la & ring->mask];
      if (atomic_load_explicit(&h->consumed_id, memory_order_acquire) != la) break;
      if (h->has_heap) {
        heap = true;
        heap_end = h->heap_end;
      }
      dep_end = h->dep_end;
      la++;
    }
    if (la != start) {
      if (heap) atomic_store_explicit(&ring->heap_tail, heap_end, memory_order_release);
      atomic_store_explicit(&ring->dep_tail, dep_end, memory_order_release);
      atomic_store(&ring->last_alive, la);
    }
    atomic_store(&ring->adv_lock, 0);
    if (la != start) {
      rt_park_wake_all(&rt->retire_park);
      rt_check_done(rt);
    }
    if (atomic_load(&ring->tasks[la & ring->mask].consumed_id) != la) return;
  }
}

void sched_release(rt_runtime_t *rt, rt_task_t *t) {
  if (atomic_fetch_sub_explicit(&t->pins, 1, memory_order_acq_rel) != 1) return;
  /* CONSUMED.  Once consumed_id is stored the slot may be reused at any
   * moment, so read what the walk needs first. */
  uint64_t id = t->id;
  rt_ring_t *ring = &rt->rings[t->ring];
  atomic_store(&t->consumed_id, id);
  sched_advance(rt, ring);
}

/* A core finished (or skipped) t's kernel. */
static void sched_complete(rt_runtime_t *rt, rt_task_t *t) {
  rt_ring_t *ring = &rt->rings[t->ring];
  rt_edge_t *e = atomic_exchange_explicit(&t->fanout, RT_FANOUT_CLOSED, memory_order_acq_rel);
  bool woke = false;

  while (e) {
    /* The edge lives in the consumer's pool and is recycled once the
     * consumer retires, which the decrement below may allow: read it first. */
    rt_edge_t *next = e->next;
    rt_task_t *c = e->consumer;
    if (atomic_fetch_sub_explicit(&c->fanin, 1, memory_order_acq_rel) == 1) {
      rt_queue_push(&rt->ready, c);
      woke = true;
    }
    e = next;
  }
  if (woke) rt_park_notify(&rt->core_park);

  if (t->ndeps) {
    uint64_t off = (t->dep_end - t->ndeps) % ring->dep_size;
    for (uint32_t k = 0; k < t->ndeps; k++) {
      sched_release(rt, ring->edges[off].producer);
      if (++off == ring->dep_size) off = 0;
    }
  }
  sched_release(rt, t);
}

/* A kernel longer than this is worth a wake-up (a few system calls and a
 * cache-cold thread, 10-50 us on these virtual machines): queued work then
 * goes to another core, and completions to a scheduler. */
#define RT_LONG_KERNEL_NS 20000u

static void worker_run_task(rt_worker_t *w, rt_task_t *t) {
  rt_runtime_t *rt = w->rt;
  if (!w->core) {
    sched_complete(rt, t);
    atomic_store_explicit(&w->completed,
                          atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                          memory_order_relaxed);
    return;
  }
  if (!rt_failed(rt)) {
    rt_ring_t *ring = &rt->rings[t->ring];
    /* Guess this kernel's length from this core's previous one. */
    bool long_kernel = w->last_kernel_ns >= RT_LONG_KERNEL_NS;
    uint64_t t0;
    if (long_kernel) {
      /* Busy for long: not available, so queued work wakes another core
       * rather than wait behind this one. */
      rt_park_avail(&rt->core_park, -1);
      if (rt_queue_nonempty(&rt->ready)) rt_park_notify(&rt->core_park);
    }
    t0 = rt_now_ns();
    t->kernel(&ring->payloads[t->id & ring->mask].args);
    w->last_kernel_ns = rt_now_ns() - t0;
    if (long_kernel) rt_park_avail(&rt->core_park, +1);
  }
  atomic_store_explicit(&w->completed,
                        atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                        memory_order_relaxed);
  /* With long kernels waiting, leave the bookkeeping to a scheduler and go
   * back to them; otherwise doing it here is cheaper than any hand-off. */
  if (w->last_kernel_ns >= RT_LONG_KERNEL_NS && rt_queue_nonempty(&rt->ready)) {
    rt_queue_push(&rt->done, t);
    rt_park_notify(&rt->sched_park);
  } else {
    sched_complete(rt, t);
  }
}

static bool worker_takes_part(rt_worker_t *w) {
  return w->core || w->index < atomic_load_explicit(&w->rt->active_sched, memory_order_relaxed);
}

void *sched_worker_main(void *arg) {
  rt_worker_t *w = arg;
  rt_runtime_t *rt = w->rt;
  rt_queue_t *q = w->core ? &rt->ready : &rt->done;
  rt_park_t *park = w->core ? &rt->core_park : &rt->sched_park;
  bool spinning = false;
  uint64_t spin_start = 0;
  uint32_t iter = 0;

  atomic_store(&w->active, 1);
  rt_park_avail(park, +1);
  while (!atomic_load_explicit(&rt->stop, memory_order_relaxed)) {
    rt_park_t *sleep_on = park;
    uint32_t key;
    bool gate = atomic_load(&rt->gate);

    if (gate && worker_takes_part(w)) {
      rt_task_t *t = rt_queue_pop(q);
      if (t) {
        if (spinning) {
          rt_park_end_spin(park);
          spinning = false;
        }
        worker_run_task(w, t);
        continue;
      }
      /* One spinner per park; the others sleep at once. */
      if (!spinning && rt_park_try_spin(park)) {
        spinning = true;
        spin_start = rt_now_ns();
        iter = 0;
      }
      if (spinning) {
        iter++;
        if ((iter & 63) != 0 || rt_now_ns() - spin_start < rt->spin_ns) {
          rt_spin_pause(iter);
          continue;
        }
      }
    } else if (gate) {
      /* A scheduler not taking part in this run sleeps where rt_run calls
       * it back. */
      sleep_on = &rt->idle_park;
    }

    key = rt_park_prepare(sleep_on);
    if (spinning) {
      rt_park_end_spin(park);
      spinning = false;
    }
    rt_park_avail(park, -1);
    /* Not taking this park's work: pass on what is queued. */
    if (sleep_on != park && rt_queue_nonempty(q)) rt_park_notify(park);
    if (atomic_load(&rt->stop) ||
        (sleep_on == park && atomic_load(&rt->gate) && worker_takes_part(w) &&
         rt_queue_nonempty(q)) ||
        (sleep_on != park && worker_takes_part(w))) {
      rt_park_cancel(sleep_on);
      rt_park_avail(park, +1);
      continue;
    }
    atomic_store(&w->active, 0);
    rt_park_wait(sleep_on, key, 0);
    atomic_store(&w->active, 1);
    rt_park_avail(park, +1);
  }
  rt_park_avail(park, -1);
  atomic_store(&w->active, 0);
  return NULL;
}
