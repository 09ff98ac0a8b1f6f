/* SPDX-License-Identifier: Apache-2.0 */
/* What protocol 1.2 adds for serving processes (proto/methods.h): the
 * cancel notification's params and a device request's priority. */
#include <string.h>

#include "methods.h"
#include "schema.h"
#include "schema_rows.h"

static const schema_spec_t cancel_rows[] = {
    ROW_U("msgid", proto_cancel_params_t, msgid, 0, UINT32_MAX, 0)};
static const schema_t cancel_schema = SCHEMA(cancel_rows);

int proto_cancel_decode(const msgpack_object *params, proto_cancel_params_t *ret,
                        pto_error_t *ret_err) {
  static const msgpack_object empty = {.type = MSGPACK_OBJECT_MAP};
  schema_ctx_t ctx;
  memset(&ctx, 0, sizeof(ctx));
  ctx.err = ret_err;
  ctx.strict = true;
  ctx.method = PROTO_CANCEL;
  ctx.what = PROTO_CANCEL " params";
  memset(ret, 0, sizeof(*ret));
  schema_init(&cancel_schema, ret);
  return schema_decode_map(&ctx, &cancel_schema, params ? params : &empty, ret, NULL);
}

int proto_params_priority(proto_method_t method, const proto_params_t *params) {
  switch (method) {
  case PROTO_M_DISPATCH: return params->dispatch.priority;
  case PROTO_M_BUFFER_ALLOC: return params->buffer_alloc.priority;
  case PROTO_M_BUFFER_WRITE: return params->buffer_write.priority;
  case PROTO_M_BUFFER_READ: return params->buffer_read.priority;
  case PROTO_M_BUFFER_FREE: return params->buffer_free.priority;
  case PROTO_M_PREWARM: return params->prewarm.priority;
  default: return 0;
  }
}
