/* SPDX-License-Identifier: Apache-2.0 */
/* listen_addr.h — the [metrics] listen value: HOST:PORT (127.0.0.1:9464,
 * [::1]:9464, localhost:9464) or an absolute Unix socket path.  Pure: it
 * resolves and binds nothing (config.c checks with it, metrics_http.c
 * binds what it splits). */
#ifndef PTOD_LISTEN_ADDR_H
#define PTOD_LISTEN_ADDR_H

#include <stddef.h>

/* 0 when value is valid, else -1 with why (len bytes) saying what is
 * wrong and what to write. */
int listen_addr_check(const char *value, char *why, size_t len);

/* HOST:PORT into host (brackets of an IPv6 host removed) and port (a
 * number 1..65535 as text).  0, or -1 with why. */
int listen_addr_split(const char *value, char *host, size_t hlen, char *port, size_t plen,
                      char *why, size_t wlen);

#endif
