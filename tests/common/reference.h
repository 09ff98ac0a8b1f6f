/* SPDX-License-Identifier: Apache-2.0 */
/* reference.h — plain reference implementations of the device programs, for
 * tests (fp32 data, row-major, double accumulation), and a deterministic
 * random fill.
 *
 * Straight loops with no tiling, no tasks and no cleverness: a program's
 * output is checked against these.  The caller owns every array; the
 * attention references take scratch for one row of scores and free it before
 * returning (they abort if malloc fails).
 */
#ifndef PTO_TEST_REFERENCE_H
#define PTO_TEST_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

/* out[i] = a[i] + b[i] (in float, as the program computes it). */
void ref_vector_add(const float *a, const float *b, float *out, size_t n);

/* c[m,n] = a[m,k] · b[k,n]. */
void ref_matmul(const float *a, const float *b, float *c, size_t m, size_t n, size_t k);

/* Causal attention: q, k, v, out are [S,H,D]; out[i,h] =
 * softmax_{j<=i}(q[i,h]·k[j,h] / sqrt(D)) · v[j,h]. */
void ref_attention_prefill(const float *q, const float *k, const float *v, float *out, size_t S,
                           size_t H, size_t D);

/* One decode step: q and out are [H,D], kv is the cache [2,T,H,D] that
 * already holds the new key and value at `pos`; out[h] =
 * softmax_{j<=pos}(q[h]·kv[0,j,h] / sqrt(D)) · kv[1,j,h]. */
void ref_attention_decode(const float *q, const float *kv, float *out, size_t T, size_t pos,
                          size_t H, size_t D);

/* n floats uniform in [-1, 1) from the xorshift state *seed (non-zero),
 * which advances: the same seed gives the same data on every machine. */
void ref_fill_uniform(float *x, size_t n, uint64_t *seed);

#endif
