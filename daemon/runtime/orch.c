/* SPDX-License-Identifier: Apache-2.0 */
/* orch.c — submit, scopes and back-pressure; what submit refuses is in
 * orch_check.c. */
#include "orch.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "orch_check.h"
#include "park.h"
#include "queue.h"
#include "scheduler.h"
#include "tensormap.h"
#include "trace_rec.h"

static inline rt_slot_orch_t *orch_slot(rt_runtime_t *rt, const rt_task_t *t) {
  rt_ring_t *ring = &rt->rings[t->ring];
  return &ring->orch[t->id & ring->mask];
}

/* ---- reservation ------------------------------------------------------- */

/* What the ring lacks for a task slot, heap_bytes of heap and ndeps
 * dependency entries, as of the oldest live task `la` and the tails read
 * after it; 0 when all fit.  *ret_pad: heap bytes to skip so that the
 * allocation does not straddle the wrap; *ret_rebase: the heap is empty
 * and the allocation restarts at offset 0. */
static unsigned orch_shortage(const rt_ring_t *ring, uint64_t la, uint64_t tail, uint64_t dtail,
                              uint64_t heap_bytes, uint64_t ndeps, uint64_t *ret_pad,
                              bool *ret_rebase) {
  const uint64_t H = ring->heap_size;
  unsigned shortage = 0;
  *ret_pad = 0;
  *ret_rebase = false;
  if (ring->next_id - la >= ring->window - 1) shortage |= ORCH_SHORT_SLOT;
  if (heap_bytes) {
    uint64_t head = ring->heap_head, used = head - tail, off = head & (H - 1);
    if (off + heap_bytes > H) *ret_pad = H - off; /* never straddle the wrap */
    if (used + *ret_pad + heap_bytes > H) {
      if (used == 0)
        *ret_rebase = true; /* empty: restart at offset 0 whatever the padding */
      else
        shortage |= ORCH_SHORT_HEAP;
    }
  }
  if (ring->dep_head - dtail + ndeps > ring->dep_size) shortage |= ORCH_SHORT_DEPS;
  return shortage;
}

/* Take the room orch_shortage found: move the heap head (and the tail of
 * an empty heap), and note the ring's peak use for the run's stats and
 * record.  Returns the heap position of the allocation. */
static uint64_t orch_take_room(pto_orch_t *o, rt_ring_t *ring, uint64_t la, uint64_t tail,
                               uint64_t heap_bytes, uint64_t pad, bool rebase, uint64_t wait_from) {
  const uint64_t id = ring->next_id;
  uint64_t head = ring->heap_head + pad, live_heap, used_pos;
  /* Empty heap: no retirement can write the tail now (every task that
   * holds heap has retired), so the orchestrator may move it. */
  if (rebase) atomic_store_explicit(&ring->heap_tail, head, memory_order_release);
  ring->heap_head = head + heap_bytes;
  /* Requests live (no padding), as of la; the tail may be newer than
   * la, so the positions used bound it too (both over-estimate at most). */
  live_heap = (id > la ? ring->heap_requests - ring->orch[la & ring->mask].heap_before : 0) +
              heap_bytes;
  used_pos = ring->heap_head - (rebase ? head : tail);
  if (live_heap > used_pos) live_heap = used_pos;
  if (id - la + 1 > ring->peak_tasks) ring->peak_tasks = id - la + 1;
  if (live_heap > ring->peak_heap) ring->peak_heap = live_heap;
  if (o->trace) {
    o->rec_tasks = id - la + 1;
    o->rec_heap = live_heap;
    if (wait_from)
      trace_phase(o->trace, trace_orch_lane(o->rt), "wait for room", ring->index, wait_from,
                  rt_now_ns());
  }
  return head;
}

/* How long the orchestrator has been waiting for room, and how. */
typedef struct orch_wait {
  uint64_t last_la;     /* the ring's oldest live task when it last moved */
  uint64_t progress_at; /* when it last moved */
  uint64_t spin_start, wait_from;
  uint32_t iter;
  bool helping; /* still running short tasks itself while it waits */
} orch_wait_t;

/* Wait a little for the ring's oldest live task `la` to retire: help with
 * a short task, else spin, else sleep until retirement or the deadline.
 * Returns 0 to look again, or the error of a ring that made no progress
 * for deadlock_timeout. */
static int orch_wait_room(pto_orch_t *o, rt_ring_t *ring, uint64_t la, unsigned shortage,
                          uint64_t heap_bytes, uint64_t ndeps, orch_wait_t *w) {
  rt_runtime_t *rt = o->rt;
  uint64_t now = rt_now_ns();
  if (!w->wait_from) w->wait_from = now;
  if (la != w->last_la) {
    w->last_la = la;
    w->progress_at = now;
    w->spin_start = now;
    w->iter = 0;
    w->helping = true;
  } else if (now - w->progress_at >= rt->deadlock_timeout_ns) {
    return orch_report_short(o, ring, shortage, false, la, heap_bytes, ndeps,
                             (now - w->progress_at) / 1000000u);
  }
  /* What we wait for is tasks finishing: run a short one rather than
   * watch (on a 2-vCPU machine the cores may be waiting for this CPU
   * anyway).  Once one is handed back, leave the rest to the cores
   * until the ring moves. */
  if (w->helping) {
    if (sched_help(rt, &rt->helper, true)) return 0;
    w->helping = false;
  }
  if (o->owed_wake) {
    /* About to wait: a task queued without a wake needs a core now. */
    o->owed_wake = false;
    rt_park_notify(&rt->core_park);
  }
  if (now - w->spin_start < rt->spin_ns) {
    rt_spin_pause(++w->iter);
    return 0;
  }
  uint32_t key = rt_park_prepare(&rt->retire_park);
  if (atomic_load(&ring->last_alive) != la || rt_failed(rt)) {
    rt_park_cancel(&rt->retire_park);
    return 0;
  }
  rt_park_wait(&rt->retire_park, key, w->progress_at + rt->deadlock_timeout_ns - now);
  return 0;
}

/* Take a task slot, heap_bytes of heap and ndeps dependency entries on the
 * ring, all together, waiting for retirement while any is short.  Returns 0
 * with *ret_heap_pos (the heap position of the allocation), or the run's
 * error. */
static int orch_reserve(pto_orch_t *o, rt_ring_t *ring, uint64_t heap_bytes, uint64_t ndeps,
                        uint64_t *ret_heap_pos) {
  rt_runtime_t *rt = o->rt;
  orch_wait_t w = {.last_la = UINT64_MAX, .helping = true};

  for (;;) {
    uint64_t la = atomic_load_explicit(&ring->last_alive, memory_order_acquire);
    uint64_t tail = atomic_load_explicit(&ring->heap_tail, memory_order_acquire);
    uint64_t dtail = atomic_load_explicit(&ring->dep_tail, memory_order_acquire);
    uint64_t pad;
    bool rebase;
    unsigned shortage = orch_shortage(ring, la, tail, dtail, heap_bytes, ndeps, &pad, &rebase);
    int rc;

    if (!shortage) {
      *ret_heap_pos = orch_take_room(o, ring, la, tail, heap_bytes, pad, rebase, w.wait_from);
      return 0;
    }
    if (rt_failed(rt)) return -atomic_load(&rt->err_code);
    /* Nothing on a ring retires before its oldest task: if that task's
     * scope is still open, no amount of waiting helps. */
    if (ring->next_id > la && ring->orch[la & ring->mask].scope_open)
      return orch_report_short(o, ring, shortage, true, la, heap_bytes, ndeps, 0);
    rc = orch_wait_room(o, ring, la, shortage, heap_bytes, ndeps, &w);
    if (rc) return rc;
  }
}

/* ---- submit ------------------------------------------------------------ */

/* Fill the slot of the ring's next task: the task itself (pinned by its
 * completion and its scope, fanin biased while it is wired), its
 * orchestrator fields, and the kernel's copy of the arguments, with each
 * OUT tensor given its place in the heap allocation at heap_pos (written
 * back into args too, for the tensor map). */
static rt_task_t *orch_fill_slot(rt_ring_t *ring, pto_kernel_fn kernel, pto_task_args_t *args,
                                 uint64_t heap_bytes, uint64_t heap_pos) {
  const uint64_t id = ring->next_id;
  rt_task_t *t = &ring->tasks[id & ring->mask];
  rt_payload_t *p = &ring->payloads[id & ring->mask];
  rt_slot_orch_t *so = &ring->orch[id & ring->mask];
  uint64_t cursor = 0;

  tm_forget(p, so); /* the slot's previous task retired */
  t->id = id;
  t->kernel = kernel;
  t->ring = (uint8_t)ring->index;
  t->has_heap = heap_bytes != 0;
  t->heap_end = heap_pos + heap_bytes;
  atomic_store_explicit(&t->fanout, NULL, memory_order_relaxed);
  atomic_store_explicit(&t->fanin, RT_FANIN_BIAS, memory_order_relaxed);
  atomic_store_explicit(&t->pins, 2, memory_order_relaxed);
  p->task = t;
  so->seen = 0;
  so->scope_open = 1;
  so->heap_before = ring->heap_requests;
  ring->heap_requests += heap_bytes;

  /* The kernel's copy: only what it may read. */
  p->args.ntensors = args->ntensors;
  p->args.nscalars = args->nscalars;
  for (uint32_t i = 0; i < args->ntensors; i++) {
    p->args.dir[i] = args->dir[i];
    if (args->dir[i] == PTO_OUT) {
      pto_tensor_t *v = &args->tensor[i];
      uint64_t bytes = pto_tensor_numel(v) * pto_dtype_size(v->dtype);
      char *base = ring->heap + ((heap_pos + cursor) & (ring->heap_size - 1));
      *v = pto_tensor_view(base, bytes, v->dtype, 0, v->ndims, v->shape);
      cursor += orch_round_heap(bytes);
    }
    p->args.tensor[i] = args->tensor[i];
  }
  for (uint32_t i = 0; i < args->nscalars; i++) p->args.scalar[i] = args->scalar[i];
  return t;
}

/* Edges from t to its nprod producers (o->producers): one per producer
 * that is not yet CONSUMED.  One still running gets the edge in its fanout
 * list, and pins itself for it when it completes (sched_complete); one
 * that has completed is pinned here.  Either way the producer stays live
 * until t completes, and it takes one atomic operation on the producer's
 * line, not two.  Returns how many producers t waits for. */
static uint32_t orch_wire_edges(pto_orch_t *o, rt_ring_t *ring, rt_task_t *t, uint64_t nprod) {
  uint64_t dep_pos = ring->dep_head;
  uint32_t nwait = 0, nedges = 0;
  for (uint64_t k = 0; k < nprod; k++) {
    rt_task_t *pt = o->producers[k];
    rt_edge_t *edge, *head;
    int32_t pins;
    if (pt == t) continue; /* the slot's previous task, retired */
    edge = &ring->edges[dep_pos % ring->dep_size];
    edge->producer = pt;
    edge->consumer = t;
    head = atomic_load_explicit(&pt->fanout, memory_order_acquire);
    while (head != RT_FANOUT_CLOSED) {
      edge->next = head;
      if (atomic_compare_exchange_weak_explicit(&pt->fanout, &head, edge, memory_order_release,
                                                memory_order_acquire))
        break;
    }
    if (head != RT_FANOUT_CLOSED) {
      nwait++;
    } else {
      /* Completed.  Acquire: a producer found CONSUMED (pins 0) gets no
       * edge, so this is what orders its kernel's writes before this
       * task's reads. */
      pins = atomic_load_explicit(&pt->pins, memory_order_acquire);
      do {
        if (pins == 0) break;
      } while (!atomic_compare_exchange_weak_explicit(&pt->pins, &pins, pins + 1,
                                                      memory_order_acquire, memory_order_acquire));
      if (pins == 0) continue;
    }
    dep_pos++;
    nedges++;
  }
  ring->dep_head = dep_pos;
  t->ndeps = nedges;
  t->dep_end = dep_pos;
  {
    uint64_t used = dep_pos - atomic_load_explicit(&ring->dep_tail, memory_order_relaxed);
    if (used > ring->peak_deps) ring->peak_deps = used;
    if (o->trace) o->rec_deps = used;
  }
  return nwait;
}

/* t is wired and published: drop the bias on its fanin, and whoever takes
 * it to 0 (here or a producer) queues it.  Ready here, it runs at once
 * when its kernel is tiny and nothing else waits, else it is queued. */
static void orch_release_task(pto_orch_t *o, rt_task_t *t, uint32_t nwait) {
  rt_runtime_t *rt = o->rt;
  if (nwait != 0 &&
      atomic_fetch_sub_explicit(&t->fanin, RT_FANIN_BIAS - (int32_t)nwait, memory_order_acq_rel) !=
          RT_FANIN_BIAS - (int32_t)nwait)
    return;
  if (o->trace) trace_ready(o->trace, rt, t, rt_now_ns());
  if (t->kernel == atomic_load_explicit(&rt->tiny_kernel, memory_order_relaxed) &&
      !rt_queue_nonempty(&rt->ready)) {
    /* Shorter than any hand-off (orch.h): run it here, now. */
    sched_run_inline(rt, &rt->helper, t);
    return;
  }
  /* A lone ready task is this thread's to run once it has room to
   * (orch.h); a second one is work for a core. */
  rt_queue_push(&rt->ready, t);
  if (o->owed_wake || rt_queue_depth(&rt->ready) > 1) {
    o->owed_wake = false;
    rt_park_notify(&rt->core_park);
  } else {
    o->owed_wake = true;
  }
}

static int orch_submit(pto_orch_t *o, pto_kernel_fn kernel, pto_task_args_t *args) {
  rt_runtime_t *rt = o->rt;
  uint32_t r = o->depth < PTO_RING_COUNT - 1 ? o->depth : PTO_RING_COUNT - 1;
  rt_ring_t *ring = &rt->rings[r];
  uint64_t heap_bytes = 0, heap_pos = 0, nprod = 0, id, submit_ns = 0;
  uint32_t nwait;
  rt_task_t *t;
  int rc, code = atomic_load_explicit(&rt->err_code, memory_order_relaxed);

  if (code) return -code;
  if (o->trace) submit_ns = rt_now_ns();
  rc = orch_check_args(o, kernel, args, &heap_bytes);
  if (rc == 0) rc = orch_check_fits(o, r, heap_bytes);
  if (rc) return rc;

  o->epoch++;
  for (uint32_t i = 0; i < args->ntensors; i++)
    if (args->dir[i] != PTO_OUT)
      tm_collect(o, &args->tensor[i], args->dir[i] == PTO_INOUT, &nprod);
  rc = orch_check_producers(o, r, nprod);
  if (rc == 0) rc = orch_reserve(o, ring, heap_bytes, nprod, &heap_pos);
  if (rc) return rc;

  id = ring->next_id;
  t = orch_fill_slot(ring, kernel, args, heap_bytes, heap_pos);
  nwait = orch_wire_edges(o, ring, t, nprod);
  /* What t writes, for the tasks submitted after it. */
  for (uint32_t i = 0; i < args->ntensors; i++)
    if (args->dir[i] != PTO_IN)
      tm_insert(o, &ring->payloads[id & ring->mask], &ring->orch[id & ring->mask], i);

  if (o->trace)
    trace_submit(o->trace, o, ring, t, submit_ns, heap_bytes, o->producers,
                 nprod < o->producers_cap ? nprod : o->producers_cap);
  o->scope_tasks[o->nscope_tasks++] = t;
  o->scopes[o->depth].ntasks++;
  ring->next_id = id + 1;
  atomic_store_explicit(&ring->submitted, id + 1, memory_order_release);
  orch_release_task(o, t, nwait);
  return 0;
}

/* ---- scopes and the API ------------------------------------------------ */

static void orch_scope_begin(pto_orch_t *o) {
  if (o->overflow || o->depth + 1 >= RT_MAX_SCOPE_DEPTH) {
    if (!o->overflow) {
      orch_message(o, "The orchestration nested scopes deeper than %u; end scopes before "
                   "opening more.",
                   RT_MAX_SCOPE_DEPTH - 1);
      orch_plain_error(o, PTO_E_EXPLICIT_ORCH_FATAL, "nest fewer scopes");
    }
    o->overflow++;
    return;
  }
  o->depth++;
  if (o->trace) trace_scope_begin(o->trace, o->depth, rt_now_ns());
  o->scopes[o->depth].begin = o->nscope_tasks;
  o->scopes[o->depth].ntasks = 0;
}

/* End the innermost scope: drop the scope pin of each of its tasks. */
static void orch_scope_close(pto_orch_t *o) {
  rt_runtime_t *rt = o->rt;
  uint64_t begin = o->scopes[o->depth].begin;
  for (uint64_t k = begin; k < o->nscope_tasks; k++) {
    rt_task_t *t = o->scope_tasks[k];
    orch_slot(rt, t)->scope_open = 0;
    sched_release(rt, t);
  }
  o->nscope_tasks = begin;
  if (o->trace) trace_scope_end(o->trace, o->depth, rt_now_ns());
  if (o->depth > 0) o->depth--;
}

static void orch_scope_end(pto_orch_t *o) {
  if (o->overflow) {
    o->overflow--;
    return;
  }
  if (o->depth == 0) {
    orch_message(o, "The orchestration called scope_end() without a matching scope_begin().");
    orch_plain_error(o, PTO_E_EXPLICIT_ORCH_FATAL, "call scope_end() once for every scope_begin()");
    return;
  }
  orch_scope_close(o);
}

static const pto_orch_api_t orch_api_table = {
    .abi_version = PTO_PROGRAM_ABI_VERSION,
    .scope_begin = orch_scope_begin,
    .scope_end = orch_scope_end,
    .submit = orch_submit,
    .fatal = orch_fatal,
};

const pto_orch_api_t *orch_api(void) { return &orch_api_table; }

/* ---- the thread -------------------------------------------------------- */

void orch_run(rt_runtime_t *rt, uint64_t gen) {
  pto_orch_t *o = &rt->orch;
  const pto_program_t *prog = rt->prog;
  uint64_t orch_from = o->trace ? rt_now_ns() : 0;
  int rc;

  o->depth = 0;
  o->overflow = 0;
  o->owed_wake = false;
  o->scopes[0].begin = 0;
  o->scopes[0].ntasks = 0;
  o->nscope_tasks = 0;
  if (o->trace) trace_scope_begin(o->trace, 0, orch_from);

  rc = prog->orchestrate(&orch_api_table, o, rt->args, rt->nargs);
  if (o->trace)
    trace_phase(o->trace, trace_orch_lane(rt), "orchestrate", RT_TRACE_NONE, orch_from,
                rt_now_ns());
  if (!rt_failed(rt) && (rc != 0 || o->depth != 0 || o->overflow != 0)) {
    if (rc != 0)
      orch_message(o, "The orchestration of program '%s' returned %d without reporting an error; "
                   "a program reports errors through fatal().",
                   prog->name, rc);
    else
      orch_message(o, "The orchestration of program '%s' returned with %u scope(s) still open; "
                   "call scope_end() once for every scope_begin().",
                   prog->name, o->depth + o->overflow);
    orch_plain_error(o, PTO_E_EXPLICIT_ORCH_FATAL, "fix the program's orchestration");
  }
  while (o->depth > 0) orch_scope_close(o);
  orch_scope_close(o); /* the implicit outermost scope */
  /* A first task still queued is the caller's to run now (rt_run helps). */
  o->owed_wake = false;
  atomic_store(&rt->orch_done_gen, gen);
  rt_check_done(rt);
}
