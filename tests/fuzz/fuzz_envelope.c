/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz proto_decode, the msgpack-RPC envelope decoder (proto/rpc.h).
 *
 * Input: one message, as the daemon hands proto_decode the bytes the
 * reader delimited — or anything else, since proto_decode re-checks the
 * structure itself (trailing bytes, truncation, depth, huge claims).
 *
 * Checked, against an independent reading of the same bytes with msgpack-c:
 *   - proto_decode accepts exactly the messages of docs/protocol.md's three
 *     shapes, and fills the envelope with their parts (type, msgid, the
 *     method bytes in place, params [] or [map], error nil or map, result);
 *   - a failure is INVALID_REQUEST with a message, "answerable" exactly when
 *     the message is `[0, uint32 msgid, ...]`, and has_msgid exactly when a
 *     request's or response's msgid was read; bytes that are not one whole
 *     message are never answerable;
 *   - what the daemon sends back for a failure (an error response to the
 *     msgid, or the "error" notification) decodes again, and
 *     proto_error_decode gives back the same code and message;
 *   - proto_decode_delimited (the daemon's decode, after its reader) says
 *     the same as proto_decode of every input the reader delimits exactly;
 *   - a response's error map decodes with proto_error_decode to a code > 0
 *     and a message, or fails with an INTERNAL explanation; re-encoded with
 *     proto_pack_error_map, it decodes to the same fields.
 */
#include "fuzz_common.h"
#include "rpc.h"

static bool is_u32(const msgpack_object *o) {
  return o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= UINT32_MAX;
}

static bool params_ok(const msgpack_object *p) {
  return p->type == MSGPACK_OBJECT_ARRAY &&
         (p->via.array.size == 0 ||
          (p->via.array.size == 1 && p->via.array.ptr[0].type == MSGPACK_OBJECT_MAP));
}

/* What docs/protocol.md says about a message, read straight off msgpack-c. */
typedef struct oracle {
  bool ok, answerable, has_msgid;
  int type;
} oracle_t;

static oracle_t judge(const msgpack_object *root) {
  oracle_t o = {.type = -1};
  const msgpack_object *a;
  uint32_t n;
  if (root->type != MSGPACK_OBJECT_ARRAY || root->via.array.size == 0) return o;
  a = root->via.array.ptr;
  n = root->via.array.size;
  if (a[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER || a[0].via.u64 > 2) return o;
  o.type = (int)a[0].via.u64;
  switch (o.type) {
    case 0:
      o.has_msgid = o.answerable = n >= 2 && is_u32(&a[1]);
      o.ok = o.answerable && n == 4 && a[2].type == MSGPACK_OBJECT_STR && params_ok(&a[3]);
      break;
    case 1:
      o.has_msgid = n >= 2 && is_u32(&a[1]);
      o.ok = o.has_msgid && n == 4 &&
             (a[2].type == MSGPACK_OBJECT_NIL || a[2].type == MSGPACK_OBJECT_MAP);
      break;
    default: o.ok = n == 3 && a[1].type == MSGPACK_OBJECT_STR && params_ok(&a[2]); break;
  }
  return o;
}

/* proto_error_decode's contract, and a round trip through the wire map. */
static void check_error_map(const msgpack_object *map) {
  pto_error_t e, again;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_unpacked up;
  size_t off = 0;
  int rc = proto_error_decode(map, &e);
  if (rc < 0) {
    FUZZ_CHECK(rc == -PTO_E_INVALID_REQUEST && e.code == PTO_E_INTERNAL && e.message[0],
               "proto_error_decode: rc %d, code %d, message \"%s\"", rc, e.code, e.message);
    return;
  }
  FUZZ_CHECK(rc == 0 && e.code > 0, "proto_error_decode: rc %d, code %d", rc, e.code);
  if (e.message[0] == '\0' && fuzz_known("error-no-message")) return;
  FUZZ_CHECK(e.message[0] != '\0', "proto_error_decode gave code %d with an empty message",
             e.code);
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  FUZZ_CHECK(proto_pack_error_map(&pk, &e) == 0, "proto_pack_error_map failed");
  msgpack_unpacked_init(&up);
  FUZZ_CHECK(msgpack_unpack_next(&up, sb.data, sb.size, &off) == MSGPACK_UNPACK_SUCCESS,
             "proto_pack_error_map wrote something msgpack-c cannot read");
  FUZZ_CHECK(proto_error_decode(&up.data, &again) == 0, "a packed error map does not decode");
  FUZZ_CHECK(again.code == e.code && strcmp(again.message, e.message) == 0 &&
                 strcmp(again.key, e.key) == 0 && strcmp(again.hint, e.hint) == 0 &&
                 again.ring == e.ring && again.requested == e.requested &&
                 again.capacity == e.capacity,
             "error map round trip: code %d -> %d, ring %d -> %d, message \"%s\" -> \"%s\"", e.code,
             again.code, e.ring, again.ring, e.message, again.message);
  msgpack_unpacked_destroy(&up);
  msgpack_sbuffer_destroy(&sb);
}

/* What the daemon sends for a failed message must read back as the same
 * error. */
static void check_reply(const proto_envelope_t *env, const pto_error_t *err) {
  msgpack_sbuffer sb;
  msgpack_unpacked up;
  proto_envelope_t back;
  pto_error_t e, got;
  int rc;
  msgpack_sbuffer_init(&sb);
  msgpack_unpacked_init(&up);
  if (env->answerable)
    rc = proto_encode_error_response(&sb, env->msgid, err);
  else
    rc = proto_encode_error_notification(&sb, err);
  FUZZ_CHECK(rc == 0, "encoding the error reply failed: %d", rc);
  pto_error_clear(&e);
  rc = proto_decode(sb.data, sb.size, &up, &back, &e);
  FUZZ_CHECK(rc == 0, "the daemon's own error reply does not decode: %s", e.message);
  if (env->answerable) {
    FUZZ_CHECK(back.type == PROTO_MSG_RESPONSE && back.msgid == env->msgid && back.error &&
                   back.result && back.result->type == MSGPACK_OBJECT_NIL,
               "the error response is not [1, %u, {error}, nil]", env->msgid);
    rc = proto_error_decode(back.error, &got);
  } else {
    FUZZ_CHECK(back.type == PROTO_MSG_NOTIFICATION && proto_envelope_method_is(&back, "error") &&
                   back.params,
               "the error notification is not [2, \"error\", [{error}]]");
    rc = proto_error_decode(back.params, &got);
  }
  FUZZ_CHECK(rc == 0 && got.code == err->code && strcmp(got.message, err->message) == 0,
             "the reply carries code %d \"%s\", the failure was %d \"%s\"", got.code, got.message,
             err->code, err->message);
  msgpack_unpacked_destroy(&up);
  msgpack_sbuffer_destroy(&sb);
}

static void check_success(const proto_envelope_t *env, const msgpack_object *root) {
  const msgpack_object *a = root->via.array.ptr;
  FUZZ_CHECK((int)env->type == (int)a[0].via.u64, "type %d, the message says %llu", env->type,
             (unsigned long long)a[0].via.u64);
  switch (env->type) {
    case PROTO_MSG_REQUEST:
    case PROTO_MSG_NOTIFICATION: {
      const msgpack_object *m = &a[env->type == PROTO_MSG_REQUEST ? 2 : 1];
      const msgpack_object *p = &a[env->type == PROTO_MSG_REQUEST ? 3 : 2];
      /* str payloads are not copied: the method points into the input */
      FUZZ_CHECK(env->method == m->via.str.ptr && env->method_len == m->via.str.size,
                 "the method is not the message's str");
      if (p->via.array.size == 0)
        FUZZ_CHECK(env->params == NULL, "params [] gave a map");
      else
        FUZZ_CHECK(env->params && fuzz_same_object(env->params, &p->via.array.ptr[0]),
                   "params [map] gave something else");
      if (env->type == PROTO_MSG_REQUEST)
        FUZZ_CHECK(env->msgid == a[1].via.u64 && env->has_msgid && env->answerable,
                   "request msgid %u, the message holds %llu", env->msgid,
                   (unsigned long long)a[1].via.u64);
      break;
    }
    case PROTO_MSG_RESPONSE:
      FUZZ_CHECK(env->msgid == a[1].via.u64 && env->has_msgid, "response msgid %u", env->msgid);
      FUZZ_CHECK(env->result && fuzz_same_object(env->result, &a[3]), "wrong result");
      if (a[2].type == MSGPACK_OBJECT_NIL) {
        FUZZ_CHECK(env->error == NULL, "nil error gave an error map");
      } else {
        FUZZ_CHECK(env->error && fuzz_same_object(env->error, &a[2]), "wrong error map");
        check_error_map(env->error);
      }
      break;
  }
}

/* The daemon's decode (proto_decode_delimited, after its reader) must say
 * what proto_decode said of a message the reader delimits exactly. */
static void check_delimited(const uint8_t *data, size_t len, int rc, const proto_envelope_t *env,
                            const pto_error_t *err) {
  msgpack_unpacked up;
  proto_envelope_t denv;
  pto_error_t derr;
  proto_reader_t r;
  size_t n = 0;
  int drc;
  proto_reader_init(&r, len > 0 ? len : 1);
  if (proto_reader_feed(&r, data, len, &n, NULL) != 1 || n != len) return;
  msgpack_unpacked_init(&up);
  pto_error_clear(&derr);
  drc = proto_decode_delimited(data, len, &up, &denv, &derr);
  if (drc != -PTO_E_INTERNAL && rc != -PTO_E_INTERNAL) {
    FUZZ_CHECK(drc == rc, "proto_decode_delimited returned %d, proto_decode %d", drc, rc);
    FUZZ_CHECK(strcmp(derr.message, err->message) == 0, "delimited says '%s', proto_decode '%s'",
               derr.message, err->message);
    FUZZ_CHECK(denv.type == env->type && denv.msgid == env->msgid &&
                   denv.has_msgid == env->has_msgid && denv.answerable == env->answerable &&
                   denv.method_len == env->method_len,
               "proto_decode_delimited's envelope differs from proto_decode's");
  }
  msgpack_unpacked_destroy(&up);
}

static void check_one(const uint8_t *data, size_t len) {
  msgpack_unpacked mine, theirs;
  proto_envelope_t env;
  pto_error_t err;
  oracle_t o = {.type = -1};
  bool whole;
  int rc;

  msgpack_unpacked_init(&mine);
  msgpack_unpacked_init(&theirs);
  whole = fuzz_unpack_exact(data, len, &mine);
  if (whole) o = judge(&mine.data);

  pto_error_clear(&err);
  rc = proto_decode(data, len, &theirs, &env, &err);
  check_delimited(data, len, rc, &env, &err);
  if (rc == -PTO_E_INTERNAL) goto out; /* out of memory */
  FUZZ_CHECK(rc == 0 || rc == -PTO_E_INVALID_REQUEST, "proto_decode returned %d", rc);
  FUZZ_CHECK((rc == 0) == o.ok, "proto_decode returned %d (%s), the protocol says %s", rc,
             err.message, o.ok ? "valid" : "invalid");
  if (rc == 0) {
    check_success(&env, &mine.data);
  } else {
    fuzz_check_error(rc, &err, "proto_decode");
    FUZZ_CHECK(env.answerable == o.answerable && env.has_msgid == o.has_msgid,
               "answerable %d / has_msgid %d, the message says %d / %d (%s)", env.answerable,
               env.has_msgid, o.answerable, o.has_msgid, err.message);
    if (env.answerable)
      FUZZ_CHECK(env.msgid == mine.data.via.array.ptr[1].via.u64, "msgid %u", env.msgid);
    check_reply(&env, &err);
  }
out:
  msgpack_unpacked_destroy(&theirs);
  msgpack_unpacked_destroy(&mine);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  proto_reader_t r;
  size_t n = 0;
  check_one(data, size);
  /* The daemon decodes what the reader cut off a stream: the first message
   * alone, when there is more after it. */
  if (size > 0) {
    proto_reader_init(&r, size);
    if (proto_reader_feed(&r, data, size, &n, NULL) == 1 && n < size) check_one(data, n);
  }
  return 0;
}
