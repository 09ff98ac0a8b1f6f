/* SPDX-License-Identifier: Apache-2.0 */
/* server_options.h — the server options the in-process daemon tests start
 * from (test_server.c, test_requests.c): a socket at path, owner-only,
 * roomy limits that each test narrows. */
#ifndef PTOD_TEST_SERVER_OPTIONS_H
#define PTOD_TEST_SERVER_OPTIONS_H

#include <string.h>

#include "server.h"

static inline srv_options_t test_server_options(const char *path) {
  srv_options_t o;
  memset(&o, 0, sizeof(o));
  o.socket_path = path;
  o.socket_mode = 0600;
  o.socket_gid = (gid_t)-1;
  o.max_clients = 16;
  o.max_message = 1 << 20;
  o.max_objects = 1 << 16;
  o.max_pending = 1024;
  o.input_limit = 64u << 20;
  o.clients_memory = 1u << 30;
  o.client_timeout_ms = 10000;
  o.output_limit = 1u << 20;
  return o;
}

#endif
