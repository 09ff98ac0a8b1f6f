/* SPDX-License-Identifier: Apache-2.0 */
/* orch.h — the orchestrator: the API a program's orchestration calls.
 *
 * submit() validates a task's arguments, finds its producers in the tensor
 * map, reserves a task slot, its heap bytes and its dependency entries on
 * ring min(depth, 3) — together or not at all, blocking (never spinning a
 * core for long) while retirement makes room — wires the dependency edges,
 * registers the task's written tensors, and queues it once its producers
 * have completed.  A reservation that can never succeed is reported at
 * once: a request larger than the ring, a scope that already holds
 * window-1 tasks, or a ring whose oldest live task belongs to a scope that
 * is still open (nothing on the ring can retire before that scope ends).
 * Anything else gets deadlock_timeout of no reclamation before it is
 * reported.  The first error is latched for the whole run (rt_fail) and
 * every later submit returns it at once.
 *
 * Everything here runs on the orchestrator thread only: the thread that
 * called rt_run, for the length of the orchestration.  It takes no
 * hand-off to start a run, and a task that is ready when submitted wakes a
 * core only when another one is ready too: a lone ready task is run by this
 * thread itself, once the orchestration returns (rt_run helps with the
 * run's tasks while it waits) or while it waits for room in a ring.  So a
 * one-task run wakes no thread at all, and a chain of dependent tasks runs
 * on one thread instead of two taking turns on the same cache lines.  The
 * wake is owed, not dropped: it is paid before the orchestrator waits.  A
 * task ready at submit whose kernel has been seen to take under 2 us
 * (RT_TINY_KERNEL_NS), with nothing else queued, is not handed over at
 * all: submit() runs it before it returns (sched_run_inline).
 */
#ifndef PTOD_RT_ORCH_H
#define PTOD_RT_ORCH_H

#include "rt_internal.h"

/* The function table handed to programs. */
const pto_orch_api_t *orch_api(void);

/* Run rt->prog over rt->args for run `gen` on the calling thread, end
 * every scope it left open, and record the end in rt->orch_done_gen. */
void orch_run(rt_runtime_t *rt, uint64_t gen);

#endif
