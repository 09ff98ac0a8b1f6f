/* SPDX-License-Identifier: Apache-2.0 */
/* matmul — c = a · b for row-major f32 matrices a[m,k], b[k,n], c[m,n].
 *
 * c is cut into 64x64 tiles and k into 64-wide slices (edge tiles are
 * smaller).  Each c tile gets a chain of ceil(k / 64) tasks: the first writes
 * the tile (OUT_EXISTING), every later one adds its slice's product to it
 * (INOUT), so the runtime must run a chain in order while different tiles
 * run in parallel.  No heap.
 */
#include <stdio.h>

#include "program_args.h"

#define MM_TILE 64u

enum { MM_A, MM_B, MM_C, MM_M, MM_N, MM_K, MM_NARGS };

/* c_tile (+)= a_tile · b_tile: tensors a [rows, depth], b [depth, cols],
 * c [rows, cols]; the first task of a chain (c is OUT_EXISTING) starts from
 * zero. */
static void matmul_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *ta = &args->tensor[0], *tb = &args->tensor[1], *tc = &args->tensor[2];
  const float *a = pto_tensor_data(ta);
  const float *b = pto_tensor_data(tb);
  float *c = pto_tensor_data(tc);
  uint64_t rows = tc->shape[0], cols = tc->shape[1], depth = ta->shape[1];
  int first = args->dir[2] == PTO_OUT_EXISTING;
  for (uint64_t i = 0; i < rows; i++) {
    float *crow = c + (int64_t)i * tc->strides[0];
    const float *arow = a + (int64_t)i * ta->strides[0];
    if (first) {
      for (uint64_t j = 0; j < cols; j++) crow[(int64_t)j * tc->strides[1]] = 0.0f;
    }
    for (uint64_t p = 0; p < depth; p++)
      pa_axpy(crow, tc->strides[1], b + (int64_t)p * tb->strides[0], tb->strides[1],
              arow[(int64_t)p * ta->strides[1]], cols);
  }
}

static const pto_arg_spec_t matmul_args[] = {
    {"a", "in", 0, "f32[m,k], row-major"},
    {"b", "in", 0, "f32[k,n], row-major"},
    {"c", "out", 0, "f32[m,n], row-major: receives a · b"},
    {"m", "int", 0, "int > 0: rows of a and c"},
    {"n", "int", 0, "int > 0: columns of b and c"},
    {"k", "int", 0, "int > 0: columns of a, rows of b"},
};

/* rows*cols*4 bytes for argument `which`, or INVALID_ARGS on overflow. */
static int matmul_bytes(const pa_ctx_t *c, const char *which, const char *rname, uint64_t rows,
                        const char *cname, uint64_t cols, uint64_t *ret_bytes) {
  if (pa_mul3(rows, cols, PA_F32_BYTES, ret_bytes))
    return pa_fail(c,
                   "the size of '%s', %s*%s*4 = %" PRIu64 "*%" PRIu64
                   "*4 bytes, overflows 64 bits; use smaller sizes.",
                   which, rname, cname, rows, cols);
  return 0;
}

static int matmul_check_size(const pa_ctx_t *c, uint32_t i, const char *rname, uint64_t rows,
                             const char *cname, uint64_t cols) {
  char why[96];
  uint64_t bytes = 0;
  int rc = matmul_bytes(c, c->specs[i].name, rname, rows, cname, cols, &bytes);
  if (rc) return rc;
  snprintf(why, sizeof why, "%s*%s*4 = %" PRIu64 "*%" PRIu64 "*4", rname, cname, rows, cols);
  return pa_expect_bytes(c, i, bytes, why);
}

static int matmul_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                              uint32_t nargs) {
  pa_ctx_t c = {api, orch, "matmul", matmul_args, MM_NARGS, args, nargs};
  int64_t sm = 0, sn = 0, sk = 0;
  uint64_t m, n, k;
  int rc = pa_check_args(&c);
  if (!rc) rc = pa_int(&c, MM_M, 1, INT64_MAX, 0, &sm);
  if (!rc) rc = pa_int(&c, MM_N, 1, INT64_MAX, 0, &sn);
  if (!rc) rc = pa_int(&c, MM_K, 1, INT64_MAX, 0, &sk);
  if (rc) return rc;
  m = (uint64_t)sm;
  n = (uint64_t)sn;
  k = (uint64_t)sk;
  rc = matmul_check_size(&c, MM_A, "m", m, "k", k);
  if (!rc) rc = matmul_check_size(&c, MM_B, "k", k, "n", n);
  if (!rc) rc = matmul_check_size(&c, MM_C, "m", m, "n", n);
  if (!rc) rc = pa_check_separate(&c, MM_C, MM_A, 0);
  if (!rc) rc = pa_check_separate(&c, MM_C, MM_B, 0);
  if (rc) return rc;

  for (uint64_t i0 = 0; i0 < m; i0 += MM_TILE) {
    uint64_t rows = m - i0 < MM_TILE ? m - i0 : MM_TILE;
    for (uint64_t j0 = 0; j0 < n; j0 += MM_TILE) {
      uint64_t cols = n - j0 < MM_TILE ? n - j0 : MM_TILE;
      for (uint64_t p0 = 0; p0 < k; p0 += MM_TILE) {
        uint64_t depth = k - p0 < MM_TILE ? k - p0 : MM_TILE;
        pto_task_args_t ta;
        memset(&ta, 0, sizeof ta);
        ta.ntensors = 3;
        ta.tensor[0] = pa_view2(&args[MM_A], i0 * k + p0, rows, depth, k);
        ta.dir[0] = PTO_IN;
        ta.tensor[1] = pa_view2(&args[MM_B], p0 * n + j0, depth, cols, n);
        ta.dir[1] = PTO_IN;
        ta.tensor[2] = pa_view2(&args[MM_C], i0 * n + j0, rows, cols, n);
        ta.dir[2] = p0 == 0 ? PTO_OUT_EXISTING : PTO_INOUT;
        rc = api->submit(orch, matmul_kernel, &ta);
        if (rc) return rc;
      }
    }
  }
  return 0;
}

/* ceil(m/64)*ceil(n/64)*ceil(k/64) tasks; 2*m*n*k operations; each task
 * reads its a and b tiles and reads and writes its c tile. */
PTO_PROGRAM_COST_EXPORT {
  uint64_t m, n, k, tiles, flops, per_task = 4u * 4u * MM_TILE * MM_TILE;
  if (nargs != MM_NARGS) return -1;
  for (uint32_t i = MM_M; i <= MM_K; i++)
    if (args[i].kind != PTO_ARG_INT || args[i].i < 1) return -1;
  m = (uint64_t)args[MM_M].i;
  n = (uint64_t)args[MM_N].i;
  k = (uint64_t)args[MM_K].i;
  if (pa_mul3((m + MM_TILE - 1) / MM_TILE, (n + MM_TILE - 1) / MM_TILE,
              (k + MM_TILE - 1) / MM_TILE, &tiles) ||
      pa_mul3(m, n, k, &flops) || flops > UINT64_MAX / 2 || tiles > UINT64_MAX / per_task)
    return -1;
  memset(ret_cost, 0, sizeof *ret_cost);
  ret_cost->tasks = tiles;
  ret_cost->flops = 2 * flops;
  ret_cost->bytes = tiles * per_task;
  return 0;
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "matmul",
    "matmul(a, b, c, m, n, k): c = a · b in f32, 64x64 tiles of c with a chain of ceil(k / 64) "
    "accumulating (INOUT) tasks each, ceil(m/64)*ceil(n/64)*ceil(k/64) tasks on ring 0; no heap.",
    MM_NARGS,
    matmul_args,
    matmul_orchestrate,
};
