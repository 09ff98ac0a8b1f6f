/* SPDX-License-Identifier: Apache-2.0 */
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
 * sleep on their park until new work is published; scheduler 0 wakes at
 * least every quarter run_timeout to run the watchdog (rt_watchdog), since
 * rt_run's caller, the other watcher, may be busy in a kernel.
 */
#ifndef PTOD_RT_SCHEDULER_H
#define PTOD_RT_SCHEDULER_H

#include "rt_internal.h"

/* pthread entry point of a worker (arg: rt_worker_t *). */
void *sched_worker_main(void *arg);

/* A kernel shorter than this is worth running on the thread that wants
 * it done rather than handing it over (a wake-up, a few system calls and a
 * cache-cold thread cost 10-50 us on these virtual machines). */
#define RT_LONG_KERNEL_NS 20000u
/* A kernel shorter than this costs less than handing it to another thread
 * at all (a queue push and pop, its cache lines moving): the orchestrator
 * runs it in submit() when it is ready then (rt->tiny_kernel). */
#define RT_TINY_KERNEL_NS 2000u

/* A kernel ran for `ns`: keep rt->short_kernel (set under
 * RT_LONG_KERNEL_NS, cleared at 4x that) and rt->tiny_kernel (set under
 * RT_TINY_KERNEL_NS, cleared at RT_LONG_KERNEL_NS) up to date. */
void sched_note_kernel(rt_runtime_t *rt, pto_kernel_fn kernel, uint64_t ns);

/* Drop one pin of t (scope end, consumer completed, t completed). */
void sched_release(rt_runtime_t *rt, rt_task_t *t);

/* Queue a task whose producers have all completed, and wake a core. */
void sched_make_ready(rt_runtime_t *rt, rt_task_t *t);

/* rt_run's caller, waiting for its run: run one ready task's kernel (or
 * skip it once the run failed) and complete it, else complete one task a
 * core handed over.  Returns whether there was anything to do.  `h` counts
 * the kernels run; it is never counted as an available core, so the cores
 * are woken for work exactly as without it, except that one task made
 * ready by a completion here wakes nobody: the caller takes it next (the
 * orchestrator when it next waits for room, else once the orchestration
 * has returned), so a chain of dependent tasks stays on one thread.
 *
 * With short_only (the orchestrator, waiting for room in a ring), only a
 * task whose kernel is rt->short_kernel is run: a long kernel would hold
 * up the submissions the cores wait for, and the orchestrator's own
 * deadlock_timeout; any other task is handed back to the cores, and false
 * is returned. */
bool sched_help(rt_runtime_t *rt, rt_worker_t *h, bool short_only);

/* The orchestrator, in submit(): t is ready and its kernel is
 * rt->tiny_kernel: run it (or skip it once the run failed) and complete it
 * now, as `h`. */
void sched_run_inline(rt_runtime_t *rt, rt_worker_t *h, rt_task_t *t);

#endif
