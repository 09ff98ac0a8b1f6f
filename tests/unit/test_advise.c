/* SPDX-License-Identifier: Apache-2.0 */
/* test_advise — the advisor's rule (advise.h): at or above every peak,
 * exact powers of 2 staying, a window one above the live tasks, the
 * [ring] and [prewarm] lines; and its per-program and several-sizings
 * bookkeeping. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "advise.h"

static pto_sizing_t peaks_of(uint64_t tasks, uint64_t heap, uint64_t deps) {
  pto_sizing_t s;
  memset(&s, 0, sizeof s);
  s.value[PTO_FIELD_TASK_WINDOW][0] = tasks;
  s.value[PTO_FIELD_HEAP][0] = heap;
  s.value[PTO_FIELD_DEP_POOL][0] = deps;
  return s;
}

START_TEST(at_or_above_every_peak) {
  static const struct {
    uint64_t tasks, heap, deps, window, want_heap, pool;
  } cases[] = {
      {0, 0, 0, 4, 1024, 4},            /* unused: the smallest valid values */
      {3, 1024, 4, 4, 1024, 4},         /* 3 live fit a window of 4; 1 KiB stays 1K */
      {4, 4096, 9, 8, 4096, 9},         /* an exact power of 2 stays (not 8K) */
      {7, 4097, 16, 8, 8192, 16},       /* one byte more takes the next */
      {26, 524288, 16, 32, 524288, 16}, /* the prefill of docs/operations.md */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    pto_sizing_t obs = peaks_of(cases[i].tasks, cases[i].heap, cases[i].deps), rec;
    advise_recommend(&obs, &rec);
    ck_assert_uint_eq(rec.value[PTO_FIELD_TASK_WINDOW][0], cases[i].window);
    ck_assert_uint_eq(rec.value[PTO_FIELD_HEAP][0], cases[i].want_heap);
    ck_assert_uint_eq(rec.value[PTO_FIELD_DEP_POOL][0], cases[i].pool);
    for (int r = 1; r < PTO_RING_COUNT; r++) {
      ck_assert_uint_eq(rec.value[PTO_FIELD_TASK_WINDOW][r], 4);
      ck_assert_uint_eq(rec.value[PTO_FIELD_HEAP][r], 1024);
      ck_assert_uint_eq(rec.value[PTO_FIELD_DEP_POOL][r], 4);
    }
  }
}
END_TEST

START_TEST(config_lines_for_ring_and_prewarm) {
  pto_sizing_t obs = peaks_of(26, 524288, 16), rec;
  char text[1024];
  obs.value[PTO_FIELD_HEAP][1] = UINT64_C(3) << 30; /* 3 GiB: 4G */
  advise_recommend(&obs, &rec);
  advise_config_lines(&rec, text, sizeof text);
  ck_assert_str_eq(text,
                   "[ring]\ntask_window = 32,4,4,4\nheap = 512K,4G,1K,1K\ndep_pool = 16,4,4,4\n"
                   "\n[prewarm]\ntask_window = 32,4,4,4\nheap = 512K,4G,1K,1K\n"
                   "dep_pool = 16,4,4,4\n");
}
END_TEST

START_TEST(per_program_and_several_sizings) {
  advise_t *a;
  pto_sizing_resolved_t s1, s2;
  pto_sizing_t p1 = peaks_of(26, 524288, 16), p2 = peaks_of(10, 0, 16), obs;
  advise_result_mem_t mem;
  proto_advise_result_t res;
  memset(&s1, 0, sizeof s1);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    s1.value[PTO_FIELD_TASK_WINDOW][r] = 256;
    s1.value[PTO_FIELD_HEAP][r] = 1u << 20;
    s1.value[PTO_FIELD_DEP_POOL][r] = 1024;
  }
  s2 = s1;
  s2.value[PTO_FIELD_HEAP][0] = 512u << 10;
  ck_assert_int_eq(advise_create(&a), 0);
  advise_record(a, "attention_prefill", &p1, &s1);
  advise_record(a, "attention_decode", &p2, &s2);
  advise_record(a, "attention_decode", &p2, &s2);
  ck_assert_uint_eq(advise_observed(a, &obs), 3);
  ck_assert_uint_eq(obs.value[PTO_FIELD_TASK_WINDOW][0], 26);
  ck_assert_int_eq(advise_result(a, &res, &mem), 0);
  ck_assert_uint_eq(res.nprograms, 2);
  ck_assert_str_eq(res.programs[1].program, "attention_decode");
  ck_assert_uint_eq(res.programs[1].dispatches, 2);
  ck_assert_uint_eq(res.programs[1].recommended.value[PTO_FIELD_TASK_WINDOW][0], 16);
  ck_assert_uint_eq(res.programs[1].recommended.value[PTO_FIELD_HEAP][0], 1024);
  ck_assert_uint_eq(res.nsizings, 2);
  ck_assert_uint_eq(res.nwarnings, 1);
  ck_assert_ptr_nonnull(strstr(res.warnings[0], "2 different ring sizings"));
  ck_assert_ptr_nonnull(strstr(res.warnings[0], "[ring] task_window = 32,4,4,4, heap = 512K,1K,1K,1K"));
  advise_result_free(&mem);
  advise_free(a);
}
END_TEST

static Suite *advise_suite(void) {
  Suite *s = suite_create("advise");
  TCase *tc = tcase_create("advise");
  tcase_add_test(tc, at_or_above_every_peak);
  tcase_add_test(tc, config_lines_for_ring_and_prewarm);
  tcase_add_test(tc, per_program_and_several_sizings);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(advise_suite)
