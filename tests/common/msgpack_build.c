/* SPDX-License-Identifier: Apache-2.0 */
/* Text <-> msgpack for tests (msgpack_build.h). */
#include "msgpack_build.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct parser {
  const char *s;
  const char *start;
  msgpack_packer pk;
} parser_t;

static void die(const parser_t *p, const char *what) {
  fprintf(stderr, "msgpack_build: %s at offset %td of: %s\n", what, p->s - p->start, p->start);
  abort();
}

static void skip_ws(parser_t *p) {
  while (*p->s == ' ' || *p->s == '\n' || *p->s == '\t' || *p->s == '\r') p->s++;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* A quoted string with escapes; returns a malloc'd buffer and its length. */
static char *parse_quoted(parser_t *p, size_t *ret_len) {
  size_t cap = strlen(p->s) + 1, n = 0;
  char *out = malloc(cap);
  if (*p->s != '"') die(p, "expected '\"'");
  p->s++;
  while (*p->s && *p->s != '"') {
    char c = *p->s++;
    if (c == '\\') {
      c = *p->s++;
      if (c == 'n')
        c = '\n';
      else if (c == 'x') {
        int hi = hexval(p->s[0]), lo = hi < 0 ? -1 : hexval(p->s[1]);
        if (lo < 0) die(p, "bad \\x escape");
        c = (char)(hi * 16 + lo);
        p->s += 2;
      } else if (c != '"' && c != '\\') {
        die(p, "unknown escape");
      }
    }
    out[n++] = c;
  }
  if (*p->s != '"') die(p, "unterminated string");
  p->s++;
  *ret_len = n;
  return out;
}

static bool take(parser_t *p, const char *word) {
  size_t n = strlen(word);
  if (strncmp(p->s, word, n) != 0) return false;
  p->s += n;
  return true;
}

static void parse_value(parser_t *p);

static void parse_container(parser_t *p, char close, bool map) {
  size_t count = 0;
  msgpack_sbuffer inner;
  msgpack_packer outer = p->pk;
  msgpack_sbuffer_init(&inner);
  msgpack_packer_init(&p->pk, &inner, msgpack_sbuffer_write);
  p->s++;
  skip_ws(p);
  while (*p->s != close) {
    parse_value(p);
    skip_ws(p);
    if (map) {
      if (*p->s != ':') die(p, "expected ':'");
      p->s++;
      parse_value(p);
      skip_ws(p);
    }
    count++;
    if (*p->s == ',') {
      p->s++;
      skip_ws(p);
    } else if (*p->s != close) {
      die(p, "expected ',' or the closing bracket");
    }
  }
  p->s++;
  p->pk = outer;
  if (map)
    msgpack_pack_map(&p->pk, count);
  else
    msgpack_pack_array(&p->pk, count);
  p->pk.callback(p->pk.data, inner.data, inner.size);
  msgpack_sbuffer_destroy(&inner);
}

static void parse_number(parser_t *p) {
  const char *s = p->s;
  char *end;
  bool is_float = false;
  for (const char *q = s + (*s == '-');
       (*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E' || *q == '+' || *q == '-';
       q++)
    if (*q == '.' || *q == 'e' || *q == 'E') is_float = true;
  if (is_float) {
    msgpack_pack_double(&p->pk, strtod(s, &end));
  } else if (*s == '-') {
    msgpack_pack_int64(&p->pk, strtoll(s, &end, 10));
  } else {
    msgpack_pack_uint64(&p->pk, strtoull(s, &end, 10));
  }
  if (end == s) die(p, "bad number");
  p->s = end;
}

static void parse_value(parser_t *p) {
  skip_ws(p);
  if (*p->s == '[') {
    parse_container(p, ']', false);
  } else if (*p->s == '{') {
    parse_container(p, '}', true);
  } else if (*p->s == '"' || (p->s[0] == 'b' && p->s[1] == '"')) {
    bool bin = *p->s == 'b';
    size_t n;
    char *text;
    p->s += bin;
    text = parse_quoted(p, &n);
    if (bin)
      msgpack_pack_bin_with_body(&p->pk, text, n);
    else
      msgpack_pack_str_with_body(&p->pk, text, n);
    free(text);
  } else if (take(p, "bin(")) {
    char *end;
    size_t n = strtoull(p->s, &end, 10);
    char *data = malloc(n ? n : 1);
    for (size_t i = 0; i < n; i++) data[i] = (char)(i & 0xff);
    msgpack_pack_bin_with_body(&p->pk, data, n);
    free(data);
    p->s = end;
    if (*p->s++ != ')') die(p, "expected ')'");
  } else if (take(p, "raw(")) {
    for (skip_ws(p); *p->s != ')'; skip_ws(p)) {
      int hi = hexval(p->s[0]), lo = hi < 0 ? -1 : hexval(p->s[1]);
      char byte;
      if (lo < 0) die(p, "bad raw byte");
      byte = (char)(hi * 16 + lo);
      p->pk.callback(p->pk.data, &byte, 1);
      p->s += 2;
    }
    p->s++;
  } else if (take(p, "nil")) {
    msgpack_pack_nil(&p->pk);
  } else if (take(p, "true")) {
    msgpack_pack_true(&p->pk);
  } else if (take(p, "false")) {
    msgpack_pack_false(&p->pk);
  } else if (*p->s == '-' || (*p->s >= '0' && *p->s <= '9')) {
    parse_number(p);
  } else {
    die(p, "unexpected character");
  }
}

void mb_pack(msgpack_sbuffer *sb, const char *text) {
  parser_t p = {.s = text, .start = text};
  msgpack_packer_init(&p.pk, sb, msgpack_sbuffer_write);
  for (skip_ws(&p); *p.s; skip_ws(&p)) parse_value(&p);
}

msgpack_sbuffer mb_build(const char *text) {
  msgpack_sbuffer sb;
  msgpack_sbuffer_init(&sb);
  mb_pack(&sb, text);
  return sb;
}

typedef struct out {
  char *buf;
  size_t len, pos;
} out_t;

static void emit(out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void emit(out_t *o, const char *fmt, ...) {
  va_list ap;
  int n;
  if (o->pos >= o->len) return;
  va_start(ap, fmt);
  n = vsnprintf(o->buf + o->pos, o->len - o->pos, fmt, ap);
  va_end(ap);
  if (n > 0) o->pos += (size_t)n;
}

static void emit_bytes(out_t *o, const char *prefix, const char *p, uint32_t n) {
  emit(o, "%s\"", prefix);
  for (uint32_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)p[i];
    if (c == '"' || c == '\\')
      emit(o, "\\%c", c);
    else if (c == '\n')
      emit(o, "\\n");
    else if (c >= 0x20 && c < 0x7f)
      emit(o, "%c", c);
    else
      emit(o, "\\x%02x", c);
  }
  emit(o, "\"");
}

static void print_obj(out_t *o, const msgpack_object *v) {
  switch (v->type) {
    case MSGPACK_OBJECT_NIL: emit(o, "nil"); break;
    case MSGPACK_OBJECT_BOOLEAN: emit(o, "%s", v->via.boolean ? "true" : "false"); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: emit(o, "%" PRIu64, v->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: emit(o, "%" PRId64, v->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: {
      char num[40];
      snprintf(num, sizeof(num), "%.17g", v->via.f64);
      emit(o, "%s%s", num, strpbrk(num, ".eEn") ? "" : ".0");
      break;
    }
    case MSGPACK_OBJECT_STR: emit_bytes(o, "", v->via.str.ptr, v->via.str.size); break;
    case MSGPACK_OBJECT_BIN:
      if (v->via.bin.size > 32)
        emit(o, "bin(%" PRIu32 ")", v->via.bin.size);
      else
        emit_bytes(o, "b", v->via.bin.ptr, v->via.bin.size);
      break;
    case MSGPACK_OBJECT_ARRAY:
      emit(o, "[");
      for (uint32_t i = 0; i < v->via.array.size; i++) {
        if (i) emit(o, ", ");
        print_obj(o, &v->via.array.ptr[i]);
      }
      emit(o, "]");
      break;
    case MSGPACK_OBJECT_MAP:
      emit(o, "{");
      for (uint32_t i = 0; i < v->via.map.size; i++) {
        if (i) emit(o, ", ");
        print_obj(o, &v->via.map.ptr[i].key);
        emit(o, ": ");
        print_obj(o, &v->via.map.ptr[i].val);
      }
      emit(o, "}");
      break;
    case MSGPACK_OBJECT_EXT:
      emit(o, "ext(%d, %" PRIu32 ")", v->via.ext.type, v->via.ext.size);
      break;
  }
}

char *mb_print(const msgpack_object *obj, char *buf, size_t len) {
  out_t o = {.buf = buf, .len = len};
  buf[0] = '\0';
  print_obj(&o, obj);
  return buf;
}

char *mb_print_bytes(const void *data, size_t size, char *buf, size_t len) {
  msgpack_unpacked up;
  size_t off = 0;
  msgpack_unpacked_init(&up);
  if (msgpack_unpack_next(&up, data, size, &off) != MSGPACK_UNPACK_SUCCESS)
    snprintf(buf, len, "<not msgpack>");
  else
    mb_print(&up.data, buf, len);
  msgpack_unpacked_destroy(&up);
  return buf;
}
