/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch.h — the admission queue and the device thread.
 *
 * Work that touches the device (dispatches, buffer memory, arena builds)
 * runs on one device thread.  The loop admits a job into its flow (one per
 * client connection: dsp_flow_create) at its priority (-8 .. 7, lower runs
 * sooner).  The device thread takes the most urgent waiting job first; at
 * one priority it takes the flows round-robin, one job from each in turn,
 * and each flow's jobs of that priority in their order (one stream per
 * (flow, priority): dispatch_queue.h).  The job's completion runs back on
 * the loop (uv_async).  So a client that pipelines hundreds of jobs delays
 * another client's next job of its priority by one job per busy flow, not
 * by its whole pipeline; a running job is never pre-empted.  With aging
 * (dsp_set_aging_us) a job that has waited that long runs as if -8.  The
 * loop never waits on a run; the device thread never touches a socket.
 *
 * A waiting job can be taken back (dsp_withdraw): it completes at once,
 * on the loop, with DSP_WITHDRAWN, never run.
 *
 * Before running a job the device thread drops it if its client is gone
 * (the job is completed with DSP_CANCELLED and never run) or if its
 * deadline passed before it could start (DSP_EXPIRED).  Draining completes
 * every queued job with DSP_SHUTDOWN and lets the running one finish.
 *
 * Hand-offs, both ways, are bounded spins before sleeps: the device thread
 * looks for the next job for a spin window (default 50 us,
 * dsp_set_spin_us) after finishing one before it sleeps on its condition
 * variable, and while jobs are in flight the loop polls (a uv_idle handle:
 * epoll with no timeout, yielding the CPU each turn) for the same window
 * after the last admission or completion, picking completions up without
 * the uv_async wake-up.  A thread woken from sleep costs tens of
 * microseconds on a virtual machine; this keeps back-to-back dispatches
 * from paying it, and an idle daemon still uses no CPU.
 *
 * No hand-off where none is needed: a job whose submitter says it is
 * short (is_short: its time is bounded, before it runs, within a budget of
 * about 100 us, from what the daemon knows -- never predicted from past
 * runs, which a client can follow with a slow one: jobs.h), submitted when
 * nothing is queued, running or waiting for its completion, runs on the
 * loop inside dsp_submit, completion included: after a gap, and back to
 * back (a client that waits for each answer), where the hand-offs, or the
 * two threads spinning for each other, cost more than such a job.  At most
 * one a turn of the loop, and never from inside a completion: requests
 * read together (a pipelining client, several clients) go to the device
 * thread after the first, so the loop reads on while the device runs them
 * (issue 22; dispatch.c's take_device has the measurements).
 *
 * Ownership: the DEVICE TOKEN.  Whoever holds it owns the device context
 * (ptod_t.device: the runtime, buffers, staging, ...) and is the only one
 * to call a job's is_short or run.  The device thread holds it, except
 * while the loop has taken it (dsp.loop_holds_device): only under the
 * dispatcher's lock, only when nothing is queued or running (the device
 * thread is between jobs and takes none while the loop holds it:
 * job_for_device), and the loop gives it back under the same lock before
 * the job's completion runs.  The lock orders each hand-over, so what one
 * holder wrote the next one sees.  No job runs on both threads at once.
 */
#ifndef PTOD_DISPATCH_H
#define PTOD_DISPATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

typedef enum dsp_outcome {
  DSP_RAN = 0,       /* run() was called */
  DSP_CANCELLED = 1, /* the client went away before it started */
  DSP_EXPIRED = 2,   /* its deadline passed before it started */
  DSP_SHUTDOWN = 3,  /* the daemon is draining; never run */
  DSP_WITHDRAWN = 4, /* taken back while waiting (dsp_withdraw); never run */
} dsp_outcome_t;

#define DSP_PRIORITY_MIN (-8)
#define DSP_PRIORITY_MAX 7

typedef struct dsp_job dsp_job_t;
typedef struct dsp_flow dsp_flow_t;
struct dsp_job {
  /* Set by the submitter: */
  void (*run)(dsp_job_t *job);      /* the device token's holder */
  void (*complete)(dsp_job_t *job); /* loop thread; the job may be freed here */
  /* The device token's holder (the loop, before run): whether run() is
   * bounded within the loop's budget before it starts, from what the
   * daemon knows (jobs.h).  NULL: never on the loop. */
  bool (*is_short)(dsp_job_t *job);
  atomic_bool *gone;                /* client gone flag, or NULL for internal jobs */
  uint64_t deadline_ns;             /* CLOCK_MONOTONIC; 0: none */
  dsp_flow_t *flow;                 /* its client's flow; NULL: the internal one */
  int8_t priority;                  /* DSP_PRIORITY_MIN .. MAX; 0 the default */
  uint64_t tag;                     /* the submitter's name for it (dsp_withdraw) */
  /* Set by the dispatcher: */
  dsp_outcome_t outcome;
  uint64_t admitted_ns;
  uint64_t started_ns;  /* when run() began (DSP_RAN) */
  uint64_t finished_ns;
  dsp_job_t *next, *prev;         /* its line while waiting; next: the done list */
  dsp_job_t *age_next, *age_prev; /* the waiting jobs by age (dispatch_queue.h) */
  uint8_t level;                  /* the level it waits at (priority, or -8 aged) */
};

typedef struct dsp dsp_t;

/* Start the device thread; returns once its warm-up is done.  `capacity`
 * bounds the jobs waiting, all flows together (not the running one);
 * UINT32_MAX: no bound. */
int dsp_create(uv_loop_t *loop, uint32_t capacity, dsp_t **ret_dsp);

/* Admit a job, or run it on the loop now (its completion called before
 * this returns) when it is short and the device is free (above).  Returns 0,
 * -PTO_E_BUSY when the queue is full, or
 * -PTO_E_SHUTTING_DOWN when draining; on error the job is untouched and its
 * callbacks are never called. */
int dsp_submit(dsp_t *dsp, dsp_job_t *job);

/* Admit an internal job (prewarm after a reload) even when the queue is
 * full; still refused while draining. */
int dsp_submit_internal(dsp_t *dsp, dsp_job_t *job);

/* A flow of jobs for one client; NULL when out of memory.  The owner
 * releases it when the client is gone: it is freed once its queued jobs
 * have been taken (they still complete, with DSP_CANCELLED where their
 * gone flag says so).  dsp NULL: the dispatcher was destroyed, and the
 * flow is freed at once.  Loop thread. */
dsp_flow_t *dsp_flow_create(dsp_t *dsp);
void dsp_flow_release(dsp_t *dsp, dsp_flow_t *flow);

/* Take back the oldest waiting job of `flow` whose tag is `tag`: it
 * completes now (its complete() runs before this returns) with
 * DSP_WITHDRAWN.  Returns whether one was waiting; a running or finished
 * job is not touched.  Loop thread. */
bool dsp_withdraw(dsp_t *dsp, dsp_flow_t *flow, uint64_t tag);

/* A job that has waited aging_us runs as if at DSP_PRIORITY_MIN; 0: never.
 * Any thread; applies to the jobs already waiting too. */
void dsp_set_aging_us(dsp_t *dsp, uint64_t aging_us);

typedef struct dsp_stats {
  uint32_t depth;    /* jobs waiting */
  uint32_t by_priority[DSP_PRIORITY_MAX - DSP_PRIORITY_MIN + 1]; /* waiting, from -8 */
  uint32_t capacity;
  uint32_t running;  /* 0 or 1 */
} dsp_stats_t;

void dsp_get_stats(dsp_t *dsp, dsp_stats_t *ret_stats);

/* Have the loop call begin(data) before and end(data) after each batch of
 * completions (every job found finished at once), e.g. to write the
 * responses they send together (srv_cork).  Loop thread; NULL: none. */
void dsp_set_batch_hooks(dsp_t *dsp, void (*begin)(void *data), void (*end)(void *data),
                         void *data);
void dsp_set_capacity(dsp_t *dsp, uint32_t capacity);

/* The spin window of both hand-offs, in us (at most DSP_MAX_SPIN_US; 0: no
 * spinning: every hand-off to a thread that has gone idle is a wake-up).
 * Any thread; takes effect at the next hand-off.  Default 50. */
#define DSP_MAX_SPIN_US 10000u
void dsp_set_spin_us(dsp_t *dsp, uint32_t spin_us);

/* Stop admitting; queued jobs complete with DSP_SHUTDOWN (their completions
 * run on the loop as usual). */
void dsp_drain(dsp_t *dsp);

/* Whether nothing is queued or running (a drain is over). */
bool dsp_idle(dsp_t *dsp);

/* Stop the device thread (after the running job, if any) and free.  Jobs
 * still queued complete with DSP_SHUTDOWN first.  Call on the loop thread,
 * then run the loop once more so the async handle closes. */
void dsp_destroy(dsp_t *dsp);

uint64_t dsp_now_ns(void);

#endif
