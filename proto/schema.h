/* SPDX-License-Identifier: Apache-2.0 */
/* proto/schema.h — the table-driven codec behind proto/methods.h (internal).
 *
 * A map on the wire is described by a schema: one row per key, saying the
 * key, the kind of value, where the value lives in a C struct (offsetof) and
 * its range.  The same rows drive decoding (validation, messages naming the
 * key) and encoding, so every method's params and result is a table, not
 * code.  Rows of a nested map may describe fields of the same struct (off
 * 0), which is how anonymous sub-structs are mapped.
 *
 * Only proto/ uses this header.
 */
#ifndef PROTO_SCHEMA_H
#define PROTO_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>
#include <pto/errors.h>

typedef enum schema_kind {
  SK_UINT,    /* unsigned integer field of `size` bytes, range [min, max] */
  SK_INT,     /* signed integer field of `size` bytes, range [min, (int64)max] */
  SK_BOOL,    /* bool or int field (`size` bytes) holding 0/1 */
  SK_TRI,     /* int: PROTO_UNSET (nil on the wire), 0 or 1 */
  SK_STR,     /* const char *; with F_LEN, a size_t length at off2 */
  SK_NAME,    /* const char *, a buffer/program name (proto_name_valid) */
  SK_RID,     /* const char *, a request_id (proto_request_id_valid) */
  SK_BIN,     /* proto_bytes_t */
  SK_OPTBIN,  /* proto_bytes_t, nil when ptr is NULL */
  SK_KEY,     /* uint64_t, a 16-digit hex string */
  SK_QUAD,    /* uint64_t[4] */
  SK_SOURCES, /* uint8_t[4] of pto_sizing_source_t, as names */
  SK_RING,    /* uint64_t[4], a config ring field; min = the pto_ring_field_t */
  SK_MAP,     /* a nested map; sub = const schema_t * */
  SK_LIST,    /* pointer at off, uint32_t count at off2; sub = element row */
  SK_CUSTOM,  /* sub = const schema_custom_t * */
} schema_kind_t;

/* Rows are required unless F_OPT.  Results are decoded leniently (unknown
 * keys ignored) but every row must be there, but F_OPT ones (a key a newer
 * daemon added, such as dispatch's dfx). */
enum {
  F_OPT = 1u << 0,  /* params: may be left out or nil; packed only when not absent */
  F_NIL = 1u << 1,  /* may be nil even when required (nil = the absent value) */
  F_LEN = 1u << 2,  /* SK_STR: also a size_t length at off2 */
  F_ZERO = 1u << 3, /* SK_UINT: 0 is accepted as "unset" besides [min, max] */
  F_NEW = 1u << 4,  /* a key a later protocol version added: always packed, but an
                     * older peer's message may lack it (its absent value stays) */
};

typedef struct schema_spec {
  const char *key;
  uint8_t kind;
  uint8_t flags;
  uint16_t
      size; /* bytes of the field (SK_UINT, SK_INT, SK_BOOL); element size (SK_LIST rows' sub) */
  size_t off, off2;
  int64_t min;
  uint64_t max;
  int64_t absent; /* the value that means "not given" (SK_UINT, SK_INT) */
  const void *sub;
} schema_spec_t;

typedef struct schema_ctx schema_ctx_t;

typedef struct schema {
  const char *what; /* nested schemas with their own name ("config") */
  const schema_spec_t *fields;
  size_t nfields;
  size_t size; /* sizeof the struct, for lists of it */
  bool config; /* values are INVALID_CONFIG, RunConfig-style messages */
  int (*check)(schema_ctx_t *ctx, const void *base); /* cross-key rules, after decode */
  size_t (*extra_count)(const void *base);           /* keys packed after the rows */
  int (*extra_pack)(msgpack_packer *pk, const void *base);
} schema_t;

typedef struct schema_custom {
  int (*decode)(schema_ctx_t *ctx, const schema_spec_t *spec, const msgpack_object *obj,
                void *field);
  int (*pack)(msgpack_packer *pk, const void *field);
  size_t (*payload)(const void *field); /* bytes of bin payload, for reserving */
} schema_custom_t;

struct schema_ctx {
  pto_error_t *err;
  msgpack_zone *zone;
  bool strict;        /* params: unknown/duplicate keys rejected */
  bool config;        /* inside a config map */
  const char *method; /* "dispatch" */
  const char *what;   /* "dispatch params", "a dispatch argument" */
  char what_buf[64];
  /* The list element whose decode this is, which an error's message
   * starts with ("args[2]" gives "args[2]: "): the path of the context
   * that decodes the list, so nothing is written unless there is an
   * error.  NULL: none. */
  const char *prefix_of;
  char path[96];   /* "queue." inside nested result maps */
};

/* Decode obj with the row `spec` into the struct at base (the field is at
 * base + spec->off).  Returns 0 or a negative error with ctx->err set. */
int schema_decode(schema_ctx_t *ctx, const schema_spec_t *spec, const msgpack_object *obj,
                  void *base);
/* Decode a map with a schema; ret_seen (may be NULL) gets one bit per row
 * present. */
int schema_decode_map(schema_ctx_t *ctx, const schema_t *sc, const msgpack_object *obj, void *base,
                      uint64_t *ret_seen);
/* Set every field of the schema to its absent value (after a memset 0). */
void schema_init(const schema_t *sc, void *base);
int schema_pack(msgpack_packer *pk, const schema_spec_t *spec, const void *base);
int schema_pack_map(msgpack_packer *pk, const schema_t *sc, const void *base);
/* The same with room for nmore pairs in the map header, which the caller
 * packs right after. */
int schema_pack_map_n(msgpack_packer *pk, const schema_t *sc, const void *base, uint32_t nmore);
/* Whether a row's value is its absent value (so an optional key is omitted). */
bool schema_absent(const schema_spec_t *spec, const void *base);
/* Bytes of bin payload under the row, to reserve before packing. */
size_t schema_payload(const schema_spec_t *spec, const void *base);

/* The text an error's message starts with: "args[2]: " (ctx->prefix_of's
 * first 20 bytes and ": "), or "".  Returns buf. */
#define SCHEMA_PREFIX_MAX 24
const char *schema_prefix(const schema_ctx_t *ctx, char buf[SCHEMA_PREFIX_MAX]);

/* "key 'x' in WHAT must be EXPECT, got GOT." (or the RunConfig form inside a
 * config map); sets err->key.  Returns the negative error. */
int schema_bad_value(schema_ctx_t *ctx, const char *key, const char *expect,
                     const msgpack_object *got);
/* The rows of the "dfx" map (proto/dfx.c). */
extern const schema_t proto_dfx_schema;
/* The rows of a resolved sizing map, values and sources (proto/methods.c). */
extern const schema_t proto_sizing_resolved_schema;

/* The unsigned integer of `size` bytes (1, 4 or 8) at p, as a struct
 * field holds it. */
uint64_t schema_load_uint(const void *p, size_t size);

/* Append to the NUL-terminated text in buf[cap], cutting what does not fit:
 * the decoders name where they are ("args[2]", "queue.") on every request,
 * so this is a copy, not snprintf.  Return the new length. */
size_t schema_cat(char *buf, size_t cap, const char *s);
size_t schema_cat_index(char *buf, size_t cap, uint32_t i); /* "[i]" */

/* A NUL-terminated copy of a str in the zone. */
const char *schema_strdup(schema_ctx_t *ctx, const char *s, size_t len);

#endif
