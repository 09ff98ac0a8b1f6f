/* SPDX-License-Identifier: Apache-2.0 */
/* pto/sizing.h — the per-ring sizing vector: parse, validate, resolve, key.
 *
 * The runtime keeps four rings (one per scope depth); each has a task window,
 * an output heap and a dependency-edge pool.  A sizing gives those 12 values.
 *
 * A *partial* sizing (pto_sizing_t) is one level of the precedence chain: the
 * request, the PTO2_RING_* environment, or the config file's [ring] section.
 * A 0 entry means "unset at this level".  Resolving the levels over the
 * compile-time defaults gives a pto_sizing_resolved_t, which also says where
 * each value came from.  The arena cache is keyed on the resolved vector.
 *
 * Validation follows PyPTO's RunConfig exactly, with its messages:
 *   ring_task_window must be a power of 2 >= 4, got N          (and <= 2^30)
 *   ring_heap must be a power of 2 >= 1024 (bytes per ring), got N
 *   ring_dep_pool must be in [4, INT32_MAX], got N
 *   ring_heap must have exactly 4 entries (one per scope-depth ring), got 3
 *   ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got 1000
 * Parse errors return -PTO_E_INVALID_CONFIG with that text in err->message and
 * the field name ("ring_heap") in err->key; err->hint says what would be
 * accepted.  Nothing here allocates or logs.
 */
#ifndef PTO_SIZING_H
#define PTO_SIZING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/errors.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTO_RING_COUNT 4

typedef enum pto_ring_field {
  PTO_FIELD_TASK_WINDOW = 0,
  PTO_FIELD_HEAP = 1,
  PTO_FIELD_DEP_POOL = 2,
} pto_ring_field_t;
#define PTO_FIELD_COUNT 3

/* Compile-time defaults, per ring. */
#define PTO_DEFAULT_TASK_WINDOW UINT64_C(16384)
#define PTO_DEFAULT_HEAP (UINT64_C(256) << 20)
#define PTO_DEFAULT_DEP_POOL UINT64_C(16384)
#define PTO_MAX_TASK_WINDOW (UINT64_C(1) << 30)

/* Where a resolved value came from, lowest precedence first. */
typedef enum pto_sizing_source {
  PTO_SOURCE_DEFAULT = 0,
  PTO_SOURCE_CONFIG = 1,
  PTO_SOURCE_ENV = 2,
  PTO_SOURCE_REQUEST = 3,
} pto_sizing_source_t;

/* One precedence level: value[field][ring], 0 = unset. */
typedef struct pto_sizing {
  uint64_t value[PTO_FIELD_COUNT][PTO_RING_COUNT];
} pto_sizing_t;

/* The effective vector: every value set, with its source. */
typedef struct pto_sizing_resolved {
  uint64_t value[PTO_FIELD_COUNT][PTO_RING_COUNT];
  uint8_t source[PTO_FIELD_COUNT][PTO_RING_COUNT]; /* pto_sizing_source_t */
} pto_sizing_resolved_t;

/* "ring_task_window", "ring_heap", "ring_dep_pool" (the RunConfig / wire keys). */
const char *pto_sizing_field_key(pto_ring_field_t field);
/* "task_window", "heap", "dep_pool" (config keys, peaks, logs). */
const char *pto_sizing_field_name(pto_ring_field_t field);
/* "PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP", "PTO2_RING_DEP_POOL". */
const char *pto_sizing_env_var(pto_ring_field_t field);
/* "default", "config", "env", "request". */
const char *pto_sizing_source_name(pto_sizing_source_t source);

/* Field lookup by wire key ("ring_heap") or config name ("heap"); -1 if neither. */
int pto_sizing_field_from_key(const char *key, size_t len);

/* Whether one value is valid for the field (non-zero, in range). */
bool pto_sizing_value_valid(pto_ring_field_t field, uint64_t value);

/* Check one scalar value and write the RunConfig message for a bad one.
 * Returns 0 or -PTO_E_INVALID_CONFIG. */
int pto_sizing_check_value(pto_ring_field_t field, uint64_t value, pto_error_t *ret_err);

struct msgpack_object;
/* Parse one ring field from a decoded msgpack value into ret_rings[4]:
 * nil -> all 0 (unset); a positive integer -> all four rings; an array of
 * exactly 4 integers -> per ring, where 0 keeps the lower level.  Booleans,
 * floats, strings, negative numbers, a scalar 0 and out-of-range values are
 * rejected with the RunConfig message (`got true`, `got 1.5`, `got "1M"`).
 * ret_rings is written only on success. */
int pto_sizing_parse_msgpack(pto_ring_field_t field, const struct msgpack_object *obj,
                             uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *ret_err);

/* Parse the text of a PTO2_RING_* variable: one decimal integer, or four
 * comma-separated (0 keeps the lower level), spaces allowed around each
 * number.  No size suffixes.  An empty text, an empty entry (a trailing
 * comma) or anything not a number is rejected with the token quoted
 * (`got "12x"`, `got ""`); a number past UINT64_MAX is rejected, never
 * wrapped.  A lone 0 is rejected like a scalar 0; "0,0,0,0" sets nothing. */
int pto_sizing_parse_env(pto_ring_field_t field, const char *text,
                         uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *ret_err);

/* Parse a config-file value: as the environment form, and every number may
 * carry a binary size suffix K, M or G ("512M", "256M,0,0,0"), upper case
 * only, as pto_size_parse() reads it. */
int pto_sizing_parse_config(pto_ring_field_t field, const char *text,
                            uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *ret_err);

/* Read PTO2_RING_TASK_WINDOW / _HEAP / _DEP_POOL from getenv into ret_env
 * (unset variables leave zeros).  On a bad value the message starts with the
 * variable name and err->key holds it. */
int pto_sizing_from_environ(pto_sizing_t *ret_env, pto_error_t *ret_err);

/* Resolve per ring and per field: request > env > config > default.  Any of
 * the three levels may be NULL (nothing set there). */
void pto_sizing_resolve(const pto_sizing_t *request, const pto_sizing_t *env,
                        const pto_sizing_t *config, pto_sizing_resolved_t *ret);

/* Turn a resolved vector back into a partial one holding every value (used
 * to pass a fully specified sizing, e.g. the prewarm sizing). */
void pto_sizing_from_resolved(const pto_sizing_resolved_t *resolved, pto_sizing_t *ret);

/* The cache key: FNV-1a-64 (offset basis 14695981039346656037 =
 * 0xcbf29ce484222325, prime 1099511628211) over the 12 values serialised as
 * little-endian uint64, ring by ring (task_window[r], heap[r], dep_pool[r]).
 * The built-in defaults give 0xef9b6111db51b6a5. */
uint64_t pto_sizing_key(const pto_sizing_resolved_t *sizing);
/* Full comparison of the 12 values (sources are not part of the key). */
bool pto_sizing_equal(const pto_sizing_resolved_t *a, const pto_sizing_resolved_t *b);

/* "16 B", "1000 B", "4 KiB", "512 MiB", "1 GiB": exact binary multiples get
 * a unit; anything else is bytes.  Returns what snprintf returns. */
int pto_size_format(uint64_t bytes, char *buf, size_t len);

/* The size grammar of the config file, shared by [ring] values and the
 * daemon's size keys: decimal digits, optionally followed by one binary
 * suffix K (2^10), M (2^20) or G (2^30).  Suffixes are upper case only
 * ("512m" is rejected: m reads as milli or minutes elsewhere).  No sign, no
 * spaces, no other base.  text need not be NUL-terminated.
 * Returns 0, -EINVAL (not that grammar) or -ERANGE (over UINT64_MAX). */
int pto_size_parse(const char *text, size_t len, uint64_t *ret_bytes);

/* The one formatter for logs and messages:
 * "task_window=[16384, 16384, 16384, 16384] heap=[512 MiB, 256 MiB, 256 MiB, 256 MiB] dep_pool=[...]"
 * Returns what snprintf returns (the length it needed). */
int pto_sizing_format(const pto_sizing_resolved_t *sizing, char *buf, size_t len);

/* "0x%016" PRIx64 without the 0x: the key as the wire's "hex" string (17 bytes with NUL). */
void pto_sizing_key_hex(uint64_t key, char buf[17]);

#ifdef __cplusplus
}
#endif
#endif
