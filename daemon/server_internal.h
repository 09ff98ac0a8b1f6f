/* SPDX-License-Identifier: Apache-2.0 */
/* server_internal.h — what server.c (the listener, the server as a whole)
 * and conn.c (one connection's bytes) share.  Nothing else includes it. */
#ifndef PTOD_SERVER_INTERNAL_H
#define PTOD_SERVER_INTERNAL_H

#include <sys/socket.h>
#include <sys/un.h>

#include "log.h"
#include "reader.h"
#include "server.h"

#define SRV_SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

struct srv {
  uv_loop_t *loop;
  uv_poll_t listener;
  int listen_fd;
  srv_options_t opts;
  srv_handlers_t handlers;
  char path[SRV_SUN_PATH_MAX];
  bool bound;       /* we created the socket file (unlink it at close) */
  bool activated;   /* systemd passed the socket */
  bool accepting;
  bool closing;
  bool listener_open;
  bool retry_open;        /* accept_retry's handle is open */
  bool accept_paused;     /* out of fds: the listener is not watched until accept_retry */
  uv_timer_t accept_retry;
  log_cause_t out_of_fds_log;
  uint32_t clients; /* connections not closing */
  uint64_t next_id;
  srv_conn_t *conns;
  int cork_depth;
  srv_conn_t *flush_list; /* connections with answers held while corked */
  uint64_t input, output; /* bytes held for all clients (srv_memory_t) */
  uint64_t held_peak;     /* the most input + output held since memory was last trimmed */
  bool pressured;         /* some connection is paused because input >= clients_memory */
  srv_conn_t *pass;       /* the one connection read while input >= clients_memory */
  uint32_t parked_fds;    /* memfds received, not yet taken, all connections (conn.c's) */
  uint32_t deferred;      /* connections deferred (srv_defer) */
  uv_idle_t go_on;        /* runs while some are: the next turn comes at once */
  bool go_on_open;
};

typedef struct out_chunk out_chunk_t;

struct srv_conn {
  uv_poll_t poll;
  uv_timer_t timer;
  srv_t *srv;
  int fd;
  uint64_t id;
  pid_t pid;
  uid_t uid;
  gid_t gid;
  char *rbuf; /* bytes received, [rpos, rlen) not yet a whole message */
  size_t rpos, rlen, rcap;
  size_t rcharged;        /* the most rbuf has held: what it is charged */
  uint64_t paused_ns;     /* when reading last stopped; 0: it is read */
  proto_reader_t reader;
  uint64_t msg_start_ns;  /* first byte of the message under way; 0: none */
  uint64_t idle_since_ns; /* when it last had nothing pending, partial or unsent */
  uint64_t flush_deadline_ns; /* srv_close: when unsent answers are given up */
  uint32_t pending;       /* messages handed on, not done */
  uint64_t held;          /* their charges */
  out_chunk_t *out_head, *out_tail;
  uint64_t out_bytes;
  int events;             /* what the poll handle watches now */
  bool closing;
  bool read_eof;          /* the peer shut down its sending side and still reads */
  bool close_after_write;
  bool failing;           /* srv_conn_fail: answer what is pending, then on_fatal */
  bool processing;        /* inside conn_process (srv_msg_done must not recurse) */
  bool flush_listed;
  bool write_blocked;     /* the socket refused bytes: poll for writable */
  bool deferred;          /* its turn ended with bytes read and not cut (srv_defer) */
  int fds[SRV_MAX_FDS];    /* received with SCM_RIGHTS, not yet taken, oldest first */
  unsigned fd_batch[SRV_MAX_FDS]; /* which recvmsg brought each (a counter) */
  unsigned nfds, batches;
  pto_error_t fail_err;
  bool fail_has_msgid;
  uint32_t fail_msgid;
  atomic_bool gone;       /* set once closing starts; read by the device thread */
  int refs;               /* the open handles count as one; each message as one */
  int open_handles;
  srv_conn_t *prev, *next, *flush_next;
  void *data;
};

/* The input a connection holds: its read buffer's charge and its messages'. */
static inline uint64_t conn_input(const srv_conn_t *conn) { return conn->rcharged + conn->held; }

/* conn_fds.c, for conn.c: the fds that came with a recvmsg, queued (the
 * reason the connection must fail, or NULL); all of them closed. */
const char *conn_park_rights(srv_conn_t *conn, struct msghdr *mh);
void conn_drop_parked_fds(srv_conn_t *conn);

/* conn.c, for server.c. */
void conn_update(srv_conn_t *conn);         /* recompute poll events and the timer */
void conn_go_on(srv_conn_t *conn);          /* cut the messages already read, as far as allowed */
void conn_flush(srv_conn_t *conn);          /* write what is queued, as far as it goes */
void conn_free_output(srv_conn_t *conn);
void conn_trim(srv_conn_t *conn);           /* free an empty read buffer kept for reuse */
void conn_close_after_flush(srv_conn_t *conn, uint64_t timeout_ms);

/* server.c, for conn.c: conn used up its turn with messages maybe left in
 * its buffer: conn_go_on it in the loop's next turn (conn->deferred; it
 * is not read meanwhile).  False when the server is closing: go on now. */
bool srv_defer(srv_t *srv, srv_conn_t *conn);
/* server.c, for conn.c: the input budget changed by delta bytes. */
void srv_account_input(srv_t *srv, int64_t delta);
/* server.c, for conn_output.c: the output budget changed by delta bytes. */
void srv_account_output(srv_t *srv, int64_t delta);
/* Whether conn may be read now under the all-clients input budget (it may
 * take the pass). */
bool srv_input_allows(srv_t *srv, srv_conn_t *conn);
/* conn is closing, or its message is done: give the pass up. */
void srv_release_pass(srv_t *srv, srv_conn_t *conn);
/* All clients' unsent answers passed clients_memory: close the heaviest. */
void srv_check_output(srv_t *srv);
void srv_conn_unlink(srv_conn_t *conn); /* freeing: off the server's list */

#endif
