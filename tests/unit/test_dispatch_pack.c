/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch's cheap response (proto/dispatch_pack.h) against the schema
 * tables: the same bytes for every sizing, source, number size, output
 * and DFX form, also when its cached sizing bytes are reused, replaced by
 * another key's, or by the same key's with other sources; and the same
 * layout read back: the same result as the tables decode, or declined;
 * and an answer without bytes allocated at its own length. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "dispatch_pack.h"
#include "refbuf.h"
#include "rpc.h"

#define TW PTO_FIELD_TASK_WINDOW
#define HEAP PTO_FIELD_HEAP
#define DEP PTO_FIELD_DEP_POOL

/* Numbers on every boundary of msgpack's integer forms. */
static const uint64_t numbers[] = {
    0,         1, 127, 128, 255, 256, 65535, 65536, UINT32_MAX, UINT64_C(1) << 32, 7000000000000u,
    UINT64_MAX};
#define NNUMBERS (sizeof(numbers) / sizeof(numbers[0]))

/* A result whose numbers and sources all come from `seed`. */
static void make_result(proto_dispatch_result_t *r, unsigned seed) {
  memset(r, 0, sizeof(*r));
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int ring = 0; ring < PTO_RING_COUNT; ring++) {
      unsigned i = seed + (unsigned)(f * PTO_RING_COUNT + ring);
      r->sizing.value[f][ring] = numbers[i % NNUMBERS] | 1;
      r->sizing.source[f][ring] = (uint8_t)((seed + (unsigned)ring + (unsigned)f) % 4);
      r->peaks.value[f][ring] = numbers[(i * 7) % NNUMBERS];
    }
  r->arena.key = pto_sizing_key(&r->sizing);
  r->arena.hit = seed % 2;
  r->arena.build_us = numbers[(seed + 3) % NNUMBERS];
  r->timing_us.queue = numbers[(seed + 4) % NNUMBERS];
  r->timing_us.arena = numbers[(seed + 5) % NNUMBERS];
  r->timing_us.run = numbers[(seed + 6) % NNUMBERS];
  r->timing_us.total = numbers[(seed + 7) % NNUMBERS];
  r->tasks = numbers[(seed + 8) % NNUMBERS];
}

/* What the schema tables write: the plain encoder. */
static void pack_plain(msgpack_sbuffer *sb, uint32_t msgid, const proto_dispatch_result_t *r) {
  msgpack_packer pk;
  proto_result_t res;
  memset(&res, 0, sizeof(res));
  res.dispatch = *r;
  msgpack_sbuffer_clear(sb);
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_response_begin(&pk, msgid), 0);
  ck_assert_int_eq(proto_result_pack(&pk, PROTO_M_DISPATCH, &res), 0);
}

/* Both ways into plain sbuffers (proto_encode_response takes the cheap
 * one), compared byte for byte. */
static void check_same(uint32_t msgid, const proto_dispatch_result_t *r) {
  msgpack_sbuffer plain, cheap;
  proto_result_t res;
  memset(&res, 0, sizeof(res));
  res.dispatch = *r;
  msgpack_sbuffer_init(&plain);
  msgpack_sbuffer_init(&cheap);
  pack_plain(&plain, msgid, r);
  ck_assert_int_eq(proto_encode_response(&cheap, msgid, PROTO_M_DISPATCH, &res), 0);
  ck_assert_uint_eq(cheap.size, plain.size);
  ck_assert_mem_eq(cheap.data, plain.data, plain.size);
  msgpack_sbuffer_destroy(&plain);
  msgpack_sbuffer_destroy(&cheap);
}

START_TEST(every_number_and_source) {
  static const uint32_t msgids[] = {0, 127, 128, 65536, UINT32_MAX};
  proto_dispatch_result_t r;
  for (unsigned seed = 0; seed < 2 * NNUMBERS; seed++) {
    make_result(&r, seed);
    check_same(msgids[seed % 5], &r);
    check_same(msgids[(seed + 1) % 5], &r); /* the cached sizing bytes, reused */
  }
}
END_TEST

/* The cache follows the sizing, not only the arena key: the key is made
 * of the values alone, so the same key with other sources must not reuse
 * the first one's bytes. */
START_TEST(cache_replaced_when_key_or_sources_change) {
  proto_dispatch_result_t a, b, c;
  make_result(&a, 1);
  make_result(&b, 2);
  c = a;
  c.sizing.source[HEAP][2] = (uint8_t)((a.sizing.source[HEAP][2] + 1) % 4);
  ck_assert_uint_eq(pto_sizing_key(&c.sizing), a.arena.key);
  ck_assert_uint_ne(a.arena.key, b.arena.key);
  check_same(1, &a);
  check_same(2, &a);
  check_same(3, &b); /* another key */
  check_same(4, &a); /* back */
  check_same(5, &c); /* same key, other sources */
  check_same(6, &a);
  c = a;
  c.sizing.value[DEP][0] += 2; /* other values, the key field left as it was */
  check_same(7, &c);
}
END_TEST

START_TEST(outputs_in_every_form) {
  static uint8_t bytes[300];
  proto_bytes_t outs[40];
  proto_dispatch_result_t r;
  make_result(&r, 5);
  for (size_t i = 0; i < 40; i++) {
    outs[i].ptr = i % 3 == 0 ? NULL : bytes;
    outs[i].len = i % 3 == 0 ? 0 : (i * 37) % sizeof(bytes);
  }
  for (size_t i = 0; i < sizeof(bytes); i++) bytes[i] = (uint8_t)i;
  r.outputs = outs;
  for (uint32_t n = 0; n <= 40; n += 1) { /* crosses fixarray's 15 */
    r.noutputs = n;
    check_same(n, &r);
  }
}
END_TEST

/* Many nil outputs: more than one piece's room. */
START_TEST(many_nil_outputs) {
  const uint32_t n = 70000; /* also crosses array16's 65535 */
  proto_bytes_t *outs = calloc(n, sizeof(*outs));
  proto_dispatch_result_t r;
  make_result(&r, 9);
  ck_assert_ptr_nonnull(outs);
  outs[n - 1].ptr = (const uint8_t *)"last";
  outs[n - 1].len = 4;
  r.outputs = outs;
  r.noutputs = n;
  check_same(1, &r);
  free(outs);
}
END_TEST

START_TEST(with_dfx) {
  proto_dispatch_result_t r;
  make_result(&r, 3);
  r.dfx.refused = "too many tasks";
  check_same(1, &r);
  r.dfx.refused = NULL;
  r.dfx.swimlane = (proto_bytes_t){(const uint8_t *)"{}", 2};
  r.dfx.dep_graph = (proto_bytes_t){(const uint8_t *)"digraph{}", 9};
  check_same(2, &r);
  ck_assert_uint_eq(proto_dispatch_result_payload(&r), 11);
}
END_TEST

/* An answer without bytes (nil outputs only, no DFX, no request_id) is
 * packed into an empty sbuffer as one allocation of its own length, so the
 * daemon has nothing to cut back before it waits to be written; with bytes
 * it has room reserved for them at once. */
START_TEST(answer_without_bytes_sized_right) {
  proto_bytes_t outs[3] = {{0}};
  proto_dispatch_result_t r;
  proto_result_t res;
  msgpack_sbuffer sb;
  memset(&res, 0, sizeof(res));
  make_result(&r, 4);
  r.outputs = outs;
  r.noutputs = 3;
  res.dispatch = r;
  msgpack_sbuffer_init(&sb);
  ck_assert_int_eq(proto_encode_response(&sb, 7, PROTO_M_DISPATCH, &res), 0);
  ck_assert_uint_gt(sb.size, 300);
  ck_assert_uint_eq(sb.alloc, sb.size);
  msgpack_sbuffer_destroy(&sb);

  outs[1] = (proto_bytes_t){(const uint8_t *)"four", 4};
  res.dispatch.outputs = outs;
  msgpack_sbuffer_init(&sb);
  ck_assert_int_eq(proto_encode_response(&sb, 7, PROTO_M_DISPATCH, &res), 0);
  ck_assert_uint_ge(sb.alloc, 4 + 4096);
  msgpack_sbuffer_destroy(&sb);
  check_same(7, &r);
}
END_TEST

/* Through a packer that keeps large outputs by reference (the daemon's
 * answer_encode): laid out for writev, the same bytes. */
START_TEST(large_outputs_by_reference) {
  const size_t big = 2 * PROTO_REF_MIN;
  uint8_t *data = malloc(big);
  proto_bytes_t outs[4];
  proto_dispatch_result_t r;
  proto_refbuf_t refs;
  msgpack_sbuffer sb, plain;
  msgpack_packer pk;
  struct iovec *iov;
  size_t n, at = 0;
  ck_assert_ptr_nonnull(data);
  memset(data, 0x5a, big);
  make_result(&r, 4);
  outs[0] = (proto_bytes_t){data, big};
  outs[1] = (proto_bytes_t){NULL, 0};
  outs[2] = (proto_bytes_t){data, 10};
  outs[3] = (proto_bytes_t){data + 1, big - 1};
  r.outputs = outs;
  r.noutputs = 4;
  memset(&refs, 0, sizeof(refs));
  msgpack_sbuffer_init(&sb);
  msgpack_sbuffer_init(&plain);
  proto_refbuf_begin(&refs, &sb, data, data + big, &pk);
  ck_assert_int_eq(proto_dispatch_response_pack(&pk, 77, &r), 0);
  ck_assert_uint_eq(refs.n, 2);
  iov = calloc(proto_refbuf_iov_max(&refs), sizeof(*iov));
  ck_assert_ptr_nonnull(iov);
  n = proto_refbuf_iov(&refs, iov);
  pack_plain(&plain, 77, &r);
  for (size_t i = 0; i < n; i++) {
    ck_assert_uint_le(at + iov[i].iov_len, plain.size);
    ck_assert_mem_eq(iov[i].iov_base, plain.data + at, iov[i].iov_len);
    at += iov[i].iov_len;
  }
  ck_assert_uint_eq(at, plain.size);
  free(iov);
  proto_refbuf_free(&refs);
  msgpack_sbuffer_destroy(&sb);
  msgpack_sbuffer_destroy(&plain);
  free(data);
}
END_TEST

/* ---- the layout read back (the client's fast path) ----------------------- */

/* Decode msg the general way (proto_decode + the tables) and the fast way
 * (with the sizing bytes of the general result, as the client learns
 * them): the same result, or the fast way declines where the general way
 * fails. */
static void check_read_back(const msgpack_sbuffer *msg, uint32_t msgid) {
  proto_bytes_t outs[64];
  proto_dispatch_result_t fast;
  proto_result_t general;
  proto_sizing_bytes_t seen;
  proto_envelope_t env;
  msgpack_unpacked up;
  pto_error_t err;
  uint32_t got_msgid = 0;
  const uint8_t *b = (const uint8_t *)msg->data;
  size_t len;
  int rc;
  memset(&seen, 0, sizeof(seen));
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(proto_decode(msg->data, msg->size, &up, &env, &err), 0);
  rc = proto_result_decode(PROTO_M_DISPATCH, env.result, up.zone, &general, &err);
  if (rc < 0) { /* a count past INT64_MAX: the tables refuse it, so must the
                   fast way */
    ck_assert_int_eq(proto_sizing_bytes_make(&seen, 1, &(pto_sizing_resolved_t){0}), 0);
    seen.valid = true;
    ck_assert_uint_eq(
        proto_dispatch_response_match(b, msg->size, &seen, &got_msgid, &fast, outs, 64), 0);
    msgpack_unpacked_destroy(&up);
    return;
  }
  ck_assert_uint_eq(proto_dispatch_response_match(b, msg->size, &seen, &got_msgid, &fast, outs, 64),
                    0); /* not learned yet */
  ck_assert_int_eq(
      proto_sizing_bytes_make(&seen, general.dispatch.arena.key, &general.dispatch.sizing), 0);
  len = proto_dispatch_response_match(b, msg->size, &seen, &got_msgid, &fast, outs, 64);
  if (general.dispatch.noutputs > 64 || proto_dfx_present(&general.dispatch.dfx)) {
    ck_assert_uint_eq(len, 0);
  } else {
    ck_assert_uint_eq(len, msg->size);
    ck_assert_uint_eq(got_msgid, msgid);
    ck_assert_uint_eq(fast.noutputs, general.dispatch.noutputs);
    for (uint32_t i = 0; i < fast.noutputs; i++) {
      const proto_bytes_t *g = &general.dispatch.outputs[i];
      ck_assert_uint_eq(fast.outputs[i].len, g->len);
      ck_assert(!fast.outputs[i].ptr == !g->ptr);
      if (g->ptr && g->len) ck_assert_ptr_eq(fast.outputs[i].ptr, g->ptr);
    }
    fast.outputs = general.dispatch.outputs;
    ck_assert_mem_eq(&fast, &general.dispatch, sizeof(fast));
    for (size_t cut = 0; cut < msg->size; cut++) /* not all there yet */
      ck_assert_uint_eq(proto_dispatch_response_match(b, cut, &seen, &got_msgid, &fast, outs, 64),
                        0);
    if (general.dispatch.noutputs > 0)
      ck_assert_uint_eq(proto_dispatch_response_match(b, msg->size, &seen, &got_msgid, &fast, outs,
                                                      general.dispatch.noutputs - 1),
                        0);
  }
  msgpack_unpacked_destroy(&up);
}

static void encode(msgpack_sbuffer *sb, uint32_t msgid, const proto_dispatch_result_t *r) {
  proto_result_t res;
  memset(&res, 0, sizeof(res));
  res.dispatch = *r;
  msgpack_sbuffer_clear(sb);
  ck_assert_int_eq(proto_encode_response(sb, msgid, PROTO_M_DISPATCH, &res), 0);
}

START_TEST(read_back_every_form) {
  static uint8_t bytes[300];
  proto_bytes_t outs[70];
  proto_dispatch_result_t r;
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  for (size_t i = 0; i < 70; i++) {
    outs[i].ptr = i % 3 == 0 ? NULL : bytes;
    outs[i].len = i % 3 == 0 ? 0 : (i * 37) % sizeof(bytes);
  }
  for (unsigned seed = 0; seed < 2 * NNUMBERS; seed++) {
    make_result(&r, seed);
    r.outputs = outs;
    r.noutputs = (seed * 5) % 70;
    encode(&sb, seed * 1000u, &r);
    check_read_back(&sb, seed * 1000u);
  }
  make_result(&r, 2);
  r.dfx.refused = "too many tasks";
  encode(&sb, 9, &r);
  check_read_back(&sb, 9);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

/* Bytes of another sizing (one source differs), an error answer, a
 * request: the fast way declines. */
START_TEST(read_back_declines_other_messages) {
  static const pto_error_t busy = {.code = PTO_E_BUSY, .message = "busy"};
  proto_bytes_t outs[4];
  proto_dispatch_result_t r, got;
  proto_sizing_bytes_t seen;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  uint32_t msgid;
  memset(&seen, 0, sizeof(seen));
  msgpack_sbuffer_init(&sb);
  make_result(&r, 6);
  r.arena.build_us = 5;
  r.timing_us.queue = r.timing_us.arena = r.timing_us.run = r.timing_us.total = r.tasks = 1;
  encode(&sb, 3, &r);
  ck_assert_int_eq(proto_sizing_bytes_make(&seen, r.arena.key, &r.sizing), 0);
  ck_assert_uint_eq(proto_dispatch_response_match((const uint8_t *)sb.data, sb.size, &seen, &msgid,
                                                  &got, outs, 4),
                    sb.size);
  r.sizing.source[TW][1] = (uint8_t)((r.sizing.source[TW][1] + 1) % 4);
  encode(&sb, 3, &r);
  ck_assert_uint_eq(proto_dispatch_response_match((const uint8_t *)sb.data, sb.size, &seen, &msgid,
                                                  &got, outs, 4),
                    0);
  msgpack_sbuffer_clear(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  ck_assert_int_eq(proto_pack_response_error(&pk, 3, &busy), 0);
  ck_assert_uint_eq(proto_dispatch_response_match((const uint8_t *)sb.data, sb.size, &seen, &msgid,
                                                  &got, outs, 4),
                    0);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

static Suite *dispatch_pack_suite(void) {
  Suite *s = suite_create("dispatch_pack");
  TCase *tc = tcase_create("same_bytes");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, every_number_and_source);
  tcase_add_test(tc, cache_replaced_when_key_or_sources_change);
  tcase_add_test(tc, outputs_in_every_form);
  tcase_add_test(tc, many_nil_outputs);
  tcase_add_test(tc, with_dfx);
  tcase_add_test(tc, answer_without_bytes_sized_right);
  tcase_add_test(tc, large_outputs_by_reference);
  tcase_add_test(tc, read_back_every_form);
  tcase_add_test(tc, read_back_declines_other_messages);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(dispatch_pack_suite)
