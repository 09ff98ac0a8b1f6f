/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_shm.h — ptoctl --shm: a command's data through a shared-memory
 * region instead of inside the messages, shown exactly as without it.
 *
 * A dispatch's inline inputs, inouts and outputs (the non-empty ones) are
 * laid out in one region of its connection, each at a 64-byte aligned
 * offset; the arguments sent name those ranges.  The result is then shown
 * through ctl_shm_result / ctl_shm_json, whose outputs are the region's
 * bytes where the daemon answered nil.
 *
 * Functions that can fail return 0 or -code with err filled, as
 * libptoclient's do.
 */
#ifndef CTL_SHM_H
#define CTL_SHM_H

#include <stddef.h>
#include <stdint.h>

#include <pto/client.h>

#include "ctl_json.h"

typedef struct ctl_shm ctl_shm_t;

/* Stage args (n of them, as parsed; only read during the call) on client.
 * With no data to move, *ret is a staging with no region: its args are
 * args' copy. */
int ctl_shm_stage(pto_client_t *client, const pto_dispatch_arg_t *args, uint32_t n,
                  int timeout_ms, ctl_shm_t **ret, pto_error_t *err);
/* The arguments to send (n of them). */
const pto_dispatch_arg_t *ctl_shm_args(const ctl_shm_t *s);
/* Copy the inouts' data in again (a dispatch overwrote it: bench repeats). */
void ctl_shm_refill(ctl_shm_t *s);
/* r as it would have come inline: a shallow copy, valid until the next call
 * or ctl_shm_free, whose outputs point into the region. */
const pto_dispatch_result_t *ctl_shm_result(ctl_shm_t *s, const pto_dispatch_result_t *r);
/* The daemon's result map of r in JSON, with those outputs as bins. */
void ctl_shm_json(ctl_shm_t *s, json_t *j, const pto_dispatch_result_t *r, json_bin_fn bin,
                  void *ctx);
void ctl_shm_free(ctl_shm_t *s);

/* buffer write of data[0..len) through a fresh region; *ret_bytes: the
 * daemon's count. */
int ctl_shm_buffer_write(pto_client_t *client, const char *name, uint64_t offset,
                         const void *data, size_t len, int timeout_ms, uint64_t *ret_bytes,
                         pto_error_t *err);
/* buffer read of `bytes` (0: to the end of the buffer) through a fresh
 * region; *ret_data: a malloc'ed copy of them. */
int ctl_shm_buffer_read(pto_client_t *client, const char *name, uint64_t offset, uint64_t bytes,
                        int timeout_ms, uint8_t **ret_data, size_t *ret_len, pto_error_t *err);

#endif
