/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_buffer.c — buffer alloc | write | read | free | list (ctl.h): the
 * device-resident buffers of every daemon; write and read go through a
 * shared-memory region with --shm. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl.h"
#include "ctl_print.h"

#define HEXDUMP_MAX 4096

static void human_buffer_info(ctl_t *c, target_t *t) {
  const pto_buffer_info_t *b = t->result;
  (void)c;
  printf("allocated '%s': %" PRIu64 " bytes\n", b->name, b->bytes);
}

static uint64_t written(const target_t *t) {
  return t->via_shm ? t->shm_count : ((const pto_byte_count_t *)t->result)->bytes;
}

static void human_buffer_write(ctl_t *c, target_t *t) {
  printf("wrote %" PRIu64 " bytes to '%s' at offset %" PRIu64 "\n", written(t), c->words[2],
         c->offset);
}

static void json_buffer_write(ctl_t *c, json_t *j, target_t *t) {
  (void)c;
  json_begin_object(j);
  json_key(j, "bytes");
  json_uint(j, written(t));
  json_end_object(j);
}

static void human_buffer_free(ctl_t *c, target_t *t) {
  printf("freed '%s': %" PRIu64 " bytes\n", c->words[2],
         ((const pto_byte_count_t *)t->result)->bytes);
}

static void human_buffer_list(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_buffer_list(stdout, t->result);
}

/* The bytes a buffer read brought back. */
static const pto_bytes_t *read_bytes(const target_t *t) {
  return t->via_shm ? &t->shm_read : t->result;
}

static void human_buffer_read(ctl_t *c, target_t *t) {
  const pto_bytes_t *b = read_bytes(t);
  if (c->output) {
    printf("%zu bytes -> %s\n", b->len, c->output);
    return;
  }
  printf("%zu bytes\n", b->len);
  ctl_print_hexdump(stdout, b->ptr, b->len, HEXDUMP_MAX);
}

static void json_buffer_read(ctl_t *c, json_t *j, target_t *t) {
  const pto_bytes_t *b = read_bytes(t);
  json_begin_object(j);
  json_key(j, "bytes");
  json_uint(j, b->len);
  json_key(j, c->output ? "file" : "hex");
  if (c->output)
    json_cstr(j, c->output);
  else
    json_hex(j, b->ptr, b->len);
  json_end_object(j);
}

/* --- the subcommands' words into c->req ---------------------------------------- */

static int check_list(ctl_t *c) {
  static const view_t view = {human_buffer_list, NULL};
  if (c->nwords != 2) return ctl_usage_error("'buffer list' takes no arguments.");
  c->req.method = PTO_METHOD_BUFFER_LIST;
  c->view = &view;
  return 0;
}

/* NAME SIZE|DATA: zeroed bytes, or the data's. */
static int check_alloc(ctl_t *c) {
  static const view_t view = {human_buffer_info, NULL};
  char msg[512];
  int rc;
  if (c->nwords != 4) return ctl_usage_error("Usage: buffer alloc NAME SIZE|DATA");
  c->req.method = PTO_METHOD_BUFFER_ALLOC;
  c->req.u.buffer_alloc.name = c->words[2];
  rc = ctl_parse_data(c->words[3], &c->data, msg, sizeof(msg));
  if (rc < 0) return ctl_local_error(rc, msg);
  if (rc == 0) {
    c->req.u.buffer_alloc.bytes = c->data.len;
    c->req.u.buffer_alloc.init = c->data.ptr;
  } else {
    rc = ctl_parse_size("The buffer size", c->words[3], &c->req.u.buffer_alloc.bytes, msg,
                        sizeof(msg));
    if (rc < 0) return ctl_usage_error("%s", msg);
  }
  c->view = &view;
  return 0;
}

static int check_write(ctl_t *c) {
  static const view_t view = {human_buffer_write, json_buffer_write};
  char msg[512];
  int rc;
  if (c->nwords != 4) return ctl_usage_error("Usage: buffer write NAME DATA [--offset N]");
  rc = ctl_parse_data(c->words[3], &c->data, msg, sizeof(msg));
  if (rc == 1)
    return ctl_usage_error("'%s' is not data: use @FILE, f32:LIST, i32:LIST or hex:HEX.",
                           c->words[3]);
  if (rc < 0) return ctl_local_error(rc, msg);
  c->req.method = PTO_METHOD_BUFFER_WRITE;
  c->req.u.buffer_write.name = c->words[2];
  c->req.u.buffer_write.offset = c->offset;
  c->req.u.buffer_write.data = c->data.ptr;
  c->req.u.buffer_write.len = c->data.len;
  c->view = &view;
  return 0;
}

static int check_read(ctl_t *c) {
  static const view_t view = {human_buffer_read, json_buffer_read};
  if (c->nwords != 3)
    return ctl_usage_error("Usage: buffer read NAME [--offset N] [--bytes N] [-o FILE]");
  if (c->output && ctl_multi(c)) return ctl_usage_error("-o FILE reads from one daemon only.");
  c->req.method = PTO_METHOD_BUFFER_READ;
  c->req.u.buffer_read.name = c->words[2];
  c->req.u.buffer_read.offset = c->offset;
  c->req.u.buffer_read.bytes = c->bytes;
  c->view = &view;
  return 0;
}

static int check_free(ctl_t *c) {
  static const view_t view = {human_buffer_free, NULL};
  if (c->nwords != 3) return ctl_usage_error("Usage: buffer free NAME");
  c->req.method = PTO_METHOD_BUFFER_FREE;
  c->req.u.buffer_free.name = c->words[2];
  c->view = &view;
  return 0;
}

int ctl_buffer_check(ctl_t *c) {
  static const struct {
    const char *name;
    int (*check)(ctl_t *c);
  } subs[] = {
      {"list", check_list},   {"alloc", check_alloc}, {"write", check_write},
      {"read", check_read},   {"free", check_free},
  };
  const char *sub = c->nwords > 1 ? c->words[1] : "";
  for (size_t i = 0; i < sizeof(subs) / sizeof(subs[0]); i++)
    if (strcmp(sub, subs[i].name) == 0) return subs[i].check(c);
  return ctl_usage_error("'buffer' needs alloc, write, read, free or list%s%s%s.",
                         sub[0] ? ", not '" : "", sub, sub[0] ? "'" : "");
}

/* --- run ----------------------------------------------------------------------- */

/* --shm: buffer write / read on every target, each through a region of its
 * own connection. */
static void shm_call_all(ctl_t *c, const pto_request_t *req) {
  double t0 = ctl_now_ms();
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    uint8_t *data = NULL;
    size_t len = 0;
    if (t->rc < 0) continue;
    if (req->method == PTO_METHOD_BUFFER_WRITE) {
      t->rc = ctl_shm_buffer_write(t->client, req->u.buffer_write.name, req->u.buffer_write.offset,
                                   req->u.buffer_write.data, req->u.buffer_write.len,
                                   c->timeout_ms, &t->shm_count, &t->err);
    } else {
      t->rc = ctl_shm_buffer_read(t->client, req->u.buffer_read.name, req->u.buffer_read.offset,
                                  req->u.buffer_read.bytes, c->timeout_ms, &data, &len, &t->err);
      t->shm_read = (pto_bytes_t){data, len};
    }
    t->via_shm = t->rc == 0;
    t->ms = ctl_now_ms() - t0;
  }
}

int ctl_buffer_run(ctl_t *c) {
  pto_method_t method = c->req.method;
  char msg[512];
  bool via_shm = c->shm && (method == PTO_METHOD_BUFFER_WRITE || method == PTO_METHOD_BUFFER_READ);
  if (via_shm && (c->opts.priority || c->opts.request_id))
    return ctl_usage_error("--priority and --request-id do not go with buffer write|read --shm.");
  if (via_shm)
    shm_call_all(c, &c->req);
  else
    ctl_call_all(c, &c->req);
  /* -o FILE: the bytes go to the file before the outcome is shown. */
  if (method == PTO_METHOD_BUFFER_READ && c->output && c->targets[0].rc == 0) {
    const pto_bytes_t *b = read_bytes(&c->targets[0]);
    int rc = ctl_write_file(c->output, b->ptr, b->len, msg, sizeof(msg));
    if (rc < 0) {
      fprintf(stderr, "ptoctl: %s\n", msg);
      return -rc;
    }
  }
  return ctl_show_all(c, c->view);
}
