/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch_queue.h — the order in which the device takes admitted jobs
 * (private to dispatch.c, which holds its lock around every call).
 *
 * Sixteen priority levels (-8 .. 7; lower runs sooner).  Each level is a
 * ring of lines, one line per (flow, priority) with jobs waiting: the
 * device takes the most urgent non-empty level (a bitmap of them), and in
 * it the line at the ring's head, in turns as dispatch.h describes.  A
 * line keeps its jobs in the order they were admitted.  Every waiting job
 * is also in one list by admission time, so that with aging on (dspq
 * aging_ns) a job that has waited that long moves, once, to the end of
 * its flow's -8 line.  Push, pop and remove are O(1) (aging: amortised);
 * finding a job by its tag scans its flow's waiting jobs from the oldest.
 */
#ifndef PTOD_DISPATCH_QUEUE_H
#define PTOD_DISPATCH_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "dispatch.h"

#define DSPQ_LEVELS (DSP_PRIORITY_MAX - DSP_PRIORITY_MIN + 1)

typedef struct dspq_line dspq_line_t;

/* One level: a ring of lines (doubly linked, so any may leave). */
typedef struct dspq_level {
  dspq_line_t *head, *tail;
  dspq_line_t *turn; /* the line whose turn it is (the head), or NULL */
  uint64_t turn_start_ns;
  uint32_t count; /* jobs in its lines */
} dspq_level_t;

typedef struct dspq {
  dspq_level_t levels[DSPQ_LEVELS];
  uint32_t nonempty; /* bit l: levels[l] has jobs */
  uint32_t count;    /* jobs in all levels */
  dsp_job_t *oldest, *newest; /* every waiting job, by admission (age_*) */
  uint64_t aging_ns; /* 0: off */
  dsp_flow_t *internal; /* the flow of jobs submitted without one */
} dspq_t;

/* 0, or -1 when out of memory. */
int dspq_init(dspq_t *q);
void dspq_free(dspq_t *q); /* after the last job was taken */

dsp_flow_t *dspq_flow_new(void);
/* The flow's owner let go: freed now if nothing of it waits, else when
 * its last job is taken. */
void dspq_flow_release(dsp_flow_t *flow);

/* Admit job (job->priority in range) at the end of its line. */
void dspq_push(dspq_t *q, dsp_job_t *job);
/* The next job at time `now` (turns and aging as above); NULL: none. */
dsp_job_t *dspq_pop(dspq_t *q, uint64_t now);
/* The oldest waiting job of `flow` (NULL: the internal one) whose tag is
 * `tag`, taken out of the queue; NULL when none waits. */
dsp_job_t *dspq_take_tagged(dspq_t *q, dsp_flow_t *flow, uint64_t tag);
/* Jobs waiting at priority p (after aging: an aged job counts as -8). */
uint32_t dspq_waiting(const dspq_t *q, int priority);

#endif
