/* The connection: one Unix socket, the bytes coming back, and the requests
 * waiting for their answers (pto/client.h).
 *
 * The socket is non-blocking and every wait is a poll() bounded by the
 * call's deadline.  While a request is being written, answers are read as
 * they come (a daemon never has to stop reading because our socket is
 * full of its answers), and kept in the request's slot until collected.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "client_internal.h"
#include "paths.h"
#include "reader.h"

/* The largest answer accepted: a buffer.read of the largest buffer the
 * protocol allows, plus its envelope. */
#define CLIENT_MAX_MESSAGE ((size_t)PROTO_BYTES_MAX + (1u << 20))
/* How often to retry a connect() that found the listen backlog full. */
#define CONNECT_RETRY_MS 10

typedef enum slot_state { SLOT_SENT, SLOT_DONE, SLOT_DISCARDED } slot_state_t;

typedef struct slot {
  uint32_t msgid;
  proto_method_t method;
  proto_method_t decode; /* the shape of its result: method, but for buffer.read into shm */
  slot_state_t state;
  int rc;           /* SLOT_DONE: 0 or -code */
  void *result;     /* SLOT_DONE, rc == 0 */
  pto_error_t *err; /* SLOT_DONE, rc < 0 */
} slot_t;

struct pto_client {
  int fd; /* -1 once the connection is dead */
  char path[PTO_SOCKET_PATH_MAX];
  int device;
  uint32_t next_msgid;

  rxbuf_t rx; /* bytes received */
  proto_reader_t reader;

  slot_t *slots; /* in the order sent */
  size_t nslots, slots_cap;

  msgpack_sbuffer sb;

  bool dead;
  pto_error_t dead_err; /* why; given to every later call */
  pto_dispatch_result_t *error_dfx; /* the last failed dispatch's artefacts */
  client_shm_state_t shm;
};

/* --- time ----------------------------------------------------------------- */

int64_t client_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t client_deadline(int timeout_ms) {
  return timeout_ms < 0 ? CLIENT_FOREVER : client_now_ms() + timeout_ms;
}

/* What poll() should wait: -1 for ever, else the ms left (0 when past). */
static int poll_timeout(int64_t deadline) {
  int64_t left;
  if (deadline == CLIENT_FOREVER) return -1;
  left = deadline - client_now_ms();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : (int)left;
}

/* --- slots ------------------------------------------------------------------ */

static slot_t *slot_find(pto_client_t *c, uint32_t msgid) {
  for (size_t i = 0; i < c->nslots; i++)
    if (c->slots[i].msgid == msgid) return &c->slots[i];
  return NULL;
}

static void slot_release(slot_t *s) {
  pto_result_free(s->result);
  free(s->err);
  s->result = NULL;
  s->err = NULL;
}

static void slot_remove(pto_client_t *c, slot_t *s) {
  size_t i = (size_t)(s - c->slots);
  memmove(&c->slots[i], &c->slots[i + 1], (c->nslots - i - 1) * sizeof(*s));
  c->nslots--;
}

/* Finish a slot with an error (a copy of err). */
static void slot_fail(slot_t *s, const pto_error_t *err) {
  s->state = SLOT_DONE;
  s->rc = -err->code;
  s->err = malloc(sizeof(*s->err));
  if (s->err) *s->err = *err;
}

static int method_of(pto_client_t *c, uint32_t msgid) {
  slot_t *s = slot_find(c, msgid);
  return s && s->state == SLOT_SENT ? (int)s->decode : -1;
}

void client_learn_device(pto_client_t *c, uint32_t device) {
  if (c->device < 0 && device <= 255) c->device = (int)device;
}

/* --- a dead connection --------------------------------------------------------- */

static void lost_message(const pto_client_t *c, const slot_t *s, pto_error_t *err) {
  client_error(err, PTO_E_CONNECTION_LOST,
               "The connection to ptod at '%s' was closed before it answered '%s' (request "
               "%u); the daemon may have exited or restarted.",
               c->path, proto_method_name(s->method), s->msgid);
  snprintf(err->hint, sizeof(err->hint),
           "Check the daemon's log (journalctl -u ptod@N), then connect again.");
}

/* The connection cannot be used any more.  why: the daemon's error
 * notification (given to every pending request as is), or NULL for a
 * closed / broken connection (each request is told which one it was). */
static void conn_kill(pto_client_t *c, const pto_error_t *why) {
  if (c->dead) return;
  c->dead = true;
  if (c->fd >= 0) {
    close(c->fd);
    c->fd = -1;
  }
  if (why) {
    c->dead_err = *why;
  } else {
    client_error(&c->dead_err, PTO_E_CONNECTION_LOST,
                 "The connection to ptod at '%s' is closed; the daemon may have exited or "
                 "restarted.",
                 c->path);
    snprintf(c->dead_err.hint, sizeof(c->dead_err.hint),
             "Check the daemon's log (journalctl -u ptod@N), then connect again.");
  }
  for (size_t i = 0; i < c->nslots;) {
    slot_t *s = &c->slots[i];
    if (s->state == SLOT_DISCARDED) {
      slot_remove(c, s);
      continue;
    }
    if (s->state == SLOT_SENT) {
      pto_error_t e;
      if (why)
        e = *why;
      else
        lost_message(c, s, &e);
      slot_fail(s, &e);
    }
    i++;
  }
}

/* --- reading ----------------------------------------------------------------------- */

/* Apply one decoded answer to its slot. */
static void deliver(pto_client_t *c, reply_outcome_t *o) {
  slot_t *s;
  if (o->kind == REPLY_FATAL) {
    conn_kill(c, &o->err);
    return;
  }
  if (o->kind == REPLY_IGNORE && o->msgid == 0) return;
  s = slot_find(c, o->msgid);
  if (!s) {
    pto_result_free(o->result);
    return;
  }
  if (s->state == SLOT_DISCARDED) {
    pto_result_free(o->result);
    slot_remove(c, s);
    return;
  }
  if (s->state != SLOT_SENT) { /* a second answer to one request: ignore it */
    pto_result_free(o->result);
    return;
  }
  if (o->kind == REPLY_RESULT) {
    s->state = SLOT_DONE;
    s->rc = 0;
    s->result = o->result;
  } else if (o->kind == REPLY_ERROR) {
    slot_fail(s, &o->err);
    if (o->result) {
      pto_result_free(c->error_dfx);
      c->error_dfx = o->result;
    }
  }
}

/* Every whole message in the buffer. */
static void process(pto_client_t *c) {
  while (!c->dead && c->rx.end > c->rx.start) {
    size_t len = 0;
    pto_error_t err;
    reply_outcome_t out;
    rxbuf_msg_t msg;
    int rc;
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
    rc = client_reply_decode(c, &msg, method_of, &out);
    if (rc < 0) {
      pto_error_t e;
      client_error(&e, PTO_E_NO_MEMORY, "Out of memory decoding a %zu-byte answer from '%s'.", len,
                   c->path);
      conn_kill(c, &e);
      return;
    }
    deliver(c, &out);
  }
}

/* Read what is there (the socket is non-blocking) and deliver every whole
 * message.  End of file or a reset kills the connection. */
static void conn_read(pto_client_t *c) {
  for (int round = 0; round < 64 && !c->dead; round++) {
    size_t want = RXBUF_CHUNK, room;
    ssize_t n;
    /* The reader knows how much of the current message is still to come:
     * make room for it at once (up to a bound a bogus length cannot abuse). */
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

/* Wait for the socket, at most until deadline.  Returns the poll events, 0
 * on timeout. */
static short conn_poll(pto_client_t *c, short events, int64_t deadline) {
  struct pollfd p = {.fd = c->fd, .events = events};
  for (;;) {
    int n = poll(&p, 1, poll_timeout(deadline));
    if (n > 0) return p.revents ? p.revents : events;
    if (n == 0) return 0;
    if (errno != EINTR) return POLLERR;
  }
}

/* --- connect ------------------------------------------------------------------------ */

static int connect_error(pto_error_t *err, const char *path, int errnum) {
  client_error(err, PTO_E_CONNECT_FAILED, "Cannot connect to ptod at '%s': %s.", path,
               strerror(errnum));
  switch (errnum) {
    case ENOENT:
    case ECONNREFUSED:
      snprintf(err->hint, sizeof(err->hint),
               "Check that ptod is running and listens on that socket (systemctl status "
               "ptod@N, [daemon] socket in its config).");
      break;
    case EACCES:
    case EPERM:
      snprintf(err->hint, sizeof(err->hint),
               "Ask the operator to add you to the socket's group (usually 'ptod').");
      break;
    case ETIMEDOUT:
    case EAGAIN:
      snprintf(err->hint, sizeof(err->hint),
               "The daemon's listen backlog stayed full; it may be overloaded or stuck.");
      break;
    default: break;
  }
  return -PTO_E_CONNECT_FAILED;
}

int pto_client_connect(const char *socket_path, int timeout_ms, pto_client_t **ret_client,
                       pto_error_t *ret_err) {
  struct sockaddr_un addr;
  int64_t deadline = client_deadline(timeout_ms);
  pto_client_t *c;
  int fd;

  if (!socket_path || !ret_client)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_client_connect needs a socket path and somewhere to return the "
                        "client.");
  if (socket_path[0] == '\0' || strlen(socket_path) >= sizeof(addr.sun_path))
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "The socket path '%s' must be 1 to %zu bytes long.", socket_path,
                        sizeof(addr.sun_path) - 1);
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, socket_path, strlen(socket_path) + 1);

  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return connect_error(ret_err, socket_path, errno);
  for (;;) {
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN && poll_timeout(deadline) != 0) {
      /* Backlog full: a Unix socket cannot be polled for it, so retry. */
      struct timespec ts = {0, CONNECT_RETRY_MS * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    if (errno == EINPROGRESS) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      int so_err = 0;
      socklen_t len = sizeof(so_err);
      int n = poll(&p, 1, poll_timeout(deadline));
      if (n <= 0) {
        close(fd);
        return connect_error(ret_err, socket_path, n == 0 ? ETIMEDOUT : errno);
      }
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_err, &len) < 0) so_err = errno;
      if (so_err == 0) break;
      close(fd);
      return connect_error(ret_err, socket_path, so_err);
    }
    {
      int e = errno;
      close(fd);
      return connect_error(ret_err, socket_path, e);
    }
  }

  c = calloc(1, sizeof(*c));
  if (!c || rxbuf_init(&c->rx) < 0) {
    free(c);
    close(fd);
    return client_error(ret_err, PTO_E_NO_MEMORY, NULL);
  }
  c->fd = fd;
  snprintf(c->path, sizeof(c->path), "%s", socket_path);
  c->device = -1;
  c->next_msgid = 1;
  c->shm.feature = -1;
  proto_reader_init(&c->reader, CLIENT_MAX_MESSAGE);
  msgpack_sbuffer_init(&c->sb);
  *ret_client = c;
  return 0;
}

int pto_client_connect_device(int device, int timeout_ms, pto_client_t **ret_client,
                              pto_error_t *ret_err) {
  char path[PTO_SOCKET_PATH_MAX];
  int rc = pto_find_socket_path(device, path, sizeof(path));
  if (rc == -EINVAL)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "The device must be a number in 0..255, got %d.", device);
  if (rc < 0)
    return client_error(ret_err, PTO_E_CONNECT_FAILED,
                        "The built-in socket path for device %d does not fit in %d bytes; set "
                        "XDG_RUNTIME_DIR to a shorter directory or give the socket path.",
                        device, PTO_SOCKET_PATH_MAX);
  rc = pto_client_connect(path, timeout_ms, ret_client, ret_err);
  if (rc == 0) (*ret_client)->device = device;
  return rc;
}

const char *pto_client_env_socket(void) {
  const char *s = getenv(PTO_SOCKET_ENV);
  return s && s[0] ? s : NULL;
}

int pto_client_connect_default(int timeout_ms, pto_client_t **ret_client, pto_error_t *ret_err) {
  const char *env = pto_client_env_socket();
  if (env) return pto_client_connect(env, timeout_ms, ret_client, ret_err);
  return pto_client_connect_device(0, timeout_ms, ret_client, ret_err);
}

int pto_client_env_sizing_note(char *buf, size_t len) {
  char names[128] = "", config[160] = "", daemon_env[256] = "";
  size_t np = 0, cp = 0, dp = 0;
  int count = 0;
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    const char *var = pto_sizing_env_var((pto_ring_field_t)f);
    const char *value = getenv(var);
    if (!value) continue;
    const char *sep = count ? ", " : "";
    np += (size_t)snprintf(names + np, np < sizeof(names) ? sizeof(names) - np : 0, "%s%s", sep,
                           var);
    cp += (size_t)snprintf(config + cp, cp < sizeof(config) ? sizeof(config) - cp : 0,
                           "%s%s=%.24s", sep, pto_sizing_field_key((pto_ring_field_t)f), value);
    dp += (size_t)snprintf(daemon_env + dp, dp < sizeof(daemon_env) ? sizeof(daemon_env) - dp : 0,
                           " %s=%.24s", var, value);
    count++;
  }
  if (buf && len) buf[0] = '\0';
  if (count == 0 || !buf) return count;
  const char *them = count == 1 ? "it" : "them";
  snprintf(buf, len,
           "%s %s set in this client's environment, but ring sizing from the environment is "
           "the daemon's: this client's dispatches do not use %s. To make %s take effect, put "
           "%s in the dispatch's config (%s), or in the daemon's environment (systemctl edit "
           "ptod@0: [Service] Environment=%s).",
           names, count == 1 ? "is" : "are", them, them, them, config, daemon_env + 1);
  return count;
}

void pto_client_close(pto_client_t *c) {
  if (!c) return;
  client_shm_detach_all(c);
  if (c->fd >= 0) close(c->fd);
  for (size_t i = 0; i < c->nslots; i++) slot_release(&c->slots[i]);
  free(c->slots);
  rxbuf_destroy(&c->rx);
  msgpack_sbuffer_destroy(&c->sb);
  pto_result_free(c->error_dfx);
  free(c);
}

client_shm_state_t *client_shm_state(pto_client_t *c) {
  return &c->shm;
}

const pto_dfx_t *pto_client_error_dfx(const pto_client_t *c) {
  return c && c->error_dfx ? &c->error_dfx->dfx : NULL;
}

const char *pto_client_socket_path(const pto_client_t *c) {
  return c ? c->path : "";
}

int pto_client_device(const pto_client_t *c) {
  return c ? c->device : -1;
}

bool pto_client_alive(const pto_client_t *c) {
  return c && !c->dead;
}

size_t pto_client_pending(const pto_client_t *c) {
  size_t n = 0;
  if (!c) return 0;
  for (size_t i = 0; i < c->nslots; i++) n += c->slots[i].state != SLOT_DISCARDED;
  return n;
}

void pto_client_discard(pto_client_t *c, uint32_t msgid) {
  slot_t *s = c ? slot_find(c, msgid) : NULL;
  if (!s) return;
  if (s->state == SLOT_SENT) {
    s->state = SLOT_DISCARDED;
  } else if (s->state == SLOT_DONE) {
    slot_release(s);
    slot_remove(c, s);
  }
}

/* --- send ---------------------------------------------------------------------------- */

static int dead_error(const pto_client_t *c, pto_error_t *err) {
  if (err) *err = c->dead_err;
  return -c->dead_err.code;
}

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

static int slot_add(pto_client_t *c, proto_method_t method, uint32_t msgid) {
  if (c->nslots == c->slots_cap) {
    size_t cap = c->slots_cap ? c->slots_cap * 2 : 16;
    slot_t *ns = realloc(c->slots, cap * sizeof(*ns));
    if (!ns) return -PTO_E_NO_MEMORY;
    c->slots = ns;
    c->slots_cap = cap;
  }
  c->slots[c->nslots++] = (slot_t){.msgid = msgid, .method = method, .state = SLOT_SENT};
  return 0;
}

/* Take a finished slot's outcome and forget the slot. */
static int slot_collect(pto_client_t *c, slot_t *s, void **ret_result, pto_error_t *err) {
  int rc = s->rc;
  if (rc == 0) {
    if (ret_result)
      *ret_result = s->result;
    else
      pto_result_free(s->result);
    s->result = NULL;
  } else if (err) {
    if (s->err)
      *err = *s->err;
    else
      client_error(err, -rc, NULL);
  }
  slot_release(s);
  slot_remove(c, s);
  return rc;
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
    return dead_error(c, err);
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
  if (c->dead) return dead_error(c, err);
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
  if (c->dead) return dead_error(c, err);
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

/* --- wait ------------------------------------------------------------------------------ */

static int timeout_error(pto_client_t *c, const slot_t *s, pto_error_t *err) {
  return client_error(err, PTO_E_TIMEOUT,
                      "ptod at '%s' did not answer '%s' (request %u) within the timeout.", c->path,
                      proto_method_name(s->method), s->msgid);
}

int client_wait_until(pto_client_t *c, uint32_t msgid, int64_t deadline, void **ret_result,
                      pto_error_t *err) {
  slot_t *s;
  if (!c) return client_error(err, PTO_E_INVALID_ARGUMENT, "pto_client_wait needs a client.");
  for (;;) {
    s = slot_find(c, msgid);
    if (!s || s->state == SLOT_DISCARDED)
      return client_error(err, PTO_E_INVALID_ARGUMENT,
                          "No request %u is pending on this connection (already collected, "
                          "discarded or never sent).",
                          msgid);
    if (s->state == SLOT_DONE) return slot_collect(c, s, ret_result, err);
    if (c->dead) return dead_error(c, err); /* not reached: kill finishes every slot */
    if (conn_poll(c, POLLIN, deadline) == 0) return timeout_error(c, s, err);
    conn_read(c);
  }
}

int pto_client_wait(pto_client_t *c, uint32_t msgid, int timeout_ms, void **ret_result,
                    pto_error_t *ret_err) {
  return client_wait_until(c, msgid, client_deadline(timeout_ms), ret_result, ret_err);
}

int pto_client_wait_any(pto_client_t *c, int timeout_ms, uint32_t *ret_msgid, void **ret_result,
                        pto_error_t *ret_err) {
  int64_t deadline = client_deadline(timeout_ms);
  if (ret_msgid) *ret_msgid = 0;
  if (!c)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT, "pto_client_wait_any needs a client.");
  for (;;) {
    bool waiting = false;
    for (size_t i = 0; i < c->nslots; i++) {
      slot_t *s = &c->slots[i];
      if (s->state == SLOT_DONE) {
        if (ret_msgid) *ret_msgid = s->msgid;
        return slot_collect(c, s, ret_result, ret_err);
      }
      waiting |= s->state == SLOT_SENT;
    }
    if (!waiting)
      return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                          "No request is pending on this connection.");
    if (conn_poll(c, POLLIN, deadline) == 0)
      return client_error(ret_err, PTO_E_TIMEOUT,
                          "ptod at '%s' answered none of the %zu pending requests within the "
                          "timeout.",
                          c->path, pto_client_pending(c));
    conn_read(c);
  }
}
