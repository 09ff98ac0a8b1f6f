#include "answer.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "rpc.h"

typedef struct ref_writer {
  msgpack_sbuffer *sb;
  answer_refs_t *refs;
  const char *lo, *hi;
} ref_writer_t;

/* msgpack's write callback: a large bin body from [lo, hi) by reference,
 * the rest copied. */
static int ref_write(void *data, const char *buf, size_t len) {
  ref_writer_t *w = data;
  answer_refs_t *r = w->refs;
  if (len < ANSWER_REF_MIN || buf < w->lo || buf > w->hi || len > (size_t)(w->hi - buf))
    return msgpack_sbuffer_write(w->sb, buf, len);
  if (r->n == r->cap) {
    uint32_t cap = r->cap ? r->cap * 2 : 4;
    answer_ref_t *grown = realloc(r->ref, cap * sizeof(*grown));
    if (!grown) return -1;
    r->ref = grown;
    r->cap = cap;
  }
  r->ref[r->n++] = (answer_ref_t){.at = w->sb->size, .ptr = buf, .len = len};
  return 0;
}

int answer_encode(msgpack_sbuffer *sb, answer_refs_t *refs, uint32_t msgid, proto_method_t method,
                  const proto_result_t *result, const void *lo, const void *hi) {
  ref_writer_t w = {.sb = sb, .refs = refs, .lo = lo, .hi = hi};
  msgpack_packer pk;
  msgpack_sbuffer_clear(sb);
  refs->n = 0;
  msgpack_packer_init(&pk, &w, ref_write);
  if (proto_pack_response_begin(&pk, msgid) < 0 || proto_result_pack(&pk, method, result) < 0) {
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

void answer_send(srv_conn_t *conn, msgpack_sbuffer *sb, answer_refs_t *refs,
                 void (*done)(void *arg), void *arg) {
  sent_t *s = calloc(1, sizeof(*s));
  struct iovec *iov = calloc(2 * (size_t)refs->n + 1, sizeof(*iov));
  size_t from = 0, size = sb->size;
  unsigned n = 0;
  if (!s || !iov) {
    free(s);
    free(iov);
    done(arg);
    srv_conn_close(conn);
    return;
  }
  s->owner.done = sent_done;
  s->bytes = sb->data;
  s->done = done;
  s->arg = arg;
  sb->data = NULL;
  sb->size = sb->alloc = 0;
  for (uint32_t i = 0; i < refs->n; i++) {
    iov[n++] = (struct iovec){s->bytes + from, refs->ref[i].at - from};
    iov[n++] = (struct iovec){(void *)(uintptr_t)refs->ref[i].ptr, refs->ref[i].len};
    from = refs->ref[i].at;
  }
  iov[n++] = (struct iovec){s->bytes + from, size - from};
  srv_conn_send_parts(conn, iov, n, &s->owner);
  free(iov);
}

void answer_refs_free(answer_refs_t *refs) {
  free(refs->ref);
  memset(refs, 0, sizeof(*refs));
}
