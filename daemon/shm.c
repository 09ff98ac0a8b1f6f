/* SPDX-License-Identifier: Apache-2.0 */
#include "shm.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "methods.h"

struct shm_region {
  char name[PROTO_NAME_MAX + 1];
  uint8_t *base;
  uint64_t bytes;
  int refs;                  /* the table's (while registered) and each request's */
  shm_region_t *prev, *next; /* registration order */
  shm_region_t *chain;       /* the next in its hash bucket */
};

/* Regions by name in a chained hash table (lookup is O(1) however many a
 * client registers), and in registration order for shm.list. */
struct shm_table {
  shm_region_t *head, *tail;
  shm_region_t **buckets;
  uint32_t nbuckets; /* a power of two, 0 before the first region */
  uint32_t count;
  uint64_t mapped;
  shm_totals_t *totals;
};

shm_table_t *shm_table_new(shm_totals_t *totals) {
  shm_table_t *t = calloc(1, sizeof(shm_table_t));
  if (t) t->totals = totals;
  return t;
}

/* FNV-1a. */
static uint32_t name_hash(const char *name) {
  uint32_t h = 2166136261u;
  for (const unsigned char *p = (const unsigned char *)name; *p; p++) h = (h ^ *p) * 16777619u;
  return h;
}

static shm_region_t **bucket_of(const shm_table_t *t, const char *name) {
  return &t->buckets[name_hash(name) & (t->nbuckets - 1)];
}

/* Room in the hash table for one more region: it grows to twice the count. */
static int reserve_bucket(shm_table_t *t) {
  uint32_t n = t->nbuckets ? t->nbuckets * 2 : 16;
  shm_region_t **grown;
  if (t->count < t->nbuckets) return 0;
  grown = calloc(n, sizeof(*grown));
  if (!grown) return -ENOMEM;
  free(t->buckets);
  t->buckets = grown;
  t->nbuckets = n;
  for (shm_region_t *r = t->head; r; r = r->next) {
    shm_region_t **b = bucket_of(t, r->name);
    r->chain = *b;
    *b = r;
  }
  return 0;
}

void shm_release(shm_region_t *r) {
  if (--r->refs > 0) return;
  munmap(r->base, r->bytes);
  free(r);
}

/* Off the table; unmapped when no request holds it. */
static void table_drop(shm_table_t *t, shm_region_t *r) {
  shm_region_t **b = bucket_of(t, r->name);
  while (*b != r) b = &(*b)->chain;
  *b = r->chain;
  if (r->prev)
    r->prev->next = r->next;
  else
    t->head = r->next;
  if (r->next)
    r->next->prev = r->prev;
  else
    t->tail = r->prev;
  t->count--;
  t->mapped -= r->bytes;
  t->totals->regions--;
  t->totals->bytes -= r->bytes;
  shm_release(r);
}

void shm_table_close(shm_table_t *t) {
  if (!t) return;
  while (t->head) table_drop(t, t->head);
  free(t->buckets);
  free(t);
}

static shm_region_t *find(const shm_table_t *t, const char *name) {
  if (!t->nbuckets) return NULL;
  for (shm_region_t *r = *bucket_of(t, name); r; r = r->chain)
    if (strcmp(r->name, name) == 0) return r;
  return NULL;
}

/* err's figures, for a check that failed with rc. */
static int figures(pto_error_t *err, int rc, uint64_t requested, uint64_t capacity) {
  err->requested = requested;
  err->capacity = capacity;
  return rc;
}

/* The memfd's pages up to its size, allocated: st_blocks counts a shmem
 * file's allocated pages (resident or swapped), so holes show as fewer. */
static bool fully_allocated(const struct stat *st) {
  uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
  uint64_t need = ((uint64_t)st->st_size + page - 1) / page * page;
  return (uint64_t)st->st_blocks * 512u >= need;
}

static int check_fd(int fd, uint64_t bytes, const char *name, pto_error_t *err) {
  struct stat st;
  int seals = fcntl(fd, F_GET_SEALS);
  if (seals < 0)
    return pto_error_set(err, PTO_E_INVALID_ARGS,
                         "shm.register '%s': the file descriptor is not a memfd (F_GET_SEALS "
                         "fails: %s); create it with memfd_create(MFD_ALLOW_SEALING).",
                         name, strerror(errno));
  if (!(seals & F_SEAL_SHRINK))
    return pto_error_set(err, PTO_E_INVALID_ARGS,
                         "shm.register '%s': the memfd is not sealed against shrinking; seal it "
                         "with fcntl(F_ADD_SEALS, F_SEAL_SHRINK) (F_SEAL_GROW | F_SEAL_SEAL "
                         "too, best) before registering.",
                         name);
  if (fstat(fd, &st) < 0)
    return pto_error_set(err, PTO_E_INVALID_ARGS, "shm.register '%s': fstat failed: %s.", name,
                         strerror(errno));
  if ((uint64_t)st.st_size < bytes)
    return figures(err,
                   pto_error_set(err, PTO_E_INVALID_ARGS,
                                 "shm.register '%s': the memfd holds %lld bytes, fewer than the "
                                 "%llu asked for; ftruncate it first.",
                                 name, (long long)st.st_size, (unsigned long long)bytes),
                   bytes, (uint64_t)st.st_size);
  if (!fully_allocated(&st))
    return figures(err,
                   pto_error_set(err, PTO_E_INVALID_ARGS,
                                 "shm.register '%s': only %llu of the memfd's %lld bytes are "
                                 "allocated; allocate them all first with posix_fallocate(fd, "
                                 "0, size) (pages the daemon faulted into the holes would be "
                                 "charged to the daemon, not to you).",
                                 name, (unsigned long long)st.st_blocks * 512u,
                                 (long long)st.st_size),
                   (uint64_t)st.st_size, (uint64_t)st.st_blocks * 512u);
  return 0;
}

/* The limits, for one more region of `bytes`. */
static int check_limits(const shm_table_t *t, const char *name, uint64_t bytes,
                        const shm_limits_t *l, pto_error_t *err) {
  uint64_t room = l->bytes - (t->mapped < l->bytes ? t->mapped : l->bytes);
  if (bytes > room)
    return figures(err,
                   pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                                 "Registering %llu bytes as '%s' would map %llu bytes for this "
                                 "connection, over shm_limit = %llu; unregister regions or ask "
                                 "the operator to raise [daemon] shm_limit.",
                                 (unsigned long long)bytes, name,
                                 (unsigned long long)(t->mapped + bytes),
                                 (unsigned long long)l->bytes),
                   bytes, room);
  if (t->count >= l->regions)
    return figures(err,
                   pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                                 "Registering '%s' would make %u regions for this connection, "
                                 "over shm_regions = %u; unregister regions, or register one "
                                 "larger region and name ranges of it.",
                                 name, t->count + 1, l->regions),
                   (uint64_t)t->count + 1, l->regions);
  if (t->totals->regions >= l->regions_total)
    return figures(err,
                   pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                                 "Registering '%s' would make %llu regions for all clients "
                                 "together, over shm_regions_total = %u; retry once regions "
                                 "are unregistered, or ask the operator to raise [daemon] "
                                 "shm_regions_total.",
                                 name, (unsigned long long)(t->totals->regions + 1),
                                 l->regions_total),
                   t->totals->regions + 1, l->regions_total);
  room = l->bytes_total - (t->totals->bytes < l->bytes_total ? t->totals->bytes : l->bytes_total);
  if (bytes > room)
    return figures(err,
                   pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                                 "Registering %llu bytes as '%s' would map %llu bytes for all "
                                 "clients together, over shm_limit_total = %llu; retry once "
                                 "regions are unregistered, or ask the operator to raise "
                                 "[daemon] shm_limit_total.",
                                 (unsigned long long)bytes, name,
                                 (unsigned long long)(t->totals->bytes + bytes),
                                 (unsigned long long)l->bytes_total),
                   bytes, room);
  return 0;
}

static void table_add(shm_table_t *t, shm_region_t *r) {
  shm_region_t **b = bucket_of(t, r->name);
  r->chain = *b;
  *b = r;
  r->prev = t->tail;
  if (t->tail)
    t->tail->next = r;
  else
    t->head = r;
  t->tail = r;
  t->count++;
  t->mapped += r->bytes;
  t->totals->regions++;
  t->totals->bytes += r->bytes;
}

int shm_register(shm_table_t *t, const char *name, uint64_t bytes, int fd,
                 const shm_limits_t *limits, pto_error_t *err) {
  shm_region_t *r = NULL;
  void *base;
  int rc = 0;
  if (find(t, name))
    rc = pto_error_set(err, PTO_E_ALREADY_EXISTS,
                       "This connection already has a region named '%s'; shm.unregister it "
                       "first or pick another name.",
                       name);
  if (rc == 0) rc = check_fd(fd, bytes, name, err);
  if (rc == 0) rc = check_limits(t, name, bytes, limits, err);
  if (rc == 0 && (reserve_bucket(t) < 0 || !(r = calloc(1, sizeof(*r)))))
    rc = pto_error_set(err, PTO_E_INTERNAL, "The daemon is out of memory.");
  if (rc < 0) {
    close(fd);
    return rc;
  }
  base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED) {
    free(r);
    return pto_error_set(err, errno == ENOMEM ? PTO_E_OUT_OF_MEMORY : PTO_E_INVALID_ARGS,
                         "shm.register '%s': mmap failed: %s.", name, strerror(errno));
  }
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->base = base;
  r->bytes = bytes;
  r->refs = 1;
  table_add(t, r);
  return 0;
}

static int not_found(const char *name, pto_error_t *err) {
  return pto_error_set(err, PTO_E_NOT_FOUND,
                       "This connection has no shared-memory region '%s'; shm.register it first "
                       "(regions belong to the connection that registered them).",
                       name);
}

int shm_unregister(shm_table_t *t, const char *name, uint64_t *ret_bytes, pto_error_t *err) {
  shm_region_t *r = find(t, name);
  if (!r) return not_found(name, err);
  *ret_bytes = r->bytes;
  table_drop(t, r);
  return 0;
}

int shm_acquire(shm_table_t *t, const char *name, uint64_t offset, uint64_t bytes,
                const char *what, shm_region_t **ret_region, uint8_t **ret_ptr, pto_error_t *err) {
  shm_region_t *r = t ? find(t, name) : NULL;
  if (!r) return not_found(name, err);
  if (offset > r->bytes || bytes > r->bytes - offset) {
    int rc = pto_error_set(err, PTO_E_INVALID_ARGS,
                           "%s: the range at offset %llu of %llu bytes is outside region '%s' "
                           "(%llu bytes).",
                           what, (unsigned long long)offset, (unsigned long long)bytes, name,
                           (unsigned long long)r->bytes);
    err->requested = offset + bytes;
    err->capacity = r->bytes;
    return rc;
  }
  r->refs++;
  *ret_region = r;
  *ret_ptr = r->base + offset;
  return 0;
}

uint32_t shm_count(const shm_table_t *t) { return t ? t->count : 0; }

void shm_foreach(const shm_table_t *t, void (*fn)(void *data, const char *name, uint64_t bytes),
                 void *data) {
  for (const shm_region_t *r = t ? t->head : NULL; r; r = r->next) fn(data, r->name, r->bytes);
}

uint64_t shm_mapped(const shm_table_t *t) { return t ? t->mapped : 0; }
