/* SPDX-License-Identifier: Apache-2.0 */
/* dfx.c — the "dfx" map of a dispatch (result and error), methods.h. */
#include <errno.h>
#include <stddef.h>
#include <string.h>

#include "methods.h"
#include "schema.h"

#define DFX_ROW(k, kind_, m) \
  { .key = k, .kind = kind_, .flags = F_OPT, .off = offsetof(pto_dfx_t, m) }

static const schema_spec_t dfx_rows[] = {
    DFX_ROW("swimlane", SK_BIN, swimlane),
    DFX_ROW("scope_stats", SK_BIN, scope_stats),
    DFX_ROW("dep_graph", SK_BIN, dep_graph),
    DFX_ROW("refused", SK_STR, refused),
};
const schema_t proto_dfx_schema = {.fields = dfx_rows,
                                   .nfields = sizeof(dfx_rows) / sizeof(dfx_rows[0])};

bool proto_dfx_present(const proto_dfx_t *dfx) {
  return dfx->swimlane.ptr || dfx->scope_stats.ptr || dfx->dep_graph.ptr || dfx->refused;
}

int proto_encode_error_response_dfx(msgpack_sbuffer *sb, uint32_t msgid, const pto_error_t *err,
                                    const proto_dfx_t *dfx, const char *request_id) {
  msgpack_packer pk;
  bool with = dfx && proto_dfx_present(dfx);
  int rc;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  rc = msgpack_pack_array(&pk, 4) | msgpack_pack_uint8(&pk, PROTO_MSG_RESPONSE) |
       msgpack_pack_uint32(&pk, msgid) |
       proto_pack_error_map_n(&pk, err, (with ? 1u : 0u) + (request_id ? 1u : 0u));
  if (with)
    rc |= msgpack_pack_str_with_body(&pk, "dfx", 3) | schema_pack_map(&pk, &proto_dfx_schema, dfx);
  if (request_id)
    rc |= msgpack_pack_str_with_body(&pk, "request_id", 10) |
          msgpack_pack_str_with_body(&pk, request_id, strlen(request_id));
  rc |= msgpack_pack_nil(&pk);
  return rc ? -ENOMEM : 0;
}

int proto_dfx_decode_error(const msgpack_object *error_map, msgpack_zone *zone, proto_dfx_t *ret,
                           pto_error_t *ret_err) {
  memset(ret, 0, sizeof(*ret));
  if (!error_map || error_map->type != MSGPACK_OBJECT_MAP) return 0;
  for (uint32_t i = 0; i < error_map->via.map.size; i++) {
    const msgpack_object_kv *kv = &error_map->via.map.ptr[i];
    schema_ctx_t ctx;
    if (kv->key.type != MSGPACK_OBJECT_STR || kv->key.via.str.size != 3 ||
        memcmp(kv->key.via.str.ptr, "dfx", 3) != 0)
      continue;
    memset(&ctx, 0, sizeof(ctx));
    ctx.err = ret_err;
    ctx.zone = zone;
    ctx.method = "dispatch";
    ctx.what = "dispatch error dfx";
    return schema_decode_map(&ctx, &proto_dfx_schema, &kv->val, ret, NULL);
  }
  return 0;
}
