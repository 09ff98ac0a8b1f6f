/* SPDX-License-Identifier: Apache-2.0 */
#include "datapath.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "reader.h"

/* Writes to the echo peer go in pieces of this much, with reads between. */
#define ECHO_CHUNK (256u << 10)

static void fail(const char *what) {
  fprintf(stderr, "bench_datapath: %s\n", what);
  exit(1);
}

double dp_memcpy_us(char *dst, const char *src, size_t size, int iters) {
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < iters; i++) {
    memcpy(dst, src, size);
    __asm__ __volatile__("" : : "r"(dst) : "memory"); /* keep every copy */
  }
  return (double)(bench_now_ns() - t0) / 1000.0 / iters;
}

double dp_raw_us(int fd, const char *req, size_t qlen, char *rx, size_t cap) {
  proto_reader_t r;
  size_t have = 0, len = 0;
  uint64_t t0 = bench_now_ns();
  proto_reader_init(&r, cap);
  bench_write_all(fd, req, qlen);
  for (;;) {
    ssize_t n = read(fd, rx + have, cap - have);
    int rc;
    if (n <= 0) fail("read from ptod");
    have += (size_t)n;
    rc = proto_reader_feed(&r, rx, have, &len, NULL);
    if (rc < 0) fail("ptod's answer is not msgpack");
    if (rc == 1) break;
  }
  if (len != have) fail("more than one answer");
  return (double)(bench_now_ns() - t0) / 1000.0;
}

/* The echo peer: one buffer of *(size_t *)arg bytes, reused. */
static void echo_serve(int fd, void *arg) {
  size_t size = *(const size_t *)arg;
  char *buf = malloc(size);
  if (!buf) _exit(1);
  memset(buf, 0, size);
  for (;;) {
    ssize_t n = read(fd, buf, size);
    if (n <= 0) return;
    bench_write_all(fd, buf, (size_t)n);
  }
}

pid_t dp_start_echo(int *ret_fd, size_t size) {
  return bench_peer_start(ret_fd, echo_serve, &size);
}

double dp_socket_us(int fd, const char *tx, char *rx, size_t size) {
  uint64_t t0 = bench_now_ns();
  size_t have = 0;
  /* Write in pieces and read between them: the peer echoes while we send,
   * and neither side's socket buffer has to hold the whole message. */
  for (size_t off = 0; off < size || have < size;) {
    if (off < size) {
      size_t chunk = size - off < ECHO_CHUNK ? size - off : ECHO_CHUNK;
      bench_write_all(fd, tx + off, chunk);
      off += chunk;
    }
    while (have < off) {
      ssize_t n = read(fd, rx + have, size - have);
      if (n <= 0) fail("read from the echo peer");
      have += (size_t)n;
    }
  }
  return (double)(bench_now_ns() - t0) / 1000.0;
}
