/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the connection (connection.h): what the socket holds goes into
 * the receive buffer, and every whole message in it is decoded and
 * delivered to its slot. */
#include <errno.h>
#include <poll.h>
#include <sys/socket.h>

#include "connection.h"

static void conn_out_of_memory(pto_client_t *c, size_t len) {
  pto_error_t e;
  client_error(&e, PTO_E_NO_MEMORY, "Out of memory decoding a %zu-byte answer from '%s'.", len,
               c->path);
  conn_kill(c, &e);
}

/* Every whole message in the buffer. */
static void process(pto_client_t *c) {
  while (!c->dead && c->rx.end > c->rx.start) {
    size_t len = 0;
    pto_error_t err;
    reply_outcome_t out;
    rxbuf_msg_t msg;
    int rc;
    if (c->reader.offset == 0) { /* between messages: a dispatch answer may go the fast way */
      rc = client_reply_fast(c, &c->rx, slot_method_of, &out);
      if (rc < 0) {
        conn_out_of_memory(c, c->rx.end - c->rx.start);
        return;
      }
      if (rc > 0) {
        conn_deliver(c, &out);
        continue;
      }
    }
    pto_error_clear(&err);
    rc = proto_reader_feed(&c->reader, rxbuf_data(&c->rx) + c->rx.start, c->rx.end - c->rx.start,
                           &len, &err);
    if (rc == 0) return;
    if (rc < 0) {
      pto_error_t e;
      client_error(&e, PTO_E_PROTOCOL_ERROR,
                   "The daemon at '%s' sent bytes that are not a msgpack-RPC message: %s", c->path,
                   err.message);
      conn_kill(c, &e);
      return;
    }
    proto_reader_reset(&c->reader);
    if (rxbuf_take(&c->rx, len, &msg) < 0) {
      pto_error_t e;
      client_error(&e, PTO_E_NO_MEMORY, "Out of memory holding a %zu-byte answer from '%s'.", len,
                   c->path);
      conn_kill(c, &e);
      return;
    }
    rc = client_reply_decode(c, &msg, slot_method_of, &out);
    if (rc < 0) {
      conn_out_of_memory(c, len);
      return;
    }
    conn_deliver(c, &out);
  }
}

void conn_read(pto_client_t *c) {
  for (int round = 0; round < 64 && !c->dead; round++) {
    size_t want = RXBUF_CHUNK, room;
    ssize_t n;
    /* The reader knows how much of the current message is still to come
     * (process() has walked every byte received, so that counts from the
     * buffer's end): make room for it at once, up to a bound a bogus length
     * cannot abuse. */
    if (c->reader.need > want) want = c->reader.need > (256u << 20) ? (256u << 20) : c->reader.need;
    if (rxbuf_reserve(&c->rx, want) < 0) {
      pto_error_t e;
      client_error(&e, PTO_E_NO_MEMORY, "Out of memory reading an answer from '%s'.", c->path);
      conn_kill(c, &e);
      return;
    }
    room = rxbuf_room(&c->rx);
    n = recv(c->fd, rxbuf_data(&c->rx) + c->rx.end, room, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    if (n <= 0) { /* end of file, ECONNRESET: whatever was queued has been read */
      process(c);
      conn_kill(c, NULL);
      return;
    }
    c->rx.end += (size_t)n;
    process(c);
    if ((size_t)n < room) return; /* drained */
  }
}

short conn_poll(pto_client_t *c, short events, int64_t deadline) {
  struct pollfd p = {.fd = c->fd, .events = events};
  for (;;) {
    int n = poll(&p, 1, conn_poll_timeout(deadline));
    if (n > 0) return p.revents ? p.revents : events;
    if (n == 0) return 0;
    if (errno != EINTR) return POLLERR;
  }
}
