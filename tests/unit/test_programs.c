/* SPDX-License-Identifier: Apache-2.0 */
/* test_programs.c — the device programs, loaded as the daemon loads them
 * (dlopen from the build's programs directory), run through seq_orch and
 * compared with the plain references; every argument error with its exact
 * message. */
#include <check.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "program_open.h"
#include "reference.h"
#include "seq_orch.h"

#define GUARD 16 /* f32 elements of canary on each side of every test buffer */
#define CANARY 12345.0f

/* ---- loading ------------------------------------------------------------ */

typedef struct loaded {
  void *handle;
  const pto_program_t *prog;
  seq_orch_t *seq;
} loaded_t;

static loaded_t load(const char *name) {
  loaded_t l;
  l.handle = program_open(name, &l.prog);
  ck_assert_int_eq(seq_orch_new(&l.seq), 0);
  return l;
}

static void unload(loaded_t *l) {
  seq_orch_free(l->seq);
  dlclose(l->handle);
}

static int run(loaded_t *l, const pto_arg_t *args, uint32_t nargs) {
  return seq_orch_run(l->seq, l->prog->orchestrate, args, nargs);
}

static const seq_orch_stats_t *stats(const loaded_t *l) {
  return seq_orch_stats(l->seq);
}

/* The run must fail with INVALID_ARGS, this exact message, no task run, and
 * the orchestration returning -INVALID_ARGS. */
static void expect_invalid(loaded_t *l, const pto_arg_t *args, uint32_t nargs, const char *msg) {
  const pto_error_t *err;
  ck_assert_int_eq(run(l, args, nargs), -PTO_E_INVALID_ARGS);
  err = seq_orch_error(l->seq);
  ck_assert_int_eq(err->code, PTO_E_INVALID_ARGS);
  ck_assert_str_eq(err->message, msg);
  ck_assert_int_eq(stats(l)->orch_rc, -PTO_E_INVALID_ARGS);
  ck_assert_uint_eq(stats(l)->tasks, 0);
}

static void expect_ok(loaded_t *l, const pto_arg_t *args, uint32_t nargs) {
  int rc = run(l, args, nargs);
  ck_assert_msg(rc == 0, "%s failed: %s", l->prog->name, seq_orch_error(l->seq)->message);
  ck_assert_int_eq(stats(l)->orch_rc, 0);
}

/* ---- buffers ------------------------------------------------------------ */

/* n f32 elements with GUARD canary elements on each side, in one
 * allocation that plays the device buffer: the argument is a slice of it at
 * a non-zero offset. */
typedef struct tbuf {
  float *base;
  float *data;
  size_t n;
} tbuf_t;

static uint64_t seed = 0x1234567887654321u;

static tbuf_t tb_new(size_t n) {
  tbuf_t b;
  b.base = malloc((n + 2 * GUARD) * sizeof(float));
  ck_assert_ptr_nonnull(b.base);
  b.data = b.base + GUARD;
  b.n = n;
  for (size_t i = 0; i < GUARD; i++) b.base[i] = b.data[n + i] = CANARY;
  return b;
}

static tbuf_t tb_random(size_t n) {
  tbuf_t b = tb_new(n);
  ref_fill_uniform(b.data, n, &seed);
  return b;
}

static tbuf_t tb_copy(const tbuf_t *src) {
  tbuf_t b = tb_new(src->n);
  memcpy(b.data, src->data, src->n * sizeof(float));
  return b;
}

static void tb_free(tbuf_t *b) {
  for (size_t i = 0; i < GUARD; i++) {
    ck_assert_msg(b->base[i] == CANARY, "canary before the buffer overwritten at %zu", i);
    ck_assert_msg(b->data[b->n + i] == CANARY, "canary after the buffer overwritten at %zu", i);
  }
  free(b->base);
}

static pto_arg_t tb_arg(const tbuf_t *b, pto_arg_kind_t kind) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = kind;
  a.base = b->base;
  a.base_bytes = (b->n + 2 * GUARD) * sizeof(float);
  a.offset = GUARD * sizeof(float);
  a.bytes = b->n * sizeof(float);
  return a;
}

static pto_arg_t int_arg(int64_t v) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = PTO_ARG_INT;
  a.i = v;
  return a;
}

static pto_arg_t float_arg(double v) {
  pto_arg_t a;
  memset(&a, 0, sizeof a);
  a.kind = PTO_ARG_FLOAT;
  a.f = v;
  return a;
}

static void expect_same(const float *got, const float *want, size_t n) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(memcmp(&got[i], &want[i], sizeof(float)) == 0, "element %zu: got %g, want %g",
                  i, (double)got[i], (double)want[i]);
}

static void expect_close(const float *got, const float *want, size_t n, double tol) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(fabs((double)got[i] - (double)want[i]) <= tol,
                  "element %zu: got %.9g, want %.9g (tolerance %g)", i, (double)got[i],
                  (double)want[i], tol);
}

/* ---- the exported descriptions ----------------------------------------- */

struct spec_want {
  const char *name, *kind;
  int optional;
};

static void check_program(const char *name, uint32_t nargs, const struct spec_want *want) {
  loaded_t l = load(name);
  ck_assert_uint_eq(l.prog->abi_version, PTO_PROGRAM_ABI_VERSION);
  ck_assert_str_eq(l.prog->name, name);
  ck_assert_ptr_nonnull(l.prog->description);
  ck_assert_msg(strncmp(l.prog->description, name, strlen(name)) == 0,
                "the description of %s starts with its signature", name);
  ck_assert(l.prog->orchestrate != NULL);
  ck_assert_uint_eq(l.prog->nargs, nargs);
  for (uint32_t i = 0; i < nargs; i++) {
    ck_assert_str_eq(l.prog->args[i].name, want[i].name);
    ck_assert_str_eq(l.prog->args[i].kind, want[i].kind);
    ck_assert_int_eq(l.prog->args[i].optional, want[i].optional);
    ck_assert_ptr_nonnull(l.prog->args[i].doc);
    ck_assert_uint_gt(strlen(l.prog->args[i].doc), 0);
  }
  unload(&l);
}

START_TEST(test_descriptions) {
  static const struct spec_want noop[] = {{"tasks", "int", 0}, {"depth", "int", 1},
                                          {"task_us", "int", 1}};
  static const struct spec_want vadd[] = {{"a", "in", 0}, {"b", "in", 0}, {"out", "out", 0}};
  static const struct spec_want mm[] = {{"a", "in", 0},  {"b", "in", 0},  {"c", "out", 0},
                                        {"m", "int", 0}, {"n", "int", 0}, {"k", "int", 0}};
  static const struct spec_want pre[] = {{"q", "in", 0},      {"k", "in", 0},   {"v", "in", 0},
                                         {"kv", "buffer", 0}, {"out", "out", 0}, {"S", "int", 0},
                                         {"H", "int", 0},     {"D", "int", 0}};
  static const struct spec_want dec[] = {{"q", "in", 0},      {"k", "in", 0},    {"v", "in", 0},
                                         {"kv", "buffer", 0}, {"out", "out", 0}, {"pos", "int", 0},
                                         {"H", "int", 0},     {"D", "int", 0}};
  check_program("noop", 3, noop);
  check_program("vector_add", 3, vadd);
  check_program("matmul", 6, mm);
  check_program("attention_prefill", 8, pre);
  check_program("attention_decode", 8, dec);
}
END_TEST

START_TEST(test_prefill_description_names_the_heap_need) {
  loaded_t l = load("attention_prefill");
  ck_assert_ptr_nonnull(strstr(l.prog->description, "H*roundup(S*S*4, 1024)"));
  unload(&l);
}
END_TEST

/* ---- noop --------------------------------------------------------------- */

START_TEST(test_noop_rings) {
  static const int64_t depths[] = {0, 1, 2, 3, 5};
  loaded_t l = load("noop");
  for (size_t d = 0; d < sizeof depths / sizeof depths[0]; d++) {
    pto_arg_t args[3] = {int_arg(7), int_arg(depths[d]), int_arg(0)};
    uint32_t ring = depths[d] < 3 ? (uint32_t)depths[d] : 3;
    expect_ok(&l, args, 3);
    ck_assert_uint_eq(stats(&l)->tasks, 7);
    ck_assert_uint_eq(stats(&l)->ring_tasks[ring], 7);
    ck_assert_uint_eq(stats(&l)->ring_peak_tasks[ring], 7);
    ck_assert_uint_eq(stats(&l)->max_depth, (uint32_t)depths[d]);
    for (uint32_t r = 0; r < SEQ_ORCH_RINGS; r++) ck_assert_uint_eq(stats(&l)->ring_peak_heap[r], 0);
  }
  unload(&l);
}
END_TEST

START_TEST(test_noop_defaults_and_sleep) {
  loaded_t l = load("noop");
  pto_arg_t args[3] = {int_arg(5), int_arg(2), int_arg(300)};
  expect_ok(&l, args, 1);
  ck_assert_uint_eq(stats(&l)->ring_tasks[0], 5);
  ck_assert_uint_eq(stats(&l)->max_depth, 0);
  expect_ok(&l, args, 2);
  ck_assert_uint_eq(stats(&l)->ring_tasks[2], 5);
  expect_ok(&l, args, 3); /* five sleeping tasks */
  ck_assert_uint_eq(stats(&l)->ring_tasks[2], 5);
  args[0] = int_arg(0);
  expect_ok(&l, args, 3);
  ck_assert_uint_eq(stats(&l)->tasks, 0);
  unload(&l);
}
END_TEST

START_TEST(test_noop_invalid) {
  loaded_t l = load("noop");
  pto_arg_t args[4] = {int_arg(1), int_arg(0), int_arg(0), int_arg(0)};
  expect_invalid(&l, args, 0, "noop: expected 1 to 3 arguments (tasks, depth, task_us); got 0.");
  expect_invalid(&l, args, 4, "noop: expected 1 to 3 arguments (tasks, depth, task_us); got 4.");
  args[0] = float_arg(3.0);
  expect_invalid(&l, args, 1, "noop: argument 'tasks' is a float; expected an int.");
  args[0] = int_arg(-1);
  expect_invalid(&l, args, 1, "noop: argument 'tasks' is -1; expected 0 to 1000000000.");
  args[0] = int_arg(1000000001);
  expect_invalid(&l, args, 1, "noop: argument 'tasks' is 1000000001; expected 0 to 1000000000.");
  args[0] = int_arg(1);
  args[1] = int_arg(65);
  expect_invalid(&l, args, 2, "noop: argument 'depth' is 65; expected 0 to 64.");
  args[1] = int_arg(-2);
  expect_invalid(&l, args, 2, "noop: argument 'depth' is -2; expected 0 to 64.");
  args[1] = int_arg(0);
  args[2] = int_arg(10000001);
  expect_invalid(&l, args, 3, "noop: argument 'task_us' is 10000001; expected 0 to 10000000.");
  args[2] = tb_arg(&(tbuf_t){NULL, NULL, 0}, PTO_ARG_INPUT);
  expect_invalid(&l, args, 3, "noop: argument 'task_us' is an input; expected an int.");
  unload(&l);
}
END_TEST

/* ---- vector_add --------------------------------------------------------- */

static void vector_add_case(loaded_t *l, size_t n) {
  tbuf_t a = tb_random(n), b = tb_random(n), out = tb_new(n);
  tbuf_t a0 = tb_copy(&a), b0 = tb_copy(&b);
  float *want = malloc(n * sizeof *want);
  pto_arg_t args[3] = {tb_arg(&a, PTO_ARG_INPUT), tb_arg(&b, PTO_ARG_INPUT),
                       tb_arg(&out, PTO_ARG_OUTPUT)};
  ck_assert_ptr_nonnull(want);
  expect_ok(l, args, 3);
  ck_assert_uint_eq(stats(l)->tasks, (n + 4095) / 4096);
  ck_assert_uint_eq(stats(l)->ring_tasks[0], (n + 4095) / 4096);
  ck_assert_uint_eq(stats(l)->ring_peak_heap[0], 0);
  ref_vector_add(a.data, b.data, want, n);
  expect_same(out.data, want, n);
  expect_same(a.data, a0.data, n);
  expect_same(b.data, b0.data, n);
  free(want);
  tb_free(&a);
  tb_free(&b);
  tb_free(&out);
  tb_free(&a0);
  tb_free(&b0);
}

START_TEST(test_vector_add_sizes) {
  static const size_t sizes[] = {1, 5, 4095, 4096, 4097, 3 * 4096 + 5, 4 * 4096};
  loaded_t l = load("vector_add");
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) vector_add_case(&l, sizes[i]);
  unload(&l);
}
END_TEST

START_TEST(test_vector_add_in_place_and_kinds) {
  size_t n = 5000;
  loaded_t l = load("vector_add");
  tbuf_t a = tb_random(n), b = tb_random(n);
  float *want = malloc(n * sizeof *want);
  pto_arg_t args[3] = {tb_arg(&a, PTO_ARG_BUFFER), tb_arg(&b, PTO_ARG_INOUT),
                       tb_arg(&a, PTO_ARG_BUFFER)};
  ck_assert_ptr_nonnull(want);
  ref_vector_add(a.data, b.data, want, n);
  expect_ok(&l, args, 3);
  expect_same(a.data, want, n);
  /* b + b into b itself, given as inout */
  ref_vector_add(b.data, b.data, want, n);
  args[0] = args[1] = args[2] = tb_arg(&b, PTO_ARG_INOUT);
  expect_ok(&l, args, 3);
  expect_same(b.data, want, n);
  free(want);
  tb_free(&a);
  tb_free(&b);
  unload(&l);
}
END_TEST

START_TEST(test_vector_add_invalid) {
  loaded_t l = load("vector_add");
  tbuf_t a = tb_random(2048), b = tb_random(2048), out = tb_new(2048), big = tb_new(4096);
  pto_arg_t good[4] = {tb_arg(&a, PTO_ARG_INPUT), tb_arg(&b, PTO_ARG_INPUT),
                       tb_arg(&out, PTO_ARG_OUTPUT), int_arg(1)};
  pto_arg_t args[4];

  expect_invalid(&l, good, 2, "vector_add: expected 3 arguments (a, b, out); got 2.");
  expect_invalid(&l, good, 4, "vector_add: expected 3 arguments (a, b, out); got 4.");

  memcpy(args, good, sizeof args);
  args[0] = int_arg(4);
  expect_invalid(&l, args, 3, "vector_add: argument 'a' is an int; expected an input, an inout or a buffer.");
  memcpy(args, good, sizeof args);
  args[1].kind = PTO_ARG_OUTPUT;
  expect_invalid(&l, args, 3, "vector_add: argument 'b' is an output; expected an input, an inout or a buffer.");
  memcpy(args, good, sizeof args);
  args[2].kind = PTO_ARG_INPUT;
  expect_invalid(&l, args, 3, "vector_add: argument 'out' is an input; expected an output, an inout or a buffer.");

  memcpy(args, good, sizeof args);
  args[1].bytes = 4096;
  expect_invalid(&l, args, 3, "vector_add: argument 'b' has 4096 bytes; expected 8192 (the size of 'a').");
  memcpy(args, good, sizeof args);
  args[2] = tb_arg(&big, PTO_ARG_OUTPUT);
  expect_invalid(&l, args, 3, "vector_add: argument 'out' has 16384 bytes; expected 8192 (the size of 'a').");
  memcpy(args, good, sizeof args);
  args[0].bytes = 10;
  expect_invalid(&l, args, 3, "vector_add: argument 'a' has 10 bytes; expected a non-zero multiple of 4 (f32 elements).");
  args[0].bytes = 0;
  expect_invalid(&l, args, 3, "vector_add: argument 'a' has 0 bytes; expected a non-zero multiple of 4 (f32 elements).");

  memcpy(args, good, sizeof args);
  args[0].offset = 66;
  expect_invalid(&l, args, 3, "vector_add: argument 'a' starts at byte offset 66 of its buffer; expected a multiple of 4 (the size of an f32).");
  memcpy(args, good, sizeof args);
  args[2].offset = 132;
  expect_invalid(&l, args, 3, "vector_add: argument 'out' covers bytes 132 to 8324 of a 8320-byte buffer; expected a range inside the buffer.");
  memcpy(args, good, sizeof args);
  args[2].offset = 129;
  expect_invalid(&l, args, 3, "vector_add: argument 'out' covers bytes 129 to 8321 of a 8320-byte buffer; expected a range inside the buffer.");
  memcpy(args, good, sizeof args);
  args[1].base = NULL;
  expect_invalid(&l, args, 3, "vector_add: argument 'b' has no device memory behind it; pass a buffer or host data.");

  /* out shifted by one element over a: the tiles would race */
  memcpy(args, good, sizeof args);
  args[2] = tb_arg(&a, PTO_ARG_BUFFER);
  args[2].offset += 4;
  args[2].bytes -= 4;
  args[0].bytes -= 4;
  args[1].bytes -= 4;
  expect_invalid(&l, args, 3, "vector_add: argument 'out' overlaps argument 'a'; expected separate or exactly the same memory.");
  memcpy(args, good, sizeof args);
  args[2] = tb_arg(&b, PTO_ARG_BUFFER);
  args[2].bytes -= 4;
  args[0].bytes -= 4;
  args[1].bytes -= 4;
  args[1].offset += 4;
  expect_invalid(&l, args, 3, "vector_add: argument 'out' overlaps argument 'b'; expected separate or exactly the same memory.");

  tb_free(&a);
  tb_free(&b);
  tb_free(&out);
  tb_free(&big);
  unload(&l);
}
END_TEST

/* ---- matmul ------------------------------------------------------------- */

static void matmul_case(loaded_t *l, size_t m, size_t n, size_t k) {
  tbuf_t a = tb_random(m * k), b = tb_random(k * n), c = tb_new(m * n);
  float *want = malloc(m * n * sizeof *want);
  pto_arg_t args[6] = {tb_arg(&a, PTO_ARG_INPUT), tb_arg(&b, PTO_ARG_INPUT),
                       tb_arg(&c, PTO_ARG_OUTPUT), int_arg((int64_t)m),
                       int_arg((int64_t)n),        int_arg((int64_t)k)};
  size_t tiles = ((m + 63) / 64) * ((n + 63) / 64) * ((k + 63) / 64);
  ck_assert_ptr_nonnull(want);
  /* garbage in c: the first task of each chain must overwrite, not add */
  for (size_t i = 0; i < m * n; i++) c.data[i] = 1e6f;
  expect_ok(l, args, 6);
  ck_assert_uint_eq(stats(l)->tasks, tiles);
  ck_assert_uint_eq(stats(l)->ring_tasks[0], tiles);
  ck_assert_uint_eq(stats(l)->ring_peak_heap[0], 0);
  ref_matmul(a.data, b.data, want, m, n, k);
  /* |a|, |b| < 1: float summation of k products errs far below 1e-6 * k */
  expect_close(c.data, want, m * n, 1e-6 * (double)k + 1e-6);
  free(want);
  tb_free(&a);
  tb_free(&b);
  tb_free(&c);
}

START_TEST(test_matmul_sizes) {
  static const size_t shapes[][3] = {{1, 1, 1},    {64, 64, 64}, {65, 33, 130},
                                     {100, 70, 129}, {3, 200, 5},  {128, 1, 64}};
  loaded_t l = load("matmul");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
    matmul_case(&l, shapes[i][0], shapes[i][1], shapes[i][2]);
  unload(&l);
}
END_TEST

START_TEST(test_matmul_invalid) {
  loaded_t l = load("matmul");
  tbuf_t a = tb_random(2 * 3), b = tb_random(3 * 4), c = tb_new(2 * 4);
  pto_arg_t good[7] = {tb_arg(&a, PTO_ARG_INPUT), tb_arg(&b, PTO_ARG_INPUT),
                       tb_arg(&c, PTO_ARG_OUTPUT), int_arg(2), int_arg(4), int_arg(3),
                       int_arg(0)};
  pto_arg_t args[7];

  expect_invalid(&l, good, 5, "matmul: expected 6 arguments (a, b, c, m, n, k); got 5.");
  expect_invalid(&l, good, 7, "matmul: expected 6 arguments (a, b, c, m, n, k); got 7.");
  memcpy(args, good, sizeof args);
  args[3] = float_arg(2.0);
  expect_invalid(&l, args, 6, "matmul: argument 'm' is a float; expected an int.");
  memcpy(args, good, sizeof args);
  args[4] = tb_arg(&a, PTO_ARG_INPUT);
  expect_invalid(&l, args, 6, "matmul: argument 'n' is an input; expected an int.");
  memcpy(args, good, sizeof args);
  args[3] = int_arg(0);
  expect_invalid(&l, args, 6, "matmul: argument 'm' is 0; expected a positive integer.");
  memcpy(args, good, sizeof args);
  args[5] = int_arg(-3);
  expect_invalid(&l, args, 6, "matmul: argument 'k' is -3; expected a positive integer.");
  memcpy(args, good, sizeof args);
  args[3] = int_arg(INT64_C(1) << 40);
  args[5] = int_arg(INT64_C(1) << 40);
  expect_invalid(&l, args, 6, "matmul: the size of 'a', m*k*4 = 1099511627776*1099511627776*4 bytes, overflows 64 bits; use smaller sizes.");
  memcpy(args, good, sizeof args);
  args[4] = int_arg(INT64_C(1) << 62);
  expect_invalid(&l, args, 6, "matmul: the size of 'b', k*n*4 = 3*4611686018427387904*4 bytes, overflows 64 bits; use smaller sizes.");
  memcpy(args, good, sizeof args);
  args[3] = int_arg(3);
  expect_invalid(&l, args, 6, "matmul: argument 'a' has 24 bytes; expected 36 (m*k*4 = 3*3*4).");
  memcpy(args, good, sizeof args);
  args[4] = int_arg(2);
  expect_invalid(&l, args, 6, "matmul: argument 'b' has 48 bytes; expected 24 (k*n*4 = 3*2*4).");
  memcpy(args, good, sizeof args);
  args[2].bytes = 28;
  expect_invalid(&l, args, 6, "matmul: argument 'c' has 28 bytes; expected 32 (m*n*4 = 2*4*4).");
  memcpy(args, good, sizeof args);
  args[2].offset = 2;
  expect_invalid(&l, args, 6, "matmul: argument 'c' starts at byte offset 2 of its buffer; expected a multiple of 4 (the size of an f32).");
  memcpy(args, good, sizeof args);
  args[2] = tb_arg(&b, PTO_ARG_BUFFER); /* 12 floats: c's 8 land on b's first 8 */
  args[2].bytes = 32;
  expect_invalid(&l, args, 6, "matmul: argument 'c' overlaps argument 'b'; expected separate memory.");
  memcpy(args, good, sizeof args);
  args[0] = args[2] = tb_arg(&c, PTO_ARG_BUFFER);
  args[0].bytes = 24;
  expect_invalid(&l, args, 6, "matmul: argument 'c' overlaps argument 'a'; expected separate memory.");

  tb_free(&a);
  tb_free(&b);
  tb_free(&c);
  unload(&l);
}
END_TEST

/* ---- attention_prefill -------------------------------------------------- */

static uint64_t prefill_heap_need(uint64_t S, uint64_t H) {
  return H * ((S * S * 4 + 1023) / 1024 * 1024);
}

typedef struct prefill_io {
  tbuf_t q, k, v, kv, out;
  size_t S, H, D, T;
  pto_arg_t args[8];
} prefill_io_t;

static void prefill_setup(prefill_io_t *io, size_t S, size_t H, size_t D, size_t T) {
  size_t n = S * H * D;
  io->S = S;
  io->H = H;
  io->D = D;
  io->T = T;
  io->q = tb_random(n);
  io->k = tb_random(n);
  io->v = tb_random(n);
  io->kv = tb_new(2 * T * H * D);
  for (size_t i = 0; i < 2 * T * H * D; i++) io->kv.data[i] = 7.0f;
  io->out = tb_new(n);
  io->args[0] = tb_arg(&io->q, PTO_ARG_INPUT);
  io->args[1] = tb_arg(&io->k, PTO_ARG_INPUT);
  io->args[2] = tb_arg(&io->v, PTO_ARG_INPUT);
  io->args[3] = tb_arg(&io->kv, PTO_ARG_BUFFER);
  io->args[4] = tb_arg(&io->out, PTO_ARG_OUTPUT);
  io->args[5] = int_arg((int64_t)S);
  io->args[6] = int_arg((int64_t)H);
  io->args[7] = int_arg((int64_t)D);
}

/* out against the reference; the cache rows 0..S-1 equal k and v exactly,
 * rows S..T-1 untouched. */
static void prefill_verify(const prefill_io_t *io) {
  size_t n = io->S * io->H * io->D, row = io->H * io->D;
  float *want = malloc(n * sizeof *want);
  ck_assert_ptr_nonnull(want);
  ref_attention_prefill(io->q.data, io->k.data, io->v.data, want, io->S, io->H, io->D);
  expect_close(io->out.data, want, n, 2e-5);
  expect_same(io->kv.data, io->k.data, n);
  expect_same(io->kv.data + io->T * row, io->v.data, n);
  for (size_t t = io->S; t < io->T; t++)
    for (size_t i = 0; i < row; i++) {
      ck_assert(io->kv.data[t * row + i] == 7.0f);
      ck_assert(io->kv.data[(io->T + t) * row + i] == 7.0f);
    }
  free(want);
}

static void prefill_free(prefill_io_t *io) {
  tb_free(&io->q);
  tb_free(&io->k);
  tb_free(&io->v);
  tb_free(&io->kv);
  tb_free(&io->out);
}

START_TEST(test_prefill_sizes) {
  static const size_t shapes[][4] = {{1, 1, 1, 1},   {7, 3, 5, 9},   {16, 2, 8, 16},
                                     {33, 1, 17, 40}, {32, 4, 16, 32}, {48, 2, 4, 50}};
  loaded_t l = load("attention_prefill");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    prefill_io_t io;
    prefill_setup(&io, shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3]);
    expect_ok(&l, io.args, 8);
    prefill_verify(&io);
    ck_assert_uint_eq(stats(&l)->tasks, 3 * io.H + 2);
    ck_assert_uint_eq(stats(&l)->ring_tasks[0], 3 * io.H + 2);
    ck_assert_uint_eq(stats(&l)->ring_peak_heap[0], prefill_heap_need(io.S, io.H));
    prefill_free(&io);
  }
  unload(&l);
}
END_TEST

/* Where S*S*4 is a multiple of 1024 the need is exactly H*S*S*4: the figure
 * the program documents and the runtime's tests size the ring against. */
START_TEST(test_prefill_heap_need_is_h_s2_4) {
  static const size_t shapes[][2] = {{16, 1}, {16, 3}, {32, 2}, {48, 4}, {64, 2}};
  loaded_t l = load("attention_prefill");
  for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
    size_t S = shapes[i][0], H = shapes[i][1];
    prefill_io_t io;
    ck_assert_uint_eq(S * S * 4 % 1024, 0);
    prefill_setup(&io, S, H, 4, S);
    expect_ok(&l, io.args, 8);
    ck_assert_uint_eq(stats(&l)->ring_peak_heap[0], H * S * S * 4);
    for (uint32_t r = 1; r < SEQ_ORCH_RINGS; r++) ck_assert_uint_eq(stats(&l)->ring_peak_heap[r], 0);
    prefill_free(&io);
  }
  unload(&l);
}
END_TEST

/* The seed's scenario, scaled down, on the sequential model: below the need
 * the heap deadlocks on ring 0; at double the need the output is right. */
START_TEST(test_prefill_heap_limit) {
  size_t S = 32, H = 4, D = 8;
  uint64_t need = H * S * S * 4;
  loaded_t l = load("attention_prefill");
  prefill_io_t io;
  const pto_error_t *err;
  char hint[256];
  prefill_setup(&io, S, H, D, S);

  seq_orch_set_ring_heap(l.seq, 0, need - 1024);
  ck_assert_int_eq(run(&l, io.args, 8), -PTO_E_HEAP_RING_DEADLOCK);
  err = seq_orch_error(l.seq);
  ck_assert_int_eq(err->code, PTO_E_HEAP_RING_DEADLOCK);
  ck_assert_int_eq(err->ring, 0);
  ck_assert_uint_eq(err->requested, S * S * 4);
  ck_assert_uint_eq(err->capacity, need - 1024);
  snprintf(hint, sizeof hint,
           "Raise ring_heap[0] to at least %llu bytes, or submit the work in scopes that end "
           "sooner.",
           (unsigned long long)need);
  ck_assert_str_eq(err->hint, hint);
  ck_assert_int_eq(stats(&l)->orch_rc, -PTO_E_HEAP_RING_DEADLOCK);

  seq_orch_set_ring_heap(l.seq, 0, 2 * need);
  expect_ok(&l, io.args, 8);
  prefill_verify(&io);
  ck_assert_uint_eq(stats(&l)->ring_peak_heap[0], need);
  prefill_free(&io);
  unload(&l);
}
END_TEST

START_TEST(test_prefill_invalid) {
  loaded_t l = load("attention_prefill");
  prefill_io_t io;
  pto_arg_t args[9];
  prefill_setup(&io, 4, 2, 8, 5);

  expect_invalid(&l, io.args, 7, "attention_prefill: expected 8 arguments (q, k, v, kv, out, S, H, D); got 7.");
  memcpy(args, io.args, sizeof io.args);
  args[3].kind = PTO_ARG_INPUT;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'kv' is an input; expected a buffer or an inout.");
  args[3].kind = PTO_ARG_OUTPUT;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'kv' is an output; expected a buffer or an inout.");
  memcpy(args, io.args, sizeof io.args);
  args[5] = int_arg(0);
  expect_invalid(&l, args, 8, "attention_prefill: argument 'S' is 0; expected a positive integer.");
  memcpy(args, io.args, sizeof io.args);
  args[7] = int_arg(-8);
  expect_invalid(&l, args, 8, "attention_prefill: argument 'D' is -8; expected a positive integer.");
  memcpy(args, io.args, sizeof io.args);
  args[6] = int_arg(INT64_C(1) << 61);
  expect_invalid(&l, args, 8, "attention_prefill: the sizes S = 4, H = 2305843009213693952, D = 8 overflow 64 bits (in S*H*D*4*2 or S*S*4 bytes); use smaller sizes.");
  memcpy(args, io.args, sizeof io.args);
  args[5] = int_arg(INT64_C(1) << 31);
  args[6] = int_arg(1);
  args[7] = int_arg(1);
  expect_invalid(&l, args, 8, "attention_prefill: the sizes S = 2147483648, H = 1, D = 1 overflow 64 bits (in S*H*D*4*2 or S*S*4 bytes); use smaller sizes.");
  memcpy(args, io.args, sizeof io.args);
  args[0].bytes -= 4;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'q' has 252 bytes; expected 256 (S*H*D*4 = 4*2*8*4).");
  memcpy(args, io.args, sizeof io.args);
  args[5] = int_arg(3);
  expect_invalid(&l, args, 8, "attention_prefill: argument 'q' has 256 bytes; expected 192 (S*H*D*4 = 3*2*8*4).");
  memcpy(args, io.args, sizeof io.args);
  args[2].bytes += 68;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'v' covers bytes 64 to 388 of a 384-byte buffer; expected a range inside the buffer.");
  memcpy(args, io.args, sizeof io.args);
  args[4].bytes -= 64;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'out' has 192 bytes; expected 256 (S*H*D*4 = 4*2*8*4).");
  memcpy(args, io.args, sizeof io.args);
  args[3].bytes -= 4;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'kv' has 636 bytes; expected a multiple of 128 (2*H*D*4 = 2*2*8*4, one position of keys and values).");
  memcpy(args, io.args, sizeof io.args);
  args[3].bytes = 3 * 128; /* T = 3 < S = 4 */
  expect_invalid(&l, args, 8, "attention_prefill: argument 'kv' holds T = 3 positions; expected at least S = 4 (give it at least 512 bytes).");
  memcpy(args, io.args, sizeof io.args);
  args[0] = tb_arg(&io.kv, PTO_ARG_INPUT);
  args[0].bytes = 256;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'kv' overlaps argument 'q'; expected separate memory.");
  memcpy(args, io.args, sizeof io.args);
  args[3].offset = 62;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'kv' starts at byte offset 62 of its buffer; expected a multiple of 4 (the size of an f32).");
  memcpy(args, io.args, sizeof io.args);
  args[4] = io.args[1];
  args[4].kind = PTO_ARG_BUFFER;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'out' overlaps argument 'k'; expected separate memory.");
  memcpy(args, io.args, sizeof io.args);
  args[4] = io.args[3];
  args[4].bytes = 256;
  expect_invalid(&l, args, 8, "attention_prefill: argument 'out' overlaps argument 'kv'; expected separate memory.");
  prefill_free(&io);
  unload(&l);
}
END_TEST

/* ---- attention_decode --------------------------------------------------- */

START_TEST(test_decode_sizes) {
  static const size_t shapes[][4] = {{1, 1, 1, 0}, {3, 8, 10, 0}, {3, 8, 10, 6},
                                     {2, 17, 9, 8}, {4, 16, 64, 40}};
  loaded_t l = load("attention_decode");
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    size_t H = shapes[c][0], D = shapes[c][1], T = shapes[c][2], pos = shapes[c][3];
    size_t row = H * D;
    tbuf_t q = tb_random(row), k = tb_random(row), v = tb_random(row), out = tb_new(row);
    tbuf_t kv = tb_random(2 * T * row), kv_want = tb_copy(&kv);
    float *want = malloc(row * sizeof *want);
    pto_arg_t args[8] = {tb_arg(&q, PTO_ARG_INPUT),  tb_arg(&k, PTO_ARG_INPUT),
                         tb_arg(&v, PTO_ARG_INPUT),  tb_arg(&kv, PTO_ARG_BUFFER),
                         tb_arg(&out, PTO_ARG_OUTPUT), int_arg((int64_t)pos),
                         int_arg((int64_t)H),        int_arg((int64_t)D)};
    ck_assert_ptr_nonnull(want);
    memcpy(kv_want.data + pos * row, k.data, row * sizeof(float));
    memcpy(kv_want.data + (T + pos) * row, v.data, row * sizeof(float));
    ref_attention_decode(q.data, kv_want.data, want, T, pos, H, D);

    expect_ok(&l, args, 8);
    ck_assert_uint_eq(stats(&l)->tasks, H + 2);
    ck_assert_uint_eq(stats(&l)->ring_peak_heap[0], 0);
    expect_close(out.data, want, row, 2e-5);
    expect_same(kv.data, kv_want.data, 2 * T * row);

    free(want);
    tb_free(&q);
    tb_free(&k);
    tb_free(&v);
    tb_free(&out);
    tb_free(&kv);
    tb_free(&kv_want);
  }
  unload(&l);
}
END_TEST

START_TEST(test_decode_invalid) {
  size_t H = 3, D = 8, T = 10, row = H * D;
  loaded_t l = load("attention_decode");
  tbuf_t q = tb_random(row), k = tb_random(row), v = tb_random(row), out = tb_new(row);
  tbuf_t kv = tb_random(2 * T * row);
  pto_arg_t good[8] = {tb_arg(&q, PTO_ARG_INPUT),  tb_arg(&k, PTO_ARG_INPUT),
                       tb_arg(&v, PTO_ARG_INPUT),  tb_arg(&kv, PTO_ARG_INOUT),
                       tb_arg(&out, PTO_ARG_OUTPUT), int_arg(9),
                       int_arg((int64_t)H),        int_arg((int64_t)D)};
  pto_arg_t args[8];

  expect_ok(&l, good, 8); /* pos = T-1 is the last valid position; kv may be inout */
  expect_invalid(&l, good, 1, "attention_decode: expected 8 arguments (q, k, v, kv, out, pos, H, D); got 1.");
  memcpy(args, good, sizeof args);
  args[5] = int_arg(10);
  expect_invalid(&l, args, 8, "attention_decode: argument 'pos' is 10; expected 0 to 9 (kv holds T = 10 positions).");
  args[5] = int_arg(-1);
  expect_invalid(&l, args, 8, "attention_decode: argument 'pos' is -1; expected a non-negative integer.");
  args[5] = float_arg(1.0);
  expect_invalid(&l, args, 8, "attention_decode: argument 'pos' is a float; expected an int.");
  memcpy(args, good, sizeof args);
  args[6] = int_arg(0);
  expect_invalid(&l, args, 8, "attention_decode: argument 'H' is 0; expected a positive integer.");
  memcpy(args, good, sizeof args);
  args[7] = int_arg(INT64_C(1) << 62);
  expect_invalid(&l, args, 8, "attention_decode: the sizes H = 3, D = 4611686018427387904 overflow 64 bits (in 2*H*D*4 bytes); use smaller sizes.");
  memcpy(args, good, sizeof args);
  args[7] = int_arg(4);
  expect_invalid(&l, args, 8, "attention_decode: argument 'q' has 96 bytes; expected 48 (H*D*4 = 3*4*4).");
  memcpy(args, good, sizeof args);
  args[1].bytes = 48;
  expect_invalid(&l, args, 8, "attention_decode: argument 'k' has 48 bytes; expected 96 (H*D*4 = 3*8*4).");
  memcpy(args, good, sizeof args);
  args[3].bytes = 1000;
  expect_invalid(&l, args, 8, "attention_decode: argument 'kv' has 1000 bytes; expected a multiple of 192 (2*H*D*4 = 2*3*8*4, one position of keys and values).");
  memcpy(args, good, sizeof args);
  args[3].kind = PTO_ARG_INPUT;
  expect_invalid(&l, args, 8, "attention_decode: argument 'kv' is an input; expected a buffer or an inout.");
  memcpy(args, good, sizeof args);
  args[4].kind = PTO_ARG_INPUT;
  expect_invalid(&l, args, 8, "attention_decode: argument 'out' is an input; expected an output, an inout or a buffer.");
  memcpy(args, good, sizeof args);
  args[0] = tb_arg(&kv, PTO_ARG_INPUT);
  args[0].bytes = row * 4;
  expect_invalid(&l, args, 8, "attention_decode: argument 'kv' overlaps argument 'q'; expected separate memory.");
  memcpy(args, good, sizeof args);
  args[4] = tb_arg(&v, PTO_ARG_BUFFER);
  expect_invalid(&l, args, 8, "attention_decode: argument 'out' overlaps argument 'v'; expected separate memory.");

  tb_free(&q);
  tb_free(&k);
  tb_free(&v);
  tb_free(&out);
  tb_free(&kv);
  unload(&l);
}
END_TEST

/* Scores of a few hundred overflow expf unless the softmax subtracts the
 * row's maximum first: both kernels must stay finite and right.  Float
 * scores of that size carry absolute errors around 1e-4, hence the looser
 * tolerance. */
START_TEST(test_attention_large_scores) {
  size_t S = 9, H = 2, D = 16, T = 12, row = H * D;
  loaded_t pre = load("attention_prefill"), dec = load("attention_decode");
  prefill_io_t io;
  tbuf_t q = tb_random(row), k = tb_random(row), v = tb_random(row), out = tb_new(row);
  tbuf_t kv_want;
  float *want = malloc(S * row * sizeof *want);
  pto_arg_t dargs[8];
  ck_assert_ptr_nonnull(want);
  prefill_setup(&io, S, H, D, T);
  for (size_t i = 0; i < S * row; i++) io.q.data[i] *= 400.0f;
  expect_ok(&pre, io.args, 8);
  ref_attention_prefill(io.q.data, io.k.data, io.v.data, want, S, H, D);
  expect_close(io.out.data, want, S * row, 1e-3);

  for (size_t i = 0; i < row; i++) q.data[i] *= 400.0f;
  memcpy(dargs, io.args, sizeof dargs);
  dargs[0] = tb_arg(&q, PTO_ARG_INPUT);
  dargs[1] = tb_arg(&k, PTO_ARG_INPUT);
  dargs[2] = tb_arg(&v, PTO_ARG_INPUT);
  dargs[4] = tb_arg(&out, PTO_ARG_OUTPUT);
  dargs[5] = int_arg((int64_t)S);
  expect_ok(&dec, dargs, 8);
  kv_want = tb_copy(&io.kv);
  ref_attention_decode(q.data, kv_want.data, want, T, S, H, D);
  expect_close(out.data, want, row, 1e-3);

  free(want);
  tb_free(&kv_want);
  tb_free(&q);
  tb_free(&k);
  tb_free(&v);
  tb_free(&out);
  prefill_free(&io);
  unload(&pre);
  unload(&dec);
}
END_TEST

/* ---- prefill, then decode on the cache it filled ------------------------ */

START_TEST(test_prefill_then_decode) {
  size_t S = 12, H = 2, D = 8, T = 16, row = H * D;
  loaded_t pre = load("attention_prefill"), dec = load("attention_decode");
  tbuf_t q = tb_random((S + 1) * row), k = tb_random((S + 1) * row), v = tb_random((S + 1) * row);
  tbuf_t kv = tb_new(2 * T * row), out_pre = tb_new(S * row), out_dec = tb_new(row);
  float *want = malloc((S + 1) * row * sizeof *want);
  /* The prompt is the first S rows of q, k, v; the decoded position is row S. */
  pto_arg_t pargs[8] = {tb_arg(&q, PTO_ARG_INPUT),       tb_arg(&k, PTO_ARG_INPUT),
                        tb_arg(&v, PTO_ARG_INPUT),       tb_arg(&kv, PTO_ARG_BUFFER),
                        tb_arg(&out_pre, PTO_ARG_OUTPUT), int_arg((int64_t)S),
                        int_arg((int64_t)H),             int_arg((int64_t)D)};
  pto_arg_t dargs[8];
  ck_assert_ptr_nonnull(want);
  for (uint32_t i = 0; i < 3; i++) pargs[i].bytes = S * row * 4;
  expect_ok(&pre, pargs, 8);

  memcpy(dargs, pargs, sizeof dargs);
  for (uint32_t i = 0; i < 3; i++) {
    dargs[i].offset += S * row * 4;
    dargs[i].bytes = row * 4;
  }
  dargs[4] = tb_arg(&out_dec, PTO_ARG_OUTPUT);
  dargs[5] = int_arg((int64_t)S);
  expect_ok(&dec, dargs, 8);

  /* Causal attention over all S+1 positions: its first S rows are the
   * prefill's output, its last row the decode step's. */
  ref_attention_prefill(q.data, k.data, v.data, want, S + 1, H, D);
  expect_close(out_pre.data, want, S * row, 2e-5);
  expect_close(out_dec.data, want + S * row, row, 2e-5);
  expect_same(kv.data, k.data, (S + 1) * row);
  expect_same(kv.data + T * row, v.data, (S + 1) * row);

  free(want);
  tb_free(&q);
  tb_free(&k);
  tb_free(&v);
  tb_free(&kv);
  tb_free(&out_pre);
  tb_free(&out_dec);
  unload(&pre);
  unload(&dec);
}
END_TEST

static Suite *programs_suite(void) {
  Suite *s = suite_create("programs");
  TCase *tc = tcase_create("programs");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_descriptions);
  tcase_add_test(tc, test_prefill_description_names_the_heap_need);
  tcase_add_test(tc, test_noop_rings);
  tcase_add_test(tc, test_noop_defaults_and_sleep);
  tcase_add_test(tc, test_noop_invalid);
  tcase_add_test(tc, test_vector_add_sizes);
  tcase_add_test(tc, test_vector_add_in_place_and_kinds);
  tcase_add_test(tc, test_vector_add_invalid);
  tcase_add_test(tc, test_matmul_sizes);
  tcase_add_test(tc, test_matmul_invalid);
  tcase_add_test(tc, test_prefill_sizes);
  tcase_add_test(tc, test_prefill_heap_need_is_h_s2_4);
  tcase_add_test(tc, test_prefill_heap_limit);
  tcase_add_test(tc, test_prefill_invalid);
  tcase_add_test(tc, test_decode_sizes);
  tcase_add_test(tc, test_decode_invalid);
  tcase_add_test(tc, test_attention_large_scores);
  tcase_add_test(tc, test_prefill_then_decode);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(programs_suite)
