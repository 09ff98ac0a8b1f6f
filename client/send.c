/* Writing one request (connection.h): its slot first, then its bytes,
 * reading the answers that come meanwhile. */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "connection.h"

/* One send(); pass_fd >= 0 goes with it as SCM_RIGHTS (with its first
 * byte, so the kernel attaches it to this request). */
static ssize_t send_some(int fd, const uint8_t *data, size_t len, int pass_fd) {
  struct iovec iov = {.iov_base = (void *)(uintptr_t)data, .iov_len = len};
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } ctl;
  struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
  struct cmsghdr *cm;
  if (pass_fd < 0) return send(fd, data, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  memset(&ctl, 0, sizeof(ctl));
  msg.msg_control = ctl.buf;
  msg.msg_controllen = sizeof(ctl.buf);
  cm = CMSG_FIRSTHDR(&msg);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(cm), &pass_fd, sizeof(int));
  return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
}

/* Write data whole, pass_fd (>= 0) with its first bytes.  Answers that
 * come meanwhile are read and delivered. */
static int conn_write(pto_client_t *c, const uint8_t *data, size_t len, int pass_fd,
                      int64_t deadline, size_t *ret_written) {
  size_t off = 0;
  *ret_written = 0;
  while (off < len) {
    short ev;
    if (c->dead) return -1;
    ev = conn_poll(c, POLLOUT | POLLIN, deadline);
    if (ev == 0) return -PTO_E_TIMEOUT;
    if (ev & (POLLIN | POLLHUP | POLLERR)) {
      conn_read(c);
      if (c->dead) return -1;
    }
    if (ev & POLLOUT) {
      ssize_t n = send_some(c->fd, data + off, len - off, off == 0 ? pass_fd : -1);
      if (n < 0) {
        if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK) continue;
        /* EPIPE, ECONNRESET: the daemon closed; read what it said first. */
        conn_read(c);
        conn_kill(c, NULL);
        return -1;
      }
      off += (size_t)n;
      *ret_written = off;
    }
  }
  return 0;
}

/* Send the request msgid that c->sb holds. */
static int send_encoded(pto_client_t *c, uint32_t msgid, proto_method_t method,
                        proto_method_t decode, int pass_fd, int64_t deadline, pto_error_t *err) {
  size_t written = 0;
  int rc;
  slot_t *s;

  rc = slot_add(c, method, msgid);
  if (rc < 0) return client_error(err, PTO_E_NO_MEMORY, NULL);
  c->slots[c->nslots - 1].decode = decode;

  rc = conn_write(c, (const uint8_t *)c->sb.data, c->sb.size, pass_fd, deadline, &written);
  if (c->sb.alloc > CLIENT_KEEP_MAX) { /* kept up to it, for the next large request */
    msgpack_sbuffer_destroy(&c->sb);
    msgpack_sbuffer_init(&c->sb);
  }
  s = slot_find(c, msgid);
  if (rc == -PTO_E_TIMEOUT) {
    if (written > 0) {
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

int client_send_until(pto_client_t *c, const pto_request_t *req, int64_t deadline,
                      uint32_t *ret_msgid, pto_error_t *err) {
  uint32_t msgid;
  int rc;

  if (!c || !req)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "pto_client_send needs a client and a request.");
  if (c->dead) return conn_dead_error(c, err);
  msgid = next_msgid(c);
  msgpack_sbuffer_clear(&c->sb);
  rc = client_encode_request(&c->sb, msgid, req, err);
  if (rc < 0) return rc;
  rc = send_encoded(c, msgid, (proto_method_t)req->method, (proto_method_t)req->method, -1,
                    deadline, err);
  if (rc == 0) *ret_msgid = msgid;
  return rc;
}

int client_send_proto_until(pto_client_t *c, proto_method_t method, const proto_params_t *params,
                            proto_method_t decode, int pass_fd, int64_t deadline,
                            uint32_t *ret_msgid, pto_error_t *err) {
  uint32_t msgid;
  int rc;
  if (c->dead) return conn_dead_error(c, err);
  msgid = next_msgid(c);
  msgpack_sbuffer_clear(&c->sb);
  if (proto_encode_request(&c->sb, msgid, method, params) < 0)
    return client_error(err, PTO_E_NO_MEMORY, "Out of memory encoding a '%s' request.",
                        proto_method_name(method));
  rc = send_encoded(c, msgid, method, decode, pass_fd, deadline, err);
  if (rc == 0) *ret_msgid = msgid;
  return rc;
}

int pto_client_send(pto_client_t *c, const pto_request_t *req, int timeout_ms, uint32_t *ret_msgid,
                    pto_error_t *ret_err) {
  uint32_t id = 0;
  int rc = client_send_until(c, req, client_deadline(timeout_ms), &id, ret_err);
  if (rc == 0 && ret_msgid) *ret_msgid = id;
  return rc;
}
