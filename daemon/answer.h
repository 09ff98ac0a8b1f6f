/* SPDX-License-Identifier: Apache-2.0 */
/* answer.h — a dispatch's answer whose large outputs are sent from the
 * staging area, where they lie, instead of being copied into the message.
 *
 * answer_encode packs the response into an sbuffer but for the bin bodies
 * of PROTO_REF_MIN bytes or more inside [lo, hi) (the staging area):
 * those are kept as references (proto/refbuf.h), and answer_send queues
 * the whole answer on the connection without copying them.
 */
#ifndef PTOD_ANSWER_H
#define PTOD_ANSWER_H

#include <stdint.h>

#include <msgpack.h>

#include "methods.h"
#include "refbuf.h"
#include "server.h"

/* Device thread: sb cleared and filled, refs filled; 0 or -ENOMEM. */
int answer_encode(msgpack_sbuffer *sb, proto_refbuf_t *refs, uint32_t msgid, proto_method_t method,
                  const proto_result_t *result, const void *lo, const void *hi);

/* Loop thread: queue the answer on conn, taking sb's bytes; done(arg) runs
 * once every part is written or dropped.  The answer is charged to conn
 * with the lent_bytes of the area its references lie in (the whole area:
 * it is held whole until done). */
void answer_send(srv_conn_t *conn, msgpack_sbuffer *sb, const proto_refbuf_t *refs,
                 uint64_t lent_bytes, void (*done)(void *arg), void *arg);

#endif
