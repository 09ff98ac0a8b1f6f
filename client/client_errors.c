/* SPDX-License-Identifier: Apache-2.0 */
/* The client's error table and the helpers that fill a pto_error_t. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"

static const struct {
  int code;
  const char *name;
  const char *message;
} client_errors[] = {
#define CLIENT_ERROR_ROW_(name, code, msg) {(code), #name, (msg)},
    PTO_CLIENT_ERROR_MAP(CLIENT_ERROR_ROW_)
#undef CLIENT_ERROR_ROW_
};

#define CLIENT_ERROR_COUNT (sizeof(client_errors) / sizeof(client_errors[0]))

static int find(int code) {
  for (size_t i = 0; i < CLIENT_ERROR_COUNT; i++)
    if (client_errors[i].code == code) return (int)i;
  return -1;
}

const char *pto_client_error_name(int code) {
  const char *name;
  int i;
  if (code < 0) code = -code;
  if (code == 0) return "OK";
  name = pto_error_name(code);
  if (name) return name;
  i = find(code);
  return i >= 0 ? client_errors[i].name : "UNKNOWN";
}

bool pto_client_error_is_local(int code) {
  if (code < 0) code = -code;
  return find(code) >= 0;
}

int client_error(pto_error_t *err, int code, const char *fmt, ...) {
  if (err) {
    pto_error_clear(err);
    err->code = code;
    if (fmt) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err->message, sizeof(err->message), fmt, ap);
      va_end(ap);
    } else {
      int i = find(code);
      const char *msg = i >= 0 ? client_errors[i].message : pto_error_default_message(code);
      snprintf(err->message, sizeof(err->message), "%s", msg ? msg : "Unknown error.");
    }
  }
  return -code;
}

void client_error_name_device(pto_error_t *err, const pto_client_t *client) {
  char msg[sizeof(err->message)];
  int device = pto_client_device(client);
  int n;
  size_t room, len;
  memcpy(msg, err->message, sizeof(msg));
  if (device >= 0)
    n = snprintf(err->message, sizeof(err->message), "device %d: ", device);
  else
    n = snprintf(err->message, sizeof(err->message),
                 "socket '%.300s': ", pto_client_socket_path(client));
  if (n < 0 || (size_t)n >= sizeof(err->message)) return;
  /* The message may lose its end, never the device. */
  room = sizeof(err->message) - (size_t)n - 1;
  len = strnlen(msg, sizeof(msg));
  if (len > room) len = room;
  memcpy(err->message + n, msg, len);
  err->message[(size_t)n + len] = '\0';
}
