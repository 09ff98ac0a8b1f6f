/* SPDX-License-Identifier: Apache-2.0 */
/* The installed client files work for a program outside this tree:
 * `cmake --install` the build into a temporary prefix, build
 * examples/client/hello.c against it with pkg-config and with
 * find_package(ptoclient) (shared and static), and run it against a daemon;
 * and a static user with its own conn_read & co (tests/client/static_user.c). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/version.h>

#include "check_main.h"
#include "fixture.h"

static tdaemon_t d0;
static char tmp[64], prefix[160], libdir[200];

/* Run argv; on failure show what it printed. */
static void run_ok(const char *const *argv, const char *const *env, char **ret_out) {
  char *out = NULL, *err = NULL;
  int rc = trun(argv, env, &out, &err);
  ck_assert_msg(rc == 0, "'%s %s' exited %d:\n%s\n%s", argv[0], argv[1] ? argv[1] : "", rc, out,
                err);
  free(err);
  if (ret_out)
    *ret_out = out;
  else
    free(out);
}

static void check_hello(const char *exe) {
  char ld[300], *out = NULL;
  const char *argv[] = {exe, d0.socket, NULL};
  const char *env[] = {ld, NULL};
  snprintf(ld, sizeof(ld), "LD_LIBRARY_PATH=%s", libdir);
  run_ok(argv, env, &out);
  ck_assert_str_eq(out, "ptod " PTO_VERSION
                        " on device 0 is ready\n"
                        "vector_add: 11 22 33 44 (ring_heap[0] = 8192 from the request)\n");
  free(out);
}

/* A program with functions named like libptoclient's internals links
 * with the installed libptoclient.a (which exposes only pto_*), and each
 * side keeps calling its own. */
static void check_static_user(void) {
  char exe[200], include[200], archive[260], *out = NULL;
  const char *argv[12];
  int n = 0;
  snprintf(exe, sizeof(exe), "%s/static_user", tmp);
  snprintf(include, sizeof(include), "-I%s/include", prefix);
  snprintf(archive, sizeof(archive), "%s/libptoclient.a", libdir);
  argv[n++] = PTOD_C_COMPILER;
  argv[n++] = PTOD_SOURCE_DIR "/tests/client/static_user.c";
  argv[n++] = include;
  argv[n++] = archive;
  argv[n++] = "-lmsgpackc";
  if (PTOD_SANITIZE_FLAGS[0]) argv[n++] = PTOD_SANITIZE_FLAGS;
  argv[n++] = "-o";
  argv[n++] = exe;
  argv[n] = NULL;
  run_ok(argv, NULL, NULL);
  {
    const char *run[] = {exe, d0.socket, NULL};
    run_ok(run, NULL, &out);
  }
  ck_assert_str_eq(out, "ready 42 7 9 3\n");
  free(out);
}

START_TEST(test_build_example_against_install) {
  char stage[128], destdir[160], pcpath[260], sysroot[160], *flags = NULL, hello[300], build[200];
  const char *argv[64];
  int n = 0;

  tdaemon_start(&d0, NULL);
  tmkdtemp(tmp, sizeof(tmp));
  snprintf(stage, sizeof(stage), "%s/stage", tmp);
  /* DESTDIR as well as --prefix: files that other parts of the build
   * install to absolute paths land under the stage too, never in /. */
  snprintf(destdir, sizeof(destdir), "DESTDIR=%s", stage);
  snprintf(prefix, sizeof(prefix), "%s/opt/ptod", stage);
  snprintf(libdir, sizeof(libdir), "%s/%s", prefix, PTOD_INSTALL_LIBDIR);
  {
    const char *install[] = {PTOD_CMAKE, "--install", PTOD_BINARY_DIR,
                             "--prefix", "/opt/ptod", NULL};
    const char *env[] = {destdir, NULL};
    run_ok(install, env, NULL);
  }

  /* pkg-config: the installed ptoclient.pc names the prefix installed to
   * (/opt/ptod); the staged tree is a sysroot for it, as for a package. */
  snprintf(pcpath, sizeof(pcpath), "PKG_CONFIG_PATH=%s/pkgconfig", libdir);
  snprintf(sysroot, sizeof(sysroot), "PKG_CONFIG_SYSROOT_DIR=%s", stage);
  {
    const char *pc[] = {PTOD_PKG_CONFIG, "--cflags", "--libs", "ptoclient", NULL};
    const char *env[] = {pcpath, sysroot, NULL};
    run_ok(pc, env, &flags);
  }
  ck_assert_ptr_nonnull(strstr(flags, "-lptoclient"));
  snprintf(hello, sizeof(hello), "%s/hello", tmp);
  argv[n++] = PTOD_C_COMPILER;
  argv[n++] = PTOD_SOURCE_DIR "/examples/client/hello.c";
  /* $(pkg-config ...): the words of its output. */
  for (char *p = flags; *p && n < 50;) {
    size_t len = strcspn(p, " \t\n");
    if (len == 0) {
      p++;
      continue;
    }
    argv[n++] = p;
    if (!p[len]) break;
    p[len] = '\0';
    p += len + 1;
  }
  if (PTOD_SANITIZE_FLAGS[0]) argv[n++] = PTOD_SANITIZE_FLAGS;
  argv[n++] = "-o";
  argv[n++] = hello;
  argv[n] = NULL;
  run_ok(argv, NULL, NULL);
  free(flags);
  check_hello(hello);

  check_static_user();

  /* find_package(ptoclient), shared and static */
  snprintf(build, sizeof(build), "%s/build", tmp);
  {
    char prefix_path[200], cflags[200];
    const char *configure[] = {
        PTOD_CMAKE, "-S",        PTOD_SOURCE_DIR "/examples/client",    "-B",
        build,      prefix_path, "-DCMAKE_C_COMPILER=" PTOD_C_COMPILER, cflags,
        NULL};
    const char *compile[] = {PTOD_CMAKE, "--build", build, NULL};
    snprintf(prefix_path, sizeof(prefix_path), "-DCMAKE_PREFIX_PATH=%s", prefix);
    snprintf(cflags, sizeof(cflags), "-DCMAKE_C_FLAGS=%s", PTOD_SANITIZE_FLAGS);
    run_ok(configure, NULL, NULL);
    run_ok(compile, NULL, NULL);
  }
  snprintf(hello, sizeof(hello), "%s/hello", build);
  check_hello(hello);
  snprintf(hello, sizeof(hello), "%s/hello_static", build);
  check_hello(hello);

  /* The man pages are installed. */
  {
    char page[300];
    size_t len;
    char *text;
    snprintf(page, sizeof(page), "%s/share/man/man1/ptoctl.1", prefix);
    text = tread_file(page, &len);
    ck_assert_ptr_nonnull(strstr(text, ".TH PTOCTL 1"));
    free(text);
    snprintf(page, sizeof(page), "%s/share/man/man8/ptod.8", prefix);
    text = tread_file(page, &len);
    ck_assert_ptr_nonnull(strstr(text, ".TH PTOD 8"));
    free(text);
  }
  tdaemon_stop(&d0);
  trmtree(tmp);
}
END_TEST

static Suite *install_suite(void) {
  Suite *s = suite_create("install");
  TCase *tc = tcase_create("install");
  tcase_set_timeout(tc, 600);
  tcase_add_test(tc, test_build_example_against_install);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(install_suite)
