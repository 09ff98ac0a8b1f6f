/* SPDX-License-Identifier: Apache-2.0 */
/* request_shm.h — the request module's handlers for shared memory, named
 * by rows of its method table (request.c): the ranges a device request
 * names, acquired at admission, and the shm.* methods served on the loop.
 * Part of the request module; nothing else includes it.  Loop thread. */
#ifndef PTOD_REQUEST_SHM_H
#define PTOD_REQUEST_SHM_H

#include "request.h"
#include "service.h"
#include "shm.h"

/* The connection's shared-memory regions, made when first needed
 * (request.c, which owns the connection's state); NULL when out of
 * memory. */
shm_table_t *req_conn_shm(req_t *req);

/* The ranges of a dispatch's args, buffer.write's source and
 * buffer.read's destination, checked and referenced until the request
 * ends (req->shm_refs): 0, or a negative error with err->key naming the
 * argument. */
int regions_dispatch(req_t *req, shm_table_t *shm, pto_error_t *err);
int regions_write(req_t *req, shm_table_t *shm, pto_error_t *err);
int regions_read(req_t *req, shm_table_t *shm, pto_error_t *err);

/* shm.register, shm.unregister and shm.list: the connection's own
 * regions (service.h's loop-handler shape). */
service_serve_fn serve_shm_register, serve_shm_unregister, serve_shm_list;

#endif
