/* SPDX-License-Identifier: Apache-2.0 */
/* request_shm.c — see request_shm.h: the request module's shared-memory
 * handlers. */
#include "request_shm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shared-memory ranges a device request names, checked and
 * referenced now (the device thread copies through them): a dispatch's
 * args by index.  An input range becomes the argument's data, as inline
 * bytes would be. */
int regions_dispatch(req_t *req, shm_table_t *shm, pto_error_t *err) {
  msgpack_zone *z = req->unpacked.zone;
  proto_dispatch_params_t *p = &req->params.dispatch;
  uint32_t n = 0;
  char what[32];
  int rc = 0;
  for (uint32_t i = 0; i < p->nargs; i++) n += p->args[i].shm != NULL;
  if (n == 0) return 0;
  req->shm_ptr = msgpack_zone_malloc(z, p->nargs * sizeof(*req->shm_ptr));
  req->shm_refs = msgpack_zone_malloc(z, n * sizeof(*req->shm_refs));
  if (!req->shm_ptr || !req->shm_refs) return service_out_of_memory(err);
  for (uint32_t i = 0; i < p->nargs && rc == 0; i++) {
    proto_arg_t *a = (proto_arg_t *)&p->args[i]; /* decoded into this request's zone */
    req->shm_ptr[i] = NULL;
    if (!a->shm) continue;
    snprintf(what, sizeof(what), "args[%u]", i);
    rc = shm_acquire(shm, a->shm, a->offset, a->bytes, what, &req->shm_refs[req->nshm_refs],
                     &req->shm_ptr[i], err);
    if (rc < 0) {
      snprintf(err->key, sizeof(err->key), "%s", what);
      break;
    }
    req->nshm_refs++;
    if (a->kind != PTO_ARG_OUTPUT) a->data = (proto_bytes_t){req->shm_ptr[i], a->bytes};
  }
  return rc;
}

/* One range of a buffer method (name NULL: none), as req->shm_ptr[0]. */
static int region_one(req_t *req, shm_table_t *shm, const char *name, uint64_t offset,
                      uint64_t bytes, pto_error_t *err) {
  msgpack_zone *z = req->unpacked.zone;
  int rc;
  if (!name) return 0;
  req->shm_ptr = msgpack_zone_malloc(z, sizeof(*req->shm_ptr));
  req->shm_refs = msgpack_zone_malloc(z, sizeof(*req->shm_refs));
  if (!req->shm_ptr || !req->shm_refs) return service_out_of_memory(err);
  rc = shm_acquire(shm, name, offset, bytes, proto_method_name(req->method), &req->shm_refs[0],
                   &req->shm_ptr[0], err);
  if (rc < 0) {
    snprintf(err->key, sizeof(err->key), "shm");
    return rc;
  }
  req->nshm_refs = 1;
  return 0;
}

/* buffer.write's source range becomes its data. */
int regions_write(req_t *req, shm_table_t *shm, pto_error_t *err) {
  proto_buffer_write_params_t *p = &req->params.buffer_write;
  int rc = region_one(req, shm, p->shm, p->shm_offset, p->bytes, err);
  if (rc == 0 && p->shm) p->data = (proto_bytes_t){req->shm_ptr[0], p->bytes};
  return rc;
}

int regions_read(req_t *req, shm_table_t *shm, pto_error_t *err) {
  const proto_buffer_read_params_t *p = &req->params.buffer_read;
  return region_one(req, shm, p->shm, p->shm_offset, p->bytes, err);
}

typedef struct region_list {
  proto_buffer_info_t *items;
  uint32_t count;
} region_list_t;

static void list_region(void *data, const char *name, uint64_t bytes) {
  region_list_t *list = data;
  list->items[list->count++] = (proto_buffer_info_t){name, bytes};
}

/* shm.register, shm.unregister and shm.list: the connection's own regions,
 * on the loop. */
int serve_shm_register(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                              pto_error_t *err) {
  const proto_shm_register_params_t *p = &req->params.shm_register;
  const cfg_daemon_t *c = &req->d->loop.cfg.daemon;
  shm_limits_t limits = {.bytes = c->shm_limit,
                         .regions = c->shm_regions,
                         .bytes_total = c->shm_limit_total,
                         .regions_total = c->shm_regions_total};
  shm_table_t *shm = req_conn_shm(req);
  int fd, rc;
  (void)scratch;
  if (!shm) return service_out_of_memory(err);
  if (req->fd == -1)
    return pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "shm.register '%s' came with no file descriptor: pass the region's "
                         "memfd as SCM_RIGHTS on the sendmsg() that carries the request.",
                         p->name);
  if (req->fds_together > 1)
    return pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "shm.register '%s' came with %u file descriptors; pass exactly one "
                         "(none of them was kept).",
                         p->name, req->fds_together);
  if (req->fd == SRV_FD_REFUSED)
    return pto_error_set(err, PTO_E_INVALID_ARGS,
                         "shm.register '%s': the file descriptor is not a memfd (the daemon "
                         "closed it on arrival); create it with "
                         "memfd_create(MFD_ALLOW_SEALING).",
                         p->name);
  fd = req->fd;
  req->fd = -1; /* shm_register's now: closed whatever happens */
  rc = shm_register(shm, p->name, p->bytes, fd, &limits, err);
  if (rc < 0) return rc;
  result->shm_register = (proto_buffer_info_t){p->name, p->bytes};
  return 0;
}

int serve_shm_unregister(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                                pto_error_t *err) {
  shm_table_t *shm = req_conn_shm(req);
  (void)scratch;
  if (!shm) return service_out_of_memory(err);
  return shm_unregister(shm, req->params.shm_unregister.name, &result->shm_unregister.bytes, err);
}

int serve_shm_list(req_t *req, proto_result_t *result, service_scratch_t *scratch,
                          pto_error_t *err) {
  shm_table_t *shm = req_conn_shm(req);
  uint32_t n;
  region_list_t list;
  if (!shm) return service_out_of_memory(err);
  n = shm_count(shm);
  list = (region_list_t){calloc(n ? n : 1, sizeof(proto_buffer_info_t)), 0};
  if (!list.items) return service_out_of_memory(err);
  shm_foreach(shm, list_region, &list);
  result->shm_list = (proto_buffer_list_t){list.items, list.count};
  scratch->bufs = list.items;
  return 0;
}
