/* SPDX-License-Identifier: Apache-2.0 */
/* client_internal.h — what the modules of libptoclient share (not installed).
 *
 *   client.c        the connection: connect, close, accessors (connection.h)
 *   pending.c       its pending requests: slots, delivery, waits
 *   receive.c       its reading: the socket into the receive buffer, framing
 *   send.c          its writing: one request
 *   client_errors.c the client error table, messages
 *   reply.c         one answer: decoding into the public result types, their memory
 *                   (a dispatch answer in the daemon's own layout: the fast way)
 *   config.c        pto_config_t
 *   calls.c         requests -> proto params, the blocking helpers
 *   recv_buffer.c   the connection's receive buffer, lent to large results
 *   multi.c         multi-device dispatch
 *   shm.c           shared-memory regions
 */
#ifndef CLIENT_INTERNAL_H
#define CLIENT_INTERNAL_H

#include <stdint.h>

#include <msgpack.h>
#include <pto/client.h>

#include "methods.h"

/* A moment on CLOCK_MONOTONIC in ms; CLIENT_FOREVER: no deadline. */
#define CLIENT_FOREVER INT64_MAX
int64_t client_now_ms(void);
/* now + timeout_ms, or CLIENT_FOREVER for a negative timeout. */
int64_t client_deadline(int timeout_ms);

/* Set err (may be NULL) to a client error with its default message when
 * fmt is NULL; returns -code. */
int client_error(pto_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefix err->message with "device N: " or "socket 'path': ". */
void client_error_name_device(pto_error_t *err, const pto_client_t *client);

/* --- config.c ------------------------------------------------------------ */

/* The wire form of a config: ret->extra points into config, so it is valid
 * while config is unchanged.  NULL config: an empty one. */
void client_config_to_proto(const pto_config_t *config, proto_config_t *ret);

/* --- calls.c ------------------------------------------------------------- */

/* req as proto's params: ret->params (NULL for a method without params)
 * points at ret->p, whose pointers are req's own (and ret->args, the
 * converted dispatch arguments: ret->few for up to CLIENT_FEW_ARGS, else
 * malloc'ed), so they are valid while req and ret are, where ret is (it
 * must not be copied).  Free with client_request_params_free.  Returns 0,
 * -PTO_E_INVALID_ARGUMENT (NULL where a pointer is needed, a bad kind) or
 * -PTO_E_NO_MEMORY, with err filled (and nothing to free). */
#define CLIENT_FEW_ARGS 8
typedef struct client_request_params {
  proto_params_t p;
  const proto_params_t *params;
  proto_arg_t *args;
  proto_arg_t few[CLIENT_FEW_ARGS];
} client_request_params_t;

int client_request_params(const pto_request_t *req, client_request_params_t *ret,
                          pto_error_t *err);
void client_request_params_free(client_request_params_t *rp);

/* --- send.c, pending.c: the deadline forms of send/wait -------------------- */

/* opts: NULL, or protocol 1.2's priority and request_id (checked here). */
int client_send_until(pto_client_t *c, const pto_request_t *req, const pto_call_opts_t *opts,
                      int64_t deadline, uint32_t *ret_msgid, pto_error_t *err);
int client_wait_until(pto_client_t *c, uint32_t msgid, int64_t deadline, void **ret_result,
                      pto_error_t *err);
/* Send one request given as proto params: the forms pto_request_t does not
 * carry (shm).  pass_fd >= 0 travels as SCM_RIGHTS on the sendmsg() that
 * carries the request's first bytes (the fd stays the caller's).  decode:
 * the method whose result shape the answer has (buffer.read into a region
 * answers buffer.write's {bytes}).  Errors as pto_client_send. */
int client_send_proto_until(pto_client_t *c, proto_method_t method, const proto_params_t *params,
                            int priority, proto_method_t decode, int pass_fd, int64_t deadline,
                            uint32_t *ret_msgid, pto_error_t *err);

/* --- shm.c: the regions of a connection ------------------------------------ */

/* Per connection, kept inside pto_client_t and written only by shm.c. */
typedef struct client_shm_state {
  struct pto_shm *regions; /* a list through pto_shm.next */
  int feature;             /* "shm" in ping's features: -1 not asked yet, 0 no, 1 yes */
} client_shm_state_t;

client_shm_state_t *client_shm_state(pto_client_t *c);
/* The kind pto_arg_shm() gives an argument it cannot build (no region, a
 * kind other than input/output/inout), for the dispatch to refuse. */
#define PTO_ARG_SHM_INVALID_ ((pto_arg_kind_t)0x7f)
/* pto_client_close: the regions outlive it, unmapped only by pto_shm_free. */
void client_shm_detach_all(pto_client_t *c);

/* Note the device number a ping/status answer reported. */
void client_learn_device(pto_client_t *c, uint32_t device);

/* The largest buffer a connection keeps for its next message (its receive
 * buffer given back, its encode buffer): a whole message of the daemon's
 * default max_message (64 MiB) and its envelope.  A fresh buffer of that
 * size costs 16384 page faults, more than copying it; larger ones go back
 * to the system, so that one huge transfer does not pin its size for the
 * rest of the connection's life. */
#define CLIENT_KEEP_MAX ((size_t)65 << 20)

/* --- recv_buffer.c: the bytes a connection receives ------------------------ */

/* One receive buffer per connection, kept and grown, never reallocated per
 * message.  A message shorter than RXBUF_CHUNK is copied out of it (a
 * malloc the size of the message, from the heap's warm memory).  A longer
 * one alone at the front of the buffer is not copied: the whole buffer is
 * lent to the result made from it, and comes back when that result is
 * freed, to receive the next large answer in pages already faulted in — a
 * fresh 64 MiB buffer per answer costs 16384 page faults, more than the
 * copy.  So the common path (call, read the result, free it, call again)
 * receives every answer into the same memory.  A result kept past the next
 * call keeps its bytes: the next answer then grows a new buffer (the one
 * given back last is kept, up to CLIENT_KEEP_MAX).  Blocks come back from
 * pto_result_free() on any thread (results may be freed anywhere), and
 * after pto_client_close(). */
#define RXBUF_CHUNK (64u * 1024u)

typedef struct rxbuf_block rxbuf_block_t;
typedef struct rxbuf_dock rxbuf_dock_t; /* where lent blocks come back */

typedef struct rxbuf {
  rxbuf_block_t *blk; /* NULL until needed */
  size_t start, end;  /* unread bytes; the current message starts at start */
  rxbuf_dock_t *dock;
} rxbuf_t;

/* One message taken out of the buffer: bytes[0..len), a copy of its own or
 * (dock non-NULL) a lent block.  Release it exactly once, on any thread. */
typedef struct rxbuf_msg {
  uint8_t *bytes;
  size_t len;
  rxbuf_dock_t *dock;
} rxbuf_msg_t;

/* Returns 0 or -PTO_E_NO_MEMORY. */
int rxbuf_init(rxbuf_t *rx);
void rxbuf_destroy(rxbuf_t *rx);
/* The buffer's bytes (NULL before the first reserve), and the room after end. */
uint8_t *rxbuf_data(const rxbuf_t *rx);
size_t rxbuf_room(const rxbuf_t *rx);
/* Room for at least want bytes after end (the unread bytes may move).
 * Returns 0 or -PTO_E_NO_MEMORY (nothing changed). */
int rxbuf_reserve(rxbuf_t *rx, size_t want);
/* Take the message [start, start + len) out.  Returns 0 or -PTO_E_NO_MEMORY
 * (nothing changed). */
int rxbuf_take(rxbuf_t *rx, size_t len, rxbuf_msg_t *ret);
/* Take it out into dst (len bytes of the caller's): for a message shorter
 * than RXBUF_CHUNK kept in memory of its own result's. */
void rxbuf_take_into(rxbuf_t *rx, size_t len, uint8_t *dst);
void rxbuf_msg_release(rxbuf_msg_t *msg);

/* --- reply.c --------------------------------------------------------------- */

/* Decode one whole message (taken over in every case: released with the
 * result made from it, or at once).
 * Outcomes, in *ret:
 *   kind REPLY_RESULT   msgid's successful result, result = the public struct
 *                       (free with pto_result_free) — only when the method
 *                       of msgid is known: method_of(msgid) >= 0
 *   kind REPLY_ERROR    msgid's error, err filled (the daemon's, or a
 *                       PROTOCOL_ERROR for an answer that cannot be decoded);
 *                       result non-NULL: a dispatch result holding only the
 *                       error's dfx (free with pto_result_free)
 *   kind REPLY_FATAL    an error notification, or a message that cannot be
 *                       tied to a request: err says why; the connection
 *                       must be closed
 *   kind REPLY_IGNORE   nothing to do (an answer nobody waits for, another
 *                       notification, a request from the daemon)
 * Returns 0 or -PTO_E_NO_MEMORY. */
typedef enum reply_kind { REPLY_IGNORE, REPLY_RESULT, REPLY_ERROR, REPLY_FATAL } reply_kind_t;

typedef struct reply_outcome {
  reply_kind_t kind;
  uint32_t msgid;
  void *result;
  pto_error_t err;
} reply_outcome_t;

int client_reply_decode(pto_client_t *c, rxbuf_msg_t *msg,
                        int (*method_of)(pto_client_t *c, uint32_t msgid), reply_outcome_t *ret);

/* The fast path before it: when the next message in rx is whole and a
 * dispatch answer laid out as this daemon packs them, with the sizing of
 * the last dispatch result decoded on this thread
 * (proto_dispatch_response_match), take it out of rx and make its result
 * without msgpack-c or the schema tables: 1 and *ret as
 * client_reply_decode would fill it.  0: not such a message, nothing taken
 * (decode it the general way); -PTO_E_NO_MEMORY. */
int client_reply_fast(pto_client_t *c, rxbuf_t *rx,
                      int (*method_of)(pto_client_t *c, uint32_t msgid), reply_outcome_t *ret);

#endif
