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

/* The device methods (the method table's device handlers), on the device
 * thread: run the request and encode its response. */
void jobs_dispatch(req_t *req);
void jobs_buffer_alloc(req_t *req);
void jobs_buffer_write(req_t *req);
void jobs_buffer_read(req_t *req);
void jobs_buffer_free(req_t *req);
void jobs_prewarm_request(req_t *req);

/* Build the arena for `sizing` and record it as the prewarmed one (device
 * thread, or start-up before the device thread has work). */
int jobs_prewarm(ptod_t *d, const pto_sizing_resolved_t *sizing, rt_arena_result_t *ret,
                 pto_error_t *err);

#endif
