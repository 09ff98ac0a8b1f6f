#include "describe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SHOWN 40

void proto_describe_text(const char *s, size_t len, char *buf, size_t buflen) {
  size_t o = 0;
  if (buflen < 8) {
    if (buflen) buf[0] = '\0';
    return;
  }
  buf[o++] = '"';
  for (size_t i = 0; i < len && i < MAX_SHOWN; i++) {
    unsigned char c = (unsigned char)s[i];
    char tmp[8];
    int n;
    if (c == '"' || c == '\\')
      n = snprintf(tmp, sizeof(tmp), "\\%c", c);
    else if (c < 0x20 || c >= 0x7f)
      n = snprintf(tmp, sizeof(tmp), "\\x%02x", c);
    else
      n = snprintf(tmp, sizeof(tmp), "%c", c);
    if (n < 0 || o + (size_t)n + 5 >= buflen) break;
    memcpy(buf + o, tmp, (size_t)n);
    o += (size_t)n;
  }
  if (len > MAX_SHOWN) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o++] = '"';
  buf[o] = '\0';
}

/* The shortest text that reads back as the same double. */
static void describe_double(double d, char *buf, size_t len) {
  if (isnan(d)) {
    snprintf(buf, len, "nan");
    return;
  }
  if (isinf(d)) {
    snprintf(buf, len, "%s", d < 0 ? "-inf" : "inf");
    return;
  }
  for (int prec = 1; prec <= 17; prec++) {
    snprintf(buf, len, "%.*g", prec, d);
    if (strtod(buf, NULL) == d) break;
  }
  if (!strpbrk(buf, ".e")) {
    size_t n = strlen(buf);
    snprintf(buf + n, len - n, ".0");
  }
}

void proto_describe(const msgpack_object *o, char *buf, size_t len) {
  switch (o->type) {
    case MSGPACK_OBJECT_NIL: snprintf(buf, len, "nil"); break;
    case MSGPACK_OBJECT_BOOLEAN: snprintf(buf, len, "%s", o->via.boolean ? "true" : "false"); break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER: snprintf(buf, len, "%" PRIu64, o->via.u64); break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER: snprintf(buf, len, "%" PRId64, o->via.i64); break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64: describe_double(o->via.f64, buf, len); break;
    case MSGPACK_OBJECT_STR: proto_describe_text(o->via.str.ptr, o->via.str.size, buf, len); break;
    case MSGPACK_OBJECT_BIN: snprintf(buf, len, "a bin of %" PRIu32 " bytes", o->via.bin.size); break;
    case MSGPACK_OBJECT_ARRAY: snprintf(buf, len, "an array of %" PRIu32, o->via.array.size); break;
    case MSGPACK_OBJECT_MAP: snprintf(buf, len, "a map of %" PRIu32, o->via.map.size); break;
    case MSGPACK_OBJECT_EXT: snprintf(buf, len, "an ext of type %d", o->via.ext.type); break;
  }
}
