/* SPDX-License-Identifier: Apache-2.0 */
/* The clients' environment: PTOD_SOCKET names the default daemon (ptoctl
 * without -s/-d, pto_client_connect_default), an explicit socket or device
 * wins over it, PTOD_SOCKET_<N> names device N's socket (what a container
 * given devices through CDI gets), and PTO2_RING_* in a client's own environment is pointed
 * out once, since only the daemon's environment sizes rings. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"

#define PTOCTL PTOD_BINARY_DIR "/client/ptoctl"

static tdaemon_t d0;

static void setup(void) {
  unsetenv("PTOD_SOCKET");
  unsetenv("PTOD_SOCKET_0");
  unsetenv("PTOD_SOCKET_1");
  unsetenv("PTO2_RING_TASK_WINDOW");
  unsetenv("PTO2_RING_HEAP");
  unsetenv("PTO2_RING_DEP_POOL");
  tdaemon_start(&d0, NULL);
}
static void teardown(void) { tdaemon_stop(&d0); }

START_TEST(ptoctl_uses_ptod_socket) {
  char env[200], *out = NULL, *err = NULL;
  snprintf(env, sizeof(env), "PTOD_SOCKET=%s", d0.socket);
  const char *argv[] = {PTOCTL, "--json", "ping", NULL};
  const char *envp[] = {env, NULL};
  int rc = trun(argv, envp, &out, &err);
  ck_assert_msg(rc == 0, "ptoctl ping exited %d: %s", rc, err);
  ck_assert_msg(strstr(out, "\"state\":\"ready\"") || strstr(out, "\"state\": \"ready\""), "%s",
                out);
  ck_assert_str_eq(err, "");
  free(out);
  free(err);

  /* an explicit --socket wins over PTOD_SOCKET */
  const char *argv2[] = {PTOCTL, "-s", "/nonexistent/ptod.sock", "ping", NULL};
  rc = trun(argv2, envp, &out, &err);
  ck_assert_int_eq(rc, 3);
  ck_assert_msg(strstr(err, "/nonexistent/ptod.sock") != NULL, "%s", err);
  free(out);
  free(err);

  /* a PTOD_SOCKET nobody listens on fails naming it */
  const char *envbad[] = {"PTOD_SOCKET=/nonexistent/other.sock", NULL};
  const char *argv3[] = {PTOCTL, "ping", NULL};
  rc = trun(argv3, envbad, &out, &err);
  ck_assert_int_eq(rc, 3);
  ck_assert_msg(strstr(err, "/nonexistent/other.sock") != NULL, "%s", err);
  free(out);
  free(err);
}
END_TEST

START_TEST(connect_default_uses_ptod_socket) {
  pto_client_t *c = NULL;
  pto_error_t err;
  ck_assert_ptr_null(pto_client_env_socket());
  setenv("PTOD_SOCKET", "", 1);
  ck_assert_ptr_null(pto_client_env_socket()); /* empty counts as unset */
  setenv("PTOD_SOCKET", d0.socket, 1);
  ck_assert_str_eq(pto_client_env_socket(), d0.socket);
  ck_assert_int_eq(pto_client_connect_default(1000, &c, &err), 0);
  ck_assert_str_eq(pto_client_socket_path(c), d0.socket);
  pto_ping_t *ping = NULL;
  ck_assert_msg(pto_client_ping(c, WAIT_MS, &ping, &err) == 0, "%s", err.message);
  pto_result_free(ping);
  pto_client_close(c);

  setenv("PTOD_SOCKET", "/nonexistent/ptod.sock", 1);
  ck_assert_int_eq(pto_client_connect_default(1000, &c, &err), -PTO_E_CONNECT_FAILED);
  ck_assert_msg(strstr(err.message, "/nonexistent/ptod.sock") != NULL, "%s", err.message);
  unsetenv("PTOD_SOCKET");
}
END_TEST

/* ptoctl with envp; returns its exit status, out and err freed unless kept. */
static int ptoctl_status(const char **argv, const char **envp, char **ret_err) {
  char *out = NULL, *err = NULL;
  int rc = trun(argv, envp, &out, &err);
  free(out);
  if (ret_err)
    *ret_err = err;
  else
    free(err);
  return rc;
}

START_TEST(ptoctl_uses_ptod_socket_n) {
  char one[200], dflt[200], *err = NULL;
  snprintf(one, sizeof(one), "PTOD_SOCKET_1=%s", d0.socket);
  const char *envp[] = {one, "PTOD_SOCKET_0=/nonexistent/zero.sock", NULL};

  /* -d 1 goes to PTOD_SOCKET_1, -d 0 to PTOD_SOCKET_0 */
  const char *ping1[] = {PTOCTL, "-d", "1", "ping", NULL};
  ck_assert_int_eq(ptoctl_status(ping1, envp, NULL), 0);
  const char *ping0[] = {PTOCTL, "-d", "0", "ping", NULL};
  ck_assert_int_eq(ptoctl_status(ping0, envp, &err), 3);
  ck_assert_msg(strstr(err, "/nonexistent/zero.sock") != NULL, "%s", err);
  free(err);

  /* nothing given: device 0, so PTOD_SOCKET_0 */
  const char *bare[] = {PTOCTL, "ping", NULL};
  ck_assert_int_eq(ptoctl_status(bare, envp, &err), 3);
  ck_assert_msg(strstr(err, "/nonexistent/zero.sock") != NULL, "%s", err);
  free(err);

  /* both devices at once, each through its own variable */
  const char *both[] = {PTOCTL, "-d", "1", "-d", "0", "ping", NULL};
  ck_assert_int_eq(ptoctl_status(both, envp, &err), 3);
  ck_assert_msg(strstr(err, "device 0") && strstr(err, "/nonexistent/zero.sock"), "%s", err);
  ck_assert_msg(!strstr(err, "device 1"), "device 1 was reachable: %s", err);
  free(err);

  /* -s wins over PTOD_SOCKET_0; PTOD_SOCKET wins over it when no device is asked */
  const char *explicit_s[] = {PTOCTL, "-s", d0.socket, "ping", NULL};
  ck_assert_int_eq(ptoctl_status(explicit_s, envp, NULL), 0);
  snprintf(dflt, sizeof(dflt), "PTOD_SOCKET=%s", d0.socket);
  const char *env2[] = {dflt, "PTOD_SOCKET_0=/nonexistent/zero.sock", NULL};
  ck_assert_int_eq(ptoctl_status(bare, env2, NULL), 0);
  ck_assert_int_eq(ptoctl_status(ping0, env2, NULL), 3); /* -d 0 asks for device 0 */

  /* another device's variable or PTOD_SOCKET never stands in for device 2's */
  const char *ping2[] = {PTOCTL, "-d", "2", "ping", NULL};
  const char *env3[] = {one, dflt, NULL};
  ck_assert_int_eq(ptoctl_status(ping2, env3, &err), 3);
  ck_assert_msg(strstr(err, "ptod2.sock") != NULL, "%s", err);
  free(err);
}
END_TEST

START_TEST(connect_device_uses_ptod_socket_n) {
  pto_client_t *c = NULL;
  pto_error_t err;
  pto_ping_t *ping = NULL;
  ck_assert_ptr_null(pto_client_env_device_socket(1));
  setenv("PTOD_SOCKET_1", "", 1);
  ck_assert_ptr_null(pto_client_env_device_socket(1)); /* empty counts as unset */
  setenv("PTOD_SOCKET_1", d0.socket, 1);
  ck_assert_str_eq(pto_client_env_device_socket(1), d0.socket);
  ck_assert_ptr_null(pto_client_env_device_socket(-1));
  ck_assert_ptr_null(pto_client_env_device_socket(256));
  ck_assert_int_eq(pto_client_connect_device(1, WAIT_MS, &c, &err), 0);
  ck_assert_str_eq(pto_client_socket_path(c), d0.socket);
  ck_assert_int_eq(pto_client_device(c), 1);
  ck_assert_msg(pto_client_ping(c, WAIT_MS, &ping, &err) == 0, "%s", err.message);
  pto_result_free(ping);
  pto_client_close(c);

  /* connect_default is device 0: PTOD_SOCKET_0 when PTOD_SOCKET is unset */
  setenv("PTOD_SOCKET_0", d0.socket, 1);
  ck_assert_int_eq(pto_client_connect_default(1000, &c, &err), 0);
  ck_assert_str_eq(pto_client_socket_path(c), d0.socket);
  pto_client_close(c);
  setenv("PTOD_SOCKET_0", "/nonexistent/zero.sock", 1);
  ck_assert_int_eq(pto_client_connect_device(0, WAIT_MS, &c, &err), -PTO_E_CONNECT_FAILED);
  ck_assert_msg(strstr(err.message, "/nonexistent/zero.sock") != NULL, "%s", err.message);
  unsetenv("PTOD_SOCKET_0");
  unsetenv("PTOD_SOCKET_1");
}
END_TEST

START_TEST(sizing_env_note) {
  char note[1024];
  ck_assert_int_eq(pto_client_env_sizing_note(note, sizeof(note)), 0);
  ck_assert_str_eq(note, "");
  setenv("PTO2_RING_HEAP", "536870912", 1);
  setenv("PTO2_RING_DEP_POOL", "131072", 1);
  ck_assert_int_eq(pto_client_env_sizing_note(NULL, 0), 2);
  ck_assert_int_eq(pto_client_env_sizing_note(note, sizeof(note)), 2);
  ck_assert_str_eq(note,
                   "PTO2_RING_HEAP, PTO2_RING_DEP_POOL are set in this client's environment, but "
                   "ring sizing from the environment is the daemon's: this client's dispatches "
                   "do not use them. To make them take effect, put them in the dispatch's config "
                   "(ring_heap=536870912, ring_dep_pool=131072), or in the daemon's environment "
                   "(systemctl edit ptod@0: [Service] Environment=PTO2_RING_HEAP=536870912 "
                   "PTO2_RING_DEP_POOL=131072).");
  unsetenv("PTO2_RING_HEAP");
  unsetenv("PTO2_RING_DEP_POOL");
}
END_TEST

START_TEST(ptoctl_points_out_sizing_env_once) {
  char env[200], *out = NULL, *err = NULL;
  snprintf(env, sizeof(env), "PTOD_SOCKET=%s", d0.socket);
  const char *envp[] = {env, "PTO2_RING_HEAP=536870912", NULL};
  const char *argv[] = {PTOCTL, "dispatch", "noop", "1", NULL};
  int rc = trun(argv, envp, &out, &err);
  ck_assert_msg(rc == 0, "ptoctl exited %d: %s", rc, err);
  ck_assert_str_eq(err,
                   "ptoctl: PTO2_RING_HEAP is set in this client's environment, but ring sizing "
                   "from the environment is the daemon's: this client's dispatches do not use "
                   "it. To make it take effect, put it in the dispatch's config "
                   "(ring_heap=536870912), or in the daemon's environment (systemctl edit "
                   "ptod@0: [Service] Environment=PTO2_RING_HEAP=536870912).\n");
  /* and the daemon really did not use it: the heap is the daemon's 1M */
  ck_assert_msg(strstr(out, "1 MiB") != NULL || strstr(out, "1M") != NULL, "%s", out);
  free(out);
  free(err);
}
END_TEST

static Suite *env_suite(void) {
  Suite *s = suite_create("env");
  TCase *tc = tcase_create("env");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ptoctl_uses_ptod_socket);
  tcase_add_test(tc, connect_default_uses_ptod_socket);
  tcase_add_test(tc, ptoctl_uses_ptod_socket_n);
  tcase_add_test(tc, connect_device_uses_ptod_socket_n);
  tcase_add_test(tc, sizing_env_note);
  tcase_add_test(tc, ptoctl_points_out_sizing_env_once);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(env_suite)
