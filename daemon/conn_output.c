/* SPDX-License-Identifier: Apache-2.0 */
/* conn_output.c — a connection's answers on their way out: a queue of
 * chunks, each the connection's own bytes or bytes lent by an owner
 * (srv_conn_send_parts), written with writev as the socket takes them.
 *
 * Each answer is charged what it takes in memory — its bytes at their
 * allocated size, the chunk records, and what its owner holds for it —
 * from when it is queued until its last chunk is written or dropped; the
 * charge rides on that last chunk (conn->out_bytes, srv->output). */
#include <errno.h>
#include <malloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "server_internal.h"

#define WRITE_IOVECS 64
/* Small answers queued behind others are packed into blocks of this size
 * (pack_small). */
#define PACK_BLOCK (16 * 1024)
#define PACK_MOST 1024

struct out_chunk {
  out_chunk_t *next;
  const char *data;
  size_t len, off;
  srv_owner_t *owner; /* NULL: data is the chunk's own, freed with it */
  uint64_t charge;    /* the whole answer's, on its last chunk; 0 on the others */
};

static void chunk_free(srv_conn_t *conn, out_chunk_t *c) {
  conn->out_bytes -= c->charge;
  srv_account_output(conn->srv, -(int64_t)c->charge);
  if (!c->owner)
    free((void *)(uintptr_t)c->data);
  else if (--c->owner->parts == 0)
    c->owner->done(c->owner);
  free(c);
}

void conn_free_output(srv_conn_t *conn) {
  out_chunk_t *c, *next;
  for (c = conn->out_head; c; c = next) {
    next = c->next;
    chunk_free(conn, c);
  }
  conn->out_head = conn->out_tail = NULL;
}

void conn_flush(srv_conn_t *conn) {
  conn->write_blocked = false;
  while (conn->out_head && !conn->closing) {
    struct iovec iov[WRITE_IOVECS];
    int n = 0;
    ssize_t wrote;
    for (out_chunk_t *c = conn->out_head; c && n < WRITE_IOVECS; c = c->next, n++) {
      iov[n].iov_base = (char *)(uintptr_t)c->data + c->off;
      iov[n].iov_len = c->len - c->off;
    }
    wrote = writev(conn->fd, iov, n);
    if (wrote < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) {
        conn->write_blocked = true;
        break;
      }
      log_client(LOG_DEBUG, "Client %llu: write failed: %s.", (unsigned long long)conn->id,
                 strerror(errno));
      srv_conn_close(conn);
      return;
    }
    while (wrote > 0) {
      out_chunk_t *c = conn->out_head;
      size_t left = c->len - c->off;
      if ((size_t)wrote < left) {
        c->off += (size_t)wrote;
        break;
      }
      wrote -= (ssize_t)left;
      conn->out_head = c->next;
      if (!conn->out_head) conn->out_tail = NULL;
      chunk_free(conn, c);
    }
  }
  if (conn->closing) return;
  if (!conn->out_head && conn->close_after_write) {
    srv_conn_close(conn);
    return;
  }
  conn_update(conn);
}

static out_chunk_t *queue_chunk(srv_conn_t *conn, const char *data, size_t len,
                                srv_owner_t *owner) {
  out_chunk_t *c = calloc(1, sizeof(*c));
  if (!c) return NULL;
  c->data = data;
  c->len = len;
  c->owner = owner;
  if (conn->out_tail)
    conn->out_tail->next = c;
  else
    conn->out_head = c;
  conn->out_tail = c;
  return c;
}

/* The answer whose last chunk is `last` takes `bytes` of memory. */
static void charge_answer(srv_conn_t *conn, out_chunk_t *last, uint64_t bytes) {
  last->charge += bytes;
  conn->out_bytes += bytes;
  srv_account_output(conn->srv, (int64_t)bytes);
}

/* What the answer at the head of the queue is charged: the one being
 * written, which output_limit does not count (every answer fits it when it
 * is admitted, and a partly written one is still charged whole). */
static uint64_t head_answer_charge(const srv_conn_t *conn) {
  for (const out_chunk_t *c = conn->out_head; c; c = c->next)
    if (c->charge) return c->charge;
  return 0;
}

static void send_queued(srv_conn_t *conn);

size_t srv_heap_bytes(const void *p) {
  return p ? malloc_usable_size((void *)(uintptr_t)p) + sizeof(size_t) : 0;
}

/* An answer encoded into a growing buffer (msgpack's sbuffer starts at
 * 8 KiB) is cut to its length before it waits: a client that does not read
 * its pings must not make each one cost 8 KiB. */
char *srv_right_size(char *data, size_t len) {
  char *cut;
  if (!data || len == 0 || malloc_usable_size(data) <= len + len / 8 + 64) return data;
  cut = realloc(data, len);
  return cut ? cut : data;
}

/* A small answer queued behind others is copied into the memory of the
 * last chunk when it has room (a block, or an answer's own slack), else
 * into a new block charged whole: a client that does not read its pings
 * costs their bytes, not an allocation and a chunk record each, and
 * dropping its answers frees a block per PACK_BLOCK of them instead of two
 * blocks per answer. */
static bool pack_small(srv_conn_t *conn, const char *data, size_t len) {
  out_chunk_t *tail = conn->out_tail;
  if (len > PACK_MOST || !tail) return false;
  if (tail->owner || malloc_usable_size((void *)(uintptr_t)tail->data) - tail->len < len) {
    char *block = malloc(PACK_BLOCK);
    if (!block) return false;
    if (!(tail = queue_chunk(conn, block, 0, NULL))) {
      free(block);
      return false;
    }
    charge_answer(conn, tail, srv_heap_bytes(block) + srv_heap_bytes(tail));
  }
  memcpy((char *)(uintptr_t)tail->data + tail->len, data, len);
  tail->len += len;
  return true;
}

void srv_conn_send(srv_conn_t *conn, char *data, size_t len) {
  out_chunk_t *c;
  if (conn->closing || len == 0) {
    free(data);
    return;
  }
  if (pack_small(conn, data, len)) {
    free(data);
    send_queued(conn);
    return;
  }
  data = srv_right_size(data, len);
  if (!(c = queue_chunk(conn, data, len, NULL))) {
    free(data);
    srv_conn_close(conn);
    return;
  }
  charge_answer(conn, c, srv_heap_bytes(data) + srv_heap_bytes(c));
  send_queued(conn);
}

void srv_conn_send_parts(srv_conn_t *conn, const struct iovec *parts, unsigned nparts,
                         srv_owner_t *owner, uint64_t owner_bytes) {
  uint64_t charge = owner_bytes;
  out_chunk_t *c = NULL;
  unsigned i;
  owner->parts = 1; /* held here until every part is queued */
  for (i = 0; i < nparts && !conn->closing; i++) {
    if (parts[i].iov_len == 0) continue;
    owner->parts++;
    c = queue_chunk(conn, parts[i].iov_base, parts[i].iov_len, owner);
    if (!c) {
      owner->parts--;
      srv_conn_close(conn);
      break;
    }
    charge += srv_heap_bytes(c);
  }
  if (c && !conn->closing) charge_answer(conn, c, charge);
  if (--owner->parts == 0) owner->done(owner);
  if (!conn->closing) send_queued(conn);
}

/* What was just queued: held for the batch, or written now. */
static void send_queued(srv_conn_t *conn) {
  srv_t *srv = conn->srv;
  /* Held for a batch while corked, as long as the batch stays within
   * output_limit; past it, written now, and what the socket does not take
   * must fit output_limit: whatever produced the answers, a client that
   * does not read them cannot make the daemon hold more than that. */
  if (srv->cork_depth > 0 && conn->out_bytes - head_answer_charge(conn) <= srv->opts.output_limit) {
    if (!conn->flush_listed) {
      conn->flush_listed = true;
      conn->flush_next = srv->flush_list;
      srv->flush_list = conn;
    }
  } else {
    conn_flush(conn);
    if (!conn->closing && conn->out_bytes - head_answer_charge(conn) > srv->opts.output_limit) {
      log_client(LOG_WARNING,
                 "Client %llu has answers it does not read taking %llu bytes (output_limit "
                 "%llu); disconnecting it.",
                 (unsigned long long)conn->id, (unsigned long long)conn->out_bytes,
                 (unsigned long long)srv->opts.output_limit);
      srv_conn_close(conn);
      return;
    }
  }
  srv_check_output(srv);
}

