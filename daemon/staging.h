/* SPDX-License-Identifier: Apache-2.0 */
/* staging.h — device memory for a dispatch's host arguments.
 *
 * Inline `data` args are copied here from the message, `out` args are
 * zeroed here, and the program runs on these bytes.  The current area is
 * grow-only (steady-state dispatches commit nothing) and belongs to the
 * device thread.  An answer whose outputs are large is written to the
 * socket straight from this memory: the area is then lent to the answer
 * (staging_lend) and the next dispatch stages in the spare area, or a new
 * one; the loop gives the area back when the answer is written or dropped
 * (staging_give_back): one waits for the device thread, which keeps it as
 * the spare, and the others are released at once.  Every area is
 * accounted with the resident buffers (buf_set_staging_bytes).
 */
#ifndef PTOD_STAGING_H
#define PTOD_STAGING_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <pto/errors.h>

#include "buffers.h"
#include "device.h"

typedef struct staging staging_t;

typedef struct staging_area {
  staging_t *st;
  void *mem;
  uint64_t bytes;
  struct staging_area *next; /* in the given-back list */
} staging_area_t;

struct staging {
  dev_device_t *dev;
  buf_table_t *buffers;
  void *mem; /* the current area (device thread) */
  uint64_t bytes;
  pthread_mutex_t lock;      /* guards what follows */
  /* The lent area whose answer is done: written under the lock, read
   * without it first so that a dispatch with none given back takes no lock. */
  _Atomic(staging_area_t *) given_back;
  uint64_t held;              /* bytes of every area: current, lent, given back */
};

void staging_init(staging_t *st, dev_device_t *dev, buf_table_t *buffers);

/* Have at least `need` bytes at st->mem (device thread): 0, or
 * -PTO_E_OUT_OF_MEMORY with the sentence in err (the device's memory left
 * is not enough). */
int staging_reserve(staging_t *st, uint64_t need, pto_error_t *err);

/* Device thread: hand the current area to an answer that is written from
 * it; NULL (and nothing lent) when out of memory for the record. */
staging_area_t *staging_lend(staging_t *st);

/* Any thread: the answer written from `area` is done with it (NULL: a
 * no-op).  At most one given-back area waits for the device thread (the
 * largest); any other is released to the device here. */
void staging_give_back(staging_area_t *area);

/* Give every area back to the device (shut-down, no answer in flight). */
void staging_release(staging_t *st);

#endif
