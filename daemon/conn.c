/* conn.c — one connection's bytes: reading and cutting messages, flow
 * control, writing answers, its timer, closing.  The model is server.h's. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "server_internal.h"

#define READ_CHUNK (64 * 1024)
#define READS_PER_EVENT 4 /* then the loop serves the others */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t srv_conn_id(const srv_conn_t *conn) { return conn->id; }
pid_t srv_conn_pid(const srv_conn_t *conn) { return conn->pid; }
uid_t srv_conn_uid(const srv_conn_t *conn) { return conn->uid; }
uint32_t srv_conn_pending(const srv_conn_t *conn) { return conn->pending; }
void srv_conn_set_data(srv_conn_t *conn, void *data) { conn->data = data; }
void *srv_conn_data(const srv_conn_t *conn) { return conn->data; }
atomic_bool *srv_conn_gone_flag(srv_conn_t *conn) { return &conn->gone; }

/* ---- closing -------------------------------------------------------------- */

static void conn_unref(srv_conn_t *conn) {
  if (--conn->refs > 0) return;
  srv_conn_unlink(conn);
  free(conn);
}

static void conn_on_closed(uv_handle_t *handle) {
  srv_conn_t *conn = handle->data;
  if (--conn->open_handles > 0) return;
  close(conn->fd);
  conn_unref(conn);
}

static void set_read_buffer(srv_conn_t *conn, char *buf, size_t cap) {
  srv_account_input(conn->srv, (int64_t)cap - (int64_t)conn->rcap);
  conn->rbuf = buf;
  conn->rcap = cap;
}

static int pop_fd(srv_conn_t *conn, unsigned *ret_batch) {
  int fd = conn->fds[0];
  *ret_batch = conn->fd_batch[0];
  conn->nfds--;
  memmove(conn->fds, conn->fds + 1, conn->nfds * sizeof(conn->fds[0]));
  memmove(conn->fd_batch, conn->fd_batch + 1, conn->nfds * sizeof(conn->fd_batch[0]));
  return fd;
}

int srv_conn_take_fd(srv_conn_t *conn, unsigned *ret_together) {
  unsigned batch, other;
  int fd;
  *ret_together = 0;
  if (conn->nfds == 0) return -1;
  fd = pop_fd(conn, &batch);
  *ret_together = 1;
  while (conn->nfds > 0 && conn->fd_batch[0] == batch) {
    close(pop_fd(conn, &other));
    (*ret_together)++;
  }
  return fd;
}

void srv_conn_close(srv_conn_t *conn) {
  srv_t *srv = conn->srv;
  if (conn->closing) return;
  conn->closing = true;
  while (conn->nfds > 0) close(conn->fds[--conn->nfds]);
  atomic_store_explicit(&conn->gone, true, memory_order_release);
  conn_free_output(conn); /* answers not yet written are dropped */
  free(conn->rbuf);
  set_read_buffer(conn, NULL, 0);
  conn->rpos = conn->rlen = 0;
  srv->clients--;
  srv_release_pass(srv, conn);
  srv->handlers.on_close(conn, srv->handlers.data);
  uv_close((uv_handle_t *)&conn->timer, conn_on_closed);
  uv_close((uv_handle_t *)&conn->poll, conn_on_closed);
}

/* Only called when memory is short: then even a READ_CHUNK buffer goes, or
 * idle connections' buffers alone could hold clients_memory, and no
 * connection would be read again (none is under way to take the pass). */
void conn_trim(srv_conn_t *conn) {
  if (conn->closing || conn->rlen > conn->rpos || conn->rcap == 0) return;
  free(conn->rbuf);
  conn->rpos = conn->rlen = 0;
  set_read_buffer(conn, NULL, 0);
}

/* ---- flow control and the timer ------------------------------------------- */

/* Whether the socket should be read now. */
static bool wants_read(srv_conn_t *conn) {
  const srv_options_t *o = &conn->srv->opts;
  if (conn->closing || conn->read_eof || conn->failing || conn->close_after_write) return false;
  if (conn->pending >= o->max_pending) return false;
  if (conn->pending > 0 && conn->rcap + conn->held >= o->input_limit) return false;
  return srv_input_allows(conn->srv, conn);
}

static void conn_on_poll(uv_poll_t *handle, int status, int events);
static void conn_on_timer(uv_timer_t *timer);

/* The timer's next deadline: the message under way must end within
 * client_timeout of its first byte (while we read it: time we spend with
 * reading paused is not the client's); an idle connection goes after
 * idle_timeout; at shut-down, unsent answers are given up. */
static uint64_t next_deadline(srv_conn_t *conn, bool reading) {
  const srv_options_t *o = &conn->srv->opts;
  uint64_t at = UINT64_MAX;
  if (conn->flush_deadline_ns) at = conn->flush_deadline_ns;
  if (reading && conn->msg_start_ns && o->client_timeout_ms) {
    uint64_t t = conn->msg_start_ns + o->client_timeout_ms * 1000000u;
    if (t < at) at = t;
  }
  if (o->idle_timeout_ms && conn->idle_since_ns) {
    uint64_t t = conn->idle_since_ns + o->idle_timeout_ms * 1000000u;
    if (t < at) at = t;
  }
  return at;
}

void conn_update(srv_conn_t *conn) {
  bool reading, idle;
  int events;
  uint64_t at, now;
  if (conn->closing) return;
  reading = wants_read(conn);
  /* Writable only once the socket refused bytes: answers held for a
   * corked batch are written at uncork without a poll. */
  events = (reading ? UV_READABLE : 0) | (conn->write_blocked ? UV_WRITABLE : 0);
  if (events != conn->events) {
    if (events)
      uv_poll_start(&conn->poll, events, conn_on_poll);
    else
      uv_poll_stop(&conn->poll);
    conn->events = events;
  }
  idle = conn->pending == 0 && !conn->out_head && !conn->msg_start_ns;
  if (!idle)
    conn->idle_since_ns = 0;
  else if (!conn->idle_since_ns)
    conn->idle_since_ns = now_ns();
  at = next_deadline(conn, reading);
  if (at == UINT64_MAX) {
    uv_timer_stop(&conn->timer);
    return;
  }
  now = now_ns();
  uv_timer_start(&conn->timer, conn_on_timer, at > now ? (at - now + 999999u) / 1000000u : 0, 0);
}

static void conn_on_timer(uv_timer_t *timer) {
  srv_conn_t *conn = timer->data;
  const srv_options_t *o = &conn->srv->opts;
  uint64_t now = now_ns();
  if (conn->flush_deadline_ns && now >= conn->flush_deadline_ns) {
    log_warning("Client %llu did not read its last %llu bytes of answers within %llu ms; closing "
                "without them.",
                (unsigned long long)conn->id, (unsigned long long)conn->out_bytes,
                (unsigned long long)o->client_timeout_ms);
    srv_conn_close(conn);
    return;
  }
  if (conn->msg_start_ns && now >= conn->msg_start_ns + o->client_timeout_ms * 1000000u &&
      (conn->events & UV_READABLE)) {
    log_client(LOG_INFO,
               "Client %llu (pid %d, uid %u) took more than client_timeout = %llu ms to send "
               "one message (%zu bytes so far); disconnecting it.",
               (unsigned long long)conn->id, (int)conn->pid, (unsigned)conn->uid,
               (unsigned long long)o->client_timeout_ms, conn->rlen - conn->rpos);
    srv_conn_close(conn);
    return;
  }
  if (o->idle_timeout_ms && conn->idle_since_ns &&
      now >= conn->idle_since_ns + o->idle_timeout_ms * 1000000u) {
    log_debug("Client %llu was idle for idle_timeout = %llu ms; closing it.",
              (unsigned long long)conn->id, (unsigned long long)o->idle_timeout_ms);
    srv_conn_close(conn);
    return;
  }
  conn_update(conn);
}

void conn_close_after_flush(srv_conn_t *conn, uint64_t timeout_ms) {
  conn->close_after_write = true;
  conn->flush_deadline_ns = now_ns() + timeout_ms * 1000000u;
  conn_update(conn);
}

static void conn_finish_if_done(srv_conn_t *conn);

/* ---- fatal errors ---------------------------------------------------------- */

void srv_conn_fail(srv_conn_t *conn, const pto_error_t *err) {
  if (conn->closing || conn->failing) return;
  conn->failing = true;
  conn->fail_err = *err;
  conn->fail_has_msgid = proto_reader_msgid(&conn->reader, &conn->fail_msgid);
  conn_finish_if_done(conn);
}

/* A failing connection with nothing pending gets its last message; a
 * half-closed one with nothing pending closes once its answers are out. */
static void conn_finish_if_done(srv_conn_t *conn) {
  if (conn->closing || conn->pending > 0) return;
  if (conn->failing && !conn->close_after_write) {
    srv_t *srv = conn->srv;
    conn->close_after_write = true;
    srv->handlers.on_fatal(conn, &conn->fail_err, conn->fail_has_msgid ? &conn->fail_msgid : NULL,
                           srv->handlers.data);
  } else if (conn->read_eof) {
    conn->close_after_write = true;
  }
  if (conn->closing) return;
  if (conn->close_after_write && !conn->out_head)
    srv_conn_close(conn);
  else
    conn_update(conn);
}

/* ---- reading --------------------------------------------------------------- */

/* Room for the next read: the unread tail moved to the front, and the
 * buffer grown at once to what the reader knows the message still needs
 * (not by doubling read after read), up to max_message. */
static bool reserve_read(srv_conn_t *conn) {
  size_t cap_limit = conn->reader.max_message + READ_CHUNK, want;
  if (conn->rpos > 0) {
    memmove(conn->rbuf, conn->rbuf + conn->rpos, conn->rlen - conn->rpos);
    conn->rlen -= conn->rpos;
    conn->rpos = 0;
  }
  want = READ_CHUNK / 4;
  if (conn->reader.need > want)
    want = conn->reader.need < cap_limit - conn->rlen ? (size_t)conn->reader.need
                                                      : cap_limit - conn->rlen;
  if (conn->rcap - conn->rlen < want && conn->rcap < cap_limit) {
    size_t cap = conn->rcap ? conn->rcap * 2 : READ_CHUNK;
    char *grown;
    while (cap - conn->rlen < want && cap < cap_limit) cap *= 2;
    if (cap > cap_limit) cap = cap_limit;
    grown = realloc(conn->rbuf, cap);
    if (!grown) return conn->rcap > conn->rlen;
    srv_buffer_hint(grown, cap);
    set_read_buffer(conn, grown, cap);
  }
  return conn->rcap > conn->rlen;
}

/* Hand the message [rpos, rpos+len) to the service, in memory of its own. */
static int conn_deliver(srv_conn_t *conn, size_t len) {
  srv_t *srv = conn->srv;
  srv_msg_t *msg = malloc(sizeof(*msg));
  uint64_t objects;
  if (!msg) return -ENOMEM;
  msg->len = len;
  objects = proto_reader_objects(&conn->reader);
  if (conn->rpos == 0 && len == conn->rlen && len >= READ_CHUNK) {
    /* A large message alone in the buffer: lend the buffer instead of
     * copying it (its bytes are counted as the message's meanwhile); it
     * comes back at srv_msg_done for the next message, already faulted in. */
    msg->data = conn->rbuf;
    msg->charge = conn->rcap;
    msg->lent_cap = conn->rcap;
    conn->rbuf = NULL;
    conn->rcap = 0;
    conn->rlen = 0;
  } else {
    msg->lent_cap = 0;
    msg->data = malloc(len ? len : 1);
    if (!msg->data) {
      free(msg);
      return -ENOMEM;
    }
    memcpy(msg->data, conn->rbuf + conn->rpos, len);
    conn->rpos += len;
    msg->charge = len;
    srv_account_input(srv, (int64_t)len);
  }
  msg->charge += objects * SRV_DECODED_OBJECT_BYTES;
  srv_account_input(srv, (int64_t)(objects * SRV_DECODED_OBJECT_BYTES));
  conn->pending++;
  conn->held += msg->charge;
  conn->refs++;
  srv->handlers.on_message(conn, msg, srv->handlers.data);
  return 0;
}

/* Cut whole messages out of what has arrived, while flow control lets the
 * connection have more pending. */
static void conn_process(srv_conn_t *conn) {
  srv_t *srv = conn->srv;
  pto_error_t err;
  size_t len;

  conn->processing = true;
  srv_cork(srv);
  while (!conn->closing && !conn->failing && conn->rlen > conn->rpos &&
         conn->pending < srv->opts.max_pending) {
    int rc = proto_reader_feed(&conn->reader, conn->rbuf + conn->rpos, conn->rlen - conn->rpos,
                               &len, &err);
    if (rc == 0) break;
    if (rc < 0) {
      log_client(LOG_INFO, "Client %llu sent a message that cannot be read (%s); disconnecting it.",
                 (unsigned long long)conn->id, err.message);
      srv_conn_fail(conn, &err);
      break;
    }
    /* The next message starts now, under the limits in force now. */
    conn->msg_start_ns = 0;
    srv_release_pass(srv, conn);
    if (conn_deliver(conn, len) < 0) {
      pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
      srv_conn_fail(conn, &err);
      break;
    }
    proto_reader_reset(&conn->reader);
    proto_reader_set_limits(&conn->reader, srv->opts.max_message, srv->opts.max_objects);
  }
  if (!conn->closing) {
    if (conn->rpos == conn->rlen) conn->rpos = conn->rlen = 0;
    if (conn->rlen > conn->rpos && !conn->msg_start_ns) conn->msg_start_ns = now_ns();
    /* A grown buffer is kept for the next large message (a large
     * message's is lent and comes back: srv_msg_done), unless memory is
     * short. */
    if (conn->srv->pressured) conn_trim(conn);
  }
  conn->processing = false;
  srv_uncork(srv);
}

/* After EOF: whether the peer only shut down its sending side and still
 * reads (a Unix stream socket whose peer is gone reports POLLHUP; one whose
 * peer called shutdown(SHUT_WR) does not). */
static bool peer_still_reads(srv_conn_t *conn) {
  struct pollfd p = {.fd = conn->fd, .events = POLLOUT};
  return poll(&p, 1, 0) == 1 && !(p.revents & (POLLHUP | POLLERR));
}

static void conn_on_eof(srv_conn_t *conn) {
  if (!peer_still_reads(conn)) {
    srv_conn_close(conn);
    return;
  }
  conn->read_eof = true;
  if (conn->rlen > conn->rpos)
    log_client(LOG_INFO,
               "Client %llu shut down its side in the middle of a message; that message is "
               "dropped.",
               (unsigned long long)conn->id);
  conn->msg_start_ns = 0;
  srv_release_pass(conn->srv, conn);
  conn_finish_if_done(conn);
}

/* recv(), also taking the fds that came with the bytes: 0 at EOF, the byte
 * count, or -1 with errno.  *ret_bad says why the connection must fail
 * (NULL: it need not). */
static ssize_t conn_recv(srv_conn_t *conn, const char **ret_bad) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * SRV_MAX_FDS)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {conn->rbuf + conn->rlen, conn->rcap - conn->rlen};
  struct msghdr mh = {0};
  ssize_t got;
  *ret_bad = NULL;
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.buf;
  mh.msg_controllen = sizeof(control.buf);
  got = recvmsg(conn->fd, &mh, MSG_CMSG_CLOEXEC);
  if (got < 0) return got;
  conn->batches++;
  for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
    size_t n;
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < n; i++) {
      int fd;
      memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (conn->nfds < SRV_MAX_FDS) {
        conn->fd_batch[conn->nfds] = conn->batches;
        conn->fds[conn->nfds++] = fd;
      } else {
        close(fd);
        *ret_bad = "it passed more than 8 file descriptors that no shm.register took";
      }
    }
  }
  if (mh.msg_flags & MSG_CTRUNC)
    *ret_bad = "the file descriptors it passed did not fit the daemon's ancillary buffer "
               "(MSG_CTRUNC); pass one per shm.register";
  return got;
}

static void conn_read(srv_conn_t *conn) {
  for (int i = 0; i < READS_PER_EVENT && wants_read(conn); i++) {
    ssize_t got;
    if (!reserve_read(conn)) {
      pto_error_t err;
      pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
      srv_conn_fail(conn, &err);
      break;
    }
    const char *bad;
    got = conn_recv(conn, &bad);
    if (bad) {
      pto_error_t err;
      pto_error_set(&err, PTO_E_INVALID_REQUEST, "The connection is closed: %s.", bad);
      log_client(LOG_INFO, "Client %llu: %s; disconnecting it.", (unsigned long long)conn->id, bad);
      if (got > 0) conn->rlen += (size_t)got; /* what came before is still answered */
      conn_process(conn);
      srv_conn_fail(conn, &err);
      break;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        log_debug("Client %llu: read failed: %s.", (unsigned long long)conn->id, strerror(errno));
        srv_conn_close(conn);
        return;
      }
      break;
    }
    if (got == 0) {
      conn_on_eof(conn);
      return;
    }
    if (conn->rlen == conn->rpos && !conn->msg_start_ns) conn->msg_start_ns = now_ns();
    conn->rlen += (size_t)got;
    conn_process(conn);
    if (conn->closing) return;
    if ((size_t)got < READ_CHUNK / 4) break; /* the socket is most likely drained */
  }
  conn_update(conn);
}

static void conn_on_poll(uv_poll_t *handle, int status, int events) {
  srv_conn_t *conn = handle->data;
  if (status < 0) {
    srv_conn_close(conn);
    return;
  }
  if (events & UV_WRITABLE) conn_flush(conn);
  if (!conn->closing && (events & UV_READABLE)) conn_read(conn);
}


/* ---- the service is done with a message ------------------------------------- */

/* A lent read buffer comes back: the connection's again when it has none
 * or a smaller empty one and memory is not short, so the next large message
 * lands in pages already faulted in (no fresh mapping, no zero-fill). */
static void take_back(srv_conn_t *conn, char *buf, size_t cap) {
  if (conn->closing || conn->srv->pressured || conn->rlen > conn->rpos || conn->rcap >= cap) {
    free(buf);
    return;
  }
  free(conn->rbuf);
  conn->rpos = conn->rlen = 0;
  set_read_buffer(conn, buf, cap);
}

void srv_msg_done(srv_conn_t *conn, srv_msg_t *msg) {
  uint64_t charge = msg->charge;
  conn->pending--;
  conn->held -= charge;
  srv_account_input(conn->srv, -(int64_t)charge);
  if (msg->lent_cap)
    take_back(conn, msg->data, msg->lent_cap);
  else
    free(msg->data);
  free(msg);
  if (!conn->closing) {
    /* Bytes already read may hold the next messages. */
    if (!conn->processing && !conn->failing && conn->rlen > conn->rpos) conn_process(conn);
    if (!conn->closing) conn_finish_if_done(conn);
    if (!conn->closing && !conn->processing) conn_update(conn);
  }
  conn_unref(conn);
}
