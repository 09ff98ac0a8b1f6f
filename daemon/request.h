/* request.h — a request's life, from one whole message to its answer.
 *
 * read (server) -> decode the envelope and params -> admit (service.c's
 * checks) -> serve it on the loop (ping, status, ...) or queue it for the
 * device -> run (jobs.c, on the device thread) -> answer -> done.  This
 * module owns every request's bookkeeping, as Neovim's msgpack_rpc/channel.c
 * owns its request frames: no other module counts or frees requests.
 *
 * Device requests wait in their connection's own FIFO (a connection's
 * requests run in the order it sent them).  The device takes them
 * round-robin across the connections that have some waiting, one from each
 * in turn, and is handed only REQ_DEVICE_AHEAD of them ahead of the one it
 * runs: a connection pipelining hundreds of dispatches delays another
 * connection's next one by a few dispatches, never by its whole pipeline.
 * Beyond queue_depth waiting requests, queue_full = wait lets them wait
 * (the server stops reading the connection at max_pending), queue_full =
 * busy answers BUSY.
 *
 * A request keeps its message (and so its decoded params) and its
 * connection alive until it is answered; a client that vanishes has its
 * waiting requests dropped unrun, and a running one's answer discarded.
 * Loop thread, except what jobs.c does with a request on the device thread.
 */
#ifndef PTOD_REQUEST_H
#define PTOD_REQUEST_H

#include <msgpack.h>

#include "dispatch.h"
#include "methods.h"
#include "ptod.h"
#include "server.h"

/* Requests handed to the device thread ahead of the one it runs. */
#define REQ_DEVICE_AHEAD 2u

typedef struct req {
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
  char *diagnostics_dir; /* a copy, when a dispatch asks for scope stats */
  /* The encoded response, filled on the device thread. */
  msgpack_sbuffer response;
  int result_code; /* PTO_OK or the error code answered */
  struct req *next_waiting;
} req_t;

typedef struct req_queue req_queue_t;

int req_queue_create(ptod_t *d, req_queue_t **ret);
void req_queue_free(req_queue_t *q);

/* The server's handlers, bound to d (d->requests set). */
srv_handlers_t req_handlers(ptod_t *d);

/* Draining: every waiting request is answered SHUTTING_DOWN now; new ones
 * are refused the same way (d->state is PTOD_DRAINING). */
void req_drain(req_queue_t *q);

typedef struct req_queue_stats {
  uint32_t waiting;   /* device requests not yet running, all connections */
  uint32_t capacity;  /* queue_depth */
  uint32_t running;   /* 0 or 1 */
} req_queue_stats_t;
void req_queue_stats(req_queue_t *q, req_queue_stats_t *ret);

/* Whether nothing waits, runs or is still to be answered. */
bool req_queue_idle(req_queue_t *q);

#endif
