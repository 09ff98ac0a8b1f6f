/* SPDX-License-Identifier: Apache-2.0 */
#include "buffers.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct buf_entry {
  char name[BUF_NAME_MAX + 1];
  void *ptr;
  uint64_t bytes;     /* as asked for */
  uint64_t committed; /* as the device rounds it: what the account counts */
} buf_entry_t;

struct buf_table {
  dev_device_t *dev;
  pthread_mutex_t lock;
  buf_entry_t *entries; /* sorted by name */
  size_t count, cap;
  uint64_t limit, arena, buffers, staging;
};

int buf_table_create(dev_device_t *dev, uint64_t limit, buf_table_t **ret_table) {
  buf_table_t *t = calloc(1, sizeof(*t));
  if (!t) return -ENOMEM;
  t->dev = dev;
  t->limit = limit;
  pthread_mutex_init(&t->lock, NULL);
  *ret_table = t;
  return 0;
}

void buf_table_free(buf_table_t *t) {
  if (!t) return;
  for (size_t i = 0; i < t->count; i++)
    dev_mem_release(t->dev, t->entries[i].ptr, t->entries[i].bytes);
  free(t->entries);
  pthread_mutex_destroy(&t->lock);
  free(t);
}

static uint64_t held_except(const buf_table_t *t, uint64_t arena, uint64_t staging) {
  return arena + t->buffers + staging;
}

static uint64_t room(const buf_table_t *t, uint64_t held) {
  return held >= t->limit ? 0 : t->limit - held;
}

void buf_set_limit(buf_table_t *t, uint64_t limit) {
  pthread_mutex_lock(&t->lock);
  t->limit = limit;
  pthread_mutex_unlock(&t->lock);
}

void buf_memory(buf_table_t *t, buf_memory_t *ret) {
  pthread_mutex_lock(&t->lock);
  ret->limit = t->limit;
  ret->arena = t->arena;
  ret->buffers = t->buffers;
  ret->staging = t->staging;
  ret->free = room(t, held_except(t, t->arena, t->staging));
  pthread_mutex_unlock(&t->lock);
}

uint64_t buf_room_for_arena(buf_table_t *t) {
  uint64_t r;
  pthread_mutex_lock(&t->lock);
  r = room(t, held_except(t, 0, t->staging));
  pthread_mutex_unlock(&t->lock);
  return r;
}

uint64_t buf_room_for_staging(buf_table_t *t) {
  uint64_t r;
  pthread_mutex_lock(&t->lock);
  r = room(t, held_except(t, t->arena, 0));
  pthread_mutex_unlock(&t->lock);
  return r;
}

void buf_set_arena_bytes(buf_table_t *t, uint64_t bytes) {
  /* Only the device thread writes t->arena, so it reads it unlocked: a
   * dispatch that found its arena cached takes no lock here. */
  if (t->arena == bytes) return;
  pthread_mutex_lock(&t->lock);
  t->arena = bytes;
  pthread_mutex_unlock(&t->lock);
}

void buf_set_staging_bytes(buf_table_t *t, uint64_t bytes) {
  pthread_mutex_lock(&t->lock);
  t->staging = bytes;
  pthread_mutex_unlock(&t->lock);
}

/* Index of name, or of where it would go (*ret_found false).  Lock held. */
static size_t find(const buf_table_t *t, const char *name, bool *ret_found) {
  size_t lo = 0, hi = t->count;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int cmp = strcmp(t->entries[mid].name, name);
    if (cmp == 0) {
      *ret_found = true;
      return mid;
    }
    if (cmp < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  *ret_found = false;
  return lo;
}

static int not_found(const char *name, pto_error_t *err) {
  int rc = pto_error_set(err, PTO_E_NOT_FOUND,
                         "No resident buffer is named '%s'; buffer.list shows the ones there are.",
                         name);
  if (err) snprintf(err->key, sizeof(err->key), "name");
  return rc;
}

/* Whether [offset, offset+len) lies inside a buffer of `bytes`. */
static bool range_inside(uint64_t offset, uint64_t len, uint64_t bytes) {
  return offset <= bytes && len <= bytes - offset;
}

static int out_of_range(const char *name, uint64_t offset, uint64_t len, uint64_t bytes,
                        pto_error_t *err) {
  return pto_error_set(err, PTO_E_INVALID_REQUEST,
                       "Bytes [%llu, %llu + %llu) are outside buffer '%s' of %llu bytes.",
                       (unsigned long long)offset, (unsigned long long)offset,
                       (unsigned long long)len, name, (unsigned long long)bytes);
}

int buf_alloc(buf_table_t *t, const char *name, uint64_t bytes, const void *init,
              pto_error_t *err) {
  uint64_t committed = dev_mem_round(t->dev, bytes);
  uint64_t free_bytes;
  bool found;
  size_t at;
  void *ptr;
  int rc;

  if (strlen(name) > BUF_NAME_MAX)
    return pto_error_set(err, PTO_E_INVALID_REQUEST, "Buffer name '%s' is longer than %d bytes.",
                         name, BUF_NAME_MAX);
  pthread_mutex_lock(&t->lock);
  find(t, name, &found);
  free_bytes = room(t, held_except(t, t->arena, t->staging));
  pthread_mutex_unlock(&t->lock);
  if (found)
    return pto_error_set(err, PTO_E_ALREADY_EXISTS,
                         "A resident buffer named '%s' already exists; free it first or pick "
                         "another name.",
                         name);
  if (t->count >= BUF_MAX_COUNT)
    return pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "The daemon already holds %d resident buffers, its limit; free some first.",
                         BUF_MAX_COUNT);
  if (committed > free_bytes) {
    buf_memory_t m;
    buf_memory(t, &m);
    rc = pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                       "Buffer '%s' needs %llu bytes of device memory but only %llu are free "
                       "(limit %llu: arena %llu, buffers %llu, staging %llu); free buffers or "
                       "raise [device] memory.",
                       name, (unsigned long long)committed, (unsigned long long)m.free,
                       (unsigned long long)m.limit, (unsigned long long)m.arena,
                       (unsigned long long)m.buffers, (unsigned long long)m.staging);
    if (err) {
      err->requested = committed;
      err->capacity = m.free;
    }
    return rc;
  }
  rc = dev_mem_commit(t->dev, bytes, &ptr);
  if (rc < 0)
    return pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                         "The device could not commit %llu bytes for buffer '%s': %s.",
                         (unsigned long long)bytes, name, strerror(-rc));
  if (init) dev_copy_to_device(t->dev, ptr, init, bytes);

  pthread_mutex_lock(&t->lock);
  if (t->count == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 16;
    buf_entry_t *grown = realloc(t->entries, cap * sizeof(*grown));
    if (!grown) {
      pthread_mutex_unlock(&t->lock);
      dev_mem_release(t->dev, ptr, bytes);
      return pto_error_set(err, PTO_E_INTERNAL, "The daemon is out of host memory.");
    }
    t->entries = grown;
    t->cap = cap;
  }
  at = find(t, name, &found);
  memmove(&t->entries[at + 1], &t->entries[at], (t->count - at) * sizeof(*t->entries));
  memset(&t->entries[at], 0, sizeof(t->entries[at]));
  memcpy(t->entries[at].name, name, strlen(name) + 1);
  t->entries[at].ptr = ptr;
  t->entries[at].bytes = bytes;
  t->entries[at].committed = committed;
  t->count++;
  t->buffers += committed;
  pthread_mutex_unlock(&t->lock);
  return 0;
}

/* The entry named name, or NULL.  Device thread: entries change only there,
 * so the pointer stays valid without the lock after it is found. */
static buf_entry_t *lookup(buf_table_t *t, const char *name) {
  bool found;
  size_t at;
  pthread_mutex_lock(&t->lock);
  at = find(t, name, &found);
  pthread_mutex_unlock(&t->lock);
  return found ? &t->entries[at] : NULL;
}

int buf_write(buf_table_t *t, const char *name, uint64_t offset, const void *data, uint64_t len,
              pto_error_t *err) {
  buf_entry_t *e = lookup(t, name);
  if (!e) return not_found(name, err);
  if (!range_inside(offset, len, e->bytes)) return out_of_range(name, offset, len, e->bytes, err);
  dev_copy_to_device(t->dev, (char *)e->ptr + offset, data, len);
  return 0;
}

int buf_read(buf_table_t *t, const char *name, uint64_t offset, uint64_t *io_bytes,
             const void **ret_data, pto_error_t *err) {
  buf_entry_t *e = lookup(t, name);
  if (!e) return not_found(name, err);
  if (offset > e->bytes) return out_of_range(name, offset, *io_bytes, e->bytes, err);
  if (*io_bytes == 0) *io_bytes = e->bytes - offset;
  if (!range_inside(offset, *io_bytes, e->bytes))
    return out_of_range(name, offset, *io_bytes, e->bytes, err);
  *ret_data = (const char *)e->ptr + offset;
  return 0;
}

uint64_t buf_read_size(buf_table_t *t, const char *name, uint64_t offset, uint64_t bytes) {
  bool found;
  size_t at;
  uint64_t size = 0;
  pthread_mutex_lock(&t->lock);
  at = find(t, name, &found);
  if (found && offset <= t->entries[at].bytes) {
    size = bytes ? bytes : t->entries[at].bytes - offset;
    if (!range_inside(offset, size, t->entries[at].bytes)) size = 0;
  }
  pthread_mutex_unlock(&t->lock);
  return size;
}

int buf_free(buf_table_t *t, const char *name, uint64_t *ret_bytes, pto_error_t *err) {
  buf_entry_t e;
  bool found;
  size_t at;
  pthread_mutex_lock(&t->lock);
  at = find(t, name, &found);
  if (!found) {
    pthread_mutex_unlock(&t->lock);
    return not_found(name, err);
  }
  e = t->entries[at];
  memmove(&t->entries[at], &t->entries[at + 1], (t->count - at - 1) * sizeof(*t->entries));
  t->count--;
  t->buffers -= e.committed;
  pthread_mutex_unlock(&t->lock);
  dev_mem_release(t->dev, e.ptr, e.bytes);
  *ret_bytes = e.bytes;
  return 0;
}

int buf_lookup(buf_table_t *t, const char *name, void **ret_base, uint64_t *ret_bytes,
               pto_error_t *err) {
  buf_entry_t *e = lookup(t, name);
  if (!e) return not_found(name, err);
  *ret_base = e->ptr;
  *ret_bytes = e->bytes;
  return 0;
}

int buf_list(buf_table_t *t, buf_info_t **ret_infos, size_t *ret_count) {
  buf_info_t *infos;
  pthread_mutex_lock(&t->lock);
  infos = malloc((t->count ? t->count : 1) * sizeof(*infos));
  if (!infos) {
    pthread_mutex_unlock(&t->lock);
    return -ENOMEM;
  }
  for (size_t i = 0; i < t->count; i++) {
    memcpy(infos[i].name, t->entries[i].name, sizeof(infos[i].name));
    infos[i].bytes = t->entries[i].bytes;
  }
  *ret_count = t->count;
  pthread_mutex_unlock(&t->lock);
  *ret_infos = infos;
  return 0;
}
