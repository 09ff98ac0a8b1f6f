/* scheduler.h — scheduler and core threads, task completion and retirement.
 *
 * Cores take ready tasks from rt->ready and run their kernels (or skip
 * them once the run has failed).  Completing a task means waking its
 * waiting consumers (queuing those that became ready), releasing its pins
 * on its producers, and dropping its own completion pin.  When kernels are
 * long (the core's previous one ran 20 us or more) and more wait in
 * rt->ready, a core hands that work to the schedulers through rt->done and
 * goes back to kernels, and wakes another core for the queued ones; with
 * short kernels it completes the task itself and wakes nobody, which is
 * cheaper than any hand-off (a wake-up costs system calls and cold caches;
 * on a 2-vCPU machine more hot threads only take turns).  Whichever thread drops a
 * task's last pin marks it CONSUMED and advances its ring's last_alive
 * watermark over every consecutive CONSUMED task, moving the heap and
 * dependency-pool tails with it and waking the orchestrator if it waits.
 *
 * Idle threads spin for at most rt->spin_ns (one spinner per kind), then
 * sleep on their park until new work is published.
 */
#ifndef PTOD_RT_SCHEDULER_H
#define PTOD_RT_SCHEDULER_H

#include "rt_internal.h"

/* pthread entry point of a worker (arg: rt_worker_t *). */
void *sched_worker_main(void *arg);

/* Drop one pin of t (scope end, consumer completed, t completed). */
void sched_release(rt_runtime_t *rt, rt_task_t *t);

/* Queue a task whose producers have all completed, and wake a core. */
void sched_make_ready(rt_runtime_t *rt, rt_task_t *t);

#endif
