/* SPDX-License-Identifier: Apache-2.0 */
/* server.h — the Unix-socket listener and its connections.
 *
 * The server owns sockets and bytes.  It listens (on a path it binds, or on
 * the socket systemd passed), checks peer credentials, reads bytes into each
 * connection's buffer, cuts them into whole msgpack messages with the
 * bounded reader (proto/reader.h), hands each message to the service, and
 * writes answers.  It knows nothing of methods.  It reads and writes the
 * sockets itself (nonblocking recv/writev driven by uv_poll_t), so a
 * connection's bytes are never copied more than the protocol needs.
 *
 * It also owns the memory model of docs/reliability.md: every byte held for
 * a client is counted at what it takes in memory (srv_heap_bytes), per
 * connection and for all clients together —
 *   input:  the bytes received into the read buffer (it grows as they
 *           arrive, never to what a header announces), and every message
 *           handed on until the service is done with it (srv_msg_done): its
 *           copy, and what decoding it took (24 bytes per msgpack object
 *           until the service says, srv_msg_charge_decoded);
 *   output: answers queued and not yet written, each at its allocated size
 *           with what its owner holds for it (srv_conn_send_parts).
 * Flow control, instead of errors: a connection stops being read while it
 * has max_pending messages handed on and not done, or (with at least one
 * pending) holds input_limit bytes of input; reading resumes as answers go
 * out.  While all clients together hold clients_memory bytes of input, a
 * connection is read only while it holds less than SRV_INPUT_ALLOWANCE (so
 * small requests such as ping still get in and are answered), or when it
 * has the pass: one connection already in the middle of a message goes on,
 * so that message can finish; memory stays bounded by clients_memory +
 * max_clients * SRV_INPUT_ALLOWANCE + one message.  A connection whose
 * unsent answers take more than output_limit (not counting the one being
 * written) is closed, and so is the one holding the most when all
 * clients' unsent answers pass clients_memory.
 *
 * Turns: the messages already read from one connection are cut and handed
 * on for at most 1 ms per turn of the loop; the rest wait for the next
 * turn, after the other connections' bytes were read, so a client that
 * pipelines thousands of small requests delays the others by that much.
 * Small answers queued behind others share 16 KiB blocks, each charged
 * whole.
 *
 * Errors a connection cannot recover from (bytes that cannot be parsed, a
 * message over max_message): the server stops reading it, lets every
 * message already handed on be answered, then asks the service for the
 * final error (on_fatal), writes it and closes.
 *
 * Everything here runs on the loop thread, except srv_conn_gone(), which
 * any thread may call.
 */
#ifndef PTOD_SERVER_H
#define PTOD_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include <sys/types.h>

#include <uv.h>

#include <pto/errors.h>

#define SRV_MAX_IDS 64
/* What msgpack-c allocates per object it decodes (sizeof(msgpack_object)). */
#define SRV_DECODED_OBJECT_BYTES 24u
/* Input a connection may hold while all clients are over clients_memory. */
#define SRV_INPUT_ALLOWANCE ((uint64_t)64 * 1024)

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
  uint64_t max_objects;     /* msgpack objects per message */
  uint32_t max_pending;     /* messages handed on and not done, per connection */
  uint64_t input_limit;     /* bytes of input per connection before reading pauses */
  uint64_t clients_memory;  /* bytes held for all clients together */
  uint64_t client_timeout_ms; /* from a message's first byte to its last */
  uint64_t idle_timeout_ms; /* 0: none */
  uint64_t output_limit;    /* bytes of unsent answers per connection */
} srv_options_t;

typedef struct srv srv_t;
typedef struct srv_conn srv_conn_t;

/* One whole message, in memory of its own: the service keeps it as long as
 * the request needs it (msgpack-c's objects point into it) and gives it
 * back with srv_msg_done(). */
typedef struct srv_msg {
  char *data;
  size_t len;
  uint64_t charge;  /* bytes counted against its connection while it lives */
  uint64_t objects; /* msgpack objects in it (the reader's count) */
  uint64_t decoded; /* of charge, its decoded form's (srv_msg_charge_decoded) */
  size_t lent_cap;  /* data is the connection's read buffer, lent (its capacity); 0: a copy */
  size_t lent_charge; /* of charge, the lent buffer's (what it has held) */
} srv_msg_t;

/* What the server calls; the service implements them. */
typedef struct srv_handlers {
  /* A whole message arrived.  The handler owns *msg and must give it back
   * with srv_msg_done() exactly once, now or later. */
  void (*on_message)(srv_conn_t *conn, srv_msg_t *msg, void *data);
  /* The connection is going away (peer closed, error, limit, shutdown).
   * Requests still held for it must stop using it once done: their
   * srv_msg_done() keeps its memory valid until then. */
  void (*on_close)(srv_conn_t *conn, void *data);
  /* Every message handed on is done and the connection must go, for the
   * reason in err: the handler sends the peer its last message with
   * srv_conn_send — the response to *msgid when msgid is not NULL (the bad
   * message was a request we could tie to its msgid), else an error
   * notification.  The server closes once it is written. */
  void (*on_fatal)(srv_conn_t *conn, const pto_error_t *err, const uint32_t *msgid, void *data);
  void *data;
} srv_handlers_t;

/* Set up the listener: the socket systemd passed (LISTEN_FDS) when there is
 * one, else bind and listen on opts->socket_path (sockpath_bind: every
 * directory on the way checked, a stale socket of a dead daemon replaced, a
 * live one refused).  Connections wait in the backlog until srv_listen.
 * The options are copied.  On failure returns a negative error and a
 * sentence in ret_err; nothing is left behind (run the loop once so the
 * handles close). */
int srv_create(uv_loop_t *loop, const srv_options_t *opts, const srv_handlers_t *handlers,
               srv_t **ret_srv, pto_error_t *ret_err);

/* Start accepting. */
int srv_listen(srv_t *srv, pto_error_t *ret_err);

/* Stop accepting new connections (drain); existing ones go on. */
void srv_stop_accepting(srv_t *srv);

/* Close the listener and every connection; unlink the socket file if we
 * bound it.  A connection with answers not yet written stops reading and
 * closes once they are out, or after client_timeout if its peer does not
 * read them.  The server memory is released once the loop has run the
 * close callbacks; srv must not be used after. */
void srv_close(srv_t *srv);

/* Options that a reload may change live (limits, allow-lists); the socket
 * itself is fixed for the daemon's life.  A smaller max_message or
 * max_objects applies to each connection from its next message. */
void srv_update_options(srv_t *srv, const srv_options_t *opts);

/* How the socket was obtained, for logs: "systemd" or "bound". */
const char *srv_socket_origin(const srv_t *srv);
/* The path clients connect to: the one bound, or the passed socket's own. */
const char *srv_socket_path(const srv_t *srv);
uint32_t srv_client_count(const srv_t *srv);

/* Bytes held for all clients now (see the top of this file), and the
 * per-connection view: the bounds and the most one connection holds. */
typedef struct srv_memory {
  uint64_t input;  /* read buffers and messages not yet done */
  uint64_t output; /* answers not yet written */
  uint64_t limit;  /* clients_memory */
  uint64_t input_limit, output_limit; /* per connection */
  uint64_t most_input, most_output;   /* the most one connection holds */
} srv_memory_t;
void srv_memory(const srv_t *srv, srv_memory_t *ret);

/* File descriptors now (see srv_conn_take_fd): passed by clients and not
 * yet taken (at most SRV_MAX_FDS per connection; most_parked, the most one
 * connection holds), handed to the closer
 * (those and closed connections' sockets) and not yet closed (closer.h),
 * and the process's RLIMIT_NOFILE.  When
 * the daemon runs out of them, the listener is left alone for a while
 * instead of failing accept() in a loop; connections wait in the backlog. */
typedef struct srv_fds {
  uint64_t parked, most_parked, closing, limit;
} srv_fds_t;
void srv_fds(const srv_t *srv, srv_fds_t *ret);
/* The heap memory allocation p takes: its usable size and the allocator's
 * header word (0 for NULL).  What the memory model charges for p. */
size_t srv_heap_bytes(const void *p);
/* data (len bytes used of a larger malloc'ed buffer) cut to len when that
 * gives memory back; returns the buffer to use (data itself when not). */
char *srv_right_size(char *data, size_t len);

/* Queue bytes for the peer and take ownership of data (freed with free()).
 * The answer is cut to len (a buffer grown by doubling is right-sized) and
 * charged what it then takes in memory until written.
 * Written at once when the socket takes them, else as it drains; while the
 * server is corked, at srv_uncork (one writev for all).  Over output_limit
 * (or the connection holding the most when all clients' unsent answers
 * pass clients_memory) the connection is closed.  A no-op (data freed) once
 * the connection is closing. */
void srv_conn_send(srv_conn_t *conn, char *data, size_t len);

/* Bytes queued by reference (srv_conn_send_parts) belong to an owner:
 * done(owner) runs once, when every part is written or dropped with the
 * connection (perhaps before srv_conn_send_parts returns). */
typedef struct srv_owner {
  void (*done)(struct srv_owner *owner);
  unsigned parts; /* the server's count */
} srv_owner_t;

/* Queue the parts in order, as one answer, without copying them: as
 * srv_conn_send, and the memory stays the owner's until done(owner).
 * owner_bytes: what the owner holds for the answer (the memory the parts
 * lie in, whole), charged to the connection until done(owner). */
void srv_conn_send_parts(srv_conn_t *conn, const struct iovec *parts, unsigned nparts,
                         srv_owner_t *owner, uint64_t owner_bytes);

/* The service is done with msg (answered, or dropped because its client
 * went away): frees it, releases its charge and the connection's pending
 * slot, and resumes reading where flow control had paused it.  conn may
 * already be closed; its memory lives until its last message is done. */
void srv_msg_done(srv_conn_t *conn, srv_msg_t *msg);

/* What the service allocated to decode and hold msg (its request, the
 * decoded objects and params) is `bytes`: charged with msg from now on, in
 * place of the estimate made when it was read (SRV_DECODED_OBJECT_BYTES
 * per object). */
void srv_msg_charge_decoded(srv_conn_t *conn, srv_msg_t *msg, uint64_t bytes);

/* The connection sent something it cannot recover from (err): stop reading
 * it, answer what it has pending, then on_fatal and close. */
void srv_conn_fail(srv_conn_t *conn, const pto_error_t *err);

/* Cork the server around a batch of sends (the answers of every completion
 * found at once, of every message of one read): srv_uncork then writes each
 * connection's answers with one writev.  Nests; both must be called in the
 * same loop callback, so nothing is held across loop iterations. */
void srv_cork(srv_t *srv);
void srv_uncork(srv_t *srv);

/* File descriptors a client passes (SCM_RIGHTS, on the sendmsg() of a
 * request's bytes) queue on its connection in arrival order; a connection
 * that holds more than SRV_MAX_FDS unclaimed, or whose ancillary data was
 * truncated (MSG_CTRUNC), fails (srv_conn_fail).  srv_conn_take_fd hands
 * over the oldest (the caller closes it: a memfd, whose close never
 * waits), or returns -1 when none is queued.  Those never taken are
 * closed with the connection. */
#define SRV_MAX_FDS 8
/* Only memfds are kept: any other kind of fd is closed on arrival (off the
 * loop thread: closer.h) and taking it returns SRV_FD_REFUSED. */
#define SRV_FD_REFUSED (-2)
int srv_conn_take_fd(srv_conn_t *conn, unsigned *ret_together);
/* (*ret_together: how many fds came on the same sendmsg() as the one taken;
 * the others of them are closed, so a request that passed two loses both.) */

/* Close now (bytes not yet written are dropped). */
void srv_conn_close(srv_conn_t *conn);

/* The peer, as the kernel vouched for it (SO_PEERCRED). */
uint64_t srv_conn_id(const srv_conn_t *conn);
pid_t srv_conn_pid(const srv_conn_t *conn);
uid_t srv_conn_uid(const srv_conn_t *conn);
/* Messages handed on and not yet done. */
uint32_t srv_conn_pending(const srv_conn_t *conn);

/* The service's own per-connection state. */
void srv_conn_set_data(srv_conn_t *conn, void *data);
void *srv_conn_data(const srv_conn_t *conn);

/* Set once the connection starts closing; for the device thread, which
 * drops a queued job whose client is gone. */
atomic_bool *srv_conn_gone_flag(srv_conn_t *conn);
static inline bool srv_conn_gone(srv_conn_t *conn) {
  return atomic_load_explicit(srv_conn_gone_flag(conn), memory_order_acquire);
}

/* Answer buffers of this size or more should be backed by transparent
 * huge pages: a 4 KiB page fault costs 10-20 us on a virtual machine and a
 * fresh 64 MiB buffer takes 16384 of them, against 32 faults with 2 MiB
 * pages.  (Not a read buffer: it grows as bytes arrive, and a hint would
 * fault it in 2 MiB at a time beyond them.)  srv_buffer_hint(p, len) asks
 * the kernel for them (madvise MADV_HUGEPAGE on the 2 MiB-aligned part; a
 * no-op below the size or where THP is off). */
#define SRV_HUGE_BUFFER ((size_t)2 << 20)
void srv_buffer_hint(void *p, size_t len);

#endif
