/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl's JSON writer (ctl_json.h). */
#include "ctl_json.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

void json_init(json_t *j, FILE *f) {
  memset(j, 0, sizeof(*j));
  j->f = f;
}

static void indent(json_t *j) {
  fputc('\n', j->f);
  for (int i = 0; i < j->depth; i++) fputs("  ", j->f);
}

/* Before any value: nothing after a key; inside an object a comma and a new
 * line; inside an array a comma and a space (arrays stay on one line, so a
 * sizing reads [256, 256, 256, 256]). */
static void before_value(json_t *j) {
  if (j->after_key) {
    j->after_key = false;
    return;
  }
  if (j->depth > 0) {
    if (j->has_items[j->depth]) fputc(',', j->f);
    if (j->is_array[j->depth]) {
      if (j->has_items[j->depth]) fputc(' ', j->f);
    } else {
      indent(j);
    }
  }
  j->has_items[j->depth] = true;
}

static void open_container(json_t *j, char c) {
  before_value(j);
  fputc(c, j->f);
  if (j->depth < JSON_MAX_DEPTH) j->depth++;
  j->has_items[j->depth] = false;
  j->is_array[j->depth] = c == '[';
}

static void close_container(json_t *j, char c) {
  bool items = j->has_items[j->depth], array = j->is_array[j->depth];
  if (j->depth > 0) j->depth--;
  if (items && !array) indent(j);
  fputc(c, j->f);
}

void json_begin_object(json_t *j) {
  open_container(j, '{');
}
void json_end_object(json_t *j) {
  close_container(j, '}');
}
void json_begin_array(json_t *j) {
  open_container(j, '[');
}
void json_end_array(json_t *j) {
  close_container(j, ']');
}

/* Length of the valid UTF-8 sequence at p, 0 if invalid. */
static size_t utf8_len(const unsigned char *p, size_t left) {
  size_t n;
  uint32_t cp;
  if (p[0] < 0x80) return 1;
  if ((p[0] & 0xe0) == 0xc0) {
    n = 2;
    cp = p[0] & 0x1fu;
  } else if ((p[0] & 0xf0) == 0xe0) {
    n = 3;
    cp = p[0] & 0x0fu;
  } else if ((p[0] & 0xf8) == 0xf0) {
    n = 4;
    cp = p[0] & 0x07u;
  } else {
    return 0;
  }
  if (n > left) return 0;
  for (size_t i = 1; i < n; i++) {
    if ((p[i] & 0xc0) != 0x80) return 0;
    cp = cp << 6 | (p[i] & 0x3fu);
  }
  if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
      cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
    return 0;
  return n;
}

static void write_string(json_t *j, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  fputc('"', j->f);
  for (size_t i = 0; i < len;) {
    unsigned char c = p[i];
    size_t n;
    switch (c) {
      case '"':
        fputs("\\\"", j->f);
        i++;
        continue;
      case '\\':
        fputs("\\\\", j->f);
        i++;
        continue;
      case '\n':
        fputs("\\n", j->f);
        i++;
        continue;
      case '\r':
        fputs("\\r", j->f);
        i++;
        continue;
      case '\t':
        fputs("\\t", j->f);
        i++;
        continue;
      default: break;
    }
    if (c < 0x20 || c == 0x7f) {
      fprintf(j->f, "\\u%04x", c);
      i++;
      continue;
    }
    n = utf8_len(p + i, len - i);
    if (n == 0) {
      fputs("\\ufffd", j->f);
      i++;
      continue;
    }
    fwrite(p + i, 1, n, j->f);
    i += n;
  }
  fputc('"', j->f);
}

void json_key(json_t *j, const char *key) {
  before_value(j);
  write_string(j, key, strlen(key));
  fputs(": ", j->f);
  j->after_key = true;
}

void json_string(json_t *j, const char *s, size_t len) {
  before_value(j);
  write_string(j, s, len);
}

void json_cstr(json_t *j, const char *s) {
  if (!s) {
    json_null(j);
    return;
  }
  json_string(j, s, strlen(s));
}

void json_int(json_t *j, int64_t v) {
  before_value(j);
  fprintf(j->f, "%" PRId64, v);
}

void json_uint(json_t *j, uint64_t v) {
  before_value(j);
  fprintf(j->f, "%" PRIu64, v);
}

void json_double(json_t *j, double v) {
  if (!isfinite(v)) {
    json_null(j);
    return;
  }
  before_value(j);
  /* The shortest of %.15g..%.17g that reads back to the same double, with
   * a fraction or exponent so that it reads as a float. */
  {
    char buf[64];
    for (int prec = 15; prec <= 17; prec++) {
      snprintf(buf, sizeof(buf), "%.*g", prec, v);
      if (strtod(buf, NULL) == v) break;
    }
    if (!strpbrk(buf, ".eE")) {
      size_t n = strlen(buf);
      snprintf(buf + n, sizeof(buf) - n, ".0");
    }
    fputs(buf, j->f);
  }
}

void json_bool(json_t *j, bool v) {
  before_value(j);
  fputs(v ? "true" : "false", j->f);
}

void json_null(json_t *j) {
  before_value(j);
  fputs("null", j->f);
}

void json_hex(json_t *j, const uint8_t *p, size_t len) {
  static const char digits[] = "0123456789abcdef";
  before_value(j);
  fputc('"', j->f);
  for (size_t i = 0; i < len; i++) {
    fputc(digits[p[i] >> 4], j->f);
    fputc(digits[p[i] & 15], j->f);
  }
  fputc('"', j->f);
}

void json_finish(json_t *j) {
  fputc('\n', j->f);
  fflush(j->f);
}

static void default_bin(json_t *j, const uint8_t *p, size_t len, void *ctx) {
  (void)ctx;
  json_begin_object(j);
  json_key(j, "bytes");
  json_uint(j, len);
  json_key(j, "hex");
  json_hex(j, p, len);
  json_end_object(j);
}

void json_msgpack(json_t *j, const msgpack_object *o, json_bin_fn bin, void *ctx) {
  switch (o->type) {
    case MSGPACK_OBJECT_NIL: json_null(j); break;
    case MSGPACK_OBJECT_BOOLEAN: json_bool(j, o->via.boolean); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: json_uint(j, o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: json_int(j, o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: json_double(j, o->via.f64); break;
    case MSGPACK_OBJECT_STR: json_string(j, o->via.str.ptr, o->via.str.size); break;
    case MSGPACK_OBJECT_BIN:
      (bin ? bin : default_bin)(j, (const uint8_t *)o->via.bin.ptr, o->via.bin.size, ctx);
      break;
    case MSGPACK_OBJECT_ARRAY:
      json_begin_array(j);
      for (uint32_t i = 0; i < o->via.array.size; i++)
        json_msgpack(j, &o->via.array.ptr[i], bin, ctx);
      json_end_array(j);
      break;
    case MSGPACK_OBJECT_MAP:
      json_begin_object(j);
      for (uint32_t i = 0; i < o->via.map.size; i++) {
        const msgpack_object *k = &o->via.map.ptr[i].key;
        char buf[64];
        /* JSON keys are strings: a non-string key is written as its text. */
        if (k->type == MSGPACK_OBJECT_STR) {
          before_value(j);
          write_string(j, k->via.str.ptr, k->via.str.size);
          fputs(": ", j->f);
          j->after_key = true;
        } else {
          if (k->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
            snprintf(buf, sizeof(buf), "%" PRIu64, k->via.u64);
          else if (k->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
            snprintf(buf, sizeof(buf), "%" PRId64, k->via.i64);
          else
            snprintf(buf, sizeof(buf), "key%u", i);
          json_key(j, buf);
        }
        json_msgpack(j, &o->via.map.ptr[i].val, bin, ctx);
      }
      json_end_object(j);
      break;
    case MSGPACK_OBJECT_EXT: json_null(j); break;
  }
}

bool json_msgpack_bytes(json_t *j, const void *data, size_t len, json_bin_fn bin, void *ctx) {
  msgpack_unpacked up;
  size_t off = 0;
  bool ok;
  msgpack_unpacked_init(&up);
  ok = msgpack_unpack_next(&up, data, len, &off) == MSGPACK_UNPACK_SUCCESS;
  if (ok) json_msgpack(j, &up.data, bin, ctx);
  msgpack_unpacked_destroy(&up);
  return ok;
}
