/* SPDX-License-Identifier: Apache-2.0 */
/* The bounded stream reader (proto/reader.h): complete / need more / error
 * for every split point, limits enforced at the header that breaks them. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "msgpack_build.h"
#include "reader.h"

#define MIB ((size_t)1 << 20)

/* Feed a fresh reader the whole buffer at once. */
static int feed_once(const void *data, size_t len, size_t max, size_t *ret_len, pto_error_t *err) {
  proto_reader_t r;
  proto_reader_init(&r, max);
  return proto_reader_feed(&r, data, len, ret_len, err);
}

/* Every split: a fresh reader first sees `cut` bytes (need more), then the
 * whole message (complete); and one reader fed byte by byte. */
static void check_every_split(const char *data, size_t len, size_t max) {
  size_t got = 0;
  proto_reader_t r;
  pto_error_t err;
  for (size_t cut = 0; cut < len; cut++) {
    proto_reader_init(&r, max);
    ck_assert_int_eq(proto_reader_feed(&r, data, cut, &got, &err), 0);
    ck_assert_int_eq(proto_reader_feed(&r, data, len, &got, &err), 1);
    ck_assert_uint_eq(got, len);
  }
  proto_reader_init(&r, max);
  for (size_t n = 1; n < len; n++) ck_assert_int_eq(proto_reader_feed(&r, data, n, &got, &err), 0);
  ck_assert_int_eq(proto_reader_feed(&r, data, len, &got, &err), 1);
  ck_assert_uint_eq(got, len);
}

START_TEST(request_every_split) {
  msgpack_sbuffer sb = mb_build(
      "[0, 4294967295, \"dispatch\", [{\"program\": \"vector_add\", \"args\": [{\"data\": "
      "bin(300)}, "
      "{\"buffer\": \"kv\", \"offset\": 65536, \"bytes\": 70000}, {\"out\": 1024}, {\"scalar\": "
      "-1.5}], "
      "\"config\": {\"ring_heap\": [1048576, 0, 0, 0], \"enable_dep_gen\": true, \"x\": nil}}]]");
  check_every_split(sb.data, sb.size, 64 * MIB);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* Every encoding msgpack has, in its widest forms, agrees with msgpack-c on
 * where the message ends. */
START_TEST(every_encoding_every_split) {
  msgpack_sbuffer sb = mb_build(
      "raw(dc 00 1d cc 01 cd 01 02 ce 01 02 03 04 cf 00 00 00 00 00 00 00 01"
      " d0 ff d1 ff ff d2 ff ff ff ff d3 ff ff ff ff ff ff ff ff e0 7f"
      " ca 3f c0 00 00 cb 3f f8 00 00 00 00 00 00"
      " d9 02 68 69 da 00 01 61 db 00 00 00 01 61 a3 61 62 63"
      " c4 01 00 c5 00 01 00 c6 00 00 00 01 00"
      " d4 01 00 d5 01 00 00 d6 01 00 00 00 00 d7 01 00 00 00 00 00 00 00 00"
      " d8 01 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00"
      " c7 02 01 00 00 c8 00 01 05 00 c9 00 00 00 01 05 00"
      " de 00 01 c0 dd 00 00 00 01 c3 df 00 00 00 01 c2 80)");
  msgpack_unpacked up;
  size_t off = 0, got = 0;
  pto_error_t err;
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(msgpack_unpack_next(&up, sb.data, sb.size, &off), MSGPACK_UNPACK_SUCCESS);
  ck_assert_uint_eq(off, sb.size);
  ck_assert_uint_eq(up.data.via.array.size, 29);
  ck_assert_int_eq(feed_once(sb.data, sb.size, 1024, &got, &err), 1);
  ck_assert_uint_eq(got, sb.size);
  check_every_split(sb.data, sb.size, 1024);
  msgpack_unpacked_destroy(&up);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(two_messages_in_one_read) {
  msgpack_sbuffer sb = mb_build("[0, 1, \"ping\", []] [0, 2, \"status\", [{}]] raw(93 02 a1 78)");
  msgpack_sbuffer one = mb_build("[0, 1, \"ping\", []]");
  msgpack_sbuffer two = mb_build("[0, 2, \"status\", [{}]]");
  proto_reader_t r;
  size_t got = 0, start = 0;
  pto_error_t err;
  proto_reader_init(&r, 1024);
  ck_assert_int_eq(proto_reader_feed(&r, sb.data, sb.size, &got, &err), 1);
  ck_assert_uint_eq(got, one.size);
  start += got;
  proto_reader_reset(&r);
  ck_assert_int_eq(proto_reader_feed(&r, sb.data + start, sb.size - start, &got, &err), 1);
  ck_assert_uint_eq(got, two.size);
  ck_assert_mem_eq(sb.data + start, two.data, two.size);
  start += got;
  proto_reader_reset(&r);
  /* the third message has only begun */
  ck_assert_int_eq(proto_reader_feed(&r, sb.data + start, sb.size - start, &got, &err), 0);
  msgpack_sbuffer_destroy(&sb);
  msgpack_sbuffer_destroy(&one);
  msgpack_sbuffer_destroy(&two);
}
END_TEST

START_TEST(huge_array_claim_fails_at_once) {
  static const char bytes[] = "\xdd\xff\xff\xff\xff";
  size_t got = 0;
  pto_error_t err;
  proto_reader_t r;
  proto_reader_init(&r, 64 * MIB);
  /* the first two bytes do not say the count yet */
  ck_assert_int_eq(proto_reader_feed(&r, bytes, 2, &got, &err), 0);
  ck_assert_int_eq(proto_reader_feed(&r, bytes, 5, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  ck_assert_int_eq(err.code, PTO_E_MESSAGE_TOO_LARGE);
  ck_assert_str_eq(err.message,
                   "The message is larger than max_message (67108864 bytes): the array header at "
                   "byte 0 claims 4294967295 elements, so it needs at least 4294967300 bytes; send "
                   "less per message or raise max_message.");
  ck_assert_uint_eq(err.requested, 4294967300u);
  ck_assert_uint_eq(err.capacity, 64 * MIB);
  ck_assert(!proto_reader_msgid(&r, NULL));
  /* the reader stays failed until reset */
  ck_assert_int_eq(proto_reader_feed(&r, bytes, 5, &got, &err), -PTO_E_INVALID_REQUEST);
  proto_reader_reset(&r);
  ck_assert_int_eq(proto_reader_feed(&r, "\x90", 1, &got, &err), 1);
}
END_TEST

START_TEST(huge_claims_of_every_kind) {
  static const struct {
    const char *bytes;
    size_t len;
    const char *says;
  } cases[] = {
      {"\xdf\xff\xff\xff\xff", 5, "the map header at byte 0 claims 4294967295 entries"},
      {"\xdb\xff\xff\xff\xff", 5, "the str header at byte 0 claims 4294967295 bytes"},
      {"\xc6\xff\xff\xff\xff", 5, "the bin header at byte 0 claims 4294967295 bytes"},
      {"\xc9\xff\xff\xff\xff\x01", 6, "the ext header at byte 0 claims 4294967295 bytes"},
      /* inside a request: [0, 9, "x", [dd ff ff ff ff */
      {"\x94\x00\x09\xa1x\x91\xdd\xff\xff\xff\xff", 11,
       "the array header at byte 6 claims 4294967295 elements"},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    size_t got = 0;
    pto_error_t err;
    ck_assert_int_eq(feed_once(cases[i].bytes, cases[i].len, 64 * MIB, &got, &err),
                     -PTO_E_MESSAGE_TOO_LARGE);
    ck_assert_msg(strstr(err.message, cases[i].says), "case %zu: %s", i, err.message);
  }
}
END_TEST

START_TEST(msgid_known_when_a_request_is_too_large) {
  msgpack_sbuffer sb =
      mb_build("[0, 77, \"buffer.write\", [{\"name\": \"kv\", \"data\": bin(500)}]]");
  proto_reader_t r;
  size_t got = 0;
  uint32_t id = 0;
  pto_error_t err;
  proto_reader_init(&r, 100);
  ck_assert_int_eq(proto_reader_feed(&r, sb.data, sb.size, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  ck_assert(proto_reader_msgid(&r, &id));
  ck_assert_uint_eq(id, 77);
  msgpack_sbuffer_destroy(&sb);

  sb = mb_build("[1, 77, nil, bin(500)]");
  proto_reader_init(&r, 100);
  ck_assert_int_eq(proto_reader_feed(&r, sb.data, sb.size, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  ck_assert(!proto_reader_msgid(&r, &id));
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* n nested arrays: 0x91 (n-1) times, then 0x90. */
static char *nested(size_t n) {
  char *b = malloc(n);
  memset(b, 0x91, n - 1);
  b[n - 1] = (char)0x90;
  return b;
}

START_TEST(depth_32_ok_33_rejected) {
  char *ok = nested(PROTO_MAX_DEPTH), *deep = nested(PROTO_MAX_DEPTH + 1);
  size_t got = 0, off = 0;
  pto_error_t err;
  msgpack_unpacked up;
  ck_assert_int_eq(feed_once(ok, PROTO_MAX_DEPTH, 1024, &got, &err), 1);
  ck_assert_uint_eq(got, PROTO_MAX_DEPTH);
  /* msgpack-c parses what the reader lets through */
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(msgpack_unpack_next(&up, ok, PROTO_MAX_DEPTH, &off), MSGPACK_UNPACK_SUCCESS);
  msgpack_unpacked_destroy(&up);
  /* 32 levels that all hold something: msgpack-c's own stack is full, and fine */
  {
    char full[PROTO_MAX_DEPTH + 1];
    memset(full, 0x91, PROTO_MAX_DEPTH);
    full[PROTO_MAX_DEPTH] = (char)0xc0;
    ck_assert_int_eq(feed_once(full, sizeof(full), 1024, &got, &err), 1);
    off = 0;
    msgpack_unpacked_init(&up);
    ck_assert_int_eq(msgpack_unpack_next(&up, full, sizeof(full), &off), MSGPACK_UNPACK_SUCCESS);
    msgpack_unpacked_destroy(&up);
  }

  ck_assert_int_eq(feed_once(deep, PROTO_MAX_DEPTH + 1, 1024, &got, &err), -PTO_E_INVALID_REQUEST);
  ck_assert_int_eq(err.code, PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.message,
                   "The message nests containers more than 32 deep (at byte 32); send a flatter "
                   "message.");
  /* maps count the same: 32 levels of {"": ...} and then one more */
  {
    char buf[2 * 34];
    size_t n = 0;
    for (int i = 0; i < 33; i++) buf[n++] = (char)0x81, buf[n++] = (char)0xa0;
    buf[n++] = (char)0xc0;
    ck_assert_int_eq(feed_once(buf, n, 1024, &got, &err), -PTO_E_INVALID_REQUEST);
    ck_assert_ptr_nonnull(strstr(err.message, "more than 32 deep (at byte 64)"));
    ck_assert_int_eq(feed_once(buf + 2, n - 2, 1024, &got, &err), 1);
  }
  free(ok);
  free(deep);
}
END_TEST

START_TEST(exactly_max_message_ok) {
  msgpack_sbuffer sb =
      mb_build("[0, 1, \"buffer.write\", [{\"name\": \"a\", \"data\": bin(1000)}]]");
  size_t got = 0;
  pto_error_t err;
  ck_assert_int_eq(feed_once(sb.data, sb.size, sb.size, &got, &err), 1);
  ck_assert_uint_eq(got, sb.size);
  check_every_split(sb.data, sb.size, sb.size);
  ck_assert_int_eq(feed_once(sb.data, sb.size, sb.size - 1, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  ck_assert_uint_eq(err.requested, sb.size);
  ck_assert_uint_eq(err.capacity, sb.size - 1);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(max_message_plus_one_rejected_before_its_end) {
  /* 15 nils in an array: 16 bytes. With max 15 the array header's claim is
   * already too much, so the reader fails after one byte, not after 16. */
  msgpack_sbuffer sb = mb_build(
      "[nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, "
      "nil, nil]");
  size_t got = 0;
  pto_error_t err;
  ck_assert_uint_eq(sb.size, 16);
  ck_assert_int_eq(feed_once(sb.data, 1, 15, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  ck_assert_str_eq(err.message,
                   "The message is larger than max_message (15 bytes): the array header at byte 0 "
                   "claims 15 elements, so it needs at least 16 bytes; send less per message or "
                   "raise max_message.");
  ck_assert_int_eq(feed_once(sb.data, sb.size, 16, &got, &err), 1);
  /* a run of small values after a fitting header: [ "", "", ...] nested in a map */
  msgpack_sbuffer_destroy(&sb);
  sb = mb_build("{\"a\": [1, 2, 3], \"b\": [4, 5, 6]}");
  ck_assert_int_eq(feed_once(sb.data, sb.size, sb.size, &got, &err), 1);
  for (size_t cut = 1; cut <= sb.size; cut++) {
    int rc = feed_once(sb.data, cut, sb.size - 1, &got, &err);
    ck_assert_int_ne(rc, 1);
    if (rc < 0) ck_assert_int_eq(rc, -PTO_E_MESSAGE_TOO_LARGE);
  }
  ck_assert_int_eq(feed_once(sb.data, sb.size, sb.size - 1, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(reserved_byte_rejected) {
  size_t got = 0;
  pto_error_t err;
  ck_assert_int_eq(feed_once("\x93\x01\x02\xc1", 4, 1024, &got, &err), -PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.message,
                   "The message holds the reserved byte 0xc1 at byte 3, which is not valid "
                   "msgpack; check the sender's encoder.");
}
END_TEST

/* A 64 MiB message arriving in 64 KiB reads: the reader resumes where it
 * stopped (its offset always equals what it was given) and finishes. */
START_TEST(large_bin_in_chunks) {
  const size_t max = 64 * MIB, chunk = 64 * 1024;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  proto_reader_t r;
  size_t got = 0, fed = 0, payload;
  pto_error_t err;
  msgpack_sbuffer_init(&sb);
  /* [0, 3, "buffer.write", [{"name": "kv", "data": <bin>}]], the bin by hand */
  mb_pack(&sb, "raw(94 00 03) \"buffer.write\" raw(91 82) \"name\" \"kv\" \"data\"");
  payload = max - sb.size - 5;
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_bin(&pk, payload);
  {
    char *body = calloc(1, payload);
    msgpack_pack_bin_body(&pk, body, payload);
    free(body);
  }
  ck_assert_uint_eq(sb.size, max);
  proto_reader_init(&r, max);
  while (fed + chunk < sb.size) {
    fed += chunk;
    ck_assert_int_eq(proto_reader_feed(&r, sb.data, fed, &got, &err), 0);
    ck_assert_uint_eq(r.offset, fed);
  }
  ck_assert_int_eq(proto_reader_feed(&r, sb.data, sb.size, &got, &err), 1);
  ck_assert_uint_eq(got, max);
  ck_assert_uint_eq(proto_reader_objects(&r), 10);
  /* one byte more would not fit */
  proto_reader_init(&r, max - 1);
  ck_assert_int_eq(proto_reader_feed(&r, sb.data, chunk, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

START_TEST(objects_counted) {
  msgpack_sbuffer sb = mb_build("[0, 1, \"ping\", [{\"a\": [1, 2]}]]");
  proto_reader_t r;
  size_t got = 0;
  pto_error_t err;
  proto_reader_init(&r, 1024);
  ck_assert_int_eq(proto_reader_feed(&r, sb.data, sb.size, &got, &err), 1);
  /* array, 0, 1, "ping", array, map, "a", array, 1, 2 */
  ck_assert_uint_eq(proto_reader_objects(&r), 10);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* A header that cannot fit is named as such whether its bytes have all
 * arrived or not: the same error for every split of the stream. */
START_TEST(header_that_cannot_fit_named_the_same_whole_or_cut) {
  /* [1, 2, str8 "x"]: the str header at byte 3 (2 bytes) alone needs 5
   * bytes, its claim 6; with max_message 4 the header is what is named. */
  static const char msg[] = "\x93\x01\x02\xd9\x01\x78";
  size_t got = 0;
  pto_error_t err;
  for (size_t cut = 4; cut <= 6; cut++) {
    ck_assert_int_eq(feed_once(msg, cut, 4, &got, &err), -PTO_E_MESSAGE_TOO_LARGE);
    ck_assert_str_eq(err.message,
                     "The message is larger than max_message (4 bytes): it is still incomplete "
                     "at byte 3, so it needs at least 5 bytes; send less per message or raise "
                     "max_message.");
    ck_assert_uint_eq(err.requested, 5);
  }
  ck_assert_int_eq(feed_once(msg, 6, 6, &got, &err), 1);
  ck_assert_uint_eq(got, 6);
}
END_TEST

static Suite *reader_suite(void) {
  Suite *s = suite_create("reader");
  TCase *tc = tcase_create("reader");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, request_every_split);
  tcase_add_test(tc, every_encoding_every_split);
  tcase_add_test(tc, two_messages_in_one_read);
  tcase_add_test(tc, huge_array_claim_fails_at_once);
  tcase_add_test(tc, huge_claims_of_every_kind);
  tcase_add_test(tc, msgid_known_when_a_request_is_too_large);
  tcase_add_test(tc, depth_32_ok_33_rejected);
  tcase_add_test(tc, exactly_max_message_ok);
  tcase_add_test(tc, max_message_plus_one_rejected_before_its_end);
  tcase_add_test(tc, header_that_cannot_fit_named_the_same_whole_or_cut);
  tcase_add_test(tc, reserved_byte_rejected);
  tcase_add_test(tc, large_bin_in_chunks);
  tcase_add_test(tc, objects_counted);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(reader_suite)
