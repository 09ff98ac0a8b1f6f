/* SPDX-License-Identifier: Apache-2.0 */
#include "service.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/version.h>

#include "log.h"
#include "metrics_feed.h"
#include "prewarm.h"

/* ---- methods served on the loop ----------------------------------------- */

/* What ping says the daemon speaks beyond protocol version 1 (docs/protocol.md,
 * ping): DFX artefacts in dispatch results, protocol 1.2's cancel
 * notification, priorities and request ids, and shared-memory arguments.
 * "shm" stays last: serve_ping leaves it out when shm_limit = 0 turns the
 * shm path off. */
static const char *const ptod_features[] = {"dfx", "cancel", "priority", "request_id", "shm"};

/* status: ptod_snapshot's facts (those the exposition shows too), in the
 * result's shape, and the prewarmed arena. */
static void serve_status(ptod_t *d, proto_status_result_t *s) {
  metrics_snapshot_t m;
  ptod_snapshot(d, &m);
  s->device = m.device;
  s->platform = m.platform;
  s->version = m.version;
  s->uptime_s = m.uptime_s;
  s->state = ptod_state_name((ptod_state_t)m.state);
  s->queue.depth = m.queue_depth;
  s->queue.capacity = m.queue_capacity;
  s->queue.running = m.queue_running;
  for (int p = 0; p < 16; p++) s->queue.by_priority[p] = m.queue_by_priority[p];
  s->queue.cancelled = m.totals.cancelled;
  prewarm_arena_snapshot(&d->device.prewarm, d->device.rt, &s->arena);
  s->memory.limit = m.memory_limit;
  s->memory.arena = m.memory_arena;
  s->memory.buffers = m.memory_buffers;
  s->memory.free = m.memory_free;
  s->dispatches.ok = m.totals.dispatches_ok;
  s->dispatches.failed = m.totals.dispatches_failed;
  s->dispatches.rejected = m.totals.dispatches_rejected;
  s->clients = m.clients;
  s->client_memory.input = m.client_input;
  s->client_memory.output = m.client_output;
  s->client_memory.limit = m.client_limit;
  s->client_memory.per_connection.input_limit = m.conn_input_limit;
  s->client_memory.per_connection.output_limit = m.conn_output_limit;
  s->client_memory.per_connection.most_input = m.conn_most_input;
  s->client_memory.per_connection.most_output = m.conn_most_output;
  s->shm.regions = m.shm_regions;
  s->shm.bytes = m.shm_bytes;
  s->shm.regions_limit = m.shm_regions_limit;
  s->shm.bytes_limit = m.shm_bytes_limit;
  s->fds.parked = m.fds_parked;
  s->fds.most_parked = m.fds_most_parked;
  s->fds.closing = m.fds_closing;
  s->fds.limit = m.fds_limit;
}

typedef struct program_list {
  proto_program_info_t *items;
  uint32_t count, cap;
} program_list_t;

static void collect_program(void *data, const char *name, const pto_program_t *prog,
                            const pto_error_t *err) {
  program_list_t *list = data;
  if (!prog) {
    log_client(LOG_WARNING, "Program '%s' cannot be loaded: %s, ignoring it.", name,
               err->message);
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

void service_scratch_free(service_scratch_t *scratch) {
  free(scratch->text);
  free(scratch->programs);
  free(scratch->infos);
  free(scratch->bufs);
  if (scratch->advice) advise_result_free(scratch->advice);
  free(scratch->advice);
  memset(scratch, 0, sizeof(*scratch));
}

int service_out_of_memory(pto_error_t *err) {
  return pto_error_set(err, PTO_E_INTERNAL, "The daemon is out of memory.");
}

int service_ping(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                 pto_error_t *err) {
  const ptod_t *d = req->d;
  (void)scratch;
  (void)err;
  result->ping.version = PTO_VERSION;
  result->ping.device = d->loop.cfg.device.id;
  result->ping.state = ptod_state_name((ptod_state_t)atomic_load(&d->state));
  /* "shm" last (ptod_features). */
  result->ping.features = ptod_features;
  result->ping.nfeatures = sizeof(ptod_features) / sizeof(ptod_features[0]) -
                           (d->loop.cfg.daemon.shm_limit == 0 ? 1 : 0);
  return 0;
}

int service_status(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                   pto_error_t *err) {
  (void)scratch;
  (void)err;
  serve_status(req->d, &result->status);
  return 0;
}

int service_metrics(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                    pto_error_t *err) {
  size_t n = 0;
  scratch->text = metrics_feed_text(req->d, &n);
  if (!scratch->text) return service_out_of_memory(err);
  result->metrics.text = scratch->text;
  result->metrics.len = n;
  return 0;
}

int service_programs(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                     pto_error_t *err) {
  const ptod_t *d = req->d;
  program_list_t programs = {0};
  int rc = rt_programs_foreach(d->device.rt, collect_program, &programs);
  scratch->programs = programs.items;
  if (rc < 0)
    return pto_error_set(err, PTO_E_INTERNAL,
                         "The programs directory '%s' cannot be read: %s; ask the operator to "
                         "set [device] programs to the directory that holds the NAME.so "
                         "programs.",
                         d->loop.cfg.device.programs, strerror(-rc));
  result->programs.programs = programs.items;
  result->programs.count = programs.count;
  return 0;
}

int service_buffer_list(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                        pto_error_t *err) {
  size_t n = 0;
  if (buf_list(req->d->device.buffers, &scratch->infos, &n) < 0) return service_out_of_memory(err);
  scratch->bufs = calloc(n ? n : 1, sizeof(*scratch->bufs));
  if (!scratch->bufs) return service_out_of_memory(err);
  for (size_t i = 0; i < n; i++) {
    scratch->bufs[i].name = scratch->infos[i].name;
    scratch->bufs[i].bytes = scratch->infos[i].bytes;
  }
  result->buffer_list.buffers = scratch->bufs;
  result->buffer_list.count = (uint32_t)n;
  return 0;
}

int service_advise(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                   pto_error_t *err) {
  scratch->advice = malloc(sizeof(*scratch->advice));
  if (!scratch->advice ||
      advise_result(req->d->device.advise, &result->advise, scratch->advice) < 0)
    return service_out_of_memory(err);
  return 0;
}

/* ---- admission ---------------------------------------------------------- */

/* A dispatch's arguments, as far as the loop can tell: its program (found
 * by the snapshot) takes that many arguments (so a message of two million
 * arguments never reaches the queue), and the bytes it returns fit one
 * connection's output_limit. */
int service_admit_dispatch(const req_t *req, pto_error_t *err) {
  const proto_dispatch_params_t *p = &req->params.dispatch;
  const pto_program_t *prog = req->snap.program;
  uint64_t returned = 0, limit = req->snap.output_limit;
  int rc;
  if (p->nargs > prog->nargs) {
    rc = pto_error_set(err, PTO_E_INVALID_ARGS,
                       "%s: takes at most %u arguments; got %u. `ptoctl programs` lists them.",
                       prog->name, prog->nargs, p->nargs);
    snprintf(err->key, sizeof(err->key), "args");
    return rc;
  }
  for (uint32_t i = 0; i < p->nargs; i++) {
    if (p->args[i].shm) continue; /* returned into its region, not in the answer */
    if (p->args[i].kind == PTO_ARG_OUTPUT) returned += p->args[i].bytes;
    if (p->args[i].kind == PTO_ARG_INOUT) returned += p->args[i].data.len;
  }
  if (returned > limit) {
    rc = pto_error_set(err, PTO_E_INVALID_REQUEST,
                       "The dispatch returns %llu bytes of outputs, more than one connection may "
                       "hold unread (output_limit = %llu); write them to a resident buffer and "
                       "read it in parts, or ask the operator to raise output_limit.",
                       (unsigned long long)returned, (unsigned long long)limit);
    err->requested = returned;
    err->capacity = limit;
    snprintf(err->key, sizeof(err->key), "args");
    return rc;
  }
  return 0;
}

int service_check_read(const char *name, uint64_t bytes, uint64_t output_limit,
                       pto_error_t *err) {
  int rc;
  if (bytes <= output_limit) return 0;
  rc = pto_error_set(err, PTO_E_INVALID_REQUEST,
                     "Reading %llu bytes of buffer '%s' at once returns more than one connection "
                     "may hold unread (output_limit = %llu); read it in parts of at most that "
                     "many bytes with offset and bytes, or into a shared-memory region (shm).",
                     (unsigned long long)bytes, name, (unsigned long long)output_limit);
  err->requested = bytes;
  err->capacity = output_limit;
  snprintf(err->key, sizeof(err->key), "bytes");
  return rc;
}

/* buffer.read into the answer: its size is known before it is queued (the
 * bytes asked for, or the buffer's size from offset on). */
int service_admit_read(const req_t *req, pto_error_t *err) {
  const proto_buffer_read_params_t *p = &req->params.buffer_read;
  if (p->shm) return 0; /* into the client's region, not the answer */
  return service_check_read(p->name,
                            buf_read_size(req->d->device.buffers, p->name, p->offset, p->bytes),
                            req->snap.output_limit, err);
}
