/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz proto_reader, the bounded stream reader (proto/reader.h).
 *
 * Input: [seed] [limit] stream...
 *   seed   how the stream is cut into reads: 0 one byte at a time, else
 *          random reads of 1 to 2^(1 + seed % 10) bytes (xorshift from seed);
 *   limit  max_message: 1 + limit * 257 (1 .. 65536), or 64 MiB for 255;
 *   stream msgpack messages back to back, as a connection delivers them.
 *
 * Checked:
 *   - the stream read all at once and in pieces gives the same messages
 *     (lengths, object counts, request msgids) and ends the same way (the
 *     same error with the same message and amounts, or the same bytes left
 *     over waiting for more);
 *   - bytes past what has arrived are never read: the pieces run works on a
 *     copy whose not-yet-arrived tail is ASan-poisoned;
 *   - every message the reader calls complete unpacks with msgpack-c to
 *     exactly that length, with as many objects as the reader counted, and
 *     proto_reader_msgid agrees with what the message really holds;
 *   - with max_message equal to the bytes there are, the reader never asks
 *     for more, and its verdict agrees with the runs above; a reserved byte
 *     0xc1 it rejects is one msgpack-c rejects too;
 *   - an error is sticky: feeding again fails until proto_reader_reset.
 * A legitimate difference with msgpack-c, not checked: the reader counts
 * every container towards its depth limit of 32, msgpack-c only non-empty
 * ones, so 32 nested arrays around an empty one pass msgpack-c but not the
 * reader.
 */
#include "fuzz_common.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define FUZZ_POISON(p, n)   ASAN_POISON_MEMORY_REGION(p, n)
#define FUZZ_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#endif
#endif
#ifndef FUZZ_POISON
#define FUZZ_POISON(p, n)   ((void)(p), (void)(n))
#define FUZZ_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* Both runs stop after this many messages, at the same point. */
#define MAX_MESSAGES 2048

typedef struct message {
  size_t start, len;
  uint64_t objects;
  bool has_msgid;
  uint32_t msgid;
} message_t;

typedef struct outcome {
  size_t count;
  message_t msg[MAX_MESSAGES];
  int rc;            /* 0: ran out of bytes (or messages), else the error */
  size_t end;        /* start of the message that failed or is incomplete */
  pto_error_t err;
} outcome_t;

static uint32_t xorshift(uint32_t *s) {
  uint32_t x = *s;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *s = x;
  return x;
}

/* Run a connection over data[0..len): reads of the sizes seed says (seed
 * < 0: everything in one read), each one fed to the reader for as many
 * messages as it completes. */
static void run(const uint8_t *data, size_t len, size_t max, int seed, outcome_t *out) {
  proto_reader_t r;
  uint8_t *buf = malloc(len ? len : 1);
  uint32_t rng = (uint32_t)seed * 2654435761u + 1;
  uint32_t max_read = seed > 0 ? 1u << (1 + seed % 10) : 1;
  size_t have = 0, start = 0;

  memset(out, 0, sizeof(*out));
  proto_reader_init(&r, max);
  if (len) memcpy(buf, data, len);
  FUZZ_POISON(buf, len);
  for (;;) {
    size_t more = seed < 0 ? len - have : 1 + xorshift(&rng) % max_read;
    size_t from = have & ~(size_t)7;
    have = len - have < more ? len : have + more;
    FUZZ_UNPOISON(buf + from, have - from);
    for (;;) {
      size_t n = 0;
      pto_error_t err;
      int rc;
      pto_error_clear(&err);
      rc = proto_reader_feed(&r, buf + start, have - start, &n, &err);
      if (rc == 1) {
        message_t *m = &out->msg[out->count++];
        FUZZ_CHECK(n >= 1 && n <= have - start && n <= max,
                   "a complete message of %zu bytes with %zu available and max_message %zu", n,
                   have - start, max);
        m->start = start;
        m->len = n;
        m->objects = proto_reader_objects(&r);
        m->has_msgid = proto_reader_msgid(&r, &m->msgid);
        start += n;
        proto_reader_reset(&r);
        if (out->count == MAX_MESSAGES) {
          out->end = start;
          goto done;
        }
        continue;
      }
      if (rc < 0) {
        fuzz_check_error(rc, &err, "proto_reader_feed");
        FUZZ_CHECK(rc == -PTO_E_INVALID_REQUEST || rc == -PTO_E_MESSAGE_TOO_LARGE,
                   "proto_reader_feed returned %d", rc);
        if (rc == -PTO_E_MESSAGE_TOO_LARGE)
          FUZZ_CHECK(err.requested > max && err.capacity == max,
                     "MESSAGE_TOO_LARGE with requested %llu, capacity %llu, max_message %zu",
                     (unsigned long long)err.requested, (unsigned long long)err.capacity, max);
        out->rc = rc;
        out->end = start;
        out->err = err;
        /* sticky until reset */
        FUZZ_CHECK(proto_reader_feed(&r, buf + start, have - start, &n, NULL) ==
                       -PTO_E_INVALID_REQUEST,
                   "a failed reader accepted more bytes");
        goto done;
      }
      FUZZ_CHECK(rc == 0, "proto_reader_feed returned %d", rc);
      break;
    }
    if (have == len) {
      out->end = start;
      break;
    }
  }
done:
  FUZZ_UNPOISON(buf, len);
  free(buf);
}

/* What msgpack-c makes of one complete message. */
static void check_with_msgpack(const uint8_t *data, const message_t *m) {
  msgpack_unpacked up;
  size_t off = 0;
  msgpack_unpack_return ur;
  const msgpack_object *root;
  bool request_like;

  msgpack_unpacked_init(&up);
  ur = msgpack_unpack_next(&up, (const char *)data + m->start, m->len, &off);
  if (ur != MSGPACK_UNPACK_SUCCESS || off != m->len) fuzz_dump("message", data + m->start, m->len);
  FUZZ_CHECK(ur == MSGPACK_UNPACK_SUCCESS && off == m->len,
             "the reader said one message of %zu bytes; msgpack-c says %d after %zu bytes", m->len,
             (int)ur, off);
  root = &up.data;
  FUZZ_CHECK(fuzz_count_objects(root) == m->objects,
             "the reader counted %llu objects, msgpack-c %llu", (unsigned long long)m->objects,
             (unsigned long long)fuzz_count_objects(root));
  request_like = root->type == MSGPACK_OBJECT_ARRAY && root->via.array.size >= 2 &&
                 root->via.array.ptr[0].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
                 root->via.array.ptr[0].via.u64 == 0 &&
                 root->via.array.ptr[1].type == MSGPACK_OBJECT_POSITIVE_INTEGER &&
                 root->via.array.ptr[1].via.u64 <= UINT32_MAX;
  FUZZ_CHECK(m->has_msgid == request_like, "proto_reader_msgid says %d, the message says %d",
             m->has_msgid, request_like);
  if (request_like)
    FUZZ_CHECK(m->msgid == root->via.array.ptr[1].via.u64, "msgid %u, the message holds %llu",
               m->msgid, (unsigned long long)root->via.array.ptr[1].via.u64);
  msgpack_unpacked_destroy(&up);
}

static outcome_t whole, pieces;

int LLVMFuzzerTestOneInput(const uint8_t *in, size_t size) {
  const uint8_t *data;
  size_t len, max;
  int seed;

  if (size < 2) return 0;
  seed = in[0];
  max = in[1] == 255 ? (size_t)64 << 20 : 1 + (size_t)in[1] * 257;
  data = in + 2;
  len = size - 2;

  run(data, len, max, -1, &whole);
  run(data, len, max, seed, &pieces);

  FUZZ_CHECK(whole.count == pieces.count, "%zu messages at once, %zu in pieces (seed %d)",
             whole.count, pieces.count, seed);
  for (size_t i = 0; i < whole.count; i++) {
    const message_t *a = &whole.msg[i], *b = &pieces.msg[i];
    FUZZ_CHECK(a->start == b->start && a->len == b->len && a->objects == b->objects &&
                   a->has_msgid == b->has_msgid && (!a->has_msgid || a->msgid == b->msgid),
               "message %zu: at once %zu+%zu (%llu objects), in pieces %zu+%zu (%llu objects)", i,
               a->start, a->len, (unsigned long long)a->objects, b->start, b->len,
               (unsigned long long)b->objects);
    check_with_msgpack(data, a);
  }
  FUZZ_CHECK(whole.rc == pieces.rc && whole.end == pieces.end,
             "at once: rc %d at byte %zu; in pieces: rc %d at byte %zu (seed %d)", whole.rc,
             whole.end, pieces.rc, pieces.end, seed);
  if (whole.rc < 0)
    FUZZ_CHECK(strcmp(whole.err.message, pieces.err.message) == 0 &&
                   whole.err.requested == pieces.err.requested &&
                   whole.err.capacity == pieces.err.capacity,
               "different errors:\n  at once:   %s\n  in pieces: %s", whole.err.message,
               pieces.err.message);

  /* max_message = the bytes there are: a verdict, never "need more". */
  if (len > 0) {
    proto_reader_t r;
    pto_error_t err;
    size_t n = 0;
    int rc;
    pto_error_clear(&err);
    proto_reader_init(&r, len);
    rc = proto_reader_feed(&r, data, len, &n, &err);
    FUZZ_CHECK(rc != 0, "with max_message = %zu bytes available the reader asked for more", len);
    if (whole.count > 0)
      FUZZ_CHECK(rc == 1 && n == whole.msg[0].len,
                 "the first message is %zu bytes, but with max_message %zu: rc %d, %zu bytes",
                 whole.msg[0].len, len, rc, n);
    if (rc == -PTO_E_INVALID_REQUEST) {
      FUZZ_CHECK(whole.count == 0 && whole.rc < 0,
                 "the reader rejects the first message with max_message %zu (%s) but not with %zu",
                 len, err.message, max);
      if (strstr(err.message, "0xc1")) {
        /* Safe to hand to msgpack-c: every header before the 0xc1 passed
         * the max_message = len check. */
        msgpack_unpacked up;
        size_t off = 0;
        msgpack_unpack_return ur;
        msgpack_unpacked_init(&up);
        ur = msgpack_unpack_next(&up, (const char *)data, len, &off);
        FUZZ_CHECK(ur == MSGPACK_UNPACK_PARSE_ERROR,
                   "the reader rejects a 0xc1 byte (%s), msgpack-c returns %d", err.message,
                   (int)ur);
        msgpack_unpacked_destroy(&up);
      }
    }
  }
  return 0;
}
