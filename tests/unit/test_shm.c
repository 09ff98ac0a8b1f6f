/* SPDX-License-Identifier: Apache-2.0 */
/* The shared-memory table (daemon/shm.c) in-process: lookup by name across
 * hash-table growth and removals, registration order for shm.list, the
 * count bounds and the totals all tables share, and a memfd with holes
 * refused. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "check_main.h"
#include "shm.h"

#define PAGE 4096

static int sealed_memfd(size_t bytes, bool allocate) {
  int fd = memfd_create("ptod-test-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(ftruncate(fd, (off_t)bytes), 0);
  if (allocate) ck_assert_int_eq(posix_fallocate(fd, 0, (off_t)bytes), 0);
  ck_assert_int_eq(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW), 0);
  return fd;
}

static void name_of(unsigned i, char *buf, size_t len) { snprintf(buf, len, "region-%u", i); }

typedef struct seen {
  unsigned count;
  char names[4096][16];
} seen_t;

static void collect(void *data, const char *name, uint64_t bytes) {
  seen_t *s = data;
  ck_assert_uint_eq(bytes, PAGE);
  snprintf(s->names[s->count++], sizeof(s->names[0]), "%s", name);
}

START_TEST(lookup_order_and_totals_across_growth) {
  enum { N = 3000 };
  shm_totals_t totals = {0};
  shm_limits_t limits = {.bytes = UINT64_MAX, .regions = N,
                         .bytes_total = UINT64_MAX, .regions_total = N};
  shm_table_t *t = shm_table_new(&totals);
  static seen_t seen;
  pto_error_t err;
  char name[16];
  int fd = sealed_memfd(PAGE, true);
  for (unsigned i = 0; i < N; i++) {
    name_of(i, name, sizeof(name));
    ck_assert_int_eq(shm_register(t, name, PAGE, dup(fd), &limits, &err), 0);
  }
  ck_assert_uint_eq(totals.regions, N);
  ck_assert_uint_eq(totals.bytes, (uint64_t)N * PAGE);
  /* Every third one goes; the others are still found, in order. */
  for (unsigned i = 0; i < N; i += 3) {
    uint64_t bytes;
    name_of(i, name, sizeof(name));
    ck_assert_int_eq(shm_unregister(t, name, &bytes, &err), 0);
  }
  for (unsigned i = 0; i < N; i++) {
    shm_region_t *r;
    uint8_t *p;
    name_of(i, name, sizeof(name));
    int rc = shm_acquire(t, name, 0, PAGE, "test", &r, &p, &err);
    ck_assert_int_eq(rc, i % 3 == 0 ? -PTO_E_NOT_FOUND : 0);
    if (rc == 0) shm_release(r);
  }
  seen.count = 0;
  shm_foreach(t, collect, &seen);
  ck_assert_uint_eq(seen.count, shm_count(t));
  for (unsigned i = 1, k = 0; i < N; i++) {
    if (i % 3 == 0) continue;
    name_of(i, name, sizeof(name));
    ck_assert_str_eq(seen.names[k++], name);
  }
  ck_assert_uint_eq(totals.regions, N - N / 3);
  shm_table_close(t);
  ck_assert_uint_eq(totals.regions, 0);
  ck_assert_uint_eq(totals.bytes, 0);
  close(fd);
}
END_TEST

START_TEST(count_bounds_per_table_and_in_total) {
  shm_totals_t totals = {0};
  shm_limits_t limits = {.bytes = UINT64_MAX, .regions = 2,
                         .bytes_total = UINT64_MAX, .regions_total = 3};
  shm_table_t *a = shm_table_new(&totals), *b = shm_table_new(&totals);
  pto_error_t err;
  uint64_t bytes;
  int fd = sealed_memfd(PAGE, true);
  ck_assert_int_eq(shm_register(a, "x", PAGE, dup(fd), &limits, &err), 0);
  ck_assert_int_eq(shm_register(a, "y", PAGE, dup(fd), &limits, &err), 0);
  ck_assert_int_eq(shm_register(a, "z", PAGE, dup(fd), &limits, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_ptr_nonnull(strstr(err.message, "shm_regions = 2"));
  ck_assert_int_eq(shm_register(b, "x", PAGE, dup(fd), &limits, &err), 0);
  ck_assert_int_eq(shm_register(b, "y", PAGE, dup(fd), &limits, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_ptr_nonnull(strstr(err.message, "shm_regions_total = 3"));
  ck_assert_uint_eq(err.requested, 4);
  ck_assert_uint_eq(err.capacity, 3);
  ck_assert_int_eq(shm_unregister(a, "x", &bytes, &err), 0);
  ck_assert_int_eq(shm_register(b, "y", PAGE, dup(fd), &limits, &err), 0);
  ck_assert_uint_eq(shm_count(a) + shm_count(b), totals.regions);
  shm_table_close(a);
  shm_table_close(b);
  close(fd);
}
END_TEST

START_TEST(byte_bound_in_total) {
  shm_totals_t totals = {0};
  shm_limits_t limits = {.bytes = 2 * PAGE, .regions = 8,
                         .bytes_total = 3 * PAGE, .regions_total = 8};
  shm_table_t *a = shm_table_new(&totals), *b = shm_table_new(&totals);
  pto_error_t err;
  uint64_t bytes;
  int fd = sealed_memfd(2 * PAGE, true);
  ck_assert_int_eq(shm_register(a, "x", 2 * PAGE, dup(fd), &limits, &err), 0);
  ck_assert_int_eq(shm_register(b, "x", 2 * PAGE, dup(fd), &limits, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_ptr_nonnull(strstr(err.message, "shm_limit_total = 12288"));
  ck_assert_uint_eq(err.requested, 2 * PAGE);
  ck_assert_uint_eq(err.capacity, PAGE);
  ck_assert_int_eq(shm_register(b, "y", PAGE, dup(fd), &limits, &err), 0);
  ck_assert_uint_eq(totals.bytes, 3 * PAGE);
  ck_assert_int_eq(shm_unregister(a, "x", &bytes, &err), 0);
  ck_assert_int_eq(shm_register(b, "x", PAGE, dup(fd), &limits, &err), 0);
  shm_table_close(a);
  shm_table_close(b);
  close(fd);
}
END_TEST

START_TEST(memfd_with_holes_refused) {
  shm_totals_t totals = {0};
  shm_limits_t limits = {.bytes = UINT64_MAX, .regions = 8,
                         .bytes_total = UINT64_MAX, .regions_total = 8};
  shm_table_t *t = shm_table_new(&totals);
  pto_error_t err;
  int fd = sealed_memfd(16 * PAGE, false);
  ck_assert_int_eq(pwrite(fd, "x", 1, 0), 1);
  ck_assert_int_eq(shm_register(t, "r", 16 * PAGE, dup(fd), &limits, &err), -PTO_E_INVALID_ARGS);
  ck_assert_ptr_nonnull(strstr(err.message, "posix_fallocate"));
  ck_assert_uint_eq(err.requested, 16 * PAGE);
  ck_assert_uint_eq(shm_count(t), 0);
  ck_assert_int_eq(posix_fallocate(fd, 0, 16 * PAGE), 0);
  ck_assert_int_eq(shm_register(t, "r", 16 * PAGE, dup(fd), &limits, &err), 0);
  shm_table_close(t);
  close(fd);
}
END_TEST

static Suite *shm_suite(void) {
  Suite *s = suite_create("shm");
  TCase *tc = tcase_create("shm");
  tcase_add_test(tc, lookup_order_and_totals_across_growth);
  tcase_add_test(tc, count_bounds_per_table_and_in_total);
  tcase_add_test(tc, byte_bound_in_total);
  tcase_add_test(tc, memfd_with_holes_refused);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(shm_suite)
