/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_wire — libptoclient against a scripted daemon: a socket this
 * test listens on, so that it sees the exact request bytes the library
 * sends and writes answers of any shape back: the request table's output
 * for every method, what the library refuses before anything is sent,
 * answers with keys it does not know, keys of the wrong type or missing,
 * and large answers (received into one buffer that comes back when a
 * result is freed, kept results, results freed on another thread). */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <msgpack.h>
#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"
#include "msgpack_build.h"
#include "reader.h"

/* --- the scripted daemon ---------------------------------------------------- */

typedef struct fake {
  tpeer_t peer; /* peer.fd: the client's connection, accepted */
  pto_client_t *c;
  uint8_t in[1 << 16]; /* request bytes read and not yet framed */
  size_t in_len;
  pthread_t writer;
  bool writing;
} fake_t;

static fake_t f;
static pto_error_t err;
static char text[4096];

static void setup(void) {
  memset(&f, 0, sizeof(f));
  tpeer_open(&f.peer, &f.c);
}

static void fake_join(void) {
  if (f.writing) pthread_join(f.writer, NULL);
  f.writing = false;
}

static void teardown(void) {
  fake_join();
  pto_client_close(f.c);
  tpeer_close(&f.peer);
}

/* The next request the client sent, as text ("[0, 1, \"ping\", []]"). */
static const char *fake_request(void) {
  proto_reader_t r;
  size_t len = 0;
  proto_reader_init(&r, sizeof(f.in));
  for (;;) {
    struct pollfd p = {.fd = f.peer.fd, .events = POLLIN};
    ssize_t n;
    if (f.in_len && proto_reader_feed(&r, f.in, f.in_len, &len, NULL) == 1) break;
    ck_assert_msg(poll(&p, 1, WAIT_MS) == 1, "poll: %s", strerror(errno));
    n = read(f.peer.fd, f.in + f.in_len, sizeof(f.in) - f.in_len);
    ck_assert_int_gt(n, 0);
    f.in_len += (size_t)n;
  }
  mb_print_bytes(f.in, len, text, sizeof(text));
  memmove(f.in, f.in + len, f.in_len - len);
  f.in_len -= len;
  return text;
}

/* Whether the client has sent nothing more. */
static bool fake_quiet(void) {
  struct pollfd p = {.fd = f.peer.fd, .events = POLLIN};
  return f.in_len == 0 && poll(&p, 1, 0) == 0;
}

static void write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return; /* the client went away: its test says why */
    p += n;
    len -= (size_t)n;
  }
}

/* Answer with the msgpack text (mb_pack notation), printf-formatted. */
static void fake_answer(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void fake_answer(const char *fmt, ...) {
  char buf[4096];
  va_list ap;
  msgpack_sbuffer sb;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  sb = mb_build(buf);
  write_all(f.peer.fd, sb.data, sb.size);
  msgpack_sbuffer_destroy(&sb);
}

/* A buffer.read answer [1, msgid, nil, bin] of `size` bytes of `fill`. */
static msgpack_sbuffer big_answer(uint32_t msgid, size_t size, uint8_t fill) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_uint8(&pk, 1);
  msgpack_pack_uint32(&pk, msgid);
  msgpack_pack_nil(&pk);
  msgpack_pack_bin(&pk, size);
  for (size_t done = 0; done < size;) {
    static uint8_t chunk[1 << 16];
    size_t n = size - done < sizeof(chunk) ? size - done : sizeof(chunk);
    memset(chunk, fill, n);
    msgpack_pack_bin_body(&pk, chunk, n);
    done += n;
  }
  return sb;
}

/* Write bytes (taken over) from a thread of their own: a large answer does
 * not fit the socket's buffer, so the client must read while it is written. */
typedef struct write_job {
  int fd;
  msgpack_sbuffer sb;
} write_job_t;

static void *write_thread(void *arg) {
  write_job_t *j = arg;
  write_all(j->fd, j->sb.data, j->sb.size);
  msgpack_sbuffer_destroy(&j->sb);
  free(j);
  return NULL;
}

static void fake_answer_async(msgpack_sbuffer sb) {
  write_job_t *j = malloc(sizeof(*j));
  ck_assert_ptr_nonnull(j);
  fake_join();
  j->fd = f.peer.fd;
  j->sb = sb;
  ck_assert_int_eq(pthread_create(&f.writer, NULL, write_thread, j), 0);
  f.writing = true;
}

static uint32_t send_req(const pto_request_t *req) {
  uint32_t msgid = 0;
  ck_assert_msg(pto_client_send(f.c, req, WAIT_MS, &msgid, &err) == 0, "%s", err.message);
  return msgid;
}

static void *wait_ok(uint32_t msgid) {
  void *r = NULL;
  ck_assert_msg(pto_client_wait(f.c, msgid, WAIT_MS, &r, &err) == 0, "%s", err.message);
  return r;
}

/* --- requests: the table's output ------------------------------------------- */

/* Send req and check the request the daemon gets, with its msgid. */
static void expect_request(const pto_request_t *req, const char *method, const char *params) {
  char want[2048];
  uint32_t msgid = send_req(req);
  snprintf(want, sizeof(want), "[0, %u, \"%s\", %s]", msgid, method, params);
  ck_assert_str_eq(fake_request(), want);
}

START_TEST(requests_on_the_wire) {
  pto_request_t req = {.method = PTO_METHOD_PING};
  pto_config_t *cfg;
  pto_dispatch_arg_t args[] = {pto_arg_input("ab", 2), pto_arg_inout("", 0), pto_arg_output(4),
                               pto_arg_int(-3), pto_arg_float(1.5), pto_arg_buffer("w"),
                               pto_arg_slice("kv", 8, 16)};

  expect_request(&req, "ping", "[]");
  req.method = PTO_METHOD_SHM_LIST;
  expect_request(&req, "shm.list", "[]");

  req = (pto_request_t){.method = PTO_METHOD_BUFFER_ALLOC};
  req.u.buffer_alloc.name = "kv";
  req.u.buffer_alloc.bytes = 3;
  expect_request(&req, "buffer.alloc", "[{\"name\": \"kv\", \"bytes\": 3}]");
  req.u.buffer_alloc.init = "abc";
  expect_request(&req, "buffer.alloc", "[{\"name\": \"kv\", \"bytes\": 3, \"init\": b\"abc\"}]");

  req = (pto_request_t){.method = PTO_METHOD_BUFFER_WRITE};
  req.u.buffer_write.name = "kv";
  expect_request(&req, "buffer.write", "[{\"name\": \"kv\", \"data\": b\"\"}]");
  req.u.buffer_write.offset = 4;
  req.u.buffer_write.data = "xyz";
  req.u.buffer_write.len = 2;
  expect_request(&req, "buffer.write", "[{\"name\": \"kv\", \"offset\": 4, \"data\": b\"xy\"}]");

  req = (pto_request_t){.method = PTO_METHOD_BUFFER_READ};
  req.u.buffer_read.name = "kv";
  expect_request(&req, "buffer.read", "[{\"name\": \"kv\"}]");
  req.u.buffer_read.offset = 4;
  req.u.buffer_read.bytes = 8;
  expect_request(&req, "buffer.read", "[{\"name\": \"kv\", \"offset\": 4, \"bytes\": 8}]");

  req = (pto_request_t){.method = PTO_METHOD_BUFFER_FREE};
  req.u.buffer_free.name = "kv";
  expect_request(&req, "buffer.free", "[{\"name\": \"kv\"}]");

  ck_assert_int_eq(pto_config_new(&cfg), 0);
  req = (pto_request_t){.method = PTO_METHOD_PREWARM};
  expect_request(&req, "prewarm", "[]"); /* no config */
  req.u.prewarm.config = cfg;
  expect_request(&req, "prewarm", "[]"); /* an empty one */
  ck_assert_int_eq(pto_config_parse_ring(cfg, PTO_FIELD_HEAP, "2M", &err), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "future_knob", 7, &err), 0);
  expect_request(&req, "prewarm",
                 "[{\"config\": {\"ring_heap\": 2097152, \"future_knob\": 7}}]");

  req = (pto_request_t){.method = PTO_METHOD_DISPATCH};
  req.u.dispatch = (pto_dispatch_req_t){.program = "noop", .args = args, .nargs = 7};
  expect_request(&req, "dispatch",
                 "[{\"program\": \"noop\", \"args\": [{\"data\": b\"ab\"}, {\"data\": b\"\", \"dir\": "
                 "\"inout\"}, {\"out\": 4}, {\"scalar\": -3}, {\"scalar\": 1.5}, {\"buffer\": "
                 "\"w\"}, {\"buffer\": \"kv\", \"offset\": 8, \"bytes\": 16}]}]");
  req.u.dispatch = (pto_dispatch_req_t){.program = "noop", .config = cfg, .deadline_ms = 250};
  expect_request(&req, "dispatch",
                 "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_heap\": 2097152, "
                 "\"future_knob\": 7}, \"deadline_ms\": 250}]");
  req.u.dispatch.deadline_ms = -5; /* not > 0: no deadline */
  req.u.dispatch.config = NULL;
  expect_request(&req, "dispatch", "[{\"program\": \"noop\", \"args\": []}]");
  pto_config_free(cfg);
}
END_TEST

static void expect_refused(const pto_request_t *req, const char *message) {
  uint32_t msgid = 77;
  ck_assert_int_eq(pto_client_send(f.c, req, WAIT_MS, &msgid, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_int_eq(err.code, PTO_E_INVALID_ARGUMENT);
  ck_assert_str_eq(err.message, message);
  ck_assert_uint_eq(msgid, 77); /* not written on failure */
}

START_TEST(requests_refused_before_the_wire) {
  pto_request_t req = {.method = PTO_METHOD_BUFFER_ALLOC};
  pto_dispatch_arg_t bad[] = {pto_arg_int(1), {.kind = PTO_ARG_BUFFER}};

  expect_refused(&req, "A 'buffer.alloc' request needs a buffer name.");
  req.method = PTO_METHOD_BUFFER_READ;
  expect_refused(&req, "A 'buffer.read' request needs a buffer name.");
  req.method = PTO_METHOD_BUFFER_FREE;
  expect_refused(&req, "A 'buffer.free' request needs a buffer name.");
  req = (pto_request_t){.method = PTO_METHOD_BUFFER_WRITE};
  req.u.buffer_write.name = "kv";
  req.u.buffer_write.len = 3;
  expect_refused(&req, "A 'buffer.write' request needs its data (data is NULL, len is not 0).");

  req = (pto_request_t){.method = PTO_METHOD_DISPATCH};
  expect_refused(&req, "A 'dispatch' request needs a program name.");
  req.u.dispatch = (pto_dispatch_req_t){.program = "noop", .nargs = 2};
  expect_refused(&req, "A 'dispatch' request needs its arguments (args is NULL, nargs is not 0).");
  req.u.dispatch.args = bad;
  expect_refused(&req, "Dispatch argument 1 is invalid: kind 0 needs its name or data pointer.");

  req = (pto_request_t){.method = PTO_METHOD_SHM_REGISTER};
  expect_refused(&req, "'shm.register' cannot be sent with pto_client_send: a region is "
                       "registered with pto_shm_create() (its fd travels with the request) and "
                       "unregistered with pto_shm_free().");
  req.method = (pto_method_t)99;
  expect_refused(&req, "There is no method number 99.");

  ck_assert(fake_quiet());
  ck_assert_uint_eq(pto_client_pending(f.c), 0);
  req.method = PTO_METHOD_PING; /* the connection still works */
  expect_request(&req, "ping", "[]");
}
END_TEST

/* --- answers: decoded straight into the public structs ---------------------- */

#define SIZING                                                                   \
  "{\"ring_task_window\": [4, 8, 16, 32], \"ring_heap\": [1024, 1024, 2048, 1024], " \
  "\"ring_dep_pool\": [4, 5, 6, 7]}"

/* A status answer to msgid with `queue` and `tail` (the keys after
 * dispatches) spliced in. */
static void answer_status(uint32_t msgid, const char *queue, const char *tail) {
  fake_answer("[1, %u, nil, {\"device\": 2, \"platform\": \"sim\", \"version\": \"9.9\", "
              "\"uptime_s\": 5, \"state\": \"ready\", \"queue\": %s, \"arena\": {\"sizing\": "
              SIZING ", \"key\": \"00000000000000ab\", \"bytes\": 1, \"build_us\": 2, "
              "\"builds\": 3, \"hits\": 4, \"misses\": 5, \"prewarm\": {\"sizing\": " SIZING
              ", \"key\": \"00000000000000cd\", \"first_dispatch_hit\": nil}}, \"memory\": "
              "{\"limit\": 11, \"arena\": 12, \"buffers\": 13, \"free\": 14}, \"dispatches\": "
              "{\"ok\": 21, \"failed\": 22, \"rejected\": 23}%s}]",
              msgid, queue, tail);
}

#define QUEUE "{\"depth\": 1, \"capacity\": 64, \"running\": 0}"
#define TAIL ", \"clients\": 3, \"client_memory\": {\"input\": 31, \"output\": 32, \"limit\": 33}"

START_TEST(answer_fills_the_public_struct) {
  pto_request_t req = {.method = PTO_METHOD_STATUS};
  uint32_t msgid = send_req(&req);
  pto_status_t *st;
  answer_status(msgid, QUEUE, TAIL);
  st = wait_ok(msgid);
  ck_assert_uint_eq(st->device, 2);
  ck_assert_str_eq(st->platform, "sim");
  ck_assert_str_eq(st->version, "9.9");
  ck_assert_uint_eq(st->uptime_s, 5);
  ck_assert_uint_eq(st->queue.depth, 1);
  ck_assert_uint_eq(st->queue.capacity, 64);
  ck_assert_uint_eq(st->arena.sizing.value[PTO_FIELD_TASK_WINDOW][3], 32);
  ck_assert_uint_eq(st->arena.sizing.value[PTO_FIELD_HEAP][2], 2048);
  ck_assert_uint_eq(st->arena.sizing.value[PTO_FIELD_DEP_POOL][1], 5);
  ck_assert_uint_eq(st->arena.key, 0xab);
  ck_assert_uint_eq(st->arena.misses, 5);
  ck_assert_uint_eq(st->arena.prewarm.key, 0xcd);
  ck_assert_int_eq(st->arena.prewarm.first_dispatch_hit, -1); /* nil */
  ck_assert_uint_eq(st->memory.free, 14);
  ck_assert_uint_eq(st->dispatches.rejected, 23);
  ck_assert_uint_eq(st->clients, 3);
  ck_assert_uint_eq(st->client_memory.input, 31);
  ck_assert_uint_eq(st->client_memory.output, 32);
  ck_assert_uint_eq(st->client_memory.limit, 33);
  /* A daemon before the memory model sends no per_connection: left 0. */
  ck_assert_uint_eq(st->client_memory.per_connection.input_limit, 0);
  ck_assert_int_eq(pto_client_device(f.c), 2);
  pto_result_free(st);

  msgid = send_req(&req);
  answer_status(msgid, QUEUE,
                ", \"clients\": 3, \"client_memory\": {\"input\": 31, \"output\": 32, \"limit\": "
                "33, \"per_connection\": {\"input_limit\": 41, \"output_limit\": 42, "
                "\"most_input\": 43, \"most_output\": 44}}");
  st = wait_ok(msgid);
  ck_assert_uint_eq(st->client_memory.per_connection.input_limit, 41);
  ck_assert_uint_eq(st->client_memory.per_connection.output_limit, 42);
  ck_assert_uint_eq(st->client_memory.per_connection.most_input, 43);
  ck_assert_uint_eq(st->client_memory.per_connection.most_output, 44);
  pto_result_free(st);
}
END_TEST

START_TEST(answer_with_unknown_keys) {
  pto_request_t req = {.method = PTO_METHOD_PING};
  uint32_t msgid = send_req(&req);
  pto_ping_t *ping;
  pto_status_t *st;
  const void *raw;
  size_t raw_len, off = 0;
  msgpack_unpacked up;

  /* A newer daemon's keys, at the top and nested, are not this client's
   * concern (docs/protocol.md: clients ignore keys they do not know). */
  fake_answer("[1, %u, nil, {\"version\": \"9.9\", \"teleport\": {\"range\": [1, 2]}, "
              "\"device\": 3, \"state\": \"ready\", \"features\": [\"shm\", \"warp\"]}]",
              msgid);
  ping = wait_ok(msgid);
  ck_assert_str_eq(ping->version, "9.9");
  ck_assert_uint_eq(ping->device, 3);
  ck_assert_str_eq(ping->state, "ready");
  ck_assert_uint_eq(ping->nfeatures, 2);
  ck_assert(pto_ping_has_feature(ping, "warp"));
  ck_assert(!pto_ping_has_feature(ping, "dfx"));
  /* ... and still there in the raw result. */
  pto_result_msgpack(ping, &raw, &raw_len);
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(msgpack_unpack_next(&up, raw, raw_len, &off), MSGPACK_UNPACK_SUCCESS);
  ck_assert_str_eq(mb_print(&up.data.via.map.ptr[1].key, text, sizeof(text)), "\"teleport\"");
  msgpack_unpacked_destroy(&up);
  pto_result_free(ping);

  req.method = PTO_METHOD_STATUS;
  msgid = send_req(&req);
  answer_status(msgid, "{\"depth\": 1, \"lanes\": 9, \"capacity\": 64, \"running\": 0}",
                TAIL ", \"gpus\": [\"a\"]");
  st = wait_ok(msgid);
  ck_assert_uint_eq(st->queue.capacity, 64);
  ck_assert_uint_eq(st->client_memory.limit, 33);
  pto_result_free(st);

  /* A 1.0 daemon's status has no client_memory (added in 1.1): left 0. */
  msgid = send_req(&req);
  answer_status(msgid, QUEUE, ", \"clients\": 3");
  st = wait_ok(msgid);
  ck_assert_uint_eq(st->clients, 3);
  ck_assert_uint_eq(st->client_memory.limit, 0);
  pto_result_free(st);
}
END_TEST

/* The request fails with PROTOCOL_ERROR naming the key; the connection
 * stays usable. */
static void expect_undecodable(uint32_t msgid, const char *method, const char *why,
                               const char *key) {
  char want[1024];
  void *r = NULL;
  pto_request_t ping = {.method = PTO_METHOD_PING};
  ck_assert_int_eq(pto_client_wait(f.c, msgid, WAIT_MS, &r, &err), -PTO_E_PROTOCOL_ERROR);
  ck_assert_ptr_null(r);
  snprintf(want, sizeof(want),
           "The daemon's answer to '%s' could not be decoded: %s Is the daemon a newer protocol "
           "version than this client?",
           method, why);
  ck_assert_str_eq(err.message, want);
  ck_assert_str_eq(err.key, key);
  ck_assert(pto_client_alive(f.c));
  msgid = send_req(&ping);
  snprintf(want, sizeof(want), "[0, %u, \"ping\", []]", msgid);
  ck_assert_str_eq(fake_request(), want);
  fake_answer("[1, %u, nil, {\"version\": \"1\", \"device\": 0, \"state\": \"ready\"}]", msgid);
  pto_result_free(wait_ok(msgid));
}

START_TEST(answer_with_a_wrong_type_or_a_missing_key) {
  pto_request_t req = {.method = PTO_METHOD_STATUS};
  uint32_t msgid = send_req(&req);

  fake_request();
  answer_status(msgid, "{\"depth\": \"1\", \"capacity\": 64, \"running\": 0}", TAIL);
  expect_undecodable(msgid, "status",
                     "key 'queue.depth' in status result must be an integer >= 0, got \"1\".",
                     "queue.depth");

  msgid = send_req(&req);
  fake_request();
  answer_status(msgid, QUEUE, ", \"client_memory\": {\"input\": 31, \"output\": 32, \"limit\": 33}");
  expect_undecodable(msgid, "status", "missing required key 'clients' in status result.",
                     "clients");
}
END_TEST

/* --- large answers: one receive buffer, lent and given back ------------------ */

/* Larger than glibc's largest mmap threshold (32 MiB): a buffer of this size
 * that is not reused is a fresh mapping, faulted in page by page. */
#define BIG ((size_t)48 << 20)

static long thread_minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_THREAD, &ru);
  return ru.ru_minflt;
}

static bool filled(const pto_bytes_t *b, size_t size, uint8_t fill) {
  if (!b || b->len != size) return false;
  for (size_t i = 0; i < size; i += 4093)
    if (b->ptr[i] != fill) return false;
  return b->ptr[size - 1] == fill;
}

/* A buffer.read answered with `size` bytes of `fill`; *ret_faults (may be
 * NULL): this thread's page faults while the answer was received. */
static pto_bytes_t *read_big(size_t size, uint8_t fill, long *ret_faults) {
  pto_request_t req = {.method = PTO_METHOD_BUFFER_READ};
  msgpack_sbuffer answer;
  pto_bytes_t *r;
  uint32_t msgid;
  long before;
  req.u.buffer_read.name = "big";
  msgid = send_req(&req);
  answer = big_answer(msgid, size, fill); /* built (and faulted in) before counting */
  before = thread_minflt();
  fake_answer_async(answer);
  r = wait_ok(msgid);
  if (ret_faults) *ret_faults = thread_minflt() - before;
  ck_assert_msg(filled(r, size, fill), "answer of %zu bytes of 0x%02x is wrong", size, fill);
  return r;
}

START_TEST(large_answers_land_in_one_buffer) {
  long faults[3];
  for (int round = 0; round < 3; round++)
    pto_result_free(read_big(BIG, (uint8_t)(0x10 + round), &faults[round]));
  /* The first answer grew the buffer (12288 fresh pages); freeing its result
   * gave the buffer back, so the next ones land in pages already there. */
  ck_assert_msg(faults[1] < 1024 && faults[2] < 1024,
                "page faults per %zu MiB answer: %ld, then %ld and %ld", BIG >> 20, faults[0],
                faults[1], faults[2]);
}
END_TEST

START_TEST(results_kept_past_the_next_answer) {
  pto_bytes_t *a = read_big(1 << 20, 0xa1, NULL);
  pto_bytes_t *b = read_big(1 << 20, 0xb2, NULL); /* a still held: b gets a buffer of its own */
  pto_bytes_t *c;
  ck_assert(filled(a, 1 << 20, 0xa1));
  pto_result_free(a);
  c = read_big(1 << 20, 0xc3, NULL); /* into a's buffer, given back */
  ck_assert(filled(b, 1 << 20, 0xb2));
  pto_result_free(c);
  pto_client_close(f.c); /* a result outlives its connection */
  f.c = NULL;
  ck_assert(filled(b, 1 << 20, 0xb2));
  pto_result_free(b);
}
END_TEST

typedef struct freer {
  pto_bytes_t *r;
  uint8_t fill;
  bool ok;
} freer_t;

static void *check_and_free(void *arg) {
  freer_t *fr = arg;
  fr->ok = filled(fr->r, 256 << 10, fr->fill);
  pto_result_free(fr->r);
  return NULL;
}

START_TEST(results_freed_on_another_thread) {
  enum { N = 24 };
  pthread_t t[N];
  freer_t fr[N];
  for (int i = 0; i < N; i++) {
    fr[i] = (freer_t){.r = read_big(256 << 10, (uint8_t)i, NULL), .fill = (uint8_t)i};
    ck_assert_int_eq(pthread_create(&t[i], NULL, check_and_free, &fr[i]), 0);
  }
  for (int i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    ck_assert_msg(fr[i].ok, "result %d changed before it was freed", i);
  }
}
END_TEST

START_TEST(answers_back_to_back_in_one_write) {
  pto_request_t read = {.method = PTO_METHOD_BUFFER_READ}, ping = {.method = PTO_METHOD_PING};
  msgpack_sbuffer both;
  uint32_t big, small;
  pto_bytes_t *r;
  pto_ping_t *p;
  read.u.buffer_read.name = "big";

  /* A large answer, and a small one in the bytes right after it. */
  big = send_req(&read);
  small = send_req(&ping);
  both = big_answer(big, 200 << 10, 0x5a);
  snprintf(text, sizeof(text), "[1, %u, nil, {\"version\": \"1\", \"device\": 0, \"state\": "
           "\"ready\"}]", small);
  mb_pack(&both, text);
  fake_answer_async(both);
  p = wait_ok(small);
  ck_assert_str_eq(p->state, "ready");
  r = wait_ok(big);
  ck_assert(filled(r, 200 << 10, 0x5a));
  pto_result_free(p);
  pto_result_free(r);

  /* The other way round. */
  small = send_req(&ping);
  big = send_req(&read);
  msgpack_sbuffer_init(&both);
  snprintf(text, sizeof(text), "[1, %u, nil, {\"version\": \"2\", \"device\": 0, \"state\": "
           "\"ready\"}]", small);
  mb_pack(&both, text);
  {
    msgpack_sbuffer tail = big_answer(big, 300 << 10, 0x6b);
    msgpack_sbuffer_write(&both, tail.data, tail.size);
    msgpack_sbuffer_destroy(&tail);
  }
  fake_answer_async(both);
  r = wait_ok(big);
  ck_assert(filled(r, 300 << 10, 0x6b));
  p = wait_ok(small);
  ck_assert_str_eq(p->version, "2");
  pto_result_free(r);
  pto_result_free(p);
}
END_TEST

static Suite *client_wire_suite(void) {
  Suite *s = suite_create("client_wire");
  TCase *tc = tcase_create("wire");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, requests_on_the_wire);
  tcase_add_test(tc, requests_refused_before_the_wire);
  tcase_add_test(tc, answer_fills_the_public_struct);
  tcase_add_test(tc, answer_with_unknown_keys);
  tcase_add_test(tc, answer_with_a_wrong_type_or_a_missing_key);
  tcase_add_test(tc, large_answers_land_in_one_buffer);
  tcase_add_test(tc, results_kept_past_the_next_answer);
  tcase_add_test(tc, results_freed_on_another_thread);
  tcase_add_test(tc, answers_back_to_back_in_one_write);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_wire_suite)
