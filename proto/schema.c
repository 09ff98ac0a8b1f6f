/* SPDX-License-Identifier: Apache-2.0 */
/* The table-driven codec of proto/schema.h. */
#include "schema.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <pto/sizing.h>

#include "methods.h"
#include "rpc.h"

static void *at(void *base, size_t off) { return (char *)base + off; }
static const void *cat(const void *base, size_t off) { return (const char *)base + off; }

uint64_t schema_load_uint(const void *p, size_t size) {
  switch (size) {
    case 1: {
      uint8_t v;
      memcpy(&v, p, 1);
      return v;
    }
    case 4: {
      uint32_t v;
      memcpy(&v, p, 4);
      return v;
    }
    default: {
      uint64_t v;
      memcpy(&v, p, 8);
      return v;
    }
  }
}

static void store_uint(void *p, size_t size, uint64_t v) {
  uint8_t v8 = (uint8_t)v;
  uint32_t v32 = (uint32_t)v;
  if (size == 1)
    memcpy(p, &v8, 1);
  else if (size == 4)
    memcpy(p, &v32, 4);
  else
    memcpy(p, &v, 8);
}

/* Signed fields are int or int64_t; sign-extend from the stored width. */
static int64_t load_int(const void *p, size_t size) {
  if (size == 4) {
    int32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  int64_t v;
  memcpy(&v, p, 8);
  return v;
}

static void store_int(void *p, size_t size, int64_t v) {
  int32_t v32 = (int32_t)v;
  if (size == 4)
    memcpy(p, &v32, 4);
  else
    memcpy(p, &v, 8);
}

static const void *load_ptr(const void *p) {
  const void *v;
  memcpy(&v, p, sizeof(v));
  return v;
}

static void store_ptr(void *p, const void *v) { memcpy(p, &v, sizeof(v)); }

const char *schema_strdup(schema_ctx_t *ctx, const char *s, size_t len) {
  char *p = msgpack_zone_malloc(ctx->zone, len + 1);
  if (!p) return NULL;
  if (len) memcpy(p, s, len); /* msgpack-c gives an empty str a NULL ptr */
  p[len] = '\0';
  return p;
}

/* s[0..n) after the text that ends at buf[at], cut to what fits in cap:
 * the names are a few bytes, so a loop, not a call. */
static size_t cat_at(char *buf, size_t cap, size_t at, const char *s, size_t n) {
  if (n > cap - 1 - at) n = cap - 1 - at;
  for (size_t i = 0; i < n; i++) buf[at + i] = s[i];
  buf[at + n] = '\0';
  return at + n;
}

size_t schema_cat(char *buf, size_t cap, const char *s) {
  return cat_at(buf, cap, strlen(buf), s, strlen(s));
}

/* "[i]" after the text that ends at buf[at]. */
static size_t cat_index_at(char *buf, size_t cap, size_t at, uint32_t i) {
  char text[16], *p = text + sizeof(text);
  *--p = ']';
  do *--p = (char)('0' + i % 10); while (i /= 10);
  *--p = '[';
  return cat_at(buf, cap, at, p, (size_t)(text + sizeof(text) - p));
}

size_t schema_cat_index(char *buf, size_t cap, uint32_t i) {
  return cat_index_at(buf, cap, strlen(buf), i);
}

/* path + key, without a trailing '.': "queue.depth", "outputs[1]". */
static void full_key(const schema_ctx_t *ctx, const char *key, char *buf, size_t len) {
  size_t p = strlen(ctx->path), k = key ? strlen(key) : 0, n = 0;
  if (p > len - 1) p = len - 1;
  memcpy(buf, ctx->path, p);
  n = p;
  if (k > len - 1 - n) k = len - 1 - n;
  if (k) memcpy(buf + n, key, k);
  n += k;
  if (n > 0 && buf[n - 1] == '.') n--;
  buf[n] = '\0';
  pto_utf8_cut(buf, n);
}

static int fail(schema_ctx_t *ctx, int code, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

const char *schema_prefix(const schema_ctx_t *ctx, char buf[SCHEMA_PREFIX_MAX]) {
  buf[0] = '\0';
  if (ctx->prefix_of) {
    size_t n = cat_at(buf, SCHEMA_PREFIX_MAX - 3, 0, ctx->prefix_of, strlen(ctx->prefix_of));
    cat_at(buf, SCHEMA_PREFIX_MAX, n, ": ", 2);
  }
  return buf;
}

/* The message gets the prefix ("args[2]: "); err->key gets path + key. */
static int fail(schema_ctx_t *ctx, int code, const char *key, const char *fmt, ...) {
  char text[sizeof(ctx->err->message)], prefix[SCHEMA_PREFIX_MAX];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  pto_error_set(ctx->err, code, "%s%s", schema_prefix(ctx, prefix), text);
  if (ctx->err && key) full_key(ctx, key, ctx->err->key, sizeof(ctx->err->key));
  return -code;
}

int schema_bad_value(schema_ctx_t *ctx, const char *key, const char *expect,
                     const msgpack_object *got) {
  char desc[64], name[128];
  proto_describe(got, desc, sizeof(desc));
  full_key(ctx, key, name, sizeof(name));
  if (!name[0])
    return fail(ctx, PTO_E_INVALID_REQUEST, NULL, "The %s must be %s, got %s.", ctx->what, expect,
                desc);
  if (ctx->config)
    return fail(ctx, PTO_E_INVALID_CONFIG, key ? key : "", "%s must be %s, got %s.", name, expect,
                desc);
  return fail(ctx, PTO_E_INVALID_REQUEST, key ? key : "", "key '%s' in %s must be %s, got %s.",
              name, ctx->what, expect, desc);
}

static int nomem(schema_ctx_t *ctx) {
  return pto_error_set(ctx->err, PTO_E_INTERNAL, "Out of memory while decoding the %s.",
                       ctx->what);
}

static bool get_u64(const msgpack_object *o, uint64_t *ret) {
  if (o->type != MSGPACK_OBJECT_POSITIVE_INTEGER) return false;
  *ret = o->via.u64;
  return true;
}

static int decode_uint(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                       void *field) {
  char expect[80];
  uint64_t v;
  bool zero_ok = (s->flags & F_ZERO) != 0;
  if (get_u64(o, &v) && ((v >= (uint64_t)s->min && v <= s->max) || (zero_ok && v == 0))) {
    store_uint(field, s->size, v);
    return 0;
  }
  if (s->max == UINT64_MAX || s->max == INT64_MAX)
    snprintf(expect, sizeof(expect), "an integer >= %" PRId64, s->min);
  else
    snprintf(expect, sizeof(expect), "an integer in [%" PRId64 ", %" PRIu64 "]%s", s->min, s->max,
             zero_ok ? " (0 or nil to leave it unset)" : "");
  return schema_bad_value(ctx, s->key, expect, o);
}

static int decode_int(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                      void *field) {
  char expect[80];
  int64_t v = 0;
  bool ok = (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <= INT64_MAX) ||
            o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER;
  if (ok) v = o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER ? o->via.i64 : (int64_t)o->via.u64;
  if (ok && v >= s->min && (v < 0 || (uint64_t)v <= s->max)) {
    store_int(field, s->size, v);
    return 0;
  }
  if (s->max >= INT64_MAX)
    snprintf(expect, sizeof(expect), "an integer >= %" PRId64, s->min);
  else
    snprintf(expect, sizeof(expect), "an integer in [%" PRId64 ", %" PRIu64 "]", s->min, s->max);
  return schema_bad_value(ctx, s->key, expect, o);
}

static int decode_str(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                      void *field, void *base) {
  const char *copy;
  if (o->type != MSGPACK_OBJECT_STR) return schema_bad_value(ctx, s->key, "a string", o);
  if (s->kind == SK_NAME && !proto_name_valid(o->via.str.ptr, o->via.str.size))
    return schema_bad_value(ctx, s->key,
                            "a name of 1 to 64 characters of A-Z, a-z, 0-9, '.', '_' and '-', "
                            "not starting with '.'",
                            o);
  if (s->kind == SK_RID && !proto_request_id_valid(o->via.str.ptr, o->via.str.size))
    return schema_bad_value(ctx, s->key, "a string of 1 to 64 printable ASCII characters", o);
  /* A C string ends at its first NUL: without the length kept beside it,
   * "in\0..." would read as "in".  Refuse rather than cut. */
  if (!(s->flags & F_LEN) && o->via.str.size && memchr(o->via.str.ptr, '\0', o->via.str.size))
    return schema_bad_value(ctx, s->key, "a string without NUL bytes", o);
  copy = schema_strdup(ctx, o->via.str.ptr, o->via.str.size);
  if (!copy) return nomem(ctx);
  store_ptr(field, copy);
  if (s->flags & F_LEN) {
    size_t n = o->via.str.size;
    memcpy(at(base, s->off2), &n, sizeof(n));
  }
  return 0;
}

static int decode_quad(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                       void *field) {
  uint64_t v[PTO_RING_COUNT];
  uint8_t src[PTO_RING_COUNT];
  bool sources = s->kind == SK_SOURCES;
  if (o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != PTO_RING_COUNT) goto bad;
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    const msgpack_object *e = &o->via.array.ptr[r];
    if (!sources) {
      if (!get_u64(e, &v[r])) goto bad;
      continue;
    }
    src[r] = UINT8_MAX;
    for (int k = PTO_SOURCE_DEFAULT; k <= PTO_SOURCE_REQUEST; k++) {
      const char *name = pto_sizing_source_name((pto_sizing_source_t)k);
      if (e->type == MSGPACK_OBJECT_STR && e->via.str.size == strlen(name) &&
          memcmp(e->via.str.ptr, name, e->via.str.size) == 0)
        src[r] = (uint8_t)k;
    }
    if (src[r] == UINT8_MAX) goto bad;
  }
  if (sources)
    memcpy(field, src, sizeof(src));
  else
    memcpy(field, v, sizeof(v));
  return 0;
bad:
  return schema_bad_value(ctx, s->key,
                          sources ? "an array of 4 of \"request\", \"env\", \"config\", \"default\""
                                  : "an array of 4 integers >= 0",
                          o);
}

static int decode_key(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                      void *field) {
  uint64_t v = 0;
  if (o->type != MSGPACK_OBJECT_STR || o->via.str.size != 16) goto bad;
  for (int i = 0; i < 16; i++) {
    char c = o->via.str.ptr[i];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
    if (d < 0) goto bad;
    v = (v << 4) | (uint64_t)d;
  }
  memcpy(field, &v, sizeof(v));
  return 0;
bad:
  return schema_bad_value(ctx, s->key, "a 16-digit lower-case hex string", o);
}

static int decode_list(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                       void *base) {
  const schema_spec_t *elem = s->sub;
  size_t pathlen = strlen(ctx->path);
  uint32_t n;
  char *items = NULL;
  if (o->type != MSGPACK_OBJECT_ARRAY) return schema_bad_value(ctx, s->key, "an array", o);
  n = o->via.array.size;
  if (n > 0) {
    items = msgpack_zone_malloc(ctx->zone, (size_t)n * elem->size);
    if (!items) return nomem(ctx);
    memset(items, 0, (size_t)n * elem->size);
  }
  /* The elements are named "key[i]": the key once, the index each time. */
  size_t keyed = s->key ? schema_cat(ctx->path, sizeof(ctx->path), s->key) : pathlen;
  for (uint32_t i = 0; i < n; i++) {
    int rc;
    if (elem->kind == SK_MAP) schema_init(elem->sub, items + (size_t)i * elem->size);
    cat_index_at(ctx->path, sizeof(ctx->path), keyed, i);
    rc = schema_decode(ctx, elem, &o->via.array.ptr[i], items + (size_t)i * elem->size);
    if (rc < 0) {
      ctx->path[pathlen] = '\0';
      return rc;
    }
  }
  ctx->path[pathlen] = '\0';
  store_ptr(at(base, s->off), items);
  memcpy(at(base, s->off2), &n, sizeof(n));
  return 0;
}

/* Decode a nested map: its rows are named relative to it ("queue.depth"),
 * or, when the schema has a name of its own ("config"), in its own terms. */
static int decode_nested(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o,
                         void *field) {
  const schema_t *sc = s->sub;
  schema_ctx_t inner = *ctx;
  int rc;
  if (o->type != MSGPACK_OBJECT_MAP) return schema_bad_value(ctx, s->key, "a map", o);
  if (sc->what) {
    inner.what_buf[0] = '\0';
    schema_cat(inner.what_buf, sizeof(inner.what_buf), ctx->method);
    schema_cat(inner.what_buf, sizeof(inner.what_buf), " ");
    schema_cat(inner.what_buf, sizeof(inner.what_buf), sc->what);
    inner.what = inner.what_buf;
    inner.path[0] = '\0';
  } else if (s->key) {
    schema_cat(inner.path, sizeof(inner.path), s->key);
    schema_cat(inner.path, sizeof(inner.path), ".");
  } else if (inner.path[0]) {
    schema_cat(inner.path, sizeof(inner.path), ".");
  }
  if (sc->config) inner.config = true;
  rc = schema_decode_map(&inner, sc, o, field, NULL);
  return rc;
}

int schema_decode(schema_ctx_t *ctx, const schema_spec_t *s, const msgpack_object *o, void *base) {
  void *field = at(base, s->off);
  switch ((schema_kind_t)s->kind) {
    case SK_UINT: return decode_uint(ctx, s, o, field);
    case SK_INT: return decode_int(ctx, s, o, field);
    case SK_BOOL:
    case SK_TRI:
      if (o->type != MSGPACK_OBJECT_BOOLEAN) return schema_bad_value(ctx, s->key, "a boolean", o);
      if (s->kind == SK_TRI)
        store_int(field, sizeof(int), o->via.boolean);
      else
        store_uint(field, s->size, o->via.boolean);
      return 0;
    case SK_STR:
    case SK_NAME:
    case SK_RID: return decode_str(ctx, s, o, field, base);
    case SK_BIN:
    case SK_OPTBIN: {
      proto_bytes_t b = {NULL, 0};
      if (o->type == MSGPACK_OBJECT_NIL && s->kind == SK_OPTBIN) {
        memcpy(field, &b, sizeof(b));
        return 0;
      }
      if (o->type != MSGPACK_OBJECT_BIN)
        return schema_bad_value(ctx, s->key, s->kind == SK_OPTBIN ? "a bin or nil" : "a bin", o);
      b.ptr = o->via.bin.ptr ? (const uint8_t *)o->via.bin.ptr : (const uint8_t *)"";
      b.len = o->via.bin.size;
      memcpy(field, &b, sizeof(b));
      return 0;
    }
    case SK_KEY: return decode_key(ctx, s, o, field);
    case SK_QUAD:
    case SK_SOURCES: return decode_quad(ctx, s, o, field);
    case SK_RING: return pto_sizing_parse_msgpack((pto_ring_field_t)s->min, o, field, ctx->err);
    case SK_MAP: return decode_nested(ctx, s, o, field);
    case SK_LIST: return decode_list(ctx, s, o, base);
    case SK_CUSTOM: return ((const schema_custom_t *)s->sub)->decode(ctx, s, o, field);
  }
  return pto_error_set(ctx->err, PTO_E_INTERNAL, "A row of the %s has no known kind.", ctx->what);
}

static void known_keys(const schema_t *sc, char *buf, size_t len) {
  size_t pos = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < sc->nfields && pos < len; i++)
    pos += (size_t)snprintf(buf + pos, len - pos, "%s%s", i ? ", " : "", sc->fields[i].key);
}

/* Whether the row's key is the str p[0..n): compared in place, most rows
 * differing at the first byte (no strlen of every row). */
static bool key_is(const char *key, const char *p, uint32_t n) {
  uint32_t i = 0;
  while (i < n && key[i] != '\0' && key[i] == p[i]) i++;
  return i == n && key[i] == '\0';
}

static int check_key(schema_ctx_t *ctx, const schema_t *sc, const msgpack_object *k,
                     size_t *ret_row) {
  char desc[64], known[256], name[4 * PROTO_NAME_MAX + 4];
  if (k->type != MSGPACK_OBJECT_STR) {
    proto_describe(k, desc, sizeof(desc));
    return fail(ctx, PTO_E_INVALID_REQUEST, NULL,
                "a key in %s is %s, not a string; keys are strings.", ctx->what, desc);
  }
  for (size_t i = 0; i < sc->nfields; i++) {
    if (key_is(sc->fields[i].key, k->via.str.ptr, k->via.str.size)) {
      *ret_row = i;
      return 0;
    }
  }
  *ret_row = SIZE_MAX;
  if (!ctx->strict) return 0;
  proto_show_text(k->via.str.ptr, k->via.str.size, PROTO_NAME_MAX, name, sizeof(name));
  if (sc->nfields == 0)
    return fail(ctx, PTO_E_INVALID_REQUEST, name, "unknown key '%s' in %s; %s takes no parameters.",
                name, ctx->what, ctx->method);
  known_keys(sc, known, sizeof(known));
  return fail(ctx, PTO_E_INVALID_REQUEST, name, "unknown key '%s' in %s; known keys: %s.", name,
              ctx->what, known);
}

int schema_decode_map(schema_ctx_t *ctx, const schema_t *sc, const msgpack_object *o, void *base,
                      uint64_t *ret_seen) {
  uint64_t seen = 0, given = 0;
  if (o->type != MSGPACK_OBJECT_MAP) return schema_bad_value(ctx, NULL, "a map", o);
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object *v = &o->via.map.ptr[i].val;
    const schema_spec_t *s;
    size_t row = SIZE_MAX;
    int rc = check_key(ctx, sc, &o->via.map.ptr[i].key, &row);
    if (rc < 0) return rc;
    if (row == SIZE_MAX) continue;
    s = &sc->fields[row];
    if (ctx->strict && (given >> row & 1u))
      return fail(ctx, PTO_E_INVALID_REQUEST, s->key,
                  "duplicate key '%s' in %s; send each key once.", s->key, ctx->what);
    given |= UINT64_C(1) << row;
    if (v->type == MSGPACK_OBJECT_NIL &&
        ((ctx->strict && (s->flags & F_OPT)) || (s->flags & F_NIL))) {
      /* nil = not given: the absent value from schema_init stays */
      if (s->flags & F_NIL) seen |= UINT64_C(1) << row;
      continue;
    }
    seen |= UINT64_C(1) << row;
    rc = schema_decode(ctx, s, v, base);
    if (rc < 0) return rc;
  }
  for (size_t row = 0; row < sc->nfields; row++) {
    const schema_spec_t *s = &sc->fields[row];
    if ((seen >> row & 1u) || (s->flags & (F_OPT | F_NEW))) continue;
    char name[128];
    full_key(ctx, s->key, name, sizeof(name));
    return fail(ctx, PTO_E_INVALID_REQUEST, s->key, "missing required key '%s' in %s.", name,
                ctx->what);
  }
  if (ret_seen) *ret_seen = seen;
  return sc->check ? sc->check(ctx, base) : 0;
}

void schema_init(const schema_t *sc, void *base) {
  for (size_t i = 0; i < sc->nfields; i++) {
    const schema_spec_t *s = &sc->fields[i];
    if (s->kind == SK_INT)
      store_int(at(base, s->off), s->size, s->absent);
    else if (s->kind == SK_TRI)
      store_int(at(base, s->off), sizeof(int), -1);
    else if (s->kind == SK_MAP)
      schema_init(s->sub, at(base, s->off));
  }
}

bool schema_absent(const schema_spec_t *s, const void *base) {
  const void *field = cat(base, s->off);
  switch ((schema_kind_t)s->kind) {
    case SK_UINT: return schema_load_uint(field, s->size) == (uint64_t)s->absent;
    case SK_INT: return load_int(field, s->size) == s->absent;
    case SK_TRI: return load_int(field, sizeof(int)) < 0;
    case SK_STR:
    case SK_NAME:
    case SK_RID: return load_ptr(field) == NULL;
    case SK_BIN:
    case SK_OPTBIN: return load_ptr(field) == NULL; /* proto_bytes_t.ptr comes first */
    case SK_RING:
      for (int r = 0; r < PTO_RING_COUNT; r++)
        if (((const uint64_t *)field)[r]) return false;
      return true;
    case SK_MAP: {
      const schema_t *sc = s->sub;
      for (size_t i = 0; i < sc->nfields; i++)
        if (!schema_absent(&sc->fields[i], field)) return false;
      return !sc->extra_count || sc->extra_count(field) == 0;
    }
    default: return false;
  }
}

static int pack_key(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, s, n);
}

static int pack_quad(msgpack_packer *pk, const schema_spec_t *s, const void *field) {
  int rc = msgpack_pack_array(pk, PTO_RING_COUNT);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    if (s->kind == SK_SOURCES)
      rc |= pack_key(pk, pto_sizing_source_name(((const uint8_t *)field)[r]));
    else
      rc |= msgpack_pack_uint64(pk, ((const uint64_t *)field)[r]);
  }
  return rc;
}

/* Four equal values go out as the scalar form, which means the same. */
static int pack_ring(msgpack_packer *pk, const schema_spec_t *s, const void *field) {
  const uint64_t *v = field;
  if (v[0] != 0 && v[0] == v[1] && v[1] == v[2] && v[2] == v[3])
    return msgpack_pack_uint64(pk, v[0]);
  return pack_quad(pk, s, field);
}

static int pack_list(msgpack_packer *pk, const schema_spec_t *s, const void *base) {
  const schema_spec_t *elem = s->sub;
  const char *items = load_ptr(cat(base, s->off));
  uint32_t n;
  int rc;
  memcpy(&n, cat(base, s->off2), sizeof(n));
  rc = msgpack_pack_array(pk, n);
  for (uint32_t i = 0; i < n && rc == 0; i++)
    rc |= schema_pack(pk, elem, items + (size_t)i * elem->size);
  return rc;
}

int schema_pack(msgpack_packer *pk, const schema_spec_t *s, const void *base) {
  const void *field = cat(base, s->off);
  switch ((schema_kind_t)s->kind) {
    case SK_UINT: return msgpack_pack_uint64(pk, schema_load_uint(field, s->size));
    case SK_INT: return msgpack_pack_int64(pk, load_int(field, s->size));
    case SK_BOOL:
      return schema_load_uint(field, s->size) ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    case SK_TRI: {
      int64_t v = load_int(field, sizeof(int));
      return v < 0 ? msgpack_pack_nil(pk) : v ? msgpack_pack_true(pk) : msgpack_pack_false(pk);
    }
    case SK_STR:
    case SK_NAME:
    case SK_RID: {
      const char *str = load_ptr(field);
      size_t n = str ? strlen(str) : 0;
      size_t stored = 0;
      if (str && (s->flags & F_LEN)) memcpy(&stored, cat(base, s->off2), sizeof(stored));
      if (stored) n = stored;
      return msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, str, n);
    }
    case SK_BIN:
    case SK_OPTBIN: {
      proto_bytes_t b;
      memcpy(&b, field, sizeof(b));
      if (!b.ptr && s->kind == SK_OPTBIN) return msgpack_pack_nil(pk);
      return msgpack_pack_bin(pk, b.ptr ? b.len : 0) |
             msgpack_pack_bin_body(pk, b.ptr, b.ptr ? b.len : 0);
    }
    case SK_KEY: {
      char hex[17];
      uint64_t v;
      memcpy(&v, field, sizeof(v));
      pto_sizing_key_hex(v, hex);
      return pack_key(pk, hex);
    }
    case SK_QUAD:
    case SK_SOURCES: return pack_quad(pk, s, field);
    case SK_RING: return pack_ring(pk, s, field);
    case SK_MAP: return schema_pack_map(pk, s->sub, field);
    case SK_LIST: return pack_list(pk, s, base);
    case SK_CUSTOM: return ((const schema_custom_t *)s->sub)->pack(pk, field);
  }
  return -1;
}

int schema_pack_map(msgpack_packer *pk, const schema_t *sc, const void *base) {
  return schema_pack_map_n(pk, sc, base, 0);
}

int schema_pack_map_n(msgpack_packer *pk, const schema_t *sc, const void *base, uint32_t nmore) {
  size_t n = nmore + (sc->extra_count ? sc->extra_count(base) : 0);
  int rc;
  for (size_t i = 0; i < sc->nfields; i++)
    n += !((sc->fields[i].flags & F_OPT) && schema_absent(&sc->fields[i], base));
  rc = msgpack_pack_map(pk, n);
  for (size_t i = 0; i < sc->nfields && rc == 0; i++) {
    const schema_spec_t *s = &sc->fields[i];
    if ((s->flags & F_OPT) && schema_absent(s, base)) continue;
    rc |= pack_key(pk, s->key) | schema_pack(pk, s, base);
  }
  if (sc->extra_pack) rc |= sc->extra_pack(pk, base);
  return rc;
}

size_t schema_payload(const schema_spec_t *s, const void *base) {
  const void *field = cat(base, s->off);
  size_t total = 0;
  switch ((schema_kind_t)s->kind) {
    case SK_BIN:
    case SK_OPTBIN: {
      proto_bytes_t b;
      memcpy(&b, field, sizeof(b));
      return b.ptr ? b.len : 0;
    }
    case SK_MAP: {
      const schema_t *sc = s->sub;
      for (size_t i = 0; i < sc->nfields; i++) total += schema_payload(&sc->fields[i], field);
      return total;
    }
    case SK_LIST: {
      const schema_spec_t *elem = s->sub;
      const char *items = load_ptr(field);
      uint32_t n;
      memcpy(&n, cat(base, s->off2), sizeof(n));
      for (uint32_t i = 0; i < n; i++)
        total += schema_payload(elem, items + (size_t)i * elem->size);
      return total;
    }
    case SK_CUSTOM: {
      const schema_custom_t *c = s->sub;
      return c->payload ? c->payload(field) : 0;
    }
    default: return 0;
  }
}
