/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz proto_params_decode, every method's params decoder (proto/methods.h),
 * the way the daemon reaches it: proto_decode on the request first.
 *
 * Input: [selector] rest...
 *   selector & 0x80 clear: rest is one msgpack object, sent as the params
 *     map of method (selector % 12): the harness wraps it as
 *     [0, 7, "<method>", [rest]];
 *   selector & 0x80 set: rest is a whole request message, and the method is
 *     looked up by its name as the daemon does (unknown names stop there).
 *
 * Checked:
 *   - a failure is INVALID_REQUEST or INVALID_CONFIG with a message; an
 *     INVALID_CONFIG names its key (err.key);
 *   - what is accepted satisfies the documented ranges: names valid,
 *     byte counts in [1, 2^40], init exactly `bytes` long, sizing entries
 *     valid or 0, aicpu_thread_num 0 or 2..16, swimlane unset or 0..4,
 *     booleans unset/0/1, deadline unset or >= 0, every dispatch argument
 *     one of the six forms;
 *   - what is accepted, encoded again by the client's encoder
 *     (proto_encode_request), decodes again, and encodes to the same bytes
 *     (the encoder and the decoder agree on every accepted value).
 */
#include <pto/sizing.h>

#include "fuzz_common.h"
#include "methods.h"
#include "rpc.h"

static void check_config(const proto_config_t *c) {
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++)
      FUZZ_CHECK(c->sizing.value[f][r] == 0 ||
                     pto_sizing_value_valid((pto_ring_field_t)f, c->sizing.value[f][r]),
                 "config %s[%d] = %llu accepted", pto_sizing_field_key((pto_ring_field_t)f), r,
                 (unsigned long long)c->sizing.value[f][r]);
  FUZZ_CHECK(c->aicpu_thread_num == 0 || (c->aicpu_thread_num >= 2 && c->aicpu_thread_num <= 16),
             "aicpu_thread_num %d accepted", c->aicpu_thread_num);
  FUZZ_CHECK(c->enable_swimlane >= PROTO_UNSET && c->enable_swimlane <= 4,
             "enable_swimlane %d accepted", c->enable_swimlane);
  FUZZ_CHECK(c->enable_scope_stats >= PROTO_UNSET && c->enable_scope_stats <= 1,
             "enable_scope_stats %d", c->enable_scope_stats);
  FUZZ_CHECK(c->enable_dep_gen >= PROTO_UNSET && c->enable_dep_gen <= 1, "enable_dep_gen %d",
             c->enable_dep_gen);
  FUZZ_CHECK(c->nextra == 0 && c->extra == NULL, "decoded config has pass-through keys");
}

static void check_name(const char *name, const char *what) {
  FUZZ_CHECK(name && proto_name_valid(name, strlen(name)), "%s \"%s\" accepted", what,
             name ? name : "(null)");
}

static void check_arg(const proto_arg_t *a, uint32_t i) {
  switch (a->kind) {
    case PTO_ARG_BUFFER:
      check_name(a->buffer, "a buffer argument's name");
      FUZZ_CHECK(a->bytes <= PROTO_BYTES_MAX && a->offset <= PROTO_BYTES_MAX &&
                     (a->bytes != 0 || a->offset == 0),
                 "args[%u]: buffer slice %llu+%llu", i, (unsigned long long)a->offset,
                 (unsigned long long)a->bytes);
      break;
    case PTO_ARG_INPUT:
    case PTO_ARG_INOUT:
      FUZZ_CHECK(a->data.ptr != NULL, "args[%u]: data without bytes", i);
      break;
    case PTO_ARG_OUTPUT:
      FUZZ_CHECK(a->bytes <= PROTO_BYTES_MAX, "args[%u]: out %llu", i,
                 (unsigned long long)a->bytes);
      break;
    case PTO_ARG_INT:
    case PTO_ARG_FLOAT: break;
    default: FUZZ_CHECK(0, "args[%u]: kind %d", i, (int)a->kind);
  }
}

/* A keyword is accepted only as itself: "in" or "inout", not "in\0junk". */
static void check_dir_words(const msgpack_object *params) {
  for (uint32_t i = 0; i < params->via.map.size; i++) {
    const msgpack_object *k = &params->via.map.ptr[i].key, *v = &params->via.map.ptr[i].val;
    if (k->type != MSGPACK_OBJECT_STR || k->via.str.size != 4 || memcmp(k->via.str.ptr, "args", 4))
      continue;
    for (uint32_t a = 0; a < v->via.array.size; a++) {
      const msgpack_object *arg = &v->via.array.ptr[a];
      for (uint32_t j = 0; j < arg->via.map.size; j++) {
        const msgpack_object *ak = &arg->via.map.ptr[j].key, *av = &arg->via.map.ptr[j].val;
        if (ak->via.str.size != 3 || memcmp(ak->via.str.ptr, "dir", 3) != 0 ||
            av->type != MSGPACK_OBJECT_STR)
          continue;
        FUZZ_CHECK(fuzz_known("dir-nul") ||
                       (av->via.str.size == 2 && memcmp(av->via.str.ptr, "in", 2) == 0) ||
                       (av->via.str.size == 5 && memcmp(av->via.str.ptr, "inout", 5) == 0),
                   "args[%u]: dir \"%.*s\" (%u bytes) accepted", a, (int)av->via.str.size,
                   av->via.str.ptr, av->via.str.size);
      }
    }
  }
}

static void check_params(proto_method_t m, const proto_params_t *p, const msgpack_object *wire) {
  switch (m) {
    case PROTO_M_DISPATCH:
      check_dir_words(wire);
      check_name(p->dispatch.program, "program");
      FUZZ_CHECK(p->dispatch.nargs == 0 || p->dispatch.args, "args missing");
      for (uint32_t i = 0; i < p->dispatch.nargs; i++) check_arg(&p->dispatch.args[i], i);
      check_config(&p->dispatch.config);
      FUZZ_CHECK(p->dispatch.deadline_ms >= PROTO_UNSET, "deadline_ms %lld",
                 (long long)p->dispatch.deadline_ms);
      break;
    case PROTO_M_BUFFER_ALLOC:
      check_name(p->buffer_alloc.name, "buffer.alloc name");
      FUZZ_CHECK(p->buffer_alloc.bytes >= 1 && p->buffer_alloc.bytes <= PROTO_BYTES_MAX,
                 "bytes %llu", (unsigned long long)p->buffer_alloc.bytes);
      FUZZ_CHECK(!p->buffer_alloc.init.ptr || p->buffer_alloc.init.len == p->buffer_alloc.bytes,
                 "init of %zu bytes for bytes %llu", p->buffer_alloc.init.len,
                 (unsigned long long)p->buffer_alloc.bytes);
      break;
    case PROTO_M_BUFFER_WRITE:
      check_name(p->buffer_write.name, "buffer.write name");
      FUZZ_CHECK(p->buffer_write.offset <= PROTO_BYTES_MAX && p->buffer_write.data.ptr,
                 "buffer.write offset %llu", (unsigned long long)p->buffer_write.offset);
      break;
    case PROTO_M_BUFFER_READ:
      check_name(p->buffer_read.name, "buffer.read name");
      FUZZ_CHECK(p->buffer_read.offset <= PROTO_BYTES_MAX &&
                     p->buffer_read.bytes <= PROTO_BYTES_MAX,
                 "buffer.read %llu+%llu", (unsigned long long)p->buffer_read.offset,
                 (unsigned long long)p->buffer_read.bytes);
      break;
    case PROTO_M_BUFFER_FREE: check_name(p->buffer_free.name, "buffer.free name"); break;
    case PROTO_M_PREWARM: check_config(&p->prewarm.config); break;
    default: break;
  }
}

/* Encode the decoded params as a request; return it in sb. */
static void encode(proto_method_t m, const proto_params_t *p, msgpack_sbuffer *sb) {
  int rc;
  msgpack_sbuffer_init(sb);
  rc = proto_encode_request(sb, 7, m, p);
  FUZZ_CHECK(rc == 0, "proto_encode_request(%s) failed: %d", proto_method_name(m), rc);
}

static void round_trip(proto_method_t m, const proto_params_t *p) {
  msgpack_sbuffer first, second;
  msgpack_unpacked up;
  proto_envelope_t env;
  proto_params_t again;
  pto_error_t err;
  int rc;

  encode(m, p, &first);
  msgpack_unpacked_init(&up);
  pto_error_clear(&err);
  rc = proto_decode(first.data, first.size, &up, &env, &err);
  FUZZ_CHECK(rc == 0, "the client's %s request does not decode: %s", proto_method_name(m),
             err.message);
  FUZZ_CHECK(proto_method_from_name(env.method, env.method_len) == (int)m, "method changed");
  rc = proto_params_decode(m, env.params, up.zone, &again, &err);
  if (rc < 0) fuzz_dump("re-encoded request", first.data, first.size);
  FUZZ_CHECK(rc == 0, "accepted %s params, re-encoded, are rejected: %s", proto_method_name(m),
             err.message);
  encode(m, &again, &second);
  if (!fuzz_same_bytes(first.data, first.size, second.data, second.size)) {
    fuzz_dump("first encoding", first.data, first.size);
    fuzz_dump("second encoding", second.data, second.size);
  }
  FUZZ_CHECK(fuzz_same_bytes(first.data, first.size, second.data, second.size),
             "%s params: encode(decode(encode(x))) differs from encode(x)", proto_method_name(m));
  msgpack_sbuffer_destroy(&second);
  msgpack_unpacked_destroy(&up);
  msgpack_sbuffer_destroy(&first);
}

static void decode_request(const uint8_t *msg, size_t len, int method) {
  msgpack_unpacked up;
  proto_envelope_t env;
  proto_params_t params;
  pto_error_t err;
  int rc;

  msgpack_unpacked_init(&up);
  pto_error_clear(&err);
  rc = proto_decode(msg, len, &up, &env, &err);
  if (rc < 0 || env.type != PROTO_MSG_REQUEST) goto out;
  if (method < 0) method = proto_method_from_name(env.method, env.method_len);
  if (method < 0) goto out;
  FUZZ_CHECK(proto_method_from_name(env.method, env.method_len) == method, "wrong method");

  pto_error_clear(&err);
  rc = proto_params_decode((proto_method_t)method, env.params, up.zone, &params, &err);
  if (rc == -PTO_E_INTERNAL) goto out; /* out of memory */
  if (rc < 0) {
    fuzz_check_error(rc, &err, "proto_params_decode");
    FUZZ_CHECK(rc == -PTO_E_INVALID_REQUEST || rc == -PTO_E_INVALID_CONFIG,
               "proto_params_decode returned %d", rc);
    if (rc == -PTO_E_INVALID_CONFIG)
      FUZZ_CHECK(err.key[0] != '\0', "INVALID_CONFIG without a key: %s", err.message);
    goto out;
  }
  check_params((proto_method_t)method, &params, env.params);
  round_trip((proto_method_t)method, &params);
out:
  msgpack_unpacked_destroy(&up);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *msg;
  const char *name;
  size_t nlen, len;
  int method;

  if (size < 1) return 0;
  if (data[0] & 0x80) {
    decode_request(data + 1, size - 1, -1);
    return 0;
  }
  method = data[0] % PROTO_M_COUNT;
  name = proto_method_name((proto_method_t)method);
  nlen = strlen(name);
  /* 94 00 07 a<n> name 91 rest */
  len = 3 + 1 + nlen + 1 + (size - 1);
  msg = malloc(len);
  msg[0] = 0x94;
  msg[1] = 0x00;
  msg[2] = 0x07;
  msg[3] = (uint8_t)(0xa0 | nlen);
  memcpy(msg + 4, name, nlen);
  msg[4 + nlen] = 0x91;
  memcpy(msg + 5 + nlen, data + 1, size - 1);
  decode_request(msg, len, method);
  free(msg);
  return 0;
}
