/* SPDX-License-Identifier: Apache-2.0 */
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

#include "closer.h"
#include "log.h"
#include "server_internal.h"

#define READ_CHUNK (64 * 1024)
#define READS_PER_EVENT 4 /* then the loop serves the others */
/* How long one connection's messages may be cut and handed on in one turn
 * of the loop before the others are served (the rest go on in the next
 * turn, srv_defer): 64 KiB of pipelined pings is 6,000 requests, and the
 * clock is read every CLOCK_EVERY of them. */
#define TURN_NS 1000000u
#define CLOCK_EVERY 16
/* The most fds one sendmsg may carry (Linux's SCM_MAX_FD).  fds that do
 * not fit the ancillary buffer are closed by the kernel in the receiving
 * thread, which must not be the loop (closer.h). */
#define SCM_MAX_FD 253

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
  /* Off the loop: the last close of a Unix socket also drops the fds still
   * queued in it unread, and one of those may wait in its close (closer.h). */
  closer_close(conn->fd);
  conn_unref(conn);
}

/* The read buffer is charged the most it has held (the bytes received into
 * it, whose pages are touched), not its capacity: a header announcing a
 * huge message costs what was sent, not what it announces. */
static void set_read_buffer(srv_conn_t *conn, char *buf, size_t cap, size_t charged) {
  srv_account_input(conn->srv, (int64_t)charged - (int64_t)conn->rcharged);
  conn->rbuf = buf;
  conn->rcap = cap;
  conn->rcharged = charged;
}

static void received(srv_conn_t *conn, size_t got) {
  conn->rlen += got;
  if (conn->rlen > conn->rcharged) {
    srv_account_input(conn->srv, (int64_t)(conn->rlen - conn->rcharged));
    conn->rcharged = conn->rlen;
  }
}

void srv_conn_close(srv_conn_t *conn) {
  srv_t *srv = conn->srv;
  if (conn->closing) return;
  conn->closing = true;
  if (conn->deferred) {
    conn->deferred = false;
    srv->deferred--;
  }
  conn_drop_parked_fds(conn);
  atomic_store_explicit(&conn->gone, true, memory_order_release);
  conn_free_output(conn); /* answers not yet written are dropped */
  free(conn->rbuf);
  set_read_buffer(conn, NULL, 0, 0);
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
  set_read_buffer(conn, NULL, 0, 0);
}

/* ---- flow control and the timer ------------------------------------------- */

/* Whether the socket should be read now. */
static bool wants_read(srv_conn_t *conn) {
  const srv_options_t *o = &conn->srv->opts;
  if (conn->closing || conn->read_eof || conn->failing || conn->close_after_write ||
      conn->deferred)
    return false;
  if (conn->pending >= o->max_pending) return false;
  if (conn->pending > 0 && conn_input(conn) >= o->input_limit) return false;
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

/* The message clock runs only while the connection is read: when reading
 * resumes, the message under way is given back the time it was paused
 * (from the pause, or from its first byte if that came later). */
static void clock_reading(srv_conn_t *conn, bool reading) {
  uint64_t now = now_ns(), from;
  if (!reading) {
    conn->paused_ns = now;
    return;
  }
  if (conn->msg_start_ns && conn->paused_ns) {
    from = conn->paused_ns > conn->msg_start_ns ? conn->paused_ns : conn->msg_start_ns;
    conn->msg_start_ns += now - from;
  }
  conn->paused_ns = 0;
}

void conn_update(srv_conn_t *conn) {
  bool reading, idle;
  int events;
  uint64_t at, now;
  if (conn->closing) return;
  reading = wants_read(conn);
  if (reading != ((conn->events & UV_READABLE) != 0)) clock_reading(conn, reading);
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
    log_client(LOG_WARNING,
               "Client %llu did not read its last %llu bytes of answers within %llu ms; closing "
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
    log_client(LOG_DEBUG, "Client %llu was idle for idle_timeout = %llu ms; closing it.",
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
  if (conn->closing || conn->pending > 0 || conn->deferred) return;
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
 * buffer grown towards what the reader knows the message still needs, at
 * most doubling what has arrived (a header alone does not reserve what it
 * announces; past 1 MiB the buffer is mapped and grows without a copy), up
 * to max_message. */
static bool reserve_read(srv_conn_t *conn) {
  size_t cap_limit = conn->reader.max_message + READ_CHUNK, want, most;
  if (conn->rpos > 0) {
    memmove(conn->rbuf, conn->rbuf + conn->rpos, conn->rlen - conn->rpos);
    conn->rlen -= conn->rpos;
    conn->rpos = 0;
  }
  /* Grow when the room left is less than a read's worth of what the
   * message still needs; then double.  (Growing whenever the room is less
   * than all the message needs reallocates on every read: where realloc
   * copies, as under ASan, a 192 MiB message took 30 s.) */
  want = READ_CHUNK / 4;
  most = conn->rlen > READ_CHUNK ? conn->rlen : READ_CHUNK;
  if (most > cap_limit - conn->rlen) most = cap_limit - conn->rlen;
  if (conn->reader.need > want)
    want = conn->reader.need < READ_CHUNK ? (size_t)conn->reader.need : READ_CHUNK;
  if (want > most) want = most;
  if (conn->rcap - conn->rlen < want && conn->rcap < cap_limit) {
    /* Doubling (no copy per read), never past twice what has arrived. */
    size_t cap = conn->rcap * 2 < conn->rlen + most ? conn->rcap * 2 : conn->rlen + most;
    char *grown;
    if (cap < conn->rlen + want) cap = conn->rlen + want;
    if (cap < READ_CHUNK) cap = READ_CHUNK;
    if (cap > cap_limit) cap = cap_limit;
    /* No huge-page hint: a buffer that grows as bytes arrive would be
     * faulted in 2 MiB at a time beyond them (and mremap'ing huge pages is
     * slow); a large buffer kept for the next message is already faulted
     * in (take_back). */
    grown = realloc(conn->rbuf, cap);
    if (!grown) return conn->rcap > conn->rlen;
    set_read_buffer(conn, grown, cap, conn->rcharged);
  }
  return conn->rcap > conn->rlen;
}

/* Hand the message [rpos, rpos+len) to the service, in memory of its own. */
static int conn_deliver(srv_conn_t *conn, size_t len) {
  srv_t *srv = conn->srv;
  srv_msg_t *msg = malloc(sizeof(*msg));
  uint64_t bytes;
  if (!msg) return -ENOMEM;
  msg->len = len;
  msg->objects = proto_reader_objects(&conn->reader);
  msg->decoded = msg->objects * SRV_DECODED_OBJECT_BYTES;
  if (conn->rpos == 0 && len == conn->rlen && len >= READ_CHUNK) {
    /* A large message alone in the buffer: lend the buffer instead of
     * copying it (its charge goes with it); it comes back at srv_msg_done
     * for the next message, already faulted in. */
    msg->data = conn->rbuf;
    msg->lent_cap = conn->rcap;
    msg->lent_charge = conn->rcharged;
    bytes = 0; /* already counted */
    conn->rbuf = NULL;
    conn->rcap = conn->rlen = conn->rcharged = 0;
  } else {
    msg->lent_cap = msg->lent_charge = 0;
    msg->data = malloc(len ? len : 1);
    if (!msg->data) {
      free(msg);
      return -ENOMEM;
    }
    memcpy(msg->data, conn->rbuf + conn->rpos, len);
    conn->rpos += len;
    bytes = srv_heap_bytes(msg->data);
  }
  bytes += srv_heap_bytes(msg) + msg->decoded;
  msg->charge = msg->lent_charge + bytes;
  srv_account_input(srv, (int64_t)bytes);
  conn->pending++;
  conn->held += msg->charge;
  conn->refs++;
  srv->handlers.on_message(conn, msg, srv->handlers.data);
  return 0;
}

/* Cut whole messages out of what has arrived, while flow control lets the
 * connection have more pending, until the turn's time is up (`until`). */
static void conn_process(srv_conn_t *conn, uint64_t until) {
  srv_t *srv = conn->srv;
  unsigned handed = 0;
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
    if (++handed % CLOCK_EVERY == 0 && conn->rlen > conn->rpos && now_ns() >= until &&
        srv_defer(srv, conn))
      break;
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
 * peer called shutdown(SHUT_WR) does not).  Asked with no events: whether
 * the socket is writable says nothing of it (answers the peer has not read
 * yet may fill it). */
static bool peer_still_reads(srv_conn_t *conn) {
  struct pollfd p = {.fd = conn->fd, .events = 0};
  return poll(&p, 1, 0) >= 0 && !(p.revents & (POLLHUP | POLLERR));
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

/* How much the next read may take: the room in the buffer, but while all
 * clients are over clients_memory, a connection without the pass takes no
 * more than its allowance (server.h).  Bytes that land below what the
 * buffer is already charged (rcharged) cost nothing more: only those past
 * it count against the allowance. */
static size_t read_room(const srv_conn_t *conn) {
  const srv_t *srv = conn->srv;
  size_t room = conn->rcap - conn->rlen, free_room;
  uint64_t held = conn_input(conn);
  if (srv->input < srv->opts.clients_memory || srv->pass == conn || held >= SRV_INPUT_ALLOWANCE)
    return room;
  free_room = conn->rcharged > conn->rlen ? conn->rcharged - conn->rlen : 0;
  if (free_room + (SRV_INPUT_ALLOWANCE - held) < room)
    room = free_room + (size_t)(SRV_INPUT_ALLOWANCE - held);
  return room;
}

/* recv(), also taking the fds that came with the bytes: 0 at EOF, the byte
 * count, or -1 with errno.  *ret_bad says why the connection must fail
 * (NULL: it need not). */
static ssize_t conn_recv(srv_conn_t *conn, const char **ret_bad) {
  union { /* room for every fd one message can carry: none is dropped by the kernel here */
    char buf[CMSG_SPACE(sizeof(int) * SCM_MAX_FD)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {conn->rbuf + conn->rlen, read_room(conn)};
  struct msghdr mh = {0};
  ssize_t got;
  *ret_bad = NULL;
  mh.msg_iov = &iov;
  mh.msg_iovlen = 1;
  mh.msg_control = control.buf;
  mh.msg_controllen = sizeof(control.buf);
  got = recvmsg(conn->fd, &mh, MSG_CMSG_CLOEXEC);
  if (got < 0) return got;
  *ret_bad = conn_park_rights(conn, &mh);
  return got;
}

static void conn_read(srv_conn_t *conn) {
  uint64_t until = now_ns() + TURN_NS;
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
      if (got > 0) received(conn, (size_t)got); /* what came before is still answered */
      conn_process(conn, until);
      srv_conn_fail(conn, &err);
      break;
    }
    if (got < 0) {
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        log_client(LOG_DEBUG, "Client %llu: read failed: %s.", (unsigned long long)conn->id,
                   strerror(errno));
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
    received(conn, (size_t)got);
    conn_process(conn, until);
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
static void take_back(srv_conn_t *conn, char *buf, size_t cap, size_t charged) {
  if (conn->closing || conn->srv->pressured || conn->rlen > conn->rpos || conn->rcap >= cap) {
    free(buf);
    return;
  }
  free(conn->rbuf);
  conn->rpos = conn->rlen = 0;
  set_read_buffer(conn, buf, cap, charged);
}

void srv_msg_charge_decoded(srv_conn_t *conn, srv_msg_t *msg, uint64_t bytes) {
  int64_t delta = (int64_t)bytes - (int64_t)msg->decoded;
  msg->decoded = bytes;
  msg->charge = (uint64_t)((int64_t)msg->charge + delta);
  conn->held = (uint64_t)((int64_t)conn->held + delta);
  srv_account_input(conn->srv, delta);
}

void srv_msg_done(srv_conn_t *conn, srv_msg_t *msg) {
  uint64_t charge = msg->charge;
  conn->pending--;
  conn->held -= charge;
  srv_account_input(conn->srv, -(int64_t)charge);
  if (msg->lent_cap)
    take_back(conn, msg->data, msg->lent_cap, msg->lent_charge);
  else
    free(msg->data);
  free(msg);
  conn_go_on(conn); /* bytes already read may hold the next messages */
  conn_unref(conn);
}

void conn_go_on(srv_conn_t *conn) {
  if (conn->closing) return;
  if (!conn->processing && !conn->failing && conn->rlen > conn->rpos)
    conn_process(conn, now_ns() + TURN_NS);
  if (!conn->closing) conn_finish_if_done(conn);
  if (!conn->closing && !conn->processing) conn_update(conn);
}
