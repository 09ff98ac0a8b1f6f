/* SPDX-License-Identifier: Apache-2.0 */
/* msgpack_build.h — write msgpack test values as text, and read them back as
 * text, so a test states the exact wire shape it expects.
 *
 * The notation is JSON-like:
 *   nil true false     42  -7  1.5            "text" (\" \\ \n \xNN escapes)
 *   b"bytes" (a bin, same escapes)   bin(N) (a bin of N bytes i & 0xff)
 *   [a, b, ...]        {"key": value, ...}    (keys may be any value)
 *   raw(dd ff ff ff ff)  bytes written as they are (hex pairs), to build
 *                        malformed input
 * Integers are packed in their smallest form (non-negative as unsigned),
 * floats as float64.  Whitespace is free.
 */
#ifndef PTO_TEST_MSGPACK_BUILD_H
#define PTO_TEST_MSGPACK_BUILD_H

#include <stddef.h>

#include <msgpack.h>

/* Append the value(s) written in `text` to sb (several values may follow
 * each other, separated by whitespace).  Aborts the test on a syntax error. */
void mb_pack(msgpack_sbuffer *sb, const char *text);

/* A fresh buffer holding `text`; free with msgpack_sbuffer_destroy. */
msgpack_sbuffer mb_build(const char *text);

/* The notation for a decoded object (maps keep their order, bins as b"..."
 * with \xNN for bytes outside printable ASCII, longer than 32 bytes as
 * bin(N)).  Returns buf. */
char *mb_print(const msgpack_object *obj, char *buf, size_t len);

/* Unpack data and print it: the text of the whole buffer's first object. */
char *mb_print_bytes(const void *data, size_t size, char *buf, size_t len);

#endif
