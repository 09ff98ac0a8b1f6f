/* SPDX-License-Identifier: Apache-2.0 */
/* The msgpack side of the sizing rules (pto_sizing_parse_msgpack of
 * include/pto/sizing.h): the only part of them that knows msgpack, so that
 * ptorules (sizing.c, errors.c) stays pure and the runtime links no
 * msgpack-c. */
#include <pto/sizing.h>

#include <string.h>

#include <msgpack.h>

#include "describe.h"
#include "sizing_internal.h"

#define FIELD_OK(f) ((unsigned)(f) < PTO_FIELD_COUNT)

int pto_sizing_parse_msgpack(pto_ring_field_t field, const struct msgpack_object *obj,
                             uint64_t ret_rings[PTO_RING_COUNT], pto_error_t *ret_err) {
  if (!FIELD_OK(field))
    return pto_error_set(ret_err, PTO_E_INVALID_CONFIG, "Unknown ring field %d.", (int)field);
  uint64_t rings[PTO_RING_COUNT] = {0};
  shown_t got;
  if (!obj || obj->type == MSGPACK_OBJECT_NIL) {
    /* unset at this level */
  } else if (obj->type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
    int rc = pto_sizing_check_value(field, obj->via.u64, ret_err);
    if (rc < 0) return rc;
    for (int r = 0; r < PTO_RING_COUNT; r++) rings[r] = obj->via.u64;
  } else if (obj->type == MSGPACK_OBJECT_ARRAY) {
    if (obj->via.array.size != PTO_RING_COUNT)
      return sizing_fail_count(field, obj->via.array.size, ret_err);
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      const msgpack_object *e = &obj->via.array.ptr[r];
      if (e->type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
        proto_describe(e, got.text, sizeof(got.text));
        int rc = sizing_fail_entry(field, &got, ret_err);
        sizing_type_hint(field, ret_err);
        return rc;
      }
      int rc = sizing_check_entry(field, e->via.u64, ret_err);
      if (rc < 0) return rc;
      rings[r] = e->via.u64;
    }
  } else {
    proto_describe(obj, got.text, sizeof(got.text));
    int rc = sizing_fail_scalar(field, &got, ret_err);
    sizing_type_hint(field, ret_err);
    return rc;
  }
  memcpy(ret_rings, rings, sizeof(rings));
  return 0;
}
