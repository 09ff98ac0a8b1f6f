/* One answer from the daemon: decode it and hand out the public result.
 *
 * A result is one allocation, a reply_t, of which the caller sees only the
 * member `r`: the message bytes and the msgpack zone that the result's
 * strings, arrays and bins point into live in the same reply_t, so one
 * pto_result_free() releases all of it and nothing is copied twice.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

typedef union public_result {
  pto_ping_t ping;
  pto_status_t status;
  pto_text_t text;
  pto_programs_t programs;
  pto_dispatch_result_t dispatch;
  pto_buffer_info_t buffer_info;
  pto_byte_count_t byte_count;
  pto_bytes_t bytes;
  pto_buffer_list_t buffer_list;
  pto_arena_info_t arena;
  pto_advise_t advise;
} public_result_t;

typedef struct reply {
  msgpack_unpacked up;
  uint8_t *bytes; /* the whole message */
  size_t len;
  size_t result_off; /* where the result object starts in bytes */
  public_result_t r;
} reply_t;

static reply_t *reply_of(const void *result) {
  return (reply_t *)(void *)((char *)(uintptr_t)result - offsetof(reply_t, r));
}

static void reply_destroy(reply_t *rp) {
  if (!rp) return;
  msgpack_unpacked_destroy(&rp->up);
  free(rp->bytes);
  free(rp);
}

void pto_result_free(const void *result) {
  if (result) reply_destroy(reply_of(result));
}

void pto_result_msgpack(const void *result, const void **ret_data, size_t *ret_len) {
  const reply_t *rp = reply_of(result);
  *ret_data = rp->bytes + rp->result_off;
  *ret_len = rp->len - rp->result_off;
}

/* Bytes of the msgpack integer starting at p (any width an encoder may
 * choose), 0 if p is not an integer. */
static size_t int_size(const uint8_t *p, size_t left) {
  size_t n = 0;
  if (left == 0) return 0;
  if (p[0] <= 0x7f || p[0] >= 0xe0)
    n = 1;
  else if (p[0] == 0xcc || p[0] == 0xd0)
    n = 2;
  else if (p[0] == 0xcd || p[0] == 0xd1)
    n = 3;
  else if (p[0] == 0xce || p[0] == 0xd2)
    n = 5;
  else if (p[0] == 0xcf || p[0] == 0xd3)
    n = 9;
  return n <= left ? n : 0;
}

/* A successful response is [1, msgid, nil, result]: the result is what
 * follows the nil.  Returns 0 when the header is not that shape. */
static size_t result_offset(const uint8_t *b, size_t len) {
  size_t off, n;
  if (len > 0 && b[0] == 0x94)
    off = 1;
  else if (len > 2 && b[0] == 0xdc)
    off = 3;
  else if (len > 4 && b[0] == 0xdd)
    off = 5;
  else
    return 0;
  for (int i = 0; i < 2; i++) { /* type, msgid */
    n = int_size(b + off, len - off);
    if (!n) return 0;
    off += n;
  }
  if (off >= len || b[off] != 0xc0) return 0;
  return off + 1 < len ? off + 1 : 0;
}

/* --- proto -> public ---------------------------------------------------------- */

static void arena_from(pto_arena_info_t *a, const proto_arena_t *p) {
  a->sizing = p->sizing;
  a->key = p->key;
  a->bytes = p->bytes;
  a->build_us = p->build_us;
  a->builds = p->builds;
  a->hits = p->hits;
  a->misses = p->misses;
  a->prewarm.sizing = p->prewarm.sizing;
  a->prewarm.key = p->prewarm.key;
  a->prewarm.first_dispatch_hit =
      p->prewarm.first_dispatch_hit == PROTO_UNSET ? -1 : p->prewarm.first_dispatch_hit;
}

static int from_proto(pto_client_t *c, proto_method_t m, const proto_result_t *p,
                      msgpack_zone *zone, public_result_t *r) {
  switch (m) {
    case PROTO_M_PING:
      r->ping.version = p->ping.version;
      r->ping.device = p->ping.device;
      r->ping.state = p->ping.state;
      r->ping.features = p->ping.features;
      r->ping.nfeatures = p->ping.nfeatures;
      client_learn_device(c, p->ping.device);
      return 0;
    case PROTO_M_STATUS: {
      const proto_status_result_t *s = &p->status;
      pto_status_t *o = &r->status;
      o->device = s->device;
      o->platform = s->platform;
      o->version = s->version;
      o->uptime_s = s->uptime_s;
      o->state = s->state;
      o->queue.depth = s->queue.depth;
      o->queue.capacity = s->queue.capacity;
      o->queue.running = s->queue.running;
      arena_from(&o->arena, &s->arena);
      o->memory.limit = s->memory.limit;
      o->memory.arena = s->memory.arena;
      o->memory.buffers = s->memory.buffers;
      o->memory.free = s->memory.free;
      o->dispatches.ok = s->dispatches.ok;
      o->dispatches.failed = s->dispatches.failed;
      o->dispatches.rejected = s->dispatches.rejected;
      o->clients = s->clients;
      client_learn_device(c, s->device);
      return 0;
    }
    case PROTO_M_METRICS:
      r->text.text = p->metrics.text;
      r->text.len = p->metrics.len;
      return 0;
    case PROTO_M_PROGRAMS: {
      pto_program_info_t *list = NULL;
      uint32_t n = p->programs.count;
      if (n) {
        list = msgpack_zone_malloc(zone, n * sizeof(*list));
        if (!list) return -ENOMEM;
      }
      for (uint32_t i = 0; i < n; i++) {
        list[i].name = p->programs.programs[i].name;
        list[i].description = p->programs.programs[i].description;
        list[i].args = p->programs.programs[i].args;
        list[i].nargs = p->programs.programs[i].nargs;
      }
      r->programs.programs = list;
      r->programs.count = n;
      return 0;
    }
    case PROTO_M_DISPATCH: {
      const proto_dispatch_result_t *d = &p->dispatch;
      pto_dispatch_result_t *o = &r->dispatch;
      pto_bytes_t *outs = NULL;
      if (d->noutputs) {
        outs = msgpack_zone_malloc(zone, d->noutputs * sizeof(*outs));
        if (!outs) return -ENOMEM;
      }
      for (uint32_t i = 0; i < d->noutputs; i++) {
        outs[i].ptr = d->outputs[i].ptr;
        outs[i].len = d->outputs[i].len;
      }
      o->outputs = outs;
      o->noutputs = d->noutputs;
      o->arena.hit = d->arena.hit;
      o->arena.build_us = d->arena.build_us;
      o->arena.key = d->arena.key;
      o->sizing = d->sizing;
      o->peaks = d->peaks;
      o->timing_us.queue = d->timing_us.queue;
      o->timing_us.arena = d->timing_us.arena;
      o->timing_us.run = d->timing_us.run;
      o->timing_us.total = d->timing_us.total;
      o->tasks = d->tasks;
      o->dfx.swimlane = (pto_bytes_t){d->dfx.swimlane.ptr, d->dfx.swimlane.len};
      o->dfx.scope_stats = (pto_bytes_t){d->dfx.scope_stats.ptr, d->dfx.scope_stats.len};
      o->dfx.dep_graph = (pto_bytes_t){d->dfx.dep_graph.ptr, d->dfx.dep_graph.len};
      o->dfx.refused = d->dfx.refused;
      return 0;
    }
    case PROTO_M_BUFFER_ALLOC:
    case PROTO_M_SHM_REGISTER: /* the same shape: {name, bytes} */
      r->buffer_info.name = p->buffer_alloc.name;
      r->buffer_info.bytes = p->buffer_alloc.bytes;
      return 0;
    case PROTO_M_BUFFER_WRITE: r->byte_count.bytes = p->buffer_write.bytes; return 0;
    case PROTO_M_BUFFER_FREE: r->byte_count.bytes = p->buffer_free.bytes; return 0;
    case PROTO_M_SHM_UNREGISTER: r->byte_count.bytes = p->shm_unregister.bytes; return 0;
    case PROTO_M_BUFFER_READ:
      r->bytes.ptr = p->buffer_read.ptr;
      r->bytes.len = p->buffer_read.len;
      return 0;
    case PROTO_M_BUFFER_LIST:
    case PROTO_M_SHM_LIST: { /* the same shape: [{name, bytes}] */
      pto_buffer_info_t *list = NULL;
      uint32_t n = p->buffer_list.count;
      if (n) {
        list = msgpack_zone_malloc(zone, n * sizeof(*list));
        if (!list) return -ENOMEM;
      }
      for (uint32_t i = 0; i < n; i++) {
        list[i].name = p->buffer_list.buffers[i].name;
        list[i].bytes = p->buffer_list.buffers[i].bytes;
      }
      r->buffer_list.buffers = list;
      r->buffer_list.count = n;
      return 0;
    }
    case PROTO_M_PREWARM: arena_from(&r->arena, &p->prewarm); return 0;
    case PROTO_M_ADVISE: {
      pto_advise_program_t *progs = NULL;
      uint32_t n = p->advise.nprograms;
      if (n && !(progs = msgpack_zone_malloc(zone, n * sizeof(*progs)))) return -ENOMEM;
      for (uint32_t i = 0; i < n; i++)
        progs[i] = (pto_advise_program_t){p->advise.programs[i].program,
                                          p->advise.programs[i].dispatches,
                                          p->advise.programs[i].observed,
                                          p->advise.programs[i].recommended};
      r->advise.observed = p->advise.observed;
      r->advise.recommended = p->advise.recommended;
      r->advise.config = p->advise.config;
      r->advise.programs = progs;
      r->advise.nprograms = n;
      r->advise.sizings = p->advise.sizings;
      r->advise.nsizings = p->advise.nsizings;
      r->advise.warnings = p->advise.warnings;
      r->advise.nwarnings = p->advise.nwarnings;
      return 0;
    }
    case PROTO_M_COUNT: break;
  }
  return -EINVAL;
}

bool pto_ping_has_feature(const pto_ping_t *ping, const char *feature) {
  if (!ping || !feature) return false;
  for (uint32_t i = 0; i < ping->nfeatures; i++)
    if (ping->features[i] && strcmp(ping->features[i], feature) == 0) return true;
  return false;
}

/* A failed dispatch's dfx map into rp->r.dispatch.dfx; whether it had one. */
static bool error_dfx(reply_t *rp, const msgpack_object *error) {
  proto_dfx_t dfx;
  pto_error_t perr;
  pto_dfx_t *o = &rp->r.dispatch.dfx;
  if (proto_dfx_decode_error(error, rp->up.zone, &dfx, &perr) < 0 || !proto_dfx_present(&dfx))
    return false;
  o->swimlane = (pto_bytes_t){dfx.swimlane.ptr, dfx.swimlane.len};
  o->scope_stats = (pto_bytes_t){dfx.scope_stats.ptr, dfx.scope_stats.len};
  o->dep_graph = (pto_bytes_t){dfx.dep_graph.ptr, dfx.dep_graph.len};
  o->refused = dfx.refused;
  return true;
}

static int decode_result(pto_client_t *c, reply_t *rp, proto_method_t m,
                         const proto_envelope_t *env, reply_outcome_t *ret) {
  proto_result_t pres;
  pto_error_t perr;
  int rc;
  pto_error_clear(&perr);
  rc = proto_result_decode(m, env->result, rp->up.zone, &pres, &perr);
  if (rc == 0) rc = from_proto(c, m, &pres, rp->up.zone, &rp->r);
  if (rc == -ENOMEM) return -PTO_E_NO_MEMORY;
  if (rc < 0) {
    ret->kind = REPLY_ERROR;
    client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                 "The daemon's answer to '%s' could not be decoded: %s Is the daemon a newer "
                 "protocol version than this client?",
                 proto_method_name(m), perr.message);
    return 0;
  }
  rp->result_off = result_offset(rp->bytes, rp->len);
  if (rp->result_off == 0) {
    ret->kind = REPLY_ERROR;
    client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                 "The daemon's answer to '%s' is not shaped [1, msgid, nil, result].",
                 proto_method_name(m));
    return 0;
  }
  ret->kind = REPLY_RESULT;
  ret->result = &rp->r; /* every member of the union is at its start */
  return 0;
}

int client_reply_decode(pto_client_t *c, uint8_t *bytes, size_t len,
                        int (*method_of)(pto_client_t *c, uint32_t msgid), reply_outcome_t *ret) {
  reply_t *rp = calloc(1, sizeof(*rp));
  proto_envelope_t env;
  pto_error_t perr;
  int rc, m;

  memset(ret, 0, sizeof(*ret));
  pto_error_clear(&ret->err);
  pto_error_clear(&perr);
  if (!rp) {
    free(bytes);
    return -PTO_E_NO_MEMORY;
  }
  rp->bytes = bytes;
  rp->len = len;
  msgpack_unpacked_init(&rp->up);
  rc = proto_decode(bytes, len, &rp->up, &env, &perr);
  if (rc == -ENOMEM) {
    reply_destroy(rp);
    return -PTO_E_NO_MEMORY;
  }
  if (rc < 0) {
    if (env.has_msgid && env.type == PROTO_MSG_RESPONSE) {
      ret->kind = REPLY_ERROR;
      ret->msgid = env.msgid;
    } else {
      ret->kind = REPLY_FATAL;
    }
    client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                 "The daemon sent a message that is not valid msgpack-RPC: %s", perr.message);
    reply_destroy(rp);
    return 0;
  }

  switch (env.type) {
    case PROTO_MSG_NOTIFICATION:
      if (proto_envelope_method_is(&env, "error")) {
        ret->kind = REPLY_FATAL;
        if (!env.params || proto_error_decode(env.params, &ret->err) < 0)
          client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                       "The daemon sent an error notification without a valid error map; it "
                       "closes the connection after one.");
      }
      break;
    case PROTO_MSG_REQUEST: break;
    case PROTO_MSG_RESPONSE:
      ret->msgid = env.msgid;
      m = method_of(c, env.msgid);
      if (m < 0) break;
      if (env.error) {
        ret->kind = REPLY_ERROR;
        if (proto_error_decode(env.error, &ret->err) < 0) {
          char why[sizeof(ret->err.message)];
          memcpy(why, ret->err.message, sizeof(why));
          client_error(&ret->err, PTO_E_PROTOCOL_ERROR, "The daemon's answer to '%s': %s",
                       proto_method_name((proto_method_t)m), why);
        } else if (m == PROTO_M_DISPATCH && error_dfx(rp, env.error)) {
          ret->result = &rp->r; /* the artefacts, for pto_client_error_dfx */
          return 0;
        }
        break;
      }
      rc = decode_result(c, rp, (proto_method_t)m, &env, ret);
      if (rc < 0) {
        reply_destroy(rp);
        return rc;
      }
      if (ret->kind == REPLY_RESULT) return 0; /* rp now belongs to the result */
      break;
  }
  reply_destroy(rp);
  return 0;
}
