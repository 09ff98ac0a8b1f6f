/* SPDX-License-Identifier: Apache-2.0 */
/* The bounded stream reader of proto/reader.h. */
#include "reader.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

enum elem_kind { ELEM_SCALAR, ELEM_INT, ELEM_PAYLOAD, ELEM_ARRAY, ELEM_MAP };

/* What one header byte says: how long the header is (with the size bytes and
 * the bytes of a fixed-width number), and what follows it. */
typedef struct header {
  enum elem_kind kind;
  uint32_t len;      /* header bytes, first byte included */
  uint32_t size_len; /* bytes of the big-endian length/count/value after the first byte */
  uint32_t fixed;    /* payload size known from the first byte (fixstr, fixext) */
  uint32_t first;    /* the first byte, for messages (header_name); not a char
                      * type, so storing it does not make the compiler reload r */
} header_t;

static uint64_t read_be(const uint8_t *p, uint32_t n) {
  uint64_t v = 0;
  for (uint32_t i = 0; i < n; i++) v = (v << 8) | p[i];
  return v;
}

/* Returns false for the reserved byte 0xc1.  The fields are written one
 * by one, the common one-byte headers first: this runs for every object
 * of every message. */
static bool classify(uint8_t b, header_t *h) {
  static const uint32_t pow2[4] = {1, 2, 4, 8};
  h->first = b;
  h->len = 1;
  h->size_len = 0;
  h->fixed = 0;
  if (b <= 0x7f || b >= 0xe0) { /* fixint */
    h->kind = ELEM_INT;
    return true;
  }
  if (b <= 0xbf) { /* fixmap, fixarray, fixstr */
    h->kind = b <= 0x8f ? ELEM_MAP : b <= 0x9f ? ELEM_ARRAY : ELEM_PAYLOAD;
    h->fixed = b <= 0x9f ? b & 0x0fu : b & 0x1fu;
    return true;
  }
  h->kind = ELEM_SCALAR; /* nil, false, true unless a case below says otherwise */
  if (b == 0xc1) {
    return false;
  } else if (b >= 0xc4 && b <= 0xc6) {
    h->kind = ELEM_PAYLOAD;
    h->size_len = pow2[b - 0xc4];
  } else if (b >= 0xc7 && b <= 0xc9) { /* ext: length, then a type byte of the header */
    h->kind = ELEM_PAYLOAD;
    h->len = 2;
    h->size_len = pow2[b - 0xc7];
  } else if (b == 0xca || b == 0xcb) {
    h->len = b == 0xca ? 5 : 9;
  } else if (b >= 0xcc && b <= 0xd3) {
    h->kind = ELEM_INT;
    h->len = 1 + pow2[(b - 0xcc) & 3u];
  } else if (b >= 0xd4 && b <= 0xd8) {
    h->kind = ELEM_PAYLOAD;
    h->len = 2;
    h->fixed = 1u << (b - 0xd4);
  } else if (b >= 0xd9 && b <= 0xdb) {
    h->kind = ELEM_PAYLOAD;
    h->size_len = pow2[b - 0xd9];
  } else if (b == 0xdc || b == 0xdd) {
    h->kind = ELEM_ARRAY;
    h->size_len = b == 0xdc ? 2 : 4;
  } else if (b == 0xde || b == 0xdf) {
    h->kind = ELEM_MAP;
    h->size_len = b == 0xde ? 2 : 4;
  }
  h->len += h->size_len;
  return true;
}

/* What a header is, for messages. */
static const char *header_name(const header_t *h) {
  uint32_t b = h->first;
  switch (h->kind) {
    case ELEM_MAP: return "map header";
    case ELEM_ARRAY: return "array header";
    case ELEM_PAYLOAD:
      if ((b >= 0xa0 && b <= 0xbf) || (b >= 0xd9 && b <= 0xdb)) return "str header";
      return b >= 0xc4 && b <= 0xc6 ? "bin header" : "ext header";
    default: return "value";
  }
}

/* The value of an integer header, and whether it is >= 0. */
static bool int_value(const uint8_t *p, const header_t *h, uint64_t *ret) {
  uint8_t b = p[0];
  if (b <= 0x7f) {
    *ret = b;
    return true;
  }
  if (b >= 0xcc && b <= 0xcf) {
    *ret = read_be(p + 1, h->len - 1);
    return true;
  }
  if (b >= 0xd0 && b <= 0xd3) {
    uint32_t n = h->len - 1;
    uint64_t v = read_be(p + 1, n);
    if (v >> (8 * n - 1)) return false; /* sign bit set */
    *ret = v;
    return true;
  }
  return false; /* negative fixint */
}

void proto_reader_init(proto_reader_t *r, size_t max_message) {
  memset(r, 0, sizeof(*r));
  r->max_message = max_message;
  proto_reader_reset(r);
}

/* Field by field: remaining[d] for d >= 1 is written whenever depth d is
 * opened, so the array is not cleared for every message. */
void proto_reader_reset(proto_reader_t *r) {
  r->offset = 0;
  r->need = 1;
  r->skip = 0;
  r->objects = 0;
  r->declared = 1;
  r->depth = 0;
  r->top_count = 0;
  r->has_msgid = false;
  r->msgid = 0;
  r->remaining[0] = 1;
}

void proto_reader_set_limits(proto_reader_t *r, size_t max_message, uint64_t max_objects) {
  r->max_message = max_message;
  r->max_objects = max_objects;
}

bool proto_reader_msgid(const proto_reader_t *r, uint32_t *ret_msgid) {
  if (r->has_msgid && ret_msgid) *ret_msgid = r->msgid;
  return r->has_msgid;
}

uint64_t proto_reader_objects(const proto_reader_t *r) { return r->objects; }

static int failed_before(proto_reader_t *r, pto_error_t *err) {
  r->remaining[0] = UINT64_MAX;
  return pto_error_set(err, PTO_E_INVALID_REQUEST,
                       "The message stream failed earlier and cannot be resynchronised; "
                       "reset the reader and start a new connection.");
}

/* claim: the count or length the header announced, or 0 when the header
 * itself does not fit. */
static int too_large(proto_reader_t *r, const header_t *h, uint64_t claim, uint64_t least,
                     pto_error_t *err) {
  char what[96];
  const char *unit = h->kind == ELEM_ARRAY ? "elements" : h->kind == ELEM_MAP ? "entries" : "bytes";
  if (claim > 0)
    snprintf(what, sizeof(what), "the %s at byte %zu claims %" PRIu64 " %s", header_name(h),
             r->offset, claim, unit);
  else
    snprintf(what, sizeof(what), "it is still incomplete at byte %zu", r->offset);
  pto_error_set(err, PTO_E_MESSAGE_TOO_LARGE,
                "The message is larger than max_message (%zu bytes): %s, so it needs at least "
                "%" PRIu64 " bytes; send less per message or raise max_message.",
                r->max_message, what, least);
  if (err) {
    err->requested = least;
    err->capacity = r->max_message;
  }
  r->remaining[0] = UINT64_MAX;
  return -PTO_E_MESSAGE_TOO_LARGE;
}

/* Bookkeeping for the `[0, msgid` prefix of a request. */
static void note_msgid(proto_reader_t *r, const uint8_t *p, const header_t *h) {
  uint64_t index, v;
  if (r->depth != 1 || r->top_count == 0) return;
  index = r->top_count - r->remaining[1];
  if (index > 1) return;
  if (h->kind != ELEM_INT || !int_value(p, h, &v)) {
    r->top_count = 0; /* not a request: stop looking */
    return;
  }
  if (index == 0 && v != 0) r->top_count = 0;
  if (index == 1 && v <= UINT32_MAX) {
    r->has_msgid = true;
    r->msgid = (uint32_t)v;
  }
}

/* Skip what is left of a str/bin/ext payload, as far as len.  Returns
 * whether all of it is skipped. */
static bool skip_payload(proto_reader_t *r, size_t len) {
  uint64_t take = len - r->offset < r->skip ? len - r->offset : r->skip;
  r->offset += (size_t)take;
  r->skip -= take;
  r->need -= take;
  return r->skip == 0;
}

static int failed(proto_reader_t *r, int rc) {
  r->remaining[0] = UINT64_MAX;
  return rc;
}

/* Read the header at r->offset of buf[0, len): *h, and the bytes of
 * payload or the children it announces.  Returns 1 when all of it is
 * there, 0 when more bytes are needed, or the stream's error: a byte that
 * is not msgpack, nesting too deep, or a message that cannot fit
 * max_message. */
static int read_header(proto_reader_t *r, const uint8_t *buf, size_t len, header_t *h,
                       uint64_t *ret_payload, uint64_t *ret_children, pto_error_t *err) {
  const uint8_t *p = buf + r->offset;
  uint64_t payload = 0, children = 0, least, header_least;

  if (!classify(p[0], h))
    return failed(r, pto_error_set(err, PTO_E_INVALID_REQUEST,
                                   "The message holds the reserved byte 0xc1 at byte %zu, which "
                                   "is not valid msgpack; check the sender's encoder.",
                                   r->offset));
  if ((h->kind == ELEM_ARRAY || h->kind == ELEM_MAP) && r->depth >= PROTO_MAX_DEPTH)
    return failed(r, pto_error_set(err, PTO_E_INVALID_REQUEST,
                                   "The message nests containers more than %d deep (at byte %zu); "
                                   "send a flatter message.",
                                   PROTO_MAX_DEPTH, r->offset));
  /* The header alone must fit, before waiting for the rest of it (and
   * when it fits no more than its claim does, that is the error named). */
  header_least = (uint64_t)r->offset + h->len - 1 + r->need;
  if (len - r->offset < h->len) {
    if (header_least > r->max_message) return too_large(r, h, 0, header_least, err);
    return 0;
  }

  if (h->kind == ELEM_ARRAY || h->kind == ELEM_MAP) {
    children = h->size_len ? read_be(p + 1, h->size_len) : h->fixed;
    if (h->kind == ELEM_MAP) children *= 2;
  } else if (h->kind == ELEM_PAYLOAD) {
    payload = h->size_len ? read_be(p + 1, h->size_len) : h->fixed;
  }
  least = header_least + payload + children;
  if (least > r->max_message) {
    uint64_t claim = h->kind == ELEM_MAP ? children / 2 : children + payload;
    if (header_least > r->max_message) return too_large(r, h, 0, header_least, err);
    return too_large(r, h, claim, least, err);
  }
  *ret_payload = payload;
  *ret_children = children;
  return 1;
}

/* Count the children a container header announces against max_objects. */
static int count_objects(proto_reader_t *r, uint64_t children, pto_error_t *err) {
  r->declared += children;
  if (!r->max_objects || r->declared <= r->max_objects) return 0;
  pto_error_set(err, PTO_E_MESSAGE_TOO_LARGE,
                "The message holds more than max_objects = %" PRIu64 " msgpack objects (a "
                "container at byte %zu makes it at least %" PRIu64 "); each takes memory "
                "once decoded: send fewer per message or raise max_objects.",
                r->max_objects, r->offset, r->declared);
  if (err) {
    err->requested = r->declared;
    err->capacity = r->max_objects;
  }
  return failed(r, -PTO_E_MESSAGE_TOO_LARGE);
}

int proto_reader_feed(proto_reader_t *r, const void *data, size_t len, size_t *ret_length,
                      pto_error_t *ret_err) {
  const uint8_t *buf = data;
  if (r->remaining[0] == UINT64_MAX) return failed_before(r, ret_err);
  for (;;) {
    header_t h;
    uint64_t payload = 0, children = 0;
    int rc;

    if (r->skip > 0 && !skip_payload(r, len)) return 0;
    while (r->depth > 0 && r->remaining[r->depth] == 0) r->depth--;
    if (r->depth == 0 && r->remaining[0] == 0) {
      *ret_length = r->offset;
      return 1;
    }
    if (r->offset >= len) return 0;

    rc = read_header(r, buf, len, &h, &payload, &children, ret_err);
    if (rc <= 0) return rc;
    if (children > 0 && (rc = count_objects(r, children, ret_err)) != 0) return rc;
    if (r->depth == 1 && r->top_count != 0) note_msgid(r, buf + r->offset, &h);
    if (r->depth == 0 && h.kind == ELEM_ARRAY) r->top_count = (uint32_t)children;
    r->objects++;
    r->remaining[r->depth]--;
    r->offset += h.len;
    r->need = r->need - 1 + payload + children;
    r->skip = payload;
    if (children > 0) {
      r->depth++;
      r->remaining[r->depth] = children;
    }
  }
}
