/* SPDX-License-Identifier: Apache-2.0 */
/* park.h — where the runtime's threads sleep when they have nothing to do.
 *
 * An event count over a futex word.  A waiter announces itself
 * (rt_park_prepare), checks its condition once more, and then either
 * cancels or sleeps (rt_park_wait); a waker publishes its work first and
 * then calls a wake function, which costs one atomic load when nobody
 * sleeps.  The seq_cst ordering of "announce, re-check" against "publish,
 * look for sleepers" means a wake-up is never lost.
 *
 * Worker parks (cores, schedulers) also count the workers that are
 * available: awake and not inside a kernel.  rt_park_notify wakes a
 * sleeper only when none is available, because an available worker will
 * take the work itself: a flowing pipeline makes no futex calls (system
 * calls are what a hand-off costs most on these virtual machines).  A
 * worker leaving the count (to sleep, or to run a kernel) re-checks for
 * work after it left, so nothing waits behind a busy worker.  One worker
 * per park at a time spins before sleeping, for a bounded time.
 *
 * The futex carries no data: every hand-off goes through atomics with
 * acquire/release, so ThreadSanitizer sees all of it.
 */
#ifndef PTOD_RT_PARK_H
#define PTOD_RT_PARK_H

#include <stdbool.h>
#include <stdint.h>

#include "rt_internal.h"

void rt_park_init(rt_park_t *p);

/* Announce a sleeper; returns the key for rt_park_wait. */
uint32_t rt_park_prepare(rt_park_t *p);
/* The condition held after all: withdraw the announcement. */
void rt_park_cancel(rt_park_t *p);
/* Sleep until woken (or timeout_ns passes, 0: no timeout, or a spurious
 * wake-up); withdraws the announcement.  Re-check the condition after. */
void rt_park_wait(rt_park_t *p, uint32_t key, uint64_t timeout_ns);

/* Wake every sleeper (if there is one). */
void rt_park_wake_all(rt_park_t *p);

/* Worker parks: work was published; wake one sleeper unless a worker is
 * available to take it. */
void rt_park_notify(rt_park_t *p);
/* A worker becomes available (+1) or stops being available (-1). */
void rt_park_avail(rt_park_t *p, int32_t delta);

/* Become the park's spinner if there is none; rt_park_end_spin ends it. */
bool rt_park_try_spin(rt_park_t *p);
void rt_park_end_spin(rt_park_t *p);

/* One turn of a spin loop: a few cpu_relax and a yield, so that a runnable
 * thread on the same CPU goes first (2-vCPU machines). */
void rt_spin_pause(uint32_t iteration);

#endif
