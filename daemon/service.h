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

/* Serve a method that needs no device (ping, status, metrics, programs,
 * buffer.list, advise): 1 with *result filled (it may point into
 * *scratch), 0 when the method is one for the device, or a negative error
 * with the sentence in err.  Call service_scratch_free after, always. */
int service_serve(ptod_t *d, proto_method_t method, proto_result_t *result,
                  service_scratch_t *scratch, pto_error_t *err);
void service_scratch_free(service_scratch_t *scratch);

/* The checks of a device request that need no device, before it is
 * queued: a dispatch's program exists and takes that many arguments, and
 * its answer fits output_limit (a buffer.read's too); what its DFX
 * artefacts need is copied in.
 * Returns 0, or a negative error with the sentence in err. */
int service_admit(ptod_t *d, req_t *req, pto_error_t *err);

/* A buffer.read of `bytes` into its answer fits output_limit: 0, or
 * -PTO_E_INVALID_REQUEST saying to read in parts (at admission, and again
 * on the device thread, where the buffer's size is sure).  Any thread. */
int service_check_read(const char *name, uint64_t bytes, uint64_t output_limit,
                       pto_error_t *err);

#endif
