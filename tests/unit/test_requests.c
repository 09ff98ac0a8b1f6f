/* SPDX-License-Identifier: Apache-2.0 */
/* The request module in-process: the daemon's real modules (sim device,
 * runtime, device thread, server) on one libuv loop, driven over real
 * sockets from the same thread.  What it shows: the device takes
 * connections round-robin (a light connection is not queued behind a heavy
 * one's pipeline) and each connection's requests in order, queue_full =
 * busy fails fast beyond queue_depth, a closed connection's waiting
 * requests are dropped unrun, and a drain answers what waits
 * SHUTTING_DOWN. */
#include <check.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#include "check_main.h"
#include "ptod.h"
#include "request.h"

#define MAX_ANSWERS 256

typedef struct client {
  int fd;
  msgpack_unpacker up;
} client_t;

/* One answer as it arrived: which client, its msgid, its error name. */
typedef struct answer {
  int client;
  uint32_t msgid;
  char error[32];
} answer_t;

static ptod_t *d;
static uv_loop_t loop;
static char dir[48], path[96];
static answer_t answers[MAX_ANSWERS];
static int nanswers;

static void setup_with(uint32_t queue_depth, uint32_t queue_full) {
  pto_error_t err;
  pto_sizing_t env;
  cfg_t cfg;
  cfg_defaults(&cfg);
  memset(&env, 0, sizeof(env));
  snprintf(cfg.device.programs, sizeof(cfg.device.programs), "%s", PTOD_TEST_PROGRAMS_DIR);
  cfg.device.memory = 256u << 20;
  cfg.device.cores = 2;
  cfg.daemon.queue_depth = queue_depth;
  cfg.daemon.queue_full = queue_full;
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    cfg.ring.value[PTO_FIELD_TASK_WINDOW][r] = 256;
    cfg.ring.value[PTO_FIELD_HEAP][r] = 1u << 20;
    cfg.ring.value[PTO_FIELD_DEP_POOL][r] = 1024;
  }
  snprintf(dir, sizeof(dir), "/tmp/ptod-req-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof(path), "%s/s.sock", dir);
  snprintf(cfg.daemon.socket, sizeof(cfg.daemon.socket), "%s", path);
  uv_loop_init(&loop);
  ck_assert_int_eq(ptod_create(&cfg, &env, &loop, req_handlers, &d, &err), 0);
  ck_assert_int_eq(srv_listen(d->loop.srv, &err), 0);
  atomic_store(&d->state, PTOD_READY);
  nanswers = 0;
}

static void setup(void) { setup_with(64, CFG_QUEUE_WAIT); }
static void setup_busy(void) { setup_with(2, CFG_QUEUE_BUSY); }

static void teardown(void) {
  ptod_destroy(d);
  ck_assert_int_eq(uv_loop_close(&loop), 0);
  unlink(path);
  rmdir(dir);
}

static void client_open(client_t *c) {
  struct sockaddr_un addr;
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", path);
  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_eq(connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
  fcntl(c->fd, F_SETFL, O_NONBLOCK);
  msgpack_unpacker_init(&c->up, 1 << 16);
}

static void client_close(client_t *c) {
  close(c->fd);
  msgpack_unpacker_destroy(&c->up);
}

/* dispatch noop(tasks, depth=0, task_us) as request msgid. */
static void send_noop_tasks(client_t *c, uint32_t msgid, int tasks, int task_us) {
  msgpack_sbuffer sb;
  msgpack_packer pk;
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  msgpack_pack_array(&pk, 4);
  msgpack_pack_int(&pk, 0);
  msgpack_pack_uint32(&pk, msgid);
  msgpack_pack_str_with_body(&pk, "dispatch", 8);
  msgpack_pack_array(&pk, 1);
  msgpack_pack_map(&pk, 2);
  msgpack_pack_str_with_body(&pk, "program", 7);
  msgpack_pack_str_with_body(&pk, "noop", 4);
  msgpack_pack_str_with_body(&pk, "args", 4);
  msgpack_pack_array(&pk, 3);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "scalar", 6);
  msgpack_pack_int(&pk, tasks);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "scalar", 6);
  msgpack_pack_int(&pk, 0);
  msgpack_pack_map(&pk, 1);
  msgpack_pack_str_with_body(&pk, "scalar", 6);
  msgpack_pack_int(&pk, task_us);
  ck_assert_int_eq(write(c->fd, sb.data, sb.size), (ssize_t)sb.size);
  msgpack_sbuffer_destroy(&sb);
}

static void send_noop(client_t *c, uint32_t msgid, int task_us) {
  send_noop_tasks(c, msgid, 1, task_us);
}

/* Answers that arrived on c, appended to answers[] in arrival order. */
static void collect(client_t *c, int which) {
  msgpack_unpacked u;
  char buf[65536];
  ssize_t n;
  while ((n = recv(c->fd, buf, sizeof(buf), 0)) > 0) {
    msgpack_unpacker_reserve_buffer(&c->up, (size_t)n);
    memcpy(msgpack_unpacker_buffer(&c->up), buf, (size_t)n);
    msgpack_unpacker_buffer_consumed(&c->up, (size_t)n);
  }
  msgpack_unpacked_init(&u);
  while (msgpack_unpacker_next(&c->up, &u) == MSGPACK_UNPACK_SUCCESS) {
    msgpack_object *o = u.data.via.array.ptr;
    answer_t *a = &answers[nanswers++];
    ck_assert_int_lt(nanswers, MAX_ANSWERS);
    a->client = which;
    a->msgid = (uint32_t)o[1].via.u64;
    a->error[0] = '\0';
    if (o[2].type == MSGPACK_OBJECT_MAP)
      for (uint32_t i = 0; i < o[2].via.map.size; i++) {
        msgpack_object_kv *kv = &o[2].via.map.ptr[i];
        if (kv->key.via.str.size == 4 && memcmp(kv->key.via.str.ptr, "name", 4) == 0)
          snprintf(a->error, sizeof(a->error), "%.*s", (int)kv->val.via.str.size,
                   kv->val.via.str.ptr);
      }
  }
  msgpack_unpacked_destroy(&u);
}

static uint64_t now_ms(void) { return dsp_now_ns() / 1000000u; }

/* Run the loop, collecting answers, until `want` arrived (or 20 s). */
static void run_until(client_t *cs, int nclients, int want) {
  uint64_t end = now_ms() + 20000;
  while (nanswers < want && now_ms() < end) {
    uv_run(&loop, UV_RUN_NOWAIT);
    for (int i = 0; i < nclients; i++) collect(&cs[i], i);
    poll(NULL, 0, 1);
  }
  ck_assert_int_eq(nanswers, want);
}

/* A few loop turns: what was sent is read and queued. */
/* The daemon's dispatch totals (metrics.h). */
static uint64_t dispatches_ok(void) {
  metrics_totals_t t;
  metrics_totals(d->metrics, &t);
  return t.dispatches_ok;
}

static uint64_t dispatches_rejected(void) {
  metrics_totals_t t;
  metrics_totals(d->metrics, &t);
  return t.dispatches_rejected;
}

static void turn_loop(int n) {
  for (int i = 0; i < n; i++) {
    uv_run(&loop, UV_RUN_NOWAIT);
    poll(NULL, 0, 1);
  }
}

/* Turn the loop until the daemon has read n requests: each is queued,
 * running or finished (a fixed number of turns is not enough on a loaded
 * machine, where the loop may read a pipeline over many turns). */
static void turn_until_read(uint32_t n) {
  uint64_t end = now_ms() + 20000;
  dsp_stats_t st;
  for (;;) {
    dsp_get_stats(d->loop.dsp, &st);
    if (st.depth + st.running + dispatches_ok() +
            dispatches_rejected() >= n ||
        now_ms() >= end)
      break;
    turn_loop(1);
  }
  ck_assert_uint_ge(st.depth + st.running + dispatches_ok() +
                        dispatches_rejected(), n);
}

START_TEST(connections_take_turns) {
  client_t c[2];
  int heavy_after = 0, seen_light = 0, at_light;
  client_open(&c[0]);
  client_open(&c[1]);
  for (uint32_t i = 1; i <= 16; i++) send_noop(&c[0], i, 20000);
  turn_until_read(16);
  collect(&c[0], 0);
  at_light = nanswers; /* heavy answers before the light ones were sent */
  for (uint32_t i = 1; i <= 3; i++) send_noop(&c[1], 100 + i, 0);
  run_until(c, 2, 19);
  for (int i = at_light; i < nanswers && seen_light < 3; i++) {
    ck_assert_str_eq(answers[i].error, "");
    if (answers[i].client == 1)
      seen_light++;
    else
      heavy_after++;
  }
  /* FIFO would put the whole rest of the pipeline first; in turns, the
   * light connection's three come after the heavy one running and one
   * heavy each (one more if the device had just taken the next). */
  ck_assert_int_le(heavy_after, 1 + 3 + 1);
  /* Within a connection, its order. */
  for (int i = 0, last = 0; i < nanswers; i++)
    if (answers[i].client == 0) {
      ck_assert_int_gt((int)answers[i].msgid, last);
      last = (int)answers[i].msgid;
    }
  client_close(&c[0]);
  client_close(&c[1]);
}
END_TEST

START_TEST(busy_beyond_queue_depth) {
  client_t c;
  int busy = 0;
  client_open(&c);
  dsp_stats_t st;
  send_noop(&c, 1, 200000);
  do {
    turn_loop(1);
    dsp_get_stats(d->loop.dsp, &st);
  } while (!st.running);
  for (uint32_t i = 2; i <= 10; i++) send_noop(&c, i, 200000);
  run_until(&c, 1, 10);
  for (int i = 0; i < nanswers; i++) busy += strcmp(answers[i].error, "BUSY") == 0;
  /* One running, queue_depth (2) waiting: the other 7 fail fast. */
  ck_assert_int_eq(busy, 7);
  ck_assert_uint_eq(dispatches_ok(), 3);
  client_close(&c);
}
END_TEST

START_TEST(closed_connection_drops_what_waits) {
  client_t c[2];
  client_open(&c[0]);
  client_open(&c[1]);
  for (uint32_t i = 1; i <= 20; i++) send_noop(&c[0], i, 20000);
  turn_until_read(20);
  client_close(&c[0]);
  send_noop(&c[1], 1, 0);
  run_until(&c[1], 1, 1);
  while (!dsp_idle(d->loop.dsp)) turn_loop(1);
  /* The one running when it closed ran (and maybe one the device had
   * already taken); the device dropped the rest, whose client was gone. */
  ck_assert_uint_le(dispatches_ok(), 1 + 2);
  ck_assert_uint_eq(dispatches_ok() + dispatches_rejected(), 21);
  client_close(&c[1]);
}
END_TEST

START_TEST(drain_answers_waiting_requests) {
  client_t c;
  dsp_stats_t st;
  int down = 0;
  client_open(&c);
  for (uint32_t i = 1; i <= 10; i++) send_noop(&c, i, 200000);
  turn_until_read(10);
  /* Drain once the device runs the first: draining before it started
   * would (rightly) answer all ten SHUTTING_DOWN. */
  do {
    turn_loop(1);
    dsp_get_stats(d->loop.dsp, &st);
  } while (!st.running && dispatches_ok() == 0);
  atomic_store(&d->state, PTOD_DRAINING);
  dsp_drain(d->loop.dsp);
  run_until(&c, 1, 10);
  for (int i = 0; i < nanswers; i++) down += strcmp(answers[i].error, "SHUTTING_DOWN") == 0;
  /* What ran finished; every other request was answered SHUTTING_DOWN. */
  ck_assert_int_ge((int)dispatches_ok(), 1);
  ck_assert_int_eq(down, 10 - (int)dispatches_ok());
  ck_assert_int_ge(down, 1);
  client_close(&c);
}
END_TEST

/* ---- which thread runs a job (dispatch.h: run on the loop) --------------- */

/* The test thread is the loop.  Turn it until the request just sent is
 * answered: whether the device thread had it (queued, running, or done and
 * not yet completed) at any turn's end.  A job run on the loop is read,
 * run and completed within one turn, so the dispatcher is never seen busy
 * with it; a job handed to the device thread is completed in a later turn
 * than the one that read it (the uv_async or the poll handle), so between
 * those turns it is. */
static bool answered_by_device_thread(client_t *c) {
  int want = nanswers + 1;
  uint64_t end = now_ms() + 20000;
  bool device = false;
  while (nanswers < want && now_ms() < end) {
    uv_run(&loop, UV_RUN_NOWAIT);
    collect(c, 0);
    device |= !dsp_idle(d->loop.dsp);
    if (nanswers < want) poll(NULL, 0, 1);
  }
  ck_assert_int_eq(nanswers, want);
  ck_assert_str_eq(answers[want - 1].error, "");
  return device;
}

/* A fast noop(1) answered (its arena built), then an idle gap: past any
 * back-to-back window (dispatch.h), with nothing in flight. */
static void fast_noop_then_a_gap(client_t *c, uint32_t msgid) {
  struct timespec gap = {0, 20 * 1000 * 1000};
  int want = nanswers + 1;
  send_noop(c, msgid, 0);
  run_until(c, 1, want);
  ck_assert_str_eq(answers[want - 1].error, "");
  nanosleep(&gap, NULL);
}

START_TEST(short_dispatch_after_a_gap_runs_on_the_loop) {
  client_t c;
  client_open(&c);
  fast_noop_then_a_gap(&c, 1);
  send_noop(&c, 2, 0);
  ck_assert(!answered_by_device_thread(&c));
  client_close(&c);
}
END_TEST

/* What a client asks for next decides, not what it ran before: a noop
 * whose declared cost is over the loop's budget (one 200 ms task, or 200
 * tasks) runs on the device thread even right after a fast run of the same
 * program, where a rule from the program's last run would put it on the
 * loop and block it for the whole run. */
START_TEST(dispatch_over_budget_runs_on_the_device_thread) {
  client_t c;
  client_open(&c);
  fast_noop_then_a_gap(&c, 1); /* builds the arena: not fast */
  fast_noop_then_a_gap(&c, 2);
  send_noop(&c, 3, 200000);
  ck_assert(answered_by_device_thread(&c));
  fast_noop_then_a_gap(&c, 4);
  send_noop_tasks(&c, 5, 200, 0);
  ck_assert(answered_by_device_thread(&c));
  client_close(&c);
}
END_TEST

static Suite *requests_suite(void) {
  Suite *s = suite_create("requests");
  TCase *tc = tcase_create("wait"), *busy = tcase_create("busy");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, connections_take_turns);
  tcase_add_test(tc, closed_connection_drops_what_waits);
  tcase_add_test(tc, drain_answers_waiting_requests);
  tcase_add_test(tc, short_dispatch_after_a_gap_runs_on_the_loop);
  tcase_add_test(tc, dispatch_over_budget_runs_on_the_device_thread);
  tcase_add_checked_fixture(busy, setup_busy, teardown);
  tcase_set_timeout(busy, 60);
  tcase_add_test(busy, busy_beyond_queue_depth);
  suite_add_tcase(s, tc);
  suite_add_tcase(s, busy);
  return s;
}

PTO_CHECK_MAIN(requests_suite)
