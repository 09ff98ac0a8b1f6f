#include "request.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "describe.h"
#include "jobs.h"
#include "log.h"
#include "metrics.h"
#include "service.h"

/* ---- answers --------------------------------------------------------------- */

/* Hand an encoded message to the connection; the sbuffer's memory goes
 * with it. */
static void send_sbuffer(srv_conn_t *conn, msgpack_sbuffer *sb) {
  srv_conn_send(conn, sb->data, sb->size);
  sb->data = NULL;
  sb->size = sb->alloc = 0;
}

static void send_error(srv_conn_t *conn, const uint32_t *msgid, const pto_error_t *err) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  int rc;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  rc = msgid ? proto_pack_response_error(&pk, *msgid, err) : proto_pack_error_notification(&pk, err);
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

/* ---- a request's end ------------------------------------------------------- */

static void req_finish(req_t *req) {
  msgpack_unpacked_destroy(&req->unpacked);
  msgpack_sbuffer_destroy(&req->response);
  free(req->diagnostics_dir);
  srv_msg_done(req->conn, req->msg);
  free(req);
}

static bool is_dispatch(const req_t *req) { return req->method == PROTO_M_DISPATCH; }

/* Answer err before the request reached the device, and end it. */
static void reject(req_t *req, const pto_error_t *err) {
  metrics_count_error(req->d->metrics, err->code);
  if (is_dispatch(req)) {
    atomic_fetch_add(&req->d->dispatches_rejected, 1);
    metrics_count_rejected(req->d->metrics, req->params.dispatch.program);
  }
  if (!srv_conn_gone(req->conn)) send_error(req->conn, &req->msgid, err);
  req_finish(req);
}

static void shutting_down(req_t *req, pto_error_t *err) {
  pto_error_set(err, PTO_E_SHUTTING_DOWN,
                "The daemon is shutting down; the %s request was not run. Retry against the "
                "restarted daemon.",
                proto_method_name(req->method));
}

/* Loop thread: the device thread is done with the request. */
static void request_complete(dsp_job_t *job) {
  req_t *req = (req_t *)job;
  ptod_t *d = req->d;
  srv_conn_t *conn = req->conn;
  pto_error_t err;

  switch (job->outcome) {
  case DSP_RAN:
    if (is_dispatch(req))
      atomic_fetch_add(req->result_code == PTO_OK ? &d->dispatches_ok : &d->dispatches_failed, 1);
    if (req->result_code != PTO_OK) metrics_count_error(d->metrics, req->result_code);
    if (!srv_conn_gone(conn)) send_sbuffer(conn, &req->response);
    req_finish(req);
    break;
  case DSP_CANCELLED:
    log_debug("Dropped %s request %u of client %llu, which went away before it ran.",
              proto_method_name(req->method), req->msgid, (unsigned long long)srv_conn_id(conn));
    if (is_dispatch(req)) atomic_fetch_add(&d->dispatches_rejected, 1);
    req_finish(req);
    break;
  case DSP_EXPIRED:
    pto_error_set(&err, PTO_E_DEADLINE_EXCEEDED,
                  "The %s request could not start within its deadline_ms = %lld (it waited %llu "
                  "ms in the queue); it was not run.",
                  proto_method_name(req->method), (long long)req->params.dispatch.deadline_ms,
                  (unsigned long long)((job->started_ns - job->admitted_ns) / 1000000u));
    reject(req, &err);
    break;
  case DSP_SHUTDOWN:
    shutting_down(req, &err);
    reject(req, &err);
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

static void admit(req_t *req) {
  ptod_t *d = req->d;
  dsp_flow_t *flow = srv_conn_data(req->conn);
  pto_error_t err;
  int rc;

  if (atomic_load(&d->state) == PTOD_DRAINING) {
    pto_error_set(&err, PTO_E_SHUTTING_DOWN,
                  "The daemon is shutting down and takes no new %s requests.",
                  proto_method_name(req->method));
    reject(req, &err);
    return;
  }
  if (service_admit(d, req, &err) < 0) {
    reject(req, &err);
    return;
  }
  if (!flow) {
    flow = dsp_flow_create(d->dsp);
    if (!flow) {
      pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
      reject(req, &err);
      return;
    }
    srv_conn_set_data(req->conn, flow);
  }
  req->baseline = d->cfg.ring;
  req->run_timeout_ms = (uint32_t)d->cfg.device.run_timeout_ms;
  req->deadlock_timeout_ms = (uint32_t)d->cfg.device.deadlock_timeout_ms;
  req->job.run = jobs_run;
  req->job.complete = request_complete;
  req->job.gone = srv_conn_gone_flag(req->conn);
  req->job.flow = flow;
  if (is_dispatch(req))
    req->job.deadline_ns = deadline_from(req->params.dispatch.deadline_ms, dsp_now_ns());
  rc = dsp_submit(d->dsp, &req->job);
  if (rc == -PTO_E_BUSY) {
    pto_error_set(&err, PTO_E_BUSY,
                  "The admission queue is full (queue_depth = %u, queue_full = busy); retry "
                  "later.",
                  d->cfg.daemon.queue_depth);
    reject(req, &err);
  } else if (rc < 0) {
    shutting_down(req, &err);
    reject(req, &err);
  }
}

/* ---- from a message to a request -------------------------------------------------- */

static void on_message(srv_conn_t *conn, srv_msg_t *msg, void *data) {
  ptod_t *d = data;
  req_t *req = calloc(1, sizeof(*req));
  proto_envelope_t env;
  proto_result_t result;
  service_scratch_t scratch;
  pto_error_t err;
  int method, rc;

  atomic_fetch_add(&d->requests_total, 1);
  if (!req) {
    pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
    srv_conn_fail(conn, &err);
    srv_msg_done(conn, msg);
    return;
  }
  req->d = d;
  req->conn = conn;
  req->msg = msg;
  msgpack_unpacked_init(&req->unpacked);
  msgpack_sbuffer_init(&req->response);

  rc = proto_decode(msg->data, msg->len, &req->unpacked, &env, &err);
  if (rc < 0) {
    if (env.answerable) {
      req->msgid = env.msgid;
      reject(req, &err);
      return;
    }
    log_client(LOG_INFO, "Client %llu sent a message that is not msgpack-RPC (%s); disconnecting it.",
               (unsigned long long)srv_conn_id(conn), err.message);
    srv_conn_fail(conn, &err);
    req_finish(req);
    return;
  }
  if (env.type != PROTO_MSG_REQUEST) {
    /* Clients send requests only; notifications and stray responses get no
     * answer (msgpack-RPC: a notification is never answered). */
    log_debug("Client %llu sent a %s, ignoring it.", (unsigned long long)srv_conn_id(conn),
              env.type == PROTO_MSG_NOTIFICATION ? "notification" : "response");
    req_finish(req);
    return;
  }
  req->msgid = env.msgid;
  method = proto_method_from_name(env.method, env.method_len);
  if (method < 0) {
    char shown[4 * 64 + 4];
    if (proto_escape_text(env.method, env.method_len, 64, shown, sizeof(shown) - 3) <
        env.method_len)
      strcat(shown, "...");
    pto_error_set(&err, PTO_E_UNKNOWN_METHOD,
                  "There is no method '%s'; the methods are ping, status, metrics, programs, "
                  "dispatch, buffer.alloc, buffer.write, buffer.read, buffer.free, buffer.list, "
                  "prewarm and advise.",
                  shown);
    reject(req, &err);
    return;
  }
  req->method = (proto_method_t)method;
  rc = proto_params_decode(req->method, env.params, req->unpacked.zone, &req->params, &err);
  if (rc < 0) {
    if (rc == -ENOMEM) pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
    reject(req, &err);
    return;
  }
  rc = service_serve(d, req->method, &result, &scratch, &err);
  if (rc == 0) {
    admit(req);
    return;
  }
  if (rc < 0) {
    reject(req, &err);
  } else {
    send_result(req, &result);
    req_finish(req);
  }
  service_scratch_free(&scratch);
}

/* The connection is closing: its flow goes; the device drops its queued
 * requests unrun (their gone flag is set) and completes them here. */
static void on_close(srv_conn_t *conn, void *data) {
  ptod_t *d = data;
  log_debug("Client %llu disconnected with %u requests in flight.",
            (unsigned long long)srv_conn_id(conn), srv_conn_pending(conn));
  dsp_flow_release(d->dsp, srv_conn_data(conn));
  srv_conn_set_data(conn, NULL);
}

static void on_fatal(srv_conn_t *conn, const pto_error_t *err, const uint32_t *msgid, void *data) {
  metrics_count_error(((ptod_t *)data)->metrics, err->code);
  send_error(conn, msgid, err);
}

/* Completions found together answer together: one writev per connection. */
static void batch_begin(void *data) {
  ptod_t *d = data;
  if (d->srv) srv_cork(d->srv);
}

static void batch_end(void *data) {
  ptod_t *d = data;
  if (d->srv) srv_uncork(d->srv);
}

srv_handlers_t req_handlers(ptod_t *d) {
  srv_handlers_t h = {on_message, on_close, on_fatal, d};
  dsp_set_batch_hooks(d->dsp, batch_begin, batch_end, d);
  return h;
}

uint32_t req_queue_capacity(const cfg_t *cfg) {
  return cfg->daemon.queue_full == CFG_QUEUE_BUSY ? cfg->daemon.queue_depth : UINT32_MAX;
}
