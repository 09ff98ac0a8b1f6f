/* SPDX-License-Identifier: Apache-2.0 */
/* test_client_shm — libptoclient's shared-memory regions against a real
 * ptod: pto_shm_create / pto_arg_shm / the buffer copies through a region /
 * pto_shm_free, the daemon's refusals passed through, the library's own
 * checks, and no fd or mapping left behind. */
#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <msgpack.h>

#include <pto/client.h>

#include "check_main.h"
#include "fixture.h"

#define MIB (1u << 20)

static tdaemon_t daemon_;

static void setup(void) {
  /* shm_limit 256M: room for the big test's 192 MiB, not for 512 MiB.
   * max_message and input_limit: the big test's inline twin is ~192 MiB;
   * client_timeout: sending it takes 30 s and more under ThreadSanitizer on
   * a loaded machine, and this test is about the bytes, not the clock. */
  static const char *const overrides[] = {"daemon.shm_limit=256M", "daemon.max_message=512M",
                                          "daemon.input_limit=1G", "daemon.client_timeout=600s",
                                          NULL};
  tdaemon_start(&daemon_, overrides);
}
static void teardown(void) { tdaemon_stop(&daemon_); }

static pto_client_t *connect_(void) {
  pto_client_t *c;
  pto_error_t err;
  ck_assert_msg(pto_client_connect(daemon_.socket, WAIT_MS, &c, &err) == 0, "%s", err.message);
  return c;
}

static pto_shm_t *create(pto_client_t *c, uint64_t bytes) {
  pto_shm_t *r;
  pto_error_t err;
  ck_assert_msg(pto_shm_create(c, bytes, 5000, &r, &err) == 0, "%s", err.message);
  return r;
}

static int count_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  int n = 0;
  ck_assert_ptr_nonnull(d);
  while ((e = readdir(d))) n += e->d_name[0] != '.';
  closedir(d);
  return n - 1; /* opendir's own */
}

static bool in_shm_list(pto_client_t *c, const char *name, uint64_t *ret_bytes) {
  pto_buffer_list_t *l;
  pto_error_t err;
  bool found = false;
  ck_assert_msg(pto_client_shm_list(c, WAIT_MS, &l, &err) == 0, "%s", err.message);
  for (uint32_t i = 0; i < l->count; i++)
    if (strcmp(l->buffers[i].name, name) == 0) {
      found = true;
      if (ret_bytes) *ret_bytes = l->buffers[i].bytes;
    }
  pto_result_free(l);
  return found;
}

START_TEST(ping_lists_the_feature) {
  pto_client_t *c = connect_();
  pto_ping_t *p;
  pto_error_t err;
  ck_assert_int_eq(pto_client_ping(c, WAIT_MS, &p, &err), 0);
  ck_assert(pto_ping_has_feature(p, "shm"));
  ck_assert(pto_ping_has_feature(p, "dfx"));
  ck_assert(!pto_ping_has_feature(p, "sh"));
  ck_assert_uint_ge(p->nfeatures, 2);
  pto_result_free(p);
  pto_client_close(c);
}
END_TEST

START_TEST(vector_add_through_a_region) {
  pto_client_t *c = connect_();
  pto_shm_t *r = create(c, 36);
  pto_dispatch_result_t *res;
  pto_error_t err;
  float *f = pto_shm_data(r);
  const float in[6] = {1, 2, 3, 10, 20, 30};
  uint64_t listed = 0;
  pto_dispatch_arg_t args[] = {pto_arg_shm(r, 0, 12, PTO_ARG_INPUT),
                               pto_arg_shm(r, 12, 12, PTO_ARG_INPUT),
                               pto_arg_shm(r, 24, 12, PTO_ARG_OUTPUT)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};

  ck_assert_uint_eq(pto_shm_size(r), 36);
  ck_assert(in_shm_list(c, pto_shm_name(r), &listed));
  ck_assert_uint_eq(listed, 36);
  for (int i = 0; i < 9; i++) ck_assert(f[i] == 0.0f); /* zero-filled */
  memcpy(f, in, sizeof in);
  ck_assert_msg(pto_client_dispatch(c, &req, -1, &res, &err) == 0, "%s", err.message);
  ck_assert(f[6] == 11.0f && f[7] == 22.0f && f[8] == 33.0f);
  ck_assert(memcmp(f, in, sizeof in) == 0); /* the inputs untouched */
  ck_assert_uint_eq(res->noutputs, 3);
  ck_assert_ptr_null(res->outputs[2].ptr); /* the bytes are in the region, not the answer */
  pto_result_free(res);
  pto_shm_free(r);
  pto_client_close(c);
}
END_TEST

/* 64 MiB each of a, b and an inout out through a region: the same bytes as
 * the same dispatch inline. */
START_TEST(big_inout_matches_inline) {
  const size_t n = 16u * MIB, bytes = n * sizeof(float);
  pto_client_t *c = connect_();
  pto_shm_t *r = create(c, 3 * (uint64_t)bytes);
  pto_dispatch_result_t *res;
  pto_error_t err;
  float *f = pto_shm_data(r);
  pto_dispatch_arg_t args[] = {pto_arg_shm(r, 0, bytes, PTO_ARG_INPUT),
                               pto_arg_shm(r, bytes, bytes, PTO_ARG_INPUT),
                               pto_arg_shm(r, 2 * bytes, bytes, PTO_ARG_INOUT)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  pto_config_t *cfg;
  float *inline_out;

  /* 4096 tasks of one scope: a window that holds them. */
  ck_assert_int_eq(pto_config_new(&cfg), 0);
  ck_assert_int_eq(pto_config_set_ring(cfg, PTO_FIELD_TASK_WINDOW, 8192, &err), 0);
  req.config = cfg;

  for (size_t i = 0; i < n; i++) {
    f[i] = (float)(i % 1000) * 0.5f;
    f[n + i] = (float)(i % 777);
    f[2 * n + i] = -1.0f;
  }
  /* Inline first: its arguments are copies of the region's bytes. */
  pto_dispatch_arg_t inl[] = {pto_arg_input(f, bytes), pto_arg_input(f + n, bytes),
                              pto_arg_inout(f + 2 * n, bytes)};
  req.args = inl;
  ck_assert_msg(pto_client_dispatch(c, &req, -1, &res, &err) == 0, "%s", err.message);
  ck_assert_uint_eq(res->outputs[2].len, bytes);
  inline_out = malloc(bytes);
  ck_assert_ptr_nonnull(inline_out);
  memcpy(inline_out, res->outputs[2].ptr, bytes);
  pto_result_free(res);

  req.args = args;
  ck_assert_msg(pto_client_dispatch(c, &req, -1, &res, &err) == 0, "%s", err.message);
  ck_assert_ptr_null(res->outputs[2].ptr);
  pto_result_free(res);
  ck_assert(memcmp(f + 2 * n, inline_out, bytes) == 0);
  ck_assert(f[2 * n + 1001] == f[1001] + f[n + 1001]);
  free(inline_out);
  pto_config_free(cfg);
  pto_shm_free(r);
  pto_client_close(c);
}
END_TEST

START_TEST(buffer_write_and_read_through_a_region) {
  pto_client_t *c = connect_();
  pto_shm_t *r = create(c, 8192);
  pto_error_t err;
  pto_bytes_t *inl;
  uint8_t *m = pto_shm_data(r);
  uint64_t n = 0;

  for (int i = 0; i < 4096; i++) m[i] = (uint8_t)(i * 7);
  ck_assert_int_eq(pto_client_buffer_alloc(c, "kv", 4096, NULL, WAIT_MS, NULL, &err), 0);
  /* The region's bytes 100..1100 into the buffer at 50. */
  ck_assert_msg(pto_client_buffer_write_shm(c, "kv", 50, r, 100, 1000, WAIT_MS, &n, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(n, 1000);
  /* Inline, the buffer holds them. */
  ck_assert_int_eq(pto_client_buffer_read(c, "kv", 50, 1000, WAIT_MS, &inl, &err), 0);
  ck_assert_uint_eq(inl->len, 1000);
  ck_assert(memcmp(inl->ptr, m + 100, 1000) == 0);
  pto_result_free(inl);
  /* Back into the region at 5000. */
  n = 0;
  ck_assert_msg(pto_client_buffer_read_shm(c, "kv", 50, r, 5000, 1000, WAIT_MS, &n, &err) == 0, "%s",
                err.message);
  ck_assert_uint_eq(n, 1000);
  ck_assert(memcmp(m + 5000, m + 100, 1000) == 0);
  ck_assert(m[4999] == 0 && m[6000] == 0); /* nothing outside the range */
  pto_shm_free(r);
  pto_client_close(c);
}
END_TEST

START_TEST(daemon_refusals_pass_through) {
  pto_client_t *c = connect_();
  pto_shm_t *r = create(c, 4096), *big;
  pto_dispatch_result_t *res;
  pto_error_t err;
  char stale[64];
  pto_dispatch_arg_t args[] = {pto_arg_shm(r, 0, 4096, PTO_ARG_INPUT),
                               pto_arg_shm(r, 4000, 200, PTO_ARG_INPUT),
                               pto_arg_shm(r, 0, 4096, PTO_ARG_OUTPUT)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};

  /* A range outside the region: INVALID_ARGS naming the argument. */
  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &res, &err), -PTO_E_INVALID_ARGS);
  ck_assert_msg(strstr(err.message, "args[1]") != NULL, "%s", err.message);
  ck_assert_int_eq(pto_client_buffer_alloc(c, "b", 4096, NULL, WAIT_MS, NULL, &err), 0);
  ck_assert_int_eq(pto_client_buffer_write_shm(c, "b", 0, r, 4090, 10, WAIT_MS, NULL, &err),
                   -PTO_E_INVALID_ARGS);
  /* Over shm_limit (256M): OUT_OF_MEMORY, and nothing registered. */
  big = (pto_shm_t *)1;
  ck_assert_int_eq(pto_shm_create(c, 512ull * MIB, 5000, &big, &err), -PTO_E_OUT_OF_MEMORY);
  ck_assert_msg(strstr(err.message, "shm_limit") != NULL, "%s", err.message);
  ck_assert_ptr_eq(big, (pto_shm_t *)1); /* ret_* untouched on failure */

  /* A freed region, named again: the daemon no longer has it. */
  snprintf(stale, sizeof stale, "%s", pto_shm_name(r));
  pto_shm_free(r);
  ck_assert(!in_shm_list(c, stale, NULL));
  args[0] = (pto_dispatch_arg_t){PTO_ARG_INPUT, stale, 0, 12, NULL, 0, 0, 0.0};
  args[1] = pto_arg_input("abcdefghijkl", 12);
  args[2] = pto_arg_output(12);
  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &res, &err), -PTO_E_NOT_FOUND);
  ck_assert_msg(strstr(err.message, stale) != NULL, "%s", err.message);
  ck_assert(pto_client_alive(c));
  pto_client_close(c);
}
END_TEST

START_TEST(library_checks) {
  pto_client_t *c = connect_(), *other = connect_();
  pto_shm_t *r = create(c, 4096), *none = NULL;
  pto_dispatch_result_t *res;
  pto_error_t err;
  pto_dispatch_arg_t args[] = {pto_arg_shm(NULL, 0, 12, PTO_ARG_INPUT),
                               pto_arg_shm(r, 0, 12, PTO_ARG_BUFFER), pto_arg_output(12)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  pto_request_t reg = {.method = PTO_METHOD_SHM_REGISTER};
  uint32_t id;

  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &res, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "argument 0") && strstr(err.message, "pto_arg_shm"), "%s",
                err.message);
  args[0] = pto_arg_input("abcdefghijkl", 12);
  ck_assert_int_eq(pto_client_dispatch(c, &req, -1, &res, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "argument 1") != NULL, "%s", err.message);

  ck_assert_int_eq(pto_shm_create(c, 0, 5000, &none, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "got 0") != NULL, "%s", err.message);
  ck_assert_int_eq(pto_shm_create(c, (1ull << 40) + 1, 5000, &none, &err),
                   -PTO_E_INVALID_ARGUMENT);
  ck_assert_ptr_null(none);
  ck_assert_int_eq(pto_client_send(c, &reg, WAIT_MS, &id, &err), -PTO_E_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "pto_shm_create") != NULL, "%s", err.message);

  /* A region of another connection, and bytes 0. */
  ck_assert_int_eq(pto_client_buffer_alloc(other, "b", 64, NULL, WAIT_MS, NULL, &err), 0);
  ck_assert_int_eq(pto_client_buffer_write_shm(other, "b", 0, r, 0, 8, WAIT_MS, NULL, &err),
                   -PTO_E_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, pto_shm_name(r)) && strstr(err.message, "connection"), "%s",
                err.message);
  ck_assert_int_eq(pto_client_buffer_read_shm(c, "b", 0, r, 0, 0, WAIT_MS, NULL, &err),
                   -PTO_E_INVALID_ARGUMENT);
  /* After its connection closed: a clear error, and pto_shm_free still works. */
  pto_client_close(c);
  ck_assert_int_eq(pto_client_buffer_read_shm(other, "b", 0, r, 0, 8, WAIT_MS, NULL, &err),
                   -PTO_E_INVALID_ARGUMENT);
  ck_assert_msg(strstr(err.message, "closed") != NULL, "%s", err.message);
  ((uint8_t *)pto_shm_data(r))[4095] = 1; /* still mapped until freed */
  pto_shm_free(r);
  pto_shm_free(NULL);
  pto_client_close(other);
}
END_TEST

/* A daemon of protocol 1.0: it answers every request as a ping without
 * `features`, and counts the requests. */
typedef struct old_daemon {
  int listen_fd;
  int requests;
  char path[108];
} old_daemon_t;

static void *old_daemon_serve(void *arg) {
  old_daemon_t *o = arg;
  int fd = accept(o->listen_fd, NULL, NULL);
  msgpack_unpacker u;
  msgpack_unpacked m;
  ck_assert_int_ge(fd, 0);
  msgpack_unpacker_init(&u, 4096);
  msgpack_unpacked_init(&m);
  for (;;) {
    ssize_t n;
    msgpack_unpacker_reserve_buffer(&u, 4096);
    n = read(fd, msgpack_unpacker_buffer(&u), 4096);
    if (n <= 0) break;
    msgpack_unpacker_buffer_consumed(&u, (size_t)n);
    while (msgpack_unpacker_next(&u, &m) == MSGPACK_UNPACK_SUCCESS) {
      msgpack_sbuffer sb;
      msgpack_packer pk;
      uint64_t msgid = m.data.via.array.ptr[1].via.u64;
      o->requests++;
      msgpack_sbuffer_init(&sb);
      msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
      msgpack_pack_array(&pk, 4);
      msgpack_pack_int(&pk, 1);
      msgpack_pack_uint64(&pk, msgid);
      msgpack_pack_nil(&pk);
      msgpack_pack_map(&pk, 3);
      msgpack_pack_str_with_body(&pk, "version", 7);
      msgpack_pack_str_with_body(&pk, "0.0.9", 5);
      msgpack_pack_str_with_body(&pk, "device", 6);
      msgpack_pack_int(&pk, 0);
      msgpack_pack_str_with_body(&pk, "state", 5);
      msgpack_pack_str_with_body(&pk, "ready", 5);
      ck_assert_int_eq(write(fd, sb.data, sb.size), (ssize_t)sb.size);
      msgpack_sbuffer_destroy(&sb);
    }
  }
  msgpack_unpacked_destroy(&m);
  msgpack_unpacker_destroy(&u);
  close(fd);
  return NULL;
}

START_TEST(a_daemon_without_the_feature) {
  old_daemon_t o = {.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  pthread_t th;
  pto_client_t *c;
  pto_shm_t *r = NULL;
  pto_error_t err;
  pto_ping_t *p;
  snprintf(o.path, sizeof o.path, "%s/old.sock", daemon_.dir);
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", o.path);
  ck_assert_int_eq(bind(o.listen_fd, (struct sockaddr *)&addr, sizeof addr), 0);
  ck_assert_int_eq(listen(o.listen_fd, 1), 0);
  ck_assert_int_eq(pthread_create(&th, NULL, old_daemon_serve, &o), 0);
  ck_assert_msg(pto_client_connect(o.path, WAIT_MS, &c, &err) == 0, "%s", err.message);
  ck_assert_int_eq(pto_client_ping(c, WAIT_MS, &p, &err), 0);
  ck_assert_uint_eq(p->nfeatures, 0); /* no features: speaks none */
  ck_assert(!pto_ping_has_feature(p, "shm"));
  pto_result_free(p);
  ck_assert_int_eq(pto_shm_create(c, 4096, 5000, &r, &err), -PTO_E_UNSUPPORTED);
  ck_assert_msg(strstr(err.message, "0.0.9") && strstr(err.message, "\"shm\""), "%s",
                err.message);
  ck_assert_str_eq(pto_client_error_name(err.code), "UNSUPPORTED");
  ck_assert(pto_client_error_is_local(err.code));
  ck_assert_int_eq(pto_shm_create(c, 4096, 5000, &r, &err), -PTO_E_UNSUPPORTED);
  ck_assert_ptr_null(r);
  pto_client_close(c);
  pthread_join(th, NULL);
  close(o.listen_fd);
  ck_assert_int_eq(o.requests, 2); /* the test's ping and one feature check, nothing else */
}
END_TEST

/* Regions hold no fd once registered, and free unmaps and unregisters. */
START_TEST(no_fd_left_behind) {
  pto_client_t *c = connect_();
  pto_shm_t *r[16];
  int before = count_fds();
  for (int i = 0; i < 16; i++) r[i] = create(c, 64 * 1024);
  ck_assert_int_eq(count_fds(), before);
  for (int i = 0; i < 16; i++) {
    ck_assert(in_shm_list(c, pto_shm_name(r[i]), NULL));
    for (int j = 0; j < i; j++) ck_assert_str_ne(pto_shm_name(r[i]), pto_shm_name(r[j]));
  }
  for (int i = 0; i < 16; i++) pto_shm_free(r[i]);
  ck_assert_int_eq(count_fds(), before);
  {
    pto_buffer_list_t *l;
    pto_error_t err;
    ck_assert_int_eq(pto_client_shm_list(c, WAIT_MS, &l, &err), 0);
    ck_assert_uint_eq(l->count, 0);
    pto_result_free(l);
  }
  pto_client_close(c);
  ck_assert_int_eq(count_fds(), before - 1); /* the connection's socket */
}
END_TEST

static Suite *client_shm_suite(void) {
  Suite *s = suite_create("client_shm");
  TCase *tc = tcase_create("shm");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ping_lists_the_feature);
  tcase_add_test(tc, vector_add_through_a_region);
  tcase_add_test(tc, big_inout_matches_inline);
  tcase_add_test(tc, buffer_write_and_read_through_a_region);
  tcase_add_test(tc, daemon_refusals_pass_through);
  tcase_add_test(tc, library_checks);
  tcase_add_test(tc, no_fd_left_behind);
  tcase_add_test(tc, a_daemon_without_the_feature);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(client_shm_suite)
