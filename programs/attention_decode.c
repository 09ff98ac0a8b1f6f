/* SPDX-License-Identifier: Apache-2.0 */
/* attention_decode — one decode step against a KV cache.
 *
 * Writes k and v (f32[H,D]) at position `pos` of the cache kv[2,T,H,D]
 * (kv[0,pos] and kv[1,pos]; T derived from kv's size), then for every head h
 * out[h] = softmax_j<=pos(q[h] · kv[0,j,h] / sqrt(D)) · kv[1,j,h].
 *
 * Two copy tasks write the cache row; H attention tasks read positions
 * 0..pos of their head, so the tensor map orders them after the copies.
 * The kernels use a running (online) softmax, so nothing is allocated: no
 * heap, H + 2 tasks on ring 0.
 */
#include <math.h>
#include <stdio.h>

#include "program_args.h"

enum { AD_Q, AD_K, AD_V, AD_KV, AD_OUT, AD_POS, AD_H, AD_D, AD_NARGS };

/* dst = src over two 1-D views. */
static void decode_copy_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *ts = &args->tensor[0], *td = &args->tensor[1];
  const float *src = pto_tensor_data(ts);
  float *dst = pto_tensor_data(td);
  uint64_t n = td->shape[0];
  if (ts->strides[0] == 1 && td->strides[0] == 1) {
    memcpy(dst, src, n * sizeof *dst);
    return;
  }
  for (uint64_t i = 0; i < n; i++) dst[(int64_t)i * td->strides[0]] = src[(int64_t)i * ts->strides[0]];
}

/* out [D] = softmax(keys [P,D] · q [D] / sqrt(D)) · values [P,D], one pass:
 * the running maximum rescales what was accumulated so far. */
static void decode_attend_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *tq = &args->tensor[0], *tk = &args->tensor[1], *tv = &args->tensor[2],
                     *to = &args->tensor[3];
  const float *q = pto_tensor_data(tq);
  const float *keys = pto_tensor_data(tk);
  const float *values = pto_tensor_data(tv);
  float *out = pto_tensor_data(to);
  uint64_t P = tk->shape[0], D = tk->shape[1];
  int64_t os = to->strides[0];
  float scale = 1.0f / sqrtf((float)D);
  float max = -INFINITY;
  double sum = 0.0;
  for (uint64_t d = 0; d < D; d++) out[(int64_t)d * os] = 0.0f;
  for (uint64_t j = 0; j < P; j++) {
    float s = scale * pa_dot(q, tq->strides[0], keys + (int64_t)j * tk->strides[0],
                             tk->strides[1], D);
    float w;
    if (s > max) {
      float r = expf(max - s);
      for (uint64_t d = 0; d < D; d++) out[(int64_t)d * os] *= r;
      sum *= r;
      max = s;
    }
    w = expf(s - max);
    sum += w;
    pa_axpy(out, os, values + (int64_t)j * tv->strides[0], tv->strides[1], w, D);
  }
  for (uint64_t d = 0; d < D; d++) out[(int64_t)d * os] = (float)(out[(int64_t)d * os] / sum);
}

static const pto_arg_spec_t decode_args[] = {
    {"q", "in", 0, "f32[H,D]: the new position's query"},
    {"k", "in", 0, "f32[H,D]: its key, written to kv[0, pos]"},
    {"v", "in", 0, "f32[H,D]: its value, written to kv[1, pos]"},
    {"kv", "buffer", 0, "f32[2,T,H,D] with T > pos: the KV cache (T = bytes / (2*H*D*4))"},
    {"out", "out", 0, "f32[H,D]: attention of q over cache positions 0..pos"},
    {"pos", "int", 0, "int 0..T-1: the position being decoded"},
    {"H", "int", 0, "int > 0: heads"},
    {"D", "int", 0, "int > 0: head dimension"},
};

static int decode_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                              uint32_t nargs) {
  pa_ctx_t c = {api, orch, "attention_decode", decode_args, AD_NARGS, args, nargs};
  int64_t spos = 0, sH = 0, sD = 0;
  uint64_t pos, H, D, HD, row_bytes, T;
  char why[96];
  int rc = pa_check_args(&c);
  if (!rc) rc = pa_int(&c, AD_POS, 0, INT64_MAX, 0, &spos);
  if (!rc) rc = pa_int(&c, AD_H, 1, INT64_MAX, 0, &sH);
  if (!rc) rc = pa_int(&c, AD_D, 1, INT64_MAX, 0, &sD);
  if (rc) return rc;
  pos = (uint64_t)spos;
  H = (uint64_t)sH;
  D = (uint64_t)sD;
  if (pa_mul3(H, D, 2 * PA_F32_BYTES, &row_bytes))
    return pa_fail(&c,
                   "the sizes H = %" PRIu64 ", D = %" PRIu64
                   " overflow 64 bits (in 2*H*D*4 bytes); use smaller sizes.",
                   H, D);
  row_bytes /= 2;
  HD = H * D;

  snprintf(why, sizeof why, "H*D*4 = %" PRIu64 "*%" PRIu64 "*4", H, D);
  for (uint32_t i = AD_Q; i <= AD_OUT && !rc; i++)
    if (i != AD_KV) rc = pa_expect_bytes(&c, i, row_bytes, why);
  if (rc) return rc;
  if (args[AD_KV].bytes % (2 * row_bytes) != 0)
    return pa_fail(&c,
                   "argument 'kv' has %" PRIu64 " bytes; expected a multiple of %" PRIu64
                   " (2*H*D*4 = 2*%" PRIu64 "*%" PRIu64 "*4, one position of keys and values).",
                   args[AD_KV].bytes, 2 * row_bytes, H, D);
  T = args[AD_KV].bytes / (2 * row_bytes);
  if (pos >= T)
    return pa_fail(&c,
                   "argument 'pos' is %" PRIu64 "; expected 0 to %" PRIu64
                   " (kv holds T = %" PRIu64 " positions).",
                   pos, T - 1, T);
  for (uint32_t i = AD_Q; i <= AD_V && !rc; i++) rc = pa_check_separate(&c, AD_KV, i, 0);
  for (uint32_t i = AD_Q; i <= AD_KV && !rc; i++) rc = pa_check_separate(&c, AD_OUT, i, 0);
  if (rc) return rc;

  for (uint32_t which = 0; which < 2; which++) {
    pto_task_args_t ta;
    memset(&ta, 0, sizeof ta);
    ta.ntensors = 2;
    ta.tensor[0] = pa_view1(&args[which ? AD_V : AD_K], 0, HD);
    ta.dir[0] = PTO_IN;
    ta.tensor[1] = pa_view1(&args[AD_KV], (which * T + pos) * HD, HD);
    ta.dir[1] = PTO_OUT_EXISTING;
    rc = api->submit(orch, decode_copy_kernel, &ta);
    if (rc) return rc;
  }
  for (uint64_t h = 0; h < H; h++) {
    pto_task_args_t ta;
    memset(&ta, 0, sizeof ta);
    ta.ntensors = 4;
    ta.tensor[0] = pa_view1(&args[AD_Q], h * D, D);
    ta.dir[0] = PTO_IN;
    ta.tensor[1] = pa_view2(&args[AD_KV], h * D, pos + 1, D, HD);
    ta.dir[1] = PTO_IN;
    ta.tensor[2] = pa_view2(&args[AD_KV], T * HD + h * D, pos + 1, D, HD);
    ta.dir[2] = PTO_IN;
    ta.tensor[3] = pa_view1(&args[AD_OUT], h * D, D);
    ta.dir[3] = PTO_OUT_EXISTING;
    rc = api->submit(orch, decode_attend_kernel, &ta);
    if (rc) return rc;
  }
  return 0;
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "attention_decode",
    "attention_decode(q, k, v, kv, out, pos, H, D): writes k and v (f32[H,D]) at position pos of "
    "the KV cache kv[2,T,H,D], then out = softmax(q·kᵀ/sqrt(D))·v per head over cache positions "
    "0..pos. H + 2 tasks on ring 0; no heap.",
    AD_NARGS,
    decode_args,
    decode_orchestrate,
};
