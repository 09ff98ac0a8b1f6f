/* server.h — the Unix-socket listener and its connections (libuv).
 *
 * The server owns sockets and bytes: it listens (on a path it binds, or on
 * a socket systemd passed), checks peer credentials, reads bytes into each
 * connection's buffer, cuts them into whole msgpack messages with the
 * bounded reader (proto/reader.h), hands each message to the service, and
 * writes responses.  It knows nothing of methods.  Everything here runs on
 * the loop thread, except srv_conn_gone(), which any thread may call.
 */
#ifndef PTOD_SERVER_H
#define PTOD_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

#include <pto/errors.h>

#include "reader.h"

#define SRV_MAX_IDS 64

typedef struct srv_options {
  const char *socket_path;
  unsigned socket_mode;     /* e.g. 0660; never world-writable */
  gid_t socket_gid;         /* (gid_t)-1: keep the daemon's group */
  uid_t allowed_uids[SRV_MAX_IDS];
  size_t n_allowed_uids;
  gid_t allowed_gids[SRV_MAX_IDS];
  size_t n_allowed_gids;    /* both lists empty: any peer that can open the socket */
  uint32_t max_clients;
  uint64_t max_message;
  uint32_t max_pending;     /* per connection */
  uint64_t client_timeout_ms;
  uint64_t output_limit;
} srv_options_t;

typedef struct srv srv_t;
typedef struct srv_conn srv_conn_t;

/* One whole message, in memory owned by the message: the service keeps it
 * as long as the request needs it (msgpack-c's objects point into it) and
 * frees it with srv_msg_free(). */
typedef struct srv_msg {
  char *data;
  size_t len;
} srv_msg_t;

void srv_msg_free(srv_msg_t *msg);

/* What the server calls; the service implements them. */
typedef struct srv_handlers {
  /* A whole message arrived.  The handler owns *msg from now on. */
  void (*on_message)(srv_conn_t *conn, srv_msg_t *msg, void *data);
  /* The connection is going away (peer closed, error, limit, shutdown).
   * Requests still held for it must stop using it: see srv_conn_ref. */
  void (*on_close)(srv_conn_t *conn, void *data);
  /* The connection must go, for the reason in err (bytes that cannot be
   * parsed, a message over max_message, a peer not allowed, too many
   * clients): the handler tells the peer, with srv_conn_send_and_close. */
  void (*on_reject)(srv_conn_t *conn, const pto_error_t *err, void *data);
  void *data;
} srv_handlers_t;

struct srv_conn {
  uv_pipe_t pipe;
  uv_timer_t idle_timer;
  srv_t *srv;
  uint64_t id;
  pid_t pid;
  uid_t uid;
  gid_t gid;
  char *rbuf;          /* bytes received, [rpos, rlen) not yet a whole message */
  size_t rpos, rlen, rcap;
  proto_reader_t reader;
  uint32_t pending;    /* requests received and not yet answered */
  int refs;            /* the open handles count as one; each held request as one */
  int open_handles;
  bool closing;
  bool close_after_write;
  bool read_eof;       /* the peer shut down its sending side and still reads */
  atomic_bool gone;    /* set once closing starts; read by the device thread */
  char *cork;          /* responses held while the server is corked (srv_cork) */
  size_t cork_len, cork_cap;
  bool cork_listed;    /* in the server's list of connections holding corked bytes */
  srv_conn_t *cork_next;
  srv_conn_t *prev, *next;
  void *service_data;  /* the service's per-connection state */
};

/* Set up the listener: use the socket systemd passed (LISTEN_FDS) when
 * there is one, else bind opts->socket_path — replacing a stale socket file
 * of a dead daemon, refusing a live one — with the mode and group asked
 * for.  The options are copied.  On failure returns a negative error and a
 * sentence in ret_err; nothing is left behind. */
int srv_create(uv_loop_t *loop, const srv_options_t *opts, const srv_handlers_t *handlers,
               srv_t **ret_srv, pto_error_t *ret_err);

/* Start accepting. */
int srv_listen(srv_t *srv, pto_error_t *ret_err);

/* Stop accepting new connections (drain); existing ones go on. */
void srv_stop_accepting(srv_t *srv);

/* Close the listener and every connection; unlink the socket file if we
 * bound it.  A connection with responses not yet written stops reading and
 * closes once they are out, or after client_timeout if its peer does not
 * read them.  The server memory is released once the loop has run the
 * close callbacks; srv must not be used after. */
void srv_close(srv_t *srv);

/* Options that a reload may change live (limits, allow-lists); the socket
 * itself is fixed for the daemon's life. */
void srv_update_options(srv_t *srv, const srv_options_t *opts);

/* How the socket was obtained, for logs: "systemd" or "bound". */
const char *srv_socket_origin(const srv_t *srv);
/* The path clients connect to: the one bound, or the passed socket's own
 * (which may differ from [daemon] socket). */
const char *srv_socket_path(const srv_t *srv);
uint32_t srv_client_count(const srv_t *srv);

/* Queue bytes for the peer; takes ownership of data (freed with free()).
 * If the peer's unsent bytes exceed output_limit the connection is closed.
 * A no-op (data freed) once the connection is closing.  While the server is
 * corked, small messages are held and written at srv_uncork. */
void srv_conn_send(srv_conn_t *conn, char *data, size_t len);

/* Message buffers of this size or more should be backed by transparent
 * huge pages: a 4 KiB page fault costs 10-20 us on a virtual machine and a
 * fresh 64 MiB buffer takes 16384 of them (seconds of faults per GiB),
 * against 32 faults with 2 MiB pages.  srv_buffer_hint(p, len) asks the
 * kernel for them (madvise MADV_HUGEPAGE on the 2 MiB-aligned part of the
 * buffer; a no-op below the size or where THP is off).  The server does it
 * for its read buffers; whoever builds a large response does it for that. */
#define SRV_HUGE_BUFFER ((size_t)2 << 20)
void srv_buffer_hint(void *p, size_t len);

/* Cork the server around a batch of sends (the responses of every
 * completion found at once, the answers to every message of one read):
 * srv_uncork then writes each connection's held messages with one system
 * call instead of one per message.  Nests; both must be called in the same
 * loop callback, so nothing is held across loop iterations. */
void srv_cork(srv_t *srv);
void srv_uncork(srv_t *srv);

/* Send, then close the connection once the bytes are out (a fatal error
 * notification, PERMISSION_DENIED). */
void srv_conn_send_and_close(srv_conn_t *conn, char *data, size_t len);

/* Close now (bytes not yet written are dropped). */
void srv_conn_close(srv_conn_t *conn);

/* The service answered (or dropped) the last of the connection's pending
 * requests.  A peer that shut down its sending side (shutdown(SHUT_WR))
 * still gets every answer to what it sent; once nothing is pending the
 * connection closes after its last bytes are written. */
void srv_conn_pending_done(srv_conn_t *conn);

/* Keep the connection's memory alive while a request refers to it; unref
 * frees it once closed and unreferenced.  Loop thread only. */
void srv_conn_ref(srv_conn_t *conn);
void srv_conn_unref(srv_conn_t *conn);

/* Whether the peer has gone; safe from any thread. */
static inline bool srv_conn_gone(srv_conn_t *conn) {
  return atomic_load_explicit(&conn->gone, memory_order_acquire);
}

#endif
