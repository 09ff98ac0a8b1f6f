/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz proto_result_decode, the client's side of every method
 * (proto/methods.h), reached as the client reaches it: proto_decode on the
 * response first.
 *
 * Input: [selector] rest...
 *   the method is selector % 16 (12..15 wrap onto 0..3);
 *   selector & 0x80 clear: rest is one msgpack object, the result, wrapped
 *     as [1, 9, nil, rest];
 *   selector & 0x80 set: rest is a whole response message (an error map
 *     then goes through proto_error_decode, as the client does).
 *
 * Checked:
 *   - a failure is INVALID_REQUEST with a message;
 *   - what is accepted is what the daemon could have sent: encoded again
 *     with the daemon's encoder (proto_encode_response) it decodes again
 *     and encodes to the same bytes; every sizing source is a known one and
 *     every list holds its count of entries;
 *   - an error map decodes to a code > 0 and a message, or to an INTERNAL
 *     explanation.
 */
#include <pto/sizing.h>

#include "fuzz_common.h"
#include "methods.h"
#include "rpc.h"

static void encode(proto_method_t m, const proto_result_t *res, msgpack_sbuffer *sb) {
  int rc;
  msgpack_sbuffer_init(sb);
  rc = proto_encode_response(sb, 9, m, res);
  FUZZ_CHECK(rc == 0, "proto_encode_response(%s) failed: %d", proto_method_name(m), rc);
}

static void check_result(proto_method_t m, const proto_result_t *res) {
  switch (m) {
    case PROTO_M_DISPATCH:
      FUZZ_CHECK(res->dispatch.noutputs == 0 || res->dispatch.outputs, "outputs missing");
      for (int f = 0; f < PTO_FIELD_COUNT; f++)
        for (int r = 0; r < PTO_RING_COUNT; r++)
          FUZZ_CHECK(res->dispatch.sizing.source[f][r] <= PTO_SOURCE_REQUEST, "source %u",
                     res->dispatch.sizing.source[f][r]);
      break;
    case PROTO_M_PROGRAMS:
      FUZZ_CHECK(res->programs.count == 0 || res->programs.programs, "programs missing");
      for (uint32_t i = 0; i < res->programs.count; i++) {
        const proto_program_info_t *p = &res->programs.programs[i];
        FUZZ_CHECK(p->name && p->description && (p->nargs == 0 || p->args), "program %u", i);
        for (uint32_t a = 0; a < p->nargs; a++)
          FUZZ_CHECK(p->args[a].name && p->args[a].kind && p->args[a].doc &&
                         (p->args[a].optional == 0 || p->args[a].optional == 1),
                     "program %u arg %u", i, a);
      }
      break;
    case PROTO_M_BUFFER_LIST:
      FUZZ_CHECK(res->buffer_list.count == 0 || res->buffer_list.buffers, "buffers missing");
      for (uint32_t i = 0; i < res->buffer_list.count; i++)
        FUZZ_CHECK(res->buffer_list.buffers[i].name, "buffer %u without a name", i);
      break;
    case PROTO_M_METRICS:
      FUZZ_CHECK(res->metrics.text && res->metrics.text[res->metrics.len] == '\0',
                 "metrics text not terminated at its length");
      break;
    case PROTO_M_BUFFER_READ: FUZZ_CHECK(res->buffer_read.ptr, "buffer.read without bytes"); break;
    case PROTO_M_PING:
      FUZZ_CHECK(res->ping.version && res->ping.state, "ping without version or state");
      break;
    case PROTO_M_STATUS:
      FUZZ_CHECK(res->status.platform && res->status.version && res->status.state,
                 "status strings missing");
      FUZZ_CHECK(res->status.arena.prewarm.first_dispatch_hit >= PROTO_UNSET &&
                     res->status.arena.prewarm.first_dispatch_hit <= 1,
                 "first_dispatch_hit %d", res->status.arena.prewarm.first_dispatch_hit);
      break;
    case PROTO_M_ADVISE: FUZZ_CHECK(res->advise.config, "advise without config"); break;
    default: break;
  }
}

static void round_trip(proto_method_t m, const proto_result_t *res) {
  msgpack_sbuffer first, second;
  msgpack_unpacked up;
  proto_envelope_t env;
  proto_result_t again;
  pto_error_t err;
  int rc;

  encode(m, res, &first);
  msgpack_unpacked_init(&up);
  pto_error_clear(&err);
  rc = proto_decode(first.data, first.size, &up, &env, &err);
  FUZZ_CHECK(rc == 0 && env.type == PROTO_MSG_RESPONSE && !env.error,
             "the daemon's %s response does not decode: %s", proto_method_name(m), err.message);
  rc = proto_result_decode(m, env.result, up.zone, &again, &err);
  if (rc < 0) fuzz_dump("re-encoded response", first.data, first.size);
  FUZZ_CHECK(rc == 0, "an accepted %s result, re-encoded, is rejected: %s", proto_method_name(m),
             err.message);
  encode(m, &again, &second);
  if (!fuzz_same_bytes(first.data, first.size, second.data, second.size)) {
    fuzz_dump("first encoding", first.data, first.size);
    fuzz_dump("second encoding", second.data, second.size);
  }
  FUZZ_CHECK(fuzz_same_bytes(first.data, first.size, second.data, second.size),
             "%s result: encode(decode(encode(x))) differs from encode(x)", proto_method_name(m));
  msgpack_sbuffer_destroy(&second);
  msgpack_unpacked_destroy(&up);
  msgpack_sbuffer_destroy(&first);
}

static void check_error_map(const msgpack_object *map) {
  pto_error_t e;
  int rc = proto_error_decode(map, &e);
  if (rc < 0)
    FUZZ_CHECK(rc == -PTO_E_INVALID_REQUEST && e.code == PTO_E_INTERNAL && e.message[0],
               "proto_error_decode: rc %d, code %d", rc, e.code);
  else
    FUZZ_CHECK(e.code > 0 && (e.message[0] || fuzz_known("error-no-message")),
               "proto_error_decode: code %d, message \"%s\"", e.code, e.message);
}

static void decode_response(const uint8_t *msg, size_t len, proto_method_t m) {
  msgpack_unpacked up;
  proto_envelope_t env;
  proto_result_t res;
  pto_error_t err;
  int rc;

  msgpack_unpacked_init(&up);
  pto_error_clear(&err);
  rc = proto_decode(msg, len, &up, &env, &err);
  if (rc < 0 || env.type != PROTO_MSG_RESPONSE) goto out;
  if (env.error) {
    check_error_map(env.error);
    goto out;
  }
  pto_error_clear(&err);
  rc = proto_result_decode(m, env.result, up.zone, &res, &err);
  if (rc == -PTO_E_INTERNAL) goto out; /* out of memory */
  if (rc < 0) {
    fuzz_check_error(rc, &err, "proto_result_decode");
    FUZZ_CHECK(rc == -PTO_E_INVALID_REQUEST, "proto_result_decode returned %d", rc);
    goto out;
  }
  check_result(m, &res);
  round_trip(m, &res);
out:
  msgpack_unpacked_destroy(&up);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  proto_method_t m;
  uint8_t *msg;
  size_t len;

  if (size < 1) return 0;
  m = (proto_method_t)((data[0] & 0x0f) % PROTO_M_COUNT);
  if (data[0] & 0x80) {
    decode_response(data + 1, size - 1, m);
    return 0;
  }
  /* 94 01 09 c0 rest */
  len = 4 + (size - 1);
  msg = malloc(len);
  msg[0] = 0x94;
  msg[1] = 0x01;
  msg[2] = 0x09;
  msg[3] = 0xc0;
  memcpy(msg + 4, data + 1, size - 1);
  decode_response(msg, len, m);
  free(msg);
  return 0;
}
