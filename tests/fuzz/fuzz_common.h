/* SPDX-License-Identifier: Apache-2.0 */
/* fuzz_common.h — what every libFuzzer harness of tests/fuzz shares.
 *
 * A harness checks invariants, not only "no crash": FUZZ_CHECK prints what
 * was expected and aborts, which libFuzzer reports as a crash and saves the
 * input.  The helpers here are header-only (static) so each harness stays
 * one C file plus this header.
 */
#ifndef PTOD_FUZZ_COMMON_H
#define PTOD_FUZZ_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>
#include <pto/errors.h>

#include "reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_CHECK(cond, ...)                                                         \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "%s:%d: invariant failed: %s\n  ", __FILE__, __LINE__, #cond); \
      fprintf(stderr, __VA_ARGS__);                                                   \
      fprintf(stderr, "\n");                                                          \
      abort();                                                                        \
    }                                                                                 \
  } while (0)

/* Whether a finding already reported is to be skipped: PTOD_FUZZ_KNOWN holds
 * a comma list of finding ids (tests/fuzz/regressions/README.md lists them).
 * A long campaign sets it to look past bugs that are known but not fixed
 * yet; the ctest runs never set it, so the regression inputs fail there
 * until the bug is fixed. */
static inline bool fuzz_known(const char *id) {
  static const char *known;
  static bool read;
  size_t n = strlen(id);
  if (!read) {
    known = getenv("PTOD_FUZZ_KNOWN");
    read = true;
  }
  for (const char *p = known; p && *p;) {
    const char *end = strchr(p, ',');
    size_t len = end ? (size_t)(end - p) : strlen(p);
    if (len == n && memcmp(p, id, n) == 0) return true;
    p = end ? end + 1 : p + len;
  }
  return false;
}

/* A failure's pto_error_t must say what failed: the code that was returned,
 * a non-empty message that fits its buffer. */
static inline void fuzz_check_error(int rc, const pto_error_t *err, const char *where) {
  FUZZ_CHECK(err->code == -rc, "%s returned %d but err.code is %d (%s)", where, rc, err->code,
             err->message);
  FUZZ_CHECK(err->message[0] != '\0', "%s returned %d with an empty message", where, rc);
  FUZZ_CHECK(memchr(err->message, '\0', sizeof(err->message)) != NULL,
             "%s left err.message unterminated", where);
  FUZZ_CHECK(memchr(err->key, '\0', sizeof(err->key)) != NULL, "%s left err.key unterminated",
             where);
  FUZZ_CHECK(memchr(err->hint, '\0', sizeof(err->hint)) != NULL, "%s left err.hint unterminated",
             where);
}

/* Unpack exactly one msgpack object from data[0..len) with msgpack-c, but
 * only after proto_reader has vouched for it (max_message = len): every
 * container count is then backed by bytes, so msgpack-c cannot be made to
 * allocate gigabytes for a 5-byte header.  Returns true when data is one
 * whole object (and *up holds it), false when it is not (up untouched). */
static inline bool fuzz_unpack_exact(const uint8_t *data, size_t len, msgpack_unpacked *up) {
  proto_reader_t r;
  size_t n = 0, off = 0;
  if (len == 0) return false;
  proto_reader_init(&r, len);
  if (proto_reader_feed(&r, data, len, &n, NULL) != 1 || n != len) return false;
  FUZZ_CHECK(msgpack_unpack_next(up, (const char *)data, len, &off) == MSGPACK_UNPACK_SUCCESS &&
                 off == len,
             "msgpack-c does not unpack a message proto_reader called complete (%zu bytes)", len);
  return true;
}

/* msgpack objects in a tree, counted as proto_reader counts them (a map
 * entry is two objects). */
static inline uint64_t fuzz_count_objects(const msgpack_object *o) {
  uint64_t n = 1;
  if (o->type == MSGPACK_OBJECT_ARRAY)
    for (uint32_t i = 0; i < o->via.array.size; i++) n += fuzz_count_objects(&o->via.array.ptr[i]);
  else if (o->type == MSGPACK_OBJECT_MAP)
    for (uint32_t i = 0; i < o->via.map.size; i++)
      n += fuzz_count_objects(&o->via.map.ptr[i].key) + fuzz_count_objects(&o->via.map.ptr[i].val);
  return n;
}

/* Whether two byte strings are the same. */
static inline bool fuzz_same_bytes(const void *a, size_t alen, const void *b, size_t blen) {
  return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

/* Whether two msgpack objects are the same value, floats compared bit for
 * bit (msgpack_object_equal says NaN differs from itself). */
static inline bool fuzz_same_object(const msgpack_object *a, const msgpack_object *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
    case MSGPACK_OBJECT_NIL: return true;
    case MSGPACK_OBJECT_BOOLEAN: return a->via.boolean == b->via.boolean;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: return a->via.u64 == b->via.u64;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: return a->via.i64 == b->via.i64;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: return memcmp(&a->via.f64, &b->via.f64, sizeof(double)) == 0;
    case MSGPACK_OBJECT_STR:
      return fuzz_same_bytes(a->via.str.ptr, a->via.str.size, b->via.str.ptr, b->via.str.size);
    case MSGPACK_OBJECT_BIN:
      return fuzz_same_bytes(a->via.bin.ptr, a->via.bin.size, b->via.bin.ptr, b->via.bin.size);
    case MSGPACK_OBJECT_EXT:
      return a->via.ext.type == b->via.ext.type &&
             fuzz_same_bytes(a->via.ext.ptr, a->via.ext.size, b->via.ext.ptr, b->via.ext.size);
    case MSGPACK_OBJECT_ARRAY:
      if (a->via.array.size != b->via.array.size) return false;
      for (uint32_t i = 0; i < a->via.array.size; i++)
        if (!fuzz_same_object(&a->via.array.ptr[i], &b->via.array.ptr[i])) return false;
      return true;
    case MSGPACK_OBJECT_MAP:
      if (a->via.map.size != b->via.map.size) return false;
      for (uint32_t i = 0; i < a->via.map.size; i++)
        if (!fuzz_same_object(&a->via.map.ptr[i].key, &b->via.map.ptr[i].key) ||
            !fuzz_same_object(&a->via.map.ptr[i].val, &b->via.map.ptr[i].val))
          return false;
      return true;
  }
  return false;
}

/* The input read as a script: fuzz_u8/u16/u32/u64 take little-endian
 * values from the front (0 past the end), fuzz_bytes up to n bytes (fewer
 * at the end).  The harnesses of daemon code (fuzz_server, fuzz_shm,
 * fuzz_http, fuzz_dfx) read their operations this way. */
typedef struct fuzz_in {
  const uint8_t *p;
  size_t left;
} fuzz_in_t;

static inline uint64_t fuzz_uint(fuzz_in_t *in, unsigned bytes) {
  uint64_t v = 0;
  for (unsigned i = 0; i < bytes && in->left > 0; i++, in->p++, in->left--)
    v |= (uint64_t)in->p[0] << (8 * i);
  return v;
}
static inline uint8_t fuzz_u8(fuzz_in_t *in) { return (uint8_t)fuzz_uint(in, 1); }
static inline uint16_t fuzz_u16(fuzz_in_t *in) { return (uint16_t)fuzz_uint(in, 2); }
static inline uint32_t fuzz_u32(fuzz_in_t *in) { return (uint32_t)fuzz_uint(in, 4); }
static inline uint64_t fuzz_u64(fuzz_in_t *in) { return fuzz_uint(in, 8); }

static inline const uint8_t *fuzz_bytes(fuzz_in_t *in, size_t n, size_t *ret_len) {
  const uint8_t *p = in->p;
  if (n > in->left) n = in->left;
  in->p += n;
  in->left -= n;
  *ret_len = n;
  return p;
}

/* No fd leaks: fuzz_fds_open(before) at the start of an input, then
 * fuzz_fds_check(before) fails if an fd below FUZZ_FD_SCAN is open that was
 * not (naming what it is).  A harness first runs one empty input, so what
 * a library opens once per process (libuv's signal pipe) is in `before`. */
#define FUZZ_FD_SCAN 128

/* One poll() for the whole range (POLLNVAL: not open), not a fcntl() per
 * fd: 256 system calls an input were a quarter of fuzz_requests' time. */
static inline void fuzz_fds_open(bool open[FUZZ_FD_SCAN]) {
  struct pollfd p[FUZZ_FD_SCAN];
  for (int fd = 0; fd < FUZZ_FD_SCAN; fd++) p[fd] = (struct pollfd){.fd = fd};
  FUZZ_CHECK(poll(p, FUZZ_FD_SCAN, 0) >= 0, "poll: %s", strerror(errno));
  for (int fd = 0; fd < FUZZ_FD_SCAN; fd++) open[fd] = !(p[fd].revents & POLLNVAL);
}

static inline void fuzz_fds_check(const bool before[FUZZ_FD_SCAN]) {
  bool after[FUZZ_FD_SCAN];
  fuzz_fds_open(after);
  for (int fd = 0; fd < FUZZ_FD_SCAN; fd++) {
    char link[64], target[256] = "";
    if (!after[fd] || before[fd]) continue;
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    (void)!readlink(link, target, sizeof target - 1);
    FUZZ_CHECK(false, "fd %d (%s) is still open after the input", fd, target);
  }
}

/* Print a buffer in hex after an invariant fails (for the report). */
static inline void fuzz_dump(const char *what, const void *p, size_t len) {
  const uint8_t *b = p;
  fprintf(stderr, "%s (%zu bytes):", what, len);
  for (size_t i = 0; i < len && i < 512; i++) fprintf(stderr, " %02x", b[i]);
  fprintf(stderr, "%s\n", len > 512 ? " ..." : "");
}

#endif
