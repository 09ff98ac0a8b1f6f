/* SPDX-License-Identifier: Apache-2.0 */
/* proto/schema_rows.h — the row macros the method schemas are written
 * with (methods.c, args.c), and the dispatch argument's row, which args.c
 * defines.  Private to proto/. */
#ifndef PROTO_SCHEMA_ROWS_H
#define PROTO_SCHEMA_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "methods.h"
#include "schema.h"

#define FIELD_SIZE(T, m) ((uint16_t)sizeof(((T *)0)->m))
#define ROW_U(k, T, m, lo, hi, fl)                                                           \
  {                                                                                          \
    .key = k, .kind = SK_UINT, .flags = fl, .size = FIELD_SIZE(T, m), .off = offsetof(T, m), \
    .min = lo, .max = hi                                                                     \
  }
#define ROW_I(k, T, m, lo, hi, unset, fl)                                                   \
  {                                                                                         \
    .key = k, .kind = SK_INT, .flags = fl, .size = FIELD_SIZE(T, m), .off = offsetof(T, m), \
    .min = lo, .max = hi, .absent = unset                                                   \
  }
#define ROW_COUNT(k, T, m) ROW_U(k, T, m, 0, INT64_MAX, 0)
#define ROW_BOOL(k, T, m) \
  { .key = k, .kind = SK_BOOL, .size = FIELD_SIZE(T, m), .off = offsetof(T, m) }
#define ROW_K(k, kind_, T, m, fl) \
  { .key = k, .kind = kind_, .flags = fl, .off = offsetof(T, m) }
#define ROW_MAP(k, T, m, schema, fl) \
  { .key = k, .kind = SK_MAP, .flags = fl, .off = offsetof(T, m), .sub = &(schema) }
/* A nested map whose rows name fields of the same struct (anonymous sub-structs). */
#define ROW_MAP_HERE(k, schema) \
  { .key = k, .kind = SK_MAP, .sub = &(schema) }
#define ROW_LIST(k, T, items, count, elem)                                            \
  {                                                                                   \
    .key = k, .kind = SK_LIST, .off = offsetof(T, items), .off2 = offsetof(T, count), \
    .sub = &(elem)                                                                    \
  }
#define ROW_ELEM(kind_, T, schema) \
  { .kind = kind_, .size = sizeof(T), .sub = schema }
#define SCHEMA(rows) \
  { .fields = rows, .nfields = sizeof(rows) / sizeof(rows[0]) }
#define RING_ROW(k, field)                                             \
  {                                                                    \
    .key = k, .kind = SK_RING, .flags = F_OPT,                         \
    .off = offsetof(proto_config_t, sizing.value[field]), .min = field \
  }

#define BYTES_MAX PROTO_BYTES_MAX

/* The method table's rows (methods.c): a method's params map and its
 * result; NULL out of range. */
const schema_spec_t *proto_params_row(proto_method_t m);
const schema_spec_t *proto_result_row(proto_method_t m);

/* One dispatch argument, in all its forms (args.c). */
extern const schema_spec_t proto_arg_elem;

#endif
