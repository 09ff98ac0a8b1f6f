/* SPDX-License-Identifier: Apache-2.0 */
/* touch — one task that writes one byte of its first argument: the least a
 * program can do with a dispatch's data, so the data path's cost is all
 * that is left (bench_datapath).  Built only with -DPTOD_BENCH=ON, into the
 * benchmarks' own programs directory.
 *
 * touch(data): data is any memory argument ({"data": bin, "dir": "inout"}
 * or a buffer) of at least 1 byte; its first byte is incremented. */
#include <pto/program.h>

static void touch_kernel(const pto_task_args_t *args) {
  unsigned char *p = pto_tensor_data(&args->tensor[0]);
  p[0]++;
}

static const pto_arg_spec_t touch_args[] = {
    {"data", "inout", 0, "any bytes (at least 1); the first is incremented"},
};

static int touch_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                             uint32_t nargs) {
  pto_task_args_t ta = {0};
  uint64_t shape[1] = {1};
  if (nargs != 1 || !pto_arg_is_memory(&args[0]) || args[0].bytes < 1)
    return api->fatal(orch, PTO_E_INVALID_ARGS,
                      "touch takes one memory argument of at least 1 byte (got %u arguments).",
                      nargs);
  ta.ntensors = 1;
  ta.tensor[0] = pto_arg_tensor(&args[0], PTO_U8, 1, shape);
  ta.dir[0] = PTO_INOUT;
  return api->submit(orch, touch_kernel, &ta);
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "touch",
    "touch(data): one task that increments the first byte of `data` (benchmarks only).",
    1,
    touch_args,
    touch_orchestrate,
};
