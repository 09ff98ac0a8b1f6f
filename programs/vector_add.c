/* SPDX-License-Identifier: Apache-2.0 */
/* vector_add — out = a + b over f32 vectors, one task per 4096-element tile
 * (the last tile may be shorter).
 *
 * `out` is written in place (OUT_EXISTING), so the program needs no heap;
 * the tiles are independent, so they run in parallel.  `out` may be exactly
 * `a` or `b` (an in-place add) but may not overlap them otherwise.
 */
#include "program_args.h"

#define VA_TILE 4096u

enum { VA_A, VA_B, VA_OUT, VA_NARGS };

static void vector_add_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *ta = &args->tensor[0], *tb = &args->tensor[1], *to = &args->tensor[2];
  const float *a = pto_tensor_data(ta);
  const float *b = pto_tensor_data(tb);
  float *out = pto_tensor_data(to);
  int64_t sa = ta->strides[0], sb = tb->strides[0], so = to->strides[0];
  uint64_t n = to->shape[0];
  if (sa == 1 && sb == 1 && so == 1) {
    for (uint64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
    return;
  }
  for (uint64_t i = 0; i < n; i++) {
    int64_t j = (int64_t)i;
    out[j * so] = a[j * sa] + b[j * sb];
  }
}

static const pto_arg_spec_t vector_add_args[] = {
    {"a", "in", 0, "f32[n]"},
    {"b", "in", 0, "f32[n], the size of a"},
    {"out", "out", 0, "f32[n], the size of a: receives a + b"},
};

static int vector_add_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch,
                                  const pto_arg_t *args, uint32_t nargs) {
  pa_ctx_t c = {api, orch, "vector_add", vector_add_args, VA_NARGS, args, nargs};
  uint64_t n;
  int rc = pa_check_args(&c);
  if (!rc) rc = pa_expect_bytes(&c, VA_B, args[VA_A].bytes, "the size of 'a'");
  if (!rc) rc = pa_expect_bytes(&c, VA_OUT, args[VA_A].bytes, "the size of 'a'");
  if (!rc) rc = pa_check_separate(&c, VA_OUT, VA_A, 1);
  if (!rc) rc = pa_check_separate(&c, VA_OUT, VA_B, 1);
  if (rc) return rc;

  n = args[VA_A].bytes / PA_F32_BYTES;
  for (uint64_t start = 0; start < n; start += VA_TILE) {
    uint64_t len = n - start < VA_TILE ? n - start : VA_TILE;
    pto_task_args_t ta;
    memset(&ta, 0, sizeof ta);
    ta.ntensors = 3;
    ta.tensor[0] = pa_view1(&args[VA_A], start, len);
    ta.dir[0] = PTO_IN;
    ta.tensor[1] = pa_view1(&args[VA_B], start, len);
    ta.dir[1] = PTO_IN;
    ta.tensor[2] = pa_view1(&args[VA_OUT], start, len);
    ta.dir[2] = PTO_OUT_EXISTING;
    rc = api->submit(orch, vector_add_kernel, &ta);
    if (rc) return rc;
  }
  return 0;
}

/* ceil(n / 4096) tasks, one add per element, a and b read and out written. */
PTO_PROGRAM_COST_EXPORT {
  uint64_t n;
  if (nargs != VA_NARGS || !pto_arg_is_memory(&args[VA_A])) return -1;
  n = args[VA_A].bytes / PA_F32_BYTES;
  if (args[VA_A].bytes > UINT64_MAX / 3) return -1;
  memset(ret_cost, 0, sizeof *ret_cost);
  ret_cost->tasks = (n + VA_TILE - 1) / VA_TILE;
  ret_cost->bytes = 3 * args[VA_A].bytes;
  ret_cost->flops = n;
  return 0;
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "vector_add",
    "vector_add(a, b, out): out = a + b over f32[n], one task per 4096-element tile "
    "(ceil(n / 4096) tasks on ring 0); no heap.",
    VA_NARGS,
    vector_add_args,
    vector_add_orchestrate,
};
