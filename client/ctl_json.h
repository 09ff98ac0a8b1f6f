/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_json.h — ptoctl's JSON writer (no dependency): pretty-printed,
 * always valid (strings escaped, invalid UTF-8 replaced by U+FFFD,
 * non-finite floats written as null).
 *
 *   json_t j; json_init(&j, stdout);
 *   json_begin_object(&j); json_key(&j, "ok"); json_bool(&j, true); json_end_object(&j);
 *   json_finish(&j);   -> a final newline
 *
 * Msgpack values are written as their JSON counterparts; bins go through a
 * callback so that the caller decides what bytes become (a file name, hex).
 */
#ifndef CTL_JSON_H
#define CTL_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <msgpack.h>

#define JSON_MAX_DEPTH 64

typedef struct json {
  FILE *f;
  int depth;
  bool has_items[JSON_MAX_DEPTH + 1]; /* an element was written at this depth */
  bool is_array[JSON_MAX_DEPTH + 1];  /* the container at this depth is an array */
  bool after_key;                     /* the next value completes a "key": */
} json_t;

void json_init(json_t *j, FILE *f);
void json_begin_object(json_t *j);
void json_end_object(json_t *j);
void json_begin_array(json_t *j);
void json_end_array(json_t *j);
void json_key(json_t *j, const char *key);
void json_string(json_t *j, const char *s, size_t len);
void json_cstr(json_t *j, const char *s); /* NULL -> null */
void json_int(json_t *j, int64_t v);
void json_uint(json_t *j, uint64_t v);
void json_double(json_t *j, double v);
void json_bool(json_t *j, bool v);
void json_null(json_t *j);
/* Bytes as one lower-case hex string. */
void json_hex(json_t *j, const uint8_t *p, size_t len);
/* The end of the document: a newline. */
void json_finish(json_t *j);

/* How a bin is written: the callback writes exactly one value. */
typedef void (*json_bin_fn)(json_t *j, const uint8_t *p, size_t len, void *ctx);
/* A msgpack value; bin: NULL writes {"bytes": n, "hex": "..."}. */
void json_msgpack(json_t *j, const msgpack_object *o, json_bin_fn bin, void *ctx);
/* A whole encoded msgpack object (e.g. pto_result_msgpack()); false when it
 * cannot be decoded (nothing written then). */
bool json_msgpack_bytes(json_t *j, const void *data, size_t len, json_bin_fn bin, void *ctx);

#endif
