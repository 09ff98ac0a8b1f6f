/* SPDX-License-Identifier: Apache-2.0 */
/* A program linked with the installed libptoclient.a that has functions of
 * its own named like the library's internals (conn_read, slot_find,
 * schema_decode, conn_deliver).  The archive exposes only pto_*, so it
 * links, each side calls its own, and a ping through the library works.
 * Built and run by test_install: ./static_user SOCKET prints
 * "ready 42 7 9 3". */
#include <stdio.h>
#include <string.h>

#include <pto/client.h>

/* Not the library's: other signatures, other meanings. */
int conn_read(int x);
int slot_find(int x);
int schema_decode(int x);
int conn_deliver(int x);
int conn_read(int x) { return x * 2; }
int slot_find(int x) { return x + 1; }
int schema_decode(int x) { return x - 1; }
int conn_deliver(int x) { return x / 2; }

int main(int argc, char **argv) {
  pto_client_t *client = NULL;
  pto_ping_t *ping = NULL;
  pto_error_t err;
  if (argc != 2) return 2;
  if (pto_client_connect(argv[1], 5000, &client, &err) < 0 ||
      pto_client_ping(client, 5000, &ping, &err) < 0) {
    fprintf(stderr, "static_user: %s: %s\n", pto_client_error_name(err.code), err.message);
    pto_client_close(client);
    return 1;
  }
  printf("%s %d %d %d %d\n", ping->state, conn_read(21), slot_find(6), schema_decode(10),
         conn_deliver(6));
  pto_result_free(ping);
  pto_client_close(client);
  return 0;
}
