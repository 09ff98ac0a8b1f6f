#include "dispatch.h"

#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include <pto/errors.h>

typedef struct job_list {
  dsp_job_t *head, *tail;
  uint32_t count;
} job_list_t;

struct dsp {
  uv_loop_t *loop;
  uv_async_t done_async;
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t wake;
  job_list_t queued;  /* admitted, not started */
  job_list_t done;    /* finished, completion not yet run on the loop */
  uint32_t capacity;
  bool running;
  bool draining;
  bool stopping;
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

static dsp_job_t *list_pop(job_list_t *list) {
  dsp_job_t *job = list->head;
  if (!job) return NULL;
  list->head = job->next;
  if (!list->head) list->tail = NULL;
  list->count--;
  return job;
}

/* Device thread: finished jobs go back to the loop. */
static void finish(dsp_t *dsp, dsp_job_t *job) {
  job->finished_ns = dsp_now_ns();
  pthread_mutex_lock(&dsp->lock);
  list_push(&dsp->done, job);
  pthread_mutex_unlock(&dsp->lock);
  uv_async_send(&dsp->done_async);
}

static void *device_thread(void *arg) {
  dsp_t *dsp = arg;
  pthread_mutex_lock(&dsp->lock);
  for (;;) {
    dsp_job_t *job;
    while (!dsp->queued.head && !dsp->stopping) pthread_cond_wait(&dsp->wake, &dsp->lock);
    job = list_pop(&dsp->queued);
    if (!job) break; /* stopping, and nothing left */
    dsp->running = true;
    pthread_mutex_unlock(&dsp->lock);

    job->started_ns = dsp_now_ns();
    if (job->gone && atomic_load_explicit(job->gone, memory_order_acquire))
      job->outcome = DSP_CANCELLED;
    else if (job->deadline_ns && job->started_ns > job->deadline_ns)
      job->outcome = DSP_EXPIRED;
    else {
      job->outcome = DSP_RAN;
      job->run(job);
    }
    finish(dsp, job);

    pthread_mutex_lock(&dsp->lock);
    dsp->running = false;
  }
  pthread_mutex_unlock(&dsp->lock);
  return NULL;
}

static void on_done(uv_async_t *async) {
  dsp_t *dsp = async->data;
  dsp_job_t *job, *next;
  pthread_mutex_lock(&dsp->lock);
  job = list_take_all(&dsp->done);
  pthread_mutex_unlock(&dsp->lock);
  for (; job; job = next) {
    next = job->next;
    job->complete(job);
  }
}

static void free_on_close(uv_handle_t *handle) { free(handle->data); }

int dsp_create(uv_loop_t *loop, uint32_t capacity, dsp_t **ret_dsp) {
  dsp_t *dsp = calloc(1, sizeof(*dsp));
  int rc;
  if (!dsp) return -PTO_E_INTERNAL;
  dsp->loop = loop;
  dsp->capacity = capacity;
  pthread_mutex_init(&dsp->lock, NULL);
  pthread_cond_init(&dsp->wake, NULL);
  uv_async_init(loop, &dsp->done_async, on_done);
  dsp->done_async.data = dsp;
  rc = pthread_create(&dsp->thread, NULL, device_thread, dsp);
  if (rc != 0) {
    uv_close((uv_handle_t *)&dsp->done_async, free_on_close);
    return -PTO_E_INTERNAL;
  }
  *ret_dsp = dsp;
  return 0;
}

static int admit(dsp_t *dsp, dsp_job_t *job, bool internal) {
  int rc = 0;
  pthread_mutex_lock(&dsp->lock);
  if (dsp->draining || dsp->stopping)
    rc = -PTO_E_SHUTTING_DOWN;
  else if (!internal && dsp->queued.count >= dsp->capacity)
    rc = -PTO_E_BUSY;
  else {
    job->admitted_ns = dsp_now_ns();
    list_push(&dsp->queued, job);
    pthread_cond_signal(&dsp->wake);
  }
  pthread_mutex_unlock(&dsp->lock);
  return rc;
}

int dsp_submit(dsp_t *dsp, dsp_job_t *job) { return admit(dsp, job, false); }

int dsp_submit_internal(dsp_t *dsp, dsp_job_t *job) { return admit(dsp, job, true); }

void dsp_get_stats(dsp_t *dsp, dsp_stats_t *ret_stats) {
  pthread_mutex_lock(&dsp->lock);
  ret_stats->depth = dsp->queued.count;
  ret_stats->capacity = dsp->capacity;
  ret_stats->running = dsp->running ? 1 : 0;
  pthread_mutex_unlock(&dsp->lock);
}

void dsp_set_capacity(dsp_t *dsp, uint32_t capacity) {
  pthread_mutex_lock(&dsp->lock);
  dsp->capacity = capacity;
  pthread_mutex_unlock(&dsp->lock);
}

/* Queued jobs are answered SHUTTING_DOWN through the usual completion path. */
static void cancel_queued(dsp_t *dsp) {
  dsp_job_t *job = list_take_all(&dsp->queued), *next;
  for (; job; job = next) {
    next = job->next;
    job->outcome = DSP_SHUTDOWN;
    list_push(&dsp->done, job);
  }
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
  idle = !dsp->queued.head && !dsp->running && !dsp->done.head;
  pthread_mutex_unlock(&dsp->lock);
  return idle;
}

void dsp_destroy(dsp_t *dsp) {
  pthread_mutex_lock(&dsp->lock);
  dsp->stopping = true;
  cancel_queued(dsp);
  pthread_cond_signal(&dsp->wake);
  pthread_mutex_unlock(&dsp->lock);
  pthread_join(dsp->thread, NULL);
  on_done(&dsp->done_async); /* completions still pending */
  pthread_mutex_destroy(&dsp->lock);
  pthread_cond_destroy(&dsp->wake);
  uv_close((uv_handle_t *)&dsp->done_async, free_on_close);
}
