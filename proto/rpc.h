/* SPDX-License-Identifier: Apache-2.0 */
/* proto/rpc.h — msgpack-RPC envelopes and the wire error map.
 *
 *   request       [0, msgid, method, params]   msgid uint32, method str
 *   response      [1, msgid, error, result]    error nil or an error map
 *   notification  [2, method, params]
 * where params is [] or [map] (named parameters, docs/protocol.md).
 *
 * Encoding writes through a msgpack_packer over a msgpack_sbuffer the caller
 * owns; the *_begin functions write the envelope up to the last element,
 * which the caller then packs itself (proto/methods.h does it for every
 * method).  Encoders return 0 or -ENOMEM (the buffer could not grow; its
 * contents are then unusable).
 *
 * Decoding (proto_decode) unpacks one complete message — one that
 * proto_reader found — into a msgpack_unpacked the caller owns.  Lifetime:
 * msgpack-c does not copy str/bin payloads; the decoded objects point into
 * the caller's input bytes, and the containers live in unpacked->zone.  So
 * everything proto_decode and proto/methods.h hand back is valid until the
 * caller frees or overwrites the input bytes, or reuses/destroys the
 * unpacked (msgpack_unpacked_destroy), whichever comes first.
 *
 * Nothing here allocates except msgpack-c (zone, sbuffer) and nothing logs.
 */
#ifndef PROTO_RPC_H
#define PROTO_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>
#include <pto/errors.h>

#include "describe.h"

typedef enum proto_msg_type {
  PROTO_MSG_REQUEST = 0,
  PROTO_MSG_RESPONSE = 1,
  PROTO_MSG_NOTIFICATION = 2,
} proto_msg_type_t;

/* One decoded message.  Pointers point into the unpacked message (see the
 * lifetime above). */
typedef struct proto_envelope {
  proto_msg_type_t type;
  uint32_t msgid;     /* request, response */
  const char *method; /* request, notification: NOT NUL-terminated */
  size_t method_len;
  /* request, notification: the params map, or NULL for `[]` */
  const msgpack_object *params;
  /* response: error is NULL on success (nil on the wire), else the error map
   * (decode it with proto_error_decode); result is the result object (nil
   * when error is set). */
  const msgpack_object *error;
  const msgpack_object *result;
  /* Set on failure too (see proto_decode): */
  bool has_msgid;  /* msgid was read: the failure belongs to that request/response */
  bool answerable; /* a request whose failure is answered with [1, msgid, error, nil] */
} proto_envelope_t;

/* Decode data[0..len), exactly one msgpack message, into *unpacked (which the
 * caller has initialised with msgpack_unpacked_init and frees with
 * msgpack_unpacked_destroy; a previous content is released first).
 *
 * Returns 0, or -PTO_E_INVALID_REQUEST with ret_err filled and ret_env
 * telling the two kinds of failure apart:
 *   - ret_env->answerable: the message is `[0, msgid, ...]` with a uint32
 *     msgid but something else is wrong (method not a str, params not []
 *     or [map], a wrong element count): answer ret_env->msgid with the
 *     error and keep the connection;
 *   - otherwise the message cannot be parsed as msgpack-RPC at all: the
 *     daemon sends proto_pack_error_notification and closes the connection.
 * The structure is checked again here (depth, claims against len), so
 * data need not have come through a proto_reader, but the reader is what
 * stops an oversized message before it is buffered whole.
 * May also return -PTO_E_INTERNAL, out of memory (msgpack-c could not
 * allocate its zone); ret_err says so.
 * When unpacked->zone is already set (proto_zone_init), the objects are
 * decoded into it; else msgpack-c makes one of its default size (8 KiB
 * twice over). */
int proto_decode(const void *data, size_t len, msgpack_unpacked *unpacked,
                 proto_envelope_t *ret_env, pto_error_t *ret_err);

/* proto_decode for a message a proto_reader delimited: data[0..len) is
 * exactly the message proto_reader_feed returned 1 for, so its depth is
 * bounded and every count and length it claims lies within len; its
 * structure is not walked a second time.  Returns and fills what
 * proto_decode does. */
int proto_decode_delimited(const void *data, size_t len, msgpack_unpacked *unpacked,
                           proto_envelope_t *ret_env, pto_error_t *ret_err);

/* Make *z, a zone the caller holds (inside its own struct: no allocation
 * for the zone itself), a zone for proto_decode sized for `objects`
 * decoded objects and `extra` bytes more (what decoding params adds).
 * false: no memory (then z holds nothing to destroy).  The caller frees it
 * with msgpack_zone_destroy, never msgpack_zone_free, and so must clear
 * unpacked->zone before msgpack_unpacked_destroy. */
bool proto_zone_init(msgpack_zone *z, uint64_t objects, size_t extra);

/* The heap bytes z's chunks take (msgpack-c's chunks start with the
 * pointer to the next one, as in every release since 0.5; the zone itself
 * is not opaque), with malloc_usable_size; the zone struct is its
 * holder's.  0 for NULL. */
size_t proto_zone_bytes(const msgpack_zone *z);

/* Whether the envelope's method is `name` (a NUL-terminated string). */
bool proto_envelope_method_is(const proto_envelope_t *env, const char *name);

/* [0, msgid, method, — the caller packs params next (an array). */
int proto_pack_request_begin(msgpack_packer *pk, uint32_t msgid, const char *method);
/* [1, msgid, nil, — the caller packs the result next. */
int proto_pack_response_begin(msgpack_packer *pk, uint32_t msgid);
/* [1, msgid, {error map}, nil] — complete. */
int proto_pack_response_error(msgpack_packer *pk, uint32_t msgid, const pto_error_t *err);
/* [2, method, — the caller packs params next (an array). */
int proto_pack_notification_begin(msgpack_packer *pk, const char *method);
/* [2, "error", [{error map}]] — what the daemon sends before it closes a
 * connection whose bytes cannot be parsed. */
int proto_pack_error_notification(msgpack_packer *pk, const pto_error_t *err);

/* The same two, as whole messages appended to sb. */
int proto_encode_error_response(msgpack_sbuffer *sb, uint32_t msgid, const pto_error_t *err);
int proto_encode_error_notification(msgpack_sbuffer *sb, const pto_error_t *err);

/* The error map: {"code", "name", "message"} and, when set in err, the
 * detail keys "ring" (ring >= 0), "requested" and "capacity" (ring >= 0, or
 * either one non-zero), "hint" and "key" (non-empty).  An empty message is
 * sent as the table's default message; an unknown code's name as "UNKNOWN". */
int proto_pack_error_map(msgpack_packer *pk, const pto_error_t *err);
/* The same map header with room for `nextra` more key/value pairs, which
 * the caller packs right after. */
int proto_pack_error_map_n(msgpack_packer *pk, const pto_error_t *err, uint32_t nextra);

/* Decode an error map into *ret (copied, truncated to the fixed fields).
 * Lenient, so an older client still understands a newer daemon: unknown
 * keys are ignored; a missing "code" is taken from "name"; a missing message
 * becomes the table's default.  Returns 0, or -PTO_E_INVALID_REQUEST when
 * obj is not a map or has neither a usable code nor name (ret then says so,
 * with code PTO_E_INTERNAL, so it can still be shown). */
int proto_error_decode(const msgpack_object *obj, pto_error_t *ret);

/* Make room for `more` bytes at the end of sb in one step, so that packing a
 * large bin body afterwards copies it once and never reallocates.  Returns 0
 * or -ENOMEM. */
int proto_sbuffer_reserve(msgpack_sbuffer *sb, size_t more);

/* A packer's writer into a msgpack_sbuffer (data = the sbuffer) that grows
 * it to exactly what it holds, where msgpack_sbuffer_write doubles from
 * 8 KiB: a message packed in one write into an empty sbuffer is one
 * allocation of its own length, with nothing to cut back afterwards.
 * Returns 0, or -1 when out of memory. */
int proto_sbuffer_append(void *data, const char *buf, size_t len);

#endif
