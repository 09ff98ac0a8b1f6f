/* SPDX-License-Identifier: Apache-2.0 */
/* proto/dispatch_pack.h — dispatch's response, packed the cheap way.
 *
 * The daemon answers every dispatch; most of that answer repeats between
 * dispatches of one arena: the arena key, the sizing with its sources and
 * every map key.  proto_dispatch_response_pack writes the same bytes as
 * proto_pack_response_begin + proto_result_pack(PROTO_M_DISPATCH) (the
 * schema tables, which stay the definition: tests compare the two), but
 * packs the key and the sizing once per sizing and copies them after, and
 * writes the rest from fixed key bytes in a few writes to the packer: no
 * strlen, no formatted output, no walk of the tables.
 *
 * Thread: any.  The bytes made for a sizing are kept per thread (the
 * daemon's device thread is the one that answers dispatches); a result
 * with another key or sizing replaces them.
 *
 * The same layout read back (proto_dispatch_response_match) is the
 * client's fast path: an answer in it whose sizing bytes are those of the
 * last sizing decoded is read without msgpack-c or the tables.
 */
#ifndef PROTO_DISPATCH_PACK_H
#define PROTO_DISPATCH_PACK_H

#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "methods.h"

/* What one sizing packs to, from "key" to the end of the sizing map:
 * "key" <16 hex digits> "sizing" {values, sources}; about 330 bytes. */
#define PROTO_SIZING_BYTES_MAX 512u
typedef struct proto_sizing_bytes {
  bool valid;
  uint64_t key;
  pto_sizing_resolved_t sizing;
  size_t len;
  uint8_t bytes[PROTO_SIZING_BYTES_MAX];
} proto_sizing_bytes_t;

/* Make sb the bytes of key and sizing, unless it already is.  0, or
 * -ENOMEM (they do not fit; sb is left invalid). */
int proto_sizing_bytes_make(proto_sizing_bytes_t *sb, uint64_t key,
                            const pto_sizing_resolved_t *sizing);

/* The whole response [1, msgid, nil, result] into pk.  0, or -ENOMEM
 * when the packer's writer failed. */
int proto_dispatch_response_pack(msgpack_packer *pk, uint32_t msgid,
                                 const proto_dispatch_result_t *result);

/* Bytes of bin payload in the result (outputs and DFX artefacts), to
 * reserve before packing. */
size_t proto_dispatch_result_payload(const proto_dispatch_result_t *result);

/* The reader's fast path: whether b[0, len) starts with a whole response
 * in exactly the layout proto_dispatch_response_pack writes, with the
 * sizing of `sb` (valid) and at most max_outputs outputs.  Then returns
 * the message's length and fills *ret_msgid and *ret (outputs in
 * outputs[], pointing into b), as proto_result_decode would from the same
 * bytes; else 0 and nothing is used: the message is another shape (another
 * method, an error, DFX artefacts, another sizing, a number of another
 * form or range) or not all there yet, and takes the general decoder. */
size_t proto_dispatch_response_match(const uint8_t *b, size_t len, const proto_sizing_bytes_t *sb,
                                     uint32_t *ret_msgid, proto_dispatch_result_t *ret,
                                     proto_bytes_t *outputs, uint32_t max_outputs);

#endif
