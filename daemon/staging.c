/* SPDX-License-Identifier: Apache-2.0 */
#include "staging.h"

#include <stdlib.h>
#include <string.h>

void staging_init(staging_t *st, dev_device_t *dev, buf_table_t *buffers) {
  memset(st, 0, sizeof(*st));
  st->dev = dev;
  st->buffers = buffers;
  pthread_mutex_init(&st->lock, NULL);
  atomic_init(&st->given_back, NULL);
}

/* Under the lock: `delta` bytes of areas more (or fewer) held. */
static void account(staging_t *st, int64_t delta) {
  st->held = (uint64_t)((int64_t)st->held + delta);
  if (st->buffers) buf_set_staging_bytes(st->buffers, dev_mem_round(st->dev, st->held));
}

static void release_area(staging_t *st, void *mem, uint64_t bytes) {
  dev_mem_release(st->dev, mem, bytes);
  pthread_mutex_lock(&st->lock);
  account(st, -(int64_t)bytes);
  pthread_mutex_unlock(&st->lock);
}

/* Device thread: make the largest area given back the current one (if
 * there is none) and release the rest. */
static void take_given_back(staging_t *st) {
  staging_area_t *list, *a, *next;
  if (!atomic_load_explicit(&st->given_back, memory_order_acquire)) return;
  pthread_mutex_lock(&st->lock);
  list = atomic_exchange_explicit(&st->given_back, NULL, memory_order_acquire);
  pthread_mutex_unlock(&st->lock);
  for (a = list; a; a = next) {
    next = a->next;
    if (!st->mem || (a->bytes > st->bytes)) {
      if (st->mem) release_area(st, st->mem, st->bytes);
      st->mem = a->mem;
      st->bytes = a->bytes;
    } else {
      release_area(st, a->mem, a->bytes);
    }
    free(a);
  }
}

int staging_reserve(staging_t *st, uint64_t need, pto_error_t *err) {
  uint64_t size, room;
  void *mem;
  int rc;
  take_given_back(st);
  if (need == 0 || (st->mem && need <= st->bytes)) return 0;
  size = st->bytes ? st->bytes : 64u * 1024u;
  while (size < need) size *= 2;
  if (st->mem) release_area(st, st->mem, st->bytes);
  st->mem = NULL;
  st->bytes = 0;
  /* Room beside the arena and the buffers, less the areas still lent. */
  room = buf_room_for_staging(st->buffers);
  pthread_mutex_lock(&st->lock);
  room = room > dev_mem_round(st->dev, st->held) ? room - dev_mem_round(st->dev, st->held) : 0;
  pthread_mutex_unlock(&st->lock);
  if (size > room) size = need; /* no headroom to spare: take exactly what is asked */
  if (dev_mem_round(st->dev, size) > room) {
    int code = pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                             "The dispatch's host arguments need %llu bytes of device memory but "
                             "only %llu are free; free resident buffers or raise [device] memory.",
                             (unsigned long long)need, (unsigned long long)room);
    err->requested = need;
    err->capacity = room;
    return code;
  }
  rc = dev_mem_commit(st->dev, size, &mem);
  if (rc < 0)
    return pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                         "The device could not commit %llu bytes for host arguments: %s.",
                         (unsigned long long)size, strerror(-rc));
  st->mem = mem;
  st->bytes = size;
  pthread_mutex_lock(&st->lock);
  account(st, (int64_t)size);
  pthread_mutex_unlock(&st->lock);
  return 0;
}

staging_area_t *staging_lend(staging_t *st) {
  staging_area_t *a = calloc(1, sizeof(*a));
  if (!a || !st->mem) {
    free(a);
    return NULL;
  }
  a->st = st;
  a->mem = st->mem;
  a->bytes = st->bytes;
  st->mem = NULL;
  st->bytes = 0;
  return a;
}

void staging_give_back(staging_area_t *area) {
  staging_t *st;
  staging_area_t *release;
  if (!area) return;
  st = area->st;
  /* One area waits for the device thread, which may keep it as its spare;
   * the smaller of two goes back to the device now, so the areas of a
   * client's unread answers are free as soon as it leaves, not at the next
   * dispatch. */
  pthread_mutex_lock(&st->lock);
  release = atomic_load_explicit(&st->given_back, memory_order_relaxed);
  if (release && release->bytes >= area->bytes) {
    release = area;
  } else {
    area->next = NULL;
    atomic_store_explicit(&st->given_back, area, memory_order_release);
  }
  pthread_mutex_unlock(&st->lock);
  if (release) {
    release_area(st, release->mem, release->bytes);
    free(release);
  }
}

void staging_release(staging_t *st) {
  take_given_back(st);
  if (st->mem) release_area(st, st->mem, st->bytes);
  st->mem = NULL;
  st->bytes = 0;
  pthread_mutex_destroy(&st->lock);
}
