/* SPDX-License-Identifier: Apache-2.0 */
#include "answer.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "dispatch_pack.h"
#include "rpc.h"

int answer_encode(msgpack_sbuffer *sb, proto_refbuf_t *refs, uint32_t msgid, proto_method_t method,
                  const proto_result_t *result, const void *lo, const void *hi) {
  msgpack_packer pk;
  int rc;
  proto_refbuf_begin(refs, sb, lo, hi, &pk);
  if (method == PROTO_M_DISPATCH)
    rc = proto_dispatch_response_pack(&pk, msgid, &result->dispatch);
  else
    rc = proto_pack_response_begin(&pk, msgid) < 0 ? -ENOMEM : proto_result_pack(&pk, method, result);
  if (rc < 0) {
    refs->n = 0;
    return -ENOMEM;
  }
  return 0;
}

typedef struct sent {
  srv_owner_t owner;
  char *bytes;
  void (*done)(void *arg);
  void *arg;
} sent_t;

static void sent_done(srv_owner_t *owner) {
  sent_t *s = (sent_t *)owner;
  free(s->bytes);
  s->done(s->arg);
  free(s);
}

void answer_send(srv_conn_t *conn, msgpack_sbuffer *sb, const proto_refbuf_t *refs,
                 uint64_t lent_bytes, void (*done)(void *arg), void *arg) {
  sent_t *s = calloc(1, sizeof(*s));
  struct iovec *iov = calloc(proto_refbuf_iov_max(refs), sizeof(*iov));
  size_t n;
  if (!s || !iov) {
    free(s);
    free(iov);
    done(arg);
    srv_conn_close(conn);
    return;
  }
  sb->data = srv_right_size(sb->data, sb->size);
  sb->alloc = sb->size;
  n = proto_refbuf_iov(refs, iov); /* points into sb's bytes, which s now owns */
  s->owner.done = sent_done;
  s->bytes = sb->data;
  s->done = done;
  s->arg = arg;
  sb->data = NULL;
  sb->size = sb->alloc = 0;
  srv_conn_send_parts(conn, iov, (unsigned)n, &s->owner,
                      srv_heap_bytes(s) + srv_heap_bytes(s->bytes) + lent_bytes);
  free(iov);
}
