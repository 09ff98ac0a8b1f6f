/* SPDX-License-Identifier: Apache-2.0 */
#include "dispatch_queue.h"

#include <stdlib.h>

/* A turn: one job, and more of the line's jobs while they start within
 * this time of the turn's first (dispatch.h).  One job per turn cost ~10 %
 * of 16 pipelining clients' no-op throughput (BENCHMARKS.md). */
#define DSPQ_TURN_NS 50000u

/* One (flow, priority) stream: its jobs in admission order (next/prev),
 * in its level's ring while it has some. */
struct dspq_line {
  dsp_job_t *head, *tail;
  dspq_line_t *rr_next, *rr_prev;
  bool in_ring;
};

struct dsp_flow {
  dspq_line_t lines[DSPQ_LEVELS];
  uint32_t waiting;
  bool released; /* its owner let go: freed once its last job is taken */
};

static unsigned level_of(int priority) { return (unsigned)(priority - DSP_PRIORITY_MIN); }

int dspq_init(dspq_t *q) {
  *q = (dspq_t){0};
  q->internal = dspq_flow_new();
  return q->internal ? 0 : -1;
}

void dspq_free(dspq_t *q) {
  free(q->internal);
  q->internal = NULL;
}

dsp_flow_t *dspq_flow_new(void) { return calloc(1, sizeof(dsp_flow_t)); }

void dspq_flow_release(dsp_flow_t *flow) {
  flow->released = true;
  if (flow->waiting == 0) free(flow);
}

static dsp_flow_t *flow_of(dspq_t *q, const dsp_job_t *job) {
  return job->flow ? job->flow : q->internal;
}

static void ring_append(dspq_level_t *lv, dspq_line_t *line) {
  line->in_ring = true;
  line->rr_next = NULL;
  line->rr_prev = lv->tail;
  if (lv->tail)
    lv->tail->rr_next = line;
  else
    lv->head = line;
  lv->tail = line;
}

static void ring_unlink(dspq_level_t *lv, dspq_line_t *line) {
  if (line->rr_prev)
    line->rr_prev->rr_next = line->rr_next;
  else
    lv->head = line->rr_next;
  if (line->rr_next)
    line->rr_next->rr_prev = line->rr_prev;
  else
    lv->tail = line->rr_prev;
  line->rr_next = line->rr_prev = NULL;
  line->in_ring = false;
  if (lv->turn == line) lv->turn = NULL;
}

/* Put job at the end of its line at job->level (its flow's count and the
 * age list are the caller's). */
static void line_append(dspq_t *q, dsp_flow_t *f, dsp_job_t *job) {
  dspq_level_t *lv = &q->levels[job->level];
  dspq_line_t *line = &f->lines[job->level];
  job->next = NULL;
  job->prev = line->tail;
  if (line->tail)
    line->tail->next = job;
  else
    line->head = job;
  line->tail = job;
  if (!line->in_ring) ring_append(lv, line);
  lv->count++;
  q->nonempty |= 1u << job->level;
}

static void line_unlink(dspq_t *q, dsp_flow_t *f, dsp_job_t *job) {
  dspq_level_t *lv = &q->levels[job->level];
  dspq_line_t *line = &f->lines[job->level];
  if (job->prev)
    job->prev->next = job->next;
  else
    line->head = job->next;
  if (job->next)
    job->next->prev = job->prev;
  else
    line->tail = job->prev;
  job->next = job->prev = NULL;
  if (!line->head) ring_unlink(lv, line);
  if (--lv->count == 0) q->nonempty &= ~(1u << job->level);
}

static void age_unlink(dspq_t *q, dsp_job_t *job) {
  if (job->age_prev)
    job->age_prev->age_next = job->age_next;
  else
    q->oldest = job->age_next;
  if (job->age_next)
    job->age_next->age_prev = job->age_prev;
  else
    q->newest = job->age_prev;
  job->age_next = job->age_prev = NULL;
}

void dspq_push(dspq_t *q, dsp_job_t *job) {
  dsp_flow_t *f = flow_of(q, job);
  job->level = (uint8_t)level_of(job->priority);
  line_append(q, f, job);
  f->waiting++;
  q->count++;
  job->age_next = NULL;
  job->age_prev = q->newest;
  if (q->newest)
    q->newest->age_next = job;
  else
    q->oldest = job;
  q->newest = job;
}

/* Take job out of the queue; its flow goes if released and now empty. */
static void take(dspq_t *q, dsp_job_t *job) {
  dsp_flow_t *f = flow_of(q, job);
  line_unlink(q, f, job);
  age_unlink(q, job);
  q->count--;
  if (--f->waiting == 0 && f->released) free(f);
}

/* Jobs that have waited aging_ns move to the end of their flow's most
 * urgent line, oldest first; each leaves the age list then, so each moves
 * once.  A clock of 0 (draining) ages nothing. */
static void age(dspq_t *q, uint64_t now) {
  dsp_job_t *job;
  while ((job = q->oldest) != NULL && job->admitted_ns + q->aging_ns <= now) {
    age_unlink(q, job);
    if (job->level != 0) {
      dsp_flow_t *f = flow_of(q, job);
      line_unlink(q, f, job);
      job->level = 0;
      line_append(q, f, job);
    }
  }
}

dsp_job_t *dspq_pop(dspq_t *q, uint64_t now) {
  dspq_level_t *lv;
  dspq_line_t *line;
  dsp_job_t *job;
  if (q->aging_ns) age(q, now);
  if (!q->nonempty) return NULL;
  lv = &q->levels[__builtin_ctz(q->nonempty)];
  line = lv->head;
  if (line == lv->turn && now - lv->turn_start_ns >= DSPQ_TURN_NS && line->rr_next) {
    ring_unlink(lv, line);
    ring_append(lv, line);
    line = lv->head;
  }
  if (line != lv->turn) {
    lv->turn = line;
    lv->turn_start_ns = now;
  }
  job = line->head;
  take(q, job);
  return job;
}

dsp_job_t *dspq_take_tagged(dspq_t *q, dsp_flow_t *flow, uint64_t tag) {
  dsp_flow_t *f = flow ? flow : q->internal;
  dsp_job_t *found = NULL;
  if (f->waiting == 0) return NULL;
  /* Lines are in admission order: the first match in each is its oldest. */
  for (unsigned l = 0; l < DSPQ_LEVELS; l++) {
    dsp_job_t *job = f->lines[l].head;
    while (job && job->tag != tag) job = job->next;
    if (job && (!found || job->admitted_ns < found->admitted_ns)) found = job;
  }
  if (found) take(q, found);
  return found;
}

uint32_t dspq_waiting(const dspq_t *q, int priority) {
  return q->levels[level_of(priority)].count;
}
