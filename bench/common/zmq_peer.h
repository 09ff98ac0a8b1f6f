/* SPDX-License-Identifier: Apache-2.0 */
/* zmq_peer.h — the peer baseline: what a user would otherwise pick for a
 * request/answer channel between processes, a ZeroMQ REQ/REP round trip
 * over ipc:// with msgpack messages (vLLM's engine core talks ZeroMQ and
 * msgpack).
 *
 * The REP side is a child process; it decodes each request with msgpack
 * and sends back a msgpack answer of a size the caller chooses (in the
 * benchmarks: ptod's own answer to the request).  The REQ side sends the
 * caller's request bytes and decodes the answer, so each round trip pays
 * ZeroMQ's framing and both msgpack decodes, as a user's would.
 *
 * One peer at a time; single-threaded (ZeroMQ's own I/O threads aside).
 * Failures print why and exit(1), as in bench.h. */
#ifndef PTOD_BENCH_ZMQ_PEER_H
#define PTOD_BENCH_ZMQ_PEER_H

#include <stddef.h>
#include <sys/types.h>

typedef struct zmq_peer {
  pid_t pid;       /* the REP child */
  char dir[64];    /* a private temporary directory holding the ipc socket */
  char endpoint[96];
  void *ctx, *req; /* ours: the context and the REQ socket */
} zmq_peer_t;

/* Start the REP child answering every request with a msgpack array
 * [1, msgid, nil, str] of exactly resp_len bytes (resp_len >= 8), and
 * connect a REQ socket to it.  Call it before anything else of this
 * process uses ZeroMQ (the child must not inherit a context). */
void zmq_peer_start(zmq_peer_t *p, size_t resp_len);

/* One round trip: send req (qlen bytes of msgpack), receive and decode the
 * answer; in us. */
double zmq_peer_round_trip(zmq_peer_t *p, const char *req, size_t qlen);

/* Stop the child, close the sockets, remove the directory. */
void zmq_peer_stop(zmq_peer_t *p);

#endif
