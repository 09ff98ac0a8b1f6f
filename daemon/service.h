/* SPDX-License-Identifier: Apache-2.0 */
/* service.h — what the daemon answers: the methods served on the loop, and
 * the checks a device request passes before it may wait for the device.
 * request.c calls these; the device methods themselves are jobs.c's. */
#ifndef PTOD_SERVICE_H
#define PTOD_SERVICE_H

#include "methods.h"
#include "ptod.h"
#include "request.h"

/* What a result served on the loop points into, freed after it is sent.
 * Pointers only (it is cleared for every request): what one method needs
 * is allocated by that method. */
typedef struct service_scratch {
  char *text;
  proto_program_info_t *programs;
  buf_info_t *infos;
  proto_buffer_info_t *bufs;
  advise_result_mem_t *advice;
} service_scratch_t;

/* The methods served on the loop (the method table's loop handlers): each
 * fills *result (which may point into *scratch; both cleared by the
 * caller) and returns 0, or a negative error with the sentence in err.
 * Call service_scratch_free after, always. */
typedef int service_serve_fn(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                             pto_error_t *err);
service_serve_fn service_ping, service_status, service_metrics, service_programs,
    service_buffer_list, service_advise;
void service_scratch_free(service_scratch_t *scratch);

/* The error of a request the daemon has no memory for: INTERNAL, "The
 * daemon is out of memory.".  Returns -PTO_E_INTERNAL. */
int service_out_of_memory(pto_error_t *err);

/* The checks of a device request that need no device, before it is
 * queued (the method table's admission checks), on what req->snap holds:
 * a dispatch's program takes that many arguments and its answer fits
 * output_limit; a buffer.read's answer fits output_limit.
 * Return 0, or a negative error with the sentence in err. */
int service_admit_dispatch(const req_t *req, pto_error_t *err);
int service_admit_read(const req_t *req, pto_error_t *err);

/* A buffer.read of `bytes` into its answer fits output_limit: 0, or
 * -PTO_E_INVALID_REQUEST saying to read in parts (at admission, and again
 * on the device thread, where the buffer's size is sure).  Any thread. */
int service_check_read(const char *name, uint64_t bytes, uint64_t output_limit,
                       pto_error_t *err);

#endif
