/* SPDX-License-Identifier: Apache-2.0 */
#include "refbuf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int proto_refbuf_write(void *data, const char *buf, size_t len) {
  proto_refbuf_t *rb = data;
  if (len < PROTO_REF_MIN ||
      (rb->lo && (buf < rb->lo || buf > rb->hi || len > (size_t)(rb->hi - buf))))
    return msgpack_sbuffer_write(rb->sb, buf, len);
  if (rb->n == rb->cap) {
    size_t cap = rb->cap ? rb->cap * 2 : 4;
    proto_ref_t *grown = realloc(rb->ref, cap * sizeof(*grown));
    if (!grown) return -1;
    rb->ref = grown;
    rb->cap = cap;
  }
  rb->ref[rb->n++] = (proto_ref_t){.at = rb->sb->size, .ptr = buf, .len = len};
  return 0;
}

void proto_refbuf_begin(proto_refbuf_t *rb, msgpack_sbuffer *sb, const void *lo, const void *hi,
                        msgpack_packer *pk) {
  msgpack_sbuffer_clear(sb);
  rb->sb = sb;
  rb->lo = lo;
  rb->hi = hi;
  rb->n = 0;
  msgpack_packer_init(pk, rb, proto_refbuf_write);
}

size_t proto_refbuf_iov(const proto_refbuf_t *rb, struct iovec *iov) {
  size_t n = 0, from = 0;
  for (size_t i = 0; i < rb->n; i++) {
    if (rb->ref[i].at > from)
      iov[n++] = (struct iovec){rb->sb->data + from, rb->ref[i].at - from};
    iov[n++] = (struct iovec){(void *)(uintptr_t)rb->ref[i].ptr, rb->ref[i].len};
    from = rb->ref[i].at;
  }
  if (rb->sb->size > from) iov[n++] = (struct iovec){rb->sb->data + from, rb->sb->size - from};
  return n;
}

void proto_refbuf_free(proto_refbuf_t *rb) {
  free(rb->ref);
  rb->ref = NULL;
  rb->n = rb->cap = 0;
}
