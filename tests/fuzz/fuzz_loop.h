/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_loop.h — what the harnesses that keep one daemon (or one server)
 * across inputs share: fuzz_server and fuzz_requests.
 *
 * Such a harness checks after every input that the input left nothing in
 * the loop and closed every fd it was given, without closing the loop:
 * fuzz_loop_handles counts the handles still open (not closing), to be
 * compared with the count before the input, and fuzz_closer_drain waits
 * until the closer's thread (closer.h) has closed every fd handed to it,
 * so fuzz_fds_check (fuzz_common.h) sees the table as the input left it.
 * Header-only, like fuzz_common.h.
 */
#ifndef PTOD_FUZZ_LOOP_H
#define PTOD_FUZZ_LOOP_H

#include <sched.h>

#include <uv.h>

#include "closer.h"

static void fuzz_count_open_handle(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) (*(unsigned *)arg)++;
}

static inline unsigned fuzz_loop_handles(uv_loop_t *loop) {
  unsigned n = 0;
  uv_walk(loop, fuzz_count_open_handle, &n);
  return n;
}

/* The closer has one fd at most per connection and passed fd, each closed
 * at once: yield to its thread rather than sleep (a sleep costs more than
 * the whole input). */
static inline void fuzz_closer_drain(void) {
  while (closer_pending() > 0) sched_yield();
}

#endif
