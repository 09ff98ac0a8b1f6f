/* SPDX-License-Identifier: Apache-2.0 */
#include "request.h"

#include <assert.h>
#include <errno.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "describe.h"
#include "dfx.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "service.h"
#include "request_shm.h"
#include "shm.h"

/* ---- answers --------------------------------------------------------------- */

/* Hand an encoded message to the connection; the sbuffer's memory goes
 * with it. */
static void send_sbuffer(srv_conn_t *conn, msgpack_sbuffer *sb) {
  srv_conn_send(conn, sb->data, sb->size);
  sb->data = NULL;
  sb->size = sb->alloc = 0;
}

/* An error answer to msgid, echoing request_id (NULL: none), or with no
 * msgid the "error" notification. */
static void send_error(srv_conn_t *conn, const uint32_t *msgid, const pto_error_t *err,
                       const char *request_id) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  int rc;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  rc = msgid ? proto_encode_error_response_dfx(&sb, *msgid, err, NULL, request_id)
             : proto_pack_error_notification(&pk, err);
  if (rc == 0)
    send_sbuffer(conn, &sb);
  else
    srv_conn_close(conn);
  msgpack_sbuffer_destroy(&sb);
}

static void send_result(req_t *req, const proto_result_t *result) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (proto_encode_response(&sb, req->msgid, req->method, result) == 0)
    send_sbuffer(req->conn, &sb);
  else
    srv_conn_close(req->conn);
  msgpack_sbuffer_destroy(&sb);
}

const char *req_tag(const req_t *req, char *buf, size_t cap) {
  int n = snprintf(buf, cap, "request %u of client %llu", req->msgid,
                   (unsigned long long)srv_conn_id(req->conn));
  if (req->request_id && n >= 0 && (size_t)n < cap)
    snprintf(buf + n, cap - (size_t)n, " (request_id %s)", req->request_id);
  return buf;
}

/* ---- a request's end ------------------------------------------------------- */

/* Per connection: its flow of device requests and its shared-memory
 * regions, made when first needed. */
typedef struct req_conn {
  dsp_flow_t *flow;
  shm_table_t *shm;
} req_conn_t;

static req_conn_t *conn_state(srv_conn_t *conn) {
  req_conn_t *rc = srv_conn_data(conn);
  if (!rc && (rc = calloc(1, sizeof(*rc))) != NULL) srv_conn_set_data(conn, rc);
  return rc;
}

shm_table_t *req_conn_shm(req_t *req) {
  req_conn_t *cs = conn_state(req->conn);
  if (cs && !cs->shm) cs->shm = shm_table_new(&req->d->loop.shm_totals);
  return cs ? cs->shm : NULL;
}

static void req_finish(req_t *req) {
  if (req->fd >= 0) close(req->fd); /* a memfd (server.h): its close never waits */
  for (uint32_t i = 0; i < req->nshm_refs; i++) shm_release(req->shm_refs[i]);
  if (req->unpacked.zone == &req->zone) { /* req's own: destroyed, never freed */
    msgpack_zone_destroy(&req->zone);
    req->unpacked.zone = NULL;
  }
  msgpack_unpacked_destroy(&req->unpacked);
  msgpack_sbuffer_destroy(&req->response);
  proto_refbuf_free(&req->refs);
  staging_give_back(req->lent);
  free(req->snap.diagnostics_dir);
  srv_msg_done(req->conn, req->msg);
  free(req);
}

/* ---- the method table ------------------------------------------------------ */

/* Where a method runs. */
typedef enum method_thread { ON_LOOP, ON_DEVICE } method_thread_t;

/* One row per method: everything request.c knows of a method.  Device
 * methods pass admit (NULL: no check) with req->snap taken, name their
 * shared-memory ranges (regions, NULL: none) and are queued as one job in
 * their connection's flow; run encodes the answer on the device thread.
 * A request has that one queue entry until it is answered: where a method
 * is cancelled, ordered or run on the loop instead is a matter of its
 * row. */
typedef struct method_row {
  method_thread_t thread;
  service_serve_fn *serve;                          /* ON_LOOP (service.h) */
  int (*admit)(const req_t *req, pto_error_t *err); /* ON_DEVICE */
  int (*regions)(req_t *req, shm_table_t *shm, pto_error_t *err);
  void (*run)(req_t *req); /* ON_DEVICE, by the device token's holder */
  /* ON_DEVICE: whether this request may run on the loop when the device
   * is free (dispatch.h, jobs.h); NULL: never. */
  bool (*is_short)(const req_t *req);
  /* A dispatch: runs a program (looked up at admission, its outcome
   * counted per program), may have a deadline and DFX artefacts. */
  bool runs_program;
} method_row_t;

static const method_row_t *row_of(const req_t *req);

static bool is_dispatch(const req_t *req) { return row_of(req)->runs_program; }

/* Answer err before the request reached the device, and end it. */
static void reject(req_t *req, const pto_error_t *err) {
  metrics_count_error(req->d->metrics, err->code);
  if (is_dispatch(req)) {
    /* Only a program that exists gets its own label: names of programs
     * that do not would take every label slot (issue 18). */
    metrics_count_rejected(req->d->metrics,
                           req->snap.program ? req->params.dispatch.program : NULL);
  }
  if (!srv_conn_gone(req->conn)) send_error(req->conn, &req->msgid, err, req->request_id);
  req_finish(req);
}

static void shutting_down(req_t *req, pto_error_t *err) {
  pto_error_set(err, PTO_E_SHUTTING_DOWN,
                "The daemon is shutting down; the %s request was not run. Retry against the "
                "restarted daemon.",
                proto_method_name(req->method));
}

static void give_back(void *area) { staging_give_back(area); }

/* The device token's holder (dispatch.h: the device thread, or the loop
 * for a short job with the device free): the method's device handler
 * encodes the response. */
static void run_on_device(dsp_job_t *job) {
  req_t *req = (req_t *)job;
  row_of(req)->run(req);
}

/* A request its client cancelled while it waited: counted, answered
 * CANCELLED, ended (its regions and counted bytes go with it). */
static void answer_cancelled(req_t *req) {
  pto_error_t err;
  char tag[REQ_TAG_MAX];
  metrics_count_cancelled(req->d->metrics);
  metrics_count_error(req->d->metrics, PTO_E_CANCELLED);
  if (is_dispatch(req)) metrics_count_dispatch(req->d->metrics, METRICS_REJECTED);
  log_client(LOG_DEBUG, "The client cancelled %s %s before it ran.",
             proto_method_name(req->method), req_tag(req, tag, sizeof(tag)));
  pto_error_set(&err, PTO_E_CANCELLED,
                "The %s request with msgid %u was cancelled by its client before it started; "
                "it was not run.",
                proto_method_name(req->method), req->msgid);
  if (!srv_conn_gone(req->conn)) send_error(req->conn, &req->msgid, &err, req->request_id);
  req_finish(req);
}

static bool job_is_short(dsp_job_t *job) {
  req_t *req = (req_t *)job;
  return row_of(req)->is_short(req);
}

/* Loop thread: the device thread is done with the request. */
static void request_complete(dsp_job_t *job) {
  req_t *req = (req_t *)job;
  ptod_t *d = req->d;
  srv_conn_t *conn = req->conn;
  pto_error_t err;
  char tag[REQ_TAG_MAX];

  switch (job->outcome) {
  case DSP_RAN:
    if (is_dispatch(req))
      metrics_count_dispatch(d->metrics,
                             req->result_code == PTO_OK ? METRICS_OK : METRICS_FAILED);
    if (req->result_code != PTO_OK) metrics_count_error(d->metrics, req->result_code);
    if (!srv_conn_gone(conn) && req->refs.n) {
      answer_send(conn, &req->response, &req->refs, req->lent ? req->lent->bytes : 0, give_back,
                  req->lent);
      req->lent = NULL; /* the answer's until it is written */
    } else if (!srv_conn_gone(conn)) {
      send_sbuffer(conn, &req->response);
    }
    req_finish(req); /* what was not sent (the client gone) is freed here */
    break;
  case DSP_CANCELLED:
    log_client(LOG_DEBUG, "Dropped %s %s: its client went away before it ran.",
               proto_method_name(req->method), req_tag(req, tag, sizeof(tag)));
    if (is_dispatch(req)) metrics_count_dispatch(d->metrics, METRICS_REJECTED);
    req_finish(req);
    break;
  case DSP_EXPIRED:
    pto_error_set(&err, PTO_E_DEADLINE_EXCEEDED,
                  "The %s request could not start within its deadline_ms = %lld (it waited %llu "
                  "ms in the queue); it was not run.",
                  proto_method_name(req->method), (long long)req->params.dispatch.deadline_ms,
                  (unsigned long long)((job->started_ns - job->admitted_ns) / 1000000u));
    log_client(LOG_INFO, "The deadline of %s %s expired before it started.",
               proto_method_name(req->method), req_tag(req, tag, sizeof(tag)));
    reject(req, &err);
    break;
  case DSP_SHUTDOWN:
    shutting_down(req, &err);
    reject(req, &err);
    break;
  case DSP_WITHDRAWN:
    answer_cancelled(req);
    break;
  }
}

/* ---- admission ------------------------------------------------------------------ */

/* deadline_ms from now, in CLOCK_MONOTONIC ns; 0 (none) when unset or too
 * large to add to the clock (INT64_MAX is a natural "never"). */
static uint64_t deadline_from(int64_t deadline_ms, uint64_t now_ns) {
  uint64_t ms = (uint64_t)deadline_ms;
  if (deadline_ms == PROTO_UNSET || deadline_ms < 0) return 0;
  if (ms > (UINT64_MAX - now_ns) / 1000000u) return 0;
  return now_ns + ms * 1000000u;
}

/* What the request takes from the configuration, all at admission, so a
 * reload does not change an admitted request (request.h): the only writer
 * of req->snap.  A dispatch's program is found now (programs stay loaded);
 * one that does not exist is the error. */
static int req_snapshot(req_t *req, pto_error_t *err) {
  const ptod_t *d = req->d;
  req_snapshot_t *snap = &req->snap;
  int rc;
  snap->run_timeout_ms = (uint32_t)d->loop.cfg.device.run_timeout_ms;
  snap->deadlock_timeout_ms = (uint32_t)d->loop.cfg.device.deadlock_timeout_ms;
  snap->output_limit = d->loop.cfg.daemon.output_limit;
  snap->device_id = d->loop.cfg.device.id;
  /* The RunConfig of the two methods that carry one. */
  const proto_config_t *run = req->method == PROTO_M_PREWARM ? &req->params.prewarm.config
                              : is_dispatch(req)              ? &req->params.dispatch.config
                                                              : NULL;
  if (run) pto_sizing_resolve(&run->sizing, &d->device.env, &d->loop.cfg.ring, &snap->sizing);
  if (!is_dispatch(req)) return 0;
  rc = rt_program_get(d->device.rt, req->params.dispatch.program, &snap->program, err);
  if (rc < 0) return rc;
  /* DFX artefacts come back in the result (dfx.h), and as files too where
   * there is a diagnostics_dir. */
  if (dfx_wanted(run) && d->loop.cfg.daemon.diagnostics_dir[0]) {
    snap->diagnostics_max_bytes = d->loop.cfg.daemon.diagnostics_max_bytes;
    snap->diagnostics_max_files = d->loop.cfg.daemon.diagnostics_max_files;
    snap->diagnostics_dir = strdup(d->loop.cfg.daemon.diagnostics_dir);
    if (!snap->diagnostics_dir) return service_out_of_memory(err);
  }
  return 0;
}

/* A device request: snapshot, checks, its regions, then its one entry in
 * the connection's flow. */
static void admit(req_t *req, const method_row_t *row) {
  ptod_t *d = req->d;
  req_conn_t *cs = conn_state(req->conn);
  pto_error_t err;
  int rc;

  if (atomic_load(&d->state) == PTOD_DRAINING) {
    pto_error_set(&err, PTO_E_SHUTTING_DOWN,
                  "The daemon is shutting down and takes no new %s requests.",
                  proto_method_name(req->method));
    reject(req, &err);
    return;
  }
  if (cs && !cs->flow) cs->flow = dsp_flow_create(d->loop.dsp);
  if (!cs || !cs->flow) {
    service_out_of_memory(&err);
    reject(req, &err);
    return;
  }
  if (req_snapshot(req, &err) < 0 || (row->admit && row->admit(req, &err) < 0) ||
      (row->regions && row->regions(req, cs->shm, &err) < 0)) {
    reject(req, &err);
    return;
  }
  req->job.run = run_on_device;
  req->job.complete = request_complete;
  req->job.is_short = row->is_short ? job_is_short : NULL;
  req->job.gone = srv_conn_gone_flag(req->conn);
  req->job.flow = cs->flow;
  req->job.priority = (int8_t)proto_params_priority(req->method, &req->params);
  req->job.tag = req->msgid;
  if (row->runs_program)
    req->job.deadline_ns = deadline_from(req->params.dispatch.deadline_ms, dsp_now_ns());
  rc = dsp_submit(d->loop.dsp, &req->job);
  if (rc == -PTO_E_BUSY) {
    pto_error_set(&err, PTO_E_BUSY,
                  "The admission queue is full (queue_depth = %u, queue_full = busy); retry "
                  "later.",
                  d->loop.cfg.daemon.queue_depth);
    reject(req, &err);
  } else if (rc < 0) {
    shutting_down(req, &err);
    reject(req, &err);
  }
}

/* A method served on the loop: answered now. */
static void serve(req_t *req, const method_row_t *row) {
  proto_result_t result;
  service_scratch_t scratch;
  pto_error_t err;
  memset(&result, 0, sizeof(result));
  memset(&scratch, 0, sizeof(scratch));
  if (row->serve(req, &result, &scratch, &err) < 0) {
    reject(req, &err);
  } else {
    send_result(req, &result);
    req_finish(req);
  }
  service_scratch_free(&scratch);
}

/* The method table: a row per method, in proto_method_t's order. */
static const method_row_t method_rows[PROTO_M_COUNT] = {
    [PROTO_M_PING] = {ON_LOOP, .serve = service_ping},
    [PROTO_M_STATUS] = {ON_LOOP, .serve = service_status},
    [PROTO_M_METRICS] = {ON_LOOP, .serve = service_metrics},
    [PROTO_M_PROGRAMS] = {ON_LOOP, .serve = service_programs},
    [PROTO_M_DISPATCH] = {ON_DEVICE, .admit = service_admit_dispatch, .regions = regions_dispatch,
                          .run = jobs_dispatch, .is_short = jobs_dispatch_is_short,
                          .runs_program = true},
    [PROTO_M_BUFFER_ALLOC] = {ON_DEVICE, .run = jobs_buffer_alloc},
    [PROTO_M_BUFFER_WRITE] = {ON_DEVICE, .regions = regions_write, .run = jobs_buffer_write,
                               .is_short = jobs_write_is_short},
    [PROTO_M_BUFFER_READ] = {ON_DEVICE, .admit = service_admit_read, .regions = regions_read,
                             .run = jobs_buffer_read, .is_short = jobs_read_is_short},
    [PROTO_M_BUFFER_FREE] = {ON_DEVICE, .run = jobs_buffer_free},
    [PROTO_M_BUFFER_LIST] = {ON_LOOP, .serve = service_buffer_list},
    [PROTO_M_PREWARM] = {ON_DEVICE, .run = jobs_prewarm_request},
    [PROTO_M_ADVISE] = {ON_LOOP, .serve = service_advise},
    [PROTO_M_SHM_REGISTER] = {ON_LOOP, .serve = serve_shm_register},
    [PROTO_M_SHM_UNREGISTER] = {ON_LOOP, .serve = serve_shm_unregister},
    [PROTO_M_SHM_LIST] = {ON_LOOP, .serve = serve_shm_list},
};

static const method_row_t *row_of(const req_t *req) { return &method_rows[req->method]; }

/* ---- from a message to a request -------------------------------------------------- */

/* Zone bytes beyond the decoded objects, for what decoding params adds
 * (a dispatch's argument array ...); more takes another chunk. */
#define DECODE_EXTRA 512u

/* A request for one whole message; NULL when out of memory (the
 * connection failed, the message given back). */
static req_t *req_new(ptod_t *d, srv_conn_t *conn, srv_msg_t *msg) {
  /* malloc and an initialiser, not calloc (nor malloc + memset, which GCC
   * turns into calloc): glibc's calloc (Debian 12's 2.36) never takes a
   * freed block from the thread cache, which made it the most expensive
   * allocation of a dispatch. */
  req_t *req = malloc(sizeof(*req));
  pto_error_t err;
  if (!req) {
    service_out_of_memory(&err);
    srv_conn_fail(conn, &err);
    srv_msg_done(conn, msg);
    return NULL;
  }
  *req = (req_t){.d = d, .conn = conn, .msg = msg, .fd = -1};
  msgpack_unpacked_init(&req->unpacked);
  msgpack_sbuffer_init(&req->response);
  /* A zone the size of what this message decodes to, not msgpack-c's
   * 16 KiB: a pipeline of small requests costs what they hold. */
  if (proto_zone_init(&req->zone, msg->objects, DECODE_EXTRA)) req->unpacked.zone = &req->zone;
  if (!req->unpacked.zone) {
    service_out_of_memory(&err);
    srv_conn_fail(conn, &err);
    req_finish(req);
    return NULL;
  }
  return req;
}

/* The cancel notification: a request of this connection still waiting is
 * answered CANCELLED now; anything else (running, answered, unknown, of
 * another connection) is left alone, and a malformed cancel is logged and
 * ignored like any notification: none is ever answered. */
static void cancel(req_t *req, const proto_envelope_t *env) {
  req_conn_t *cs = srv_conn_data(req->conn);
  proto_cancel_params_t p;
  pto_error_t err;
  if (proto_cancel_decode(env->params, &p, &err) < 0) {
    log_client(LOG_INFO, "Client %llu sent a cancel notification that is not valid (%s); "
               "ignoring it.",
               (unsigned long long)srv_conn_id(req->conn), err.message);
    return;
  }
  if (cs && cs->flow) dsp_withdraw(req->d->loop.dsp, cs->flow, p.msgid);
}

/* The envelope: 0 when *env is a request to look up; -1 when the request
 * has ended (answered, ignored, or its connection failed). */
static int open_envelope(req_t *req, proto_envelope_t *env) {
  srv_conn_t *conn = req->conn;
  pto_error_t err;
  /* conn.c's reader cut the message out: its structure is already checked */
  int rc = proto_decode_delimited(req->msg->data, req->msg->len, &req->unpacked, env, &err);
  /* The fds a shm.register came with are its own whatever refuses it
   * (envelope, name, params): left queued, the next register would take
   * them instead of its own. */
  if (proto_envelope_method_is(env, "shm.register"))
    req->fd = srv_conn_take_fd(conn, &req->fds_together);
  if (rc < 0 && env->answerable) {
    req->msgid = env->msgid;
    reject(req, &err);
    return -1;
  }
  if (rc < 0) {
    log_client(LOG_INFO, "Client %llu sent a message that is not msgpack-RPC (%s); disconnecting it.",
               (unsigned long long)srv_conn_id(conn), err.message);
    srv_conn_fail(conn, &err);
    req_finish(req);
    return -1;
  }
  if (env->type == PROTO_MSG_NOTIFICATION &&
      proto_envelope_method_is(env, PROTO_CANCEL)) {
    cancel(req, env);
    req_finish(req);
    return -1;
  }
  if (env->type != PROTO_MSG_REQUEST) {
    /* Clients send requests only; notifications and stray responses get no
     * answer (msgpack-RPC: a notification is never answered). */
    log_client(LOG_DEBUG, "Client %llu sent a %s, ignoring it.",
               (unsigned long long)srv_conn_id(conn),
               env->type == PROTO_MSG_NOTIFICATION ? "notification" : "response");
    req_finish(req);
    return -1;
  }
  req->msgid = env->msgid;
  return 0;
}

/* The method and its params: 0, or -1 when refused (answered and ended). */
static int decode_request(req_t *req, const proto_envelope_t *env) {
  pto_error_t err;
  int method = proto_method_from_name(env->method, env->method_len);
  int rc;
  if (method < 0) {
    char shown[4 * 64 + 4];
    proto_show_text(env->method, env->method_len, 64, shown, sizeof(shown));
    pto_error_set(&err, PTO_E_UNKNOWN_METHOD,
                  "There is no method '%s'; the methods are ping, status, metrics, programs, "
                  "dispatch, buffer.alloc, buffer.write, buffer.read, buffer.free, buffer.list, "
                  "prewarm, advise, shm.register, shm.unregister and shm.list.",
                  shown);
    reject(req, &err);
    return -1;
  }
  req->method = (proto_method_t)method;
  rc = proto_params_decode(req->method, env->params, req->unpacked.zone, &req->params, &err);
  if (rc < 0) { /* the codec's own sentence, out of memory included */
    reject(req, &err);
    return -1;
  }
  req->request_id = proto_params_request_id(req->method, &req->params);
  return 0;
}

static void on_message(srv_conn_t *conn, srv_msg_t *msg, void *data) {
  ptod_t *d = data;
  proto_envelope_t env;
  const method_row_t *row;
  req_t *req;

  metrics_count_request(d->metrics);
  req = req_new(d, conn, msg);
  if (!req || open_envelope(req, &env) < 0 || decode_request(req, &env) < 0) return;
  /* From here the request is held as long as it waits: charge it all. */
  srv_msg_charge_decoded(conn, msg, srv_heap_bytes(req) + proto_zone_bytes(req->unpacked.zone));
  row = row_of(req);
  if (row->thread == ON_LOOP)
    serve(req, row);
  else
    admit(req, row);
}

/* The connection is closing: its flow goes; the device drops its queued
 * requests unrun (their gone flag is set) and completes them here. */
static void on_close(srv_conn_t *conn, void *data) {
  ptod_t *d = data;
  log_client(LOG_DEBUG, "Client %llu disconnected with %u requests in flight.",
             (unsigned long long)srv_conn_id(conn), srv_conn_pending(conn));
  req_conn_t *cs = srv_conn_data(conn);
  if (!cs) return;
  srv_conn_set_data(conn, NULL);
  dsp_flow_release(d->loop.dsp, cs->flow);
  shm_table_close(cs->shm); /* unmapped once no request copies through them */
  free(cs);
}

static void on_fatal(srv_conn_t *conn, const pto_error_t *err, const uint32_t *msgid, void *data) {
  metrics_count_error(((ptod_t *)data)->metrics, err->code);
  send_error(conn, msgid, err, NULL);
}

/* Completions found together answer together: one writev per connection. */
static void batch_begin(void *data) {
  ptod_t *d = data;
  if (d->loop.srv) srv_cork(d->loop.srv);
}

static void batch_end(void *data) {
  ptod_t *d = data;
  if (d->loop.srv) srv_uncork(d->loop.srv);
}

srv_handlers_t req_handlers(ptod_t *d) {
  for (size_t i = 0; i < PROTO_M_COUNT; i++) /* every method has its handler */
    assert(method_rows[i].thread == ON_LOOP ? method_rows[i].serve != NULL
                                            : method_rows[i].run != NULL);
  srv_handlers_t h = {on_message, on_close, on_fatal, d};
  dsp_set_batch_hooks(d->loop.dsp, batch_begin, batch_end, d);
  return h;
}
