/* SPDX-License-Identifier: Apache-2.0 */
#include "dispatch.h"
#include "dispatch_queue.h"
#include "quiet_thread.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include <pto/errors.h>

/* How long each side of the hand-off stays awake for the other (bounded
 * spins; dsp_set_spin_us, the [daemon] spin_us key).  On these virtual
 * machines waking a sleeping thread costs tens of microseconds, more than
 * a short dispatch, and waking one on a halted vCPU ~40-50 us (with
 * guest_halt_poll_ns = 0, BENCHMARKS.md §1.3): the device thread keeps
 * looking for the next job this long after finishing one, and the loop
 * keeps polling (instead of sleeping in epoll) this long after the last
 * job it admitted or completed -- after the last completion only while
 * jobs come back to back one at a time, so that the client's next request
 * finds the loop's vCPU awake.  Past the window both sleep: an idle daemon
 * uses no CPU. */
#define DSP_DEFAULT_SPIN_NS 50000u
/* The device thread spins after a job only if that job was admitted within
 * this many spin windows of the previous job's end. */
#define DSP_SPIN_GAP_FACTOR 2u
/* The loop polls on after a completion only if the last job was admitted
 * within this many spin windows of the completions before it.  Wider than
 * the device thread's: while the loop sleeps, that gap holds the wake-up of
 * its halted vCPU too (a Python client's is 100-130 us, ~40 of them the
 * wake-up), and polling is what removes it. */
#define DSP_POLL_GAP_FACTOR 4u

typedef struct job_list {
  dsp_job_t *head, *tail;
  uint32_t count;
} job_list_t;

struct dsp {
  uv_loop_t *loop;
  uv_async_t done_async;
  uv_idle_t poll_idle;      /* active: the loop polls instead of sleeping */
  uv_check_t turn_check;    /* each turn of the loop: ran_this_turn cleared */
  int open_handles;         /* closed handles free the dsp when this hits 0 */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  dspq_t queued;      /* admitted, not started (dispatch_queue.h) */
  job_list_t done;    /* finished, completion not yet run on the loop */
  uint32_t capacity;
  bool running;
  /* The device token (dispatch.h): true while the loop runs a job; the
   * device thread takes no job then. */
  bool loop_holds_device;
  bool draining;
  bool stopping;
  /* Lock-free views for the spins: queued.count, done.count, and whether
   * the loop polls (then a finished job needs no uv_async_send). */
  atomic_uint nqueued, ndone;
  atomic_bool loop_polling;
  atomic_bool stop_spin;
  atomic_uint spin_ns;      /* both windows; 0: no spin, no poll */
  /* The device thread sleeps on `wake` (under the lock): admit signals
   * only then. */
  bool device_sleeping;
  bool device_warm; /* its warm-up done: dsp_create waits for it, on `wake` */
  /* Loop thread only. */
  uint32_t inflight;        /* admitted, completion not yet run */
  uint64_t poll_until_ns;
  uint64_t last_done_ns;    /* when completions last ran */
  bool poll_after_done;     /* the last job came soon after them: poll on */
  bool ran_this_turn;       /* the loop ran a job this turn (run_on_loop) */
  bool completing;          /* in complete_batch: no job runs on the loop */
  void (*batch_begin)(void *data), (*batch_end)(void *data);
  void *batch_data;
};

uint64_t dsp_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void list_push(job_list_t *list, dsp_job_t *job) {
  job->next = NULL;
  if (list->tail)
    list->tail->next = job;
  else
    list->head = job;
  list->tail = job;
  list->count++;
}

static dsp_job_t *list_take_all(job_list_t *list) {
  dsp_job_t *head = list->head;
  list->head = list->tail = NULL;
  list->count = 0;
  return head;
}

static void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

/* Device thread: finished jobs go back to the loop. */
static void finish(dsp_t *dsp, dsp_job_t *job, uint64_t now) {
  job->finished_ns = now;
  pthread_mutex_lock(&dsp->lock);
  list_push(&dsp->done, job);
  atomic_store(&dsp->ndone, dsp->done.count);
  pthread_mutex_unlock(&dsp->lock);
  /* Pairs with stop_polling (seq_cst store, then load, on both sides):
   * either the loop still polls and finds the job, or it has stopped and
   * this wakes it. */
  if (!atomic_load(&dsp->loop_polling)) uv_async_send(&dsp->done_async);
}

/* Whether a job admitted at `at` came within `factor` spin windows of
 * `since`, the end of what came before it (0: nothing did; admitted before
 * it: at once).  Both sides' spins ask this, as KVM's halt polling grows
 * and shrinks its window. */
static bool came_soon(uint64_t at, uint64_t since, uint64_t window, uint32_t factor) {
  return since != 0 && (at <= since || at - since <= (uint64_t)factor * window);
}

/* Device thread, without the lock: look for the next job for a while
 * before sleeping on the condition variable, if the last job (admitted at
 * `admitted_ns`) came soon enough after the previous one's end
 * (`prev_end_ns`) that a spin would have caught it.  Back to back a job
 * follows the last answer within the client's turnaround, so the spin
 * saves a wake-up; after an idle time the spin would only take the CPU
 * that the client, woken by the answer, needs (noop after 20 ms idle:
 * 154-156 us against 172-225 us spinning after every job, when this rule
 * came in).  Yields now and then: on a 2-vCPU machine the thread that will
 * admit the job may need this CPU.  It spins beside the loop's poll for
 * the same request (only for jobs the loop does not run itself:
 * take_device); stopping it while the loop polls was measured (noop(60),
 * not short, back to back, two daemons alternating in one run): raw client
 * 46 us either way, libptoclient 61 -> 95 us, the wake-up it then needs
 * costing more than the spin.  So it stays. */
static void spin_for_job(dsp_t *dsp, uint64_t admitted_ns, uint64_t prev_end_ns) {
  uint64_t start = dsp_now_ns();
  uint64_t window = atomic_load_explicit(&dsp->spin_ns, memory_order_relaxed);
  if (window == 0 || !came_soon(admitted_ns, prev_end_ns, window, DSP_SPIN_GAP_FACTOR)) return;
  for (uint32_t i = 1; atomic_load_explicit(&dsp->nqueued, memory_order_relaxed) == 0; i++) {
    if (atomic_load_explicit(&dsp->stop_spin, memory_order_relaxed)) return;
    cpu_relax();
    if (i % 4 == 0) {
      if (dsp_now_ns() - start >= window) return;
      sched_yield();
    }
  }
}

/* Touch the stack and the malloc arena this thread's jobs will use, so the
 * first job does not pay their page faults (each one costs 10-20 us on a
 * virtual machine; a first dispatch took several). */
static void __attribute__((noinline)) warm_thread(void) {
  volatile char stack[96 * 1024];
  volatile char *heap = malloc(96 * 1024);
  /* Volatile stores, one per page: a memset here is a dead store the
   * compiler may drop. */
  for (size_t i = 0; i < sizeof(stack); i += 4096) stack[i] = 0;
  if (heap) {
    for (size_t i = 0; i < 96 * 1024; i += 4096) heap[i] = 0;
    free((void *)heap);
  }
}

/* Run a job taken at `now` by the device token's holder: dropped unrun if
 * its client is gone or its deadline passed. */
static void start_job(dsp_job_t *job, uint64_t now) {
  job->started_ns = now;
  if (job->gone && atomic_load_explicit(job->gone, memory_order_acquire))
    job->outcome = DSP_CANCELLED;
  else if (job->deadline_ns && job->started_ns > job->deadline_ns)
    job->outcome = DSP_EXPIRED;
  else {
    job->outcome = DSP_RAN;
    job->run(job);
  }
}

/* Whether the device thread may take a job now (under the lock): one is
 * queued and the loop does not hold the device token. */
static bool job_for_device(const dsp_t *dsp) {
  return dsp->queued.count && !dsp->loop_holds_device;
}

static void *device_thread(void *arg) {
  dsp_t *dsp = arg;
  uint64_t now, last_end_ns = 0, admitted_ns = 0, prev_end_ns = 0; /* see spin_for_job */
  pthread_setname_np(pthread_self(), "ptod-device");
  warm_thread();
  pthread_mutex_lock(&dsp->lock);
  dsp->device_warm = true;
  pthread_cond_broadcast(&dsp->wake);
  for (;;) {
    dsp_job_t *job;
    if (!job_for_device(dsp) && !dsp->stopping) {
      pthread_mutex_unlock(&dsp->lock);
      spin_for_job(dsp, admitted_ns, prev_end_ns);
      pthread_mutex_lock(&dsp->lock);
    }
    while (!job_for_device(dsp) && !dsp->stopping) {
      dsp->device_sleeping = true;
      pthread_cond_wait(&dsp->wake, &dsp->lock);
      dsp->device_sleeping = false;
    }
    now = dsp_now_ns();
    job = dspq_pop(&dsp->queued, now);
    atomic_store(&dsp->nqueued, dsp->queued.count);
    if (!job) break; /* stopping, and nothing left */
    dsp->running = true;
    pthread_mutex_unlock(&dsp->lock);

    admitted_ns = job->admitted_ns;
    prev_end_ns = last_end_ns;
    start_job(job, now);
    last_end_ns = dsp_now_ns();
    finish(dsp, job, last_end_ns); /* the loop may free the job from here on */

    pthread_mutex_lock(&dsp->lock);
    dsp->running = false;
  }
  pthread_mutex_unlock(&dsp->lock);
  return NULL;
}

static void start_polling(dsp_t *dsp);

/* Loop thread: the completions of `job` and the jobs after it, together. */
static void complete_batch(dsp_t *dsp, dsp_job_t *job) {
  dsp_job_t *next;
  dsp->last_done_ns = dsp_now_ns();
  dsp->poll_until_ns =
      dsp->last_done_ns + atomic_load_explicit(&dsp->spin_ns, memory_order_relaxed);
  dsp->completing = true;
  if (dsp->batch_begin) dsp->batch_begin(dsp->batch_data);
  for (; job; job = next) {
    next = job->next;
    dsp->inflight--;
    job->complete(job);
  }
  if (dsp->batch_end) dsp->batch_end(dsp->batch_data);
  dsp->completing = false;
}

/* Loop thread: run the completions of the finished jobs. */
static void complete_done(dsp_t *dsp) {
  dsp_job_t *job;
  pthread_mutex_lock(&dsp->lock);
  job = list_take_all(&dsp->done);
  atomic_store(&dsp->ndone, 0);
  pthread_mutex_unlock(&dsp->lock);
  if (!job) return;
  complete_batch(dsp, job);
  if (dsp->poll_after_done) start_polling(dsp); /* for the client's next request */
}

void dsp_set_batch_hooks(dsp_t *dsp, void (*begin)(void *data), void (*end)(void *data),
                         void *data) {
  dsp->batch_begin = begin;
  dsp->batch_end = end;
  dsp->batch_data = data;
}

static void on_done(uv_async_t *async) { complete_done(async->data); }

static void stop_polling(dsp_t *dsp) {
  uv_idle_stop(&dsp->poll_idle);
  atomic_store(&dsp->loop_polling, false);
  /* Pairs with finish(): a job finished before this store is seen below;
   * one finished after it sends done_async. */
  if (atomic_load(&dsp->ndone) > 0) complete_done(dsp);
}

/* Every loop iteration while polling: completions, without an eventfd;
 * else a yield, as the device thread or the client may be waiting for
 * this CPU.  Stopping the poll once a yield gave the CPU away was measured
 * (two daemons alternating in one run): no change, as by then the
 * client's request is there and the loop does not sleep. */
static void on_poll(uv_idle_t *idle) {
  dsp_t *dsp = idle->data;
  if (atomic_load_explicit(&dsp->ndone, memory_order_relaxed) > 0)
    complete_done(dsp);
  else
    sched_yield();
  if ((dsp->inflight == 0 && !dsp->poll_after_done) || dsp_now_ns() >= dsp->poll_until_ns)
    stop_polling(dsp);
}

static void start_polling(dsp_t *dsp) {
  uint64_t window = atomic_load_explicit(&dsp->spin_ns, memory_order_relaxed);
  if (window == 0) return; /* completions come through done_async */
  dsp->poll_until_ns = dsp_now_ns() + window;
  if (atomic_load_explicit(&dsp->loop_polling, memory_order_relaxed)) return;
  atomic_store(&dsp->loop_polling, true);
  uv_idle_start(&dsp->poll_idle, on_poll);
}

static void on_turn(uv_check_t *check) { ((dsp_t *)check->data)->ran_this_turn = false; }

static void free_on_close(uv_handle_t *handle) {
  dsp_t *dsp = handle->data;
  if (--dsp->open_handles == 0) free(dsp);
}

static void close_handles(dsp_t *dsp) {
  uv_close((uv_handle_t *)&dsp->done_async, free_on_close);
  uv_close((uv_handle_t *)&dsp->poll_idle, free_on_close);
  uv_close((uv_handle_t *)&dsp->turn_check, free_on_close);
}

int dsp_create(uv_loop_t *loop, uint32_t capacity, dsp_t **ret_dsp) {
  dsp_t *dsp = calloc(1, sizeof(*dsp));
  int rc;
  if (!dsp) return -PTO_E_INTERNAL;
  if (dspq_init(&dsp->queued) < 0) {
    free(dsp);
    return -PTO_E_INTERNAL;
  }
  dsp->loop = loop;
  dsp->capacity = capacity;
  atomic_init(&dsp->spin_ns, DSP_DEFAULT_SPIN_NS);
  {
    /* The loop and the device thread take the lock for a few instructions
     * at a time, hundreds of thousands of times a second under load: spin
     * briefly on contention rather than sleep in the kernel at once. */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&dsp->lock, &attr);
    pthread_mutexattr_destroy(&attr);
  }
  pthread_cond_init(&dsp->wake, NULL);
  uv_async_init(loop, &dsp->done_async, on_done);
  dsp->done_async.data = dsp;
  uv_idle_init(loop, &dsp->poll_idle);
  dsp->poll_idle.data = dsp;
  /* Runs after each turn's I/O; unreferenced, it keeps no loop alive and
   * wakes no sleeping one. */
  uv_check_init(loop, &dsp->turn_check);
  dsp->turn_check.data = dsp;
  uv_check_start(&dsp->turn_check, on_turn);
  uv_unref((uv_handle_t *)&dsp->turn_check);
  dsp->open_handles = 3;
  rc = quiet_thread_create(&dsp->thread, NULL, device_thread, dsp);
  if (rc != 0) {
    dspq_free(&dsp->queued);
    close_handles(dsp);
    return -PTO_E_INTERNAL;
  }
  /* Nothing of the thread's start-up runs beside the daemon's first
   * requests (nor beside a leak check: LeakSanitizer can miss a block
   * that another thread is allocating while it scans, google/sanitizers
   * #757, as fuzz_requests once saw of warm_thread's). */
  pthread_mutex_lock(&dsp->lock);
  while (!dsp->device_warm) pthread_cond_wait(&dsp->wake, &dsp->lock);
  pthread_mutex_unlock(&dsp->lock);
  *ret_dsp = dsp;
  return 0;
}

/* Loop thread: take the device token for a short job (run_on_loop) if
 * the device is free -- nothing queued, running or still to complete, not
 * draining -- and the loop has run no job yet this turn nor is running
 * completions (a job submitted from one goes to the device thread: no run
 * nests in another's completion).
 *
 * So a short job runs on the loop whenever the device is free, back to
 * back as after idle, one a turn.  After idle the loop saves the device
 * thread's wake-up and the uv_async back (bench_latency, noop after 20 ms:
 * -25 to -45 %).  Back to back it saves the hand-off both ways, and one
 * thread, the loop, polls for the client's next request where the device
 * thread's spin ran beside it: two daemon threads spinning on 2 vCPUs kept
 * the woken client off the CPU it needed to send that request, and the
 * spins ran to their end.  Measured with two daemons in one run,
 * alternating blocks of 2,000 noop(1), 8 blocks each, on the loaded 2-vCPU
 * machine of the commit that made this rule (the device thread's path ->
 * the loop's): raw client p50 42 -> 31 us, daemon CPU per dispatch 32 ->
 * 28 us, preemptions and yields per dispatch 4.0 -> 1.7; libptoclient
 * 31.5 -> 26.0 us, 48 -> 21 us CPU, 3.0 -> 0.95; a raw client that spins on
 * its reads 27 -> 16 us, 2.8 -> 0.1; 4 blocking clients at once 10.7k ->
 * 14.5k dispatches/s.  One a turn: requests read together (a pipelining
 * client, several clients at once) go to the device thread after the
 * first, so the loop reads and answers on while the device runs them, and
 * a turn holds at most one short job's budget of device work. */
static bool take_device(dsp_t *dsp) {
  bool free_now;
  if (dsp->inflight || dsp->ran_this_turn || dsp->completing) return false;
  pthread_mutex_lock(&dsp->lock);
  free_now = !dsp->queued.count && !dsp->running && !dsp->done.head && !dsp->draining &&
             !dsp->stopping;
  if (free_now) dsp->running = dsp->loop_holds_device = true;
  pthread_mutex_unlock(&dsp->lock);
  return free_now;
}

static void give_device_back(dsp_t *dsp) {
  pthread_mutex_lock(&dsp->lock);
  dsp->running = dsp->loop_holds_device = false;
  pthread_mutex_unlock(&dsp->lock);
}

/* Loop thread: whether a client that waits for each answer sent the job
 * admitted at `at` (nothing else in flight, soon after the last
 * completions): then the loop polls on after its answer for the next one.
 * A pipelining client keeps the loop busy anyway. */
static bool waits_for_each_answer(const dsp_t *dsp, uint64_t at) {
  uint64_t window = atomic_load_explicit(&dsp->spin_ns, memory_order_relaxed);
  return dsp->inflight == 0 && came_soon(at, dsp->last_done_ns, window, DSP_POLL_GAP_FACTOR);
}

/* Loop thread: a short job runs here, to completion, rather than waking
 * the device thread and being woken back, or the two threads spinning for
 * each other (take_device says when and why).  False, with the
 * job untouched, where it goes to the device thread. */
static bool run_on_loop(dsp_t *dsp, dsp_job_t *job) {
  uint64_t now = dsp_now_ns();
  if (!job->is_short || !take_device(dsp)) return false;
  if (!job->is_short(job)) {
    give_device_back(dsp);
    return false;
  }
  job->admitted_ns = now;
  start_job(job, now);
  job->finished_ns = dsp_now_ns();
  give_device_back(dsp);
  job->next = NULL;
  dsp->ran_this_turn = true;
  dsp->poll_after_done = waits_for_each_answer(dsp, now);
  dsp->inflight++;
  complete_batch(dsp, job);
  if (dsp->poll_after_done) start_polling(dsp); /* for the client's next request */
  return true;
}

static int admit(dsp_t *dsp, dsp_job_t *job, bool internal) {
  bool wake = false;
  int rc = 0;
  pthread_mutex_lock(&dsp->lock);
  if (dsp->draining || dsp->stopping)
    rc = -PTO_E_SHUTTING_DOWN;
  else if (!internal && dsp->queued.count >= dsp->capacity)
    rc = -PTO_E_BUSY;
  else {
    job->admitted_ns = dsp_now_ns();
    dspq_push(&dsp->queued, job);
    atomic_store(&dsp->nqueued, dsp->queued.count);
    wake = dsp->device_sleeping;
  }
  pthread_mutex_unlock(&dsp->lock);
  /* Signalled after unlocking: woken at once, the device thread would
   * otherwise run only to block on the lock still held here. */
  if (wake) pthread_cond_signal(&dsp->wake);
  if (rc == 0) {
    dsp->poll_after_done = waits_for_each_answer(dsp, job->admitted_ns);
    dsp->inflight++;
    start_polling(dsp);
  }
  return rc;
}

int dsp_submit(dsp_t *dsp, dsp_job_t *job) {
  if (run_on_loop(dsp, job)) return 0;
  return admit(dsp, job, false);
}

int dsp_submit_internal(dsp_t *dsp, dsp_job_t *job) { return admit(dsp, job, true); }

dsp_flow_t *dsp_flow_create(dsp_t *dsp) {
  (void)dsp;
  return dspq_flow_new();
}

void dsp_flow_release(dsp_t *dsp, dsp_flow_t *flow) {
  if (!flow) return;
  if (!dsp) { /* after dsp_destroy: no job is left to take */
    free(flow);
    return;
  }
  pthread_mutex_lock(&dsp->lock);
  dspq_flow_release(flow);
  pthread_mutex_unlock(&dsp->lock);
}

bool dsp_withdraw(dsp_t *dsp, dsp_flow_t *flow, uint64_t tag) {
  dsp_job_t *job;
  pthread_mutex_lock(&dsp->lock);
  job = dspq_take_tagged(&dsp->queued, flow, tag);
  atomic_store(&dsp->nqueued, dsp->queued.count);
  pthread_mutex_unlock(&dsp->lock);
  if (!job) return false;
  job->outcome = DSP_WITHDRAWN;
  job->started_ns = job->finished_ns = dsp_now_ns();
  dsp->inflight--;
  job->complete(job);
  return true;
}

void dsp_set_aging_us(dsp_t *dsp, uint64_t aging_us) {
  pthread_mutex_lock(&dsp->lock);
  dsp->queued.aging_ns = aging_us > UINT64_MAX / 1000u ? UINT64_MAX / 2 : aging_us * 1000u;
  pthread_mutex_unlock(&dsp->lock);
}

void dsp_get_stats(dsp_t *dsp, dsp_stats_t *ret_stats) {
  pthread_mutex_lock(&dsp->lock);
  ret_stats->depth = dsp->queued.count;
  for (int p = DSP_PRIORITY_MIN; p <= DSP_PRIORITY_MAX; p++)
    ret_stats->by_priority[p - DSP_PRIORITY_MIN] = dspq_waiting(&dsp->queued, p);
  ret_stats->capacity = dsp->capacity;
  ret_stats->running = dsp->running ? 1 : 0;
  pthread_mutex_unlock(&dsp->lock);
}

void dsp_set_spin_us(dsp_t *dsp, uint32_t spin_us) {
  if (spin_us > DSP_MAX_SPIN_US) spin_us = DSP_MAX_SPIN_US;
  atomic_store(&dsp->spin_ns, spin_us * 1000u);
}

void dsp_set_capacity(dsp_t *dsp, uint32_t capacity) {
  pthread_mutex_lock(&dsp->lock);
  dsp->capacity = capacity;
  pthread_mutex_unlock(&dsp->lock);
}

/* Queued jobs are answered SHUTTING_DOWN through the usual completion path. */
static void cancel_queued(dsp_t *dsp) {
  dsp_job_t *job;
  atomic_store(&dsp->nqueued, 0);
  while ((job = dspq_pop(&dsp->queued, 0)) != NULL) {
    job->outcome = DSP_SHUTDOWN;
    list_push(&dsp->done, job);
  }
  atomic_store(&dsp->ndone, dsp->done.count);
  uv_async_send(&dsp->done_async);
}

void dsp_drain(dsp_t *dsp) {
  pthread_mutex_lock(&dsp->lock);
  dsp->draining = true;
  cancel_queued(dsp);
  pthread_mutex_unlock(&dsp->lock);
}

bool dsp_idle(dsp_t *dsp) {
  bool idle;
  pthread_mutex_lock(&dsp->lock);
  idle = !dsp->queued.count && !dsp->running && !dsp->done.head;
  pthread_mutex_unlock(&dsp->lock);
  return idle;
}

void dsp_destroy(dsp_t *dsp) {
  pthread_mutex_lock(&dsp->lock);
  dsp->stopping = true;
  atomic_store(&dsp->stop_spin, true);
  cancel_queued(dsp);
  pthread_cond_signal(&dsp->wake);
  pthread_mutex_unlock(&dsp->lock);
  pthread_join(dsp->thread, NULL);
  complete_done(dsp); /* completions still pending */
  pthread_mutex_destroy(&dsp->lock);
  pthread_cond_destroy(&dsp->wake);
  dspq_free(&dsp->queued);
  uv_idle_stop(&dsp->poll_idle);
  close_handles(dsp);
}
