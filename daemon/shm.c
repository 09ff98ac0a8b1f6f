#define _GNU_SOURCE 1 /* F_GET_SEALS */
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
  int refs;         /* the table's (while registered) and each request's */
  shm_region_t *next;
};

struct shm_table {
  shm_region_t *head, *tail;
  uint32_t count;
  uint64_t mapped;
};

shm_table_t *shm_table_new(void) { return calloc(1, sizeof(shm_table_t)); }

void shm_release(shm_region_t *r) {
  if (--r->refs > 0) return;
  munmap(r->base, r->bytes);
  free(r);
}

/* Off the table; unmapped when no request holds it. */
static void table_drop(shm_table_t *t, shm_region_t *r, shm_region_t *prev) {
  if (prev)
    prev->next = r->next;
  else
    t->head = r->next;
  if (t->tail == r) t->tail = prev;
  t->count--;
  t->mapped -= r->bytes;
  shm_release(r);
}

void shm_table_close(shm_table_t *t) {
  if (!t) return;
  while (t->head) table_drop(t, t->head, NULL);
  free(t);
}

static shm_region_t *find(const shm_table_t *t, const char *name, shm_region_t **ret_prev) {
  shm_region_t *prev = NULL;
  for (shm_region_t *r = t->head; r; prev = r, r = r->next)
    if (strcmp(r->name, name) == 0) {
      if (ret_prev) *ret_prev = prev;
      return r;
    }
  return NULL;
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
  if ((uint64_t)st.st_size < bytes) {
    int rc = pto_error_set(err, PTO_E_INVALID_ARGS,
                           "shm.register '%s': the memfd holds %lld bytes, fewer than the %llu "
                           "asked for; ftruncate it first.",
                           name, (long long)st.st_size, (unsigned long long)bytes);
    err->requested = bytes;
    err->capacity = (uint64_t)st.st_size;
    return rc;
  }
  return 0;
}

int shm_register(shm_table_t *t, const char *name, uint64_t bytes, int fd, uint64_t limit,
                 pto_error_t *err) {
  shm_region_t *r;
  void *base;
  int rc;
  if (find(t, name, NULL)) {
    close(fd);
    return pto_error_set(err, PTO_E_ALREADY_EXISTS,
                         "This connection already has a region named '%s'; shm.unregister it "
                         "first or pick another name.",
                         name);
  }
  rc = check_fd(fd, bytes, name, err);
  if (rc == 0 && bytes > limit - (t->mapped < limit ? t->mapped : limit)) {
    rc = pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                       "Registering %llu bytes as '%s' would map %llu bytes for this "
                       "connection, over shm_limit = %llu; unregister regions or ask the "
                       "operator to raise [daemon] shm_limit.",
                       (unsigned long long)bytes, name, (unsigned long long)(t->mapped + bytes),
                       (unsigned long long)limit);
    err->requested = bytes;
    err->capacity = limit - (t->mapped < limit ? t->mapped : limit);
  }
  if (rc < 0) {
    close(fd);
    return rc;
  }
  base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);
  if (base == MAP_FAILED)
    return pto_error_set(err, PTO_E_INVALID_ARGS, "shm.register '%s': mmap failed: %s.", name,
                         strerror(errno));
  r = calloc(1, sizeof(*r));
  if (!r) {
    munmap(base, bytes);
    return pto_error_set(err, PTO_E_INTERNAL, "The daemon is out of memory.");
  }
  snprintf(r->name, sizeof(r->name), "%s", name);
  r->base = base;
  r->bytes = bytes;
  r->refs = 1;
  if (t->tail)
    t->tail->next = r;
  else
    t->head = r;
  t->tail = r;
  t->count++;
  t->mapped += bytes;
  return 0;
}

static int not_found(const char *name, pto_error_t *err) {
  return pto_error_set(err, PTO_E_NOT_FOUND,
                       "This connection has no shared-memory region '%s'; shm.register it first "
                       "(regions belong to the connection that registered them).",
                       name);
}

int shm_unregister(shm_table_t *t, const char *name, uint64_t *ret_bytes, pto_error_t *err) {
  shm_region_t *prev = NULL, *r = find(t, name, &prev);
  if (!r) return not_found(name, err);
  *ret_bytes = r->bytes;
  table_drop(t, r, prev);
  return 0;
}

int shm_acquire(shm_table_t *t, const char *name, uint64_t offset, uint64_t bytes,
                const char *what, shm_region_t **ret_region, uint8_t **ret_ptr, pto_error_t *err) {
  shm_region_t *r = t ? find(t, name, NULL) : NULL;
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

void shm_entry(const shm_table_t *t, uint32_t i, const char **ret_name, uint64_t *ret_bytes) {
  const shm_region_t *r = t->head;
  while (i-- > 0 && r) r = r->next;
  *ret_name = r ? r->name : "";
  *ret_bytes = r ? r->bytes : 0;
}

uint64_t shm_mapped(const shm_table_t *t) { return t ? t->mapped : 0; }
