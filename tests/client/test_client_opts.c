/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_opts — libptoclient's protocol 1.2 calls against a real ptod:
 * pto_call_opts_t's request_id comes back in the result, its priority and
 * request_id are checked before anything is sent and reach the daemon,
 * and pto_client_cancel leaves a request exactly one answer (CANCELLED for
 * a queued one, where the daemon speaks "cancel"). */
#include <check.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <msgpack.h>
#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"

#define CANCELLED_CODE 1012 /* docs/protocol.md */

static tdaemon_t daemon_;
static pto_client_t *c;
static pto_error_t err;

static void setup(void) {
  tdaemon_start(&daemon_, NULL);
  ck_assert_int_eq(pto_client_connect(daemon_.socket, WAIT_MS, &c, &err), 0);
}

static void teardown(void) {
  pto_client_close(c);
  tdaemon_stop(&daemon_);
}

static pto_request_t noop(pto_dispatch_arg_t args[3], int64_t tasks, int64_t task_us) {
  pto_request_t r = {.method = PTO_METHOD_DISPATCH};
  args[0] = pto_arg_int(tasks);
  args[1] = pto_arg_int(0);
  args[2] = pto_arg_int(task_us);
  r.u.dispatch.program = "noop";
  r.u.dispatch.args = args;
  r.u.dispatch.nargs = 3;
  return r;
}

static bool speaks(pto_client_t *client, const char *feature) {
  pto_ping_t *ping;
  bool has;
  ck_assert_int_eq(pto_client_ping(client, WAIT_MS, &ping, &err), 0);
  has = pto_ping_has_feature(ping, feature);
  pto_result_free(ping);
  return has;
}

/* Whether the msgpack map of a result has key = the string value. */
static bool result_has(const void *result, const char *key, const char *value) {
  const void *data;
  size_t len;
  msgpack_unpacked up;
  bool found = false;
  pto_result_msgpack(result, &data, &len);
  msgpack_unpacked_init(&up);
  if (msgpack_unpack_next(&up, data, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
      up.data.type == MSGPACK_OBJECT_MAP)
    for (uint32_t i = 0; i < up.data.via.map.size; i++) {
      const msgpack_object_kv *kv = &up.data.via.map.ptr[i];
      if (kv->key.via.str.size == strlen(key) && !memcmp(kv->key.via.str.ptr, key, strlen(key)) &&
          kv->val.type == MSGPACK_OBJECT_STR && kv->val.via.str.size == strlen(value) &&
          !memcmp(kv->val.via.str.ptr, value, strlen(value)))
        found = true;
    }
  msgpack_unpacked_destroy(&up);
  return found;
}

START_TEST(request_id_in_results) {
  pto_dispatch_arg_t args[3];
  pto_request_t req = noop(args, 1, 0);
  pto_call_opts_t opts = PTO_CALL_OPTS_INIT;
  pto_dispatch_result_t *r;
  void *any;
  uint32_t msgid;

  ck_assert(speaks(c, "request_id"));
  opts.request_id = "req-1 /gen?x=1";
  ck_assert_int_eq(pto_client_call(c, &req, &opts, WAIT_MS, &any, &err), 0);
  r = any;
  ck_assert_str_eq(r->request_id, "req-1 /gen?x=1");
  ck_assert_uint_eq(r->tasks, 1);
  pto_result_free(r);

  /* Pipelined, and on a buffer call: the echo is in the result's map. */
  opts.request_id = "alloc-7";
  req = (pto_request_t){.method = PTO_METHOD_BUFFER_ALLOC};
  req.u.buffer_alloc.name = "kv";
  req.u.buffer_alloc.bytes = 64;
  ck_assert_int_eq(pto_client_send_opts(c, &req, &opts, WAIT_MS, &msgid, &err), 0);
  ck_assert_int_eq(pto_client_wait(c, msgid, WAIT_MS, &any, &err), 0);
  ck_assert(result_has(any, "request_id", "alloc-7"));
  ck_assert_str_eq(((pto_buffer_info_t *)any)->name, "kv");
  pto_result_free(any);

  /* buffer.list: a request with no parameters of its own takes the id. */
  req = (pto_request_t){.method = PTO_METHOD_BUFFER_LIST};
  ck_assert_int_eq(pto_client_call(c, &req, &opts, WAIT_MS, &any, &err), 0);
  ck_assert_uint_eq(((pto_buffer_list_t *)any)->count, 1);
  pto_result_free(any);

  /* Without opts (or without a request_id) there is none. */
  req = noop(args, 1, 0);
  ck_assert_int_eq(pto_client_call(c, &req, NULL, WAIT_MS, &any, &err), 0);
  ck_assert_ptr_null(((pto_dispatch_result_t *)any)->request_id);
  pto_result_free(any);
}
END_TEST

START_TEST(bad_opts_send_nothing) {
  pto_dispatch_arg_t args[3];
  pto_request_t req = noop(args, 1, 0), ping = {.method = PTO_METHOD_PING};
  pto_call_opts_t opts = PTO_CALL_OPTS_INIT;
  char long_id[66];
  const char *bad[] = {"", long_id, "tab\there", "caf\xc3\xa9"};
  uint32_t msgid = 0;
  void *any;

  opts.priority = 8;
  ck_assert_int_eq(pto_client_send_opts(c, &req, &opts, WAIT_MS, &msgid, &err),
                   -PTO_E_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "priority"));
  opts.priority = -9;
  ck_assert_int_eq(pto_client_call(c, &req, &opts, WAIT_MS, &any, &err), -PTO_E_INVALID_ARGUMENT);
  opts.priority = 0;
  memset(long_id, 'x', 65);
  long_id[65] = '\0';
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    opts.request_id = bad[i];
    ck_assert_int_eq(pto_client_send_opts(c, &req, &opts, WAIT_MS, &msgid, &err),
                     -PTO_E_INVALID_ARGUMENT);
    ck_assert_ptr_nonnull(strstr(err.message, "request_id"));
  }
  opts.request_id = "ok";
  ck_assert_int_eq(pto_client_call(c, &ping, &opts, WAIT_MS, &any, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_ptr_nonnull(strstr(err.message, "device requests"));
  ck_assert_uint_eq(pto_client_pending(c), 0);
  ck_assert_uint_eq(msgid, 0);

  /* A caller built before request_id existed: its size ends before it. */
  opts.size = offsetof(pto_call_opts_t, request_id);
  ck_assert_int_eq(pto_client_call(c, &req, &opts, WAIT_MS, &any, &err), 0);
  ck_assert_ptr_null(((pto_dispatch_result_t *)any)->request_id);
  pto_result_free(any);
}
END_TEST

/* A non-zero priority goes on the wire: a daemon that speaks it runs the
 * dispatch, one that does not refuses the key by name. */
START_TEST(priority_is_sent) {
  pto_dispatch_arg_t args[3];
  pto_request_t req = noop(args, 1, 0);
  pto_call_opts_t opts = PTO_CALL_OPTS_INIT;
  void *any = NULL;
  int rc;
  opts.priority = -1;
  rc = pto_client_call(c, &req, &opts, WAIT_MS, &any, &err);
  if (speaks(c, "priority")) {
    ck_assert_msg(rc == 0, "%s", err.message);
    pto_result_free(any);
  } else {
    ck_assert_int_eq(rc, -PTO_E_INVALID_REQUEST);
    ck_assert_str_eq(err.key, "priority");
  }
}
END_TEST

START_TEST(cancel_of_what_is_not_pending) {
  pto_dispatch_arg_t args[3];
  pto_request_t req = noop(args, 1, 0);
  uint32_t msgid;
  void *any;
  ck_assert_int_eq(pto_client_cancel(c, 12345, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_int_eq(pto_client_send(c, &req, WAIT_MS, &msgid, &err), 0);
  ck_assert_int_eq(pto_client_wait(c, msgid, WAIT_MS, &any, &err), 0);
  pto_result_free(any);
  ck_assert_int_eq(pto_client_cancel(c, msgid, &err), -PTO_E_INVALID_ARGUMENT); /* collected */
}
END_TEST

/* Hold the device from another connection, queue a dispatch behind it and
 * cancel it: exactly one answer, CANCELLED where the daemon speaks
 * "cancel".  A hold may end before the cancel arrives (the dispatch then
 * ran): retried, never assumed. */
START_TEST(cancel_of_a_queued_request) {
  pto_client_t *holder;
  pto_dispatch_arg_t hold_args[3], args[3];
  pto_request_t hold = noop(hold_args, 1, 2000000), req = noop(args, 1, 0);
  bool cancel = speaks(c, "cancel");
  int rc = 0;

  if (!cancel)
    fprintf(stderr, "test_client_opts: NOT CHECKED: this ptod does not speak \"cancel\"; "
                    "checking only that a cancelled request gets exactly one answer.\n");
  ck_assert_int_eq(pto_client_connect(daemon_.socket, WAIT_MS, &holder, &err), 0);
  for (int attempt = 0; attempt < 5; attempt++) {
    uint32_t hold_id, msgid;
    pto_status_t *st;
    void *any = NULL;
    ck_assert_int_eq(pto_client_send(holder, &hold, WAIT_MS, &hold_id, &err), 0);
    do {
      ck_assert_int_eq(pto_client_status(c, WAIT_MS, &st, &err), 0);
      rc = (int)st->queue.running;
      pto_result_free(st);
    } while (rc != 1);
    ck_assert_int_eq(pto_client_send(c, &req, WAIT_MS, &msgid, &err), 0);
    ck_assert_int_eq(pto_client_cancel(c, msgid, &err), 0);
    rc = pto_client_wait(c, msgid, WAIT_MS, &any, &err);
    pto_result_free(any);
    ck_assert_int_eq(pto_client_wait(holder, hold_id, WAIT_MS, NULL, &err), 0);
    ck_assert_uint_eq(pto_client_pending(c), 0); /* one answer, collected */
    if (!cancel) {
      ck_assert_int_eq(rc, 0); /* ignored: it ran */
      break;
    }
    if (rc != 0) break;
  }
  if (cancel) {
    ck_assert_int_eq(rc, -CANCELLED_CODE);
    ck_assert_int_eq(err.code, CANCELLED_CODE);
  }
  pto_client_close(holder);
}
END_TEST

static Suite *client_opts_suite(void) {
  Suite *s = suite_create("client_opts");
  TCase *tc = tcase_create("opts");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, request_id_in_results);
  tcase_add_test(tc, bad_opts_send_nothing);
  tcase_add_test(tc, priority_is_sent);
  tcase_add_test(tc, cancel_of_what_is_not_pending);
  tcase_add_test(tc, cancel_of_a_queued_request);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_opts_suite)
