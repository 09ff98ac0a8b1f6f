#include "service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/version.h>

#include "dfx.h"
#include "log.h"
#include "metrics.h"
#include "metrics_feed.h"

const char *ptod_state_name(ptod_state_t state) {
  switch (state) {
  case PTOD_WARMING: return "warming";
  case PTOD_READY: return "ready";
  case PTOD_DRAINING: return "draining";
  }
  return "unknown";
}

void ptod_count_error(ptod_t *d, int code) { metrics_count_error(d->metrics, code); }

void ptod_set_prewarm(ptod_t *d, const pto_sizing_resolved_t *sizing) {
  pthread_mutex_lock(&d->lock);
  d->prewarm_sizing = *sizing;
  d->prewarm_key = pto_sizing_key(sizing);
  d->first_dispatch_hit = -1;
  pthread_mutex_unlock(&d->lock);
}

/* ---- sending ------------------------------------------------------------ */

/* Hand an encoded message to the connection; the sbuffer's memory goes
 * with it. */
static void send_sbuffer(srv_conn_t *conn, msgpack_sbuffer *sb) {
  srv_conn_send(conn, sb->data, sb->size);
  sb->data = NULL;
  sb->size = sb->alloc = 0;
}

void service_send_error(srv_conn_t *conn, uint32_t msgid, const pto_error_t *err) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  if (proto_pack_response_error(&pk, msgid, err) == 0)
    send_sbuffer(conn, &sb);
  else
    srv_conn_close(conn);
  msgpack_sbuffer_destroy(&sb);
}

static void send_result(srv_conn_t *conn, uint32_t msgid, proto_method_t method,
                        const proto_result_t *result) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  if (proto_encode_response(&sb, msgid, method, result) == 0)
    send_sbuffer(conn, &sb);
  else
    srv_conn_close(conn);
  msgpack_sbuffer_destroy(&sb);
}

/* ---- requests ----------------------------------------------------------- */

static void request_free(svc_request_t *req) {
  msgpack_unpacked_destroy(&req->unpacked);
  msgpack_sbuffer_destroy(&req->response);
  srv_msg_free(req->msg);
  free(req->diagnostics_dir);
  free(req);
}

static bool is_dispatch(const svc_request_t *req) { return req->method == PROTO_M_DISPATCH; }

/* An error answered before the request reached the device. */
static void reject(svc_request_t *req, const pto_error_t *err) {
  ptod_t *d = req->d;
  ptod_count_error(d, err->code);
  if (is_dispatch(req)) {
    atomic_fetch_add(&d->dispatches_rejected, 1);
    metrics_count_rejected(d->metrics, req->params.dispatch.program);
  }
  service_send_error(req->conn, req->msgid, err);
}

/* Loop thread: the device thread is done with the request. */
static void request_complete(dsp_job_t *job) {
  svc_request_t *req = (svc_request_t *)job;
  ptod_t *d = req->d;
  srv_conn_t *conn = req->conn;
  pto_error_t err;

  switch (job->outcome) {
  case DSP_RAN:
    if (is_dispatch(req)) {
      if (req->result_code == PTO_OK)
        atomic_fetch_add(&d->dispatches_ok, 1);
      else
        atomic_fetch_add(&d->dispatches_failed, 1);
    }
    if (req->result_code != PTO_OK) ptod_count_error(d, req->result_code);
    if (!srv_conn_gone(conn)) send_sbuffer(conn, &req->response);
    break;
  case DSP_CANCELLED:
    log_debug("Dropped %s request %u of client %llu, which went away before it ran.",
              proto_method_name(req->method), req->msgid, (unsigned long long)conn->id);
    if (is_dispatch(req)) atomic_fetch_add(&d->dispatches_rejected, 1);
    break;
  case DSP_EXPIRED:
    if (srv_conn_gone(conn)) {
      atomic_fetch_add(&d->dispatches_rejected, 1);
      break;
    }
    pto_error_set(&err, PTO_E_DEADLINE_EXCEEDED,
                  "The %s request could not start within its deadline_ms = %lld (it waited %llu "
                  "ms in the queue); it was not run.",
                  proto_method_name(req->method), (long long)req->params.dispatch.deadline_ms,
                  (unsigned long long)((job->started_ns - job->admitted_ns) / 1000000u));
    reject(req, &err);
    break;
  case DSP_SHUTDOWN:
    pto_error_set(&err, PTO_E_SHUTTING_DOWN,
                  "The daemon is shutting down; the %s request was not run. Retry against the "
                  "restarted daemon.",
                  proto_method_name(req->method));
    if (!srv_conn_gone(conn))
      reject(req, &err);
    else if (is_dispatch(req))
      atomic_fetch_add(&d->dispatches_rejected, 1);
    break;
  }
  conn->pending--;
  srv_conn_pending_done(conn);
  srv_conn_unref(conn);
  request_free(req);
}

/* ---- methods served on the loop ----------------------------------------- */

void service_arena_snapshot(ptod_t *d, proto_arena_t *ret) {
  rt_cache_stats_t cs;
  memset(ret, 0, sizeof(*ret));
  rt_cache_stats(d->rt, &cs);
  if (cs.valid) pto_sizing_from_resolved(&cs.sizing, &ret->sizing);
  ret->key = cs.valid ? cs.key : 0;
  ret->bytes = cs.bytes;
  ret->build_us = cs.last_build_us;
  ret->builds = cs.builds;
  ret->hits = cs.hits;
  ret->misses = cs.misses;
  pthread_mutex_lock(&d->lock);
  pto_sizing_from_resolved(&d->prewarm_sizing, &ret->prewarm.sizing);
  ret->prewarm.key = d->prewarm_key;
  ret->prewarm.first_dispatch_hit = d->first_dispatch_hit < 0 ? PROTO_UNSET : d->first_dispatch_hit;
  pthread_mutex_unlock(&d->lock);
}

static void serve_status(ptod_t *d, proto_status_result_t *s) {
  dsp_stats_t q;
  buf_memory_t m;
  s->device = d->cfg.device.id;
  s->platform = dev_name(d->dev);
  s->version = PTO_VERSION;
  s->uptime_s = (dsp_now_ns() - d->started_ns) / 1000000000u;
  s->state = ptod_state_name((ptod_state_t)atomic_load(&d->state));
  dsp_get_stats(d->dsp, &q);
  s->queue.depth = q.depth;
  s->queue.capacity = q.capacity;
  s->queue.running = q.running;
  service_arena_snapshot(d, &s->arena);
  buf_memory(d->buffers, &m);
  s->memory.limit = m.limit;
  s->memory.arena = m.arena;
  s->memory.buffers = m.buffers;
  s->memory.free = m.free;
  s->dispatches.ok = atomic_load(&d->dispatches_ok);
  s->dispatches.failed = atomic_load(&d->dispatches_failed);
  s->dispatches.rejected = atomic_load(&d->dispatches_rejected);
  s->clients = srv_client_count(d->srv);
}

typedef struct program_list {
  proto_program_info_t *items;
  uint32_t count, cap;
} program_list_t;

static void collect_program(void *data, const char *name, const pto_program_t *prog,
                            const pto_error_t *err) {
  program_list_t *list = data;
  if (!prog) {
    log_warning("Program '%s' cannot be loaded: %s, ignoring it.", name, err->message);
    return;
  }
  if (list->count == list->cap) {
    uint32_t cap = list->cap ? list->cap * 2 : 8;
    proto_program_info_t *grown = realloc(list->items, cap * sizeof(*grown));
    if (!grown) return;
    list->items = grown;
    list->cap = cap;
  }
  list->items[list->count].name = prog->name;
  list->items[list->count].description = prog->description;
  list->items[list->count].args = prog->args;
  list->items[list->count].nargs = prog->nargs;
  list->count++;
}

/* Serve a method that needs no device; returns false when it is not one. */
static bool serve_on_loop(svc_request_t *req) {
  ptod_t *d = req->d;
  proto_result_t result;
  buf_info_t *infos = NULL;
  proto_buffer_info_t *bufs = NULL;
  program_list_t programs = {0};
  char *text = NULL;
  advise_result_mem_t advice = {0};
  size_t n = 0;
  pto_error_t err;
  int rc;

  memset(&result, 0, sizeof(result));
  switch (req->method) {
  case PROTO_M_PING:
    result.ping.version = PTO_VERSION;
    result.ping.device = d->cfg.device.id;
    result.ping.state = ptod_state_name((ptod_state_t)atomic_load(&d->state));
    break;
  case PROTO_M_STATUS:
    serve_status(d, &result.status);
    break;
  case PROTO_M_METRICS:
    text = metrics_feed_text(d, &n);
    if (!text) goto oom;
    result.metrics.text = text;
    result.metrics.len = n;
    break;
  case PROTO_M_PROGRAMS:
    rc = rt_programs_foreach(d->rt, collect_program, &programs);
    if (rc < 0) {
      free(programs.items);
      pto_error_set(&err, PTO_E_INTERNAL,
                    "The programs directory '%s' cannot be read: %s; ask the operator to set "
                    "[device] programs to the directory that holds the NAME.so programs.",
                    d->cfg.device.programs, strerror(-rc));
      reject(req, &err);
      return true;
    }
    result.programs.programs = programs.items;
    result.programs.count = programs.count;
    break;
  case PROTO_M_BUFFER_LIST:
    if (buf_list(d->buffers, &infos, &n) < 0) goto oom;
    bufs = calloc(n ? n : 1, sizeof(*bufs));
    if (!bufs) goto oom;
    for (size_t i = 0; i < n; i++) {
      bufs[i].name = infos[i].name;
      bufs[i].bytes = infos[i].bytes;
    }
    result.buffer_list.buffers = bufs;
    result.buffer_list.count = (uint32_t)n;
    break;
  case PROTO_M_ADVISE:
    if (advise_result(d->advise, &result.advise, &advice) < 0) goto oom;
    break;
  default:
    return false;
  }
  send_result(req->conn, req->msgid, req->method, &result);
  advise_result_free(&advice);
  free(text);
  free(programs.items);
  free(infos);
  free(bufs);
  return true;

oom:
  free(text);
  free(infos);
  free(bufs);
  pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
  reject(req, &err);
  return true;
}

/* ---- admission ---------------------------------------------------------- */

static void admit(svc_request_t *req) {
  ptod_t *d = req->d;
  pto_error_t err;
  int rc;

  /* Only requests that wait for the device are in flight; the ones served
   * on the loop are answered at once and never count. */
  if (req->conn->pending >= d->cfg.daemon.max_pending) {
    pto_error_set(&err, PTO_E_BUSY,
                  "This connection already has %u requests in flight (max_pending = %u); wait "
                  "for some responses first.",
                  req->conn->pending, d->cfg.daemon.max_pending);
    reject(req, &err);
    request_free(req);
    return;
  }
  if (atomic_load(&d->state) == PTOD_DRAINING) {
    pto_error_set(&err, PTO_E_SHUTTING_DOWN,
                  "The daemon is shutting down and takes no new %s requests.",
                  proto_method_name(req->method));
    reject(req, &err);
    request_free(req);
    return;
  }
  req->baseline = d->cfg.ring;
  req->run_timeout_ms = (uint32_t)d->cfg.device.run_timeout_ms;
  req->deadlock_timeout_ms = (uint32_t)d->cfg.device.deadlock_timeout_ms;
  if (is_dispatch(req)) {
    /* DFX artefacts come back in the result (dfx.h), and as files too
     * where there is a diagnostics_dir. */
    req->output_limit = d->cfg.daemon.output_limit;
    req->device_id = d->cfg.device.id;
    if (dfx_wanted(&req->params.dispatch.config) && d->cfg.daemon.diagnostics_dir[0]) {
      req->diagnostics_dir = strdup(d->cfg.daemon.diagnostics_dir);
      if (!req->diagnostics_dir) {
        pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
        reject(req, &err);
        request_free(req);
        return;
      }
    }
  }
  req->job.run = jobs_run;
  req->job.complete = request_complete;
  req->job.gone = &req->conn->gone;
  if (req->method == PROTO_M_DISPATCH && req->params.dispatch.deadline_ms != PROTO_UNSET)
    req->job.deadline_ns = dsp_now_ns() + (uint64_t)req->params.dispatch.deadline_ms * 1000000u;
  rc = dsp_submit(d->dsp, &req->job);
  if (rc < 0) {
    if (rc == -PTO_E_BUSY) {
      dsp_stats_t q;
      dsp_get_stats(d->dsp, &q);
      pto_error_set(&err, PTO_E_BUSY,
                    "The admission queue is full (queue_depth = %u); retry later.", q.capacity);
    } else {
      pto_error_set(&err, -rc, "The daemon is shutting down and takes no new %s requests.",
                    proto_method_name(req->method));
    }
    reject(req, &err);
    request_free(req);
    return;
  }
  req->conn->pending++;
  srv_conn_ref(req->conn);
}

/* A client's bytes, echoed in a message: printable ASCII as is, anything
 * else as \xNN, so the error map stays valid UTF-8; cut at 64 bytes. */
static void printable(const char *text, size_t len, char *buf, size_t size) {
  size_t at = 0;
  for (size_t i = 0; i < len && i < 64 && at + 8 < size; i++) {
    unsigned char ch = (unsigned char)text[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '\\')
      buf[at++] = (char)ch;
    else
      at += (size_t)snprintf(buf + at, size - at, "\\x%02x", ch);
  }
  if (len > 64 && at + 4 < size) {
    memcpy(buf + at, "...", 3);
    at += 3;
  }
  buf[at] = '\0';
}

static void on_message(srv_conn_t *conn, srv_msg_t *msg, void *data) {
  ptod_t *d = data;
  svc_request_t *req = calloc(1, sizeof(*req));
  proto_envelope_t env;
  pto_error_t err;
  int method, rc;

  atomic_fetch_add(&d->requests, 1);
  if (!req) {
    srv_msg_free(msg);
    srv_conn_close(conn);
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
      ptod_count_error(d, err.code);
      service_send_error(conn, env.msgid, &err);
    } else {
      log_info("Client %llu sent a message that is not msgpack-RPC (%s); disconnecting it.",
               (unsigned long long)conn->id, err.message);
      srv_handlers_t h = service_handlers(d);
      h.on_reject(conn, &err, d);
    }
    request_free(req);
    return;
  }
  if (env.type != PROTO_MSG_REQUEST) {
    /* Clients send requests only; notifications and stray responses get no
     * answer (msgpack-RPC: a notification is never answered). */
    log_debug("Client %llu sent a %s, ignoring it.", (unsigned long long)conn->id,
              env.type == PROTO_MSG_NOTIFICATION ? "notification" : "response");
    request_free(req);
    return;
  }
  req->msgid = env.msgid;
  method = proto_method_from_name(env.method, env.method_len);
  if (method < 0) {
    char shown[4 * 64 + 4];
    printable(env.method, env.method_len, shown, sizeof(shown));
    pto_error_set(&err, PTO_E_UNKNOWN_METHOD,
                  "There is no method '%s'; the methods are ping, status, metrics, programs, "
                  "dispatch, buffer.alloc, buffer.write, buffer.read, buffer.free, buffer.list, "
                  "prewarm and advise.",
                  shown);
    reject(req, &err);
    request_free(req);
    return;
  }
  req->method = (proto_method_t)method;
  rc = proto_params_decode(req->method, env.params, req->unpacked.zone, &req->params, &err);
  if (rc < 0) {
    if (rc == -ENOMEM) pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
    reject(req, &err);
    request_free(req);
    return;
  }
  if (serve_on_loop(req)) {
    request_free(req);
    return;
  }
  admit(req);
}

static void on_close(srv_conn_t *conn, void *data) {
  (void)data;
  log_debug("Client %llu disconnected with %u requests in flight.", (unsigned long long)conn->id,
            conn->pending);
}

static void on_reject(srv_conn_t *conn, const pto_error_t *err, void *data) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  uint32_t msgid;
  int rc;
  ptod_count_error(data, err->code);
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  /* A message we can tie to a request is answered as its response. */
  if (proto_reader_msgid(&conn->reader, &msgid))
    rc = proto_pack_response_error(&pk, msgid, err);
  else
    rc = proto_pack_error_notification(&pk, err);
  if (rc == 0) {
    srv_conn_send_and_close(conn, sb.data, sb.size);
    sb.data = NULL;
  } else {
    srv_conn_close(conn);
  }
  msgpack_sbuffer_destroy(&sb);
}

/* Completions found together answer together: one write per connection. */
static void batch_begin(void *data) {
  ptod_t *d = data;
  if (d->srv) srv_cork(d->srv);
}

static void batch_end(void *data) {
  ptod_t *d = data;
  if (d->srv) srv_uncork(d->srv);
}

srv_handlers_t service_handlers(ptod_t *d) {
  srv_handlers_t h = {on_message, on_close, on_reject, d};
  /* The service is set up once the device thread exists (ptod.c):
   * coalesce the responses of each batch of completions from now on. */
  if (d->dsp) dsp_set_batch_hooks(d->dsp, batch_begin, batch_end, d);
  return h;
}
