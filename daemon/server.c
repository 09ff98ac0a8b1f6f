#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"

#define READ_CHUNK (64 * 1024)
#define WRITE_CHUNK ((size_t)1 << 30) /* bytes per uv_buf_t of a response */
#define LISTEN_BACKLOG 128
#define MAX_PEER_GROUPS 256
/* Messages up to this size are held while corked (copied together after
 * the first); a larger one flushes what is held and goes out on its own. */
#define CORK_MAX_MESSAGE (64 * 1024)
#define HUGE_PAGE ((size_t)2 << 20)

struct srv {
  uv_loop_t *loop;
  uv_pipe_t listener;
  srv_options_t opts;
  srv_handlers_t handlers;
  char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  bool bound;       /* we created the socket file (unlink it at close) */
  bool activated;   /* systemd passed the socket */
  bool accepting;
  bool closing;
  bool listener_open;
  uint32_t clients; /* connections not closing */
  uint64_t next_id;
  srv_conn_t *conns;
  int cork_depth;
  srv_conn_t *cork_list; /* connections holding corked bytes */
};

typedef struct write_req {
  uv_write_t req;
  char *data;
} write_req_t;

static void conn_on_closed(uv_handle_t *handle);
static void srv_maybe_free(srv_t *srv);
static void srv_on_listener_closed(uv_handle_t *handle);

void srv_msg_free(srv_msg_t *msg) {
  if (!msg) return;
  free(msg->data);
  free(msg);
}

/* ---- the socket file ---------------------------------------------------- */

/* A socket file at path: a live daemon answers connect(), a dead one's file
 * refuses it.  Replace only the dead one's. */
static int clear_stale_socket(const char *path, pto_error_t *err) {
  struct stat st;
  struct sockaddr_un addr;
  int fd, rc, saved;

  if (lstat(path, &st) < 0) {
    if (errno == ENOENT) return 0;
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to inspect socket path '%s': %s.", path,
                         strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "'%s' exists and is not a socket; refusing to replace it. Remove it or "
                         "set [daemon] socket to another path.",
                         path);

  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to create a socket: %s.", strerror(errno));
  rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
  saved = errno;
  close(fd);
  if (rc == 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Another daemon is already serving on '%s'; stop it first or set "
                         "[daemon] socket to another path.",
                         path);
  if (saved != ECONNREFUSED)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to probe existing socket '%s': %s.", path,
                         strerror(saved));
  if (unlink(path) < 0 && errno != ENOENT)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to remove stale socket '%s': %s.", path,
                         strerror(errno));
  log_notice("Removed stale socket '%s' left by a daemon that is gone.", path);
  return 0;
}

/* The socket's directory must be one nobody else can swap the socket out
 * of: a real directory (not a link), owned by us or root, and writable by
 * nobody else unless sticky (/tmp).  Names such as /tmp/ptod-<uid> can be
 * taken by anyone first. */
static int check_socket_dir(const char *dir, pto_error_t *err) {
  struct stat st;
  if (lstat(dir, &st) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to inspect socket directory '%s': %s.", dir,
                         strerror(errno));
  if (!S_ISDIR(st.st_mode))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Socket directory '%s' is not a directory (a symbolic link?); refusing "
                         "to listen there.",
                         dir);
  if (st.st_uid != geteuid() && st.st_uid != 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Socket directory '%s' belongs to uid %u, not to this daemon (uid %u) or "
                         "root; refusing to listen there. Remove it or set [daemon] socket.",
                         dir, (unsigned)st.st_uid, (unsigned)geteuid());
  if ((st.st_mode & 0022) && !(st.st_mode & S_ISVTX))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Socket directory '%s' (mode %04o) is writable by others, who could "
                         "replace the socket; make it 0750 or set [daemon] socket.",
                         dir, (unsigned)(st.st_mode & 07777));
  return 0;
}

/* The socket's directory, when it does not exist yet (e.g. /run/ptod
 * outside systemd, $XDG_RUNTIME_DIR/ptod). */
static int ensure_parent_dir(const char *path, pto_error_t *err) {
  char dir[sizeof(((struct sockaddr_un *)0)->sun_path)];
  char *slash;
  memcpy(dir, path, strlen(path) + 1);
  slash = strrchr(dir, '/');
  if (!slash || slash == dir) return 0;
  *slash = '\0';
  if (mkdir(dir, 0750) < 0 && errno != EEXIST)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to create socket directory '%s': %s.", dir,
                         strerror(errno));
  return check_socket_dir(dir, err);
}

static int bind_socket(srv_t *srv, pto_error_t *err) {
  const char *path = srv->opts.socket_path;
  mode_t old_umask;
  int rc;

  if (!path || !*path)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "No socket path is configured.");
  if (strlen(path) >= sizeof(srv->path))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Socket path '%s' is %zu bytes; a Unix socket path must be under %zu.",
                         path, strlen(path), sizeof(srv->path));
  memcpy(srv->path, path, strlen(path) + 1);
  rc = ensure_parent_dir(path, err);
  if (rc < 0) return rc;
  rc = clear_stale_socket(path, err);
  if (rc < 0) return rc;

  /* Create the file owner-only, then open it up to the configured mode: no
   * moment where it is wider than asked for. */
  old_umask = umask(0177);
  rc = uv_pipe_bind(&srv->listener, path);
  umask(old_umask);
  if (rc < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to bind '%s': %s.", path, uv_strerror(rc));
  srv->bound = true;
  if (srv->opts.socket_gid != (gid_t)-1 && chown(path, (uid_t)-1, srv->opts.socket_gid) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to give socket '%s' group %u: %s.", path,
                         (unsigned)srv->opts.socket_gid, strerror(errno));
  if (chmod(path, srv->opts.socket_mode & 0777) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to set mode %04o on socket '%s': %s.",
                         srv->opts.socket_mode, path, strerror(errno));
  return 0;
}

int srv_create(uv_loop_t *loop, const srv_options_t *opts, const srv_handlers_t *handlers,
               srv_t **ret_srv, pto_error_t *ret_err) {
  srv_t *srv;
  int fd = -1, rc;

  if (opts->socket_mode & 0002)
    return pto_error_set(ret_err, PTO_E_INVALID_CONFIG,
                         "socket_mode %04o would make the socket world-writable; use 0660 or "
                         "tighter.",
                         opts->socket_mode);
  srv = calloc(1, sizeof(*srv));
  if (!srv) return pto_error_set(ret_err, PTO_E_INTERNAL, "Out of memory.");
  srv->loop = loop;
  srv->opts = *opts;
  srv->handlers = *handlers;
  uv_pipe_init(loop, &srv->listener, 0);
  srv->listener.data = srv;
  srv->listener_open = true;

  rc = notify_listen_fd(&fd);
  if (rc < 0) {
    pto_error_set(ret_err, PTO_E_INVALID_CONFIG,
                  "The socket systemd passed is not one listening Unix stream socket: %s.",
                  strerror(-rc));
  } else if (rc > 0) {
    rc = uv_pipe_open(&srv->listener, fd);
    if (rc < 0) {
      pto_error_set(ret_err, PTO_E_INTERNAL, "Failed to use the socket systemd passed: %s.",
                    uv_strerror(rc));
    } else {
      size_t len = sizeof(srv->path) - 1;
      srv->activated = true;
      /* For logs and STATUS=: where clients really connect.  libuv does
       * not NUL-terminate the name. */
      if (uv_pipe_getsockname(&srv->listener, srv->path, &len) < 0 || len == 0 ||
          srv->path[0] == '\0')
        snprintf(srv->path, sizeof(srv->path), "(socket from systemd)");
      else
        srv->path[len] = '\0';
    }
  } else {
    rc = bind_socket(srv, ret_err);
  }
  if (rc < 0) {
    if (srv->bound) unlink(srv->path);
    srv->bound = false;
    /* Released by the close callback when the caller next runs the loop. */
    srv->closing = true;
    uv_close((uv_handle_t *)&srv->listener, srv_on_listener_closed);
    return rc;
  }
  *ret_srv = srv;
  return 0;
}

const char *srv_socket_origin(const srv_t *srv) { return srv->activated ? "systemd" : "bound"; }

const char *srv_socket_path(const srv_t *srv) { return srv->path; }

uint32_t srv_client_count(const srv_t *srv) { return srv->clients; }

void srv_update_options(srv_t *srv, const srv_options_t *opts) {
  const char *path = srv->opts.socket_path;
  unsigned mode = srv->opts.socket_mode;
  gid_t gid = srv->opts.socket_gid;
  srv->opts = *opts;
  srv->opts.socket_path = path;
  srv->opts.socket_mode = mode;
  srv->opts.socket_gid = gid;
}

/* ---- peer credentials --------------------------------------------------- */

static bool id_listed(const uint32_t *ids, size_t n, uint32_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

/* Allowed when no allow-list is set, or the peer's uid, primary gid or one
 * of its supplementary groups is listed. */
static bool peer_allowed(srv_t *srv, srv_conn_t *conn, int fd) {
  gid_t groups[MAX_PEER_GROUPS];
  socklen_t len = sizeof(groups);
  const srv_options_t *o = &srv->opts;

  if (o->n_allowed_uids == 0 && o->n_allowed_gids == 0) return true;
  if (id_listed(o->allowed_uids, o->n_allowed_uids, conn->uid)) return true;
  if (id_listed(o->allowed_gids, o->n_allowed_gids, conn->gid)) return true;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
    for (size_t i = 0; i < len / sizeof(gid_t); i++)
      if (id_listed(o->allowed_gids, o->n_allowed_gids, groups[i])) return true;
  }
  return false;
}

/* ---- connections -------------------------------------------------------- */

static void conn_stop_idle_timer(srv_conn_t *conn) { uv_timer_stop(&conn->idle_timer); }

static void conn_on_idle(uv_timer_t *timer) {
  srv_conn_t *conn = timer->data;
  log_info("Client %llu (pid %d, uid %u) sent part of a message and then nothing for %llu ms; "
           "disconnecting it.",
           (unsigned long long)conn->id, (int)conn->pid, (unsigned)conn->uid,
           (unsigned long long)conn->srv->opts.client_timeout_ms);
  srv_conn_close(conn);
}

void srv_buffer_hint(void *p, size_t len) {
  uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE_PAGE - 1);
  if (len >= SRV_HUGE_BUFFER && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

static void conn_on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  srv_conn_t *conn = handle->data;
  size_t cap_limit = (size_t)conn->srv->opts.max_message + READ_CHUNK, want;
  (void)suggested;

  /* Keep the unread tail at the front so the buffer never grows for bytes
   * that were already handed on. */
  if (conn->rpos > 0) {
    memmove(conn->rbuf, conn->rbuf + conn->rpos, conn->rlen - conn->rpos);
    conn->rlen -= conn->rpos;
    conn->rpos = 0;
  }
  /* The reader knows the least the current message still needs: grow to
   * it at once rather than by doubling read after read. */
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
    if (grown) {
      conn->rbuf = grown;
      conn->rcap = cap;
      srv_buffer_hint(grown, cap);
    }
  }
  buf->base = conn->rbuf ? conn->rbuf + conn->rlen : NULL;
  buf->len = conn->rbuf ? conn->rcap - conn->rlen : 0;
}

/* Hand the message [rpos, rpos+len) to the service, in memory of its own. */
static int conn_deliver(srv_conn_t *conn, size_t len) {
  srv_msg_t *msg = malloc(sizeof(*msg));
  if (!msg) return -ENOMEM;
  msg->len = len;
  if (conn->rpos == 0 && len == conn->rlen && len >= READ_CHUNK) {
    /* A large message alone in the buffer: give the buffer away instead of
     * copying it. */
    msg->data = conn->rbuf;
    conn->rbuf = NULL;
    conn->rcap = conn->rlen = 0;
  } else {
    msg->data = malloc(len ? len : 1);
    if (!msg->data) {
      free(msg);
      return -ENOMEM;
    }
    memcpy(msg->data, conn->rbuf + conn->rpos, len);
    conn->rpos += len;
  }
  conn->srv->handlers.on_message(conn, msg, conn->srv->handlers.data);
  return 0;
}

static void conn_reject(srv_conn_t *conn, const pto_error_t *err) {
  uv_read_stop((uv_stream_t *)&conn->pipe);
  conn->srv->handlers.on_reject(conn, err, conn->srv->handlers.data);
}

/* Cut whole messages out of what has arrived. */
static void conn_process(srv_conn_t *conn) {
  pto_error_t err;
  size_t len;

  /* After a fatal error the connection only flushes its last message:
   * bytes behind the bad ones are never read as requests. */
  while (!conn->closing && !conn->close_after_write && conn->rlen > conn->rpos) {
    int rc = proto_reader_feed(&conn->reader, conn->rbuf + conn->rpos, conn->rlen - conn->rpos,
                               &len, &err);
    if (rc == 0) break;
    if (rc < 0) {
      log_info("Client %llu sent a message that cannot be read (%s); disconnecting it.",
               (unsigned long long)conn->id, err.message);
      conn_reject(conn, &err);
      return;
    }
    proto_reader_reset(&conn->reader);
    if (conn_deliver(conn, len) < 0) {
      pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
      conn_reject(conn, &err);
      return;
    }
  }
  if (conn->closing || conn->close_after_write) return;
  if (conn->rpos == conn->rlen) {
    conn->rpos = conn->rlen = 0;
    conn_stop_idle_timer(conn);
  } else if (conn->srv->opts.client_timeout_ms) {
    /* Part of a message is here: the rest must follow within the timeout. */
    uv_timer_start(&conn->idle_timer, conn_on_idle, conn->srv->opts.client_timeout_ms, 0);
  }
}

/* After EOF: whether the peer only shut down its sending side and still
 * reads (a Unix stream socket whose peer is gone reports POLLHUP; one whose
 * peer called shutdown(SHUT_WR) does not). */
static bool peer_still_reads(srv_conn_t *conn) {
  struct pollfd p = {.events = POLLOUT};
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&conn->pipe, &fd) < 0) return false;
  p.fd = fd;
  return poll(&p, 1, 0) == 1 && !(p.revents & (POLLHUP | POLLERR));
}

static void conn_close_when_written(srv_conn_t *conn) {
  if (uv_stream_get_write_queue_size((uv_stream_t *)&conn->pipe) == 0 && !conn->cork)
    srv_conn_close(conn);
  else
    conn->close_after_write = true;
}

/* The peer sent all it will send: answer what it asked, then close. */
static void conn_on_read_eof(srv_conn_t *conn) {
  uv_read_stop((uv_stream_t *)&conn->pipe);
  conn_stop_idle_timer(conn);
  conn->read_eof = true;
  if (conn->rlen > conn->rpos)
    log_info("Client %llu shut down its side in the middle of a message; that message is "
             "dropped.",
             (unsigned long long)conn->id);
  if (conn->pending == 0) conn_close_when_written(conn);
}

void srv_conn_pending_done(srv_conn_t *conn) {
  if (conn->read_eof && conn->pending == 0 && !conn->closing) conn_close_when_written(conn);
}

static void conn_on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  srv_conn_t *conn = stream->data;
  srv_t *srv = conn->srv;
  (void)buf;
  if (nread == UV_ENOBUFS) {
    pto_error_t err;
    pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory.");
    conn_reject(conn, &err);
    return;
  }
  if (nread < 0) {
    if (nread == UV_EOF && peer_still_reads(conn)) {
      conn_on_read_eof(conn);
      return;
    }
    if (nread != UV_EOF)
      log_debug("Client %llu: read failed: %s.", (unsigned long long)conn->id,
                uv_strerror((int)nread));
    srv_conn_close(conn);
    return;
  }
  conn->rlen += (size_t)nread;
  srv_cork(srv);
  conn_process(conn);
  srv_uncork(srv);
}

static void conn_free(srv_conn_t *conn) {
  srv_t *srv = conn->srv;
  if (conn->prev)
    conn->prev->next = conn->next;
  else
    srv->conns = conn->next;
  if (conn->next) conn->next->prev = conn->prev;
  free(conn->rbuf);
  free(conn->cork);
  free(conn);
  srv_maybe_free(srv);
}

void srv_conn_ref(srv_conn_t *conn) { conn->refs++; }

void srv_conn_unref(srv_conn_t *conn) {
  if (--conn->refs == 0) conn_free(conn);
}

static void conn_on_closed(uv_handle_t *handle) {
  srv_conn_t *conn = handle->data;
  if (--conn->open_handles == 0) srv_conn_unref(conn);
}

void srv_conn_close(srv_conn_t *conn) {
  if (conn->closing) return;
  conn->closing = true;
  atomic_store_explicit(&conn->gone, true, memory_order_release);
  free(conn->cork); /* bytes not yet written are dropped */
  conn->cork = NULL;
  conn->cork_len = conn->cork_cap = 0;
  conn->srv->clients--;
  conn->srv->handlers.on_close(conn, conn->srv->handlers.data);
  uv_close((uv_handle_t *)&conn->idle_timer, conn_on_closed);
  uv_close((uv_handle_t *)&conn->pipe, conn_on_closed);
}

static void conn_on_written(uv_write_t *req, int status) {
  write_req_t *wr = (write_req_t *)req;
  srv_conn_t *conn = req->handle->data;
  free(wr->data);
  free(wr);
  if (status < 0 && status != UV_ECANCELED) {
    log_debug("Client %llu: write failed: %s.", (unsigned long long)conn->id, uv_strerror(status));
    srv_conn_close(conn);
    return;
  }
  if (conn->close_after_write && !conn->closing &&
      uv_stream_get_write_queue_size((uv_stream_t *)&conn->pipe) == 0)
    srv_conn_close(conn);
}

static void conn_send_now(srv_conn_t *conn, char *data, size_t len);

/* Hold data while corked, taking it over: the first message is kept as it
 * is (a lone response is written from its own buffer, uncopied), the ones
 * after it are appended to it.  False when out of memory (data is then
 * still the caller's). */
static bool conn_cork_add(srv_conn_t *conn, char *data, size_t len) {
  srv_t *srv = conn->srv;
  if (!conn->cork) {
    conn->cork = data;
    conn->cork_len = conn->cork_cap = len;
  } else if (conn->cork_cap - conn->cork_len < len) {
    size_t cap = conn->cork_cap ? conn->cork_cap : 4096;
    char *grown;
    while (cap - conn->cork_len < len) cap *= 2;
    grown = realloc(conn->cork, cap);
    if (!grown) return false;
    conn->cork = grown;
    conn->cork_cap = cap;
  }
  if (conn->cork != data) {
    memcpy(conn->cork + conn->cork_len, data, len);
    conn->cork_len += len;
    free(data);
  }
  if (!conn->cork_listed) {
    conn->cork_listed = true;
    conn->cork_next = srv->cork_list;
    srv->cork_list = conn;
  }
  return true;
}

/* Write what the connection holds (its buffer goes with the write). */
static void conn_cork_flush(srv_conn_t *conn) {
  char *data = conn->cork;
  size_t len = conn->cork_len;
  if (!data) return;
  conn->cork = NULL;
  conn->cork_len = conn->cork_cap = 0;
  conn_send_now(conn, data, len);
}

void srv_cork(srv_t *srv) { srv->cork_depth++; }

void srv_uncork(srv_t *srv) {
  if (--srv->cork_depth > 0) return;
  while (srv->cork_list) {
    srv_conn_t *conn = srv->cork_list;
    srv->cork_list = conn->cork_next;
    conn->cork_next = NULL;
    conn->cork_listed = false;
    if (!conn->closing) conn_cork_flush(conn);
  }
}

void srv_conn_send(srv_conn_t *conn, char *data, size_t len) {
  if (conn->closing) {
    free(data);
    return;
  }
  if (conn->srv->cork_depth > 0 && len <= CORK_MAX_MESSAGE && conn_cork_add(conn, data, len))
    return;
  conn_cork_flush(conn); /* what is held goes first */
  if (conn->closing) {
    free(data);
    return;
  }
  conn_send_now(conn, data, len);
}

static void conn_send_now(srv_conn_t *conn, char *data, size_t len) {
  uv_stream_t *stream = (uv_stream_t *)&conn->pipe;
  size_t done = 0, nbufs;
  write_req_t *wr;
  uv_buf_t buf, few[8], *bufs;
  int rc;

  if (conn->closing) {
    free(data);
    return;
  }
  /* Most responses fit the socket buffer: write them now, skipping a loop
   * iteration. */
  if (uv_stream_get_write_queue_size(stream) == 0) {
    buf = uv_buf_init(data, (unsigned)(len < WRITE_CHUNK ? len : WRITE_CHUNK));
    rc = uv_try_write(stream, &buf, 1);
    if (rc > 0) done = (size_t)rc;
  }
  if (done == len) {
    free(data);
    if (conn->close_after_write) srv_conn_close(conn);
    return;
  }
  wr = malloc(sizeof(*wr));
  /* A uv_buf_t holds at most 4 GiB - 1: a larger response goes in pieces
   * (uv_write copies the array). */
  nbufs = (len - done + WRITE_CHUNK - 1) / WRITE_CHUNK;
  bufs = nbufs <= sizeof(few) / sizeof(few[0]) ? few : malloc(nbufs * sizeof(*bufs));
  if (!wr || !bufs) {
    free(wr);
    free(data);
    srv_conn_close(conn);
    return;
  }
  wr->data = data;
  for (size_t i = 0; i < nbufs; i++) {
    size_t at = done + i * WRITE_CHUNK, n = len - at < WRITE_CHUNK ? len - at : WRITE_CHUNK;
    bufs[i] = uv_buf_init(data + at, (unsigned)n);
  }
  rc = uv_write(&wr->req, stream, bufs, (unsigned)nbufs, conn_on_written);
  if (bufs != few) free(bufs);
  if (rc < 0) {
    free(data);
    free(wr);
    srv_conn_close(conn);
    return;
  }
  if (uv_stream_get_write_queue_size(stream) > conn->srv->opts.output_limit) {
    log_warning("Client %llu has %zu bytes of responses it does not read (output_limit %llu); "
                "disconnecting it.",
                (unsigned long long)conn->id, uv_stream_get_write_queue_size(stream),
                (unsigned long long)conn->srv->opts.output_limit);
    srv_conn_close(conn);
  }
}

void srv_conn_send_and_close(srv_conn_t *conn, char *data, size_t len) {
  conn->close_after_write = true;
  uv_read_stop((uv_stream_t *)&conn->pipe);
  srv_conn_send(conn, data, len);
}

static void srv_on_connection(uv_stream_t *listener, int status) {
  srv_t *srv = listener->data;
  srv_conn_t *conn;
  struct ucred cred;
  socklen_t len = sizeof(cred);
  pto_error_t err;
  uv_os_fd_t fd;

  if (status < 0) {
    log_warning("Failed to accept a connection: %s, ignoring.", uv_strerror(status));
    return;
  }
  conn = calloc(1, sizeof(*conn));
  if (!conn) return;
  conn->srv = srv;
  conn->id = ++srv->next_id;
  conn->refs = 1; /* the handles */
  conn->open_handles = 2;
  proto_reader_init(&conn->reader, srv->opts.max_message);
  uv_pipe_init(srv->loop, &conn->pipe, 0);
  uv_timer_init(srv->loop, &conn->idle_timer);
  conn->pipe.data = conn;
  conn->idle_timer.data = conn;
  conn->next = srv->conns;
  if (srv->conns) srv->conns->prev = conn;
  srv->conns = conn;
  srv->clients++;

  if (uv_accept(listener, (uv_stream_t *)&conn->pipe) < 0 ||
      uv_fileno((uv_handle_t *)&conn->pipe, &fd) < 0 ||
      getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    srv_conn_close(conn);
    return;
  }
  conn->pid = cred.pid;
  conn->uid = cred.uid;
  conn->gid = cred.gid;

  if (!srv->accepting) {
    pto_error_set(&err, PTO_E_SHUTTING_DOWN, "The daemon is shutting down.");
    conn_reject(conn, &err);
    return;
  }
  if (!peer_allowed(srv, conn, fd)) {
    log_notice("Refused client pid %d uid %u gid %u: not in allowed_uids/allowed_gids.",
               (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
    pto_error_set(&err, PTO_E_PERMISSION_DENIED,
                  "uid %u (gid %u) is not allowed to use this daemon; ask its operator to add "
                  "it to allowed_uids or allowed_gids.",
                  (unsigned)cred.uid, (unsigned)cred.gid);
    conn_reject(conn, &err);
    return;
  }
  if (srv->clients > srv->opts.max_clients) {
    log_warning("Refused client pid %d: already serving max_clients = %u clients.", (int)cred.pid,
                srv->opts.max_clients);
    pto_error_set(&err, PTO_E_BUSY,
                  "The daemon already serves max_clients = %u clients; retry later.",
                  srv->opts.max_clients);
    conn_reject(conn, &err);
    return;
  }
  log_debug("Client %llu connected: pid %d uid %u gid %u.", (unsigned long long)conn->id,
            (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
  uv_read_start((uv_stream_t *)&conn->pipe, conn_on_alloc, conn_on_read);
}

int srv_listen(srv_t *srv, pto_error_t *ret_err) {
  int rc = uv_listen((uv_stream_t *)&srv->listener, LISTEN_BACKLOG, srv_on_connection);
  if (rc < 0)
    return pto_error_set(ret_err, PTO_E_INTERNAL, "Failed to listen on '%s': %s.",
                         srv->path, uv_strerror(rc));
  srv->accepting = true;
  return 0;
}

void srv_stop_accepting(srv_t *srv) { srv->accepting = false; }

static void srv_maybe_free(srv_t *srv) {
  if (srv->closing && !srv->listener_open && !srv->conns) free(srv);
}

static void srv_on_listener_closed(uv_handle_t *handle) {
  srv_t *srv = handle->data;
  srv->listener_open = false;
  srv_maybe_free(srv);
}

static void conn_on_flush_timeout(uv_timer_t *timer) {
  srv_conn_t *conn = timer->data;
  log_warning("Client %llu did not read its last %zu bytes of responses within %llu ms; closing "
              "without them.",
              (unsigned long long)conn->id,
              uv_stream_get_write_queue_size((uv_stream_t *)&conn->pipe),
              (unsigned long long)conn->srv->opts.client_timeout_ms);
  srv_conn_close(conn);
}

void srv_close(srv_t *srv) {
  srv_conn_t *conn, *next;
  srv->accepting = false;
  srv->closing = true;
  for (conn = srv->conns; conn; conn = next) {
    next = conn->next;
    if (conn->closing) continue;
    /* Responses still queued (a slow reader) go out first: uv_close would
     * cancel them.  A peer that does not read them within client_timeout
     * loses them. */
    if (uv_stream_get_write_queue_size((uv_stream_t *)&conn->pipe) > 0) {
      conn->close_after_write = true;
      uv_read_stop((uv_stream_t *)&conn->pipe);
      uv_timer_start(&conn->idle_timer, conn_on_flush_timeout,
                     srv->opts.client_timeout_ms ? srv->opts.client_timeout_ms : 1, 0);
      continue;
    }
    srv_conn_close(conn);
  }
  if (srv->bound) unlink(srv->path);
  uv_close((uv_handle_t *)&srv->listener, srv_on_listener_closed);
}
