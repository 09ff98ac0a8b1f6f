/* SPDX-License-Identifier: Apache-2.0 */
/* Names of the error codes (the one table of pto/errors.h) and the helpers
 * that fill a pto_error_t. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "client_internal.h"

const char *pto_client_error_name(int code) {
  const char *name;
  if (code < 0) code = -code;
  if (code == 0) return "OK";
  name = pto_error_name(code);
  return name ? name : "UNKNOWN";
}

bool pto_client_error_is_local(int code) {
  if (code < 0) code = -code;
  return code >= PTO_LOCAL_ERROR_FIRST && pto_error_name(code) != NULL;
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
      const char *msg = pto_error_default_message(code);
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
