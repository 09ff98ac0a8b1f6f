/* SPDX-License-Identifier: Apache-2.0 */
/* The server in-process: a libuv loop, a real socket in a temporary
 * directory, and handlers that hold the messages they get, so each test
 * decides when a message is done.  What they show: reading pauses at
 * max_pending and over input_limit and resumes as messages are done; a fatal
 * error waits for the pending answers; output_limit closes a connection
 * that does not read; client_timeout counts from a message's first byte;
 * the memory counters come back to zero. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "check_main.h"
#include "server.h"
#include "server_options.h"

#define MAX_HELD 64

typedef struct fixture {
  uv_loop_t loop;
  srv_t *srv;
  char dir[48], path[96];
  srv_conn_t *conn;
  srv_msg_t *held[MAX_HELD];
  int nheld, delivered, closes, fatals;
  uint32_t fatal_msgid;
  bool fatal_has_msgid;
  size_t answer_bytes; /* on_message answers each message with this many bytes */
} fixture_t;

static fixture_t fx;

static void on_message(srv_conn_t *conn, srv_msg_t *msg, void *data) {
  fixture_t *f = data;
  f->conn = conn;
  f->delivered++;
  ck_assert_int_lt(f->nheld, MAX_HELD);
  f->held[f->nheld++] = msg;
  if (f->answer_bytes) {
    char *answer = malloc(f->answer_bytes);
    memset(answer, 'a', f->answer_bytes);
    srv_conn_send(conn, answer, f->answer_bytes);
  }
}

static void on_close(srv_conn_t *conn, void *data) {
  fixture_t *f = data;
  (void)conn;
  f->closes++;
}

static void on_fatal(srv_conn_t *conn, const pto_error_t *err, const uint32_t *msgid, void *data) {
  fixture_t *f = data;
  char *bye = strdup("bye");
  (void)err;
  f->fatals++;
  f->fatal_has_msgid = msgid != NULL;
  if (msgid) f->fatal_msgid = *msgid;
  srv_conn_send(conn, bye, 3);
}

static srv_options_t options(void) { return test_server_options(fx.path); }

static void start(const srv_options_t *o) {
  srv_handlers_t h = {on_message, on_close, on_fatal, &fx};
  pto_error_t err;
  ck_assert_int_eq(srv_create(&fx.loop, o, &h, &fx.srv, &err), 0);
  ck_assert_int_eq(srv_listen(fx.srv, &err), 0);
}

static void setup(void) {
  memset(&fx, 0, sizeof(fx));
  snprintf(fx.dir, sizeof(fx.dir), "/tmp/ptod-srv-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(fx.dir));
  snprintf(fx.path, sizeof(fx.path), "%s/s.sock", fx.dir);
  uv_loop_init(&fx.loop);
}

static void done_all(void) {
  for (int i = 0; i < fx.nheld; i++) srv_msg_done(fx.conn, fx.held[i]);
  fx.nheld = 0;
}

static void teardown(void) {
  done_all();
  if (fx.srv) srv_close(fx.srv);
  uv_run(&fx.loop, UV_RUN_DEFAULT);
  ck_assert_int_eq(uv_loop_close(&fx.loop), 0); /* every handle closed */
  rmdir(fx.dir);
}

static int connect_client(void) {
  struct sockaddr_un addr;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", fx.path);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
  return fd;
}

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/* Run the loop until cond holds, however long the machine takes: each
 * round blocks until the server has an event, so nothing here depends on
 * how fast the loop gets the CPU.  A cond that never comes true fails the
 * test at Check's timeout. */
#define RUN_UNTIL(cond)                                  \
  do {                                                   \
    while (!(cond)) uv_run(&fx.loop, UV_RUN_ONCE);       \
  } while (0)

/* Run the loop for ms milliseconds (it has nothing to wait on of ours). */
static void run_for(int ms) {
  uint64_t end = now_ms() + (uint64_t)ms;
  while (now_ms() < end) {
    uv_run(&fx.loop, UV_RUN_NOWAIT);
    poll(NULL, 0, 1);
  }
}

/* [0, id, "ping", []] */
static size_t ping(uint32_t id, char *buf) {
  buf[0] = (char)0x94;
  buf[1] = 0x00;
  buf[2] = (char)0xce;
  buf[3] = (char)(id >> 24);
  buf[4] = (char)(id >> 16);
  buf[5] = (char)(id >> 8);
  buf[6] = (char)id;
  memcpy(buf + 7, "\xa4ping\x90", 6);
  return 13;
}

static void send_pings(int fd, uint32_t first, int n) {
  char buf[16];
  for (int i = 0; i < n; i++) {
    size_t len = ping(first + (uint32_t)i, buf);
    ck_assert_int_eq(write(fd, buf, len), (ssize_t)len);
  }
}

/* Whether the peer closed, reading what came before and running the loop
 * meanwhile: read returns 0, or ECONNRESET when the server closed with
 * bytes of ours unread (it cut us mid-message).  False when more than cap
 * bytes came or the read failed otherwise. */
static bool closed_after(int fd, char *got, size_t cap, size_t *ret_len) {
  size_t len = 0;
  for (;;) {
    ssize_t n = recv(fd, got + len, cap - len, MSG_DONTWAIT);
    *ret_len = len;
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return true;
    if (n < 0 && errno != EAGAIN) return false;
    if (n > 0) len += (size_t)n;
    if (len == cap) return false;
    if (n < 0) {
      /* The server's socket is closed on the closer's thread (closer.h),
       * which the loop does not hear of: run what is ready, then wait for
       * the peer's end on the client socket itself. */
      struct pollfd p = {.fd = fd, .events = POLLIN};
      uv_run(&fx.loop, UV_RUN_NOWAIT);
      poll(&p, 1, 10);
    }
  }
}

/* Answer every message as it comes until the server gives the connection
 * its fatal error (which waits for them). */
static void answer_until_fatal(void) {
  while (!fx.fatals) {
    done_all();
    uv_run(&fx.loop, UV_RUN_ONCE);
  }
}

START_TEST(max_pending_pauses_and_resumes) {
  srv_options_t o = options();
  int fd;
  o.max_pending = 2;
  start(&o);
  fd = connect_client();
  send_pings(fd, 1, 5);
  RUN_UNTIL(fx.delivered >= 2);
  run_for(20); /* a third would come now if max_pending did not hold it */
  ck_assert_int_eq(fx.delivered, 2);
  ck_assert_uint_eq(srv_conn_pending(fx.conn), 2);
  srv_msg_done(fx.conn, fx.held[--fx.nheld]);
  RUN_UNTIL(fx.delivered >= 3);
  ck_assert_int_eq(fx.delivered, 3);
  done_all();
  RUN_UNTIL(fx.delivered >= 5);
  ck_assert_int_eq(fx.delivered, 5);
  done_all();
  close(fd);
  RUN_UNTIL(fx.closes == 1);
}
END_TEST

START_TEST(fatal_waits_for_pending_answers) {
  srv_options_t o = options();
  char got[64];
  size_t len;
  int fd;
  start(&o);
  fd = connect_client();
  send_pings(fd, 7, 1);
  ck_assert_int_eq(write(fd, "\xc1", 1), 1);
  RUN_UNTIL(fx.delivered == 1);
  run_for(20); /* the 0xc1 is read by now on an idle machine; the fatal must wait anyway */
  ck_assert_int_eq(fx.fatals, 0); /* the ping is not answered yet */
  srv_conn_send(fx.conn, strdup("pong"), 4);
  done_all();
  ck_assert(closed_after(fd, got, sizeof(got), &len));
  ck_assert_int_eq(fx.fatals, 1);
  ck_assert(!fx.fatal_has_msgid); /* 0xc1 is no request */
  ck_assert_uint_eq(len, 7);
  ck_assert_int_eq(memcmp(got, "pongbye", 7), 0);
  close(fd);
}
END_TEST

START_TEST(too_large_request_answers_its_msgid) {
  srv_options_t o = options();
  char got[64], big[32] = "\x94\x00\xce\x00\x00\x00\x09\xa4ping\x91\xc6\x00\x10\x00\x00";
  size_t len;
  int fd;
  o.max_message = 4096;
  start(&o);
  fd = connect_client();
  ck_assert_int_eq(write(fd, big, 18), 18);
  ck_assert(closed_after(fd, got, sizeof(got), &len));
  ck_assert_int_eq(fx.fatals, 1);
  ck_assert(fx.fatal_has_msgid);
  ck_assert_uint_eq(fx.fatal_msgid, 9);
  close(fd);
}
END_TEST

START_TEST(output_limit_closes_a_client_that_does_not_read) {
  srv_options_t o = options();
  srv_memory_t m;
  int fd;
  o.output_limit = 64 * 1024;
  fx.answer_bytes = 32 * 1024;
  start(&o);
  fd = connect_client();
  send_pings(fd, 1, 60); /* ~2 MiB of answers, never read */
  RUN_UNTIL(fx.closes == 1);
  done_all();
  srv_memory(fx.srv, &m);
  ck_assert_uint_eq(m.output, 0);
  ck_assert_uint_eq(m.input, 0);
  close(fd);
}
END_TEST

START_TEST(input_limit_pauses_reading) {
  srv_options_t o = options();
  srv_memory_t m;
  char *msg = calloc(1, 40000);
  int fd;
  size_t len;
  o.input_limit = 128 * 1024;
  start(&o);
  fd = connect_client();
  /* [0, 1, "ping", [bin of 39980 bytes]] */
  memcpy(msg, "\x94\x00\x01\xa4ping\x91\xc5\x9c\x2c", 12);
  len = 12 + 0x9c2c;
  fcntl(fd, F_SETFL, O_NONBLOCK);
  /* As much of 20 messages as the socket takes in 300 ms. */
  {
    size_t at = 0, total = 20 * len;
    uint64_t end = now_ms() + 300;
    while (at < total && now_ms() < end) {
      ssize_t n = write(fd, msg + at % len, len - at % len);
      if (n > 0) at += (size_t)n;
      run_for(1);
    }
    ck_assert_uint_lt(at, total); /* the server stopped reading */
    run_for(50);
    ck_assert_int_lt(fx.delivered, 20);
    ck_assert_int_ge(fx.delivered, 2);
    srv_memory(fx.srv, &m);
    ck_assert_uint_le(m.input, o.input_limit + 2 * len + 64 * 1024);
    /* Done with them: the rest is read and delivered. */
    while (at < total) {
      ssize_t n;
      done_all();
      n = write(fd, msg + at % len, len - at % len);
      if (n > 0) at += (size_t)n;
      run_for(1);
    }
  }
  while (fx.delivered < 20) {
    done_all();
    run_for(10);
  }
  done_all();
  free(msg);
  close(fd);
}
END_TEST

START_TEST(client_timeout_counts_from_the_first_byte) {
  srv_options_t o = options();
  char buf[16], got[16];
  size_t len = 0, n = ping(1, buf);
  int fd;
  o.client_timeout_ms = 150;
  start(&o);
  fd = connect_client();
  /* One byte every 40 ms: each byte is in time, the message is not. */
  for (size_t i = 0; i + 1 < n && fx.closes == 0; i++) {
    ck_assert_int_eq(write(fd, buf + i, 1), 1);
    run_for(40);
  }
  ck_assert_int_eq(fx.closes, 1);
  ck_assert_int_eq(fx.delivered, 0);
  ck_assert(closed_after(fd, got, sizeof(got), &len));
  close(fd);
}
END_TEST

START_TEST(idle_timeout_closes_an_idle_connection) {
  srv_options_t o = options();
  int fd;
  o.idle_timeout_ms = 50;
  start(&o);
  fd = connect_client();
  send_pings(fd, 1, 1);
  RUN_UNTIL(fx.delivered == 1);
  run_for(100); /* twice idle_timeout */
  ck_assert_int_eq(fx.closes, 0); /* a request is pending: not idle */
  done_all();
  RUN_UNTIL(fx.closes == 1); /* the idle timer's 50 ms, however late the loop runs */
  close(fd);
}
END_TEST

/* Send one ping with `nfds` copies of fd attached (SCM_RIGHTS). */
static void send_ping_with_fds(int sock, uint32_t id, int fd, int nfds) {
  char buf[16], control[CMSG_SPACE(sizeof(int) * 16)];
  struct iovec iov = {buf, ping(id, buf)};
  struct msghdr mh = {0};
  struct cmsghdr *c;
  memset(control, 0, sizeof(control));
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control;
  mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
  c = CMSG_FIRSTHDR(&mh);
  c->cmsg_level = SOL_SOCKET;
  c->cmsg_type = SCM_RIGHTS;
  c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
  for (int i = 0; i < nfds; i++) memcpy(CMSG_DATA(c) + i * sizeof(int), &fd, sizeof(int));
  ck_assert_int_eq(sendmsg(sock, &mh, 0), (ssize_t)iov.iov_len);
}

START_TEST(passed_fds_queue_in_order) {
  srv_options_t o = options();
  struct stat a, b;
  unsigned together;
  int fd, fa, fb, got;
  start(&o);
  fd = connect_client();
  fa = memfd_create("a", MFD_CLOEXEC);
  fb = memfd_create("b", MFD_CLOEXEC);
  ck_assert_int_eq(ftruncate(fa, 4096), 0);
  ck_assert_int_eq(ftruncate(fb, 8192), 0);
  send_ping_with_fds(fd, 1, fa, 1);
  send_ping_with_fds(fd, 2, fb, 1);
  RUN_UNTIL(fx.delivered == 2);
  got = srv_conn_take_fd(fx.conn, &together); /* the oldest first */
  ck_assert_uint_eq(together, 1);
  ck_assert_int_ge(got, 0);
  ck_assert_int_eq(fstat(got, &a), 0);
  ck_assert_int_eq(a.st_size, 4096);
  close(got);
  got = srv_conn_take_fd(fx.conn, &together);
  ck_assert_int_eq(fstat(got, &b), 0);
  ck_assert_int_eq(b.st_size, 8192);
  close(got);
  ck_assert_int_eq(srv_conn_take_fd(fx.conn, &together), -1);
  /* Two on one sendmsg: taken together, the second closed. */
  send_ping_with_fds(fd, 3, fa, 2);
  RUN_UNTIL(fx.delivered == 3);
  got = srv_conn_take_fd(fx.conn, &together);
  ck_assert_uint_eq(together, 2);
  close(got);
  ck_assert_int_eq(srv_conn_take_fd(fx.conn, &together), -1);
  close(fa);
  close(fb);
  close(fd);
}
END_TEST

START_TEST(too_many_unclaimed_fds_fail_the_connection) {
  srv_options_t o = options();
  char got[64];
  size_t len;
  int fd, mfd;
  start(&o);
  fd = connect_client();
  mfd = memfd_create("m", MFD_CLOEXEC);
  for (uint32_t i = 1; i <= 9; i++) send_ping_with_fds(fd, i, mfd, 1);
  answer_until_fatal();
  ck_assert_int_eq(fx.delivered, 9); /* the ninth fd's ping is still answered */
  ck_assert(closed_after(fd, got, sizeof(got), &len));
  ck_assert_int_eq(fx.fatals, 1);
  close(mfd);
  close(fd);
}
END_TEST

START_TEST(truncated_fds_fail_the_connection) {
  srv_options_t o = options();
  char got[64];
  size_t len;
  int fd, mfd;
  start(&o);
  fd = connect_client();
  mfd = memfd_create("m", MFD_CLOEXEC);
  send_ping_with_fds(fd, 1, mfd, 12); /* more than the daemon's ancillary buffer holds */
  answer_until_fatal();
  ck_assert_int_eq(fx.delivered, 1);
  ck_assert(closed_after(fd, got, sizeof(got), &len));
  ck_assert_int_eq(fx.fatals, 1);
  close(mfd);
  close(fd);
}
END_TEST

static Suite *server_suite(void) {
  Suite *s = suite_create("server");
  TCase *tc = tcase_create("server");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, max_pending_pauses_and_resumes);
  tcase_add_test(tc, fatal_waits_for_pending_answers);
  tcase_add_test(tc, too_large_request_answers_its_msgid);
  tcase_add_test(tc, output_limit_closes_a_client_that_does_not_read);
  tcase_add_test(tc, input_limit_pauses_reading);
  tcase_add_test(tc, client_timeout_counts_from_the_first_byte);
  tcase_add_test(tc, idle_timeout_closes_an_idle_connection);
  tcase_add_test(tc, passed_fds_queue_in_order);
  tcase_add_test(tc, too_many_unclaimed_fds_fail_the_connection);
  tcase_add_test(tc, truncated_fds_fail_the_connection);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(server_suite)
