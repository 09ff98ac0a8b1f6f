/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz the metrics endpoint (daemon/metrics_http.c) in process: the real
 * server (libmicrohttpd's thread and our handler) on a Unix socket in a
 * temporary directory, the libuv loop that renders the text run by this
 * thread while it waits, and up to three connections per input, each
 * sending the input's bytes (any request, many pipelined, garbage, a
 * request cut short) and then shutting down its side or closing at once.
 *
 * Input: steps [flags] [len u16] bytes: one connection each (at most
 * three); flags & 1: close without reading the answer.
 *
 * Checked, on everything a connection reads back:
 *   - it is a sequence of whole HTTP/1.x responses (status line, headers,
 *     Content-Length, that many bytes of body), then the server closes
 *     (after libmicrohttpd's own error answer, e.g. 400, nothing more is
 *     checked);
 *   - a 200 carries the rendered text exactly (a HEAD: its length, no
 *     body) with the exposition content type; 404 and 405 carry their
 *     sentence, 405 an `Allow: GET, HEAD`; a 503 never comes (the loop
 *     answers at once here);
 *   - a well-formed `GET /metrics` on its own is answered 200.
 */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include "fuzz_common.h"
#include "metrics_http.h"

#define TEXT "# HELP ptod_up Whether the daemon is up.\n# TYPE ptod_up gauge\nptod_up 1\n"
#define MAX_REPLY (1u << 20)

static struct {
  uv_loop_t loop;
  mhttp_t *http;
  char dir[64], path[128];
  char *reply;
} s;

static char *render(void *data, size_t *ret_len) {
  (void)data;
  *ret_len = strlen(TEXT);
  return strdup(TEXT);
}

static void setup(void) {
  pto_error_t err;
  signal(SIGPIPE, SIG_IGN); /* as ptod.c */
  snprintf(s.dir, sizeof s.dir, "/tmp/fuzz_http-XXXXXX");
  FUZZ_CHECK(mkdtemp(s.dir), "mkdtemp: %s", strerror(errno));
  snprintf(s.path, sizeof s.path, "%s/metrics.sock", s.dir);
  FUZZ_CHECK(uv_loop_init(&s.loop) == 0, "uv_loop_init");
  FUZZ_CHECK(mhttp_start(&s.loop, s.path, render, NULL, &s.http, &err) == 0,
             "the metrics endpoint did not start: %s", err.message);
  s.reply = malloc(MAX_REPLY);
  FUZZ_CHECK(s.reply, "no memory");
}

/* Read what the server sends until it closes, running the loop (which
 * renders) whenever it has something to do. */
static size_t read_reply(int fd) {
  size_t len = 0;
  for (;;) {
    struct pollfd p[2] = {{fd, POLLIN, 0}, {uv_backend_fd(&s.loop), POLLIN, 0}};
    ssize_t n;
    uv_run(&s.loop, UV_RUN_NOWAIT); /* also puts new handles into its epoll set */
    if (poll(p, 2, -1) < 0) {
      FUZZ_CHECK(errno == EINTR, "poll: %s", strerror(errno)); /* libFuzzer's timer */
      continue;
    }
    if (!p[0].revents) continue;
    n = recv(fd, s.reply + len, MAX_REPLY - len, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) return len;
    if (n < 0 && errno == EAGAIN) continue;
    FUZZ_CHECK(n > 0, "recv: %s", strerror(errno));
    len += (size_t)n;
    FUZZ_CHECK(len < MAX_REPLY, "more than %u bytes of answers", MAX_REPLY);
  }
}

/* The value of header `name` in [h, end), or NULL. */
static const char *header(const char *h, const char *end, const char *name, size_t *ret_len) {
  size_t n = strlen(name);
  for (const char *line = h; line < end;) {
    const char *eol = memmem(line, (size_t)(end - line), "\r\n", 2);
    if (!eol) eol = end;
    if ((size_t)(eol - line) > n + 1 && strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (v < eol && *v == ' ') v++;
      *ret_len = (size_t)(eol - v);
      return v;
    }
    line = eol + 2;
  }
  return NULL;
}

static bool value_is(const char *v, size_t len, const char *want) {
  return v && len == strlen(want) && memcmp(v, want, len) == 0;
}

/* One response at r (of left bytes): checked; returns its length. */
static size_t check_response(const char *r, size_t left, bool head, int *ret_status) {
  const char *end = memmem(r, left, "\r\n\r\n", 4), *v, *body;
  size_t vlen = 0, body_len = 0;
  int status = 0;
  FUZZ_CHECK(end, "a response without the end of its headers: %.*s", (int)(left < 200 ? left : 200),
             r);
  FUZZ_CHECK(left > 13 && (memcmp(r, "HTTP/1.1 ", 9) == 0 || memcmp(r, "HTTP/1.0 ", 9) == 0) &&
                 sscanf(r + 9, "%3d", &status) == 1,
             "not an HTTP status line: %.*s", (int)(end - r), r);
  v = header(r, end, "Content-Length", &vlen);
  FUZZ_CHECK(v && sscanf(v, "%zu", &body_len) == 1, "a response without Content-Length");
  body = end + 4;
  FUZZ_CHECK(status != 503, "503: the loop's text did not come");
  if (status == 200) {
    FUZZ_CHECK(body_len == strlen(TEXT), "200 with Content-Length %zu, not the text's %zu",
               body_len, strlen(TEXT));
    v = header(r, end, "Content-Type", &vlen);
    FUZZ_CHECK(value_is(v, vlen, "text/plain; version=0.0.4; charset=utf-8"),
               "200 without the exposition content type");
  }
  /* An answer to HEAD has the length and no body, whatever its status
   * (pipelined requests may mix HEAD and GET: the next response follows). */
  if (head && (body == r + left || ((size_t)(r + left - body) >= 7 && !memcmp(body, "HTTP/1.", 7))))
    body_len = 0;
  FUZZ_CHECK((size_t)(r + left - body) >= body_len, "a body cut short (%zu of %zu bytes)",
             (size_t)(r + left - body), body_len);
  if (status == 200) FUZZ_CHECK(memcmp(body, TEXT, body_len) == 0, "200 with another body");
  if (status == 404 && body_len) /* (none to a HEAD) */
    FUZZ_CHECK(memmem(body, body_len, "/metrics", 8), "404 without its sentence");
  if (status == 405)
    FUZZ_CHECK(value_is(header(r, end, "Allow", &vlen), vlen, "GET, HEAD"),
               "405 without Allow: GET, HEAD");
  *ret_status = status;
  return (size_t)(body - r) + body_len;
}

/* Every response in the reply; whether the first was 200. */
static int check_reply(const uint8_t *req, size_t req_len, size_t len) {
  bool head = memmem(req, req_len, "HEAD", 4) != NULL;
  int first = 0, status;
  for (size_t at = 0; at < len;) {
    at += check_response(s.reply + at, len - at, head, &status);
    if (!first) first = status;
    /* libmicrohttpd's own answer to a request it cannot parse ends the
     * connection; 0.9.75 may send its headers twice (seen with a
     * Content-Length of a byte >= 0x80): not ours to check. */
    if (status != 200 && status != 404 && status != 405) break;
  }
  return first;
}

/* Whether req is one well-formed GET of /metrics and nothing else. */
static bool plain_get(const uint8_t *req, size_t len) {
  static const char get[] = "GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n";
  return len == sizeof get - 1 && memcmp(req, get, len) == 0;
}

static void one_connection(uint8_t flags, const uint8_t *req, size_t len) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  size_t got;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", s.path);
  FUZZ_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0, "connect: %s",
             strerror(errno));
  (void)!send(fd, req, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (flags & 1) {
    close(fd);
    return;
  }
  shutdown(fd, SHUT_WR);
  got = read_reply(fd);
  close(fd);
  if (plain_get(req, len)) FUZZ_CHECK(check_reply(req, len, got) == 200, "a plain GET not 200");
  else check_reply(req, len, got);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in_t in = {data, size};
  if (!s.http) setup();
  for (int i = 0; i < 3 && in.left > 0; i++) {
    uint8_t flags = fuzz_u8(&in);
    size_t len;
    const uint8_t *req = fuzz_bytes(&in, fuzz_u16(&in), &len);
    one_connection(flags, req, len);
  }
  return 0;
}
