/* SPDX-License-Identifier: Apache-2.0 */
/* scheduler.c — the worker threads and the completion / retirement path. */
#include "scheduler.h"

#include <stdio.h>

#include "park.h"
#include "queue.h"
#include "trace_rec.h"

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
/* What a completion does with the consumers it makes ready. */
typedef enum {
  SC_QUEUE,     /* queue them all and wake a core for them */
  SC_KEEP,      /* hand the first back (*ret_next) for the caller to run next, queue the
                   rest: a chain stays on one thread and off the queue */
  SC_QUEUE_ONE, /* queue them all, but one alone wakes nobody (the caller takes it later) */
} sc_mode_t;

static void sched_complete(rt_runtime_t *rt, rt_task_t *t, sc_mode_t mode, rt_task_t **ret_next) {
  rt_ring_t *ring = &rt->rings[t->ring];
  rt_edge_t *e = atomic_exchange_explicit(&t->fanout, RT_FANOUT_CLOSED, memory_order_acq_rel);
  uint32_t woke = 0;
  int32_t waiting = 0;

  /* Every consumer in the list pins t until it completes (orch_submit
   * leaves that to here): count them before any of them can run. */
  for (rt_edge_t *c = e; c; c = c->next) waiting++;
  if (waiting) atomic_fetch_add_explicit(&t->pins, waiting, memory_order_relaxed);

  while (e) {
    /* The edge lives in the consumer's pool and is recycled once the
     * consumer retires, which the decrement below may allow: read it first. */
    rt_edge_t *next = e->next;
    rt_task_t *c = e->consumer;
    if (atomic_fetch_sub_explicit(&c->fanin, 1, memory_order_acq_rel) == 1) {
      rt_trace_t *tr = trace_of(rt);
      if (tr) trace_ready(tr, rt, c, rt_now_ns());
      if (mode == SC_KEEP && !*ret_next) {
        *ret_next = c;
      } else {
        rt_queue_push(&rt->ready, c);
        woke++;
      }
    }
    e = next;
  }
  if (woke > (mode == SC_QUEUE_ONE ? 1u : 0u)) rt_park_notify(&rt->core_park);

  if (t->ndeps) {
    uint64_t off = (t->dep_end - t->ndeps) % ring->dep_size;
    for (uint32_t k = 0; k < t->ndeps; k++) {
      sched_release(rt, ring->edges[off].producer);
      if (++off == ring->dep_size) off = 0;
    }
  }
  sched_release(rt, t);
}

/* A kernel of RT_LONG_KERNEL_NS or more (scheduler.h) is worth a wake-up:
 * queued work then goes to another core, and completions to a scheduler. */

/* Set slot to kernel when it ran under `fast_ns`, clear it when it ran
 * `slow_ns` or more; in between, leave it: a preempted run of a tiny
 * kernel (a few microseconds on a virtual machine) must not send a chain
 * of them to another thread for good. */
static void note_kernel(_Atomic(pto_kernel_fn) *slot, pto_kernel_fn kernel, uint64_t ns,
                        uint64_t fast_ns, uint64_t slow_ns) {
  pto_kernel_fn known = atomic_load_explicit(slot, memory_order_relaxed);
  /* Written only when it changes: every submit reads this line. */
  if (ns < fast_ns) {
    if (known != kernel) atomic_store_explicit(slot, kernel, memory_order_relaxed);
  } else if (ns >= slow_ns && known == kernel) {
    atomic_store_explicit(slot, NULL, memory_order_relaxed);
  }
}

void sched_note_kernel(rt_runtime_t *rt, pto_kernel_fn kernel, uint64_t ns) {
  note_kernel(&rt->short_kernel, kernel, ns, RT_LONG_KERNEL_NS, 4 * RT_LONG_KERNEL_NS);
  note_kernel(&rt->tiny_kernel, kernel, ns, RT_TINY_KERNEL_NS, RT_LONG_KERNEL_NS);
}

/* One more task done by w (its kernel run or skipped, or a completion
 * taken over); w's thread alone writes it. */
static inline void worker_count(rt_worker_t *w) {
  atomic_store_explicit(&w->completed,
                        atomic_load_explicit(&w->completed, memory_order_relaxed) + 1,
                        memory_order_relaxed);
}

/* Run t's kernel on w's thread, record it on w's lane, note its length
 * (w->last_kernel_ns, sched_note_kernel) and count it as w's; once the run
 * has failed the kernel is skipped, but still counted. */
static void worker_run_kernel(rt_worker_t *w, rt_task_t *t) {
  rt_runtime_t *rt = w->rt;
  if (!rt_failed(rt)) {
    rt_ring_t *ring = &rt->rings[t->ring];
    uint64_t t0 = rt_now_ns();
    rt_trace_t *tr;
    t->kernel(&ring->payloads[t->id & ring->mask].args);
    w->last_kernel_ns = rt_now_ns() - t0;
    tr = trace_of(rt);
    if (tr) trace_ran(tr, rt, t, w->index, t0, t0 + w->last_kernel_ns);
    sched_note_kernel(rt, t->kernel, w->last_kernel_ns);
  }
  worker_count(w);
}

/* A core's kernel: one guessed long (from this core's previous one) makes
 * the core unavailable while it runs, so that queued work wakes another
 * core rather than wait behind this one. */
static void core_run_kernel(rt_worker_t *w, rt_task_t *t) {
  rt_runtime_t *rt = w->rt;
  bool long_kernel = !rt_failed(rt) && w->last_kernel_ns >= RT_LONG_KERNEL_NS;
  if (long_kernel) {
    rt_park_avail(&rt->core_park, -1);
    if (rt_queue_nonempty(&rt->ready)) rt_park_notify(&rt->core_park);
  }
  worker_run_kernel(w, t);
  if (long_kernel) rt_park_avail(&rt->core_park, +1);
}

static void worker_run_task(rt_worker_t *w, rt_task_t *t) {
  rt_runtime_t *rt = w->rt;
  if (!w->core) {
    rt_trace_t *tr = trace_of(rt);
    /* Before the completion: it may end the run, and the record with it. */
    if (tr) trace_handoff(tr, rt, t, trace_sched_lane(rt, w->index), rt_now_ns());
    sched_complete(rt, t, SC_QUEUE, NULL);
    worker_count(w);
    return;
  }
  while (t) {
    rt_task_t *next = NULL;
    core_run_kernel(w, t);
    /* With long kernels waiting, leave the bookkeeping to a scheduler and
     * go back to them; otherwise doing it here is cheaper than any
     * hand-off, and a consumer it makes ready runs here next. */
    if (w->last_kernel_ns >= RT_LONG_KERNEL_NS && rt_queue_nonempty(&rt->ready)) {
      rt_queue_push(&rt->done, t);
      rt_park_notify(&rt->sched_park);
      return;
    }
    sched_complete(rt, t, SC_KEEP, &next);
    t = next;
  }
}

void sched_run_inline(rt_runtime_t *rt, rt_worker_t *h, rt_task_t *t) {
  worker_run_kernel(h, t);
  sched_complete(rt, t, SC_QUEUE_ONE, NULL);
}

bool sched_help(rt_runtime_t *rt, rt_worker_t *h, bool short_only) {
  rt_task_t *t = rt_queue_pop(&rt->ready);
  if (t) {
    if (short_only && t->kernel != atomic_load_explicit(&rt->short_kernel, memory_order_relaxed) &&
        !rt_failed(rt)) {
      sched_make_ready(rt, t);
      return false;
    }
    /* The orchestrator runs one task and goes back to submitting; rt_run's
     * caller, done orchestrating, follows a chain as far as it goes. */
    if (short_only) {
      sched_run_inline(rt, h, t);
      return true;
    }
    while (t) {
      rt_task_t *next = NULL;
      worker_run_kernel(h, t);
      sched_complete(rt, t, SC_KEEP, &next);
      t = next;
    }
    return true;
  }
  t = rt_queue_pop(&rt->done);
  if (t) {
    sched_complete(rt, t, short_only ? SC_QUEUE_ONE : SC_QUEUE, NULL);
    return true;
  }
  return false;
}

static bool worker_takes_part(rt_worker_t *w) {
  return w->core || w->index < atomic_load_explicit(&w->rt->active_sched, memory_order_relaxed);
}

void *sched_worker_main(void *arg) {
  rt_worker_t *w = arg;
  rt_runtime_t *rt = w->rt;
  rt_queue_t *q = w->core ? &rt->ready : &rt->done;
  rt_park_t *park = w->core ? &rt->core_park : &rt->sched_park;
  bool spinning = false, watchdog = !w->core && w->index == 0;
  uint64_t spin_start = 0;
  uint32_t iter = 0;

  {
    char name[16]; /* what top -H and perf show */
    snprintf(name, sizeof name, "ptod-%s%u", w->core ? "core" : "sched", w->index);
    pthread_setname_np(pthread_self(), name);
  }
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
    /* Scheduler 0 also watches for runs that make no progress, in case
     * rt_run's caller is stuck in a kernel (rt_watchdog). */
    rt_park_wait(sleep_on, key, watchdog ? atomic_load(&rt->wd_slice_ns) : 0);
    atomic_store(&w->active, 1);
    if (watchdog) rt_watchdog(rt);
    rt_park_avail(park, +1);
  }
  rt_park_avail(park, -1);
  atomic_store(&w->active, 0);
  return NULL;
}
