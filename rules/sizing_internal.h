/* SPDX-License-Identifier: Apache-2.0 */
/* rules/sizing_internal.h — the sizing rules' messages, shared by the pure
 * rules (sizing.c, in ptorules) and their msgpack side (sizing_msgpack.c,
 * in ptoproto).  Not installed.  Each sets ret_err (code, message, key;
 * type_hint and fail_count the hint too) like pto_sizing_check_value and
 * returns -PTO_E_INVALID_CONFIG. */
#ifndef RULES_SIZING_INTERNAL_H
#define RULES_SIZING_INTERNAL_H

#include <stdint.h>

#include <pto/errors.h>
#include <pto/sizing.h>

/* What the user gave, as RunConfig would echo it (describe_text.h). */
typedef struct shown {
  char text[96];
} shown_t;

/* "<key> must <rule>, got <got>" */
int sizing_fail_scalar(pto_ring_field_t field, const shown_t *got, pto_error_t *err);
/* "<key> entries must <rule> (or 0 to keep default), got <got>" */
int sizing_fail_entry(pto_ring_field_t field, const shown_t *got, pto_error_t *err);
/* "<key> must have exactly 4 entries ..., got <count>" */
int sizing_fail_count(pto_ring_field_t field, uint64_t count, pto_error_t *err);
/* Replaces err->hint with what types are accepted. */
void sizing_type_hint(pto_ring_field_t field, pto_error_t *err);
/* One list entry: 0 (keep) or valid; else the entry message.  0 or error. */
int sizing_check_entry(pto_ring_field_t field, uint64_t value, pto_error_t *err);

#endif
