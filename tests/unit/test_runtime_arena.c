/* SPDX-License-Identifier: Apache-2.0 */
/* test_runtime_arena.c — the arena and its single-slot cache: hits, misses,
 * equal keys spelled differently, rebuilds into memory already committed,
 * the device memory limit (refused before the current arena is touched),
 * invalid sizings, and the per-run thread count. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "check_main.h"
#include "runtime_fixture.h"

static pto_sizing_t level(uint64_t window, uint64_t heap, uint64_t dep) {
  pto_sizing_t s;
  memset(&s, 0, sizeof s);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    s.value[PTO_FIELD_TASK_WINDOW][r] = window;
    s.value[PTO_FIELD_HEAP][r] = heap;
    s.value[PTO_FIELD_DEP_POOL][r] = dep;
  }
  return s;
}

static int orch_one(const pto_orch_api_t *api, pto_orch_t *o, const pto_arg_t *args,
                    uint32_t nargs) {
  pto_task_args_t a;
  (void)nargs;
  fx_task(&a);
  fx_tensor(&a, fx_view(args[0].base, 1, 0, 1), PTO_OUT_EXISTING);
  fx_scalar(&a, 42);
  return api->submit(o, fx_k_fill, &a);
}

static void expect_run_ok(fx_t *f) {
  pto_error_t err;
  int32_t *x = fx_buffer(f, 1);
  pto_arg_t args[1] = {fx_arg_buffer(x, 1)};
  ck_assert_msg(fx_run(f, orch_one, args, 1, NULL, &err) == 0, "%s", err.message);
  ck_assert_int_eq(x[0], 42);
  fx_free(f, x, 1);
}

#define PLENTY (UINT64_C(1) << 34)

START_TEST(test_hit_miss_and_spelling) {
  fx_t f;
  pto_error_t err;
  rt_arena_result_t res;
  rt_cache_stats_t cs;
  pto_sizing_resolved_t a, a2, b;
  pto_sizing_t config = level(64, 65536, 64), request;

  fx_open(&f);
  rt_cache_stats(f.rt, &cs);
  ck_assert(!cs.valid);
  ck_assert_uint_eq(cs.builds, 0);

  /* a: everything from the config level; a2: ring 0's heap and ring 2's
   * window spelled out in the request with the same values. */
  pto_sizing_resolve(NULL, NULL, &config, &a);
  memset(&request, 0, sizeof request);
  request.value[PTO_FIELD_HEAP][0] = 65536;
  request.value[PTO_FIELD_TASK_WINDOW][2] = 64;
  pto_sizing_resolve(&request, NULL, &config, &a2);
  ck_assert_int_eq(a2.source[PTO_FIELD_HEAP][0], PTO_SOURCE_REQUEST);
  request.value[PTO_FIELD_HEAP][0] = 131072;
  pto_sizing_resolve(&request, NULL, &config, &b);

  ck_assert_int_eq(rt_ensure_arena(f.rt, &a, PLENTY, &res, &err), 0);
  ck_assert(!res.hit);
  ck_assert_uint_eq(res.key, pto_sizing_key(&a));
  ck_assert_uint_eq(res.bytes, rt_arena_bytes(f.rt, &a));
  expect_run_ok(&f);

  ck_assert_int_eq(rt_ensure_arena(f.rt, &a2, PLENTY, &res, &err), 0);
  ck_assert(res.hit);
  ck_assert_uint_eq(res.build_us, 0);
  ck_assert_uint_eq(res.key, pto_sizing_key(&a));
  expect_run_ok(&f);

  ck_assert_int_eq(rt_ensure_arena(f.rt, &b, PLENTY, &res, &err), 0);
  ck_assert(!res.hit);
  ck_assert_uint_ne(res.key, pto_sizing_key(&a));
  expect_run_ok(&f);
  /* One slot: going back rebuilds. */
  ck_assert_int_eq(rt_ensure_arena(f.rt, &a, PLENTY, &res, &err), 0);
  ck_assert(!res.hit);

  rt_cache_stats(f.rt, &cs);
  ck_assert(cs.valid);
  ck_assert_uint_eq(cs.key, pto_sizing_key(&a));
  ck_assert(pto_sizing_equal(&cs.sizing, &a));
  ck_assert_uint_eq(cs.builds, 3);
  ck_assert_uint_eq(cs.hits, 1);
  ck_assert_uint_eq(cs.misses, 3);
  ck_assert_uint_ge(cs.total_build_us, cs.last_build_us);

  /* A prewarm builds without being a lookup: builds move, hits and misses
   * (what dispatches met) do not. */
  ck_assert_int_eq(rt_prewarm_arena(f.rt, &b, PLENTY, &res, &err), 0);
  ck_assert(!res.hit);
  ck_assert_int_eq(rt_prewarm_arena(f.rt, &b, PLENTY, &res, &err), 0);
  ck_assert(res.hit);
  rt_cache_stats(f.rt, &cs);
  ck_assert_uint_eq(cs.builds, 4);
  ck_assert_uint_eq(cs.hits, 1);
  ck_assert_uint_eq(cs.misses, 3);
  ck_assert_int_eq(rt_ensure_arena(f.rt, &b, PLENTY, &res, &err), 0);
  ck_assert(res.hit);
  fx_close(&f);
}
END_TEST

START_TEST(test_rebuild_keeps_committed_memory) {
  fx_t f;
  pto_error_t err;
  rt_arena_result_t res;
  rt_cache_stats_t cs;
  pto_sizing_resolved_t big = fx_sizing(256, 1 << 20, 256), small = fx_sizing(64, 1 << 16, 64);
  uint64_t committed;

  fx_open(&f);
  ck_assert_int_eq(rt_ensure_arena(f.rt, &big, PLENTY, &res, &err), 0);
  committed = dev_mem_committed(f.dev);
  ck_assert_uint_eq(committed, rt_arena_bytes(f.rt, &big));
  ck_assert_uint_lt(rt_arena_bytes(f.rt, &small), committed);

  /* Smaller: the regions already committed are kept, nothing is committed. */
  ck_assert_int_eq(rt_ensure_arena(f.rt, &small, PLENTY, &res, &err), 0);
  ck_assert(!res.hit);
  ck_assert_uint_eq(dev_mem_committed(f.dev), committed);
  ck_assert_uint_eq(res.bytes, committed);
  expect_run_ok(&f);

  /* Kept regions larger than the memory now allowed are given back. */
  ck_assert_int_eq(rt_ensure_arena(f.rt, &big, PLENTY, &res, &err), 0);
  ck_assert_int_eq(
      rt_ensure_arena(f.rt, &small, rt_arena_bytes(f.rt, &small), &res, &err), 0);
  ck_assert_uint_eq(res.bytes, rt_arena_bytes(f.rt, &small));
  ck_assert_uint_eq(dev_mem_committed(f.dev), rt_arena_bytes(f.rt, &small));
  rt_cache_stats(f.rt, &cs);
  ck_assert_uint_eq(cs.bytes, res.bytes);
  expect_run_ok(&f);
  fx_close(&f);
}
END_TEST

START_TEST(test_memory_limit_keeps_current_arena) {
  fx_t f;
  pto_error_t err;
  rt_arena_result_t res;
  rt_cache_stats_t before, after;
  pto_sizing_resolved_t a = fx_sizing(64, 1 << 16, 64), b = fx_sizing(64, 1 << 22, 64);
  uint64_t need;
  char msg[512];

  fx_open(&f);
  need = rt_arena_bytes(f.rt, &b);
  ck_assert_int_eq(rt_ensure_arena(f.rt, &a, PLENTY, &res, &err), 0);
  rt_cache_stats(f.rt, &before);

  ck_assert_int_eq(rt_ensure_arena(f.rt, &b, need - 1, &res, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_int_eq(err.code, PTO_E_OUT_OF_MEMORY);
  ck_assert_uint_eq(err.requested, need);
  ck_assert_uint_eq(err.capacity, need - 1);
  snprintf(msg, sizeof msg,
           "The arena for this sizing needs %llu bytes of device memory but only %llu bytes are "
           "available (the device memory limit minus resident buffers); lower ring_heap or "
           "ring_task_window, free buffers, or raise the memory limit.",
           (unsigned long long)need, (unsigned long long)(need - 1));
  ck_assert_str_eq(err.message, msg);

  rt_cache_stats(f.rt, &after);
  ck_assert(after.valid);
  ck_assert_uint_eq(after.key, before.key);
  ck_assert_uint_eq(after.builds, before.builds);
  ck_assert_uint_eq(after.bytes, before.bytes);
  ck_assert_uint_eq(dev_mem_committed(f.dev), before.bytes);
  expect_run_ok(&f);
  /* Still a hit afterwards. */
  ck_assert_int_eq(rt_ensure_arena(f.rt, &a, PLENTY, &res, &err), 0);
  ck_assert(res.hit);
  /* Exactly enough is enough. */
  ck_assert_int_eq(rt_ensure_arena(f.rt, &b, need, &res, &err), 0);
  expect_run_ok(&f);
  fx_close(&f);
}
END_TEST

START_TEST(test_invalid_sizing_and_no_arena) {
  fx_t f;
  pto_error_t err;
  rt_arena_result_t res;
  rt_cache_stats_t cs;
  pto_sizing_resolved_t a = fx_sizing(64, 1 << 16, 64), bad = a;
  int32_t x = 0;
  pto_arg_t args[1] = {fx_arg_buffer(&x, 1)};

  fx_open(&f);
  ck_assert_int_eq(fx_run(&f, orch_one, args, 1, NULL, &err), -PTO_E_INTERNAL);
  ck_assert_str_eq(err.message, "No arena is built; call rt_ensure_arena before rt_run.");

  ck_assert_int_eq(rt_ensure_arena(f.rt, &a, PLENTY, &res, &err), 0);
  bad.value[PTO_FIELD_HEAP][2] = 1000;
  ck_assert_uint_eq(rt_arena_bytes(f.rt, &bad), UINT64_MAX);
  ck_assert_int_eq(rt_ensure_arena(f.rt, &bad, PLENTY, &res, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000");
  rt_cache_stats(f.rt, &cs);
  ck_assert(cs.valid);
  ck_assert_uint_eq(cs.key, pto_sizing_key(&a));
  expect_run_ok(&f);
  fx_close(&f);
}
END_TEST

START_TEST(test_thread_count_per_run) {
  fx_t f;
  pto_error_t err;
  pto_sizing_resolved_t a = fx_sizing(64, 1 << 16, 64);
  int32_t *x;
  pto_program_t p = fx_program("test", orch_one);
  rt_run_config_t cfg = {.aicpu_thread_num = 2};

  fx_open(&f);
  fx_arena(&f, &a);
  x = fx_buffer(&f, 1);
  pto_arg_t args[1] = {fx_arg_buffer(x, 1)};
  for (uint32_t n = 2; n <= 4; n++) {
    cfg.aicpu_thread_num = n;
    x[0] = 0;
    ck_assert_msg(rt_run(f.rt, &p, args, 1, &cfg, NULL, &err) == 0, "%s", err.message);
    ck_assert_int_eq(x[0], 42);
  }
  cfg.aicpu_thread_num = 5;
  ck_assert_int_eq(rt_run(f.rt, &p, args, 1, &cfg, NULL, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message,
                   "aicpu_thread_num must be in [2, 4] (this ptod starts 4 threads), got 5.");
  cfg.aicpu_thread_num = 2;
  ck_assert_int_eq(rt_run(f.rt, &p, args, 1, &cfg, NULL, &err), 0);
  fx_free(&f, x, 1);
  fx_close(&f);
}
END_TEST

START_TEST(test_bad_options) {
  dev_device_t *dev;
  rt_runtime_t *rt;
  pto_error_t err;
  rt_options_t opts = {0};
  ck_assert_int_eq(dev_open("npu", NULL, &dev, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, "Platform 'npu' is not built into this ptod; the only platform is 'sim'.");
  ck_assert_int_eq(dev_open("sim", NULL, &dev, &err), 0);
  ck_assert_str_eq(dev_name(dev), "sim");
  ck_assert_uint_eq(dev_core_count(dev), 4);
  opts.device = dev;
  opts.programs_dir = "/nonexistent";
  opts.aicpu_thread_num = 1;
  ck_assert_int_eq(rt_create(&opts, &rt, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.key, "aicpu_thread_num");
  ck_assert_str_eq(err.message, "aicpu_thread_num must be in [2, 64] (one orchestrator and at "
                                "least one scheduler), got 1.");
  opts.aicpu_thread_num = 0;
  opts.cores = 1000;
  ck_assert_int_eq(rt_create(&opts, &rt, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, "cores must be in [1, 256], got 1000.");
  opts.cores = 1;
  ck_assert_int_eq(rt_create(&opts, &rt, &err), 0);
  rt_destroy(rt);
  dev_close(dev);
}
END_TEST

Suite *runtime_arena_suite(void) {
  Suite *s = suite_create("runtime_arena");
  TCase *tc = tcase_create("arena");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_hit_miss_and_spelling);
  tcase_add_test(tc, test_rebuild_keeps_committed_memory);
  tcase_add_test(tc, test_memory_limit_keeps_current_arena);
  tcase_add_test(tc, test_invalid_sizing_and_no_arena);
  tcase_add_test(tc, test_thread_count_per_run);
  tcase_add_test(tc, test_bad_options);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(runtime_arena_suite)
