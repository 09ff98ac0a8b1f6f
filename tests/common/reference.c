/* SPDX-License-Identifier: Apache-2.0 */
/* reference.c — see reference.h. */
#include "reference.h"

#include <math.h>
#include <stdlib.h>

void ref_vector_add(const float *a, const float *b, float *out, size_t n) {
  for (size_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void ref_matmul(const float *a, const float *b, float *c, size_t m, size_t n, size_t k) {
  for (size_t i = 0; i < m; i++) {
    for (size_t j = 0; j < n; j++) {
      double s = 0.0;
      for (size_t p = 0; p < k; p++) s += (double)a[i * k + p] * (double)b[p * n + j];
      c[i * n + j] = (float)s;
    }
  }
}

/* softmax over `n` scores of one query, then the weighted sum of values
 * (value j at values + j*stride), into out[0..D). */
static void attend(const double *scores, size_t n, const float *values, size_t stride, size_t D,
                   float *out) {
  double max = scores[0], sum = 0.0;
  for (size_t j = 1; j < n; j++)
    if (scores[j] > max) max = scores[j];
  for (size_t j = 0; j < n; j++) sum += exp(scores[j] - max);
  for (size_t d = 0; d < D; d++) {
    double acc = 0.0;
    for (size_t j = 0; j < n; j++) acc += exp(scores[j] - max) * (double)values[j * stride + d];
    out[d] = (float)(acc / sum);
  }
}

static double dot(const float *x, const float *y, size_t D) {
  double s = 0.0;
  for (size_t d = 0; d < D; d++) s += (double)x[d] * (double)y[d];
  return s;
}

void ref_attention_prefill(const float *q, const float *k, const float *v, float *out, size_t S,
                           size_t H, size_t D) {
  double *scores = malloc(S * sizeof *scores);
  double scale = 1.0 / sqrt((double)D);
  if (scores == NULL) abort();
  for (size_t h = 0; h < H; h++) {
    for (size_t i = 0; i < S; i++) {
      for (size_t j = 0; j <= i; j++)
        scores[j] = scale * dot(q + (i * H + h) * D, k + (j * H + h) * D, D);
      attend(scores, i + 1, v + h * D, H * D, D, out + (i * H + h) * D);
    }
  }
  free(scores);
}

void ref_attention_decode(const float *q, const float *kv, float *out, size_t T, size_t pos,
                          size_t H, size_t D) {
  double *scores = malloc((pos + 1) * sizeof *scores);
  double scale = 1.0 / sqrt((double)D);
  const float *keys = kv, *values = kv + T * H * D;
  if (scores == NULL) abort();
  for (size_t h = 0; h < H; h++) {
    for (size_t j = 0; j <= pos; j++)
      scores[j] = scale * dot(q + h * D, keys + (j * H + h) * D, D);
    attend(scores, pos + 1, values + h * D, H * D, D, out + h * D);
  }
  free(scores);
}

void ref_fill_uniform(float *x, size_t n, uint64_t *seed) {
  uint64_t s = *seed ? *seed : 0x9e3779b97f4a7c15u;
  for (size_t i = 0; i < n; i++) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    x[i] = (float)((double)(s >> 40) / (double)(1u << 24) * 2.0 - 1.0);
  }
  *seed = s;
}
