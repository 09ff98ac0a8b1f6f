/* SPDX-License-Identifier: Apache-2.0 */
/* connection.h — the connection object that client.c, pending.c,
 * receive.c and send.c share (not installed; the rest of libptoclient sees
 * pto_client_t only through client_internal.h).
 *
 *   client.c   connect and close, the accessors
 *   pending.c  the requests waiting for their answers: slots, delivery,
 *              the dead connection, waits
 *   receive.c  reading the socket and framing the answers
 *   send.c     writing one request
 *
 * The socket is non-blocking and every wait is a poll() bounded by the
 * call's deadline.  While a request is being written, answers are read as
 * they come (a daemon never has to stop reading because our socket is
 * full of its answers), and kept in the request's slot until collected.
 */
#ifndef CLIENT_CONNECTION_H
#define CLIENT_CONNECTION_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "client_internal.h"
#include "paths.h"
#include "reader.h"
#include "refbuf.h"

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

/* The request being sent: its encoded bytes, the large bodies sent from
 * where they lie between them (refs.sb is &sb), and the iovecs of both
 * (kept between requests, grown as needed).  held: whole small requests
 * sent by the caller but not yet written (send.c says when that is), the
 * first held_sent of its bytes already on the wire. */
typedef struct send_out {
  msgpack_sbuffer sb;
  proto_refbuf_t refs;
  struct iovec *iov;
  size_t iov_cap;
  msgpack_sbuffer held;
  size_t held_sent;
} send_out_t;

struct pto_client {
  int fd; /* -1 once the connection is dead */
  char path[PTO_SOCKET_PATH_MAX];
  char path_warning[512]; /* built-in paths skipped as untrusted, or "" */
  int device;
  uint32_t next_msgid;

  rxbuf_t rx; /* bytes received */
  proto_reader_t reader;

  slot_t *slots; /* in the order sent */
  size_t nslots, slots_cap;

  send_out_t out;

  bool dead;
  pto_error_t dead_err; /* why; given to every later call */
  pto_dispatch_result_t *error_dfx; /* the last failed dispatch's artefacts */
  client_shm_state_t shm;
};

/* What poll() should wait until deadline: -1 for ever, else the ms left
 * (0 when past). */
int conn_poll_timeout(int64_t deadline);

/* --- pending.c ------------------------------------------------------------- */

/* The slot of request msgid, or NULL. */
slot_t *slot_find(pto_client_t *c, uint32_t msgid);
/* A new SLOT_SENT slot at the end; 0 or -PTO_E_NO_MEMORY. */
int slot_add(pto_client_t *c, proto_method_t method, uint32_t msgid);
/* Free what a slot holds / take it out of the list (s is then invalid). */
void slot_release(slot_t *s);
void slot_remove(pto_client_t *c, slot_t *s);
/* Take a finished slot's outcome and forget the slot; returns its rc. */
int slot_collect(pto_client_t *c, slot_t *s, void **ret_result, pto_error_t *err);
/* The method whose result shape msgid's answer has, -1 if none is awaited
 * (client_reply_decode's method_of). */
int slot_method_of(pto_client_t *c, uint32_t msgid);
/* Whether an answer received waits to be collected (a SLOT_DONE slot). */
bool slot_answer_waiting(const pto_client_t *c);
/* Apply one decoded answer to its slot. */
void conn_deliver(pto_client_t *c, reply_outcome_t *o);
/* The connection cannot be used any more.  why: the daemon's error
 * notification (given to every pending request as is), or NULL for a
 * closed / broken connection (each request is told which one it was). */
void conn_kill(pto_client_t *c, const pto_error_t *why);
/* Copy why the connection died into err (may be NULL); returns -code. */
int conn_dead_error(const pto_client_t *c, pto_error_t *err);

/* --- send.c ---------------------------------------------------------------- */

/* Whether requests are held, not yet written (never on a dead connection). */
bool conn_holding(const pto_client_t *c);
/* Write the held requests, reading answers meanwhile, at most until
 * deadline.  Returns 0, -PTO_E_TIMEOUT (what was not written stays held:
 * the connection is still usable) or -1 (the connection died). */
int conn_flush(pto_client_t *c, int64_t deadline);

/* --- receive.c -------------------------------------------------------------- */

/* Read what is there (the socket is non-blocking) and deliver every whole
 * message.  End of file or a reset kills the connection. */
void conn_read(pto_client_t *c);
/* Wait for the socket, at most until deadline.  Returns the poll events, 0
 * on timeout. */
short conn_poll(pto_client_t *c, short events, int64_t deadline);

#endif
