/* SPDX-License-Identifier: Apache-2.0 */
#include "pingpong.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "bench.h"

typedef struct pingpong {
  size_t req, resp;
  bool spin;
} pingpong_t;

/* Read len bytes; spin: with non-blocking reads, never sleeping. */
static bool read_all(int fd, void *buf, size_t len, bool spin) {
  char *p = buf;
  while (len) {
    ssize_t n = recv(fd, p, len, spin ? MSG_DONTWAIT : 0);
    if (n < 0 && (errno == EINTR || (spin && errno == EAGAIN))) continue;
    if (n <= 0) return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

static void serve(int fd, void *arg) {
  const pingpong_t *pp = arg;
  char in[PINGPONG_MAX_MSG], out[PINGPONG_MAX_MSG];
  memset(out, 0xa5, sizeof out);
  while (read_all(fd, in, pp->req, pp->spin)) bench_write_all(fd, out, pp->resp);
}

pid_t pingpong_start(int *ret_fd, size_t req, size_t resp, bool spin) {
  pingpong_t pp = {req, resp, spin};
  return bench_peer_start(ret_fd, serve, &pp);
}

double pingpong_once(int fd, const char *req, size_t qlen, size_t rlen, bool spin) {
  char in[PINGPONG_MAX_MSG];
  uint64_t t0 = bench_now_ns();
  bench_write_all(fd, req, qlen);
  if (!read_all(fd, in, rlen, spin)) {
    fprintf(stderr, "bench_latency: read from the ping-pong peer: %s\n", strerror(errno));
    exit(1);
  }
  return (double)(bench_now_ns() - t0) / 1000.0;
}
