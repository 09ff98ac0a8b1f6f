/* SPDX-License-Identifier: Apache-2.0 */
/* listen_addr.c — see listen_addr.h. */
#include "listen_addr.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

/* Split HOST:PORT; host may be [v6].  Returns 0, or -1 with why. */
int listen_addr_split(const char *value, char *host, size_t hlen, char *port, size_t plen, char *why,
                 size_t wlen) {
  const char *colon = strrchr(value, ':'), *h = value;
  size_t n;
  long p;
  char *end;
  if (!colon || colon == value || !colon[1]) {
    snprintf(why, wlen, "expected HOST:PORT (e.g. 127.0.0.1:9464) or an absolute Unix socket path.");
    return -1;
  }
  n = (size_t)(colon - value);
  if (value[0] == '[') {
    if (n < 3 || value[n - 1] != ']') {
      snprintf(why, wlen, "an IPv6 host goes in brackets: [::1]:9464.");
      return -1;
    }
    h = value + 1;
    n -= 2;
  }
  errno = 0;
  p = strtol(colon + 1, &end, 10);
  if (*end || errno || p < 1 || p > 65535) {
    snprintf(why, wlen, "the port must be a number from 1 to 65535, got '%s'.", colon + 1);
    return -1;
  }
  if (n >= hlen) {
    snprintf(why, wlen, "the host is too long.");
    return -1;
  }
  memcpy(host, h, n);
  host[n] = '\0';
  snprintf(port, plen, "%ld", p);
  return 0;
}

int listen_addr_check(const char *value, char *why, size_t len) {
  char host[256], port[8];
  if (value[0] == '/') {
    if (strlen(value) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
      snprintf(why, len, "a Unix socket path holds at most %zu bytes.",
               sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
      return -1;
    }
    return 0;
  }
  return listen_addr_split(value, host, sizeof host, port, sizeof port, why, len);
}

