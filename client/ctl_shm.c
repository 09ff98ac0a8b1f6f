/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl --shm (ctl_shm.h). */
#include "ctl_shm.h"

#include <stdlib.h>
#include <string.h>

#include <msgpack.h>

#define ALIGN 64u

struct ctl_shm {
  pto_shm_t *region; /* NULL: nothing to move */
  const pto_dispatch_arg_t *orig;
  pto_dispatch_arg_t *args;
  pto_bytes_t *outs;  /* per argument: its output in the region, ptr NULL if none */
  pto_bytes_t *shown_outs; /* ctl_shm_result's outputs */
  uint32_t n;
  pto_dispatch_result_t shown;
  msgpack_unpacked up; /* ctl_shm_json's patched copy */
};

static bool moves(const pto_dispatch_arg_t *a) {
  if (a->buffer) return false;
  if (a->kind == PTO_ARG_INPUT || a->kind == PTO_ARG_INOUT) return a->len > 0;
  return a->kind == PTO_ARG_OUTPUT && a->bytes > 0;
}

static uint64_t arg_bytes(const pto_dispatch_arg_t *a) {
  return a->kind == PTO_ARG_OUTPUT ? a->bytes : a->len;
}

static int nomem(pto_error_t *err) {
  return pto_error_set(err, PTO_E_NO_MEMORY, "ptoctl ran out of memory staging --shm data.");
}

int ctl_shm_stage(pto_client_t *client, const pto_dispatch_arg_t *args, uint32_t n,
                  int timeout_ms, ctl_shm_t **ret, pto_error_t *err) {
  ctl_shm_t *s = calloc(1, sizeof(*s));
  uint64_t total = 0, off = 0;
  int rc;
  if (!s || !(s->args = calloc(n ? n : 1, sizeof(*s->args))) ||
      !(s->outs = calloc(n ? n : 1, sizeof(*s->outs))) ||
      !(s->shown_outs = calloc(n ? n : 1, sizeof(*s->shown_outs)))) {
    ctl_shm_free(s);
    return nomem(err);
  }
  s->orig = args;
  s->n = n;
  msgpack_unpacked_init(&s->up);
  memcpy(s->args, args, n * sizeof(*args));
  for (uint32_t i = 0; i < n; i++)
    if (moves(&args[i])) total += (arg_bytes(&args[i]) + ALIGN - 1) / ALIGN * ALIGN;
  if (total) {
    rc = pto_shm_create(client, total, timeout_ms, &s->region, err);
    if (rc < 0) {
      ctl_shm_free(s);
      return rc;
    }
  }
  for (uint32_t i = 0; i < n; i++) {
    uint64_t len = arg_bytes(&args[i]);
    uint8_t *at;
    if (!moves(&args[i])) continue;
    at = (uint8_t *)pto_shm_data(s->region) + off;
    if (args[i].kind != PTO_ARG_OUTPUT) memcpy(at, args[i].data, len);
    if (args[i].kind != PTO_ARG_INPUT) s->outs[i] = (pto_bytes_t){at, (size_t)len};
    s->args[i] = pto_arg_shm(s->region, off, len, args[i].kind);
    off += (len + ALIGN - 1) / ALIGN * ALIGN;
  }
  *ret = s;
  return 0;
}

const pto_dispatch_arg_t *ctl_shm_args(const ctl_shm_t *s) {
  return s->args;
}

void ctl_shm_refill(ctl_shm_t *s) {
  for (uint32_t i = 0; i < s->n; i++)
    if (s->orig[i].kind == PTO_ARG_INOUT && s->outs[i].ptr)
      memcpy((void *)(uintptr_t)s->outs[i].ptr, s->orig[i].data, s->outs[i].len);
}

const pto_dispatch_result_t *ctl_shm_result(ctl_shm_t *s, const pto_dispatch_result_t *r) {
  s->shown = *r;
  /* The daemon answers one output per argument; with another count, show
   * what it sent. */
  if (r->noutputs == s->n) {
    for (uint32_t i = 0; i < s->n; i++)
      s->shown_outs[i] = s->outs[i].ptr ? s->outs[i] : r->outputs[i];
    s->shown.outputs = s->shown_outs;
  }
  return &s->shown;
}

static bool key_is(const msgpack_object *k, const char *name) {
  size_t n = strlen(name);
  return k->type == MSGPACK_OBJECT_STR && k->via.str.size == n &&
         memcmp(k->via.str.ptr, name, n) == 0;
}

void ctl_shm_json(ctl_shm_t *s, json_t *j, const pto_dispatch_result_t *r, json_bin_fn bin,
                  void *ctx) {
  const void *data;
  size_t len;
  msgpack_object *root;
  pto_result_msgpack(r, &data, &len);
  msgpack_unpacked_destroy(&s->up);
  msgpack_unpacked_init(&s->up);
  if (msgpack_unpack_next(&s->up, data, len, NULL) != MSGPACK_UNPACK_SUCCESS) {
    json_null(j);
    return;
  }
  root = &s->up.data;
  for (uint32_t k = 0; root->type == MSGPACK_OBJECT_MAP && k < root->via.map.size; k++) {
    msgpack_object *outs = &root->via.map.ptr[k].val;
    if (!key_is(&root->via.map.ptr[k].key, "outputs") || outs->type != MSGPACK_OBJECT_ARRAY ||
        outs->via.array.size != s->n)
      continue;
    for (uint32_t i = 0; i < s->n; i++) {
      msgpack_object *o = &outs->via.array.ptr[i];
      if (o->type != MSGPACK_OBJECT_NIL || !s->outs[i].ptr || s->outs[i].len > UINT32_MAX)
        continue;
      o->type = MSGPACK_OBJECT_BIN;
      o->via.bin.ptr = (const char *)s->outs[i].ptr;
      o->via.bin.size = (uint32_t)s->outs[i].len;
    }
  }
  json_msgpack(j, root, bin, ctx);
}

void ctl_shm_free(ctl_shm_t *s) {
  if (!s) return;
  msgpack_unpacked_destroy(&s->up); /* a zeroed one is fine */
  pto_shm_free(s->region);
  free(s->args);
  free(s->outs);
  free(s->shown_outs);
  free(s);
}

int ctl_shm_buffer_write(pto_client_t *client, const char *name, uint64_t offset,
                         const void *data, size_t len, int timeout_ms, uint64_t *ret_bytes,
                         pto_error_t *err) {
  pto_shm_t *r;
  int rc = pto_shm_create(client, len ? len : 1, timeout_ms, &r, err);
  if (rc < 0) return rc;
  memcpy(pto_shm_data(r), data, len);
  rc = pto_client_buffer_write_shm(client, name, offset, r, 0, len, timeout_ms, ret_bytes, err);
  pto_shm_free(r);
  return rc;
}

/* The size of buffer `name`, for a read to its end; 0 when there is none
 * (the read then gets the daemon's own NOT_FOUND). */
static int buffer_size(pto_client_t *client, const char *name, int timeout_ms, uint64_t *ret,
                       pto_error_t *err) {
  pto_buffer_list_t *l;
  int rc = pto_client_buffer_list(client, timeout_ms, &l, err);
  if (rc < 0) return rc;
  *ret = 0;
  for (uint32_t i = 0; i < l->count; i++)
    if (strcmp(l->buffers[i].name, name) == 0) *ret = l->buffers[i].bytes;
  pto_result_free(l);
  return 0;
}

int ctl_shm_buffer_read(pto_client_t *client, const char *name, uint64_t offset, uint64_t bytes,
                        int timeout_ms, uint8_t **ret_data, size_t *ret_len, pto_error_t *err) {
  pto_shm_t *r;
  uint64_t got = 0;
  uint8_t *copy;
  int rc = 0;
  if (bytes == 0) {
    uint64_t size = 0;
    rc = buffer_size(client, name, timeout_ms, &size, err);
    if (rc < 0) return rc;
    bytes = size == 0 ? 1 : size > offset ? size - offset : 0;
  }
  if (bytes == 0) { /* from the end: as inline, zero bytes */
    *ret_data = NULL;
    *ret_len = 0;
    return 0;
  }
  rc = pto_shm_create(client, bytes, timeout_ms, &r, err);
  if (rc < 0) return rc;
  rc = pto_client_buffer_read_shm(client, name, offset, r, 0, bytes, timeout_ms, &got, err);
  if (rc == 0) {
    copy = malloc(got ? got : 1);
    if (!copy) {
      rc = nomem(err);
    } else {
      memcpy(copy, pto_shm_data(r), got);
      *ret_data = copy;
      *ret_len = got;
    }
  }
  pto_shm_free(r);
  return rc;
}
