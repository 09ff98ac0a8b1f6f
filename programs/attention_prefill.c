/* SPDX-License-Identifier: Apache-2.0 */
/* attention_prefill — causal self-attention over a whole prompt, filling the
 * KV cache.
 *
 * out[i,h] = softmax_j<=i(q[i,h] · k[j,h] / sqrt(D)) · v[j,h] for every
 * position i < S and head h < H (f32, row-major [S,H,D]); k and v are also
 * copied into kv[0, 0:S] and kv[1, 0:S] of the cache kv[2,T,H,D] (T >= S,
 * derived from kv's size).
 *
 * Per head: a scores task writes q·kᵀ/sqrt(D) (zero above the diagonal) into
 * a new [S,S] f32 tensor (PTO_OUT), a softmax task normalises it in place
 * (INOUT), and a task multiplies it with v into out (OUT_EXISTING).  Two more
 * tasks copy k and v into the cache.  Everything is submitted at top level,
 * on purpose: the H score tensors stay live until the orchestration returns,
 * so ring 0 needs H * roundup(S*S*4, 1024) bytes of heap at once — H*S*S*4
 * when S*S*4 is a multiple of 1024 — the shape of a real prefill whose
 * intermediates outgrow the ring heap.
 */
#include <math.h>
#include <stdio.h>

#include "program_args.h"

enum { AP_Q, AP_K, AP_V, AP_KV, AP_OUT, AP_S, AP_H, AP_D, AP_NARGS };

/* scores [S,S] = q [S,D] · k [S,D]ᵀ / sqrt(D) on and below the diagonal, 0 above. */
static void prefill_scores_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *tq = &args->tensor[0], *tk = &args->tensor[1], *ts = &args->tensor[2];
  const float *q = pto_tensor_data(tq);
  const float *k = pto_tensor_data(tk);
  float *s = pto_tensor_data(ts);
  uint64_t S = ts->shape[0], D = tq->shape[1];
  float scale = 1.0f / sqrtf((float)D);
  for (uint64_t i = 0; i < S; i++) {
    float *row = s + (int64_t)i * ts->strides[0];
    const float *qi = q + (int64_t)i * tq->strides[0];
    for (uint64_t j = 0; j < S; j++) {
      float v = 0.0f;
      if (j <= i) v = scale * pa_dot(qi, tq->strides[1], k + (int64_t)j * tk->strides[0],
                                     tk->strides[1], D);
      row[(int64_t)j * ts->strides[1]] = v;
    }
  }
}

/* Row-wise softmax over the causal part (j <= i) of scores, in place. */
static void prefill_softmax_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *ts = &args->tensor[0];
  float *s = pto_tensor_data(ts);
  uint64_t S = ts->shape[0];
  int64_t cs = ts->strides[1];
  for (uint64_t i = 0; i < S; i++) {
    float *row = s + (int64_t)i * ts->strides[0];
    float max = row[0];
    double sum = 0.0;
    for (uint64_t j = 1; j <= i; j++) max = fmaxf(max, row[(int64_t)j * cs]);
    for (uint64_t j = 0; j <= i; j++) {
      float e = expf(row[(int64_t)j * cs] - max);
      row[(int64_t)j * cs] = e;
      sum += e;
    }
    for (uint64_t j = 0; j <= i; j++) row[(int64_t)j * cs] = (float)(row[(int64_t)j * cs] / sum);
  }
}

/* out [S,D] = probs [S,S] · v [S,D], using only j <= i. */
static void prefill_pv_kernel(const pto_task_args_t *args) {
  const pto_tensor_t *tp = &args->tensor[0], *tv = &args->tensor[1], *to = &args->tensor[2];
  const float *p = pto_tensor_data(tp);
  const float *v = pto_tensor_data(tv);
  float *out = pto_tensor_data(to);
  uint64_t S = tp->shape[0], D = tv->shape[1];
  for (uint64_t i = 0; i < S; i++) {
    float *oi = out + (int64_t)i * to->strides[0];
    const float *pi = p + (int64_t)i * tp->strides[0];
    for (uint64_t d = 0; d < D; d++) oi[(int64_t)d * to->strides[1]] = 0.0f;
    for (uint64_t j = 0; j <= i; j++)
      pa_axpy(oi, to->strides[1], v + (int64_t)j * tv->strides[0], tv->strides[1],
              pi[(int64_t)j * tp->strides[1]], D);
  }
}

/* dst = src, element by element over two 1-D views. */
static void prefill_copy_kernel(const pto_task_args_t *args) {
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

static const pto_arg_spec_t prefill_args[] = {
    {"q", "in", 0, "f32[S,H,D]: queries"},
    {"k", "in", 0, "f32[S,H,D]: keys, also copied into kv[0, 0:S]"},
    {"v", "in", 0, "f32[S,H,D]: values, also copied into kv[1, 0:S]"},
    {"kv", "buffer", 0, "f32[2,T,H,D] with T >= S: the KV cache (T = bytes / (2*H*D*4))"},
    {"out", "out", 0, "f32[S,H,D]: causal softmax(q·kᵀ/sqrt(D))·v per head"},
    {"S", "int", 0, "int > 0: sequence length; ring 0 needs H*roundup(S*S*4, 1024) heap bytes"},
    {"H", "int", 0, "int > 0: heads"},
    {"D", "int", 0, "int > 0: head dimension"},
};

/* Copy K (which 0) or V (which 1), `n` floats, into the cache at `at`. */
static int prefill_submit_copy(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                               uint32_t which, uint64_t n, uint64_t at) {
  pto_task_args_t ta;
  memset(&ta, 0, sizeof ta);
  ta.ntensors = 2;
  ta.tensor[0] = pa_view1(&args[which ? AP_V : AP_K], 0, n);
  ta.dir[0] = PTO_IN;
  ta.tensor[1] = pa_view1(&args[AP_KV], at, n);
  ta.dir[1] = PTO_OUT_EXISTING;
  return api->submit(orch, prefill_copy_kernel, &ta);
}

/* Head h: scores = Q K^T, softmax over them, out = scores V. */
static int prefill_submit_head(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                               uint64_t h, uint64_t S, uint64_t D, uint64_t HD) {
  pto_tensor_t scores;
  pto_task_args_t ta;
  int rc;

  memset(&ta, 0, sizeof ta);
  ta.ntensors = 3;
  ta.tensor[0] = pa_view2(&args[AP_Q], h * D, S, D, HD);
  ta.dir[0] = PTO_IN;
  ta.tensor[1] = pa_view2(&args[AP_K], h * D, S, D, HD);
  ta.dir[1] = PTO_IN;
  ta.tensor[2] = pa_out2(S, S);
  ta.dir[2] = PTO_OUT;
  rc = api->submit(orch, prefill_scores_kernel, &ta);
  if (rc) return rc;
  scores = ta.tensor[2];

  memset(&ta, 0, sizeof ta);
  ta.ntensors = 1;
  ta.tensor[0] = scores;
  ta.dir[0] = PTO_INOUT;
  rc = api->submit(orch, prefill_softmax_kernel, &ta);
  if (rc) return rc;

  memset(&ta, 0, sizeof ta);
  ta.ntensors = 3;
  ta.tensor[0] = scores;
  ta.dir[0] = PTO_IN;
  ta.tensor[1] = pa_view2(&args[AP_V], h * D, S, D, HD);
  ta.dir[1] = PTO_IN;
  ta.tensor[2] = pa_view2(&args[AP_OUT], h * D, S, D, HD);
  ta.dir[2] = PTO_OUT_EXISTING;
  return api->submit(orch, prefill_pv_kernel, &ta);
}

static int prefill_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                               uint32_t nargs) {
  pa_ctx_t c = {api, orch, "attention_prefill", prefill_args, AP_NARGS, args, nargs};
  int64_t sS = 0, sH = 0, sD = 0;
  uint64_t S, H, D, HD, row_bytes, seq_bytes, score_bytes, T;
  char why[128];
  int rc = pa_check_args(&c);
  if (!rc) rc = pa_int(&c, AP_S, 1, INT64_MAX, 0, &sS);
  if (!rc) rc = pa_int(&c, AP_H, 1, INT64_MAX, 0, &sH);
  if (!rc) rc = pa_int(&c, AP_D, 1, INT64_MAX, 0, &sD);
  if (rc) return rc;
  S = (uint64_t)sS;
  H = (uint64_t)sH;
  D = (uint64_t)sD;
  if (pa_mul3(H, D, PA_F32_BYTES, &row_bytes) || pa_mul3(S, row_bytes, 2, &seq_bytes) ||
      pa_mul3(S, S, PA_F32_BYTES, &score_bytes))
    return pa_fail(&c,
                   "the sizes S = %" PRIu64 ", H = %" PRIu64 ", D = %" PRIu64
                   " overflow 64 bits (in S*H*D*4*2 or S*S*4 bytes); use smaller sizes.",
                   S, H, D);
  seq_bytes /= 2;
  HD = H * D;

  snprintf(why, sizeof why, "S*H*D*4 = %" PRIu64 "*%" PRIu64 "*%" PRIu64 "*4", S, H, D);
  for (uint32_t i = AP_Q; i <= AP_OUT && !rc; i++)
    if (i != AP_KV) rc = pa_expect_bytes(&c, i, seq_bytes, why);
  if (rc) return rc;
  if (args[AP_KV].bytes % (2 * row_bytes) != 0)
    return pa_fail(&c,
                   "argument 'kv' has %" PRIu64 " bytes; expected a multiple of %" PRIu64
                   " (2*H*D*4 = 2*%" PRIu64 "*%" PRIu64 "*4, one position of keys and values).",
                   args[AP_KV].bytes, 2 * row_bytes, H, D);
  T = args[AP_KV].bytes / (2 * row_bytes);
  if (T < S)
    return pa_fail(&c,
                   "argument 'kv' holds T = %" PRIu64 " positions; expected at least S = %" PRIu64
                   " (give it at least %" PRIu64 " bytes).",
                   T, S, 2 * seq_bytes);
  for (uint32_t i = AP_Q; i <= AP_V && !rc; i++) rc = pa_check_separate(&c, AP_KV, i, 0);
  for (uint32_t i = AP_Q; i <= AP_KV && !rc; i++) rc = pa_check_separate(&c, AP_OUT, i, 0);
  if (rc) return rc;

  /* The cache copies first: independent of the heads, they run alongside. */
  for (uint32_t which = 0; which < 2 && !rc; which++)
    rc = prefill_submit_copy(api, orch, args, which, S * HD, which * T * HD);
  for (uint64_t h = 0; h < H && !rc; h++) rc = prefill_submit_head(api, orch, args, h, S, D, HD);
  return rc;
}

PTO_PROGRAM_EXPORT = {
    PTO_PROGRAM_ABI_VERSION,
    "attention_prefill",
    "attention_prefill(q, k, v, kv, out, S, H, D): causal softmax(q·kᵀ/sqrt(D))·v per head over "
    "f32[S,H,D], copying k and v into the KV cache kv[2,T,H,D] at positions 0..S-1. 3*H + 2 "
    "tasks, all on ring 0; the H score tensors [S,S] are live together, so ring 0 needs "
    "H*roundup(S*S*4, 1024) heap bytes (H*S*S*4 when S*S*4 is a multiple of 1024).",
    AP_NARGS,
    prefill_args,
    prefill_orchestrate,
};
