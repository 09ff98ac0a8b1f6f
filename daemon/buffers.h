/* SPDX-License-Identifier: Apache-2.0 */
/* buffers.h — device-resident buffers and the device memory account.
 *
 * Resident buffers are named regions of device memory that the daemon owns
 * (a KV cache shared by prefill and decode programs, uploaded weights).
 * They survive client disconnects and are passed to dispatches by name.
 *
 * The account: the device memory limit ([device] memory) covers the arena,
 * the resident buffers and the dispatch staging area together.  Nothing is
 * ever evicted to make room: a request that does not fit fails with
 * OUT_OF_MEMORY and the numbers.
 *
 * Threads: allocation, free and every access to buffer memory happen on the
 * device thread; buf_list and buf_memory may be called from any thread (the
 * table is behind a mutex).  A buffer in use by a running dispatch cannot
 * be freed under it, since frees run on the device thread too.
 */
#ifndef PTOD_BUFFERS_H
#define PTOD_BUFFERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/errors.h>

#include "device.h"

#define BUF_NAME_MAX 64   /* bytes of a name, without the NUL */
#define BUF_MAX_COUNT 4096 /* resident buffers at once */

typedef struct buf_table buf_table_t;

typedef struct buf_memory {
  uint64_t limit;
  uint64_t arena;
  uint64_t buffers;
  uint64_t staging;
  uint64_t free; /* limit minus the three, 0 when over */
} buf_memory_t;

/* dev is not owned and must outlive the table.  Free with buf_table_free,
 * which releases every buffer's memory. */
int buf_table_create(dev_device_t *dev, uint64_t limit, buf_table_t **ret_table);
void buf_table_free(buf_table_t *table);

/* A reload may change the limit; it never evicts (free may read 0). */
void buf_set_limit(buf_table_t *table, uint64_t limit);

/* The account (any thread). */
void buf_memory(buf_table_t *table, buf_memory_t *ret);

/* Bytes the arena or the staging area may grow to, given everything else
 * held: limit minus the rest (0 when over). */
uint64_t buf_room_for_arena(buf_table_t *table);
uint64_t buf_room_for_staging(buf_table_t *table);
/* Record what the arena and the staging area hold now (the arena: device
 * thread only, which reads it unlocked; the staging area: any thread). */
void buf_set_arena_bytes(buf_table_t *table, uint64_t bytes);
void buf_set_staging_bytes(buf_table_t *table, uint64_t bytes);

/* Allocate `bytes` of device memory named `name`, zeroed, or initialised
 * from init (init_len == bytes) when init is not NULL.  Errors:
 * -PTO_E_ALREADY_EXISTS, -PTO_E_OUT_OF_MEMORY (requested/capacity set),
 * -PTO_E_INVALID_REQUEST (too many buffers).  Device thread. */
int buf_alloc(buf_table_t *table, const char *name, uint64_t bytes, const void *init,
              pto_error_t *ret_err);

/* Copy len bytes into the buffer at offset.  -PTO_E_NOT_FOUND, or
 * -PTO_E_INVALID_REQUEST when [offset, offset+len) is not inside it. */
int buf_write(buf_table_t *table, const char *name, uint64_t offset, const void *data, uint64_t len,
              pto_error_t *ret_err);

/* Where bytes [offset, offset+*io_bytes) of the buffer are, for reading
 * them out (a *io_bytes of 0 means to the end; it is set to the length).
 * The pointer is valid until the buffer is freed (device thread). */
int buf_read(buf_table_t *table, const char *name, uint64_t offset, uint64_t *io_bytes,
             const void **ret_data, pto_error_t *ret_err);

/* How many bytes buf_read would return for offset and bytes now, for
 * checks before the read is queued; 0 where buf_read would fail (no such
 * buffer, a range outside it: the read itself says so).  Any thread. */
uint64_t buf_read_size(buf_table_t *table, const char *name, uint64_t offset, uint64_t bytes);

/* Free the buffer; *ret_bytes gets its size.  -PTO_E_NOT_FOUND. */
int buf_free(buf_table_t *table, const char *name, uint64_t *ret_bytes, pto_error_t *ret_err);

/* The buffer's memory for a dispatch argument (device thread). */
int buf_lookup(buf_table_t *table, const char *name, void **ret_base, uint64_t *ret_bytes,
               pto_error_t *ret_err);

typedef struct buf_info {
  char name[BUF_NAME_MAX + 1];
  uint64_t bytes;
} buf_info_t;

/* A snapshot of the buffers in name order: *ret_infos is malloc'ed (the
 * caller frees it), *ret_count entries.  0 or -ENOMEM.  Any thread. */
int buf_list(buf_table_t *table, buf_info_t **ret_infos, size_t *ret_count);

#endif
