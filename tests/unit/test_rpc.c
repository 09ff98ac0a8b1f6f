/* SPDX-License-Identifier: Apache-2.0 */
/* msgpack-RPC envelopes and error maps (proto/rpc.h): exact wire shapes,
 * round trips, and the answerable-vs-unparseable classification. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "msgpack_build.h"
#include "reader.h"
#include "rpc.h"

typedef struct msg {
  msgpack_sbuffer sb;
  msgpack_unpacked up;
  proto_envelope_t env;
  pto_error_t err;
  int rc;
} msg_t;

static void msg_decode_bytes(msg_t *m) {
  msgpack_unpacked_init(&m->up);
  pto_error_clear(&m->err);
  m->rc = proto_decode(m->sb.data, m->sb.size, &m->up, &m->env, &m->err);
}

static void msg_decode(msg_t *m, const char *text) {
  m->sb = mb_build(text);
  msg_decode_bytes(m);
}

static void msg_free(msg_t *m) {
  msgpack_unpacked_destroy(&m->up);
  msgpack_sbuffer_destroy(&m->sb);
}

static const char *printed(const msgpack_sbuffer *sb) {
  static char buf[4096];
  return mb_print_bytes(sb->data, sb->size, buf, sizeof(buf));
}

/* A zone sized and held by the caller: the message decodes into it, and
 * proto_zone_bytes counts every chunk it has and grew (daemon/request.c
 * charges a pending request with it). */
START_TEST(decode_into_a_sized_zone) {
  msg_t m;
  msgpack_zone zone, *z = &zone;
  size_t first;
  m.sb = mb_build("[0, 3, \"status\", [{\"a\": 1, \"b\": [1, 2, 3]}]]");
  msgpack_unpacked_init(&m.up);
  ck_assert(proto_zone_init(z, 12, 64));
  first = proto_zone_bytes(z);
  ck_assert_uint_ge(first, 12 * sizeof(msgpack_object) + 64);
  ck_assert_uint_lt(first, 1024); /* not msgpack-c's 2 x 8 KiB */
  m.up.zone = z;
  m.rc = proto_decode(m.sb.data, m.sb.size, &m.up, &m.env, &m.err);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_ptr_eq(m.up.zone, z);
  ck_assert_uint_eq(m.env.msgid, 3);
  ck_assert_int_eq(m.env.params->type, MSGPACK_OBJECT_MAP);
  ck_assert_uint_eq(m.env.params->via.map.ptr[1].val.via.array.size, 3);
  ck_assert_uint_eq(proto_zone_bytes(z), first); /* it fit */
  ck_assert_ptr_nonnull(msgpack_zone_malloc(z, 4096));
  ck_assert_uint_ge(proto_zone_bytes(z), first + 4096); /* a chunk more, counted */
  ck_assert_uint_eq(proto_zone_bytes(NULL), 0);
  m.up.zone = NULL; /* the test's own zone: destroyed, not freed */
  msgpack_zone_destroy(z);
  msg_free(&m);
}
END_TEST

START_TEST(request_round_trip) {
  msg_t m;
  msgpack_packer pk;
  msgpack_sbuffer_init(&m.sb);
  msgpack_packer_init(&pk, &m.sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_request_begin(&pk, 4294967295u, "buffer.list"), 0);
  ck_assert_int_eq(msgpack_pack_array(&pk, 0), 0);
  ck_assert_str_eq(printed(&m.sb), "[0, 4294967295, \"buffer.list\", []]");
  msg_decode_bytes(&m);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_int_eq(m.env.type, PROTO_MSG_REQUEST);
  ck_assert_uint_eq(m.env.msgid, 4294967295u);
  ck_assert(proto_envelope_method_is(&m.env, "buffer.list"));
  ck_assert(!proto_envelope_method_is(&m.env, "buffer.lis"));
  ck_assert_ptr_null(m.env.params);
  msg_free(&m);

  msg_decode(&m, "[0, 9, \"status\", [{\"a\": 1}]]");
  ck_assert_int_eq(m.rc, 0);
  ck_assert_ptr_nonnull(m.env.params);
  ck_assert_int_eq(m.env.params->type, MSGPACK_OBJECT_MAP);
  ck_assert_uint_eq(m.env.params->via.map.size, 1);
  msg_free(&m);
}
END_TEST

START_TEST(response_round_trip) {
  msg_t m;
  msgpack_packer pk;
  msgpack_sbuffer_init(&m.sb);
  msgpack_packer_init(&pk, &m.sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_response_begin(&pk, 12), 0);
  ck_assert_int_eq(msgpack_pack_str_with_body(&pk, "ok", 2), 0);
  ck_assert_str_eq(printed(&m.sb), "[1, 12, nil, \"ok\"]");
  msg_decode_bytes(&m);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_int_eq(m.env.type, PROTO_MSG_RESPONSE);
  ck_assert_uint_eq(m.env.msgid, 12);
  ck_assert_ptr_null(m.env.error);
  ck_assert_int_eq(m.env.result->type, MSGPACK_OBJECT_STR);
  msg_free(&m);
}
END_TEST

START_TEST(error_response_without_detail) {
  msg_t m;
  pto_error_t err, back;
  pto_error_set(&err, PTO_E_UNKNOWN_METHOD, "No method 'pnig'; see 'ptoctl --help'.");
  msgpack_sbuffer_init(&m.sb);
  ck_assert_int_eq(proto_encode_error_response(&m.sb, 3, &err), 0);
  ck_assert_str_eq(printed(&m.sb),
                   "[1, 3, {\"code\": 1002, \"name\": \"UNKNOWN_METHOD\", "
                   "\"message\": \"No method 'pnig'; see 'ptoctl --help'.\"}, nil]");
  msg_decode_bytes(&m);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_ptr_nonnull(m.env.error);
  ck_assert_int_eq(m.env.result->type, MSGPACK_OBJECT_NIL);
  ck_assert_int_eq(proto_error_decode(m.env.error, &back), 0);
  ck_assert_int_eq(back.code, PTO_E_UNKNOWN_METHOD);
  ck_assert_str_eq(back.message, err.message);
  ck_assert_int_eq(back.ring, PTO_NO_RING);
  ck_assert_uint_eq(back.requested, 0);
  ck_assert_str_eq(back.hint, "");
  ck_assert_str_eq(back.key, "");
  msg_free(&m);
}
END_TEST

START_TEST(error_response_with_detail) {
  msg_t m;
  msgpack_packer pk;
  pto_error_t err, back;
  pto_error_set(&err, PTO_E_HEAP_RING_DEADLOCK, "Ring 1 needs 4096 bytes of heap.");
  err.ring = 1;
  err.requested = 4096;
  err.capacity = 2048;
  snprintf(err.hint, sizeof(err.hint), "raise ring_heap[1] to 4096");
  snprintf(err.key, sizeof(err.key), "ring_heap");
  msgpack_sbuffer_init(&m.sb);
  msgpack_packer_init(&pk, &m.sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_response_error(&pk, 8, &err), 0);
  ck_assert_str_eq(printed(&m.sb),
                   "[1, 8, {\"code\": 2, \"name\": \"HEAP_RING_DEADLOCK\", \"message\": \"Ring 1 "
                   "needs 4096 bytes of heap.\", \"ring\": 1, \"requested\": 4096, \"capacity\": "
                   "2048, \"hint\": \"raise ring_heap[1] to 4096\", \"key\": \"ring_heap\"}, nil]");
  msg_decode_bytes(&m);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_int_eq(proto_error_decode(m.env.error, &back), 0);
  /* field by field: a cleared error's text ends at its first byte */
  ck_assert_int_eq(back.code, err.code);
  ck_assert_int_eq(back.ring, err.ring);
  ck_assert_uint_eq(back.requested, err.requested);
  ck_assert_uint_eq(back.capacity, err.capacity);
  ck_assert_str_eq(back.message, err.message);
  ck_assert_str_eq(back.hint, err.hint);
  ck_assert_str_eq(back.key, err.key);
  msg_free(&m);
}
END_TEST

START_TEST(error_map_detail_rules) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  pto_error_t err;
  /* requested/capacity without a ring (e.g. OUT_OF_MEMORY); default message */
  pto_error_clear(&err);
  err.code = PTO_E_OUT_OF_MEMORY;
  err.requested = 10;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_error_map(&pk, &err), 0);
  ck_assert_str_eq(printed(&sb),
                   "{\"code\": 1007, \"name\": \"OUT_OF_MEMORY\", \"message\": \"The "
                   "device memory limit would be exceeded.\", \"requested\": 10, "
                   "\"capacity\": 0}");
  /* ring 0 is a ring: the amounts go with it even when 0 */
  msgpack_sbuffer_clear(&sb);
  pto_error_set(&err, PTO_E_SCOPE_DEADLOCK, "m");
  err.ring = 0;
  ck_assert_int_eq(proto_pack_error_map(&pk, &err), 0);
  ck_assert_str_eq(printed(&sb),
                   "{\"code\": 1, \"name\": \"SCOPE_DEADLOCK\", \"message\": \"m\", "
                   "\"ring\": 0, \"requested\": 0, \"capacity\": 0}");
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(error_notification) {
  msg_t m;
  msgpack_packer pk;
  pto_error_t err, back;
  pto_error_set(&err, PTO_E_INVALID_REQUEST, "The message is not valid msgpack.");
  msgpack_sbuffer_init(&m.sb);
  ck_assert_int_eq(proto_encode_error_notification(&m.sb, &err), 0);
  ck_assert_str_eq(printed(&m.sb),
                   "[2, \"error\", [{\"code\": 1000, \"name\": \"INVALID_REQUEST\", "
                   "\"message\": \"The message is not valid msgpack.\"}]]");
  msg_decode_bytes(&m);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_int_eq(m.env.type, PROTO_MSG_NOTIFICATION);
  ck_assert(proto_envelope_method_is(&m.env, "error"));
  ck_assert_int_eq(proto_error_decode(m.env.params, &back), 0);
  ck_assert_int_eq(back.code, PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(back.message, err.message);
  msg_free(&m);

  msgpack_sbuffer_init(&m.sb);
  msgpack_packer_init(&pk, &m.sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_notification_begin(&pk, "progress"), 0);
  mb_pack(&m.sb, "[]");
  ck_assert_str_eq(printed(&m.sb), "[2, \"progress\", []]");
  msgpack_sbuffer_destroy(&m.sb);
}
END_TEST

START_TEST(error_decode_is_lenient) {
  msg_t m;
  pto_error_t e;
  msg_decode(&m,
             "[1, 1, {\"name\": \"BUSY\", \"future\": [1, {\"x\": 2}], \"ring\": \"no\"}, nil]");
  ck_assert_int_eq(m.rc, 0);
  ck_assert_int_eq(proto_error_decode(m.env.error, &e), 0);
  ck_assert_int_eq(e.code, PTO_E_BUSY);
  ck_assert_str_eq(e.message, "The admission queue is full; retry later.");
  ck_assert_int_eq(e.ring, PTO_NO_RING);
  msg_free(&m);

  /* a code this client does not know yet is kept */
  msg_decode(&m, "[1, 1, {\"code\": 1500, \"name\": \"NEW_THING\", \"message\": \"New.\"}, nil]");
  ck_assert_int_eq(proto_error_decode(m.env.error, &e), 0);
  ck_assert_int_eq(e.code, 1500);
  ck_assert_str_eq(e.message, "New.");
  msg_free(&m);

  /* an unknown code without a message still reads as a sentence, and the
   * same one goes back out when it is re-encoded */
  msg_decode(&m, "[1, 1, {\"code\": 77}, nil]");
  ck_assert_int_eq(proto_error_decode(m.env.error, &e), 0);
  ck_assert_int_eq(e.code, 77);
  ck_assert_str_eq(e.message, "Unknown error (the sender gave no message).");
  msg_free(&m);
  {
    pto_error_t bare, again;
    msgpack_sbuffer sb;
    msgpack_packer pk;
    msgpack_unpacked u;
    pto_error_clear(&bare);
    bare.code = 77;
    msgpack_sbuffer_init(&sb);
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    ck_assert_int_eq(proto_pack_error_map(&pk, &bare), 0);
    msgpack_unpacked_init(&u);
    ck_assert_int_eq(msgpack_unpack_next(&u, sb.data, sb.size, NULL), MSGPACK_UNPACK_SUCCESS);
    ck_assert_int_eq(proto_error_decode(&u.data, &again), 0);
    ck_assert_str_eq(again.message, e.message);
    msgpack_unpacked_destroy(&u);
    msgpack_sbuffer_destroy(&sb);
  }

  msg_decode(&m, "[1, 1, {\"message\": \"?\"}, nil]");
  ck_assert_int_eq(proto_error_decode(m.env.error, &e), -PTO_E_INVALID_REQUEST);
  ck_assert_int_eq(e.code, PTO_E_INTERNAL);
  ck_assert_str_eq(e.message,
                   "The peer sent an error map without a usable code or name; it does "
                   "not speak ptod's protocol version 1.");
  ck_assert_int_eq(proto_error_decode(m.env.result, &e), -PTO_E_INVALID_REQUEST);
  ck_assert_int_eq(e.code, PTO_E_INTERNAL);
  msg_free(&m);

  /* libptoclient's own names share the table but are never sent: a peer
   * naming one has given no usable name */
  msg_decode(&m, "[1, 1, {\"name\": \"CONNECTION_LOST\"}, nil]");
  ck_assert_int_eq(proto_error_decode(m.env.error, &e), -PTO_E_INVALID_REQUEST);
  ck_assert_int_eq(e.code, PTO_E_INTERNAL);
  msg_free(&m);
}
END_TEST

static const struct {
  const char *text;
  bool answerable;
  bool has_msgid;
  uint32_t msgid;
  const char *message;
} bad_messages[] = {
    {"[0, 5, 7, []]", true, true, 5,
     "The method must be a string, got 7; check the sender's encoder."},
    {"[0, 5, \"ping\", {}]", true, true, 5,
     "params must be [] or [map] (one map of named parameters), got a map of 0; check the "
     "sender's encoder."},
    {"[0, 5, \"ping\", [1]]", true, true, 5,
     "params must be [] or [map] (one map of named parameters), got 1; check the sender's "
     "encoder."},
    {"[0, 5, \"ping\", [{}, {}]]", true, true, 5,
     "params must be [] or [map] (one map of named parameters), got an array of 2; check the "
     "sender's encoder."},
    {"[0, 5, \"ping\"]", true, true, 5,
     "A request must be [0, msgid, method, params] (4 elements), got 3 elements; check the "
     "sender's encoder."},
    {"[0, 5, \"ping\", [], nil]", true, true, 5,
     "A request must be [0, msgid, method, params] (4 elements), got 5 elements; check the "
     "sender's encoder."},
    {"[0, -1, \"ping\", []]", false, false, 0,
     "A request's msgid must be an unsigned 32-bit integer, got -1; check the sender's encoder."},
    {"[0, 4294967296, \"ping\", []]", false, false, 0,
     "A request's msgid must be an unsigned 32-bit integer, got 4294967296; check the sender's "
     "encoder."},
    {"[0, \"5\", \"ping\", []]", false, false, 0,
     "A request's msgid must be an unsigned 32-bit integer, got \"5\"; check the sender's "
     "encoder."},
    {"[0]", false, false, 0,
     "A request must be [0, msgid, method, params] (4 elements), got 1 elements; check the "
     "sender's encoder."},
    {"{\"a\": 1}", false, false, 0,
     "A msgpack-RPC message must be an array [type, ...], got a map of 1; check the sender's "
     "encoder."},
    {"[]", false, false, 0,
     "A msgpack-RPC message must be an array [type, ...], got an array of 0; check the sender's "
     "encoder."},
    {"\"hello\"", false, false, 0,
     "A msgpack-RPC message must be an array [type, ...], got \"hello\"; check the sender's "
     "encoder."},
    {"[3, 1, \"x\", []]", false, false, 0,
     "A msgpack-RPC message must start with 0 (request), 1 (response) or 2 (notification), got "
     "3; check the sender's encoder."},
    {"[1, 5, \"boom\", nil]", false, true, 5,
     "A response's error must be nil or a map, got \"boom\"; check the sender's encoder."},
    {"[1, 5, nil]", false, true, 5,
     "A response must be [1, msgid, error, result] (4 elements), got 3 elements; check the "
     "sender's encoder."},
    {"[2, 5, []]", false, false, 0,
     "The method must be a string, got 5; check the sender's encoder."},
    {"[2, \"x\", [], 1]", false, false, 0,
     "A notification must be [2, method, params] (3 elements), got 4 elements; check the sender's "
     "encoder."},
    {"[0, 1, \"ping\", []] nil", false, false, 0,
     "The message has 1 bytes after its end; send one msgpack object per message."},
    {"raw(94 00 01)", false, false, 0,
     "The message is truncated: its 3 bytes do not hold a whole msgpack object; check the "
     "sender's encoder."},
    /* without a reader in front: the claim is checked against the bytes there are */
    {"raw(dd ff ff ff ff)", false, false, 0,
     "The message is truncated: its 5 bytes do not hold a whole msgpack object; check the "
     "sender's encoder."},
    {"raw(94 00 01 c1 90)", false, false, 0,
     "The message holds the reserved byte 0xc1 at byte 3, which is not valid msgpack; check the "
     "sender's encoder."},
};

START_TEST(classification) {
  size_t i = (size_t)_i;
  msg_t m;
  msg_decode(&m, bad_messages[i].text);
  ck_assert_msg(m.rc == -PTO_E_INVALID_REQUEST, "%s: rc %d", bad_messages[i].text, m.rc);
  ck_assert_int_eq(m.err.code, PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(m.err.message, bad_messages[i].message);
  ck_assert_msg(m.env.answerable == bad_messages[i].answerable, "%s", bad_messages[i].text);
  ck_assert_msg(m.env.has_msgid == bad_messages[i].has_msgid, "%s", bad_messages[i].text);
  if (bad_messages[i].has_msgid) ck_assert_uint_eq(m.env.msgid, bad_messages[i].msgid);
  msg_free(&m);
}
END_TEST

/* What proto_decode_delimited (the daemon's path, after its reader) says
 * about every message of the table a reader delimits whole: the same as
 * proto_decode, which walks the structure itself first. */
START_TEST(delimited_classifies_the_same) {
  size_t i = (size_t)_i, len = 0;
  proto_reader_t r;
  msg_t m, d;
  msg_decode(&m, bad_messages[i].text);
  proto_reader_init(&r, 4096);
  if (proto_reader_feed(&r, m.sb.data, m.sb.size, &len, NULL) != 1 || len != m.sb.size) {
    msg_free(&m); /* the reader stops it: proto_decode's own check covers it */
    return;
  }
  msgpack_unpacked_init(&d.up);
  pto_error_clear(&d.err);
  d.rc = proto_decode_delimited(m.sb.data, m.sb.size, &d.up, &d.env, &d.err);
  ck_assert_int_eq(d.rc, m.rc);
  ck_assert_str_eq(d.err.message, m.err.message);
  ck_assert(d.env.answerable == m.env.answerable);
  ck_assert(d.env.has_msgid == m.env.has_msgid);
  ck_assert_uint_eq(d.env.msgid, m.env.msgid);
  msgpack_unpacked_destroy(&d.up);
  msg_free(&m);
}
END_TEST

START_TEST(delimited_request) {
  msg_t m;
  m.sb = mb_build("[0, 9, \"dispatch\", [{\"program\": \"noop\"}]]");
  msgpack_unpacked_init(&m.up);
  m.rc = proto_decode_delimited(m.sb.data, m.sb.size, &m.up, &m.env, &m.err);
  ck_assert_int_eq(m.rc, 0);
  ck_assert_int_eq(m.env.type, PROTO_MSG_REQUEST);
  ck_assert_uint_eq(m.env.msgid, 9);
  ck_assert(proto_envelope_method_is(&m.env, "dispatch"));
  ck_assert_uint_eq(m.env.params->via.map.size, 1);
  msg_free(&m);
}
END_TEST

START_TEST(depth_33_unparseable) {
  msg_t m;
  char deep[40];
  memset(deep, 0x91, 32);
  deep[32] = (char)0x90;
  msgpack_sbuffer_init(&m.sb);
  msgpack_sbuffer_write(&m.sb, deep, 33);
  msg_decode_bytes(&m);
  ck_assert_int_eq(m.rc, -PTO_E_INVALID_REQUEST);
  ck_assert(!m.env.answerable);
  ck_assert_str_eq(m.err.message,
                   "The message nests containers more than 32 deep (at byte 32); "
                   "send a flatter message.");
  msg_free(&m);
}
END_TEST

/* Reserving first means packing a large bin body copies it once, into a
 * buffer that never moves. */
START_TEST(reserve_then_pack_does_not_reallocate) {
  const size_t n = 8u << 20;
  char *body = calloc(1, n);
  msgpack_sbuffer sb;
  msgpack_packer pk;
  const char *before;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_response_begin(&pk, 1), 0);
  ck_assert_int_eq(proto_sbuffer_reserve(&sb, n + 16), 0);
  before = sb.data;
  ck_assert_int_eq(msgpack_pack_bin_with_body(&pk, body, n), 0);
  ck_assert_ptr_eq(sb.data, before);
  ck_assert_uint_eq(sb.size, 4 + 5 + n);
  ck_assert_int_eq(proto_sbuffer_reserve(&sb, 0), 0);
  ck_assert_int_eq(proto_sbuffer_reserve(&sb, SIZE_MAX), -ENOMEM);
  msgpack_sbuffer_destroy(&sb);
  free(body);
}
END_TEST

/* A name someone sent, in a message: escaped, "..." after a cut, within
 * the buffer whatever the escaping costs. */
START_TEST(show_text) {
  char buf[16];
  proto_show_text("abc", 3, 8, buf, sizeof(buf));
  ck_assert_str_eq(buf, "abc");
  proto_show_text("abcdefghij", 10, 4, buf, sizeof(buf));
  ck_assert_str_eq(buf, "abcd...");
  proto_show_text("a\"b", 3, 8, buf, sizeof(buf));
  ck_assert_str_eq(buf, "a\\\"b");
  /* cut by the room, not max_shown: 3 escapes of 4 bytes fit in 16 - 3 */
  proto_show_text("\x01\x01\x01\x01\x01", 5, 64, buf, sizeof(buf));
  ck_assert_str_eq(buf, "\\x01\\x01\\x01...");
  proto_show_text("abc", 3, 8, buf, 3);
  ck_assert_str_eq(buf, "");
}
END_TEST

START_TEST(describe_values) {
  static const struct {
    const char *text, *shown;
  } cases[] = {
      {"nil", "nil"},
      {"true", "true"},
      {"-3", "-3"},
      {"1.5", "1.5"},
      {"b\"abc\"", "a bin of 3 bytes"},
      {"[1, 2]", "an array of 2"},
      {"{}", "a map of 0"},
      {"\"0123456789012345678901234567890123456789xyz\"",
       "\"0123456789012345678901234567890123456789...\""},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    msgpack_sbuffer sb = mb_build(cases[i].text);
    msgpack_unpacked up;
    size_t off = 0;
    char buf[64];
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(msgpack_unpack_next(&up, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
    proto_describe(&up.data, buf, sizeof(buf));
    ck_assert_str_eq(buf, cases[i].shown);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
  }
}
END_TEST

static Suite *rpc_suite(void) {
  Suite *s = suite_create("rpc");
  TCase *tc = tcase_create("rpc");
  tcase_add_test(tc, request_round_trip);
  tcase_add_test(tc, response_round_trip);
  tcase_add_test(tc, error_response_without_detail);
  tcase_add_test(tc, error_response_with_detail);
  tcase_add_test(tc, error_map_detail_rules);
  tcase_add_test(tc, error_notification);
  tcase_add_test(tc, error_decode_is_lenient);
  tcase_add_loop_test(tc, classification, 0, (int)(sizeof(bad_messages) / sizeof(bad_messages[0])));
  tcase_add_loop_test(tc, delimited_classifies_the_same, 0,
                      (int)(sizeof(bad_messages) / sizeof(bad_messages[0])));
  tcase_add_test(tc, delimited_request);
  tcase_add_test(tc, depth_33_unparseable);
  tcase_add_test(tc, reserve_then_pack_does_not_reallocate);
  tcase_add_test(tc, decode_into_a_sized_zone);
  tcase_add_test(tc, describe_values);
  tcase_add_test(tc, show_text);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(rpc_suite)
