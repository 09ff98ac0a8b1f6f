/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_pipeline — when a pipelined request reaches the wire
 * (client/send.c): at once when no answer waits to be collected; held
 * while answers already received wait (a loop collecting a batch and
 * sending as it goes), then written together with the next request that
 * goes at once, or before a wait polls, before a cancel, or at close; and
 * always in the order sent.  Against a scripted daemon (tpeer) that reads
 * its end of the socket without waiting: a sendmsg() has put its bytes
 * there before it returns, so each check sees exactly what the client had
 * written when its call returned. */
#include <check.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <msgpack.h>
#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"

#define MAX_SEEN 16

static struct {
  tpeer_t peer;
  pto_client_t *c;
  msgpack_unpacker in; /* the request bytes read so far */
} f;
static pto_error_t err;

static void setup(void) {
  tpeer_open(&f.peer, &f.c);
  ck_assert(msgpack_unpacker_init(&f.in, 1 << 16));
}

static void teardown(void) {
  pto_client_close(f.c);
  tpeer_close(&f.peer);
  msgpack_unpacker_destroy(&f.in);
}

/* What the client has written since the last look, in order: a request
 * as its msgid, a cancel notification as minus the msgid it names. */
static size_t on_wire(long *seen) {
  msgpack_unpacked m;
  size_t n = 0;
  for (;;) {
    ssize_t got;
    ck_assert(msgpack_unpacker_reserve_buffer(&f.in, 1 << 16));
    got = recv(f.peer.fd, msgpack_unpacker_buffer(&f.in), msgpack_unpacker_buffer_capacity(&f.in),
               MSG_DONTWAIT);
    if ((got < 0 && errno == EAGAIN) || got == 0) break; /* all there is; 0: closed */
    ck_assert_int_gt(got, 0);
    msgpack_unpacker_buffer_consumed(&f.in, (size_t)got);
  }
  msgpack_unpacked_init(&m);
  while (msgpack_unpacker_next(&f.in, &m) == MSGPACK_UNPACK_SUCCESS) {
    const msgpack_object *a = m.data.via.array.ptr;
    ck_assert_int_eq(m.data.type, MSGPACK_OBJECT_ARRAY);
    ck_assert_uint_lt(n, MAX_SEEN);
    if (a[0].via.u64 == 0) /* [0, msgid, method, params] */
      seen[n++] = (long)a[1].via.u64;
    else /* [2, "cancel", [{"msgid": id}]] */
      seen[n++] = -(long)a[2].via.array.ptr[0].via.map.ptr[0].val.via.u64;
  }
  msgpack_unpacked_destroy(&m);
  return n;
}

static uint32_t send_ping(void) {
  pto_request_t ping = {.method = PTO_METHOD_PING};
  uint32_t msgid = 0;
  ck_assert_msg(pto_client_send(f.c, &ping, WAIT_MS, &msgid, &err) == 0, "%s", err.message);
  return msgid;
}

/* Answer the pings ids[0..n) in one write: the client reads them together. */
static void answer_pings(const uint32_t *ids, size_t n) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  for (size_t i = 0; i < n; i++) {
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint8(&pk, 1);
    msgpack_pack_uint32(&pk, ids[i]);
    msgpack_pack_nil(&pk);
    msgpack_pack_map(&pk, 3);
    msgpack_pack_str_with_body(&pk, "version", 7);
    msgpack_pack_str_with_body(&pk, "1", 1);
    msgpack_pack_str_with_body(&pk, "device", 6);
    msgpack_pack_uint8(&pk, 0);
    msgpack_pack_str_with_body(&pk, "state", 5);
    msgpack_pack_str_with_body(&pk, "ready", 5);
  }
  ck_assert_int_eq(write(f.peer.fd, sb.data, sb.size), (ssize_t)sb.size);
  msgpack_sbuffer_destroy(&sb);
}

static uint32_t collect_any(void) {
  uint32_t msgid = 0;
  void *res = NULL;
  ck_assert_msg(pto_client_wait_any(f.c, WAIT_MS, &msgid, &res, &err) == 0, "%s", err.message);
  pto_result_free(res);
  return msgid;
}

/* Two pings sent and answered, the first collected: one answer waits, and
 * a request sent now is held (*ret_held). */
static void hold_one(uint32_t *ret_held) {
  long seen[MAX_SEEN];
  uint32_t ids[2] = {send_ping(), send_ping()};
  ck_assert_uint_eq(on_wire(seen), 2);
  answer_pings(ids, 2);
  ck_assert_uint_eq(collect_any(), ids[0]);
  *ret_held = send_ping();
  ck_assert_uint_eq(on_wire(seen), 0);
}

START_TEST(a_request_goes_at_once_when_no_answer_waits) {
  long seen[MAX_SEEN];
  for (int i = 0; i < 3; i++) { /* pipelined, none answered yet */
    uint32_t id = send_ping();
    ck_assert_uint_eq(on_wire(seen), 1);
    ck_assert_int_eq(seen[0], (long)id);
  }
  ck_assert_uint_eq(pto_client_pending(f.c), 3);
}
END_TEST

/* Fails on the client before requests were held: each send wrote its own. */
START_TEST(a_batch_collected_and_sent_goes_in_one_write) {
  long seen[MAX_SEEN];
  uint32_t ids[4], next[4];
  for (int i = 0; i < 4; i++) ids[i] = send_ping();
  ck_assert_uint_eq(on_wire(seen), 4);
  answer_pings(ids, 4);
  for (int i = 0; i < 4; i++) { /* collect one, send one, as a pipelining loop does */
    ck_assert_uint_eq(collect_any(), ids[i]);
    next[i] = send_ping();
    if (i < 3) ck_assert_uint_eq(on_wire(seen), 0); /* answers still wait: held */
  }
  ck_assert_uint_eq(on_wire(seen), 4); /* the last one went, and took the held ones along */
  for (int i = 0; i < 4; i++) ck_assert_int_eq(seen[i], (long)next[i]);
  answer_pings(next, 4);
  for (int i = 0; i < 4; i++) ck_assert_uint_eq(collect_any(), next[i]);
  ck_assert_uint_eq(pto_client_pending(f.c), 0);
}
END_TEST

START_TEST(held_requests_go_before_a_wait_polls) {
  long seen[MAX_SEEN];
  uint32_t held;
  void *res = NULL;
  hold_one(&held);
  /* Its answer cannot come before it is written: waiting writes it first,
   * even a wait that takes only what is there. */
  ck_assert_int_eq(pto_client_wait(f.c, held, 0, &res, &err), -PTO_E_TIMEOUT);
  ck_assert_uint_eq(on_wire(seen), 1);
  ck_assert_int_eq(seen[0], (long)held);
  answer_pings(&held, 1);
  ck_assert_int_eq(pto_client_wait(f.c, held, WAIT_MS, &res, &err), 0);
  pto_result_free(res);
  ck_assert_uint_eq(collect_any(), held - 1); /* the answer that waited all along */
}
END_TEST

START_TEST(held_requests_go_before_a_cancel) {
  long seen[MAX_SEEN];
  uint32_t held;
  hold_one(&held);
  ck_assert_int_eq(pto_client_cancel(f.c, held, &err), 0);
  ck_assert_uint_eq(on_wire(seen), 2); /* the request, then its cancel */
  ck_assert_int_eq(seen[0], (long)held);
  ck_assert_int_eq(seen[1], -(long)held);
}
END_TEST

START_TEST(held_requests_go_with_a_large_request) {
  static char data[(64 << 10) + 1]; /* sent from where it lies, never held */
  pto_request_t w = {.method = PTO_METHOD_BUFFER_WRITE};
  long seen[MAX_SEEN];
  uint32_t held, big = 0;
  hold_one(&held);
  w.u.buffer_write.name = "b";
  w.u.buffer_write.data = data;
  w.u.buffer_write.len = sizeof(data);
  ck_assert_msg(pto_client_send(f.c, &w, WAIT_MS, &big, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(on_wire(seen), 2);
  ck_assert_int_eq(seen[0], (long)held);
  ck_assert_int_eq(seen[1], (long)big);
}
END_TEST

START_TEST(held_requests_go_at_close) {
  long seen[MAX_SEEN];
  uint32_t held;
  hold_one(&held);
  pto_client_close(f.c);
  f.c = NULL;
  ck_assert_uint_eq(on_wire(seen), 1);
  ck_assert_int_eq(seen[0], (long)held);
}
END_TEST

static Suite *client_pipeline_suite(void) {
  Suite *s = suite_create("client_pipeline");
  TCase *tc = tcase_create("core");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_request_goes_at_once_when_no_answer_waits);
  tcase_add_test(tc, a_batch_collected_and_sent_goes_in_one_write);
  tcase_add_test(tc, held_requests_go_before_a_wait_polls);
  tcase_add_test(tc, held_requests_go_before_a_cancel);
  tcase_add_test(tc, held_requests_go_with_a_large_request);
  tcase_add_test(tc, held_requests_go_at_close);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_pipeline_suite)
