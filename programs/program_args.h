/* SPDX-License-Identifier: Apache-2.0 */
/* programs/program_args.h — argument checks and views shared by the device
 * programs.
 *
 * Header-only (static inline) on purpose: every program is a plugin of its
 * own, built from one .c against include/pto/program.h only, so there is no
 * library to link a shared helper from.
 *
 * Every check reports a mismatch through api->fatal(orch,
 * PTO_E_INVALID_ARGS, ...) with a full sentence that starts with the program
 * name and names the argument, and returns that call's value (-code): the
 * orchestration returns it at once.  Nothing here touches argument memory.
 *
 * All memory arguments of the programs are f32 arrays, so the generic check
 * insists on f32 alignment and sizes.
 */
#ifndef PTO_PROGRAM_ARGS_H
#define PTO_PROGRAM_ARGS_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pto/program.h>

#define PA_F32_BYTES 4u
#define PA_MESSAGE_MAX 480

typedef struct pa_ctx {
  const pto_orch_api_t *api;
  pto_orch_t *orch;
  const char *program;         /* prefix of every message */
  const pto_arg_spec_t *specs; /* the program's argument list */
  uint32_t nspecs;
  const pto_arg_t *args;
  uint32_t nargs;
} pa_ctx_t;

/* Report INVALID_ARGS as "<program>: <message>"; returns -PTO_E_INVALID_ARGS
 * (whatever api->fatal returns). */
static inline int pa_fail(const pa_ctx_t *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline int pa_fail(const pa_ctx_t *c, const char *fmt, ...) {
  char msg[PA_MESSAGE_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  return c->api->fatal(c->orch, PTO_E_INVALID_ARGS, "%s: %s", c->program, msg);
}

static inline const char *pa_kind_name(pto_arg_kind_t kind) {
  switch (kind) {
  case PTO_ARG_BUFFER: return "a buffer";
  case PTO_ARG_INPUT: return "an input";
  case PTO_ARG_INOUT: return "an inout";
  case PTO_ARG_OUTPUT: return "an output";
  case PTO_ARG_INT: return "an int";
  case PTO_ARG_FLOAT: return "a float";
  }
  return "of an unknown kind";
}

/* Which argument kinds satisfy a spec kind, and how to say so.  Inputs may
 * also come from inout or buffer arguments (both readable); outputs may go to
 * inout or buffer arguments (both writable); a "buffer" must be read-write
 * device memory. */
static inline int pa_kind_fits(const char *spec_kind, pto_arg_kind_t kind,
                               const char **ret_expected) {
  if (strcmp(spec_kind, "in") == 0) {
    *ret_expected = "an input, an inout or a buffer";
    return kind == PTO_ARG_INPUT || kind == PTO_ARG_INOUT || kind == PTO_ARG_BUFFER;
  }
  if (strcmp(spec_kind, "out") == 0) {
    *ret_expected = "an output, an inout or a buffer";
    return kind == PTO_ARG_OUTPUT || kind == PTO_ARG_INOUT || kind == PTO_ARG_BUFFER;
  }
  if (strcmp(spec_kind, "buffer") == 0 || strcmp(spec_kind, "inout") == 0) {
    *ret_expected = "a buffer or an inout";
    return kind == PTO_ARG_BUFFER || kind == PTO_ARG_INOUT;
  }
  if (strcmp(spec_kind, "int") == 0) {
    *ret_expected = "an int";
    return kind == PTO_ARG_INT;
  }
  *ret_expected = "a float";
  return kind == PTO_ARG_FLOAT;
}

/* The memory an argument claims must exist, lie inside its buffer and hold
 * whole, aligned f32 elements. */
static inline int pa_check_memory(const pa_ctx_t *c, uint32_t i) {
  const pto_arg_t *a = &c->args[i];
  const char *name = c->specs[i].name;
  uint64_t end;
  if (a->base == NULL)
    return pa_fail(c, "argument '%s' has no device memory behind it; pass a buffer or host data.",
                   name);
  if (__builtin_add_overflow(a->offset, a->bytes, &end) || end > a->base_bytes)
    return pa_fail(c,
                   "argument '%s' covers bytes %" PRIu64 " to %" PRIu64 " of a %" PRIu64
                   "-byte buffer; expected a range inside the buffer.",
                   name, a->offset, a->offset + a->bytes, a->base_bytes);
  if (!pto_arg_aligned(a, PTO_F32))
    return pa_fail(c,
                   "argument '%s' starts at byte offset %" PRIu64
                   " of its buffer; expected a multiple of 4 (the size of an f32).",
                   name, a->offset);
  if (a->bytes == 0 || a->bytes % PA_F32_BYTES != 0)
    return pa_fail(c,
                   "argument '%s' has %" PRIu64
                   " bytes; expected a non-zero multiple of 4 (f32 elements).",
                   name, a->bytes);
  return 0;
}

/* Argument count against the spec list (trailing optional arguments may be
 * left out), then every given argument's kind, then each memory argument's
 * extent and alignment. */
static inline int pa_check_args(const pa_ctx_t *c) {
  uint32_t required = 0;
  for (uint32_t i = 0; i < c->nspecs; i++)
    if (!c->specs[i].optional) required = i + 1;
  if (c->nargs < required || c->nargs > c->nspecs) {
    char names[256];
    size_t used = 0;
    names[0] = '\0';
    for (uint32_t i = 0; i < c->nspecs; i++) {
      int n = snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "", c->specs[i].name);
      if (n > 0 && (size_t)n < sizeof names - used) used += (size_t)n;
    }
    if (required == c->nspecs)
      return pa_fail(c, "expected %" PRIu32 " arguments (%s); got %" PRIu32 ".", c->nspecs, names,
                     c->nargs);
    return pa_fail(c, "expected %" PRIu32 " to %" PRIu32 " arguments (%s); got %" PRIu32 ".",
                   required, c->nspecs, names, c->nargs);
  }
  for (uint32_t i = 0; i < c->nargs; i++) {
    const char *expected;
    if (!pa_kind_fits(c->specs[i].kind, c->args[i].kind, &expected))
      return pa_fail(c, "argument '%s' is %s; expected %s.", c->specs[i].name,
                     pa_kind_name(c->args[i].kind), expected);
  }
  for (uint32_t i = 0; i < c->nargs; i++) {
    if (pto_arg_is_memory(&c->args[i])) {
      int rc = pa_check_memory(c, i);
      if (rc) return rc;
    }
  }
  return 0;
}

/* Integer argument i in [lo, hi]; `dflt` when an optional argument was left
 * out.  Call after pa_check_args (the kind is already checked). */
static inline int pa_int(const pa_ctx_t *c, uint32_t i, int64_t lo, int64_t hi, int64_t dflt,
                         int64_t *ret_value) {
  int64_t v;
  if (i >= c->nargs) {
    *ret_value = dflt;
    return 0;
  }
  v = c->args[i].i;
  if (v >= lo && v <= hi) {
    *ret_value = v;
    return 0;
  }
  if (hi == INT64_MAX && lo == 1)
    return pa_fail(c, "argument '%s' is %" PRId64 "; expected a positive integer.",
                   c->specs[i].name, v);
  if (hi == INT64_MAX && lo == 0)
    return pa_fail(c, "argument '%s' is %" PRId64 "; expected a non-negative integer.",
                   c->specs[i].name, v);
  return pa_fail(c, "argument '%s' is %" PRId64 "; expected %" PRId64 " to %" PRId64 ".",
                 c->specs[i].name, v, lo, hi);
}

/* a*b*c without wrapping; 0, or -1 on overflow. */
static inline int pa_mul3(uint64_t a, uint64_t b, uint64_t c, uint64_t *ret_product) {
  uint64_t ab;
  if (__builtin_mul_overflow(a, b, &ab)) return -1;
  if (__builtin_mul_overflow(ab, c, ret_product)) return -1;
  return 0;
}

/* Argument i must have exactly `expected` bytes; `why` says where that
 * number comes from ("S*H*D*4 = 4*2*8*4"). */
static inline int pa_expect_bytes(const pa_ctx_t *c, uint32_t i, uint64_t expected,
                                  const char *why) {
  if (c->args[i].bytes == expected) return 0;
  return pa_fail(c, "argument '%s' has %" PRIu64 " bytes; expected %" PRIu64 " (%s).",
                 c->specs[i].name, c->args[i].bytes, expected, why);
}

static inline int pa_overlap(const pto_arg_t *x, const pto_arg_t *y) {
  return x->base == y->base && x->offset < y->offset + y->bytes &&
         y->offset < x->offset + x->bytes;
}

/* Argument w (written by the program) must not share memory with argument
 * i: the runtime orders a read after an earlier write, but not a write after
 * an earlier read, so an overlap would race.  With `same_ok`, exactly the
 * same range is accepted (element-wise programs may work in place). */
static inline int pa_check_separate(const pa_ctx_t *c, uint32_t w, uint32_t i, int same_ok) {
  const pto_arg_t *x = &c->args[w], *y = &c->args[i];
  if (!pa_overlap(x, y)) return 0;
  if (same_ok && x->offset == y->offset && x->bytes == y->bytes) return 0;
  return pa_fail(c, "argument '%s' overlaps argument '%s'; expected %s memory.",
                 c->specs[w].name, c->specs[i].name,
                 same_ok ? "separate or exactly the same" : "separate");
}

/* Views over argument memory.  The base is the whole device buffer (the
 * tensor map's key, so slices of one buffer are checked against each other)
 * and offsets count f32 elements from its start. */
static inline pto_tensor_t pa_view1(const pto_arg_t *a, uint64_t elem_offset, uint64_t n) {
  uint64_t shape[1] = {n};
  return pto_tensor_view(a->base, a->base_bytes, PTO_F32, a->offset / PA_F32_BYTES + elem_offset,
                         1, shape);
}

/* rows x cols, rows `row_stride` elements apart. */
static inline pto_tensor_t pa_view2(const pto_arg_t *a, uint64_t elem_offset, uint64_t rows,
                                    uint64_t cols, uint64_t row_stride) {
  uint64_t shape[2] = {rows, cols};
  pto_tensor_t t = pto_tensor_view(a->base, a->base_bytes, PTO_F32,
                                   a->offset / PA_F32_BYTES + elem_offset, 2, shape);
  t.strides[0] = (int64_t)row_stride;
  return t;
}

/* A new row-major f32 tensor for the runtime to allocate (PTO_OUT). */
static inline pto_tensor_t pa_out2(uint64_t rows, uint64_t cols) {
  uint64_t shape[2] = {rows, cols};
  return pto_tensor_view(NULL, 0, PTO_F32, 0, 2, shape);
}

/* y[i*incy] += a * x[i*incx] for i < n; the unit-stride case is the one the
 * programs' own views produce, written so the compiler can vectorise it. */
static inline void pa_axpy(float *restrict y, int64_t incy, const float *restrict x, int64_t incx,
                           float a, uint64_t n) {
  if (incy == 1 && incx == 1) {
    for (uint64_t i = 0; i < n; i++) y[i] += a * x[i];
    return;
  }
  for (uint64_t i = 0; i < n; i++) y[(int64_t)i * incy] += a * x[(int64_t)i * incx];
}

static inline float pa_dot(const float *x, int64_t incx, const float *y, int64_t incy,
                           uint64_t n) {
  float s = 0.0f;
  if (incx == 1 && incy == 1) {
    for (uint64_t i = 0; i < n; i++) s += x[i] * y[i];
    return s;
  }
  for (uint64_t i = 0; i < n; i++) s += x[(int64_t)i * incx] * y[(int64_t)i * incy];
  return s;
}

#endif
