/* SPDX-License-Identifier: Apache-2.0 */
/* msgpack-RPC envelopes and the error map (proto/rpc.h). */
#include "rpc.h"

#include <errno.h>
#include <inttypes.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader.h"

/* msgpack-c's pack functions return 0 or -1; OR them together and turn a
 * failure into -ENOMEM once, at the end. */
#define REQUEST_SHAPE      "[0, msgid, method, params]"
#define RESPONSE_SHAPE     "[1, msgid, error, result]"
#define NOTIFICATION_SHAPE "[2, method, params]"

#define PACK_RESULT(rc) ((rc) == 0 ? 0 : -ENOMEM)

static int pack_cstr(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, s, n);
}

static int bad_message(pto_error_t *err, const char *what, const msgpack_object *got) {
  char desc[64];
  proto_describe(got, desc, sizeof(desc));
  return pto_error_set(err, PTO_E_INVALID_REQUEST, "%s, got %s; check the sender's encoder.", what,
                       desc);
}

/* params must be [] or [map]. */
static int take_params(const msgpack_object *params, proto_envelope_t *env, pto_error_t *err) {
  if (params->type != MSGPACK_OBJECT_ARRAY || params->via.array.size > 1 ||
      (params->via.array.size == 1 && params->via.array.ptr[0].type != MSGPACK_OBJECT_MAP)) {
    const msgpack_object *got = params;
    if (params->type == MSGPACK_OBJECT_ARRAY && params->via.array.size == 1)
      got = &params->via.array.ptr[0];
    return bad_message(err, "params must be [] or [map] (one map of named parameters)", got);
  }
  env->params = params->via.array.size == 1 ? &params->via.array.ptr[0] : NULL;
  return 0;
}

static int take_method(const msgpack_object *m, proto_envelope_t *env, pto_error_t *err) {
  if (m->type != MSGPACK_OBJECT_STR) return bad_message(err, "The method must be a string", m);
  env->method = m->via.str.ptr;
  env->method_len = m->via.str.size;
  return 0;
}

static int wrong_count(pto_error_t *err, const char *noun, const char *shape, uint32_t want,
                       uint32_t got) {
  return pto_error_set(err, PTO_E_INVALID_REQUEST,
                       "A %s must be %s (%" PRIu32 " elements), got %" PRIu32
                       " elements; check the sender's encoder.",
                       noun, shape, want, got);
}

static bool take_msgid(const msgpack_object *id, proto_envelope_t *env) {
  if (id->type != MSGPACK_OBJECT_POSITIVE_INTEGER || id->via.u64 > UINT32_MAX) return false;
  env->msgid = (uint32_t)id->via.u64;
  env->has_msgid = true;
  return true;
}

static int decode_request(const msgpack_object_array *a, proto_envelope_t *env, pto_error_t *err) {
  int rc;
  if (a->size < 2) return wrong_count(err, "request", REQUEST_SHAPE, 4, a->size);
  if (!take_msgid(&a->ptr[1], env))
    return bad_message(err, "A request's msgid must be an unsigned 32-bit integer", &a->ptr[1]);
  env->answerable = true;
  if (a->size != 4) return wrong_count(err, "request", REQUEST_SHAPE, 4, a->size);
  rc = take_method(&a->ptr[2], env, err);
  return rc < 0 ? rc : take_params(&a->ptr[3], env, err);
}

static int decode_response(const msgpack_object_array *a, proto_envelope_t *env, pto_error_t *err) {
  if (a->size < 2) return wrong_count(err, "response", RESPONSE_SHAPE, 4, a->size);
  if (!take_msgid(&a->ptr[1], env))
    return bad_message(err, "A response's msgid must be an unsigned 32-bit integer", &a->ptr[1]);
  if (a->size != 4) return wrong_count(err, "response", RESPONSE_SHAPE, 4, a->size);
  if (a->ptr[2].type != MSGPACK_OBJECT_NIL && a->ptr[2].type != MSGPACK_OBJECT_MAP)
    return bad_message(err, "A response's error must be nil or a map", &a->ptr[2]);
  env->error = a->ptr[2].type == MSGPACK_OBJECT_NIL ? NULL : &a->ptr[2];
  env->result = &a->ptr[3];
  return 0;
}

static int decode_notification(const msgpack_object_array *a, proto_envelope_t *env,
                               pto_error_t *err) {
  int rc;
  if (a->size != 3) return wrong_count(err, "notification", NOTIFICATION_SHAPE, 3, a->size);
  rc = take_method(&a->ptr[1], env, err);
  return rc < 0 ? rc : take_params(&a->ptr[2], env, err);
}

/* The structure again, bounded by len: a message handed over without a
 * reader cannot make msgpack-c allocate for more than it holds. */
static int check_structure(const void *data, size_t len, pto_error_t *err) {
  proto_reader_t r;
  size_t n = 0;
  int rc;
  proto_reader_init(&r, len > 0 ? len : 1);
  rc = proto_reader_feed(&r, data, len, &n, err);
  if (rc == -PTO_E_INVALID_REQUEST) return rc;
  if (rc <= 0)
    return pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "The message is truncated: its %zu bytes do not hold a whole msgpack "
                         "object; check the sender's encoder.",
                         len);
  if (n != len)
    return pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "The message has %zu bytes after its end; send one msgpack object per "
                         "message.",
                         len - n);
  return 0;
}

int proto_decode(const void *data, size_t len, msgpack_unpacked *unpacked,
                 proto_envelope_t *ret_env, pto_error_t *ret_err) {
  int rc = check_structure(data, len, ret_err);
  if (rc < 0) {
    memset(ret_env, 0, sizeof(*ret_env));
    return rc;
  }
  return proto_decode_delimited(data, len, unpacked, ret_env, ret_err);
}

int proto_decode_delimited(const void *data, size_t len, msgpack_unpacked *unpacked,
                           proto_envelope_t *ret_env, pto_error_t *ret_err) {
  const msgpack_object *root;
  size_t off = 0;
  msgpack_unpack_return ur;

  memset(ret_env, 0, sizeof(*ret_env));
  if (unpacked->zone) {
    /* Decode into the caller's zone (msgpack_unpack: the same parser, into
     * a given zone). */
    ur = msgpack_unpack(data, len, &off, unpacked->zone, &unpacked->data);
  } else {
    ur = msgpack_unpack_next(unpacked, data, len, &off);
  }
  if (ur == MSGPACK_UNPACK_NOMEM_ERROR)
    return pto_error_set(ret_err, PTO_E_INTERNAL, "Out of memory while decoding a message.");
  if (ur != MSGPACK_UNPACK_SUCCESS || off != len)
    return pto_error_set(ret_err, PTO_E_INVALID_REQUEST,
                         "The message is not valid msgpack; check the sender's encoder.");
  root = &unpacked->data;
  if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size == 0)
    return bad_message(ret_err, "A msgpack-RPC message must be an array [type, ...]", root);
  switch (root->via.array.ptr[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER
              ? root->via.array.ptr[0].via.u64
              : UINT64_MAX) {
    case PROTO_MSG_REQUEST:
      ret_env->type = PROTO_MSG_REQUEST;
      return decode_request(&root->via.array, ret_env, ret_err);
    case PROTO_MSG_RESPONSE:
      ret_env->type = PROTO_MSG_RESPONSE;
      return decode_response(&root->via.array, ret_env, ret_err);
    case PROTO_MSG_NOTIFICATION:
      ret_env->type = PROTO_MSG_NOTIFICATION;
      return decode_notification(&root->via.array, ret_env, ret_err);
    default:
      return bad_message(ret_err,
                         "A msgpack-RPC message must start with 0 (request), 1 (response) or 2 "
                         "(notification)",
                         &root->via.array.ptr[0]);
  }
}

bool proto_envelope_method_is(const proto_envelope_t *env, const char *name) {
  size_t n = strlen(name);
  return env->method && env->method_len == n && memcmp(env->method, name, n) == 0;
}

int proto_pack_request_begin(msgpack_packer *pk, uint32_t msgid, const char *method) {
  int rc = msgpack_pack_array(pk, 4) | msgpack_pack_uint8(pk, PROTO_MSG_REQUEST) |
           msgpack_pack_uint32(pk, msgid) | pack_cstr(pk, method);
  return PACK_RESULT(rc);
}

int proto_pack_response_begin(msgpack_packer *pk, uint32_t msgid) {
  int rc = msgpack_pack_array(pk, 4) | msgpack_pack_uint8(pk, PROTO_MSG_RESPONSE) |
           msgpack_pack_uint32(pk, msgid) | msgpack_pack_nil(pk);
  return PACK_RESULT(rc);
}

int proto_pack_response_error(msgpack_packer *pk, uint32_t msgid, const pto_error_t *err) {
  int rc = msgpack_pack_array(pk, 4) | msgpack_pack_uint8(pk, PROTO_MSG_RESPONSE) |
           msgpack_pack_uint32(pk, msgid) | proto_pack_error_map(pk, err) | msgpack_pack_nil(pk);
  return PACK_RESULT(rc);
}

int proto_pack_notification_begin(msgpack_packer *pk, const char *method) {
  int rc = msgpack_pack_array(pk, 3) | msgpack_pack_uint8(pk, PROTO_MSG_NOTIFICATION) |
           pack_cstr(pk, method);
  return PACK_RESULT(rc);
}

int proto_pack_error_notification(msgpack_packer *pk, const pto_error_t *err) {
  int rc = proto_pack_notification_begin(pk, "error") | msgpack_pack_array(pk, 1) |
           proto_pack_error_map(pk, err);
  return PACK_RESULT(rc);
}

int proto_encode_error_response(msgpack_sbuffer *sb, uint32_t msgid, const pto_error_t *err) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  return proto_pack_response_error(&pk, msgid, err);
}

int proto_encode_error_notification(msgpack_sbuffer *sb, const pto_error_t *err) {
  msgpack_packer pk;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  return proto_pack_error_notification(&pk, err);
}

/* The message of an error that came without one: the table's default, or
 * for a code outside the table a sentence that still says something.  Both
 * directions use it, so an error map survives a decode and re-encode. */
static const char *fallback_message(int code) {
  const char *message = pto_error_default_message(code);
  return message ? message : "Unknown error (the sender gave no message).";
}

int proto_pack_error_map(msgpack_packer *pk, const pto_error_t *err) {
  return proto_pack_error_map_n(pk, err, 0);
}

int proto_pack_error_map_n(msgpack_packer *pk, const pto_error_t *err, uint32_t nextra) {
  const char *name = pto_error_name(err->code);
  const char *message = err->message[0] ? err->message : fallback_message(err->code);
  bool ring = err->ring >= 0;
  bool amounts = ring || err->requested != 0 || err->capacity != 0;
  bool hint = err->hint[0] != '\0', key = err->key[0] != '\0';
  int rc = msgpack_pack_map(pk, 3u + ring + 2u * amounts + hint + key + nextra);
  rc |= pack_cstr(pk, "code") | msgpack_pack_int(pk, err->code);
  rc |= pack_cstr(pk, "name") | pack_cstr(pk, name ? name : "UNKNOWN");
  rc |= pack_cstr(pk, "message") | pack_cstr(pk, message);
  if (ring) rc |= pack_cstr(pk, "ring") | msgpack_pack_int(pk, err->ring);
  if (amounts) {
    rc |= pack_cstr(pk, "requested") | msgpack_pack_uint64(pk, err->requested);
    rc |= pack_cstr(pk, "capacity") | msgpack_pack_uint64(pk, err->capacity);
  }
  if (hint) rc |= pack_cstr(pk, "hint") | pack_cstr(pk, err->hint);
  if (key) rc |= pack_cstr(pk, "key") | pack_cstr(pk, err->key);
  return PACK_RESULT(rc);
}

static bool key_is(const msgpack_object *k, const char *name) {
  size_t n = strlen(name);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
         memcmp(k->via.str.ptr, name, n) == 0;
}

static void copy_str(char *dst, size_t cap, const msgpack_object *v) {
  size_t n;
  if (v->type != MSGPACK_OBJECT_STR) return;
  n = v->via.str.size < cap - 1 ? v->via.str.size : cap - 1;
  memcpy(dst, v->via.str.ptr, n);
  dst[n] = '\0';
}

static bool get_int(const msgpack_object *v, int64_t *ret) {
  if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT64_MAX)
    *ret = (int64_t)v->via.u64;
  else if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
    *ret = v->via.i64;
  else
    return false;
  return true;
}

int proto_error_decode(const msgpack_object *obj, pto_error_t *ret) {
  char name[64] = "";
  int64_t code = -1, v;
  pto_error_clear(ret);
  if (obj->type != MSGPACK_OBJECT_MAP) {
    pto_error_set(ret, PTO_E_INTERNAL,
                  "The peer sent an error that is not a map; it does not speak ptod's protocol "
                  "version 1.");
    return -PTO_E_INVALID_REQUEST;
  }
  for (uint32_t i = 0; i < obj->via.map.size; i++) {
    const msgpack_object *k = &obj->via.map.ptr[i].key, *val = &obj->via.map.ptr[i].val;
    if (key_is(k, "code") && get_int(val, &v) && v >= INT32_MIN && v <= INT32_MAX)
      code = v;
    else if (key_is(k, "name"))
      copy_str(name, sizeof(name), val);
    else if (key_is(k, "message"))
      copy_str(ret->message, sizeof(ret->message), val);
    else if (key_is(k, "hint"))
      copy_str(ret->hint, sizeof(ret->hint), val);
    else if (key_is(k, "key"))
      copy_str(ret->key, sizeof(ret->key), val);
    else if (key_is(k, "ring") && get_int(val, &v) && v >= 0 && v <= INT32_MAX)
      ret->ring = (int)v;
    else if (key_is(k, "requested") && val->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
      ret->requested = val->via.u64;
    else if (key_is(k, "capacity") && val->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
      ret->capacity = val->via.u64;
  }
  if (code < 0 && name[0]) {
    code = pto_error_from_name(name);
    /* libptoclient's own codes (pto/errors.h) are never sent: no such name. */
    if (code >= PTO_LOCAL_ERROR_FIRST) code = -1;
  }
  if (code <= 0) {
    pto_error_set(ret, PTO_E_INTERNAL,
                  "The peer sent an error map without a usable code or name; it does not speak "
                  "ptod's protocol version 1.");
    return -PTO_E_INVALID_REQUEST;
  }
  ret->code = (int)code;
  if (!ret->message[0]) snprintf(ret->message, sizeof(ret->message), "%s", fallback_message(ret->code));
  return 0;
}

int proto_sbuffer_reserve(msgpack_sbuffer *sb, size_t more) {
  char *p;
  if (sb->alloc - sb->size >= more) return 0;
  if (more > SIZE_MAX - sb->size) return -ENOMEM;
  p = realloc(sb->data, sb->size + more);
  if (!p) return -ENOMEM;
  sb->data = p;
  sb->alloc = sb->size + more;
  return 0;
}

int proto_sbuffer_append(void *data, const char *buf, size_t len) {
  msgpack_sbuffer *sb = data;
  if (len == 0) return 0;
  if (proto_sbuffer_reserve(sb, len) < 0) return -1;
  memcpy(sb->data + sb->size, buf, len);
  sb->size += len;
  return 0;
}

bool proto_zone_init(msgpack_zone *z, uint64_t objects, size_t extra) {
  size_t chunk;
  if (objects > (SIZE_MAX - extra) / sizeof(msgpack_object)) return false;
  chunk = (size_t)objects * sizeof(msgpack_object) + extra;
  /* msgpack_zone_new would allocate chunk bytes twice (once beside the
   * zone, unused) and the zone itself; the caller holds the zone. */
  return msgpack_zone_init(z, chunk ? chunk : 64);
}

/* msgpack-c's chunk header (zone.c): the next chunk, then the bytes. */
typedef struct zone_chunk {
  struct zone_chunk *next;
} zone_chunk_t;

size_t proto_zone_bytes(const msgpack_zone *z) {
  size_t bytes = 0;
  if (!z) return 0;
  for (const zone_chunk_t *c = (const zone_chunk_t *)z->chunk_list.head; c; c = c->next)
    bytes += malloc_usable_size((void *)(uintptr_t)c) + sizeof(size_t);
  return bytes;
}
