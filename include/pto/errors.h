/* SPDX-License-Identifier: Apache-2.0 */
/* pto/errors.h — the error codes of ptod and libptoclient.
 *
 * One table, PTO_ERROR_MAP, gives every error its name, its number and a
 * default message.  Codes below PTO_LOCAL_ERROR_FIRST (2000) are the wire
 * protocol's (docs/protocol.md): runtime codes keep the reference runtime's
 * numbers so its troubleshooting notes apply, daemon codes start at 1000.
 * Codes from 2000 up are libptoclient's own (the connection, the call's
 * timeout, an answer it cannot read): a daemon never sends them, and a
 * peer's error naming one is not taken as that code.
 *
 * Return values: one channel carries one kind of code.  PTO_E_* 1..11
 * have the numbers of EPERM..EAGAIN, so a negative int is only ever read
 * as the kind its function declares, and the pto_error_t parameter says
 * which:
 *   - A function that takes a pto_error_t returns 0 or -code, code one of
 *     PTO_E_*, never an errno value; the details go into the pto_error_t,
 *     which the caller owns (no allocation).  Out of memory is a PTO_E code
 *     too: PTO_E_INTERNAL from the shared codec (the daemon answers it),
 *     PTO_E_NO_MEMORY from libptoclient's API.  This is the whole public
 *     API of libptoclient, the codec's decoders (proto/), the sizing rules
 *     and the daemon's request path.
 *   - A function without one (encoders, paths, system wrappers,
 *     pto_size_parse) returns 0 or -errno.  Its caller that does take a
 *     pto_error_t converts the errno there, once, into a PTO_E_* code and a
 *     sentence; an errno value never travels further up.
 */
#ifndef PTO_ERRORS_H
#define PTO_ERRORS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* X(NAME, code, default message) */
#define PTO_ERROR_MAP(X)                                                                           \
  X(SCOPE_DEADLOCK, 1, "A scope already holds window-1 tasks of its ring.")                        \
  X(HEAP_RING_DEADLOCK, 2, "The task allocator could not reserve the heap bytes for another task.") \
  X(FLOW_CONTROL_DEADLOCK, 3, "The task window had no free slot for another task.")                \
  X(DEP_POOL_OVERFLOW, 4, "The dependency pool ran out of entries.")                               \
  X(INVALID_ARGS, 5, "The program's arguments are invalid.")                                       \
  X(EXPLICIT_ORCH_FATAL, 9, "The orchestration reported a fatal error.")                           \
  X(TENSORMAP_OVERFLOW, 11, "The tensor map ran out of entries.")                                  \
  X(SCHEDULER_TIMEOUT, 100, "The run made no progress within the run timeout.")                    \
  X(INVALID_REQUEST, 1000, "The request is malformed.")                                            \
  X(INVALID_CONFIG, 1001, "The configuration is invalid.")                                         \
  X(UNKNOWN_METHOD, 1002, "No such method.")                                                       \
  X(UNKNOWN_PROGRAM, 1003, "No such program.")                                                     \
  X(BUSY, 1004, "The admission queue is full; retry later.")                                       \
  X(DEADLINE_EXCEEDED, 1005, "The request could not start before its deadline.")                   \
  X(SHUTTING_DOWN, 1006, "The daemon is shutting down.")                                           \
  X(OUT_OF_MEMORY, 1007, "The device memory limit would be exceeded.")                             \
  X(NOT_FOUND, 1008, "No such buffer.")                                                            \
  X(ALREADY_EXISTS, 1009, "A buffer of that name already exists.")                                 \
  X(PERMISSION_DENIED, 1010, "This peer is not allowed to use the daemon.")                        \
  X(MESSAGE_TOO_LARGE, 1011, "The message is larger than max_message.")                            \
  X(CANCELLED, 1012, "The request was cancelled before it started.")                               \
  X(INTERNAL, 1099, "Internal error.")                                                             \
  X(CONNECT_FAILED, 2001, "Cannot connect to the daemon.")                                         \
  X(CONNECTION_LOST, 2002, "The connection to the daemon was closed.")                             \
  X(TIMEOUT, 2003, "The daemon did not answer within the call's timeout.")                         \
  X(PROTOCOL_ERROR, 2004, "The daemon's answer is not a valid ptod protocol message.")             \
  X(NO_MEMORY, 2005, "The client ran out of memory.")                                              \
  X(INVALID_ARGUMENT, 2006, "The client library was called with an invalid argument.")             \
  X(UNSUPPORTED, 2007, "The daemon does not speak this part of the protocol.")

/* The first of libptoclient's own codes; every wire code is below it. */
#define PTO_LOCAL_ERROR_FIRST 2000

enum pto_error_code {
  PTO_OK = 0,
#define PTO_ERROR_ENUM_(name, code, msg) PTO_E_##name = (code),
  PTO_ERROR_MAP(PTO_ERROR_ENUM_)
#undef PTO_ERROR_ENUM_
};

/* No ring applies to the error (pto_error_t.ring). */
#define PTO_NO_RING (-1)

/* Everything a failure carries to the wire error map.  Fixed-size so it can
 * live on the stack or inside a request without allocation.  Detail fields
 * are meaningful when set: ring >= 0, requested/capacity when ring >= 0, hint
 * and key when non-empty. */
typedef struct pto_error {
  int code;          /* PTO_OK or a pto_error_code */
  int ring;          /* PTO_NO_RING, or the ring 0..3 the error is about */
  uint64_t requested;
  uint64_t capacity;
  char key[64];      /* the offending key or argument name, when one */
  char message[512]; /* a full sentence a person can act on */
  char hint[256];    /* which field to raise and to what, or "" */
} pto_error_t;

/* "HEAP_RING_DEADLOCK" for 2; NULL for an unknown code. */
const char *pto_error_name(int code);
/* The table's default message; NULL for an unknown code. */
const char *pto_error_default_message(int code);
/* 2 for "HEAP_RING_DEADLOCK"; -1 for an unknown name. */
int pto_error_from_name(const char *name);

/* Reset to PTO_OK with no detail: code, ring and the numbers, and each text
 * field to "" (its first byte; the bytes after it keep what they held and
 * are not to be read, nor an error compared with memcmp). */
void pto_error_clear(pto_error_t *err);
/* Set code and a printf-formatted message, clear the detail; returns -code so
 * callers can write `return pto_error_set(err, PTO_E_X, "...")`.  err may be
 * NULL.  The message is truncated to fit. */
int pto_error_set(pto_error_t *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Cut text to at most len bytes on a UTF-8 character boundary (a
 * character split by the cut goes whole) and NUL-terminate it there; text
 * must have room for len + 1 bytes.  Returns the new length.  Every cut of
 * text that may hold a client's bytes goes through here, so a message
 * stays valid UTF-8. */
size_t pto_utf8_cut(char *text, size_t len);

#ifdef __cplusplus
}
#endif
#endif
