/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_loop.h — what the harnesses that keep one daemon (or one server)
 * across inputs share: fuzz_server and fuzz_requests.
 *
 * Such a harness checks after every input that the input left nothing in
 * the loop and closed every fd it was given, without closing the loop:
 * fuzz_loop_handles counts the handles still open (not closing), to be
 * compared with the count before the input, and fuzz_closer_drain waits
 * until the closer's thread (closer.h) has closed every fd handed to it,
 * so fuzz_fds_check (fuzz_common.h) sees the table as the input left it;
 * fuzz_outcomes is where each input's outcome goes, for the replay check.
 * Header-only, like fuzz_common.h.
 */
#ifndef PTOD_FUZZ_LOOP_H
#define PTOD_FUZZ_LOOP_H

#include <sched.h>

#include <uv.h>

#include "closer.h"
#include "fuzz_common.h"

static void fuzz_count_handle(uv_handle_t *h, void *arg) {
  (void)h;
  (*(unsigned *)arg)++;
}

/* Handles in the loop, closing ones too (until their close callback ran). */
static inline unsigned fuzz_loop_handles(uv_loop_t *loop) {
  unsigned n = 0;
  uv_walk(loop, fuzz_count_handle, &n);
  return n;
}

/* Run the loop until no more handles are in it than `before` (closing
 * ones gone: a connection's socket reaches the closer from its close
 * callback), or fail after 1000 rounds. */
static inline void fuzz_loop_settle(uv_loop_t *loop, unsigned before) {
  for (int rounds = 0; fuzz_loop_handles(loop) > before; rounds++) {
    FUZZ_CHECK(rounds < 1000, "%u loop handles stay open after the input, %u before it",
               fuzz_loop_handles(loop), before);
    uv_run(loop, UV_RUN_NOWAIT);
  }
  FUZZ_CHECK(fuzz_loop_handles(loop) == before, "%u loop handles after the input, %u before it",
             fuzz_loop_handles(loop), before);
}

/* The closer has one fd at most per connection and passed fd, each closed
 * at once: yield to its thread rather than sleep (a sleep costs more than
 * the whole input). */
static inline void fuzz_closer_drain(void) {
  while (closer_pending() > 0) sched_yield();
}

/* The file PTOD_FUZZ_OUTCOMES names, opened once for appending, or NULL
 * when it is not set: the harness writes there a line per input saying
 * what the input got.  Lines alike for an input run alone and run after
 * others show that one input left nothing that changed the next
 * (docs/reliability.md, "Fuzzing"). */
static inline FILE *fuzz_outcomes(void) {
  static FILE *f;
  static bool opened;
  if (!opened) {
    const char *path = getenv("PTOD_FUZZ_OUTCOMES");
    opened = true;
    f = path ? fopen(path, "a") : NULL;
    FUZZ_CHECK(!path || f, "%s: %s", path, strerror(errno));
  }
  return f;
}

#endif
