/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_fast — the dispatch answers libptoclient reads the fast way
 * (client_reply_fast: the daemon's own layout, the sizing last seen)
 * against a real ptod: every result the library hands out is what the
 * schema tables decode from its own bytes (pto_result_msgpack), through
 * sizings that change from one dispatch to the next (another value, the
 * same values from another source), pipelined, with outputs. */
#include <check.h>
#include <msgpack.h>
#include <pto/client.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "fixture.h"
#include "methods.h"

static tdaemon_t daemon0;
static pto_client_t *cl;
static pto_error_t err;

static void setup(void) {
  tdaemon_start(&daemon0, NULL);
  ck_assert_msg(pto_client_connect(daemon0.socket, WAIT_MS, &cl, &err) == 0, "%s", err.message);
}

static void teardown(void) {
  pto_client_close(cl);
  tdaemon_stop(&daemon0);
}

/* The result as the tables decode its bytes: the same struct, outputs
 * included. */
static void check_as_tables_decode(const pto_dispatch_result_t *res) {
  const void *bytes;
  size_t len, off = 0;
  msgpack_unpacked up;
  proto_result_t plain;
  pto_error_t perr;
  pto_dispatch_result_t copy = *res;
  pto_result_msgpack(res, &bytes, &len);
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(msgpack_unpack_next(&up, bytes, len, &off), MSGPACK_UNPACK_SUCCESS);
  ck_assert_int_eq(proto_result_decode(PROTO_M_DISPATCH, &up.data, up.zone, &plain, &perr), 0);
  ck_assert_uint_eq(res->noutputs, plain.dispatch.noutputs);
  for (uint32_t i = 0; i < res->noutputs; i++) {
    ck_assert_uint_eq(res->outputs[i].len, plain.dispatch.outputs[i].len);
    ck_assert(!res->outputs[i].ptr == !plain.dispatch.outputs[i].ptr);
    if (res->outputs[i].ptr)
      ck_assert_mem_eq(res->outputs[i].ptr, plain.dispatch.outputs[i].ptr, res->outputs[i].len);
  }
  copy.outputs = plain.dispatch.outputs;
  ck_assert_mem_eq(&copy, &plain.dispatch, sizeof(copy));
  msgpack_unpacked_destroy(&up);
}

/* Heap sizes per dispatch: 0 leaves the daemon's config; 1M is the
 * config's own value, given by the request (same key, other source);
 * 4096 and 8192 pack to sizings of the same length. */
static const uint64_t heaps[] = {0, 0, 4096, 4096, 8192, 0, 1u << 20, 8192, 4096, 0};
#define NHEAPS (sizeof(heaps) / sizeof(heaps[0]))

START_TEST(results_as_the_tables_decode_them) {
  float a[64], b[64];
  pto_config_t *cfg[NHEAPS];
  pto_dispatch_arg_t args[3];
  pto_request_t req;
  uint32_t msgid[NHEAPS * 4];
  for (int i = 0; i < 64; i++) a[i] = b[i] = (float)i;
  args[0] = pto_arg_input(a, sizeof(a));
  args[1] = pto_arg_input(b, sizeof(b));
  args[2] = pto_arg_output(sizeof(a));
  memset(&req, 0, sizeof(req));
  req.method = PTO_METHOD_DISPATCH;
  req.u.dispatch = (pto_dispatch_req_t){.program = "vector_add", .args = args, .nargs = 3};
  for (size_t i = 0; i < NHEAPS; i++) {
    ck_assert_int_eq(pto_config_new(&cfg[i]), 0);
    if (heaps[i]) {
      uint64_t rings[PTO_RING_COUNT] = {heaps[i], heaps[i], heaps[i], heaps[i]};
      ck_assert_int_eq(pto_config_set_rings(cfg[i], PTO_FIELD_HEAP, rings, &err), 0);
    }
  }
  /* Four rounds, each pipelined: every dispatch sent, then every answer. */
  for (size_t n = 0; n < NHEAPS * 4; n++) {
    req.u.dispatch.config = cfg[n % NHEAPS];
    ck_assert_msg(pto_client_send(cl, &req, WAIT_MS, &msgid[n], &err) == 0, "%s", err.message);
  }
  for (size_t n = 0; n < NHEAPS * 4; n++) {
    pto_dispatch_result_t *res;
    uint64_t heap = heaps[n % NHEAPS], want = heap ? heap : 1u << 20;
    ck_assert_msg(pto_client_wait(cl, msgid[n], WAIT_MS, (void **)&res, &err) == 0, "%s",
                  err.message);
    ck_assert_uint_eq(res->sizing.value[PTO_FIELD_HEAP][0], want);
    ck_assert_int_eq(res->sizing.source[PTO_FIELD_HEAP][0],
                     heap ? PTO_SOURCE_REQUEST : PTO_SOURCE_CONFIG);
    ck_assert_uint_eq(res->outputs[2].len, sizeof(a));
    for (int i = 0; i < 64; i++) {
      float got;
      memcpy(&got, res->outputs[2].ptr + 4 * i, 4);
      ck_assert_float_eq(got, 2.0f * (float)i);
    }
    check_as_tables_decode(res);
    pto_result_free(res);
  }
  for (size_t i = 0; i < NHEAPS; i++) pto_config_free(cfg[i]);
}
END_TEST

static Suite *fast_suite(void) {
  Suite *s = suite_create("client_fast");
  TCase *tc = tcase_create("dispatch");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, results_as_the_tables_decode_them);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(fast_suite)
