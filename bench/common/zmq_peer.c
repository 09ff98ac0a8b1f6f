/* SPDX-License-Identifier: Apache-2.0 */
#include "zmq_peer.h"

#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>
#include <zmq.h>

#include "bench.h"

#define ZMQ_MAX_MSG 65536

static void zfail(const char *what) {
  fprintf(stderr, "zmq peer: %s: %s\n", what, zmq_strerror(zmq_errno()));
  exit(1);
}

/* Whether buf holds one msgpack array of `size` elements. */
static bool is_array(const char *buf, size_t len, uint32_t size) {
  msgpack_unpacked u;
  bool ok;
  msgpack_unpacked_init(&u);
  ok = msgpack_unpack_next(&u, buf, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
       u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size == size;
  msgpack_unpacked_destroy(&u);
  return ok;
}

/* [1, 7, nil, str of k bytes] of exactly len bytes (the str header grows
 * with k, so try k from the top down). */
static void pack_answer(msgpack_sbuffer *sb, size_t len) {
  static const char pad[ZMQ_MAX_MSG];
  for (size_t k = len; k-- > 0;) {
    msgpack_packer pk;
    msgpack_sbuffer_clear(sb);
    msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_int(&pk, 1);
    msgpack_pack_uint32(&pk, 7);
    msgpack_pack_nil(&pk);
    msgpack_pack_str_with_body(&pk, pad, k);
    if (sb->size == len) return;
  }
  fprintf(stderr, "zmq peer: no answer of %zu bytes\n", len);
  exit(1);
}

/* The REP child: decode each request, answer; until killed. */
static void serve(const char *endpoint, size_t resp_len) {
  static char in[ZMQ_MAX_MSG];
  msgpack_sbuffer answer;
  void *ctx = zmq_ctx_new(), *rep = ctx ? zmq_socket(ctx, ZMQ_REP) : NULL;
  if (!rep || zmq_bind(rep, endpoint) != 0) zfail("bind");
  msgpack_sbuffer_init(&answer);
  pack_answer(&answer, resp_len);
  for (;;) {
    int n = zmq_recv(rep, in, sizeof in, 0);
    if (n < 0 && zmq_errno() == EINTR) continue;
    if (n < 0) zfail("recv");
    if (!is_array(in, (size_t)n, 4)) {
      fprintf(stderr, "zmq peer: a request is not a msgpack-RPC request\n");
      _exit(1);
    }
    if (zmq_send(rep, answer.data, answer.size, 0) < 0) zfail("send");
  }
}

void zmq_peer_start(zmq_peer_t *p, size_t resp_len) {
  memset(p, 0, sizeof *p);
  if (resp_len < 8 || resp_len > ZMQ_MAX_MSG) {
    fprintf(stderr, "zmq peer: an answer of %zu bytes is out of range\n", resp_len);
    exit(1);
  }
  snprintf(p->dir, sizeof p->dir, "/tmp/ptod-bench-zmq-XXXXXX");
  if (!mkdtemp(p->dir)) {
    perror("zmq peer: mkdtemp");
    exit(1);
  }
  snprintf(p->endpoint, sizeof p->endpoint, "ipc://%s/rep", p->dir);
  fflush(stdout);
  p->pid = fork();
  if (p->pid < 0) {
    perror("zmq peer: fork");
    exit(1);
  }
  if (p->pid == 0) {
    serve(p->endpoint, resp_len);
    _exit(0);
  }
  p->ctx = zmq_ctx_new();
  p->req = p->ctx ? zmq_socket(p->ctx, ZMQ_REQ) : NULL;
  /* connect before the child binds is fine: ZeroMQ retries the ipc path. */
  if (!p->req || zmq_connect(p->req, p->endpoint) != 0) zfail("connect");
}

double zmq_peer_round_trip(zmq_peer_t *p, const char *req, size_t qlen) {
  static char in[ZMQ_MAX_MSG];
  uint64_t t0 = bench_now_ns();
  int n;
  if (zmq_send(p->req, req, qlen, 0) < 0) zfail("send");
  do n = zmq_recv(p->req, in, sizeof in, 0);
  while (n < 0 && zmq_errno() == EINTR);
  if (n < 0) zfail("recv");
  if (!is_array(in, (size_t)n, 4)) {
    fprintf(stderr, "zmq peer: the answer is not a msgpack-RPC answer\n");
    exit(1);
  }
  return (double)(bench_now_ns() - t0) / 1000.0;
}

void zmq_peer_stop(zmq_peer_t *p) {
  char path[128];
  int linger = 0;
  if (p->pid <= 0) return;
  zmq_setsockopt(p->req, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(p->req);
  zmq_ctx_term(p->ctx);
  kill(p->pid, SIGTERM);
  while (waitpid(p->pid, NULL, 0) < 0 && errno == EINTR) {
  }
  p->pid = 0;
  snprintf(path, sizeof path, "%s/rep", p->dir);
  unlink(path);
  rmdir(p->dir);
}
