/* Requests: the public request struct to proto's params, and one blocking
 * helper per method (send, then wait for that answer). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

const char *pto_method_name(pto_method_t method) {
  return proto_method_name((proto_method_t)method);
}

static int missing(pto_error_t *err, const char *method, const char *what) {
  return client_error(err, PTO_E_INVALID_ARGUMENT, "A '%s' request needs %s.", method, what);
}

/* Dispatch arguments in proto's form, in a malloc'ed array (*ret_args). */
static int convert_args(const pto_dispatch_req_t *d, proto_arg_t **ret_args, pto_error_t *err) {
  proto_arg_t *args;
  *ret_args = NULL;
  if (d->nargs == 0) return 0;
  if (!d->args) return missing(err, "dispatch", "its arguments (args is NULL, nargs is not 0)");
  args = calloc(d->nargs, sizeof(*args));
  if (!args) return client_error(err, PTO_E_NO_MEMORY, NULL);
  for (uint32_t i = 0; i < d->nargs; i++) {
    const pto_dispatch_arg_t *a = &d->args[i];
    proto_arg_t *p = &args[i];
    p->kind = a->kind;
    if (a->buffer && (a->kind == PTO_ARG_INPUT || a->kind == PTO_ARG_INOUT ||
                      a->kind == PTO_ARG_OUTPUT)) {
      /* pto_arg_shm: a range of a shared-memory region */
      p->shm = a->buffer;
      p->offset = a->offset;
      p->bytes = a->bytes;
      continue;
    }
    switch (a->kind) {
      case PTO_ARG_BUFFER:
        if (!a->buffer) goto bad;
        p->buffer = a->buffer;
        p->offset = a->offset;
        p->bytes = a->bytes;
        break;
      case PTO_ARG_INPUT:
      case PTO_ARG_INOUT:
        if (!a->data && a->len) goto bad;
        /* A present empty bin needs a non-NULL pointer. */
        p->data.ptr = a->data ? a->data : (const uint8_t *)"";
        p->data.len = a->len;
        break;
      case PTO_ARG_OUTPUT: p->bytes = a->bytes; break;
      case PTO_ARG_INT: p->i = a->i; break;
      case PTO_ARG_FLOAT: p->f = a->f; break;
      default: goto bad;
    }
    continue;
  bad:
    free(args);
    if (a->kind == PTO_ARG_SHM_INVALID_)
      return client_error(err, PTO_E_INVALID_ARGUMENT,
                          "Dispatch argument %u is invalid: pto_arg_shm() needs a region and the "
                          "kind PTO_ARG_INPUT, PTO_ARG_OUTPUT or PTO_ARG_INOUT.",
                          i);
    return client_error(err, PTO_E_INVALID_ARGUMENT, "Dispatch argument %u is invalid: kind %d %s.",
                        i, (int)a->kind,
                        (unsigned)a->kind > PTO_ARG_FLOAT ? "is not a pto_arg_kind_t"
                                                          : "needs its name or data pointer");
  }
  *ret_args = args;
  return 0;
}

int client_encode_request(msgpack_sbuffer *sb, uint32_t msgid, const pto_request_t *req,
                          pto_error_t *err) {
  proto_params_t p;
  proto_arg_t *args = NULL;
  const proto_params_t *pp = &p;
  int rc;

  memset(&p, 0, sizeof(p));
  switch (req->method) {
    case PTO_METHOD_PING:
    case PTO_METHOD_STATUS:
    case PTO_METHOD_METRICS:
    case PTO_METHOD_PROGRAMS:
    case PTO_METHOD_BUFFER_LIST:
    case PTO_METHOD_SHM_LIST:
    case PTO_METHOD_ADVISE: pp = NULL; break;
    case PTO_METHOD_SHM_REGISTER:
    case PTO_METHOD_SHM_UNREGISTER:
      return client_error(err, PTO_E_INVALID_ARGUMENT,
                          "'%s' cannot be sent with pto_client_send: a region is registered with "
                          "pto_shm_create() (its fd travels with the request) and unregistered "
                          "with pto_shm_free().",
                          pto_method_name(req->method));
    case PTO_METHOD_DISPATCH: {
      const pto_dispatch_req_t *d = &req->u.dispatch;
      if (!d->program) return missing(err, "dispatch", "a program name");
      rc = convert_args(d, &args, err);
      if (rc < 0) return rc;
      p.dispatch.program = d->program;
      p.dispatch.args = args;
      p.dispatch.nargs = d->nargs;
      client_config_to_proto(d->config, &p.dispatch.config);
      p.dispatch.deadline_ms = d->deadline_ms > 0 ? d->deadline_ms : PROTO_UNSET;
      break;
    }
    case PTO_METHOD_BUFFER_ALLOC:
      if (!req->u.buffer_alloc.name) return missing(err, "buffer.alloc", "a buffer name");
      p.buffer_alloc.name = req->u.buffer_alloc.name;
      p.buffer_alloc.bytes = req->u.buffer_alloc.bytes;
      if (req->u.buffer_alloc.init) {
        p.buffer_alloc.init.ptr = req->u.buffer_alloc.init;
        p.buffer_alloc.init.len = (size_t)req->u.buffer_alloc.bytes;
      }
      break;
    case PTO_METHOD_BUFFER_WRITE:
      if (!req->u.buffer_write.name) return missing(err, "buffer.write", "a buffer name");
      if (!req->u.buffer_write.data && req->u.buffer_write.len)
        return missing(err, "buffer.write", "its data (data is NULL, len is not 0)");
      p.buffer_write.name = req->u.buffer_write.name;
      p.buffer_write.offset = req->u.buffer_write.offset;
      p.buffer_write.data.ptr =
          req->u.buffer_write.data ? req->u.buffer_write.data : (const uint8_t *)"";
      p.buffer_write.data.len = req->u.buffer_write.len;
      break;
    case PTO_METHOD_BUFFER_READ:
      if (!req->u.buffer_read.name) return missing(err, "buffer.read", "a buffer name");
      p.buffer_read.name = req->u.buffer_read.name;
      p.buffer_read.offset = req->u.buffer_read.offset;
      p.buffer_read.bytes = req->u.buffer_read.bytes;
      break;
    case PTO_METHOD_BUFFER_FREE:
      if (!req->u.buffer_free.name) return missing(err, "buffer.free", "a buffer name");
      p.buffer_free.name = req->u.buffer_free.name;
      break;
    case PTO_METHOD_PREWARM:
      client_config_to_proto(req->u.prewarm.config, &p.prewarm.config);
      break;
    default:
      return client_error(err, PTO_E_INVALID_ARGUMENT, "There is no method number %d.",
                          (int)req->method);
  }
  rc = proto_encode_request(sb, msgid, (proto_method_t)req->method, pp);
  free(args);
  if (rc < 0)
    return client_error(err, PTO_E_NO_MEMORY, "Out of memory encoding a '%s' request.",
                        pto_method_name(req->method));
  return 0;
}

/* Send req and wait for its answer, within timeout_ms for both. */
static int call(pto_client_t *c, const pto_request_t *req, int timeout_ms, void **ret_result,
                pto_error_t *err) {
  int64_t deadline = client_deadline(timeout_ms);
  uint32_t msgid = 0;
  void *result = NULL;
  int rc = client_send_until(c, req, deadline, &msgid, err);
  if (rc < 0) return rc;
  rc = client_wait_until(c, msgid, deadline, &result, err);
  if (rc == -PTO_E_TIMEOUT) pto_client_discard(c, msgid);
  if (rc == 0) {
    if (ret_result)
      *ret_result = result;
    else
      pto_result_free(result);
  }
  return rc;
}

#define SIMPLE_CALL(fn, METHOD, type)                                         \
  int fn(pto_client_t *c, int timeout_ms, type **ret, pto_error_t *ret_err) { \
    pto_request_t req = {.method = METHOD};                                   \
    void *r = NULL;                                                           \
    int rc = call(c, &req, timeout_ms, &r, ret_err);                          \
    if (rc == 0) {                                                            \
      if (ret)                                                                \
        *ret = r;                                                             \
      else                                                                    \
        pto_result_free(r);                                                   \
    }                                                                         \
    return rc;                                                                \
  }

SIMPLE_CALL(pto_client_ping, PTO_METHOD_PING, pto_ping_t)
SIMPLE_CALL(pto_client_status, PTO_METHOD_STATUS, pto_status_t)
SIMPLE_CALL(pto_client_metrics, PTO_METHOD_METRICS, pto_text_t)
SIMPLE_CALL(pto_client_programs, PTO_METHOD_PROGRAMS, pto_programs_t)
SIMPLE_CALL(pto_client_buffer_list, PTO_METHOD_BUFFER_LIST, pto_buffer_list_t)
SIMPLE_CALL(pto_client_advise, PTO_METHOD_ADVISE, pto_advise_t)
SIMPLE_CALL(pto_client_shm_list, PTO_METHOD_SHM_LIST, pto_buffer_list_t)

int pto_client_dispatch(pto_client_t *c, const pto_dispatch_req_t *d, int timeout_ms,
                        pto_dispatch_result_t **ret_result, pto_error_t *ret_err) {
  pto_request_t req = {.method = PTO_METHOD_DISPATCH};
  void *r = NULL;
  int rc;
  if (!d) return missing(ret_err, "dispatch", "a pto_dispatch_req_t");
  req.u.dispatch = *d;
  rc = call(c, &req, timeout_ms, &r, ret_err);
  if (rc == 0 && ret_result)
    *ret_result = r;
  else if (rc == 0)
    pto_result_free(r);
  return rc;
}

int pto_client_buffer_alloc(pto_client_t *c, const char *name, uint64_t bytes, const void *init,
                            int timeout_ms, pto_buffer_info_t **ret_info, pto_error_t *ret_err) {
  pto_request_t req = {.method = PTO_METHOD_BUFFER_ALLOC};
  void *r = NULL;
  int rc;
  req.u.buffer_alloc.name = name;
  req.u.buffer_alloc.bytes = bytes;
  req.u.buffer_alloc.init = init;
  rc = call(c, &req, timeout_ms, &r, ret_err);
  if (rc == 0 && ret_info)
    *ret_info = r;
  else if (rc == 0)
    pto_result_free(r);
  return rc;
}

/* buffer.write and buffer.free answer a byte count: return it, not a result. */
static int call_count(pto_client_t *c, const pto_request_t *req, int timeout_ms,
                      uint64_t *ret_bytes, pto_error_t *err) {
  void *r = NULL;
  int rc = call(c, req, timeout_ms, &r, err);
  if (rc == 0) {
    if (ret_bytes) *ret_bytes = ((const pto_byte_count_t *)r)->bytes;
    pto_result_free(r);
  }
  return rc;
}

int pto_client_buffer_write(pto_client_t *c, const char *name, uint64_t offset, const void *data,
                            size_t len, int timeout_ms, uint64_t *ret_bytes, pto_error_t *ret_err) {
  pto_request_t req = {.method = PTO_METHOD_BUFFER_WRITE};
  req.u.buffer_write.name = name;
  req.u.buffer_write.offset = offset;
  req.u.buffer_write.data = data;
  req.u.buffer_write.len = len;
  return call_count(c, &req, timeout_ms, ret_bytes, ret_err);
}

int pto_client_buffer_read(pto_client_t *c, const char *name, uint64_t offset, uint64_t bytes,
                           int timeout_ms, pto_bytes_t **ret_data, pto_error_t *ret_err) {
  pto_request_t req = {.method = PTO_METHOD_BUFFER_READ};
  void *r = NULL;
  int rc;
  req.u.buffer_read.name = name;
  req.u.buffer_read.offset = offset;
  req.u.buffer_read.bytes = bytes;
  rc = call(c, &req, timeout_ms, &r, ret_err);
  if (rc == 0 && ret_data)
    *ret_data = r;
  else if (rc == 0)
    pto_result_free(r);
  return rc;
}

int pto_client_buffer_free(pto_client_t *c, const char *name, int timeout_ms, uint64_t *ret_bytes,
                           pto_error_t *ret_err) {
  pto_request_t req = {.method = PTO_METHOD_BUFFER_FREE};
  req.u.buffer_free.name = name;
  return call_count(c, &req, timeout_ms, ret_bytes, ret_err);
}

int pto_client_prewarm(pto_client_t *c, const pto_config_t *config, int timeout_ms,
                       pto_arena_info_t **ret_arena, pto_error_t *ret_err) {
  pto_request_t req = {.method = PTO_METHOD_PREWARM};
  void *r = NULL;
  int rc;
  req.u.prewarm.config = config;
  rc = call(c, &req, timeout_ms, &r, ret_err);
  if (rc == 0 && ret_arena)
    *ret_arena = r;
  else if (rc == 0)
    pto_result_free(r);
  return rc;
}
