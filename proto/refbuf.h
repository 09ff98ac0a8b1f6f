/* SPDX-License-Identifier: Apache-2.0 */
/* refbuf.h — msgpack output whose large byte strings stay where they lie.
 *
 * proto_refbuf_write is a msgpack write callback: pieces shorter than
 * PROTO_REF_MIN are copied into rb->sb, longer ones (msgpack-c writes
 * headers from a few bytes of its own, so these are always bin or str
 * bodies) are recorded as references — only those inside [lo, hi) when lo
 * is set.  proto_refbuf_iov then lays the message out for one writev:
 * [encoded bytes, body, encoded bytes, ...].  The referenced memory must
 * hold still until the message is written.  Used for the daemon's answers
 * (outputs in device memory) and the client's requests (the caller's
 * inline data).
 */
#ifndef PTO_PROTO_REFBUF_H
#define PTO_PROTO_REFBUF_H

#include <stddef.h>
#include <sys/uio.h>

#include <msgpack.h>

#define PROTO_REF_MIN ((size_t)64 * 1024)

typedef struct proto_ref {
  size_t at; /* it goes before the encoded byte at `at` */
  const char *ptr;
  size_t len;
} proto_ref_t;

typedef struct proto_refbuf {
  msgpack_sbuffer *sb; /* the encoded bytes */
  const char *lo, *hi; /* lo NULL: any long piece by reference */
  proto_ref_t *ref;
  size_t n, cap;
} proto_refbuf_t;

int proto_refbuf_write(void *data, const char *buf, size_t len);

/* Start a message: sb cleared, rb emptied and pointed at sb and [lo, hi)
 * (lo NULL: any long piece), pk writing through proto_refbuf_write. */
void proto_refbuf_begin(proto_refbuf_t *rb, msgpack_sbuffer *sb, const void *lo, const void *hi,
                        msgpack_packer *pk);

/* The iovecs proto_refbuf_iov may fill: 2 n + 1. */
static inline size_t proto_refbuf_iov_max(const proto_refbuf_t *rb) { return 2 * rb->n + 1; }

/* Fill iov (proto_refbuf_iov_max entries) with the message in order,
 * leaving out empty pieces; returns the count. */
size_t proto_refbuf_iov(const proto_refbuf_t *rb, struct iovec *iov);

/* The references' array (not sb). */
void proto_refbuf_free(proto_refbuf_t *rb);

#endif
