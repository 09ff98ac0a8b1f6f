/* SPDX-License-Identifier: Apache-2.0 */
/* server.c — the listener, peer credentials, and what the server keeps for
 * all connections together (corking, the all-clients memory budget).  One
 * connection's bytes are conn.c's. */
#include "server.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "closer.h"
#include "log.h"
#include "notify.h"
#include "server_internal.h"
#include "sockpath.h"

#define LISTEN_BACKLOG 128
#define MAX_PEER_GROUPS 256
#define HUGE_PAGE ((size_t)2 << 20)

static void srv_maybe_free(srv_t *srv);

void srv_buffer_hint(void *p, size_t len) {
  uintptr_t lo = ((uintptr_t)p + HUGE_PAGE - 1) & ~(uintptr_t)(HUGE_PAGE - 1);
  uintptr_t hi = ((uintptr_t)p + len) & ~(uintptr_t)(HUGE_PAGE - 1);
  if (len >= SRV_HUGE_BUFFER && hi > lo) (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

/* ---- the listening socket ------------------------------------------------ */

static void srv_on_listener_closed(uv_handle_t *handle) {
  srv_t *srv = handle->data;
  if (srv->listen_fd >= 0) close(srv->listen_fd);
  srv->listen_fd = -1;
  srv->listener_open = false;
  srv_maybe_free(srv);
}

static void srv_on_retry_closed(uv_handle_t *handle) {
  srv_t *srv = handle->data;
  srv->retry_open = false;
  srv_maybe_free(srv);
}

static void srv_on_go_on_closed(uv_handle_t *handle) {
  srv_t *srv = handle->data;
  srv->go_on_open = false;
  srv_maybe_free(srv);
}

/* The socket systemd passed: 1 and its fd, 0 when none was passed. */
static int take_passed_socket(srv_t *srv, pto_error_t *err) {
  int fd = -1, rc = notify_listen_fd(&fd);
  struct sockaddr_un addr;
  socklen_t len = sizeof(addr);
  if (rc < 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "The socket systemd passed is not one listening Unix stream socket: %s.",
                         strerror(-rc));
  if (rc == 0) return 0;
  if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to use the socket systemd passed: %s.",
                         strerror(errno));
  srv->listen_fd = fd;
  srv->activated = true;
  /* For logs and STATUS=: where clients really connect. */
  memset(&addr, 0, sizeof(addr));
  if (getsockname(fd, (struct sockaddr *)&addr, &len) == 0 && addr.sun_path[0])
    snprintf(srv->path, sizeof(srv->path), "%.*s", (int)sizeof(addr.sun_path), addr.sun_path);
  else
    snprintf(srv->path, sizeof(srv->path), "(socket from systemd)");
  return 1;
}

int srv_create(uv_loop_t *loop, const srv_options_t *opts, const srv_handlers_t *handlers,
               srv_t **ret_srv, pto_error_t *ret_err) {
  srv_t *srv;
  int rc;

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
  srv->listen_fd = -1;

  rc = take_passed_socket(srv, ret_err);
  if (rc == 0) {
    rc = sockpath_bind(opts->socket_path, opts->socket_mode, opts->socket_gid, LISTEN_BACKLOG,
                       &srv->listen_fd, ret_err);
    if (rc == 0) {
      snprintf(srv->path, sizeof(srv->path), "%s", opts->socket_path);
      srv->bound = true;
    }
  }
  if (rc < 0) {
    if (srv->listen_fd >= 0) close(srv->listen_fd);
    free(srv);
    return rc;
  }
  rc = uv_poll_init(loop, &srv->listener, srv->listen_fd);
  if (rc < 0) {
    pto_error_set(ret_err, PTO_E_INTERNAL, "Failed to watch the socket: %s.", uv_strerror(rc));
    if (srv->bound) unlink(srv->path);
    close(srv->listen_fd);
    free(srv);
    return -PTO_E_INTERNAL;
  }
  srv->listener.data = srv;
  srv->listener_open = true;
  uv_timer_init(loop, &srv->accept_retry);
  srv->accept_retry.data = srv;
  srv->retry_open = true;
  uv_idle_init(loop, &srv->go_on);
  srv->go_on.data = srv;
  srv->go_on_open = true;
  *ret_srv = srv;
  return 0;
}

const char *srv_socket_origin(const srv_t *srv) { return srv->activated ? "systemd" : "bound"; }

const char *srv_socket_path(const srv_t *srv) { return srv->path; }

uint32_t srv_client_count(const srv_t *srv) { return srv->clients; }

void srv_memory(const srv_t *srv, srv_memory_t *ret) {
  ret->input = srv->input;
  ret->output = srv->output;
  ret->limit = srv->opts.clients_memory;
  ret->input_limit = srv->opts.input_limit;
  ret->output_limit = srv->opts.output_limit;
  ret->most_input = ret->most_output = 0;
  for (const srv_conn_t *c = srv->conns; c; c = c->next) {
    if (conn_input(c) > ret->most_input) ret->most_input = conn_input(c);
    if (c->out_bytes > ret->most_output) ret->most_output = c->out_bytes;
  }
}

void srv_update_options(srv_t *srv, const srv_options_t *opts) {
  const char *path = srv->opts.socket_path;
  unsigned mode = srv->opts.socket_mode;
  gid_t gid = srv->opts.socket_gid;
  srv->opts = *opts;
  srv->opts.socket_path = path;
  srv->opts.socket_mode = mode;
  srv->opts.socket_gid = gid;
  /* New limits reach each connection at its next message; one between
   * messages takes them now.  Budgets may have grown: look again. */
  for (srv_conn_t *conn = srv->conns; conn; conn = conn->next) {
    if (conn->closing) continue;
    if (conn->msg_start_ns == 0)
      proto_reader_set_limits(&conn->reader, opts->max_message, opts->max_objects);
    conn_update(conn);
  }
  srv_check_output(srv);
}

/* ---- the all-clients budget ---------------------------------------------- */

bool srv_input_allows(srv_t *srv, srv_conn_t *conn) {
  if (srv->input < srv->opts.clients_memory || srv->pass == conn) return true;
  if (conn_input(conn) < SRV_INPUT_ALLOWANCE) return true;
  if (!srv->pressured) {
    /* Memory is short: read buffers kept for reuse go back first. */
    for (srv_conn_t *c = srv->conns; c; c = c->next) conn_trim(c);
    if (srv->input < srv->opts.clients_memory) return true;
  }
  if (!srv->pass && conn->msg_start_ns) {
    srv->pass = conn; /* the first one under way goes on, alone */
    return true;
  }
  srv->pressured = true;
  return false;
}

/* Connections paused by the budget may go on: look at each again. */
static void srv_relieve(srv_t *srv) {
  srv->pressured = false;
  for (srv_conn_t *conn = srv->conns; conn; conn = conn->next)
    if (!conn->closing) conn_update(conn);
}

void srv_release_pass(srv_t *srv, srv_conn_t *conn) {
  if (srv->pass != conn) return;
  srv->pass = NULL;
  if (srv->pressured) srv_relieve(srv);
}

/* After a burst, memory freed goes back to the system: glibc keeps freed
 * heap pages below its top (and in the device thread's arena) resident, so
 * once what clients hold falls to a quarter of its peak, malloc_trim
 * returns them.  Rare by construction: the peak restarts from there. */
#define TRIM_AFTER ((uint64_t)8 << 20)

static void note_held(srv_t *srv) {
  uint64_t held = srv->input + srv->output;
  if (held > srv->held_peak) {
    srv->held_peak = held;
  } else if (srv->held_peak >= TRIM_AFTER && held <= srv->held_peak / 4) {
    (void)malloc_trim(0);
    srv->held_peak = held;
  }
}

void srv_account_input(srv_t *srv, int64_t delta) {
  srv->input = (uint64_t)((int64_t)srv->input + delta);
  note_held(srv);
  if (delta < 0 && srv->pressured && srv->input < srv->opts.clients_memory) srv_relieve(srv);
}

void srv_account_output(srv_t *srv, int64_t delta) {
  srv->output = (uint64_t)((int64_t)srv->output + delta);
  note_held(srv);
}

void srv_check_output(srv_t *srv) {
  while (srv->output > srv->opts.clients_memory) {
    srv_conn_t *worst = NULL;
    for (srv_conn_t *conn = srv->conns; conn; conn = conn->next)
      if (!conn->closing && (!worst || conn->out_bytes > worst->out_bytes)) worst = conn;
    if (!worst || worst->out_bytes == 0) return;
    log_client(LOG_WARNING,
               "Clients hold %llu bytes of answers they do not read (clients_memory %llu); "
               "disconnecting client %llu (pid %d), which holds %llu of them.",
               (unsigned long long)srv->output, (unsigned long long)srv->opts.clients_memory,
               (unsigned long long)worst->id, (int)worst->pid,
               (unsigned long long)worst->out_bytes);
    srv_conn_close(worst);
  }
}

/* ---- turns ---------------------------------------------------------------- */

/* Each turn of the loop while connections are deferred (the idle handle
 * keeps the loop from waiting): each goes on for one more turn, after the
 * others' bytes were read. */
static void srv_on_go_on(uv_idle_t *idle) {
  srv_t *srv = idle->data;
  srv_conn_t *conn, *next;
  for (conn = srv->conns; conn && srv->deferred > 0; conn = next) {
    next = conn->next;
    if (!conn->deferred) continue;
    conn->deferred = false;
    srv->deferred--;
    conn_go_on(conn);
  }
  if (srv->deferred == 0) uv_idle_stop(&srv->go_on);
}

bool srv_defer(srv_t *srv, srv_conn_t *conn) {
  if (srv->closing) return false;
  if (!conn->deferred) {
    conn->deferred = true;
    srv->deferred++;
  }
  uv_idle_start(&srv->go_on, srv_on_go_on);
  return true;
}

/* ---- corking -------------------------------------------------------------- */

void srv_cork(srv_t *srv) { srv->cork_depth++; }

void srv_uncork(srv_t *srv) {
  if (--srv->cork_depth > 0) return;
  while (srv->flush_list) {
    srv_conn_t *conn = srv->flush_list;
    srv->flush_list = conn->flush_next;
    conn->flush_next = NULL;
    conn->flush_listed = false;
    if (!conn->closing) conn_flush(conn);
  }
}

/* ---- accepting ------------------------------------------------------------ */

static bool id_listed(const uint32_t *ids, size_t n, uint32_t id) {
  for (size_t i = 0; i < n; i++)
    if (ids[i] == id) return true;
  return false;
}

/* Allowed when no allow-list is set, or the peer's uid, primary gid or one
 * of its supplementary groups is listed. */
static bool peer_allowed(srv_t *srv, srv_conn_t *conn) {
  gid_t groups[MAX_PEER_GROUPS];
  socklen_t len = sizeof(groups);
  const srv_options_t *o = &srv->opts;

  if (o->n_allowed_uids == 0 && o->n_allowed_gids == 0) return true;
  if (id_listed(o->allowed_uids, o->n_allowed_uids, conn->uid)) return true;
  if (id_listed(o->allowed_gids, o->n_allowed_gids, conn->gid)) return true;
  if (getsockopt(conn->fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
    for (size_t i = 0; i < len / sizeof(gid_t); i++)
      if (id_listed(o->allowed_gids, o->n_allowed_gids, groups[i])) return true;
  }
  return false;
}

static srv_conn_t *conn_new(srv_t *srv, int fd) {
  srv_conn_t *conn = calloc(1, sizeof(*conn));
  if (!conn || uv_poll_init(srv->loop, &conn->poll, fd) < 0) {
    free(conn);
    close(fd);
    return NULL;
  }
  conn->srv = srv;
  conn->fd = fd;
  conn->id = ++srv->next_id;
  conn->refs = 1; /* the handles */
  conn->open_handles = 2;
  proto_reader_init(&conn->reader, srv->opts.max_message);
  proto_reader_set_limits(&conn->reader, srv->opts.max_message, srv->opts.max_objects);
  uv_timer_init(srv->loop, &conn->timer);
  conn->poll.data = conn;
  conn->timer.data = conn;
  conn->next = srv->conns;
  if (srv->conns) srv->conns->prev = conn;
  srv->conns = conn;
  srv->clients++;
  return conn;
}

static void accept_one(srv_t *srv, int fd) {
  srv_conn_t *conn = conn_new(srv, fd);
  struct ucred cred;
  socklen_t len = sizeof(cred);
  pto_error_t err;

  if (!conn) return;
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
    srv_conn_close(conn);
    return;
  }
  conn->pid = cred.pid;
  conn->uid = cred.uid;
  conn->gid = cred.gid;
  if (!srv->accepting) {
    pto_error_set(&err, PTO_E_SHUTTING_DOWN, "The daemon is shutting down.");
    srv_conn_fail(conn, &err);
    return;
  }
  if (!peer_allowed(srv, conn)) {
    log_client(LOG_NOTICE, "Refused client pid %d uid %u gid %u: not in allowed_uids/allowed_gids.",
               (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
    pto_error_set(&err, PTO_E_PERMISSION_DENIED,
                  "uid %u (gid %u) is not allowed to use this daemon; ask its operator to add "
                  "it to allowed_uids or allowed_gids.",
                  (unsigned)cred.uid, (unsigned)cred.gid);
    srv_conn_fail(conn, &err);
    return;
  }
  if (srv->clients > srv->opts.max_clients) {
    log_client(LOG_WARNING, "Refused client pid %d: already serving max_clients = %u clients.",
               (int)cred.pid, srv->opts.max_clients);
    pto_error_set(&err, PTO_E_BUSY,
                  "The daemon already serves max_clients = %u clients; retry later.",
                  srv->opts.max_clients);
    srv_conn_fail(conn, &err);
    return;
  }
  log_client(LOG_DEBUG, "Client %llu connected: pid %d uid %u gid %u.",
             (unsigned long long)conn->id, (int)cred.pid, (unsigned)cred.uid, (unsigned)cred.gid);
  conn_update(conn); /* start reading */
}

static void srv_on_connection(uv_poll_t *handle, int status, int events);

static void srv_on_accept_retry(uv_timer_t *timer) {
  srv_t *srv = timer->data;
  if (srv->closing || !srv->accept_paused) return;
  srv->accept_paused = false;
  uv_poll_start(&srv->listener, UV_READABLE, srv_on_connection);
}

/* Out of fds (EMFILE, ENFILE): the listener stays readable while a
 * connection waits, so watching it now would spin the loop on failed
 * accepts.  It is left alone for ACCEPT_RETRY_MS at a time instead, and the
 * connections wait in the backlog until fds are free (connections closing,
 * their parked fds with them).  Logged at most once a second. */
#define ACCEPT_RETRY_MS 100
static void srv_pause_accepting(srv_t *srv, int err) {
  struct rlimit lim;
  unsigned long long again = 0;
  uv_poll_stop(&srv->listener);
  srv->accept_paused = true;
  uv_timer_start(&srv->accept_retry, srv_on_accept_retry, ACCEPT_RETRY_MS, 0);
  if (!log_cause_due(&srv->out_of_fds_log, &again)) return;
  if (getrlimit(RLIMIT_NOFILE, &lim) < 0) lim.rlim_cur = 0;
  log_client(LOG_WARNING,
             "Failed to accept a connection: %s (%u clients hold %u passed file descriptors; "
             "RLIMIT_NOFILE %llu); new connections wait until file descriptors are free%s.",
             strerror(err), srv->clients, srv->parked_fds, (unsigned long long)lim.rlim_cur,
             again ? " (it happened again meanwhile; logged at most once a second)" : "");
}

static void srv_on_connection(uv_poll_t *handle, int status, int events) {
  srv_t *srv = handle->data;
  (void)events;
  if (status < 0) {
    log_warning("Failed to watch the socket: %s, ignoring.", uv_strerror(status));
    return;
  }
  /* A few per wake-up: a burst of connections does not starve the rest. */
  for (int i = 0; i < 16; i++) {
    int fd = accept4(srv->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      if (errno == EMFILE || errno == ENFILE)
        srv_pause_accepting(srv, errno);
      else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
        log_client(LOG_WARNING, "Failed to accept a connection: %s, ignoring.",
                   strerror(errno));
      return;
    }
    accept_one(srv, fd);
  }
}

int srv_listen(srv_t *srv, pto_error_t *ret_err) {
  int rc = uv_poll_start(&srv->listener, UV_READABLE, srv_on_connection);
  if (rc < 0)
    return pto_error_set(ret_err, PTO_E_INTERNAL, "Failed to listen on '%s': %s.", srv->path,
                         uv_strerror(rc));
  srv->accepting = true;
  return 0;
}

/* The memfds conn holds parked (a refused fd's place holds none). */
static uint64_t conn_parked_fds(const srv_conn_t *conn) {
  uint64_t n = 0;
  for (unsigned i = 0; i < conn->nfds; i++) n += conn->fds[i] >= 0;
  return n;
}

void srv_fds(const srv_t *srv, srv_fds_t *ret) {
  struct rlimit lim;
  ret->parked = srv->parked_fds;
  ret->most_parked = 0;
  for (const srv_conn_t *c = srv->conns; c; c = c->next)
    if (conn_parked_fds(c) > ret->most_parked) ret->most_parked = conn_parked_fds(c);
  ret->closing = closer_pending();
  ret->limit = getrlimit(RLIMIT_NOFILE, &lim) == 0 ? (uint64_t)lim.rlim_cur : 0;
}

void srv_stop_accepting(srv_t *srv) { srv->accepting = false; }

/* ---- closing -------------------------------------------------------------- */

static void srv_maybe_free(srv_t *srv) {
  if (srv->closing && !srv->listener_open && !srv->retry_open && !srv->go_on_open && !srv->conns)
    free(srv);
}

void srv_conn_unlink(srv_conn_t *conn) {
  srv_t *srv = conn->srv;
  if (conn->prev)
    conn->prev->next = conn->next;
  else
    srv->conns = conn->next;
  if (conn->next) conn->next->prev = conn->prev;
  srv_maybe_free(srv);
}

void srv_close(srv_t *srv) {
  srv_conn_t *conn, *next;
  srv->accepting = false;
  srv->closing = true;
  for (conn = srv->conns; conn; conn = next) {
    next = conn->next;
    if (conn->closing) continue;
    /* Answers still queued (a slow reader) go out first; a peer that does
     * not read them within client_timeout loses them. */
    if (conn->out_head) {
      conn_close_after_flush(conn, srv->opts.client_timeout_ms ? srv->opts.client_timeout_ms : 1);
      continue;
    }
    srv_conn_close(conn);
  }
  if (srv->bound) unlink(srv->path);
  if (srv->retry_open) uv_close((uv_handle_t *)&srv->accept_retry, srv_on_retry_closed);
  if (srv->go_on_open) uv_close((uv_handle_t *)&srv->go_on, srv_on_go_on_closed);
  if (srv->listener_open) uv_close((uv_handle_t *)&srv->listener, srv_on_listener_closed);
}
