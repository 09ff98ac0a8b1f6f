/* conn_output.c — a connection's answers on their way out: a queue of
 * chunks, each the connection's own bytes or bytes lent by an owner
 * (srv_conn_send_parts), written with writev as the socket takes them. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "log.h"
#include "server_internal.h"

#define WRITE_IOVECS 64

struct out_chunk {
  out_chunk_t *next;
  const char *data;
  size_t len, off;
  srv_owner_t *owner; /* NULL: data is the chunk's own, freed with it */
};

static void chunk_free(out_chunk_t *c) {
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
    chunk_free(c);
  }
  conn->out_head = conn->out_tail = NULL;
  conn->srv->output -= conn->out_bytes;
  conn->out_bytes = 0;
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
      log_debug("Client %llu: write failed: %s.", (unsigned long long)conn->id, strerror(errno));
      srv_conn_close(conn);
      return;
    }
    conn->out_bytes -= (uint64_t)wrote;
    conn->srv->output -= (uint64_t)wrote;
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
      chunk_free(c);
    }
  }
  if (conn->closing) return;
  if (!conn->out_head && conn->close_after_write) {
    srv_conn_close(conn);
    return;
  }
  conn_update(conn);
}

static bool queue_chunk(srv_conn_t *conn, const char *data, size_t len, srv_owner_t *owner) {
  out_chunk_t *c = calloc(1, sizeof(*c));
  if (!c) return false;
  c->data = data;
  c->len = len;
  c->owner = owner;
  if (conn->out_tail)
    conn->out_tail->next = c;
  else
    conn->out_head = c;
  conn->out_tail = c;
  conn->out_bytes += len;
  conn->srv->output += len;
  return true;
}

static void send_queued(srv_conn_t *conn);

void srv_conn_send(srv_conn_t *conn, char *data, size_t len) {
  if (conn->closing || len == 0 || !queue_chunk(conn, data, len, NULL)) {
    free(data);
    if (!conn->closing && len) srv_conn_close(conn);
    return;
  }
  send_queued(conn);
}

void srv_conn_send_parts(srv_conn_t *conn, const struct iovec *parts, unsigned nparts,
                         srv_owner_t *owner) {
  unsigned i;
  owner->parts = 1; /* held here until every part is queued */
  for (i = 0; i < nparts && !conn->closing; i++) {
    if (parts[i].iov_len == 0) continue;
    owner->parts++;
    if (!queue_chunk(conn, parts[i].iov_base, parts[i].iov_len, owner)) {
      owner->parts--;
      srv_conn_close(conn);
    }
  }
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
  if (srv->cork_depth > 0 && conn->out_bytes <= srv->opts.output_limit) {
    if (!conn->flush_listed) {
      conn->flush_listed = true;
      conn->flush_next = srv->flush_list;
      srv->flush_list = conn;
    }
  } else {
    conn_flush(conn);
    if (!conn->closing && conn->out_bytes > srv->opts.output_limit) {
      log_client(LOG_WARNING,
                 "Client %llu has %llu bytes of answers it does not read (output_limit %llu); "
                 "disconnecting it.",
                 (unsigned long long)conn->id, (unsigned long long)conn->out_bytes,
                 (unsigned long long)srv->opts.output_limit);
      srv_conn_close(conn);
      return;
    }
  }
  srv_check_output(srv);
}

