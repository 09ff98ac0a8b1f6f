/* service.h — the method table: from one whole message to its response.
 *
 * The server hands every message to service_on_message.  The service
 * decodes and validates it on the loop (unknown keys, sizing rules), serves
 * ping, status, metrics, programs, buffer.list and advise at once, and
 * admits the methods that touch the device (dispatch, buffer.alloc,
 * buffer.write, buffer.read, buffer.free, prewarm) to the device thread as
 * one request each (jobs.c runs them there and encodes their responses).
 *
 * A request keeps the message bytes and their decoded form alive until its
 * response is sent, and keeps a reference on its connection, so a client
 * that vanishes never leaves a dangling pointer: its queued requests are
 * dropped unrun, a running one finishes and its response is discarded.
 */
#ifndef PTOD_SERVICE_H
#define PTOD_SERVICE_H

#include <msgpack.h>

#include "dispatch.h"
#include "methods.h"
#include "ptod.h"
#include "server.h"

typedef struct svc_request {
  dsp_job_t job; /* first: the device thread sees the request as its job */
  ptod_t *d;
  srv_conn_t *conn;
  srv_msg_t *msg;
  msgpack_unpacked unpacked;
  uint32_t msgid;
  proto_method_t method;
  proto_params_t params;
  pto_sizing_t baseline; /* the config level ([ring]) when admitted */
  uint32_t run_timeout_ms, deadlock_timeout_ms; /* [device], when admitted */
  char *diagnostics_dir; /* a copy, when a dispatch asks for DFX artefacts */
  uint64_t output_limit; /* [daemon] output_limit when admitted: the artefacts' budget */
  uint32_t device_id;    /* [device] id, for the artefacts (cfg is the loop's) */
  /* The encoded response, filled on the device thread. */
  msgpack_sbuffer response;
  int result_code; /* PTO_OK or the error code answered */
} svc_request_t;

/* The server's handlers, bound to d. */
srv_handlers_t service_handlers(ptod_t *d);

/* Encode [1, msgid, {error}, nil] into a fresh sbuffer and send it. */
void service_send_error(srv_conn_t *conn, uint32_t msgid, const pto_error_t *err);

/* The status `arena` map as it is now. */
void service_arena_snapshot(ptod_t *d, proto_arena_t *ret);

/* Device thread: run the request and encode its response (jobs.c). */
void jobs_run(dsp_job_t *job);

/* Build the arena for `sizing` and record it as the prewarmed one (device
 * thread, or start-up before the device thread has work). */
int jobs_prewarm(ptod_t *d, const pto_sizing_resolved_t *sizing, rt_arena_result_t *ret,
                 pto_error_t *err);

/* Release the staging area (shut-down). */
void jobs_release_staging(ptod_t *d);

#endif
