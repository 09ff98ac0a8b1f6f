/* SPDX-License-Identifier: Apache-2.0 */
/* One answer from the daemon: decode it and hand out the public result.
 *
 * A result is one allocation, a reply_t, of which the caller sees only the
 * member `r`, the public struct the schema rows decoded into: the message
 * bytes and the msgpack zone that its strings, arrays and bins point into
 * live in the same reply_t, so one pto_result_free() releases all of it and
 * nothing is copied twice.  The bytes are the connection's receive buffer
 * itself when the answer was large: freeing the result gives that buffer
 * back for the next answer (recv_buffer.c).
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"
#include "dispatch_pack.h"

typedef struct reply {
  msgpack_unpacked up;
  rxbuf_msg_t msg;   /* the whole message */
  bool msg_inside;   /* msg.bytes lie in this allocation, after outputs[] */
  size_t result_off; /* where the result object starts in bytes */
  proto_result_t r; /* the public result structs, decoded into in place */
  proto_bytes_t outputs[]; /* a dispatch's outputs, read the fast way */
} reply_t;

/* The sizing of the last dispatch result decoded on this thread, as the
 * daemon packs it: the next answers with the same bytes take the fast
 * path (client_reply_fast). */
static _Thread_local proto_sizing_bytes_t seen_sizing;

/* Outputs the fast path reads (on the stack); more take the general one. */
#define FAST_OUTPUTS_MAX 64u

static reply_t *reply_of(const void *result) {
  return (reply_t *)(void *)((char *)(uintptr_t)result - offsetof(reply_t, r));
}

static void reply_destroy(reply_t *rp) {
  if (!rp) return;
  msgpack_unpacked_destroy(&rp->up);
  if (!rp->msg_inside) rxbuf_msg_release(&rp->msg);
  free(rp);
}

void pto_result_free(const void *result) {
  if (result) reply_destroy(reply_of(result));
}

void pto_result_msgpack(const void *result, const void **ret_data, size_t *ret_len) {
  const reply_t *rp = reply_of(result);
  *ret_data = rp->msg.bytes + rp->result_off;
  *ret_len = rp->msg.len - rp->result_off;
}

/* Bytes of the msgpack integer starting at p (any width an encoder may
 * choose), 0 if p is not an integer. */
static size_t int_size(const uint8_t *p, size_t left) {
  size_t n = 0;
  if (left == 0) return 0;
  if (p[0] <= 0x7f || p[0] >= 0xe0)
    n = 1;
  else if (p[0] == 0xcc || p[0] == 0xd0)
    n = 2;
  else if (p[0] == 0xcd || p[0] == 0xd1)
    n = 3;
  else if (p[0] == 0xce || p[0] == 0xd2)
    n = 5;
  else if (p[0] == 0xcf || p[0] == 0xd3)
    n = 9;
  return n <= left ? n : 0;
}

/* A successful response is [1, msgid, nil, result]: the result is what
 * follows the nil.  Returns 0 when the header is not that shape. */
static size_t result_offset(const uint8_t *b, size_t len) {
  size_t off, n;
  if (len > 0 && b[0] == 0x94)
    off = 1;
  else if (len > 2 && b[0] == 0xdc)
    off = 3;
  else if (len > 4 && b[0] == 0xdd)
    off = 5;
  else
    return 0;
  for (int i = 0; i < 2; i++) { /* type, msgid */
    n = int_size(b + off, len - off);
    if (!n) return 0;
    off += n;
  }
  if (off >= len || b[off] != 0xc0) return 0;
  return off + 1 < len ? off + 1 : 0;
}

bool pto_ping_has_feature(const pto_ping_t *ping, const char *feature) {
  if (!ping || !feature) return false;
  for (uint32_t i = 0; i < ping->nfeatures; i++)
    if (ping->features[i] && strcmp(ping->features[i], feature) == 0) return true;
  return false;
}

/* A failed dispatch's dfx map into rp->r.dispatch.dfx; whether it had one. */
static bool error_dfx(reply_t *rp, const msgpack_object *error) {
  pto_error_t perr;
  pto_dfx_t *dfx = &rp->r.dispatch.dfx;
  return proto_dfx_decode_error(error, rp->up.zone, dfx, &perr) == 0 && proto_dfx_present(dfx);
}

static int decode_result(pto_client_t *c, reply_t *rp, proto_method_t m,
                         const proto_envelope_t *env, reply_outcome_t *ret) {
  pto_error_t perr;
  int rc;
  pto_error_clear(&perr);
  rc = proto_result_decode(m, env->result, rp->up.zone, &rp->r, &perr);
  if (rc == -PTO_E_INTERNAL) return -PTO_E_NO_MEMORY; /* the codec's out of memory */
  if (rc < 0) {
    ret->kind = REPLY_ERROR;
    client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                 "The daemon's answer to '%s' could not be decoded: %s Is the daemon a newer "
                 "protocol version than this client?",
                 proto_method_name(m), perr.message);
    memcpy(ret->err.key, perr.key, sizeof(ret->err.key)); /* "queue.depth", "outputs[1]" */
    return 0;
  }
  rp->result_off = result_offset(rp->msg.bytes, rp->msg.len);
  if (rp->result_off == 0) {
    ret->kind = REPLY_ERROR;
    client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                 "The daemon's answer to '%s' is not shaped [1, msgid, nil, result].",
                 proto_method_name(m));
    return 0;
  }
  /* Learn its sizing for the fast path (bytes that do not fit: every
   * answer keeps coming this way). */
  if (m == PROTO_M_DISPATCH)
    (void)proto_sizing_bytes_make(&seen_sizing, rp->r.dispatch.arena.key, &rp->r.dispatch.sizing);
  if (m == PROTO_M_PING) client_learn_device(c, rp->r.ping.device);
  if (m == PROTO_M_STATUS) client_learn_device(c, rp->r.status.device);
  ret->kind = REPLY_RESULT;
  ret->result = &rp->r; /* every member of the union is at its start */
  return 0;
}

int client_reply_decode(pto_client_t *c, rxbuf_msg_t *msg,
                        int (*method_of)(pto_client_t *c, uint32_t msgid), reply_outcome_t *ret) {
  reply_t *rp = calloc(1, sizeof(*rp));
  proto_envelope_t env;
  pto_error_t perr;
  int rc, m;

  memset(ret, 0, sizeof(*ret));
  pto_error_clear(&ret->err);
  pto_error_clear(&perr);
  if (!rp) {
    rxbuf_msg_release(msg);
    return -PTO_E_NO_MEMORY;
  }
  rp->msg = *msg;
  memset(msg, 0, sizeof(*msg));
  msgpack_unpacked_init(&rp->up);
  rc = proto_decode(rp->msg.bytes, rp->msg.len, &rp->up, &env, &perr);
  if (rc == -PTO_E_INTERNAL) { /* the codec's out of memory */
    reply_destroy(rp);
    return -PTO_E_NO_MEMORY;
  }
  if (rc < 0) {
    if (env.has_msgid && env.type == PROTO_MSG_RESPONSE) {
      ret->kind = REPLY_ERROR;
      ret->msgid = env.msgid;
    } else {
      ret->kind = REPLY_FATAL;
    }
    client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                 "The daemon sent a message that is not valid msgpack-RPC: %s", perr.message);
    reply_destroy(rp);
    return 0;
  }

  switch (env.type) {
    case PROTO_MSG_NOTIFICATION:
      if (proto_envelope_method_is(&env, "error")) {
        ret->kind = REPLY_FATAL;
        if (!env.params || proto_error_decode(env.params, &ret->err) < 0)
          client_error(&ret->err, PTO_E_PROTOCOL_ERROR,
                       "The daemon sent an error notification without a valid error map; it "
                       "closes the connection after one.");
      }
      break;
    case PROTO_MSG_REQUEST: break;
    case PROTO_MSG_RESPONSE:
      ret->msgid = env.msgid;
      m = method_of(c, env.msgid);
      if (m < 0) break;
      if (env.error) {
        ret->kind = REPLY_ERROR;
        if (proto_error_decode(env.error, &ret->err) < 0) {
          char why[sizeof(ret->err.message)];
          memcpy(why, ret->err.message, sizeof(why));
          client_error(&ret->err, PTO_E_PROTOCOL_ERROR, "The daemon's answer to '%s': %s",
                       proto_method_name((proto_method_t)m), why);
        } else if (m == PROTO_M_DISPATCH && error_dfx(rp, env.error)) {
          ret->result = &rp->r; /* the artefacts, for pto_client_error_dfx */
          return 0;
        }
        break;
      }
      rc = decode_result(c, rp, (proto_method_t)m, &env, ret);
      if (rc < 0) {
        reply_destroy(rp);
        return rc;
      }
      if (ret->kind == REPLY_RESULT) return 0; /* rp now belongs to the result */
      break;
  }
  reply_destroy(rp);
  return 0;
}

int client_reply_fast(pto_client_t *c, rxbuf_t *rx,
                      int (*method_of)(pto_client_t *c, uint32_t msgid), reply_outcome_t *ret) {
  proto_bytes_t outs[FAST_OUTPUTS_MAX];
  proto_dispatch_result_t r;
  const uint8_t *at = rxbuf_data(rx) + rx->start;
  uint32_t msgid;
  size_t len = proto_dispatch_response_match(at, rx->end - rx->start, &seen_sizing, &msgid, &r,
                                             outs, FAST_OUTPUTS_MAX);
  size_t head = sizeof(reply_t) + r.noutputs * sizeof(proto_bytes_t);
  bool inside = len < RXBUF_CHUNK; /* one allocation per answer: the result and its bytes */
  reply_t *rp;
  if (len == 0 || method_of(c, msgid) != PROTO_M_DISPATCH) return 0;
  rp = malloc(head + (inside ? len : 0));
  if (!rp) return -PTO_E_NO_MEMORY;
  memset(rp, 0, head);
  if (inside) {
    rp->msg = (rxbuf_msg_t){.bytes = (uint8_t *)rp + head, .len = len};
    rp->msg_inside = true;
    rxbuf_take_into(rx, len, rp->msg.bytes);
  } else if (rxbuf_take(rx, len, &rp->msg) < 0) {
    free(rp);
    return -PTO_E_NO_MEMORY;
  }
  for (uint32_t i = 0; i < r.noutputs; i++) { /* into the message's own bytes now */
    rp->outputs[i].len = outs[i].len;
    rp->outputs[i].ptr = outs[i].ptr ? rp->msg.bytes + (outs[i].ptr - at) : NULL;
  }
  r.outputs = rp->outputs;
  rp->r.dispatch = r;
  msgpack_unpacked_init(&rp->up);
  rp->result_off = result_offset(rp->msg.bytes, rp->msg.len);
  memset(ret, 0, sizeof(*ret));
  pto_error_clear(&ret->err);
  ret->kind = REPLY_RESULT;
  ret->msgid = msgid;
  ret->result = &rp->r;
  return 1;
}
