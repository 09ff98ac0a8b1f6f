/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_send — a request's large inline data goes to the socket
 * from the caller's buffer: it arrives byte-exact (as proto's own encoding
 * of the same request), also when the socket takes it in small pieces, and
 * sending it costs the client no memory the size of the payload.  And a
 * dispatch's arguments, few or many, are proto's own encoding of them. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>
#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"
#include "methods.h"

#define PAYLOAD ((size_t)48 << 20)

static struct {
  tpeer_t peer;
  pto_client_t *c;
} f;
static pto_error_t err;

static void setup(void) {
  tpeer_open(&f.peer, &f.c);
}

static void teardown(void) {
  pto_client_close(f.c);
  tpeer_close(&f.peer);
}

/* The fake daemon's reader: `want` bytes in reads of at most `piece`
 * (sleeping now and then, so the client's socket fills and it writes in
 * parts), kept in `got` when non-NULL. */
typedef struct reader {
  size_t want, piece, done;
  uint8_t *got;
  bool slow;
} reader_t;

static void *read_thread(void *arg) {
  reader_t *r = arg;
  static uint8_t sink[1 << 20];
  while (r->done < r->want) {
    size_t n = r->want - r->done < r->piece ? r->want - r->done : r->piece;
    ssize_t got;
    if (!r->got && n > sizeof(sink)) n = sizeof(sink);
    got = read(f.peer.fd, r->got ? r->got + r->done : sink, n);
    if (got <= 0) break;
    r->done += (size_t)got;
    if (r->slow && (r->done / r->piece) % 512 == 0) {
      struct timespec ts = {0, 200000};
      nanosleep(&ts, NULL);
    }
  }
  return NULL;
}

static uint8_t *payload(void) {
  uint8_t *p = malloc(PAYLOAD);
  ck_assert_ptr_nonnull(p);
  for (size_t i = 0; i < PAYLOAD; i++) p[i] = (uint8_t)(i * 131 + (i >> 20));
  return p;
}

/* A dispatch of "k" with [input(data), output(4), int(7)], as the client
 * API and as proto's params. */
static void dispatch_req(const uint8_t *data, pto_dispatch_arg_t args[3], pto_request_t *req,
                         proto_arg_t pargs[3], proto_params_t *p) {
  args[0] = pto_arg_input(data, PAYLOAD);
  args[1] = pto_arg_output(4);
  args[2] = pto_arg_int(7);
  memset(req, 0, sizeof(*req));
  req->method = PTO_METHOD_DISPATCH;
  req->u.dispatch.program = "k";
  req->u.dispatch.args = args;
  req->u.dispatch.nargs = 3;
  memset(pargs, 0, 3 * sizeof(*pargs));
  pargs[0].kind = PTO_ARG_INPUT;
  pargs[0].data.ptr = data;
  pargs[0].data.len = PAYLOAD;
  pargs[1].kind = PTO_ARG_OUTPUT;
  pargs[1].bytes = 4;
  pargs[2].kind = PTO_ARG_INT;
  pargs[2].i = 7;
  memset(p, 0, sizeof(*p));
  p->dispatch.program = "k";
  p->dispatch.args = pargs;
  p->dispatch.nargs = 3;
  proto_config_init(&p->dispatch.config);
  p->dispatch.deadline_ms = PROTO_UNSET;
}

/* proto's own encoding of the request as msgid 1 (msgids 1..3 encode alike). */
static msgpack_sbuffer expected(const proto_params_t *p) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  ck_assert_int_eq(proto_encode_request(&sb, 1, (proto_method_t)PTO_METHOD_DISPATCH, p), 0);
  return sb;
}

static void send_and_compare(size_t piece, bool slow) {
  uint8_t *data = payload();
  pto_dispatch_arg_t args[3];
  proto_arg_t pargs[3];
  pto_request_t req;
  proto_params_t p;
  msgpack_sbuffer want;
  reader_t r = {.piece = piece, .slow = slow};
  pthread_t t;
  uint32_t msgid = 0;

  dispatch_req(data, args, &req, pargs, &p);
  want = expected(&p);
  r.want = want.size;
  r.got = malloc(want.size);
  ck_assert_ptr_nonnull(r.got);
  ck_assert_int_eq(pthread_create(&t, NULL, read_thread, &r), 0);
  ck_assert_msg(pto_client_send(f.c, &req, WAIT_MS, &msgid, &err) == 0, "%s", err.message);
  pthread_join(t, NULL);
  ck_assert_uint_eq(msgid, 1);
  ck_assert_uint_eq(r.done, want.size);
  ck_assert_msg(memcmp(r.got, want.data, want.size) == 0, "the request's bytes differ");
  pto_client_discard(f.c, msgid);
  msgpack_sbuffer_destroy(&want);
  free(r.got);
  free(data);
}

START_TEST(large_inline_arg_arrives_byte_exact) {
  send_and_compare(1 << 20, false);
}
END_TEST

START_TEST(large_inline_arg_in_small_pieces) {
  int small = 4096;
  ck_assert_int_eq(setsockopt(f.peer.fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small)), 0);
  send_and_compare(1000, true);
}
END_TEST

/* Up to 8 arguments are converted in the request's own memory, more in
 * an array of their own: either way the request is proto's own encoding. */
START_TEST(many_args_arrive_byte_exact) {
  for (uint32_t n = 1; n <= 12; n++) {
    pto_dispatch_arg_t args[12];
    proto_arg_t pargs[12];
    pto_request_t req = {.method = PTO_METHOD_DISPATCH};
    proto_params_t p;
    msgpack_sbuffer want;
    uint8_t got[1024];
    size_t have = 0;
    uint32_t msgid = 0;
    memset(pargs, 0, sizeof(pargs));
    for (uint32_t i = 0; i < n; i++) {
      args[i] = i % 2 ? pto_arg_output(16 + i) : pto_arg_int(1000 + i);
      pargs[i].kind = args[i].kind;
      pargs[i].bytes = args[i].bytes;
      pargs[i].i = args[i].i;
    }
    req.u.dispatch.program = "k";
    req.u.dispatch.args = args;
    req.u.dispatch.nargs = n;
    memset(&p, 0, sizeof(p));
    p.dispatch.program = "k";
    p.dispatch.args = pargs;
    p.dispatch.nargs = n;
    proto_config_init(&p.dispatch.config);
    p.dispatch.deadline_ms = PROTO_UNSET;
    msgpack_sbuffer_init(&want);
    ck_assert_int_eq(proto_encode_request(&want, n, (proto_method_t)PTO_METHOD_DISPATCH, &p), 0);
    ck_assert_msg(pto_client_send(f.c, &req, WAIT_MS, &msgid, &err) == 0, "%s", err.message);
    ck_assert_uint_eq(msgid, n);
    while (have < want.size) {
      ssize_t r = read(f.peer.fd, got + have, want.size - have);
      ck_assert_int_gt(r, 0);
      have += (size_t)r;
    }
    ck_assert_msg(memcmp(got, want.data, want.size) == 0, "%u arguments: the bytes differ", n);
    msgpack_sbuffer_destroy(&want);
  }
}
END_TEST

static long thread_minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

/* 3 sends of 48 MiB: without the reference writer the encode buffer alone
 * is 12288 pages to fault in. */
START_TEST(sending_costs_no_memory_the_size_of_the_payload) {
  uint8_t *data = payload();
  pto_dispatch_arg_t args[3];
  proto_arg_t pargs[3];
  pto_request_t req;
  proto_params_t p;
  msgpack_sbuffer want;
  size_t size;
  long before, faults;

  dispatch_req(data, args, &req, pargs, &p);
  want = expected(&p);
  size = want.size;
  msgpack_sbuffer_destroy(&want);
  before = thread_minflt();
  for (int i = 0; i < 3; i++) {
    reader_t r = {.want = size, .piece = 1 << 20};
    pthread_t t;
    uint32_t msgid = 0;
    ck_assert_int_eq(pthread_create(&t, NULL, read_thread, &r), 0);
    ck_assert_msg(pto_client_send(f.c, &req, WAIT_MS, &msgid, &err) == 0, "%s", err.message);
    pthread_join(t, NULL);
    ck_assert_uint_eq(r.done, size);
    pto_client_discard(f.c, msgid);
  }
  faults = thread_minflt() - before;
  /* A copy of each would fault 3 x 12288 pages; ThreadSanitizer's own
   * shadow memory adds about a thousand. */
  ck_assert_msg(faults < 3000, "3 sends of 48 MiB took %ld page faults in the client's thread",
                faults);
  free(data);
}
END_TEST

static Suite *client_send_suite(void) {
  Suite *s = suite_create("client_send");
  TCase *tc = tcase_create("send");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, large_inline_arg_arrives_byte_exact);
  tcase_add_test(tc, large_inline_arg_in_small_pieces);
  tcase_add_test(tc, many_args_arrive_byte_exact);
  tcase_add_test(tc, sending_costs_no_memory_the_size_of_the_payload);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_send_suite)
