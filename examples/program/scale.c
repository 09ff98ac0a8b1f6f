/* SPDX-License-Identifier: Apache-2.0 */
/* scale — out = a * factor over f32 vectors: a device program built out of
 * tree, against the installed <pto/program.h> alone.
 *
 * Build it against an install (either way):
 *   cc -shared -fPIC -fvisibility=hidden $(pkg-config --cflags ptoprogram) scale.c -o scale.so
 *   cmake -S . -B build && cmake --build build        (find_package(ptod), ptod::program)
 * Serve it: put scale.so in a directory, name that directory in the config
 *   [device]
 *   programs = /srv/ptod/programs
 * and dispatch it:  ptoctl dispatch scale f32:1,2,3 out:12 2.5
 *
 * One task for the whole vector: out is written in place (OUT_EXISTING), so
 * no heap is needed.
 */
#include <stdint.h>
#include <string.h>

#include <pto/program.h>

enum { SC_A, SC_OUT, SC_FACTOR, SC_NARGS };

static void scale_kernel(const pto_task_args_t *args) {
  const float *a = pto_tensor_data(&args->tensor[0]);
  float *out = pto_tensor_data(&args->tensor[1]);
  float factor = (float)args->scalar[0].f;
  for (uint64_t i = 0; i < args->tensor[1].shape[0]; i++) out[i] = a[i] * factor;
}

static const pto_arg_spec_t scale_args[] = {
    {"a", "in", 0, "f32[n]"},
    {"out", "out", 0, "f32[n], the size of a: receives a * factor"},
    {"factor", "float", 0, "the factor"},
};

static pto_tensor_t view(const pto_arg_t *arg, uint64_t n) {
  uint64_t shape[1] = {n};
  return pto_tensor_view(arg->base, arg->base_bytes, PTO_F32, arg->offset / 4, 1, shape);
}

static int scale_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                             uint32_t nargs) {
  if (nargs != SC_NARGS)
    return api->fatal(orch, PTO_E_INVALID_ARGS, "scale: expected 3 arguments (a, out, factor); "
                      "got %u.", nargs);
  if (!pto_arg_is_memory(&args[SC_A]) || !pto_arg_is_memory(&args[SC_OUT]) ||
      args[SC_FACTOR].kind != PTO_ARG_FLOAT)
    return api->fatal(orch, PTO_E_INVALID_ARGS,
                      "scale: give an input, an output and a float (a, out, factor).");
  if (args[SC_A].bytes % 4 || args[SC_OUT].bytes != args[SC_A].bytes ||
      !pto_arg_aligned(&args[SC_A], PTO_F32) || !pto_arg_aligned(&args[SC_OUT], PTO_F32))
    return api->fatal(orch, PTO_E_INVALID_ARGS,
                      "scale: a must be f32[n] and out the same size; got %llu and %llu bytes.",
                      (unsigned long long)args[SC_A].bytes, (unsigned long long)args[SC_OUT].bytes);
  pto_task_args_t ta;
  memset(&ta, 0, sizeof ta);
  uint64_t n = args[SC_A].bytes / 4;
  ta.ntensors = 2;
  ta.tensor[0] = view(&args[SC_A], n);
  ta.dir[0] = PTO_IN;
  ta.tensor[1] = view(&args[SC_OUT], n);
  ta.dir[1] = PTO_OUT_EXISTING;
  ta.nscalars = 1;
  ta.scalar[0].f = args[SC_FACTOR].f;
  return api->submit(orch, scale_kernel, &ta);
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "scale",
    "scale(a, out, factor): out = a * factor over f32[n], one task on ring 0; no heap.",
    SC_NARGS,
    scale_args,
    scale_orchestrate,
};
