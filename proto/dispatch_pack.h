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
 */
#ifndef PROTO_DISPATCH_PACK_H
#define PROTO_DISPATCH_PACK_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "methods.h"

/* The whole response [1, msgid, nil, result] into pk.  0, or -ENOMEM
 * when the packer's writer failed. */
int proto_dispatch_response_pack(msgpack_packer *pk, uint32_t msgid,
                                 const proto_dispatch_result_t *result);

/* Bytes of bin payload in the result (outputs and DFX artefacts), to
 * reserve before packing. */
size_t proto_dispatch_result_payload(const proto_dispatch_result_t *result);

#endif
