/* SPDX-License-Identifier: Apache-2.0 */
/* Writing one request (connection.h): its slot first, then its bytes,
 * reading the answers that come meanwhile.
 *
 * A request's large byte strings (a dispatch's inline input, buffer.write's
 * data) are not copied into the encode buffer: msgpack's write callback
 * records every piece of at least PROTO_REF_MIN bytes as a reference (proto/refbuf.h), and
 * the request goes out as one sendmsg() of [encoded piece, payload,
 * encoded piece, ...].  msgpack-c writes headers from a few bytes on its
 * stack, so a piece that long is always a body in the params' memory —
 * the caller's, which holds still until the send returns.
 *
 * When a request reaches the wire: at once (one sendmsg, before
 * pto_client_send returns), except a small one (no body by reference, no
 * fd) sent while answers already received wait to be collected.  Then the
 * caller is working through a batch of answers and sends as it goes (the
 * pipelining loop: collect one, send one), so the request is held, and the
 * held requests go out together with the next request written at once,
 * or before any wait of this connection polls the socket (pending.c), a
 * cancel, or pto_client_close; and at once when they would pass
 * OUT_HOLD_MAX bytes.  A loop that collects a batch and sends as many
 * writes them in one system call, not one each: the writes were most of
 * the client's CPU per pipelined request.  Nothing is held when no answer
 * waits, so a request sent after its predecessors' answers were collected
 * (a serving loop overlapping the device with its own work) is on the
 * wire when the send returns. */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "connection.h"
#include "rpc.h"

#ifndef IOV_MAX
#define IOV_MAX 1024
#endif

/* --- encoding ------------------------------------------------------------- */

/* Encode the request into c->out: the sbuffer's bytes and the references
 * between them.  Returns 0 or < 0 (out of memory, a bad method). */
static int encode(pto_client_t *c, uint32_t msgid, proto_method_t method,
                  const proto_params_t *params, int priority) {
  msgpack_packer pk;
  int rc;
  proto_refbuf_begin(&c->out.refs, &c->out.sb, NULL, NULL, &pk);
  rc = proto_pack_request_begin(&pk, msgid, proto_method_name(method));
  return rc < 0 ? rc : proto_params_pack_priority(&pk, method, params, priority);
}

/* The most bytes of small requests held back (see above). */
#define OUT_HOLD_MAX ((size_t)64 * 1024)

/* The held bytes not written yet. */
static size_t held_unsent(const send_out_t *o) { return o->held.size - o->held_sent; }

/* The held bytes not written yet, as one iovec. */
static struct iovec held_iov(const send_out_t *o) {
  return (struct iovec){o->held.data + o->held_sent, held_unsent(o)};
}

/* written bytes of the held ones went out. */
static void held_written(send_out_t *o, size_t written) {
  o->held_sent += written < held_unsent(o) ? written : held_unsent(o);
  if (o->held_sent == o->held.size) {
    msgpack_sbuffer_clear(&o->held);
    o->held_sent = 0;
  }
}

/* The held bytes, then the encoded request, as iovecs in c->out.iov
 * (pointing into the sbuffers, so made once encoding is done); returns
 * their count or -1. */
static int make_iov(send_out_t *o) {
  size_t need = proto_refbuf_iov_max(&o->refs) + 1, n = 0;
  if (need > o->iov_cap) {
    struct iovec *grown = realloc(o->iov, need * sizeof(*grown));
    if (!grown) return -1;
    o->iov = grown;
    o->iov_cap = need;
  }
  if (held_unsent(o)) o->iov[n++] = held_iov(o);
  return (int)(n + proto_refbuf_iov(&o->refs, o->iov + n));
}

/* --- writing -------------------------------------------------------------- */

/* One sendmsg() of iov[0..n); pass_fd >= 0 goes with it as SCM_RIGHTS
 * (with its first byte, so the kernel attaches it to this request). */
static ssize_t send_some(int fd, struct iovec *iov, size_t n, int pass_fd) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  struct msghdr msg = {.msg_iov = iov, .msg_iovlen = n < IOV_MAX ? n : IOV_MAX};
  struct cmsghdr *cm;
  if (pass_fd >= 0) {
    memset(&ctl, 0, sizeof(ctl));
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof(ctl.buf);
    cm = CMSG_FIRSTHDR(&msg);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
  }
  return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Write iov[0..n) whole (the iovecs are consumed), pass_fd (>= 0) with its
 * first bytes.  The first try needs no poll (a request usually fits the
 * socket at once: one system call, not two, per request); while the
 * socket is full, answers that come meanwhile are read and delivered, so a
 * daemon that waits for us to read never waits on our write. */
static int conn_write(pto_client_t *c, struct iovec *iov, size_t n, int pass_fd, int64_t deadline,
                      size_t *ret_written) {
  size_t i = 0;
  *ret_written = 0;
  while (i < n) {
    ssize_t sent;
    size_t left;
    if (c->dead) return -1;
    sent = send_some(c->fd, iov + i, n - i, *ret_written == 0 ? pass_fd : -1);
    if (sent < 0) {
      short ev;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) {
        /* EPIPE, ECONNRESET: the daemon closed; read what it said first. */
        conn_read(c);
        conn_kill(c, NULL);
        return -1;
      }
      ev = conn_poll(c, POLLOUT | POLLIN, deadline);
      if (ev == 0) return -PTO_E_TIMEOUT;
      if (ev & (POLLIN | POLLHUP | POLLERR)) conn_read(c);
      continue;
    }
    *ret_written += (size_t)sent;
    for (left = (size_t)sent; i < n && left >= iov[i].iov_len; i++) left -= iov[i].iov_len;
    if (left) {
      iov[i].iov_base = (char *)iov[i].iov_base + left;
      iov[i].iov_len -= left;
    }
  }
  return 0;
}

bool conn_holding(const pto_client_t *c) { return !c->dead && held_unsent(&c->out) > 0; }

int conn_flush(pto_client_t *c, int64_t deadline) {
  struct iovec iov;
  size_t written = 0;
  int rc;
  if (!conn_holding(c)) return 0;
  iov = held_iov(&c->out);
  rc = conn_write(c, &iov, 1, -1, deadline, &written);
  held_written(&c->out, written);
  return rc;
}

/* Whether the small request in c->out is held back (see above). */
static bool may_hold(pto_client_t *c, int pass_fd) {
  const send_out_t *o = &c->out;
  return pass_fd < 0 && o->refs.n == 0 && held_unsent(o) + o->sb.size <= OUT_HOLD_MAX &&
         slot_answer_waiting(c);
}

/* Write the held requests and then the one in c->out, in one sendmsg
 * where they fit; pass_fd goes with the request's own first bytes, so the
 * held ones go before it on their own.  Returns as conn_write; *ret_started:
 * whether any of the request's own bytes were written. */
static int write_now(pto_client_t *c, int pass_fd, int64_t deadline, bool *ret_started) {
  size_t written = 0, before;
  int rc, niov;
  *ret_started = false;
  if (pass_fd >= 0 && (rc = conn_flush(c, deadline)) < 0) return rc;
  before = held_unsent(&c->out);
  niov = make_iov(&c->out);
  if (niov < 0) return -PTO_E_NO_MEMORY;
  rc = conn_write(c, c->out.iov, (size_t)niov, pass_fd, deadline, &written);
  held_written(&c->out, written);
  *ret_started = written > before;
  return rc;
}

/* Put the request in c->out on its way: held, or written now. */
static int send_or_hold(pto_client_t *c, int pass_fd, int64_t deadline, bool *ret_started) {
  *ret_started = false;
  if (!may_hold(c, pass_fd)) return write_now(c, pass_fd, deadline, ret_started);
  if (msgpack_sbuffer_write(&c->out.held, c->out.sb.data, c->out.sb.size) < 0)
    return -PTO_E_NO_MEMORY;
  return 0;
}

/* Send the request msgid that c->out holds. */
static int send_encoded(pto_client_t *c, uint32_t msgid, proto_method_t method,
                        proto_method_t decode, int pass_fd, int64_t deadline, pto_error_t *err) {
  bool started;
  int rc;
  slot_t *s;

  rc = slot_add(c, method, msgid);
  if (rc < 0) return client_error(err, PTO_E_NO_MEMORY, NULL);
  c->slots[c->nslots - 1].decode = decode;

  rc = send_or_hold(c, pass_fd, deadline, &started);
  c->out.refs.n = 0; /* the caller's memory is its own again */
  if (c->out.sb.alloc > CLIENT_KEEP_MAX) { /* kept up to it, for the next large request */
    msgpack_sbuffer_destroy(&c->out.sb);
    msgpack_sbuffer_init(&c->out.sb);
  }
  s = slot_find(c, msgid);
  if (rc == -PTO_E_NO_MEMORY) {
    if (s) slot_remove(c, s);
    return client_error(err, PTO_E_NO_MEMORY, NULL);
  }
  if (rc == -PTO_E_TIMEOUT) {
    if (started) {
      /* Half a message on the stream: nothing after it could be framed. */
      pto_error_t e;
      client_error(&e, PTO_E_CONNECTION_LOST,
                   "The connection to ptod at '%s' was given up: a request was only partly sent "
                   "before its timeout.",
                   c->path);
      snprintf(e.hint, sizeof(e.hint), "Connect again.");
      conn_kill(c, &e);
      s = slot_find(c, msgid);
    }
    if (s) {
      slot_release(s);
      slot_remove(c, s);
    }
    return client_error(err, PTO_E_TIMEOUT,
                        "Sending '%s' to ptod at '%s' did not finish within the timeout; the "
                        "daemon is not reading.",
                        proto_method_name(method), c->path);
  }
  if (rc < 0) { /* the connection died: the slot holds why */
    if (s && s->state == SLOT_DONE) return slot_collect(c, s, NULL, err);
    return conn_dead_error(c, err);
  }
  return 0;
}

static uint32_t next_msgid(pto_client_t *c) {
  if (c->next_msgid == 0) c->next_msgid = 1; /* 0 means "none" in wait_any */
  return c->next_msgid++;
}

int client_send_proto_until(pto_client_t *c, proto_method_t method, const proto_params_t *params,
                            int priority, proto_method_t decode, int pass_fd, int64_t deadline,
                            uint32_t *ret_msgid, pto_error_t *err) {
  uint32_t msgid;
  int rc;
  if (c->dead) return conn_dead_error(c, err);
  msgid = next_msgid(c);
  if (encode(c, msgid, method, params, priority) < 0)
    return client_error(err, PTO_E_NO_MEMORY, "Out of memory encoding a '%s' request.",
                        proto_method_name(method));
  rc = send_encoded(c, msgid, method, decode, pass_fd, deadline, err);
  if (rc == 0) *ret_msgid = msgid;
  return rc;
}

/* The caller's opts as they were compiled: a field past opts->size is its
 * default (an older caller's struct is shorter). */
#define OPT(o, field, dflt) \
  ((o) && (o)->size >= offsetof(pto_call_opts_t, field) + sizeof((o)->field) ? (o)->field : (dflt))

/* Check opts against the method and put its request_id into the params
 * (buffer.list's only key: then rp has params to send). */
static int apply_opts(proto_method_t method, const pto_call_opts_t *opts,
                      client_request_params_t *rp, int *ret_priority, pto_error_t *err) {
  const char *id = OPT(opts, request_id, NULL);
  int priority = OPT(opts, priority, 0);
  if (!id && priority == 0) return *ret_priority = 0;
  if (priority < PTO_PRIORITY_MIN || priority > PTO_PRIORITY_MAX)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "priority must be an integer in [%d, %d] (lower runs sooner), got %d.",
                        PTO_PRIORITY_MIN, PTO_PRIORITY_MAX, priority);
  if (id && !proto_request_id_valid(id, strlen(id)))
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "request_id must be 1 to 64 bytes of printable ASCII.");
  if (proto_params_set_request_id(method, &rp->p, id) < 0)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "'%s' takes no priority or request_id: only device requests (dispatch, "
                        "buffer.*, prewarm) do.",
                        proto_method_name(method));
  if (!rp->params) rp->params = &rp->p;
  *ret_priority = priority;
  return 0;
}

int client_send_until(pto_client_t *c, const pto_request_t *req, const pto_call_opts_t *opts,
                      int64_t deadline, uint32_t *ret_msgid, pto_error_t *err) {
  client_request_params_t rp;
  int priority = 0;
  int rc;

  if (!c || !req)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "pto_client_send needs a client and a request.");
  if (c->dead) return conn_dead_error(c, err);
  rc = client_request_params(req, &rp, err);
  if (rc < 0) return rc;
  rc = apply_opts((proto_method_t)req->method, opts, &rp, &priority, err);
  if (rc == 0)
    rc = client_send_proto_until(c, (proto_method_t)req->method, rp.params, priority,
                                 (proto_method_t)req->method, -1, deadline, ret_msgid, err);
  client_request_params_free(&rp);
  return rc;
}

int pto_client_send_opts(pto_client_t *c, const pto_request_t *req, const pto_call_opts_t *opts,
                         int timeout_ms, uint32_t *ret_msgid, pto_error_t *ret_err) {
  uint32_t id = 0;
  int rc = client_send_until(c, req, opts, client_deadline(timeout_ms), &id, ret_err);
  if (rc == 0 && ret_msgid) *ret_msgid = id;
  return rc;
}

int pto_client_send(pto_client_t *c, const pto_request_t *req, int timeout_ms, uint32_t *ret_msgid,
                    pto_error_t *ret_err) {
  return pto_client_send_opts(c, req, NULL, timeout_ms, ret_msgid, ret_err);
}

/* [2, "cancel", [{"msgid": id}]]: written whole like a request, but no slot
 * waits for it (a notification has no answer). */
int pto_client_cancel(pto_client_t *c, uint32_t msgid, pto_error_t *ret_err) {
  msgpack_packer pk;
  size_t written = 0;
  slot_t *s = c ? slot_find(c, msgid) : NULL;
  int rc, niov;
  if (!s)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_client_cancel: msgid %u is not a request pending on this connection.",
                        msgid);
  if (s->state == SLOT_DONE) return 0; /* answered already: nothing to cancel */
  if (c->dead) return conn_dead_error(c, ret_err);
  if (conn_flush(c, CLIENT_FOREVER) < 0) return conn_dead_error(c, ret_err);
  proto_refbuf_begin(&c->out.refs, &c->out.sb, NULL, NULL, &pk);
  rc = proto_pack_notification_begin(&pk, "cancel") | msgpack_pack_array(&pk, 1) |
       msgpack_pack_map(&pk, 1) | msgpack_pack_str_with_body(&pk, "msgid", 5) |
       msgpack_pack_uint32(&pk, msgid);
  niov = rc == 0 ? make_iov(&c->out) : -1;
  if (niov < 0) return client_error(ret_err, PTO_E_NO_MEMORY, NULL);
  rc = conn_write(c, c->out.iov, (size_t)niov, -1, CLIENT_FOREVER, &written);
  c->out.refs.n = 0;
  if (rc < 0) return conn_dead_error(c, ret_err);
  return 0;
}
