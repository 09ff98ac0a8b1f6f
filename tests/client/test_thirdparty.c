/* SPDX-License-Identifier: Apache-2.0 */
/* A third-party msgpack-RPC client — msgpack5rpc from npm, run by node —
 * calls ping, status and a vector_add dispatch on a real ptod and checks
 * the answers (thirdparty/msgpack5rpc_client.js): proof that ptod's wire
 * format is the standard one.  The package is installed once with `npm ci`
 * from thirdparty/package-lock.json into the build tree: the test needs the
 * npm registry, and carries the ctest label registry for that. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check_main.h"
#include "fixture.h"

/* npm's defaults retry a registry it cannot reach for over a minute; one
 * try, each fetch bounded, fails at once offline with the reason below. */
static void install_package(void) {
  char *out = NULL, *err = NULL;
  const char *argv[] = {PTOD_NPM,          "ci",      "--no-audit",
                        "--no-fund",       "--prefix", PTOD_NPM_DIR,
                        "--cache",         PTOD_NPM_DIR "/cache",
                        "--fetch-retries=0", "--fetch-timeout=30000", NULL};
  int rc;
  if (access(PTOD_NPM_DIR "/node_modules/msgpack5rpc/package.json", F_OK) == 0) return;
  rc = trun(argv, NULL, &out, &err);
  ck_assert_msg(rc == 0,
                "'npm ci' could not install msgpack5rpc into " PTOD_NPM_DIR
                " (exit %d): this test needs the npm registry (registry.npmjs.org, or "
                "npm_config_registry) once, after which the package stays in the build tree. "
                "Offline, leave it out: ctest -LE registry (PTOD_TEST_OFFLINE=1 scripts/test)."
                "\n%s\n%s",
                rc, out, err);
  free(out);
  free(err);
}

START_TEST(test_msgpack5rpc_client) {
  tdaemon_t d;
  char *out = NULL, *err = NULL;
  const char *env[] = {"NODE_PATH=" PTOD_NPM_DIR "/node_modules", NULL};
  int rc;
  install_package();
  tdaemon_start(&d, NULL);
  {
    const char *argv[] = {PTOD_NODE,
                          PTOD_SOURCE_DIR "/tests/client/thirdparty/msgpack5rpc_client.js",
                          d.socket, NULL};
    rc = trun(argv, env, &out, &err);
  }
  ck_assert_msg(rc == 0, "the msgpack5rpc client failed (exit %d):\n%s\n%s", rc, out, err);
  ck_assert_ptr_nonnull(strstr(out, "ping: ptod "));
  ck_assert_ptr_nonnull(strstr(out, "status: queue capacity 64"));
  ck_assert_ptr_nonnull(
      strstr(out, "dispatch: vector_add = 11 22 33 44, ring_heap[0] = 2048 (request)"));
  ck_assert_ptr_nonnull(strstr(out, "error: INVALID_REQUEST (1000): unknown key 'ring_heapp'"));
  free(out);
  free(err);
  tdaemon_stop(&d);
}
END_TEST

static Suite *thirdparty_suite(void) {
  Suite *s = suite_create("thirdparty");
  TCase *tc = tcase_create("msgpack5rpc");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, test_msgpack5rpc_client);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(thirdparty_suite)
