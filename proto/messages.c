/* SPDX-License-Identifier: Apache-2.0 */
/* messages.c — whole request and response messages from the method table
 * (proto/methods.h), and protocol 1.2's request_id and priority, which sit
 * beside a device request's own keys. */
#include <errno.h>
#include <string.h>

#include "dispatch_pack.h"
#include "methods.h"
#include "schema.h"
#include "schema_rows.h"

bool proto_request_id_valid(const char *id, size_t len) {
  if (len == 0 || len > PROTO_REQUEST_ID_MAX) return false;
  for (size_t i = 0; i < len; i++)
    if (id[i] < 0x20 || id[i] > 0x7e) return false;
  return true;
}

/* The params row of kind SK_RID is the request_id: one lookup in the
 * method's table, so a device method that takes one needs no code here.
 * Its offset in the params union, or -1 when the method has none. */
static ptrdiff_t request_id_offset(proto_method_t method) {
  const schema_spec_t *root = proto_params_row(method);
  const schema_t *sc = root ? root->sub : NULL;
  if (!sc) return -1;
  for (size_t i = 0; i < sc->nfields; i++)
    if (sc->fields[i].kind == SK_RID) return (ptrdiff_t)sc->fields[i].off;
  return -1;
}

const char *proto_params_request_id(proto_method_t method, const proto_params_t *params) {
  ptrdiff_t off = request_id_offset(method);
  const char *id = NULL;
  if (off >= 0 && params) memcpy(&id, (const char *)params + off, sizeof(id));
  return id;
}

int proto_params_set_request_id(proto_method_t method, proto_params_t *params, const char *id) {
  ptrdiff_t off = request_id_offset(method);
  if (off < 0) return -1;
  memcpy((char *)params + off, &id, sizeof(id));
  return 0;
}

int proto_params_pack_priority(msgpack_packer *pk, proto_method_t method,
                               const proto_params_t *params, int priority) {
  const schema_spec_t *root;
  int rc;
  if (priority == 0) return proto_params_pack(pk, method, params);
  root = proto_params_row(method);
  if (!root) return -EINVAL;
  rc = msgpack_pack_array(pk, 1);
  if (!params || schema_absent(root, params))
    rc |= msgpack_pack_map(pk, 1);
  else
    rc |= schema_pack_map_n(pk, root->sub, params, 1);
  rc |= msgpack_pack_str_with_body(pk, "priority", 8) | msgpack_pack_int(pk, priority);
  return rc == 0 ? 0 : -ENOMEM;
}

/* The envelope and the small keys around a message's byte strings. */
#define KEYS_ROOM 4096u

/* Room for the bins plus KEYS_ROOM, so the big payloads are copied once,
 * straight into place. */
static int reserve(msgpack_sbuffer *sb, const schema_spec_t *root, const void *value) {
  return value ? proto_sbuffer_reserve(sb, schema_payload(root, value) + KEYS_ROOM) : 0;
}

int proto_encode_request(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                         const proto_params_t *params) {
  msgpack_packer pk;
  int rc;
  if ((unsigned)method >= PROTO_M_COUNT) return -EINVAL;
  rc = reserve(sb, proto_params_row(method), params);
  if (rc < 0) return rc;
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  rc = proto_pack_request_begin(&pk, msgid, proto_method_name(method));
  return rc < 0 ? rc : proto_params_pack(&pk, method, params);
}

int proto_encode_response(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                          const proto_result_t *result) {
  return proto_encode_response_id(sb, msgid, method, result, NULL);
}

/* A map result with one more key, "request_id", after its rows. */
static int pack_result_id(msgpack_packer *pk, const schema_spec_t *root,
                          const proto_result_t *result, const char *request_id) {
  if (!request_id || root->kind != SK_MAP) return schema_pack(pk, root, result);
  return schema_pack_map_n(pk, root->sub, result, 1) |
         msgpack_pack_str_with_body(pk, "request_id", 10) |
         msgpack_pack_str_with_body(pk, request_id, strlen(request_id));
}

size_t proto_response_room(proto_method_t method, const proto_result_t *result) {
  if ((unsigned)method >= PROTO_M_COUNT || !result) return 0;
  if (method == PROTO_M_DISPATCH) {
    /* Without bytes, DFX or request_id a dispatch's answer is one write to
     * the packer (proto/dispatch_pack.c), so it is sized right at once. */
    const proto_dispatch_result_t *r = &result->dispatch;
    size_t payload = proto_dispatch_result_payload(r);
    return payload || r->request_id || proto_dfx_present(&r->dfx) ? payload + KEYS_ROOM
                                                                   : 0;
  }
  return schema_payload(proto_result_row(method), result) + KEYS_ROOM;
}

int proto_pack_response_id(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                           const proto_result_t *result, const char *request_id) {
  msgpack_packer pk;
  int rc;
  if ((unsigned)method >= PROTO_M_COUNT) return -EINVAL;
  if (method == PROTO_M_DISPATCH && result) { /* every dispatch: the cheap way, same bytes */
    msgpack_packer_init(&pk, sb, proto_sbuffer_append);
    return proto_dispatch_response_pack(&pk, msgid, &result->dispatch);
  }
  msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
  rc = proto_pack_response_begin(&pk, msgid);
  if (rc < 0) return rc;
  return pack_result_id(&pk, proto_result_row(method), result, request_id) == 0 ? 0 : -ENOMEM;
}

int proto_encode_response_id(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                             const proto_result_t *result, const char *request_id) {
  /* proto_response_room is 0 for a method out of range, which
   * proto_pack_response_id refuses. */
  int rc = proto_sbuffer_reserve(sb, proto_response_room(method, result));
  return rc < 0 ? rc : proto_pack_response_id(sb, msgid, method, result, request_id);
}
