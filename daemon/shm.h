/* SPDX-License-Identifier: Apache-2.0 */
/* shm.h — one connection's shared-memory regions (docs/protocol.md, `shm`).
 *
 * A client registers a sealed memfd under a name (shm.register, the fd
 * passed with SCM_RIGHTS); dispatch arguments and buffer.write / buffer.read
 * then name byte ranges of it instead of carrying the bytes in messages.
 * The daemon copies inputs from the region into device memory and outputs
 * from device memory into the region, once each, as a device's DMA would:
 * no kernel ever runs on client memory.
 *
 * Bounds: a connection maps at most shm_limit bytes in at most shm_regions
 * regions, and all connections together at most shm_limit_total bytes in at
 * most shm_regions_total regions (each region is one mapping; the kernel's vm.max_map_count bounds them
 * for the whole process).  The memfd's pages must all be allocated when it
 * is registered: a page the daemon faulted into a hole would be charged to
 * the daemon's memory cgroup, not the client's.
 *
 * Lifetime: a region belongs to the connection that registered it.  A
 * request that names a region holds a reference from admission to its
 * completion (loop thread), so unregistering it, or the connection closing,
 * unmaps it only once no request still copies to or from it.  Loop thread
 * only.
 */
#ifndef PTOD_SHM_H
#define PTOD_SHM_H

#include <stdbool.h>
#include <stdint.h>

#include <pto/errors.h>

typedef struct shm_region shm_region_t;
typedef struct shm_table shm_table_t;

/* What every table of one daemon has mapped together; the tables keep it
 * (it must outlive them).  Zero-initialised. */
typedef struct shm_totals {
  uint64_t regions, bytes;
} shm_totals_t;

/* The bounds a register is checked against ([daemon] shm_limit,
 * shm_regions, shm_limit_total, shm_regions_total). */
typedef struct shm_limits {
  uint64_t bytes;         /* per connection */
  uint32_t regions;       /* per connection */
  uint64_t bytes_total;   /* all connections */
  uint32_t regions_total; /* all connections */
} shm_limits_t;

/* A table of no regions, counted in *totals; NULL when out of memory.
 * shm_table_close unmaps every region not in use and frees the table;
 * regions still referenced go with their last reference. */
shm_table_t *shm_table_new(shm_totals_t *totals);
void shm_table_close(shm_table_t *t);

/* Map `bytes` of the memfd fd as region `name`, after every check of the
 * contract: fd is a memfd (F_GET_SEALS works), sealed against shrinking,
 * at least `bytes` long, its pages allocated (INVALID_ARGS); name not in
 * use (ALREADY_EXISTS); the limits kept (OUT_OF_MEMORY).  fd is closed
 * whatever happens (the mapping keeps the memory).  Returns 0 or a
 * negative error with the sentence in err. */
int shm_register(shm_table_t *t, const char *name, uint64_t bytes, int fd,
                 const shm_limits_t *limits, pto_error_t *err);

/* Forget region `name` (unmapped once unreferenced); *ret_bytes its size.
 * -PTO_E_NOT_FOUND when there is none. */
int shm_unregister(shm_table_t *t, const char *name, uint64_t *ret_bytes, pto_error_t *err);

/* The bytes [offset, offset + bytes) of region `name`, with a reference
 * taken on the region (*ret_region, for shm_release): 0, -PTO_E_NOT_FOUND,
 * or -PTO_E_INVALID_ARGS for a range outside the region.  `what` names the
 * argument in the message ("args[2]", "buffer.write"). */
int shm_acquire(shm_table_t *t, const char *name, uint64_t offset, uint64_t bytes,
                const char *what, shm_region_t **ret_region, uint8_t **ret_ptr, pto_error_t *err);
void shm_release(shm_region_t *r);

/* The regions: count, and each name and size in registration order
 * (fn(data, name, bytes) once each; name valid until the table changes). */
uint32_t shm_count(const shm_table_t *t);
void shm_foreach(const shm_table_t *t, void (*fn)(void *data, const char *name, uint64_t bytes),
                 void *data);

/* Bytes mapped for the table now. */
uint64_t shm_mapped(const shm_table_t *t);

#endif
