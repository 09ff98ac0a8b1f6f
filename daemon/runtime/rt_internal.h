/* SPDX-License-Identifier: Apache-2.0 */
/* rt_internal.h — the runtime's shared data structures (internal to
 * daemon/runtime; the daemon sees runtime.h only).
 *
 * Ownership by thread, which is what keeps the hot path lock-free:
 * - the orchestrator thread alone writes a ring's allocation state
 *   (next_id, heap_head, dep_head), the tensor map, the scope stack and the
 *   per-slot orchestrator fields (rt_slot_orch_t, the payload's tm entries);
 * - a task's rt_task_t fields are written by the orchestrator before the task
 *   is published (queue push, fanout push), and are read-only afterwards
 *   except for the atomics;
 * - retirement state (last_alive, heap_tail, dep_tail) is written by
 *   whichever thread consumed the ring's head task, under the ring's
 *   advance try-lock.
 *
 * Task life: PENDING (fanin > 0) -> ready (queued) -> run by a core ->
 * COMPLETED (fanout closed) -> CONSUMED (pins reach 0: completed, every
 * consumer completed, owning scope ended) -> retired (last_alive moved past
 * it; its slot, heap bytes and dependency entries are free again).
 */
#ifndef PTOD_RT_INTERNAL_H
#define PTOD_RT_INTERNAL_H

#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <pto/errors.h>
#include <pto/program.h>
#include <pto/sizing.h>

#include "device.h"
#include "runtime.h"

#define RT_CACHELINE 64
#define RT_HEAP_ALIGN UINT64_C(1024)

typedef struct rt_task rt_task_t;
typedef struct rt_programs rt_programs_t;

/* One dependency edge, taken from the consumer's ring pool. */
typedef struct rt_edge {
  rt_task_t *producer; /* pinned by this edge until the consumer completes */
  rt_task_t *consumer;
  struct rt_edge *next; /* in the producer's fanout list (waiting edges only) */
} rt_edge_t;

/* The producer completed: its fanout list takes no more edges. */
#define RT_FANOUT_CLOSED ((rt_edge_t *)(uintptr_t)1)

/* Bias the orchestrator holds on a new task's fanin while it wires the
 * task, so producers finishing meanwhile cannot make it ready early. */
#define RT_FANIN_BIAS (INT32_C(1) << 30)

/* One task slot: exactly one cache line. */
struct rt_task {
  uint64_t id;          /* ring-local id; slot = id & (window - 1) */
  pto_kernel_fn kernel;
  uint64_t heap_end;    /* heap position after its allocation (has_heap) */
  uint64_t dep_end;     /* dependency pool position after its edges */
  _Atomic(rt_edge_t *) fanout;   /* consumers waiting on it; CLOSED when completed */
  _Atomic uint64_t consumed_id;  /* == id once CONSUMED */
  _Atomic int32_t fanin;         /* producers it still waits for (+bias while wiring) */
  _Atomic int32_t pins;          /* 1 until completed + 1 until scope end + 1 per live consumer
                                  * (taken at submit, or at completion for those that waited) */
  uint32_t ndeps;                /* its edges: pool positions [dep_end - ndeps, dep_end) */
  uint8_t ring;
  uint8_t has_heap;
};
_Static_assert(sizeof(struct rt_task) <= RT_CACHELINE, "rt_task must fit one cache line");

/* The tensor map: per bucket a doubly linked list of entries embedded in
 * the producers' payloads (one per written tensor), so the map needs no
 * pool of its own and cannot overflow. */
typedef struct rt_tm_entry {
  struct rt_tm_entry *next;
  struct rt_tm_entry **pprev;
} rt_tm_entry_t;

/* The kernel's copy of its arguments and the task's tensor map entries.
 * Payloads are RT_PAYLOAD_BYTES apart and aligned to it, so an entry finds
 * its payload by masking its address. */
#define RT_PAYLOAD_BYTES 1024u
typedef struct rt_payload {
  pto_task_args_t args;
  rt_tm_entry_t tm[PTO_MAX_TASK_TENSORS];
  rt_task_t *task;
} __attribute__((aligned(RT_PAYLOAD_BYTES))) rt_payload_t;
_Static_assert(sizeof(rt_payload_t) == RT_PAYLOAD_BYTES, "rt_payload_t must be 1024 bytes");

/* Per-slot fields only the orchestrator touches. */
typedef struct rt_slot_orch {
  uint64_t seen;        /* submit epoch that last collected it as a producer */
  uint64_t heap_before; /* ring heap requests (no padding) submitted before it */
  uint8_t scope_open;   /* its owning scope has not ended */
  uint8_t tm_linked;    /* bit i: payload tm[i] is linked in the tensor map */
} rt_slot_orch_t;

typedef struct rt_ring {
  /* Geometry, set when the arena is built. */
  uint32_t index;
  uint64_t window, mask;
  uint64_t heap_size;
  uint64_t dep_size;
  char *heap;
  rt_task_t *tasks;
  rt_payload_t *payloads;
  rt_slot_orch_t *orch;
  rt_edge_t *edges;

  /* Orchestrator-owned. */
  uint64_t next_id;
  uint64_t heap_head;     /* positions grow forever; offset = position & (heap_size-1) */
  uint64_t heap_requests; /* sum of requests submitted (no padding) */
  uint64_t dep_head;
  uint64_t run_first_id;
  uint64_t peak_tasks, peak_heap, peak_deps;

  /* Published by the orchestrator: tasks submitted (next_id). */
  alignas(RT_CACHELINE) _Atomic uint64_t submitted;

  /* Retirement. */
  alignas(RT_CACHELINE) _Atomic uint64_t last_alive;
  _Atomic uint64_t heap_tail;
  _Atomic uint64_t dep_tail;
  _Atomic uint32_t adv_lock;
} rt_ring_t;

/* A bounded multi-producer multi-consumer queue of tasks (Vyukov). */
typedef struct rt_cell {
  _Atomic uint64_t seq;
  rt_task_t *task;
} rt_cell_t;

typedef struct rt_queue {
  rt_cell_t *cells;
  uint64_t mask;
  alignas(RT_CACHELINE) _Atomic uint64_t head;
  alignas(RT_CACHELINE) _Atomic uint64_t tail;
} rt_queue_t;

/* Where idle threads sleep (see park.h). */
typedef struct rt_park {
  alignas(RT_CACHELINE) _Atomic uint32_t seq;
  _Atomic uint32_t sleepers;
  _Atomic uint32_t spinners;
  _Atomic int32_t avail; /* workers awake and free to take work (not asleep, not in a kernel) */
} rt_park_t;

typedef struct rt_scope {
  uint64_t begin;  /* index of its first task in scope_tasks */
  uint64_t ntasks; /* tasks it submitted itself (all on ring min(depth, 3)) */
} rt_scope_t;

/* The orchestrator's state; pto_orch_t for the programs. */
struct pto_orch {
  rt_runtime_t *rt;
  uint32_t depth;
  uint32_t overflow;        /* scope_begin calls past RT_MAX_SCOPE_DEPTH (a failed run) */
  rt_scope_t scopes[RT_MAX_SCOPE_DEPTH];
  rt_task_t **scope_tasks; /* tasks of the open scopes, oldest first */
  uint64_t nscope_tasks;
  rt_task_t **producers;   /* scratch: producers of the task being submitted */
  uint64_t producers_cap;
  uint64_t epoch;          /* submit counter, for producer de-duplication */
  bool owed_wake;          /* a ready task was queued without waking a core (orch.h) */
  rt_tm_entry_t **buckets;
  uint32_t bucket_bits;
  pto_error_t err;         /* an error being built */
  /* The run's DFX record (trace.h), NULL when none was asked for; and the
   * ring's use the last reservation saw, which the record takes. */
  struct rt_trace *trace;
  uint64_t rec_tasks, rec_heap, rec_deps;
};

/* Device memory the arena holds: two grow-only regions. */
typedef struct rt_region {
  void *base;
  uint64_t bytes; /* as asked of dev_mem_commit */
} rt_region_t;

typedef struct rt_arena {
  bool valid;
  pto_sizing_resolved_t sizing;
  uint64_t key;
  rt_region_t meta; /* task windows, payloads, pools, queues, map */
  rt_region_t heap; /* the four ring heaps */
} rt_arena_t;

/* A scheduler or core thread. */
typedef struct rt_worker {
  rt_runtime_t *rt;
  uint32_t index; /* among its kind */
  bool core;
  pthread_t thread;
  /* Set while the thread may touch arena memory (queues, tasks); the arena
   * is rebuilt only when every worker has cleared it (see rt_gate_close). */
  alignas(RT_CACHELINE) _Atomic uint32_t active;
  _Atomic uint64_t completed; /* kernels run (cores) or tasks completed (schedulers) */
  uint64_t last_kernel_ns;    /* how long the last kernel it ran took */
} rt_worker_t;

struct rt_runtime {
  dev_device_t *dev;
  char *programs_dir;
  rt_programs_t *programs;
  uint32_t ncores, nsched;
  /* The options' timeouts, and the current run's (rt_run_config may
   * override them per run; written before the run is published). */
  uint64_t default_deadlock_timeout_ns, default_run_timeout_ns;
  uint64_t deadlock_timeout_ns, run_timeout_ns, spin_ns;

  /* The arena slot and its counters (stats_lock guards `cache`). */
  rt_arena_t arena;
  pthread_mutex_t stats_lock;
  rt_cache_stats_t cache;

  rt_ring_t rings[PTO_RING_COUNT];
  rt_queue_t ready; /* tasks whose producers all completed, for the cores */
  rt_queue_t done;  /* tasks whose kernel ran, for the schedulers */
  struct pto_orch orch;

  /* Threads: workers[0..ncores) are cores, then nsched schedulers.  The
   * orchestration runs on rt_run's caller, which then helps with the run's
   * tasks as `helper` until the run ends. */
  rt_worker_t *workers;
  uint32_t nworkers_started;
  _Atomic bool gate; /* the arena may be touched by the workers */
  rt_worker_t helper;   /* rt_run's caller, while it waits for the run's end */
  /* The last kernel seen to run shorter than RT_LONG_KERNEL_NS: the only
   * one the orchestrator runs itself while it waits for room (sched_help). */
  _Atomic(pto_kernel_fn) short_kernel;
  /* The last kernel seen to run shorter than RT_TINY_KERNEL_NS: run by the
   * orchestrator in submit() when ready then (sched_run_inline). */
  _Atomic(pto_kernel_fn) tiny_kernel;
  rt_park_t retire_park; /* the orchestrator waiting for retirement (back-pressure) */
  rt_park_t sched_park; /* schedulers waiting for completions */
  rt_park_t core_park;  /* cores waiting for ready tasks */
  rt_park_t done_park;  /* rt_run waiting for the end of the run */
  rt_park_t idle_park;  /* schedulers not taking part in this run */
  _Atomic bool stop;
  /* The run's DFX record for the workers; NULL when not recording. */
  _Atomic(struct rt_trace *) trace;

  /* The current run: written by rt_run before run_gen is bumped. */
  _Atomic uint64_t run_gen;
  const pto_program_t *prog;
  const pto_arg_t *args;
  uint32_t nargs;
  _Atomic uint32_t active_sched;
  _Atomic int err_code;  /* first error wins (CAS from 0) */
  _Atomic bool err_ready; /* run_err is filled */
  pto_error_t run_err;
  /* Runs are numbered by run_gen.  orch_done_gen: the last run whose
   * orchestration returned with every scope ended; done_gen: the last run
   * whose tasks all retired.  Numbers, not flags, so that a thread still
   * finishing one run's bookkeeping can never end the next run. */
  _Atomic uint64_t orch_done_gen;
  _Atomic uint64_t done_gen;

  /* The run_timeout watchdog (rt_watchdog), run by rt_run's caller while
   * it waits and by scheduler 0, which sleeps at most wd_slice_ns: rt_run's
   * caller may be inside a kernel for any length of time.  wd_lock guards
   * the wd_ fields but the slice. */
  pthread_mutex_t wd_lock;
  uint64_t wd_gen; /* the run being watched; 0: none */
  uint64_t wd_timeout_ns, wd_progress, wd_at;
  _Atomic uint64_t wd_slice_ns;
};

/* ---- shared helpers (runtime.c) --------------------------------------- */

uint64_t rt_now_ns(void);
uint64_t rt_pow2_at_least(uint64_t v);

/* Latch `e` as the run's error unless one is latched already (first error
 * wins); wakes every thread that may be waiting.  Returns -code of the
 * error that is latched now. */
int rt_fail(rt_runtime_t *rt, const pto_error_t *e);

static inline bool rt_failed(rt_runtime_t *rt) {
  return atomic_load_explicit(&rt->err_code, memory_order_relaxed) != 0;
}

/* Keep the workers off the arena (waits until every one has left it), and
 * let them back once a valid arena is in place. */
void rt_gate_close(rt_runtime_t *rt);
void rt_gate_open(rt_runtime_t *rt);

/* Every ring empty and the orchestration over: signal the end of the run
 * (once). */
void rt_check_done(rt_runtime_t *rt);

/* Latch SCHEDULER_TIMEOUT if the watched run made no progress (nothing
 * submitted, run or retired) for its run_timeout.  Any thread, any time. */
void rt_watchdog(rt_runtime_t *rt);

#endif
