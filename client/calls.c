/* SPDX-License-Identifier: Apache-2.0 */
/* Requests: the public request struct to proto's params, and one blocking
 * helper per method (send, then wait for that answer). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "schema.h"

const char *pto_method_name(pto_method_t method) {
  return proto_method_name((proto_method_t)method);
}

static int missing(pto_error_t *err, const char *method, const char *what) {
  return client_error(err, PTO_E_INVALID_ARGUMENT, "A '%s' request needs %s.", method, what);
}

/* Dispatch arguments in proto's form (*ret_args): in rp->few when they
 * fit (no allocation per request), else in a malloc'ed array. */
static int convert_args(const pto_dispatch_arg_t *in, uint32_t nargs, client_request_params_t *rp,
                        proto_arg_t **ret_args, pto_error_t *err) {
  proto_arg_t *args;
  *ret_args = NULL;
  if (nargs == 0) return 0;
  args = nargs <= CLIENT_FEW_ARGS ? rp->few : calloc(nargs, sizeof(*args));
  if (!args) return client_error(err, PTO_E_NO_MEMORY, NULL);
  if (args == rp->few) memset(args, 0, nargs * sizeof(*args));
  for (uint32_t i = 0; i < nargs; i++) {
    const pto_dispatch_arg_t *a = &in[i];
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
    if (args != rp->few) free(args);
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

/* --- the request table ----------------------------------------------------- */

/* How each method's member of pto_request_t becomes proto's params: one row
 * per public field, saying where it comes from and where it goes.  The wire
 * form is then proto's own (its rows in methods.c); these rows carry only
 * what the C API's shape adds: NULL checks, data + len, a config handle. */
typedef enum req_kind {
  RQ_NAME,     /* const char *, required: `what` says what a NULL leaves missing */
  RQ_U64,      /* uint64_t, as it is */
  RQ_BIN,      /* const void * + its length at from_len; NULL: no key when `what` is
                  NULL, else an empty bin, refused with a length */
  RQ_CONFIG,   /* const pto_config_t * -> proto_config_t (NULL: none) */
  RQ_ARGS,     /* dispatch arguments: pointer + uint32_t count at from_len (to, to_len) */
  RQ_DEADLINE, /* int64_t ms: > 0 is sent, anything else means none */
} req_kind_t;

typedef struct req_row {
  req_kind_t kind;
  size_t from, to; /* offsetof(pto_request_t, ...), offsetof(proto_params_t, ...) */
  size_t from_len, to_len, len_size;
  const char *what;
} req_row_t;

#define FROM(m, f) offsetof(pto_request_t, u.m.f)
#define RQ(kind_, m, f) {.kind = kind_, .from = FROM(m, f), .to = offsetof(proto_params_t, m.f)}
#define RQX(kind_, m, f, ...) \
  {.kind = kind_, .from = FROM(m, f), .to = offsetof(proto_params_t, m.f), __VA_ARGS__}
#define LEN(m, f) .from_len = FROM(m, f), .len_size = sizeof(((pto_request_t *)0)->u.m.f)

static const req_row_t dispatch_rows[] = {
    RQX(RQ_NAME, dispatch, program, .what = "a program name"),
    RQX(RQ_ARGS, dispatch, args, LEN(dispatch, nargs),
       .to_len = offsetof(proto_params_t, dispatch.nargs),
       .what = "its arguments (args is NULL, nargs is not 0)"),
    RQ(RQ_CONFIG, dispatch, config),
    RQ(RQ_DEADLINE, dispatch, deadline_ms),
};
static const req_row_t alloc_rows[] = {
    RQX(RQ_NAME, buffer_alloc, name, .what = "a buffer name"),
    RQ(RQ_U64, buffer_alloc, bytes),
    RQX(RQ_BIN, buffer_alloc, init, LEN(buffer_alloc, bytes)), /* exactly `bytes` long */
};
static const req_row_t write_rows[] = {
    RQX(RQ_NAME, buffer_write, name, .what = "a buffer name"),
    RQ(RQ_U64, buffer_write, offset),
    RQX(RQ_BIN, buffer_write, data, LEN(buffer_write, len),
       .what = "its data (data is NULL, len is not 0)"),
};
static const req_row_t read_rows[] = {
    RQX(RQ_NAME, buffer_read, name, .what = "a buffer name"),
    RQ(RQ_U64, buffer_read, offset),
    RQ(RQ_U64, buffer_read, bytes),
};
static const req_row_t free_rows[] = {RQX(RQ_NAME, buffer_free, name, .what = "a buffer name")};
static const req_row_t prewarm_rows[] = {RQ(RQ_CONFIG, prewarm, config)};

/* Per method: its rows (none: it takes no params), or not sendable here. */
typedef struct req_def {
  const req_row_t *rows;
  size_t nrows;
  bool not_sendable; /* shm.register / shm.unregister: a region's, with its fd */
} req_def_t;

#define ROWS(r) {r, sizeof(r) / sizeof(r[0]), false}
static const req_def_t requests[PROTO_M_COUNT] = {
    [PTO_METHOD_DISPATCH] = ROWS(dispatch_rows),
    [PTO_METHOD_BUFFER_ALLOC] = ROWS(alloc_rows),
    [PTO_METHOD_BUFFER_WRITE] = ROWS(write_rows),
    [PTO_METHOD_BUFFER_READ] = ROWS(read_rows),
    [PTO_METHOD_BUFFER_FREE] = ROWS(free_rows),
    [PTO_METHOD_PREWARM] = ROWS(prewarm_rows),
    [PTO_METHOD_SHM_REGISTER] = {.not_sendable = true},
    [PTO_METHOD_SHM_UNREGISTER] = {.not_sendable = true},
};

/* One row into rp->p.  rp->args gets the converted arguments, for
 * client_request_params_free. */
static int apply_row(const req_row_t *r, const pto_request_t *req, client_request_params_t *rp,
                     pto_error_t *err) {
  proto_params_t *p = &rp->p;
  const char *from = (const char *)req + r->from;
  char *to = (char *)p + r->to;
  const void *ptr;
  memcpy(&ptr, from, sizeof(ptr)); /* every kind but RQ_U64 and RQ_DEADLINE has a pointer */
  switch (r->kind) {
    case RQ_NAME:
      if (!ptr) return missing(err, pto_method_name(req->method), r->what);
      memcpy(to, &ptr, sizeof(ptr));
      return 0;
    case RQ_U64: memcpy(to, from, sizeof(uint64_t)); return 0;
    case RQ_BIN: {
      size_t len = (size_t)schema_load_uint((const char *)req + r->from_len, r->len_size);
      proto_bytes_t b = {ptr, len};
      if (!ptr && !r->what) return 0;
      if (!ptr && b.len) return missing(err, pto_method_name(req->method), r->what);
      if (!ptr) b.ptr = (const uint8_t *)""; /* a present empty bin needs a non-NULL pointer */
      memcpy(to, &b, sizeof(b));
      return 0;
    }
    case RQ_CONFIG: client_config_to_proto(ptr, (proto_config_t *)(void *)to); return 0;
    case RQ_ARGS: {
      uint32_t n = (uint32_t)schema_load_uint((const char *)req + r->from_len, r->len_size);
      if (n && !ptr) return missing(err, pto_method_name(req->method), r->what);
      memcpy((char *)p + r->to_len, &n, sizeof(n));
      int rc = convert_args(ptr, n, rp, &rp->args, err);
      memcpy(to, &rp->args, sizeof(rp->args));
      return rc;
    }
    case RQ_DEADLINE: {
      int64_t ms;
      memcpy(&ms, from, sizeof(ms));
      ms = ms > 0 ? ms : PROTO_UNSET;
      memcpy(to, &ms, sizeof(ms));
      return 0;
    }
  }
  return client_error(err, PTO_E_INVALID_ARGUMENT, "Unknown request row kind %d.", (int)r->kind);
}

int client_request_params(const pto_request_t *req, client_request_params_t *ret,
                          pto_error_t *err) {
  const req_def_t *def;
  int rc = 0;

  memset(&ret->p, 0, sizeof(ret->p));
  ret->params = NULL;
  ret->args = NULL;
  if ((unsigned)req->method >= PROTO_M_COUNT)
    return client_error(err, PTO_E_INVALID_ARGUMENT, "There is no method number %d.",
                        (int)req->method);
  def = &requests[req->method];
  if (def->not_sendable)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "'%s' cannot be sent with pto_client_send: a region is registered with "
                        "pto_shm_create() (its fd travels with the request) and unregistered "
                        "with pto_shm_free().",
                        pto_method_name(req->method));
  for (size_t i = 0; i < def->nrows && rc == 0; i++)
    rc = apply_row(&def->rows[i], req, ret, err);
  if (rc < 0) {
    client_request_params_free(ret);
    return rc;
  }
  ret->params = def->rows ? &ret->p : NULL;
  return 0;
}

void client_request_params_free(client_request_params_t *rp) {
  if (rp->args != rp->few) free(rp->args);
  rp->args = NULL;
  rp->params = NULL;
}

/* Send req and wait for its answer, within timeout_ms for both. */
static int call_opts(pto_client_t *c, const pto_request_t *req, const pto_call_opts_t *opts,
                     int timeout_ms, void **ret_result, pto_error_t *err) {
  int64_t deadline = client_deadline(timeout_ms);
  uint32_t msgid = 0;
  void *result = NULL;
  int rc = client_send_until(c, req, opts, deadline, &msgid, err);
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

static int call(pto_client_t *c, const pto_request_t *req, int timeout_ms, void **ret_result,
                pto_error_t *err) {
  return call_opts(c, req, NULL, timeout_ms, ret_result, err);
}

int pto_client_call(pto_client_t *c, const pto_request_t *req, const pto_call_opts_t *opts,
                    int timeout_ms, void **ret_result, pto_error_t *ret_err) {
  return call_opts(c, req, opts, timeout_ms, ret_result, ret_err);
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
