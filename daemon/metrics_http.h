/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_http.h — GET /metrics over HTTP, served by libmicrohttpd (its own
 * thread; no HTTP parsing of ours), for Prometheus to scrape.
 *
 * The text is rendered on the libuv loop, which owns what it reports: a
 * scrape wakes the loop (uv_async), waits up to 5 s for the text and
 * answers 503 if the loop does not answer in time.  Anything but GET or
 * HEAD is 405, any other path 404.  128 connections are served at once;
 * the next one is served too, and the connection whose request began
 * longest ago is cut, so slow clients cannot hold every slot however many
 * they open (no per-address limit: local clients all come from 127.0.0.1).
 * Each is closed after 10 s idle, and cut when a request takes more than
 * 10 s in all, however slowly its bytes trickle in.
 *
 * `listen` is HOST:PORT (127.0.0.1:9464, [::1]:9464, localhost:9464) or an
 * absolute Unix socket path (/run/ptod/metrics0.sock), bound with the main
 * socket's checks (sockpath.h): its directory must be the daemon's or
 * root's and writable by nobody else, a stale socket there is replaced, a
 * live one (another process answers on it) or any other file is an
 * error.  The socket is 0660 (the daemon's user and group).
 */
#ifndef PTOD_METRICS_HTTP_H
#define PTOD_METRICS_HTTP_H

#include <stddef.h>

#include <uv.h>

#include <pto/errors.h>

typedef struct mhttp mhttp_t;

/* Loop thread: the exposition text, malloc'ed (freed by the server), or
 * NULL (answered 503). */
typedef char *(*mhttp_render_fn)(void *data, size_t *ret_len);

/* Bind and start serving.  Errors: -PTO_E_INVALID_CONFIG (bad address),
 * -PTO_E_INTERNAL (bind, listen or the server failed), with err naming
 * the address and why.  Stop with mhttp_stop on the loop thread. */
int mhttp_start(uv_loop_t *loop, const char *listen, mhttp_render_fn render, void *data,
                mhttp_t **ret, pto_error_t *err);

/* Stop serving (a scrape waiting is answered 503), close the socket
 * (removing a Unix socket file), free once the loop handle is closed.
 * NULL accepted. */
void mhttp_stop(mhttp_t *h);

#endif
