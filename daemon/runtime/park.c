/* SPDX-License-Identifier: Apache-2.0 */
/* park.c — futex event count. */
#include "park.h"

#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static void futex_wait(_Atomic uint32_t *word, uint32_t key, uint64_t timeout_ns) {
  struct timespec ts, *tsp = NULL;
  if (timeout_ns) {
    ts.tv_sec = (time_t)(timeout_ns / 1000000000u);
    ts.tv_nsec = (long)(timeout_ns % 1000000000u);
    tsp = &ts;
  }
  (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAIT_PRIVATE, key, tsp, NULL, 0);
}

static void futex_wake(_Atomic uint32_t *word, int n) {
  (void)syscall(SYS_futex, (uint32_t *)word, FUTEX_WAKE_PRIVATE, n, NULL, NULL, 0);
}

void rt_park_init(rt_park_t *p) {
  atomic_init(&p->seq, 0);
  atomic_init(&p->sleepers, 0);
  atomic_init(&p->spinners, 0);
  atomic_init(&p->avail, 0);
}

uint32_t rt_park_prepare(rt_park_t *p) {
  uint32_t key;
  atomic_fetch_add(&p->sleepers, 1);
  key = atomic_load(&p->seq);
  atomic_thread_fence(memory_order_seq_cst); /* before the caller re-checks */
  return key;
}

void rt_park_cancel(rt_park_t *p) { atomic_fetch_sub(&p->sleepers, 1); }

void rt_park_wait(rt_park_t *p, uint32_t key, uint64_t timeout_ns) {
  futex_wait(&p->seq, key, timeout_ns);
  atomic_fetch_sub(&p->sleepers, 1);
}

static void rt_park_wake(rt_park_t *p, int n) {
  atomic_fetch_add(&p->seq, 1);
  futex_wake(&p->seq, n);
}

void rt_park_wake_all(rt_park_t *p) {
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load(&p->sleepers) != 0) rt_park_wake(p, INT_MAX);
}

void rt_park_notify(rt_park_t *p) {
  atomic_thread_fence(memory_order_seq_cst);
  if (atomic_load(&p->sleepers) != 0 && atomic_load(&p->avail) <= 0) rt_park_wake(p, 1);
}

void rt_park_avail(rt_park_t *p, int32_t delta) {
  atomic_fetch_add(&p->avail, delta);
  atomic_thread_fence(memory_order_seq_cst); /* before the caller re-checks */
}

bool rt_park_try_spin(rt_park_t *p) {
  uint32_t zero = 0;
  return atomic_compare_exchange_strong(&p->spinners, &zero, 1);
}

void rt_park_end_spin(rt_park_t *p) {
  atomic_store(&p->spinners, 0);
  atomic_thread_fence(memory_order_seq_cst);
}

void rt_spin_pause(uint32_t iteration) {
  /* Yield on every turn: with more hot threads than the two vCPUs, the
   * thread we wait for may be the one waiting for this CPU, and a yield
   * hands it over in about a microsecond instead of a time slice.  A few
   * pauses first keep the loop off the bus. */
  (void)iteration;
  for (int i = 0; i < 4; i++) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
  }
  sched_yield();
}
