/* SPDX-License-Identifier: Apache-2.0 */
/* proto/args.c — a dispatch argument on the wire: its forms ({"buffer"},
 * {"data"}, {"out"}, {"scalar"}, {"shm"}), decoded strictly and packed. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "describe.h"
#include "schema_rows.h"

/* --- dispatch arguments --------------------------------------------------- */

/* An argument as the wire spells it, before its form is known. */
typedef struct arg_wire {
  const char *buffer;
  const char *shm;
  uint64_t offset, bytes, out;
  proto_bytes_t data;
  const char *dir;
  struct {
    pto_arg_kind_t kind;
    int64_t i;
    double f;
  } scalar;
} arg_wire_t;

static int scalar_decode(schema_ctx_t *ctx, const schema_spec_t *spec, const msgpack_object *o,
                         void *field) {
  arg_wire_t *w = (arg_wire_t *)((char *)field - offsetof(arg_wire_t, scalar));
  if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) {
    w->scalar.kind = PTO_ARG_INT;
    w->scalar.i = (int64_t)o->via.u64;
  } else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
    w->scalar.kind = PTO_ARG_INT;
    w->scalar.i = o->via.i64;
  } else if (o->type == MSGPACK_OBJECT_FLOAT32 || o->type == MSGPACK_OBJECT_FLOAT64) {
    w->scalar.kind = PTO_ARG_FLOAT;
    w->scalar.f = o->via.f64;
  } else {
    return schema_bad_value(ctx, spec->key, "a 64-bit integer or a float", o);
  }
  return 0;
}

static const schema_custom_t scalar_custom = {.decode = scalar_decode};

enum {
  A_BUFFER = 1,
  A_OFFSET = 2,
  A_BYTES = 4,
  A_DATA = 8,
  A_DIR = 16,
  A_OUT = 32,
  A_SCALAR = 64,
  A_SHM = 128
};

static const schema_spec_t arg_rows[] = {
    ROW_K("buffer", SK_NAME, arg_wire_t, buffer, F_OPT),
    ROW_U("offset", arg_wire_t, offset, 0, BYTES_MAX, F_OPT),
    ROW_U("bytes", arg_wire_t, bytes, 1, BYTES_MAX, F_OPT),
    ROW_K("data", SK_BIN, arg_wire_t, data, F_OPT),
    ROW_K("dir", SK_STR, arg_wire_t, dir, F_OPT),
    ROW_U("out", arg_wire_t, out, 0, BYTES_MAX, F_OPT),
    {.key = "scalar",
     .kind = SK_CUSTOM,
     .flags = F_OPT,
     .off = offsetof(arg_wire_t, scalar),
     .sub = &scalar_custom},
    ROW_K("shm", SK_NAME, arg_wire_t, shm, F_OPT),
};
static const schema_t arg_schema = SCHEMA(arg_rows);

#define ARG_FORMS                                                                          \
  "{\"buffer\": name}, {\"buffer\": name, \"offset\": o, \"bytes\": n}, {\"data\": bin}, " \
  "{\"data\": bin, \"dir\": \"inout\"}, {\"out\": n}, {\"scalar\": int | float} or "          \
  "{\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}"

static int arg_form(schema_ctx_t *ctx, const arg_wire_t *w, uint64_t seen, proto_arg_t *a) {
  char keys[96] = "", prefix[SCHEMA_PREFIX_MAX];
  size_t pos = 0;
  switch (seen) {
    case A_BUFFER: *a = (proto_arg_t){.kind = PTO_ARG_BUFFER, .buffer = w->buffer}; return 0;
    case A_BUFFER | A_OFFSET | A_BYTES:
      *a = (proto_arg_t){
          .kind = PTO_ARG_BUFFER, .buffer = w->buffer, .offset = w->offset, .bytes = w->bytes};
      return 0;
    case A_DATA | A_DIR:
      if (strcmp(w->dir, "inout") != 0 && strcmp(w->dir, "in") != 0) {
        msgpack_object got = {.type = MSGPACK_OBJECT_STR};
        got.via.str.ptr = w->dir;
        got.via.str.size = (uint32_t)strlen(w->dir);
        return schema_bad_value(ctx, "dir", "\"in\" or \"inout\"", &got);
      }
      /* fall through */
    case A_DATA: {
      bool inout = (seen & A_DIR) && strcmp(w->dir, "inout") == 0;
      *a = (proto_arg_t){.kind = inout ? PTO_ARG_INOUT : PTO_ARG_INPUT, .data = w->data};
      return 0;
    }
    case A_OUT: *a = (proto_arg_t){.kind = PTO_ARG_OUTPUT, .bytes = w->out}; return 0;
    case A_SCALAR:
      *a = (proto_arg_t){.kind = w->scalar.kind, .i = w->scalar.i, .f = w->scalar.f};
      return 0;
    case A_SHM | A_BYTES:
    case A_SHM | A_OFFSET | A_BYTES:
    case A_SHM | A_BYTES | A_DIR:
    case A_SHM | A_OFFSET | A_BYTES | A_DIR: {
      pto_arg_kind_t kind = PTO_ARG_INPUT;
      if (seen & A_DIR) {
        if (strcmp(w->dir, "out") == 0)
          kind = PTO_ARG_OUTPUT;
        else if (strcmp(w->dir, "inout") == 0)
          kind = PTO_ARG_INOUT;
        else if (strcmp(w->dir, "in") != 0) {
          msgpack_object got = {.type = MSGPACK_OBJECT_STR};
          got.via.str.ptr = w->dir;
          got.via.str.size = (uint32_t)strlen(w->dir);
          return schema_bad_value(ctx, "dir", "\"in\", \"out\" or \"inout\"", &got);
        }
      }
      *a = (proto_arg_t){
          .kind = kind, .shm = w->shm, .offset = w->offset, .bytes = w->bytes};
      return 0;
    }
    default: break;
  }
  for (size_t i = 0; i < arg_schema.nfields && pos < sizeof(keys); i++)
    if (seen >> i & 1u)
      pos += (size_t)snprintf(keys + pos, sizeof(keys) - pos, "%s'%s'", pos ? ", " : "",
                              arg_rows[i].key);
  return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                       "%sa dispatch argument must be one of " ARG_FORMS "; got %s%s.",
                       schema_prefix(ctx, prefix),
                       seen ? "the keys " : "an empty map", keys);
}

/* A key given as nil, reported as such (overwriting the message that
 * arg_form wrote for the form it could not find). */
static int arg_no_nil(schema_ctx_t *ctx, const msgpack_object *o) {
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object_kv *kv = &o->via.map.ptr[i];
    char shown[4 * 32 + 4], prefix[SCHEMA_PREFIX_MAX];
    if (kv->val.type != MSGPACK_OBJECT_NIL || kv->key.type != MSGPACK_OBJECT_STR) continue;
    proto_show_text(kv->key.via.str.ptr, kv->key.via.str.size, 32, shown, sizeof(shown));
    return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                         "%skey '%s' is nil; a dispatch argument must be one of " ARG_FORMS ".",
                         schema_prefix(ctx, prefix), shown);
  }
  return 0;
}

static int arg_decode(schema_ctx_t *ctx, const schema_spec_t *spec, const msgpack_object *o,
                      void *field) {
  schema_ctx_t inner = *ctx;
  arg_wire_t w;
  uint64_t seen = 0;
  int rc;
  (void)spec;
  memset(&w, 0, sizeof(w));
  inner.prefix_of = ctx->path; /* ctx outlives inner, its path unchanged meanwhile */
  inner.path[0] = '\0';
  inner.what = "a dispatch argument";
  if (o->type != MSGPACK_OBJECT_MAP) {
    char desc[64];
    proto_describe(o, desc, sizeof(desc));
    rc = pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                       "%s: a dispatch argument must be a map, one of " ARG_FORMS "; got %s.",
                       ctx->path, desc);
  } else {
    rc = schema_decode_map(&inner, &arg_schema, o, &w, &seen);
    if (rc == 0) rc = arg_form(&inner, &w, seen, field);
    /* nil reads as "not given", which can leave no valid form: name the nil. */
    if (rc == -PTO_E_INVALID_REQUEST && arg_no_nil(&inner, o) < 0) rc = -PTO_E_INVALID_REQUEST;
  }
  if (rc < 0 && ctx->err) snprintf(ctx->err->key, sizeof(ctx->err->key), "%.60s", ctx->path);
  return rc;
}

static int pack_kv_str(msgpack_packer *pk, const char *key, const char *val) {
  size_t k = strlen(key), v = strlen(val);
  return msgpack_pack_str(pk, k) | msgpack_pack_str_body(pk, key, k) | msgpack_pack_str(pk, v) |
         msgpack_pack_str_body(pk, val, v);
}

static int pack_key(msgpack_packer *pk, const char *key) {
  size_t k = strlen(key);
  return msgpack_pack_str(pk, k) | msgpack_pack_str_body(pk, key, k);
}

static int arg_pack(msgpack_packer *pk, const void *field) {
  const proto_arg_t *a = field;
  if (a->shm) {
    const char *dir = a->kind == PTO_ARG_OUTPUT ? "out" : a->kind == PTO_ARG_INOUT ? "inout" : "in";
    return msgpack_pack_map(pk, 4) | pack_kv_str(pk, "shm", a->shm) | pack_key(pk, "offset") |
           msgpack_pack_uint64(pk, a->offset) | pack_key(pk, "bytes") |
           msgpack_pack_uint64(pk, a->bytes) | pack_kv_str(pk, "dir", dir);
  }
  switch (a->kind) {
    case PTO_ARG_BUFFER: {
      int rc = msgpack_pack_map(pk, a->bytes ? 3 : 1) | pack_kv_str(pk, "buffer", a->buffer);
      if (a->bytes)
        rc |= pack_key(pk, "offset") | msgpack_pack_uint64(pk, a->offset) | pack_key(pk, "bytes") |
              msgpack_pack_uint64(pk, a->bytes);
      return rc;
    }
    case PTO_ARG_INPUT:
    case PTO_ARG_INOUT: {
      int rc = msgpack_pack_map(pk, a->kind == PTO_ARG_INOUT ? 2 : 1) | pack_key(pk, "data") |
               msgpack_pack_bin(pk, a->data.len) |
               msgpack_pack_bin_body(pk, a->data.ptr, a->data.len);
      if (a->kind == PTO_ARG_INOUT) rc |= pack_kv_str(pk, "dir", "inout");
      return rc;
    }
    case PTO_ARG_OUTPUT:
      return msgpack_pack_map(pk, 1) | pack_key(pk, "out") | msgpack_pack_uint64(pk, a->bytes);
    case PTO_ARG_INT:
      return msgpack_pack_map(pk, 1) | pack_key(pk, "scalar") | msgpack_pack_int64(pk, a->i);
    case PTO_ARG_FLOAT:
      return msgpack_pack_map(pk, 1) | pack_key(pk, "scalar") | msgpack_pack_double(pk, a->f);
  }
  return -1;
}

static size_t arg_payload(const void *field) {
  const proto_arg_t *a = field;
  return !a->shm && (a->kind == PTO_ARG_INPUT || a->kind == PTO_ARG_INOUT) ? a->data.len : 0;
}

static const schema_custom_t arg_custom = {
    .decode = arg_decode, .pack = arg_pack, .payload = arg_payload};
const schema_spec_t proto_arg_elem = ROW_ELEM(SK_CUSTOM, proto_arg_t, &arg_custom);
