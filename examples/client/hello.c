/* SPDX-License-Identifier: Apache-2.0 */
/* hello — the smallest ptod client: ping a daemon, then add two vectors on
 * its device with a per-dispatch ring sizing.
 *
 * Build it against the installed library, either way:
 *   cc hello.c $(pkg-config --cflags --libs ptoclient) -o hello
 *   cmake -S . -B build && cmake --build build      (find_package(ptoclient))
 * Run:  ./hello [SOCKET]       (default: $PTOD_SOCKET, else device 0's socket)
 *
 * From the build tree, before any install (ptoclient-uninstalled.pc):
 *   cc hello.c $(PKG_CONFIG_PATH=build/run/client pkg-config --cflags --libs ptoclient) -o hello
 */
#include <stdio.h>
#include <string.h>

#include <pto/client.h>

static int fail(const char *what, const pto_error_t *err) {
  fprintf(stderr, "hello: %s: %s: %s\n", what, pto_client_error_name(err->code), err->message);
  if (err->hint[0]) fprintf(stderr, "hello: %s\n", err->hint);
  return 1;
}

int main(int argc, char **argv) {
  float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, sum[4];
  pto_dispatch_arg_t args[3] = {pto_arg_input(a, sizeof a), pto_arg_input(b, sizeof b),
                                pto_arg_output(sizeof sum)};
  pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3};
  pto_client_t *client = NULL;
  pto_config_t *config = NULL;
  pto_ping_t *ping = NULL;
  pto_dispatch_result_t *res = NULL;
  pto_error_t err;
  int rc;

  rc = argc > 1 ? pto_client_connect(argv[1], 5000, &client, &err)
                : pto_client_connect_default(5000, &client, &err);
  if (rc < 0) return fail("connect", &err);
  if (pto_client_ping(client, 5000, &ping, &err) < 0) {
    pto_client_close(client);
    return fail("ping", &err);
  }
  printf("ptod %s on device %u is %s\n", ping->version, ping->device, ping->state);
  pto_result_free(ping);

  /* This dispatch's own ring sizing: an 8 KiB heap on ring 0 only. */
  if (pto_config_new(&config) < 0 ||
      pto_config_parse_ring(config, PTO_FIELD_HEAP, "8K,0,0,0", &err) < 0) {
    pto_config_free(config);
    pto_client_close(client);
    return fail("config", &err);
  }
  req.config = config;
  rc = pto_client_dispatch(client, &req, 10000, &res, &err);
  pto_config_free(config);
  if (rc < 0) {
    pto_client_close(client);
    return fail("dispatch", &err);
  }
  memcpy(sum, res->outputs[2].ptr, sizeof sum);
  printf("vector_add: %g %g %g %g (ring_heap[0] = %llu from the %s)\n", (double)sum[0],
         (double)sum[1], (double)sum[2], (double)sum[3],
         (unsigned long long)res->sizing.value[PTO_FIELD_HEAP][0],
         pto_sizing_source_name((pto_sizing_source_t)res->sizing.source[PTO_FIELD_HEAP][0]));
  pto_result_free(res);
  pto_client_close(client);
  return 0;
}
