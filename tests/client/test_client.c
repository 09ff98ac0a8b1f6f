/* SPDX-License-Identifier: Apache-2.0 */
/* libptoclient against a real ptod: every helper and its errors, the config
 * pass-through, pipelining, deadlines, a daemon that dies or refuses. */
#include <check.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <pto/client.h>
#include <pto/version.h>

#include "check_main.h"
#include "fixture.h"
#include "methods.h"
#include "paths.h"
#include "reader.h"

#define HEAP_1M (UINT64_C(1) << 20)

static tdaemon_t daemon0;
static pto_client_t *cl;
static pto_error_t err;

static void start(const char *const *overrides) {
  tdaemon_start(&daemon0, overrides);
  ck_assert_int_eq(pto_client_connect(daemon0.socket, WAIT_MS, &cl, &err), 0);
}

static void setup(void) {
  pto_error_clear(&err);
  cl = NULL;
  start(NULL);
}

static void teardown(void) {
  pto_client_close(cl);
  cl = NULL;
  tdaemon_stop(&daemon0);
}

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Wait until the daemon reports a running dispatch (asked on c). */
static void wait_running(pto_client_t *c) {
  for (int i = 0; i < 20000; i++) {
    pto_status_t *st = NULL;
    uint64_t running;
    ck_assert_int_eq(pto_client_status(c, WAIT_MS, &st, &err), 0);
    running = st->queue.running;
    pto_result_free(st);
    if (running) return;
    sleep_ms(1);
  }
  ck_abort_msg("the daemon never reported a running dispatch");
}

static pto_dispatch_req_t noop_req(pto_dispatch_arg_t args[3], int64_t task_us) {
  pto_dispatch_req_t req = {.program = "noop", .args = args, .nargs = 3};
  args[0] = pto_arg_int(1);
  args[1] = pto_arg_int(0);
  args[2] = pto_arg_int(task_us);
  return req;
}

/* --- connect -------------------------------------------------------------- */

START_TEST(test_connect_missing_socket) {
  pto_client_t *c = NULL;
  pto_error_t e;
  int rc = pto_client_connect("/tmp/ptoc-does-not-exist/ptod.sock", 100, &c, &e);
  ck_assert_int_eq(rc, -PTO_E_CONNECT_FAILED);
  ck_assert_ptr_null(c);
  ck_assert_int_eq(e.code, PTO_E_CONNECT_FAILED);
  ck_assert_str_eq(e.message,
                   "Cannot connect to ptod at '/tmp/ptoc-does-not-exist/ptod.sock': No such file "
                   "or directory.");
  ck_assert_ptr_nonnull(strstr(e.hint, "ptod is running"));
  ck_assert_str_eq(pto_client_error_name(rc), "CONNECT_FAILED");
  ck_assert(pto_client_error_is_local(rc));
  ck_assert(!pto_client_error_is_local(PTO_E_HEAP_RING_DEADLOCK));
  ck_assert_str_eq(pto_client_error_name(PTO_E_HEAP_RING_DEADLOCK), "HEAP_RING_DEADLOCK");
  ck_assert_str_eq(pto_client_error_name(0), "OK");
  ck_assert_str_eq(pto_client_error_name(4242), "UNKNOWN");
}
END_TEST

START_TEST(test_connect_bad_arguments) {
  pto_client_t *c = NULL;
  pto_error_t e;
  char path[200];
  memset(path, 'x', sizeof(path) - 1);
  path[0] = '/';
  path[sizeof(path) - 1] = '\0';
  ck_assert_int_eq(pto_client_connect(path, 100, &c, &e), -PTO_E_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(e.message, "must be 1 to 107 bytes long"));
  ck_assert_int_eq(pto_client_connect_device(256, 100, &c, &e), -PTO_E_INVALID_ARGUMENT);
  ck_assert_str_eq(e.message, "The device must be a number in 0..255, got 256.");
  ck_assert_int_eq(pto_client_connect(NULL, 100, &c, &e), -PTO_E_INVALID_ARGUMENT);
  ck_assert_ptr_null(c);
}
END_TEST

START_TEST(test_connect_device_uses_default_path) {
  pto_client_t *c = NULL;
  pto_error_t e;
  char path[PTO_SOCKET_PATH_MAX], want[300];
  ck_assert_int_eq(pto_default_socket_path(231, path, sizeof(path)), 0);
  if (access(path, F_OK) == 0) return; /* a real ptod for device 231: nothing to prove here */
  ck_assert_int_eq(pto_client_connect_device(231, 100, &c, &e), -PTO_E_CONNECT_FAILED);
  snprintf(want, sizeof(want), "Cannot connect to ptod at '%s'", path);
  ck_assert_ptr_nonnull(strstr(e.message, want));
}
END_TEST

/* --- the methods ------------------------------------------------------------ */

START_TEST(test_ping_and_status) {
  pto_ping_t *ping = NULL;
  pto_status_t *st = NULL;
  const void *raw;
  size_t raw_len, off = 0;
  msgpack_unpacked up;

  ck_assert_int_eq(pto_client_device(cl), -1);
  ck_assert_str_eq(pto_client_socket_path(cl), daemon0.socket);
  ck_assert_int_eq(pto_client_ping(cl, WAIT_MS, &ping, &err), 0);
  ck_assert_str_eq(ping->version, PTO_VERSION);
  ck_assert_uint_eq(ping->device, 0);
  ck_assert_str_eq(ping->state, "ready");
  ck_assert_int_eq(pto_client_device(cl), 0);

  /* The raw result is the daemon's map, as sent. */
  pto_result_msgpack(ping, &raw, &raw_len);
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(msgpack_unpack_next(&up, raw, raw_len, &off), MSGPACK_UNPACK_SUCCESS);
  ck_assert_uint_eq(off, raw_len);
  ck_assert_int_eq(up.data.type, MSGPACK_OBJECT_MAP);
  ck_assert_uint_eq(up.data.via.map.size, 4); /* version, device, state, features */
  msgpack_unpacked_destroy(&up);
  pto_result_free(ping);

  ck_assert_int_eq(pto_client_status(cl, WAIT_MS, &st, &err), 0);
  ck_assert_str_eq(st->platform, "sim");
  ck_assert_str_eq(st->version, PTO_VERSION);
  ck_assert_str_eq(st->state, "ready");
  ck_assert_uint_eq(st->queue.capacity, 64);
  ck_assert_uint_eq(st->memory.limit, UINT64_C(1) << 30);
  ck_assert_uint_ge(st->clients, 1);
  /* A key the client once decoded and dropped: now in the public struct. */
  ck_assert_uint_eq(st->client_memory.limit, UINT64_C(2) << 30); /* clients_memory = 2G */
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    ck_assert_uint_eq(st->arena.sizing.value[PTO_FIELD_TASK_WINDOW][r], 256);
    ck_assert_uint_eq(st->arena.sizing.value[PTO_FIELD_HEAP][r], HEAP_1M);
    ck_assert_uint_eq(st->arena.sizing.value[PTO_FIELD_DEP_POOL][r], 1024);
  }
  ck_assert_int_eq(st->arena.prewarm.first_dispatch_hit, -1);
  ck_assert_uint_eq(st->arena.key, st->arena.prewarm.key);
  pto_result_free(st);
  pto_result_free(NULL);
}
END_TEST

START_TEST(test_metrics_and_programs) {
  pto_text_t *m = NULL;
  pto_programs_t *p = NULL;
  bool vector_add = false, noop = false;
  ck_assert_int_eq(pto_client_metrics(cl, WAIT_MS, &m, &err), 0);
  ck_assert_ptr_nonnull(strstr(m->text, "ptod_info{"));
  ck_assert_uint_eq(strlen(m->text), m->len);
  pto_result_free(m);

  ck_assert_int_eq(pto_client_programs(cl, WAIT_MS, &p, &err), 0);
  for (uint32_t i = 0; i < p->count; i++) {
    const pto_program_info_t *pi = &p->programs[i];
    if (strcmp(pi->name, "vector_add") == 0) {
      vector_add = true;
      ck_assert_uint_eq(pi->nargs, 3);
      ck_assert_str_eq(pi->args[0].kind, "in");
      ck_assert_str_eq(pi->args[2].kind, "out");
      ck_assert_str_eq(pi->args[2].name, "out");
    }
    if (strcmp(pi->name, "noop") == 0) {
      noop = true;
      ck_assert_int_eq(pi->args[0].optional, 0);
      ck_assert_int_eq(pi->args[1].optional, 1);
      ck_assert_ptr_nonnull(strstr(pi->description, "noop("));
    }
  }
  ck_assert(vector_add && noop);
  pto_result_free(p);
}
END_TEST

START_TEST(test_dispatch_vector_add) {
  float a[1000], b[1000];
  pto_dispatch_result_t *res = NULL;
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  for (int i = 0; i < 1000; i++) {
    a[i] = (float)i;
    b[i] = 0.5f * (float)i;
  }
  args[0] = pto_arg_input(a, sizeof(a));
  args[1] = pto_arg_input(b, sizeof(b));
  args[2] = pto_arg_output(sizeof(a));
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, &res, &err), 0);
  ck_assert_uint_eq(res->noutputs, 3);
  ck_assert_ptr_null(res->outputs[0].ptr);
  ck_assert_ptr_null(res->outputs[1].ptr);
  ck_assert_uint_eq(res->outputs[2].len, sizeof(a));
  for (int i = 0; i < 1000; i++) {
    float got;
    memcpy(&got, res->outputs[2].ptr + 4 * i, 4);
    ck_assert_float_eq(got, 1.5f * (float)i);
  }
  ck_assert(res->arena.hit); /* the prewarmed baseline */
  ck_assert_uint_ge(res->tasks, 1);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    ck_assert_uint_eq(res->sizing.value[PTO_FIELD_HEAP][r], HEAP_1M);
    ck_assert_int_eq(res->sizing.source[PTO_FIELD_HEAP][r], PTO_SOURCE_CONFIG);
  }
  ck_assert_uint_ge(res->timing_us.total, res->timing_us.run);
  pto_result_free(res);
}
END_TEST

START_TEST(test_dispatch_config_reaches_daemon) {
  uint64_t heap[4] = {2048, 0, 0, 0}, got[4];
  pto_config_t *cfg = NULL;
  pto_dispatch_result_t *res = NULL;
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t req = noop_req(args, 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert(pto_config_empty(cfg));
  ck_assert_int_eq(pto_config_set_rings(cfg, PTO_FIELD_HEAP, heap, &err), 0);
  ck_assert_int_eq(pto_config_parse_ring(cfg, PTO_FIELD_TASK_WINDOW, "512", &err), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "ring_dep_pool", 2048, &err), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "aicpu_thread_num", 3, &err), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "enable_swimlane", 0, &err), 0);
  ck_assert(!pto_config_empty(cfg));
  pto_config_get_rings(cfg, PTO_FIELD_HEAP, got);
  ck_assert_mem_eq(got, heap, sizeof(heap));
  req.config = cfg;
  ck_assert_msg(pto_client_dispatch(cl, &req, WAIT_MS, &res, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(res->sizing.value[PTO_FIELD_HEAP][0], 2048);
  ck_assert_int_eq(res->sizing.source[PTO_FIELD_HEAP][0], PTO_SOURCE_REQUEST);
  for (int r = 1; r < PTO_RING_COUNT; r++) {
    ck_assert_uint_eq(res->sizing.value[PTO_FIELD_HEAP][r], HEAP_1M);
    ck_assert_int_eq(res->sizing.source[PTO_FIELD_HEAP][r], PTO_SOURCE_CONFIG);
  }
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    ck_assert_uint_eq(res->sizing.value[PTO_FIELD_TASK_WINDOW][r], 512);
    ck_assert_int_eq(res->sizing.source[PTO_FIELD_TASK_WINDOW][r], PTO_SOURCE_REQUEST);
    ck_assert_uint_eq(res->sizing.value[PTO_FIELD_DEP_POOL][r], 2048);
  }
  ck_assert(!res->arena.hit);
  pto_result_free(res);
  pto_config_free(cfg);
}
END_TEST

START_TEST(test_config_passthrough_unknown_key) {
  pto_config_t *cfg = NULL;
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t req = noop_req(args, 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_int(cfg, "frobnicate_depth", 7, &err), 0);
  req.config = cfg;
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.key, "frobnicate_depth");
  ck_assert_ptr_nonnull(strstr(err.message, "unknown key 'frobnicate_depth' in dispatch config"));
  /* The same config on prewarm: it reaches that method too. */
  ck_assert_int_eq(pto_client_prewarm(cl, cfg, WAIT_MS, NULL, &err), -PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.key, "frobnicate_depth");
  /* Every value form passes through. */
  ck_assert_int_eq(pto_config_unset(cfg, "frobnicate_depth"), 0);
  ck_assert_int_eq(pto_config_unset(cfg, "frobnicate_depth"), -PTO_E_INVALID_ARGUMENT);
  ck_assert(pto_config_empty(cfg));
  ck_assert_int_eq(pto_config_set_string(cfg, "future_mode", "fast", &err), 0);
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.key, "future_mode");
  pto_config_free(cfg);
}
END_TEST

/* Send a dispatch of noop with `config` encoded as is (no client-side
 * check) and return the daemon's error. */
static void daemon_error_for(const proto_config_t *config, pto_error_t *ret) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  proto_params_t p;
  proto_arg_t arg = {.kind = PTO_ARG_INT, .i = 1};
  msgpack_sbuffer sb;
  msgpack_unpacked up;
  proto_reader_t r;
  proto_envelope_t env;
  char buf[65536];
  size_t have = 0, len = 0;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%.100s", daemon0.socket);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
  memset(&p, 0, sizeof(p));
  p.dispatch.program = "noop";
  p.dispatch.args = &arg;
  p.dispatch.nargs = 1;
  p.dispatch.config = *config;
  p.dispatch.deadline_ms = PROTO_UNSET;
  msgpack_sbuffer_init(&sb);
  ck_assert_int_eq(proto_encode_request(&sb, 9, PROTO_M_DISPATCH, &p), 0);
  ck_assert_int_eq(send(fd, sb.data, sb.size, MSG_NOSIGNAL), (ssize_t)sb.size);
  msgpack_sbuffer_destroy(&sb);
  proto_reader_init(&r, sizeof(buf));
  for (;;) {
    ssize_t n = recv(fd, buf + have, sizeof(buf) - have, 0);
    ck_assert_int_gt(n, 0);
    have += (size_t)n;
    if (proto_reader_feed(&r, buf, have, &len, NULL) == 1) break;
  }
  close(fd);
  msgpack_unpacked_init(&up);
  ck_assert_int_eq(proto_decode(buf, len, &up, &env, NULL), 0);
  ck_assert_ptr_nonnull(env.error);
  ck_assert_int_eq(proto_error_decode(env.error, ret), 0);
  msgpack_unpacked_destroy(&up);
}

START_TEST(test_config_validated_like_the_daemon) {
  pto_config_t *cfg = NULL;
  proto_config_t wire;
  pto_error_t daemon_err;
  uint64_t bad[4] = {1000, 0, 0, 0}, got[4];
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_HEAP, 4096, &err), 0);

  /* Ring fields: the RunConfig messages, as the daemon writes them. */
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_HEAP, 1000, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_int_eq(err.code, PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.key, "ring_heap");
  ck_assert_str_eq(err.message,
                   "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000");
  proto_config_init(&wire);
  wire.sizing.value[PTO_FIELD_HEAP][0] = wire.sizing.value[PTO_FIELD_HEAP][1] = 1000;
  wire.sizing.value[PTO_FIELD_HEAP][2] = wire.sizing.value[PTO_FIELD_HEAP][3] = 1000;
  daemon_error_for(&wire, &daemon_err);
  ck_assert_str_eq(daemon_err.message, err.message);

  ck_assert_int_eq(pto_config_set_rings(cfg, PTO_FIELD_HEAP, bad, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message,
                   "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got "
                   "1000");
  proto_config_init(&wire);
  wire.sizing.value[PTO_FIELD_HEAP][0] = 1000;
  daemon_error_for(&wire, &daemon_err);
  ck_assert_str_eq(daemon_err.message, err.message);
  ck_assert_str_eq(daemon_err.hint, err.hint);

  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_TASK_WINDOW, 0, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_int_eq(pto_config_set_bool(cfg, "ring_dep_pool", true, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_ptr_nonnull(strstr(err.message, "got true"));
  ck_assert_int_eq(pto_config_set_float(cfg, "ring_task_window", 1.5, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_ptr_nonnull(strstr(err.message, "got 1.5"));
  ck_assert_int_eq(pto_config_parse_ring(cfg, PTO_FIELD_HEAP, "512m", &err), -PTO_E_INVALID_CONFIG);

  /* The other keys the daemon knows: its own decoder, its messages. */
  ck_assert_int_eq(pto_config_set_int(cfg, "aicpu_thread_num", 1, &err), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.key, "aicpu_thread_num");
  proto_config_init(&wire);
  wire.aicpu_thread_num = 1;
  daemon_error_for(&wire, &daemon_err);
  ck_assert_int_eq(daemon_err.code, PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(daemon_err.message, err.message);

  ck_assert_int_eq(pto_config_set_int(cfg, "enable_swimlane", 7, &err), -PTO_E_INVALID_CONFIG);
  proto_config_init(&wire);
  wire.enable_swimlane = 7;
  daemon_error_for(&wire, &daemon_err);
  ck_assert_str_eq(daemon_err.message, err.message);
  ck_assert_int_eq(pto_config_set_string(cfg, "enable_dep_gen", "yes", &err),
                   -PTO_E_INVALID_CONFIG);

  /* A rejected value leaves the config as it was. */
  pto_config_get_rings(cfg, PTO_FIELD_HEAP, got);
  for (int r = 0; r < PTO_RING_COUNT; r++) ck_assert_uint_eq(got[r], 4096);
  ck_assert_int_eq(pto_config_unset(cfg, "aicpu_thread_num"), -PTO_E_INVALID_ARGUMENT);
  pto_config_free(cfg);
}
END_TEST

START_TEST(test_config_api) {
  pto_config_t *cfg = NULL, *copy = NULL;
  uint64_t got[4];
  const uint8_t list[] = {0x92, 0x01, 0x02}; /* [1, 2] */
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_parse_ring(cfg, PTO_FIELD_HEAP, "512M,0,2K,0", &err), 0);
  pto_config_get_rings(cfg, PTO_FIELD_HEAP, got);
  ck_assert_uint_eq(got[0], UINT64_C(512) << 20);
  ck_assert_uint_eq(got[1], 0);
  ck_assert_uint_eq(got[2], 2048);
  ck_assert_int_eq(pto_config_set_msgpack(cfg, "future_list", list, sizeof(list), &err), 0);
  ck_assert_int_eq(pto_config_set_msgpack(cfg, "future_list", list, 2, &err),
                   -PTO_E_INVALID_ARGUMENT);
  ck_assert_int_eq(pto_config_set_int(cfg, "", 1, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_int_eq(pto_config_copy(cfg, &copy), 0);
  ck_assert_int_eq(pto_config_set_nil(cfg, "ring_heap", &err), 0);
  pto_config_get_rings(cfg, PTO_FIELD_HEAP, got);
  ck_assert_uint_eq(got[0], 0);
  pto_config_get_rings(copy, PTO_FIELD_HEAP, got);
  ck_assert_uint_eq(got[0], UINT64_C(512) << 20);
  ck_assert_int_eq(pto_config_unset(copy, "ring_heap"), 0);
  ck_assert_int_eq(pto_config_unset(copy, "ring_heap"), -PTO_E_INVALID_ARGUMENT);
  ck_assert_int_eq(pto_config_unset(copy, "future_list"), 0);
  ck_assert(pto_config_empty(copy));
  ck_assert(!pto_config_empty(cfg));
  ck_assert(pto_config_empty(NULL));
  pto_config_free(copy);
  pto_config_free(cfg);
  pto_config_free(NULL);
}
END_TEST

START_TEST(test_dispatch_errors) {
  float a[4] = {1, 2, 3, 4};
  pto_dispatch_arg_t args[3] = {pto_arg_input(a, 16), pto_arg_input(a, 12), pto_arg_output(16)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_INVALID_ARGS);
  ck_assert_str_eq(err.message,
                   "vector_add: argument 'b' has 12 bytes; expected 16 (the size of 'a').");
  ck_assert_str_eq(pto_client_error_name(err.code), "INVALID_ARGS");

  req.program = "no_such_program";
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_UNKNOWN_PROGRAM);
  ck_assert_ptr_nonnull(strstr(err.message, "no_such_program"));

  req.program = "../etc/passwd";
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_INVALID_REQUEST);

  req.program = NULL;
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_str_eq(err.message, "A 'dispatch' request needs a program name.");
  req.program = "vector_add";
  args[1].kind = (pto_arg_kind_t)42;
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_str_eq(err.message, "Dispatch argument 1 is invalid: kind 42 is not a pto_arg_kind_t.");
  ck_assert_int_eq(pto_client_dispatch(cl, NULL, WAIT_MS, NULL, &err), -PTO_E_INVALID_ARGUMENT);
  /* None of that hurt the connection. */
  ck_assert_int_eq(pto_client_ping(cl, WAIT_MS, NULL, &err), 0);
  ck_assert(pto_client_alive(cl));
}
END_TEST

START_TEST(test_runtime_error_detail) {
  /* attention_prefill with S=32, H=2 needs 2 * 4096 heap bytes on ring 0. */
  enum { S = 32, H = 2, D = 4, N = S * H * D };
  static float q[N];
  pto_config_t *cfg = NULL;
  pto_dispatch_arg_t args[8] = {pto_arg_input(q, sizeof(q)),
                                pto_arg_input(q, sizeof(q)),
                                pto_arg_input(q, sizeof(q)),
                                pto_arg_buffer("kv"),
                                pto_arg_output(sizeof(q)),
                                pto_arg_int(S),
                                pto_arg_int(H),
                                pto_arg_int(D)};
  pto_dispatch_req_t req = {.program = "attention_prefill", .args = args, .nargs = 8};
  ck_assert_int_eq(pto_client_buffer_alloc(cl, "kv", 2 * sizeof(q), NULL, WAIT_MS, NULL, &err), 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_HEAP, 4096, &err), 0);
  req.config = cfg;
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), -PTO_E_HEAP_RING_DEADLOCK);
  ck_assert_int_eq(err.code, 2);
  ck_assert_str_eq(pto_client_error_name(err.code), "HEAP_RING_DEADLOCK");
  ck_assert_int_eq(err.ring, 0);
  ck_assert_uint_eq(err.requested, 4096);
  ck_assert_uint_eq(err.capacity, 4096);
  ck_assert_str_eq(err.key, "ring_heap");
  ck_assert_ptr_nonnull(strstr(err.hint, "raise ring_heap[0] to at least 8192"));
  /* What the hint says fixes it. */
  ck_assert_int_eq(pto_config_set_rings(cfg, PTO_FIELD_HEAP, (uint64_t[4]){8192, 0, 0, 0}, &err),
                   0);
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, NULL, &err), 0);
  pto_config_free(cfg);
}
END_TEST

START_TEST(test_buffers) {
  uint8_t init[16], v[16] = {0};
  float kq[4] = {1, 0, 0, 0}, kk[4] = {1, 1, 1, 1}, kvv[4] = {2, 4, 6, 8};
  pto_buffer_info_t *info = NULL;
  pto_buffer_list_t *list = NULL;
  pto_bytes_t *data = NULL;
  pto_dispatch_result_t *res = NULL;
  uint64_t n = 0;
  for (int i = 0; i < 16; i++) init[i] = (uint8_t)i;

  ck_assert_int_eq(pto_client_buffer_alloc(cl, "blob", 16, init, WAIT_MS, &info, &err), 0);
  ck_assert_str_eq(info->name, "blob");
  ck_assert_uint_eq(info->bytes, 16);
  pto_result_free(info);
  ck_assert_int_eq(pto_client_buffer_alloc(cl, "blob", 16, NULL, WAIT_MS, NULL, &err),
                   -PTO_E_ALREADY_EXISTS);
  ck_assert_int_eq(pto_client_buffer_write(cl, "blob", 4, "ABCD", 4, WAIT_MS, &n, &err), 0);
  ck_assert_uint_eq(n, 4);
  ck_assert_int_eq(pto_client_buffer_read(cl, "blob", 0, 0, WAIT_MS, &data, &err), 0);
  ck_assert_uint_eq(data->len, 16);
  ck_assert_mem_eq(data->ptr, init, 4);
  ck_assert_mem_eq(data->ptr + 4, "ABCD", 4);
  ck_assert_mem_eq(data->ptr + 8, init + 8, 8);
  pto_result_free(data);
  ck_assert_int_eq(pto_client_buffer_read(cl, "blob", 6, 2, WAIT_MS, &data, &err), 0);
  ck_assert_uint_eq(data->len, 2);
  ck_assert_mem_eq(data->ptr, "CD", 2);
  pto_result_free(data);
  ck_assert_int_eq(pto_client_buffer_read(cl, "nope", 0, 0, WAIT_MS, &data, &err), -PTO_E_NOT_FOUND);
  ck_assert_ptr_nonnull(strstr(err.message, "nope"));
  ck_assert_int_eq(pto_client_buffer_alloc(cl, "huge", UINT64_C(2) << 30, NULL, WAIT_MS, NULL, &err),
                   -PTO_E_OUT_OF_MEMORY);
  ck_assert_uint_eq(err.requested, UINT64_C(2) << 30);
  ck_assert_uint_gt(err.capacity, 0);
  ck_assert_int_eq(pto_client_buffer_alloc(cl, "bad/name", 16, NULL, WAIT_MS, NULL, &err),
                   -PTO_E_INVALID_REQUEST);
  ck_assert_int_eq(pto_client_buffer_write(cl, NULL, 0, "x", 1, WAIT_MS, NULL, &err),
                   -PTO_E_INVALID_ARGUMENT);
  ck_assert_int_eq(pto_client_buffer_write(cl, "nope", 0, "x", 1, WAIT_MS, NULL, &err),
                   -PTO_E_NOT_FOUND);
  ck_assert_int_lt(pto_client_buffer_write(cl, "blob", 15, "xy", 2, WAIT_MS, NULL, &err), 0);
  ck_assert_int_lt(pto_client_buffer_read(cl, "blob", 8, 16, WAIT_MS, &data, &err), 0);
  ck_assert_ptr_nonnull(strstr(err.message, "blob"));

  /* A resident buffer by reference: attention_decode writes k and v into
   * the KV cache kv[2, T=2, H=1, D=4] at pos 0; with one position the
   * attention output is v. */
  ck_assert_int_eq(pto_client_buffer_alloc(cl, "kv", 64, NULL, WAIT_MS, NULL, &err), 0);
  {
    pto_dispatch_arg_t args[8] = {pto_arg_input(kq, 16),  pto_arg_input(kk, 16),
                                  pto_arg_input(kvv, 16), pto_arg_slice("kv", 0, 64),
                                  pto_arg_output(16),     pto_arg_int(0),
                                  pto_arg_int(1),         pto_arg_int(4)};
    pto_dispatch_req_t req = {.program = "attention_decode", .args = args, .nargs = 8};
    ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, &res, &err), 0);
    ck_assert_mem_eq(res->outputs[4].ptr, kvv, 16);
    ck_assert_ptr_null(res->outputs[3].ptr);
    pto_result_free(res);
  }
  ck_assert_int_eq(pto_client_buffer_read(cl, "kv", 0, 16, WAIT_MS, &data, &err), 0);
  ck_assert_mem_eq(data->ptr, kk, 16);
  pto_result_free(data);
  ck_assert_int_eq(pto_client_buffer_read(cl, "kv", 32, 16, WAIT_MS, &data, &err), 0);
  ck_assert_mem_eq(data->ptr, kvv, 16);
  pto_result_free(data);

  ck_assert_int_eq(pto_client_buffer_list(cl, WAIT_MS, &list, &err), 0);
  ck_assert_uint_eq(list->count, 2);
  for (uint32_t i = 0; i < list->count; i++)
    ck_assert_uint_eq(list->buffers[i].bytes, strcmp(list->buffers[i].name, "kv") == 0 ? 64 : 16);
  pto_result_free(list);
  ck_assert_int_eq(pto_client_buffer_free(cl, "blob", WAIT_MS, &n, &err), 0);
  ck_assert_uint_eq(n, 16);
  ck_assert_int_eq(pto_client_buffer_free(cl, "blob", WAIT_MS, &n, &err), -PTO_E_NOT_FOUND);
  ck_assert_int_eq(pto_client_buffer_free(cl, "kv", WAIT_MS, NULL, &err), 0);
  ck_assert_int_eq(pto_client_buffer_list(cl, WAIT_MS, &list, &err), 0);
  ck_assert_uint_eq(list->count, 0);
  pto_result_free(list);
  (void)v;
}
END_TEST

START_TEST(test_prewarm_and_advise) {
  pto_config_t *cfg = NULL;
  pto_arena_info_t *arena = NULL;
  pto_advise_t *adv = NULL;
  pto_status_t *st = NULL;
  pto_dispatch_result_t *res = NULL;
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t req = noop_req(args, 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_TASK_WINDOW, 512, &err), 0);
  ck_assert_int_eq(pto_client_prewarm(cl, cfg, WAIT_MS, &arena, &err), 0);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    ck_assert_uint_eq(arena->sizing.value[PTO_FIELD_TASK_WINDOW][r], 512);
    ck_assert_uint_eq(arena->prewarm.sizing.value[PTO_FIELD_TASK_WINDOW][r], 512);
  }
  ck_assert_uint_eq(arena->builds, 2);
  pto_result_free(arena);
  /* The same config on the first dispatch hits the prewarmed arena. */
  req.config = cfg;
  ck_assert_int_eq(pto_client_dispatch(cl, &req, WAIT_MS, &res, &err), 0);
  ck_assert(res->arena.hit);
  pto_result_free(res);
  ck_assert_int_eq(pto_client_status(cl, WAIT_MS, &st, &err), 0);
  ck_assert_int_eq(st->arena.prewarm.first_dispatch_hit, 1);
  ck_assert_uint_eq(st->dispatches.ok, 1);
  pto_result_free(st);

  ck_assert_int_eq(pto_client_advise(cl, WAIT_MS, &adv, &err), 0);
  ck_assert_uint_eq(adv->observed.value[PTO_FIELD_TASK_WINDOW][0], 1);
  ck_assert(pto_sizing_value_valid(PTO_FIELD_TASK_WINDOW,
                                   adv->recommended.value[PTO_FIELD_TASK_WINDOW][0]));
  ck_assert_ptr_nonnull(strstr(adv->config, "[ring]\n"));
  pto_result_free(adv);

  /* A sizing that does not fit the device: refused, the cached arena stays. */
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_HEAP, UINT64_C(1) << 30, &err), 0);
  ck_assert_int_eq(pto_client_prewarm(cl, cfg, WAIT_MS, &arena, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_uint_gt(err.requested, err.capacity);
  ck_assert_int_eq(pto_client_prewarm(cl, NULL, WAIT_MS, &arena, &err), 0);
  ck_assert_uint_eq(arena->sizing.value[PTO_FIELD_TASK_WINDOW][0], 256);
  pto_result_free(arena);
  pto_config_free(cfg);
}
END_TEST

/* --- pipelining -------------------------------------------------------------------- */

START_TEST(test_pipeline_out_of_order) {
  enum { N = 60 };
  uint32_t ids[N];
  static float in[N][64];
  pto_dispatch_arg_t args[N][3];
  for (int i = 0; i < N; i++) {
    pto_request_t req = {.method = (pto_method_t)(i % 3 == 0   ? PTO_METHOD_DISPATCH
                                                  : i % 3 == 1 ? PTO_METHOD_PING
                                                               : PTO_METHOD_STATUS)};
    if (req.method == PTO_METHOD_DISPATCH) {
      for (int k = 0; k < 64; k++) in[i][k] = (float)(i * 100 + k);
      args[i][0] = pto_arg_input(in[i], sizeof(in[i]));
      args[i][1] = pto_arg_input(in[i], sizeof(in[i]));
      args[i][2] = pto_arg_output(sizeof(in[i]));
      req.u.dispatch = (pto_dispatch_req_t){.program = "vector_add", .args = args[i], .nargs = 3};
    }
    ck_assert_int_eq(pto_client_send(cl, &req, WAIT_MS, &ids[i], &err), 0);
    ck_assert_uint_ne(ids[i], 0);
  }
  ck_assert_uint_eq(pto_client_pending(cl), N);
  for (int i = N - 1; i >= 0; i--) { /* newest first */
    void *r = NULL;
    ck_assert_int_eq(pto_client_wait(cl, ids[i], WAIT_MS, &r, &err), 0);
    if (i % 3 == 0) {
      const pto_dispatch_result_t *d = r;
      for (int k = 0; k < 64; k++) {
        float got;
        memcpy(&got, d->outputs[2].ptr + 4 * k, 4);
        ck_assert_float_eq(got, 2.0f * in[i][k]);
      }
    } else if (i % 3 == 1) {
      ck_assert_str_eq(((const pto_ping_t *)r)->state, "ready");
    } else {
      ck_assert_str_eq(((const pto_status_t *)r)->platform, "sim");
    }
    pto_result_free(r);
  }
  ck_assert_uint_eq(pto_client_pending(cl), 0);
  ck_assert_int_eq(pto_client_wait(cl, ids[0], WAIT_MS, NULL, &err), -PTO_E_INVALID_ARGUMENT);
}
END_TEST

START_TEST(test_pipeline_wait_any_large) {
  /* Eight 1 MiB dispatches in flight at once: the client keeps reading
   * answers while it writes, so neither side waits for the other. */
  enum { N = 8, FLOATS = 256 * 1024 };
  float *in = malloc(sizeof(float) * FLOATS);
  bool seen[N] = {false};
  uint32_t ids[N];
  pto_dispatch_arg_t args[3];
  for (int k = 0; k < FLOATS; k++) in[k] = (float)k;
  args[0] = pto_arg_input(in, sizeof(float) * FLOATS);
  args[1] = pto_arg_input(in, sizeof(float) * FLOATS);
  args[2] = pto_arg_output(sizeof(float) * FLOATS);
  for (int i = 0; i < N; i++) {
    pto_request_t req = {.method = PTO_METHOD_DISPATCH};
    req.u.dispatch = (pto_dispatch_req_t){.program = "vector_add", .args = args, .nargs = 3};
    ck_assert_int_eq(pto_client_send(cl, &req, WAIT_MS, &ids[i], &err), 0);
  }
  for (int n = 0; n < N; n++) {
    uint32_t id = 0;
    void *r = NULL;
    const pto_dispatch_result_t *d;
    int which = -1;
    float last;
    ck_assert_int_eq(pto_client_wait_any(cl, WAIT_MS, &id, &r, &err), 0);
    for (int i = 0; i < N; i++)
      if (ids[i] == id) which = i;
    ck_assert_int_ge(which, 0);
    ck_assert(!seen[which]);
    seen[which] = true;
    d = r;
    ck_assert_uint_eq(d->outputs[2].len, sizeof(float) * FLOATS);
    memcpy(&last, d->outputs[2].ptr + 4 * (FLOATS - 1), 4);
    ck_assert_float_eq(last, 2.0f * (float)(FLOATS - 1));
    pto_result_free(r);
  }
  {
    uint32_t id = 99;
    ck_assert_int_eq(pto_client_wait_any(cl, 100, &id, NULL, &err), -PTO_E_INVALID_ARGUMENT);
    ck_assert_uint_eq(id, 0);
  }
  free(in);
}
END_TEST

START_TEST(test_discard) {
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t d = noop_req(args, 100000);
  pto_request_t req = {.method = PTO_METHOD_DISPATCH};
  uint32_t id = 0;
  req.u.dispatch = d;
  ck_assert_int_eq(pto_client_send(cl, &req, WAIT_MS, &id, &err), 0);
  pto_client_discard(cl, id);
  ck_assert_uint_eq(pto_client_pending(cl), 0);
  ck_assert_int_eq(pto_client_wait(cl, id, 100, NULL, &err), -PTO_E_INVALID_ARGUMENT);
  /* The answer to the discarded request comes first and is dropped. */
  ck_assert_int_eq(pto_client_ping(cl, WAIT_MS, NULL, &err), 0);
  ck_assert_uint_eq(pto_client_pending(cl), 0);
}
END_TEST

/* --- deadlines ----------------------------------------------------------------------- */

START_TEST(test_call_timeout_keeps_connection) {
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t req = noop_req(args, 300000);
  pto_ping_t *ping = NULL;
  ck_assert_int_eq(pto_client_dispatch(cl, &req, 20, NULL, &err), -PTO_E_TIMEOUT);
  ck_assert_int_eq(err.code, PTO_E_TIMEOUT);
  ck_assert_ptr_nonnull(strstr(err.message, "did not answer 'dispatch'"));
  ck_assert(pto_client_alive(cl));
  ck_assert_uint_eq(pto_client_pending(cl), 0);
  /* The late answer is dropped; the next call gets its own. */
  ck_assert_int_eq(pto_client_ping(cl, -1, &ping, &err), 0);
  ck_assert_str_eq(ping->state, "ready");
  pto_result_free(ping);
}
END_TEST

START_TEST(test_wait_timeout_then_again) {
  pto_dispatch_arg_t args[3];
  pto_request_t req = {.method = PTO_METHOD_DISPATCH};
  uint32_t id = 0;
  void *r = NULL;
  req.u.dispatch = noop_req(args, 200000);
  ck_assert_int_eq(pto_client_send(cl, &req, WAIT_MS, &id, &err), 0);
  ck_assert_int_eq(pto_client_wait(cl, id, 0, &r, &err), -PTO_E_TIMEOUT);
  ck_assert_uint_eq(pto_client_pending(cl), 1);
  ck_assert_int_eq(pto_client_wait_any(cl, 0, NULL, &r, &err), -PTO_E_TIMEOUT);
  ck_assert_int_eq(pto_client_wait(cl, id, -1, &r, &err), 0);
  ck_assert_uint_eq(((pto_dispatch_result_t *)r)->tasks, 1);
  pto_result_free(r);
}
END_TEST

START_TEST(test_daemon_deadline) {
  pto_client_t *other = NULL;
  pto_dispatch_arg_t args[3], args2[3];
  pto_request_t req = {.method = PTO_METHOD_DISPATCH};
  pto_dispatch_req_t late = noop_req(args2, 0);
  uint32_t id = 0;
  req.u.dispatch = noop_req(args, 400000);
  ck_assert_int_eq(pto_client_connect(daemon0.socket, WAIT_MS, &other, &err), 0);
  ck_assert_int_eq(pto_client_send(cl, &req, WAIT_MS, &id, &err), 0);
  wait_running(other);
  late.deadline_ms = 1;
  ck_assert_int_eq(pto_client_dispatch(other, &late, WAIT_MS, NULL, &err), -PTO_E_DEADLINE_EXCEEDED);
  ck_assert_int_eq(pto_client_wait(cl, id, -1, NULL, &err), 0);
  pto_client_close(other);
}
END_TEST

/* --- failures ------------------------------------------------------------------------ */

START_TEST(test_daemon_killed_mid_call) {
  pto_dispatch_arg_t args[3];
  pto_request_t req = {.method = PTO_METHOD_DISPATCH};
  uint32_t id = 0;
  char want[512];
  req.u.dispatch = noop_req(args, 2000000);
  ck_assert_int_eq(pto_client_send(cl, &req, WAIT_MS, &id, &err), 0);
  wait_running(cl); /* pipelined on the same connection */
  tdaemon_kill(&daemon0);
  ck_assert_int_eq(pto_client_wait(cl, id, -1, NULL, &err), -PTO_E_CONNECTION_LOST);
  snprintf(want, sizeof(want),
           "The connection to ptod at '%s' was closed before it answered 'dispatch' (request "
           "%u); the daemon may have exited or restarted.",
           daemon0.socket, id);
  ck_assert_str_eq(err.message, want);
  ck_assert_str_eq(pto_client_error_name(err.code), "CONNECTION_LOST");
  ck_assert(!pto_client_alive(cl));
  ck_assert_uint_eq(pto_client_pending(cl), 0);
  ck_assert_int_eq(pto_client_ping(cl, -1, NULL, &err), -PTO_E_CONNECTION_LOST);
}
END_TEST

static void *killer(void *arg) {
  pto_client_t *c = NULL;
  pto_error_t e;
  (void)arg;
  ck_assert_int_eq(pto_client_connect(daemon0.socket, WAIT_MS, &c, &e), 0);
  wait_running(c);
  pto_client_close(c);
  kill(daemon0.pid, SIGKILL);
  return NULL;
}

START_TEST(test_daemon_killed_during_blocking_call) {
  pthread_t t;
  pto_dispatch_arg_t args[3];
  pto_dispatch_req_t req = noop_req(args, 2000000);
  ck_assert_int_eq(pthread_create(&t, NULL, killer, NULL), 0);
  ck_assert_int_eq(pto_client_dispatch(cl, &req, -1, NULL, &err), -PTO_E_CONNECTION_LOST);
  ck_assert_ptr_nonnull(strstr(err.message, "before it answered 'dispatch'"));
  pthread_join(t, NULL);
  tdaemon_kill(&daemon0);
}
END_TEST

START_TEST(test_daemon_gone_before_call) {
  tdaemon_kill(&daemon0);
  ck_assert_int_eq(pto_client_status(cl, -1, NULL, &err), -PTO_E_CONNECTION_LOST);
  ck_assert_ptr_nonnull(strstr(err.message, "before it answered 'status'"));
}
END_TEST

START_TEST(test_permission_denied_notification) {
  char uid[64];
  const char *ov[] = {uid, NULL};
  teardown();
  snprintf(uid, sizeof(uid), "daemon.allowed_uids=%u", (unsigned)getuid() + 1);
  start(ov);
  ck_assert_int_eq(pto_client_ping(cl, WAIT_MS, NULL, &err), -PTO_E_PERMISSION_DENIED);
  ck_assert_ptr_nonnull(strstr(err.message, "is not allowed to use this daemon"));
  ck_assert(!pto_client_alive(cl));
  /* Every later call says why the connection is gone. */
  ck_assert_int_eq(pto_client_status(cl, WAIT_MS, NULL, &err), -PTO_E_PERMISSION_DENIED);

  /* Pipelined: every request pending when the notification comes (or sent
   * after it) fails with it. */
  pto_client_close(cl);
  ck_assert_int_eq(pto_client_connect(daemon0.socket, WAIT_MS, &cl, &err), 0);
  {
    uint32_t ids[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
      pto_request_t req = {.method = PTO_METHOD_PING};
      int rc = pto_client_send(cl, &req, WAIT_MS, &ids[i], &err);
      if (rc < 0) ck_assert_int_eq(rc, -PTO_E_PERMISSION_DENIED);
    }
    for (int i = 0; i < 3; i++) {
      if (!ids[i]) continue;
      ck_assert_int_eq(pto_client_wait(cl, ids[i], WAIT_MS, NULL, &err), -PTO_E_PERMISSION_DENIED);
      ck_assert_ptr_nonnull(strstr(err.message, "is not allowed to use this daemon"));
    }
    ck_assert_uint_eq(pto_client_pending(cl), 0);
  }
}
END_TEST

START_TEST(test_busy_at_accept) {
  pto_client_t *second = NULL;
  const char *ov[] = {"daemon.max_clients=1", NULL};
  teardown();
  start(ov);
  /* The fixture's own probe connection may still count for a moment. */
  for (int i = 0; pto_client_ping(cl, WAIT_MS, NULL, &err) == -PTO_E_BUSY && i < 500; i++) {
    pto_client_close(cl);
    sleep_ms(10);
    ck_assert_int_eq(pto_client_connect(daemon0.socket, WAIT_MS, &cl, &err), 0);
  }
  ck_assert(pto_client_alive(cl));
  ck_assert_int_eq(pto_client_connect(daemon0.socket, WAIT_MS, &second, &err), 0);
  ck_assert_int_eq(pto_client_ping(second, WAIT_MS, NULL, &err), -PTO_E_BUSY);
  ck_assert_ptr_nonnull(strstr(err.message, "max_clients = 1"));
  pto_client_close(second);
  ck_assert_int_eq(pto_client_ping(cl, WAIT_MS, NULL, &err), 0);
}
END_TEST

START_TEST(test_message_too_large) {
  static uint8_t data[8192];
  const char *ov[] = {"daemon.max_message=1K", NULL};
  teardown();
  start(ov);
  ck_assert_int_eq(pto_client_buffer_alloc(cl, "b", sizeof(data), NULL, WAIT_MS, NULL, &err), 0);
  ck_assert_int_eq(pto_client_buffer_write(cl, "b", 0, data, sizeof(data), WAIT_MS, NULL, &err),
                   -PTO_E_MESSAGE_TOO_LARGE);
  ck_assert_str_eq(pto_client_error_name(err.code), "MESSAGE_TOO_LARGE");
  /* The daemon closed the connection after that answer. */
  ck_assert_int_eq(pto_client_ping(cl, WAIT_MS, NULL, &err), -PTO_E_CONNECTION_LOST);
  ck_assert(!pto_client_alive(cl));
}
END_TEST

/* --- multi-device -------------------------------------------------------------------- */

static tdaemon_t devs[3];
static pto_client_t *dcl[3];

static void multi_start(const char *memory2) {
  char id[3][32], mem[64];
  for (int i = 0; i < 3; i++) {
    const char *ov[] = {id[i], i == 2 && memory2 ? mem : NULL, NULL};
    snprintf(id[i], sizeof(id[i]), "device.id=%d", i);
    snprintf(mem, sizeof(mem), "device.memory=%s", memory2 ? memory2 : "");
    tdaemon_start(&devs[i], ov);
    ck_assert_int_eq(pto_client_connect(devs[i].socket, WAIT_MS, &dcl[i], &err), 0);
  }
}

static void multi_teardown(void) {
  for (int i = 0; i < 3; i++) {
    pto_client_close(dcl[i]);
    dcl[i] = NULL;
    tdaemon_stop(&devs[i]);
  }
}

START_TEST(test_multi_dispatch) {
  float in[3][8];
  pto_dispatch_arg_t args[3][3];
  pto_device_dispatch_t d[3];
  pto_config_t *cfg = NULL;
  pto_dispatch_req_t req = {.program = "vector_add"};
  multi_start(NULL);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_parse_ring(cfg, PTO_FIELD_HEAP, "2K,0,0,0", &err), 0);
  req.config = cfg;
  memset(d, 0, sizeof(d));
  for (int i = 0; i < 3; i++) {
    for (int k = 0; k < 8; k++) in[i][k] = (float)(10 * i + k);
    args[i][0] = pto_arg_input(in[i], sizeof(in[i]));
    args[i][1] = pto_arg_input(in[i], sizeof(in[i]));
    args[i][2] = pto_arg_output(sizeof(in[i]));
    d[i].client = dcl[i];
    d[i].args = args[i];
    d[i].nargs = 3;
  }
  ck_assert_int_eq(pto_client_dispatch_multi(&req, d, 3, WAIT_MS, &err), 0);
  for (int i = 0; i < 3; i++) {
    ck_assert_int_eq(d[i].rc, 0);
    for (int k = 0; k < 8; k++) {
      float got;
      memcpy(&got, d[i].result->outputs[2].ptr + 4 * k, 4);
      ck_assert_float_eq(got, 2.0f * in[i][k]);
    }
    /* The config reached every device. */
    ck_assert_uint_eq(d[i].result->sizing.value[PTO_FIELD_HEAP][0], 2048);
    ck_assert_int_eq(d[i].result->sizing.source[PTO_FIELD_HEAP][0], PTO_SOURCE_REQUEST);
    ck_assert_int_eq(d[i].result->sizing.source[PTO_FIELD_HEAP][1], PTO_SOURCE_CONFIG);
    pto_result_free(d[i].result);
  }
  /* Shared arguments: a device entry without args gets req's. */
  req.args = args[1];
  req.nargs = 3;
  for (int i = 0; i < 3; i++) {
    d[i].args = NULL;
    d[i].nargs = 0;
  }
  ck_assert_int_eq(pto_client_dispatch_multi(&req, d, 3, WAIT_MS, &err), 0);
  for (int i = 0; i < 3; i++) {
    float got;
    memcpy(&got, d[i].result->outputs[2].ptr, 4);
    ck_assert_float_eq(got, 20.0f);
    pto_result_free(d[i].result);
  }
  ck_assert_int_eq(pto_client_dispatch_multi(&req, d, 0, WAIT_MS, &err), -PTO_E_INVALID_ARGUMENT);
  pto_config_free(cfg);
  multi_teardown();
}
END_TEST

START_TEST(test_multi_one_device_out_of_memory) {
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  pto_dispatch_arg_t args[3] = {pto_arg_input(in, 32), pto_arg_input(in, 32), pto_arg_output(32)};
  pto_device_dispatch_t d[3];
  pto_config_t *cfg = NULL;
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  multi_start("8M"); /* device 2 cannot hold a 4 x 4 MiB heap arena */
  for (int i = 0; i < 3; i++) ck_assert_int_eq(pto_client_ping(dcl[i], WAIT_MS, NULL, &err), 0);
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_parse_ring(cfg, PTO_FIELD_HEAP, "4M", &err), 0);
  req.config = cfg;
  memset(d, 0, sizeof(d));
  for (int i = 0; i < 3; i++) d[i].client = dcl[i];
  ck_assert_int_eq(pto_client_dispatch_multi(&req, d, 3, WAIT_MS, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_int_eq(err.code, PTO_E_OUT_OF_MEMORY);
  ck_assert_msg(strncmp(err.message, "device 2: ", 10) == 0, "message: %s", err.message);
  for (int i = 0; i < 2; i++) {
    ck_assert_int_eq(d[i].rc, 0);
    ck_assert_uint_eq(d[i].result->sizing.value[PTO_FIELD_HEAP][3], UINT64_C(4) << 20);
    pto_result_free(d[i].result);
  }
  ck_assert_int_eq(d[2].rc, -PTO_E_OUT_OF_MEMORY);
  ck_assert_ptr_null(d[2].result);
  ck_assert_str_eq(d[2].err.message, err.message);
  pto_config_free(cfg);
  multi_teardown();
}
END_TEST

START_TEST(test_multi_one_device_stopped) {
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  pto_dispatch_arg_t args[3] = {pto_arg_input(in, 32), pto_arg_input(in, 32), pto_arg_output(32)};
  pto_device_dispatch_t d[3];
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  char want[512];
  multi_start(NULL);
  tdaemon_kill(&devs[1]);
  memset(d, 0, sizeof(d));
  for (int i = 0; i < 3; i++) d[i].client = dcl[i];
  ck_assert_int_eq(pto_client_dispatch_multi(&req, d, 3, WAIT_MS, &err), -PTO_E_CONNECTION_LOST);
  /* The device number is not known (no ping): the socket names it. */
  snprintf(want, sizeof(want), "socket '%s': The connection to ptod at '%s'", devs[1].socket,
           devs[1].socket);
  ck_assert_msg(strncmp(err.message, want, strlen(want)) == 0, "message: %s", err.message);
  ck_assert_int_eq(d[0].rc, 0);
  ck_assert_int_eq(d[2].rc, 0);
  ck_assert_int_eq(d[1].rc, -PTO_E_CONNECTION_LOST);
  pto_result_free(d[0].result);
  pto_result_free(d[2].result);
  multi_teardown();
}
END_TEST

static Suite *client_suite(void) {
  Suite *s = suite_create("client");
  TCase *tc;

  tc = tcase_create("connect");
  tcase_add_test(tc, test_connect_missing_socket);
  tcase_add_test(tc, test_connect_bad_arguments);
  tcase_add_test(tc, test_connect_device_uses_default_path);
  suite_add_tcase(s, tc);

  tc = tcase_create("methods");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_ping_and_status);
  tcase_add_test(tc, test_metrics_and_programs);
  tcase_add_test(tc, test_dispatch_vector_add);
  tcase_add_test(tc, test_dispatch_config_reaches_daemon);
  tcase_add_test(tc, test_config_passthrough_unknown_key);
  tcase_add_test(tc, test_config_validated_like_the_daemon);
  tcase_add_test(tc, test_config_api);
  tcase_add_test(tc, test_dispatch_errors);
  tcase_add_test(tc, test_runtime_error_detail);
  tcase_add_test(tc, test_buffers);
  tcase_add_test(tc, test_prewarm_and_advise);
  suite_add_tcase(s, tc);

  tc = tcase_create("pipeline");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_pipeline_out_of_order);
  tcase_add_test(tc, test_pipeline_wait_any_large);
  tcase_add_test(tc, test_discard);
  suite_add_tcase(s, tc);

  tc = tcase_create("deadlines");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_call_timeout_keeps_connection);
  tcase_add_test(tc, test_wait_timeout_then_again);
  tcase_add_test(tc, test_daemon_deadline);
  suite_add_tcase(s, tc);

  tc = tcase_create("failures");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_daemon_killed_mid_call);
  tcase_add_test(tc, test_daemon_killed_during_blocking_call);
  tcase_add_test(tc, test_daemon_gone_before_call);
  tcase_add_test(tc, test_permission_denied_notification);
  tcase_add_test(tc, test_busy_at_accept);
  tcase_add_test(tc, test_message_too_large);
  suite_add_tcase(s, tc);

  tc = tcase_create("multi");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, test_multi_dispatch);
  tcase_add_test(tc, test_multi_one_device_out_of_memory);
  tcase_add_test(tc, test_multi_one_device_stopped);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_suite)
