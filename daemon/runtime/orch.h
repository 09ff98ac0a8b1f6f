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
 * Everything here runs on the orchestrator thread only.
 */
#ifndef PTOD_RT_ORCH_H
#define PTOD_RT_ORCH_H

#include "rt_internal.h"

/* The function table handed to programs. */
const pto_orch_api_t *orch_api(void);

/* pthread entry point of the orchestrator thread (arg: rt_runtime_t *):
 * waits for rt->run_gen to change, runs rt->prog, ends every open scope,
 * records it in rt->orch_done_gen; until rt->stop. */
void *orch_thread_main(void *arg);

#endif
