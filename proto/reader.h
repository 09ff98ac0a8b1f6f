/* SPDX-License-Identifier: Apache-2.0 */
/* proto/reader.h — the bounded stream reader: finds where one msgpack message
 * ends in the bytes received so far, before msgpack-c sees (and allocates for)
 * any of it.
 *
 * ptod's wire format has no length prefix (docs/protocol.md): messages are
 * msgpack objects back to back.  The reader walks the headers only — it skips
 * str/bin/ext payloads without reading them — and keeps a small fixed state,
 * so a connection can feed it the growing prefix of a message after every
 * read and pay O(total bytes) for the whole message, not O(n^2).
 *
 * Limits, enforced as soon as the offending header is seen:
 *   - a message longer than max_message: PTO_E_MESSAGE_TOO_LARGE.  Every
 *     element needs at least one byte, so a container count or a str/bin/ext
 *     length that cannot fit in what is left of max_message fails at its
 *     header (`dd ff ff ff ff` fails after 5 bytes, it never reaches an
 *     allocation).  err->requested is the least length the message would
 *     need, err->capacity is max_message.
 *   - containers nested deeper than PROTO_MAX_DEPTH (32): PTO_E_INVALID_REQUEST.
 *     (msgpack-c's own parser fails at the same depth with a misleading
 *     out-of-memory error; this keeps the reason precise.)
 *   - the reserved byte 0xc1: PTO_E_INVALID_REQUEST.
 *
 * Use, per connection:
 *     proto_reader_init(&r, max_message);
 *     on every read:  loop {
 *         rc = proto_reader_feed(&r, buf + start, have - start, &len, &err);
 *         rc == 0: need more bytes; keep buf[start..have) and read again.
 *         rc == 1: buf[start..start+len) is one whole message: decode it
 *                  (proto_decode), then start += len, proto_reader_reset(&r),
 *                  and feed again — the same read may hold the next message.
 *         rc < 0:  err says why; the connection cannot be resynchronised.
 *     }
 * The caller may move the bytes between calls (compact or grow its buffer),
 * as long as `data` always points at the first byte of the current message
 * and the bytes already fed are unchanged.
 *
 * Nothing here allocates, logs or touches a socket.
 */
#ifndef PROTO_READER_H
#define PROTO_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/errors.h>

#define PROTO_MAX_DEPTH 32

typedef struct proto_reader {
  size_t max_message;
  size_t offset;      /* bytes of the current message walked so far */
  uint64_t need;      /* the least number of bytes still to come */
  uint64_t skip;      /* payload bytes of the current str/bin/ext/number left to skip */
  uint64_t objects;   /* msgpack objects seen so far in this message */
  uint64_t max_objects; /* 0: no limit beyond max_message */
  uint64_t declared;  /* objects seen or announced by a container header */
  uint32_t depth;     /* containers open */
  uint32_t top_count; /* element count of the outermost array, 0 if not an array */
  bool has_msgid;
  uint32_t msgid;
  /* remaining[0] is the message itself (1 until it starts); remaining[d] is
   * what is left of the container open at depth d. */
  uint64_t remaining[PROTO_MAX_DEPTH + 1];
} proto_reader_t;

/* max_message: the largest message accepted, in bytes (>= 1). */
void proto_reader_init(proto_reader_t *r, size_t max_message);

/* Change the limits; they apply from the next header walked (call it
 * between messages).  max_objects: the most msgpack objects one message may
 * hold (0: none beyond max_message); a container header that announces more
 * fails at once with PTO_E_MESSAGE_TOO_LARGE, before msgpack-c allocates
 * its 24 bytes per object. */
void proto_reader_set_limits(proto_reader_t *r, size_t max_message, uint64_t max_objects);

/* Forget the current message and get ready for the next one (max_message is
 * kept).  Call after a complete message, before feeding the bytes after it. */
void proto_reader_reset(proto_reader_t *r);

/* Walk data[0..len): the bytes received so far of the current message (and
 * possibly of messages after it).  Returns:
 *   1  a complete message is data[0..*ret_length);
 *   0  not complete yet: feed again with the same prefix and more bytes;
 *   -PTO_E_MESSAGE_TOO_LARGE or -PTO_E_INVALID_REQUEST, with ret_err filled
 *      (ret_err may be NULL).  After an error the reader stays failed until
 *      proto_reader_reset(); the stream cannot be resynchronised.
 * ret_length is written only when 1 is returned. */
int proto_reader_feed(proto_reader_t *r, const void *data, size_t len, size_t *ret_length,
                      pto_error_t *ret_err);

/* Whether the message seen so far starts like a request, `[0, msgid, ...`
 * with msgid a uint32: lets the daemon answer a MESSAGE_TOO_LARGE request
 * with a response to that msgid instead of a bare notification. */
bool proto_reader_msgid(const proto_reader_t *r, uint32_t *ret_msgid);

/* Number of msgpack objects the current message holds (so far).  msgpack-c
 * allocates one msgpack_object (24 bytes) per object when it unpacks; a
 * caller that wants a tighter bound than max_message on that can check this
 * after a complete message. */
uint64_t proto_reader_objects(const proto_reader_t *r);

#endif
