/* SPDX-License-Identifier: Apache-2.0 */
/* jobs.h — what the device thread does for each device method (dispatch,
 * buffer.alloc/write/read/free, prewarm).  Each job ends with its response
 * encoded in req->response (success or error), so the loop only sends it. */
#ifndef PTOD_JOBS_H
#define PTOD_JOBS_H

#include "dispatch.h"
#include "ptod.h"
#include "runtime.h"

typedef struct req req_t;

/* The device methods (the method table's device handlers), by the device
 * token's holder (dispatch.h): run the request and encode its response. */
void jobs_dispatch(req_t *req);
void jobs_buffer_alloc(req_t *req);
void jobs_buffer_write(req_t *req);
void jobs_buffer_read(req_t *req);
void jobs_buffer_free(req_t *req);
void jobs_prewarm_request(req_t *req);

/* The device token's holder (dispatch.h), before run: whether the job's
 * time is bounded, before it runs and from what the daemon knows, within
 * JOBS_LOOP_BUDGET_NS, so that the loop may run it (jobs_short.c).  Never
 * from anything a client can make slow without the daemon seeing it up
 * front (issue 18: nothing a client controls may block the loop):
 *  - a dispatch: its program declares a cost (pto_program_cost) for these
 *    arguments, and that cost at the daemon's conservative rates is within
 *    the budget; no DFX record asked for; at most JOBS_SHORT_BYTES of
 *    inputs and outputs in the message or in shm; the arena of its sizing
 *    already built (a build takes milliseconds);
 *  - buffer.write and buffer.read: at most JOBS_SHORT_BYTES (a read's
 *    bytes given), a memcpy. */
#define JOBS_LOOP_BUDGET_NS 100000u
#define JOBS_SHORT_BYTES (64u * 1024u)
bool jobs_dispatch_is_short(const req_t *req);
bool jobs_write_is_short(const req_t *req);
bool jobs_read_is_short(const req_t *req);

/* A program's declared cost in ns at the daemon's rates: per task, per
 * byte and per operation, plus its waits; UINT64_MAX when it overflows. */
uint64_t jobs_cost_bound_ns(const pto_cost_t *cost);

/* The slice of a resident buffer of `size` bytes that buffer argument `a`
 * names: its offset and bytes, or the whole buffer when it gives no bytes
 * (not checked against size here). */
static inline void jobs_buffer_slice(const proto_arg_t *a, uint64_t size, uint64_t *ret_offset,
                                     uint64_t *ret_bytes) {
  *ret_offset = a->bytes ? a->offset : 0;
  *ret_bytes = a->bytes ? a->bytes : size;
}

/* Build the arena for `sizing` and record it as the prewarmed one (device
 * thread, or start-up before the device thread has work). */
int jobs_prewarm(ptod_t *d, const pto_sizing_resolved_t *sizing, rt_arena_result_t *ret,
                 pto_error_t *err);

#endif
