/* SPDX-License-Identifier: Apache-2.0 */
#include "describe.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
