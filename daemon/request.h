/* SPDX-License-Identifier: Apache-2.0 */
/* request.h — a request's life, from one whole message to its answer.
 *
 * read (server) -> decode the envelope and params -> look the method up in
 * the method table (request.c: one row per method, naming where it runs,
 * how it is admitted and its handlers) -> serve it on the loop (service.c)
 * or snapshot, check and queue it for the device -> run (jobs.c, on the
 * device thread) -> answer -> done.  This module owns every request's
 * bookkeeping, as Neovim's msgpack_rpc/channel.c owns its request frames:
 * no other module counts or frees requests.  A new method is a row and
 * its handler(s); nothing else here changes.
 *
 * Device requests go to the device thread in their connection's flow
 * (dispatch.h): the device takes connections in turn, one request each, and
 * each connection's requests in the order it sent them, so a connection
 * pipelining hundreds of dispatches delays another connection's next one
 * by a few dispatches, never by its whole pipeline.  queue_full = wait lets
 * any number wait (each connection is held to max_pending by the server);
 * queue_full = busy answers BUSY beyond queue_depth waiting.
 *
 * A request keeps its message (and so its decoded params) and its
 * connection alive until it is answered; a client that vanishes has its
 * waiting requests dropped unrun, and a running one's answer discarded.
 * Loop thread, except what jobs.c does with a request on the device thread.
 */
#ifndef PTOD_REQUEST_H
#define PTOD_REQUEST_H

#include <msgpack.h>

#include "answer.h"
#include "dispatch.h"
#include "methods.h"
#include "ptod.h"
#include "server.h"
#include "staging.h"

/* What a request takes from the configuration when it is admitted
 * (req_snapshot in request.c writes it, once): a reload after admission
 * does not change how an admitted request runs. */
typedef struct req_snapshot {
  const pto_program_t *program; /* a dispatch's, found at admission (programs stay loaded) */
  /* A dispatch's or prewarm's ring sizing: its own over [ring], resolved
   * once here for every path that reads it (jobs.c, jobs_short.c). */
  pto_sizing_resolved_t sizing;
  uint32_t run_timeout_ms, deadlock_timeout_ms; /* [device] */
  char *diagnostics_dir; /* a copy, when a dispatch asks for DFX artefacts */
  uint64_t diagnostics_max_bytes; /* its quota */
  uint32_t diagnostics_max_files;
  uint64_t output_limit; /* [daemon] output_limit: the artefacts' budget, and a buffer.read's
                          * answer's */
  uint32_t device_id;    /* [device] id, for the artefacts (cfg is the loop's) */
} req_snapshot_t;

typedef struct req {
  dsp_job_t job; /* first: the device thread sees the request as its job */
  ptod_t *d;
  srv_conn_t *conn;
  srv_msg_t *msg;
  msgpack_unpacked unpacked; /* its zone is `zone` once that is made */
  msgpack_zone zone;         /* the message's, held here: one allocation less per request */
  uint32_t msgid;
  proto_method_t method;
  proto_params_t params;
  /* The caller's request_id (protocol 1.2), NULL when none: points into
   * params (the message's zone), set once when the params are decoded. */
  const char *request_id;
  req_snapshot_t snap; /* device methods: set at admission */
  /* Shared-memory ranges the request names, resolved at admission: per
   * dispatch argument (NULL: not shm), or shm_ptr[0] for buffer.write/read;
   * each region referenced until the request ends. */
  uint8_t **shm_ptr;
  struct shm_region **shm_refs;
  uint32_t nshm_refs;
  /* shm.register's memfd, taken from the connection when the message names
   * the method, before anything can refuse it (-1: none; closed at the
   * request's end unless a region took it), and how many fds came with it. */
  int fd;
  unsigned fds_together;
  /* The encoded response, filled on the device thread: its bytes, the
   * byte strings sent by reference between them, and the staging area
   * lent to the answer that they lie in. */
  msgpack_sbuffer response;
  proto_refbuf_t refs;
  staging_area_t *lent;
  int result_code; /* PTO_OK or the error code answered */
} req_t;

/* How log lines name a request: "request 7 of client 3", then
 * " (request_id X)" when it has one, into buf[cap] (REQ_TAG_MAX is enough);
 * returns buf.  Every log line about one request names it this way, so an
 * operator can grep for a serving process's id. */
#define REQ_TAG_MAX 160
const char *req_tag(const req_t *req, char *buf, size_t cap);

/* The server's handlers, bound to d (d->dsp set). */
srv_handlers_t req_handlers(ptod_t *d);

#endif
