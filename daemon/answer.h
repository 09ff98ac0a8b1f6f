/* answer.h — an answer whose large byte strings are sent from where they
 * lie instead of being copied into the encoded message.
 *
 * A dispatch's outputs lie in the staging area (device memory, which on
 * the sim device is host memory).  answer_encode packs the response into
 * an sbuffer but for the bin bodies of at least ANSWER_REF_MIN bytes
 * inside [lo, hi): those are recorded as references to go out between the
 * sbuffer's pieces (answer_send: one writev for all, no copy).
 */
#ifndef PTOD_ANSWER_H
#define PTOD_ANSWER_H

#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "methods.h"
#include "server.h"

#define ANSWER_REF_MIN ((size_t)64 * 1024)

typedef struct answer_ref {
  size_t at; /* where in the sbuffer's bytes it goes */
  const char *ptr;
  size_t len;
} answer_ref_t;

typedef struct answer_refs {
  answer_ref_t *ref;
  uint32_t n, cap;
} answer_refs_t;

/* Device thread: sb cleared and filled, refs filled; 0 or -ENOMEM. */
int answer_encode(msgpack_sbuffer *sb, answer_refs_t *refs, uint32_t msgid, proto_method_t method,
                  const proto_result_t *result, const void *lo, const void *hi);

/* Loop thread: queue the answer on conn, taking sb's bytes and the refs;
 * done(arg) runs once every part is written or dropped. */
void answer_send(srv_conn_t *conn, msgpack_sbuffer *sb, answer_refs_t *refs,
                 void (*done)(void *arg), void *arg);

void answer_refs_free(answer_refs_t *refs);

#endif
