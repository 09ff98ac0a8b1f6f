/* SPDX-License-Identifier: Apache-2.0 */
/* pto_config_t: the per-dispatch RunConfig, validated with the daemon's code.
 *
 * The ring fields are kept as a partial sizing (what proto encodes, scalar
 * or list).  Every other key is kept as its encoded msgpack value and sent
 * as is, through proto_config_t.extra: the keys the daemon knows are first
 * checked by decoding them with the daemon's own decoder (proto), the ones
 * it does not know pass through untouched.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

struct pto_config {
  pto_sizing_t sizing;
  proto_raw_kv_t *kv; /* key and value are malloc'ed, owned here */
  size_t nkv, cap;
};

int pto_config_new(pto_config_t **ret_config) {
  pto_config_t *c;
  if (!ret_config) return -PTO_E_INVALID_ARGUMENT;
  c = calloc(1, sizeof(*c));
  if (!c) return -PTO_E_NO_MEMORY;
  *ret_config = c;
  return 0;
}

static void kv_free(proto_raw_kv_t *kv) {
  free((void *)(uintptr_t)kv->key);
  free((void *)(uintptr_t)kv->value);
}

void pto_config_free(pto_config_t *c) {
  if (!c) return;
  for (size_t i = 0; i < c->nkv; i++) kv_free(&c->kv[i]);
  free(c->kv);
  free(c);
}

static int kv_put(pto_config_t *c, const char *key, const void *value, size_t len) {
  char *k = NULL;
  void *v = malloc(len);
  size_t i;
  if (!v) return -PTO_E_NO_MEMORY;
  memcpy(v, value, len);
  for (i = 0; i < c->nkv; i++)
    if (strcmp(c->kv[i].key, key) == 0) break;
  if (i < c->nkv) {
    free((void *)(uintptr_t)c->kv[i].value);
    c->kv[i].value = v;
    c->kv[i].value_len = len;
    return 0;
  }
  if (c->nkv == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 4;
    proto_raw_kv_t *nk = realloc(c->kv, cap * sizeof(*nk));
    if (!nk) {
      free(v);
      return -PTO_E_NO_MEMORY;
    }
    c->kv = nk;
    c->cap = cap;
  }
  k = strdup(key);
  if (!k) {
    free(v);
    return -PTO_E_NO_MEMORY;
  }
  c->kv[c->nkv++] = (proto_raw_kv_t){.key = k, .value = v, .value_len = len};
  return 0;
}

int pto_config_copy(const pto_config_t *c, pto_config_t **ret_copy) {
  pto_config_t *n;
  int rc;
  if (!c || !ret_copy) return -PTO_E_INVALID_ARGUMENT;
  rc = pto_config_new(&n);
  if (rc < 0) return rc;
  n->sizing = c->sizing;
  for (size_t i = 0; i < c->nkv; i++) {
    rc = kv_put(n, c->kv[i].key, c->kv[i].value, c->kv[i].value_len);
    if (rc < 0) {
      pto_config_free(n);
      return rc;
    }
  }
  *ret_copy = n;
  return 0;
}

void client_config_to_proto(const pto_config_t *c, proto_config_t *ret) {
  proto_config_init(ret);
  if (!c) return;
  ret->sizing = c->sizing;
  ret->extra = c->kv;
  ret->nextra = c->nkv;
}

bool pto_config_empty(const pto_config_t *c) {
  proto_config_t p;
  client_config_to_proto(c, &p);
  return proto_config_empty(&p);
}

/* The ring field named exactly by its wire key, or -1 (the sizing lookup
 * also accepts the config-file names, which are not config keys). */
static int ring_key(const char *key) {
  int f = pto_sizing_field_from_key(key, strlen(key));
  return f >= 0 && strcmp(key, pto_sizing_field_key((pto_ring_field_t)f)) == 0 ? f : -1;
}

/* A non-ring key: decode {"config": {key: value}} as the daemon would (the
 * prewarm params carry the same config map as dispatch).  Returns 1 when
 * the daemon does not know the key (pass it through), 0 when it is valid,
 * or the daemon's error for the value. */
static int check_known(const char *key, const msgpack_object *value, pto_error_t *err) {
  msgpack_zone zone;
  msgpack_object_kv inner_kv, outer_kv;
  msgpack_object inner, outer;
  proto_params_t params;
  pto_error_t e;
  int rc;

  inner_kv.key.type = MSGPACK_OBJECT_STR;
  inner_kv.key.via.str.ptr = key;
  inner_kv.key.via.str.size = (uint32_t)strlen(key);
  inner_kv.val = *value;
  inner.type = MSGPACK_OBJECT_MAP;
  inner.via.map.size = 1;
  inner.via.map.ptr = &inner_kv;
  outer_kv.key.type = MSGPACK_OBJECT_STR;
  outer_kv.key.via.str.ptr = "config";
  outer_kv.key.via.str.size = 6;
  outer_kv.val = inner;
  outer.type = MSGPACK_OBJECT_MAP;
  outer.via.map.size = 1;
  outer.via.map.ptr = &outer_kv;

  if (!msgpack_zone_init(&zone, 1024)) return client_error(err, PTO_E_NO_MEMORY, NULL);
  pto_error_clear(&e);
  rc = proto_params_decode(PROTO_M_PREWARM, &outer, &zone, &params, &e);
  msgpack_zone_destroy(&zone);
  if (rc == 0) return 0;
  if (rc == -PTO_E_INVALID_REQUEST && strcmp(e.key, key) == 0) return 1;
  if (rc == -PTO_E_INTERNAL) return client_error(err, PTO_E_NO_MEMORY, NULL); /* out of memory */
  if (err) *err = e;
  return rc;
}

int pto_config_set_msgpack(pto_config_t *c, const char *key, const void *value, size_t len,
                           pto_error_t *ret_err) {
  msgpack_unpacked up;
  size_t off = 0;
  msgpack_unpack_return ur;
  int rc, field;

  if (!c || !key || !value || len == 0)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_config_set_* needs a config, a key and a value.");
  if (key[0] == '\0')
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT, "A config key cannot be empty.");
  msgpack_unpacked_init(&up);
  ur = msgpack_unpack_next(&up, value, len, &off);
  if (ur == MSGPACK_UNPACK_NOMEM_ERROR) {
    msgpack_unpacked_destroy(&up);
    return client_error(ret_err, PTO_E_NO_MEMORY, NULL);
  }
  if (ur != MSGPACK_UNPACK_SUCCESS || off != len) {
    msgpack_unpacked_destroy(&up);
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "The value for config key '%s' must be exactly one msgpack object (%zu "
                        "bytes given).",
                        key, len);
  }

  field = ring_key(key);
  if (field >= 0) {
    uint64_t rings[PTO_RING_COUNT];
    rc = pto_sizing_parse_msgpack((pto_ring_field_t)field, &up.data, rings, ret_err);
    if (rc == 0) memcpy(c->sizing.value[field], rings, sizeof(rings));
  } else {
    rc = check_known(key, &up.data, ret_err);
    if (rc >= 0) {
      rc = kv_put(c, key, value, len);
      if (rc < 0) client_error(ret_err, -rc, NULL);
    }
  }
  msgpack_unpacked_destroy(&up);
  return rc;
}

/* Encode one value (pack_expr packs it with pk_) and set it under key; the
 * body of every typed setter, so all of them go through set_msgpack. */
#define SET_WITH(c, key, err, pack_expr)                                           \
  do {                                                                             \
    msgpack_sbuffer sb_;                                                           \
    msgpack_packer pk_;                                                            \
    int rc_;                                                                       \
    msgpack_sbuffer_init(&sb_);                                                    \
    msgpack_packer_init(&pk_, &sb_, msgpack_sbuffer_write);                        \
    rc_ = (pack_expr);                                                             \
    rc_ = rc_ == 0 ? pto_config_set_msgpack((c), (key), sb_.data, sb_.size, (err)) \
                   : client_error((err), PTO_E_NO_MEMORY, NULL);                   \
    msgpack_sbuffer_destroy(&sb_);                                                 \
    return rc_;                                                                    \
  } while (0)

int pto_config_set_int(pto_config_t *c, const char *key, int64_t value, pto_error_t *ret_err) {
  SET_WITH(c, key, ret_err, msgpack_pack_int64(&pk_, value));
}

int pto_config_set_float(pto_config_t *c, const char *key, double value, pto_error_t *ret_err) {
  SET_WITH(c, key, ret_err, msgpack_pack_double(&pk_, value));
}

int pto_config_set_bool(pto_config_t *c, const char *key, bool value, pto_error_t *ret_err) {
  SET_WITH(c, key, ret_err, value ? msgpack_pack_true(&pk_) : msgpack_pack_false(&pk_));
}

int pto_config_set_string(pto_config_t *c, const char *key, const char *value,
                          pto_error_t *ret_err) {
  size_t n;
  if (!value)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_config_set_string needs a string for key '%s'.", key ? key : "");
  n = strlen(value);
  SET_WITH(c, key, ret_err, msgpack_pack_str(&pk_, n) | msgpack_pack_str_body(&pk_, value, n));
}

int pto_config_set_nil(pto_config_t *c, const char *key, pto_error_t *ret_err) {
  SET_WITH(c, key, ret_err, msgpack_pack_nil(&pk_));
}

int pto_config_set_rings(pto_config_t *c, pto_ring_field_t field,
                         const uint64_t values[PTO_RING_COUNT], pto_error_t *ret_err) {
  const char *key = pto_sizing_field_key(field);
  if (!key || !values)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_config_set_rings needs a ring field and four values.");
  SET_WITH(c, key, ret_err,
           msgpack_pack_array(&pk_, PTO_RING_COUNT) | msgpack_pack_uint64(&pk_, values[0]) |
               msgpack_pack_uint64(&pk_, values[1]) | msgpack_pack_uint64(&pk_, values[2]) |
               msgpack_pack_uint64(&pk_, values[3]));
}

int pto_config_set_ring(pto_config_t *c, pto_ring_field_t field, uint64_t value,
                        pto_error_t *ret_err) {
  const char *key = pto_sizing_field_key(field);
  if (!key)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT, "There is no ring field %d.", (int)field);
  SET_WITH(c, key, ret_err, msgpack_pack_uint64(&pk_, value));
}

int pto_config_parse_ring(pto_config_t *c, pto_ring_field_t field, const char *text,
                          pto_error_t *ret_err) {
  uint64_t rings[PTO_RING_COUNT];
  int rc;
  if (!c || !text || !pto_sizing_field_key(field))
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_config_parse_ring needs a config, a ring field and a text.");
  rc = pto_sizing_parse_config(field, text, rings, ret_err);
  if (rc == 0) memcpy(c->sizing.value[field], rings, sizeof(rings));
  return rc;
}

void pto_config_get_rings(const pto_config_t *c, pto_ring_field_t field,
                          uint64_t ret_values[PTO_RING_COUNT]) {
  if (c && pto_sizing_field_key(field))
    memcpy(ret_values, c->sizing.value[field], sizeof(c->sizing.value[field]));
  else
    memset(ret_values, 0, sizeof(uint64_t) * PTO_RING_COUNT);
}

int pto_config_unset(pto_config_t *c, const char *key) {
  int field;
  if (!c || !key) return -PTO_E_INVALID_ARGUMENT;
  field = ring_key(key);
  if (field >= 0) {
    bool set = false;
    for (int r = 0; r < PTO_RING_COUNT; r++) set |= c->sizing.value[field][r] != 0;
    memset(c->sizing.value[field], 0, sizeof(c->sizing.value[field]));
    return set ? 0 : -PTO_E_INVALID_ARGUMENT;
  }
  for (size_t i = 0; i < c->nkv; i++)
    if (strcmp(c->kv[i].key, key) == 0) {
      kv_free(&c->kv[i]);
      memmove(&c->kv[i], &c->kv[i + 1], (c->nkv - i - 1) * sizeof(c->kv[0]));
      c->nkv--;
      return 0;
    }
  return -PTO_E_INVALID_ARGUMENT;
}
