/* SPDX-License-Identifier: Apache-2.0 */
/* noop — `tasks` empty tasks, for measuring the runtime itself.
 *
 * The tasks are submitted inside `depth` nested scopes, so they land on ring
 * min(depth, 3); each kernel sleeps `task_us` microseconds (a sleep, not a
 * spin, so a long task costs no CPU).  No tensors, so no heap and no
 * dependencies: the ring need is `tasks` task slots on one ring (all of them
 * live until the innermost scope ends).
 */
#include <errno.h>
#include <time.h>

#include "program_args.h"

#define NOOP_MAX_TASKS 1000000000
#define NOOP_MAX_DEPTH 64
#define NOOP_MAX_TASK_US 10000000

static void noop_kernel(const pto_task_args_t *args) {
  int64_t us = args->scalar[0].i;
  struct timespec left;
  if (us <= 0) return;
  left.tv_sec = (time_t)(us / 1000000);
  left.tv_nsec = (long)(us % 1000000) * 1000;
  while (nanosleep(&left, &left) != 0 && errno == EINTR) {
  }
}

static const pto_arg_spec_t noop_args[] = {
    {"tasks", "int", 0, "int 0..1000000000: number of tasks"},
    {"depth", "int", 1, "int 0..64, default 0: nested scopes around the tasks (ring min(depth, 3))"},
    {"task_us", "int", 1, "int 0..10000000, default 0: microseconds each task sleeps"},
};

static int noop_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                            uint32_t nargs) {
  pa_ctx_t c = {api, orch, "noop", noop_args, 3, args, nargs};
  int64_t tasks = 0, depth = 0, task_us = 0;
  int rc = pa_check_args(&c);
  if (!rc) rc = pa_int(&c, 0, 0, NOOP_MAX_TASKS, 0, &tasks);
  if (!rc) rc = pa_int(&c, 1, 0, NOOP_MAX_DEPTH, 0, &depth);
  if (!rc) rc = pa_int(&c, 2, 0, NOOP_MAX_TASK_US, 0, &task_us);
  if (rc) return rc;

  for (int64_t d = 0; d < depth; d++) api->scope_begin(orch);
  for (int64_t t = 0; t < tasks; t++) {
    pto_task_args_t ta;
    memset(&ta, 0, sizeof ta);
    ta.nscalars = 1;
    ta.scalar[0].i = task_us;
    rc = api->submit(orch, noop_kernel, &ta);
    if (rc) return rc;
  }
  for (int64_t d = 0; d < depth; d++) api->scope_end(orch);
  return 0;
}

/* tasks tasks, each sleeping task_us: the same checks as the orchestration. */
PTO_PROGRAM_COST_EXPORT {
  int64_t tasks, task_us = 0;
  if (nargs < 1 || nargs > 3 || args[0].kind != PTO_ARG_INT) return -1;
  tasks = args[0].i;
  if (nargs == 3) {
    if (args[2].kind != PTO_ARG_INT) return -1;
    task_us = args[2].i;
  }
  if (tasks < 0 || tasks > NOOP_MAX_TASKS || task_us < 0 || task_us > NOOP_MAX_TASK_US) return -1;
  memset(ret_cost, 0, sizeof *ret_cost);
  ret_cost->tasks = (uint64_t)tasks;
  ret_cost->wait_us = (uint64_t)tasks * (uint64_t)task_us; /* <= 10^16 */
  return 0;
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "noop",
    "noop(tasks, depth = 0, task_us = 0): `tasks` tasks without tensors inside `depth` nested "
    "scopes (ring min(depth, 3)), each sleeping `task_us` microseconds. Needs `tasks` + 1 task "
    "slots on that ring and no heap.",
    3,
    noop_args,
    noop_orchestrate,
};
