/* SPDX-License-Identifier: Apache-2.0 */
/* A valid program for the loader tests: one task writes 42 into its
 * buffer argument. */
#include <pto/program.h>

static void tiny_kernel(const pto_task_args_t *args) {
  *(int32_t *)pto_tensor_data(&args->tensor[0]) = 42;
}

static int tiny_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                            uint32_t nargs) {
  pto_task_args_t ta = {0};
  uint64_t shape[1] = {1};
  if (nargs != 1 || args[0].kind != PTO_ARG_BUFFER || args[0].bytes < 4)
    return api->fatal(orch, PTO_E_INVALID_ARGS, "rtplug_tiny: expected one buffer of 4 bytes.");
  ta.ntensors = 1;
  ta.tensor[0] = pto_arg_tensor(&args[0], PTO_I32, 1, shape);
  ta.dir[0] = PTO_OUT_EXISTING;
  return api->submit(orch, tiny_kernel, &ta);
}

static const pto_arg_spec_t tiny_args[] = {{"x", "buffer", 0, "i32[1]: receives 42"}};

PTO_PROGRAM_EXPORT = {PTO_PROGRAM_ABI_VERSION, "rtplug_tiny", "writes 42", 1, tiny_args,
                      tiny_orchestrate};
