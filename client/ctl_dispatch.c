/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_dispatch.c — dispatch PROGRAM [ARG]... (ctl.h): one program run on
 * every daemon, sent to all before any answer is awaited; the outputs
 * shown or written to --out-dir, the DFX artefacts saved to --dfx-dir. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctl_dfx.h"
#include "ctl_print.h"

#define JSON_F32_MAX 4096

typedef struct out_files {
  char **files; /* per output index, or NULL */
  uint32_t n;
} out_files_t;

static void out_files_free(out_files_t *o) {
  for (uint32_t i = 0; o->files && i < o->n; i++) free(o->files[i]);
  free(o->files);
  memset(o, 0, sizeof(*o));
}

static int make_dir(const char *dir, char *msg, size_t len) {
  if (mkdir(dir, 0755) == 0 || errno == EEXIST) return 0;
  snprintf(msg, len, "Cannot create the directory '%s': %s.", dir, strerror(errno));
  return -CTL_EXIT_FILE;
}

/* Several daemons: DIR/deviceD, or DIR/targetK when the device number is
 * unknown. */
static void target_dir(const target_t *t, int index, const char *top, char *dir, size_t len) {
  int device = ctl_target_device(t);
  if (device >= 0)
    snprintf(dir, len, "%s/device%d", top, device);
  else
    snprintf(dir, len, "%s/target%d", top, index);
}

/* The dispatch result as shown: with --shm, the outputs from the region. */
static const pto_dispatch_result_t *shown(const target_t *t) {
  return t->shm ? ctl_shm_result(t->shm, t->result) : t->result;
}

/* --out-dir: DIR/outN.bin, or under target_dir for several daemons. */
static int write_outputs(ctl_t *c, int index, target_t *t, out_files_t *ret) {
  const pto_dispatch_result_t *r = shown(t);
  char dir[4096], msg[4400];
  int rc;
  memset(ret, 0, sizeof(*ret));
  if (!c->out_dir || t->rc < 0) return 0;
  rc = make_dir(c->out_dir, msg, sizeof(msg));
  if (rc == 0 && ctl_multi(c)) {
    target_dir(t, index, c->out_dir, dir, sizeof(dir));
    rc = make_dir(dir, msg, sizeof(msg));
  } else {
    snprintf(dir, sizeof(dir), "%s", c->out_dir);
  }
  if (rc == 0) {
    ret->files = calloc(r->noutputs ? r->noutputs : 1, sizeof(char *));
    ret->n = r->noutputs;
    if (!ret->files) return CTL_EXIT_PROTOCOL;
  }
  for (uint32_t i = 0; rc == 0 && i < r->noutputs; i++) {
    size_t len;
    if (!r->outputs[i].ptr) continue;
    len = strlen(dir) + 32;
    ret->files[i] = malloc(len);
    if (!ret->files[i]) return CTL_EXIT_PROTOCOL;
    snprintf(ret->files[i], len, "%s/out%u.bin", dir, i);
    rc = ctl_write_file(ret->files[i], r->outputs[i].ptr, r->outputs[i].len, msg, sizeof(msg));
  }
  if (rc < 0) {
    fprintf(stderr, "ptoctl: %s\n", msg);
    return -rc;
  }
  return 0;
}

/* --dfx-dir: the artefacts of the result, or of the error (a deadlock's
 * trace is what explains it); under target_dir for several daemons. */
static int save_dfx(ctl_t *c, int index, target_t *t) {
  const pto_dfx_t *dfx;
  char dir[4096], msg[4400];
  int rc;
  if (!c->dfx_dir || !t->client) return 0;
  dfx = t->rc == 0 ? &((const pto_dispatch_result_t *)t->result)->dfx
                   : pto_client_error_dfx(t->client);
  if (t->rc < 0 && !dfx) return 0; /* failed before it ran: nothing was traced */
  if (ctl_multi(c)) {
    rc = make_dir(c->dfx_dir, msg, sizeof(msg));
    if (rc < 0) return ctl_local_error(rc, msg);
    target_dir(t, index, c->dfx_dir, dir, sizeof(dir));
  } else {
    snprintf(dir, sizeof(dir), "%s", c->dfx_dir);
  }
  rc = ctl_dfx_save(dir, dfx, msg, sizeof(msg));
  return rc < 0 ? ctl_local_error(rc, msg) : 0;
}

static void human_dispatch(ctl_t *c, target_t *t) {
  ctl_print_dispatch(stdout, shown(t), c->files[t - c->targets].files);
}

typedef struct bin_ctx {
  const pto_dispatch_result_t *r;
  char *const *files;
} bin_ctx_t;

/* An output in JSON: {"bytes", "file"} with --out-dir, else {"bytes",
 * "hex", and "f32" (when the size is a multiple of 4, up to 4096 values)}. */
static void json_output(json_t *j, const uint8_t *p, size_t len, void *ctx) {
  const bin_ctx_t *b = ctx;
  const char *file = NULL;
  for (uint32_t i = 0; b->files && i < b->r->noutputs; i++)
    if (b->r->outputs[i].ptr == p) file = b->files[i];
  json_begin_object(j);
  json_key(j, "bytes");
  json_uint(j, len);
  if (file) {
    json_key(j, "file");
    json_cstr(j, file);
  } else {
    json_key(j, "hex");
    json_hex(j, p, len);
    if (len % 4 == 0 && len / 4 <= JSON_F32_MAX) {
      json_key(j, "f32");
      json_begin_array(j);
      for (size_t i = 0; i < len / 4; i++) {
        float v;
        memcpy(&v, p + 4 * i, 4);
        json_double(j, (double)v);
      }
      json_end_array(j);
    }
  }
  json_end_object(j);
}

static void json_dispatch(ctl_t *c, json_t *j, target_t *t) {
  bin_ctx_t b = {shown(t), c->files[t - c->targets].files};
  if (t->shm)
    ctl_shm_json(t->shm, j, t->result, json_output, &b);
  else
    ctl_json_raw(j, t->result, json_output, &b);
}

int ctl_dispatch_parse(ctl_t *c, const char *what) {
  pto_dispatch_req_t *req = &c->req.u.dispatch;
  char msg[600];
  int rc;
  if (c->nwords < 2) return ctl_usage_error("Usage: %s PROGRAM [ARG]...", what);
  rc = ctl_parse_args(c->words + 2, c->nwords - 2, &c->args, msg, sizeof(msg));
  if (rc < 0) return ctl_local_error(rc, msg);
  c->req.method = PTO_METHOD_DISPATCH;
  memset(req, 0, sizeof(*req));
  req->program = c->words[1];
  req->args = c->args.args;
  req->nargs = c->args.n;
  req->config = c->config;
  req->deadline_ms = c->deadline_ms;
  return 0;
}

int ctl_dispatch_check(ctl_t *c) {
  static const view_t view = {human_dispatch, json_dispatch};
  c->view = &view;
  return ctl_dispatch_parse(c, "dispatch");
}

/* With --shm each connected target's data into a region of its own; devs:
 * the targets still in the running, map: their index in c->targets. */
static int stage_all(ctl_t *c, pto_device_dispatch_t *devs, int *map) {
  int n = 0;
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc == 0 && c->shm)
      t->rc = ctl_shm_stage(t->client, c->args.args, c->args.n, c->timeout_ms, &t->shm, &t->err);
    if (t->rc < 0) continue;
    devs[n].client = t->client;
    if (t->shm) {
      devs[n].args = ctl_shm_args(t->shm);
      devs[n].nargs = c->args.n;
    }
    map[n++] = i;
  }
  return n;
}

/* With --priority or --request-id: sent to every daemon with them (each
 * with its own region's arguments under --shm), then every answer awaited. */
static void dispatch_opts(ctl_t *c, const int *map, int n) {
  double t0 = ctl_now_ms();
  pto_request_t r = {.method = PTO_METHOD_DISPATCH};
  for (int k = 0; k < n; k++) {
    target_t *t = &c->targets[map[k]];
    r.u.dispatch = c->req.u.dispatch;
    if (t->shm) r.u.dispatch.args = ctl_shm_args(t->shm);
    t->rc = pto_client_send_opts(t->client, &r, &c->opts, c->timeout_ms, &t->msgid, &t->err);
  }
  for (int k = 0; k < n; k++) {
    target_t *t = &c->targets[map[k]];
    if (t->rc < 0) continue;
    t->rc = pto_client_wait(t->client, t->msgid, c->timeout_ms, &t->result, &t->err);
    t->ms = ctl_now_ms() - t0;
  }
}

/* One daemon: a plain call.  Several: one call for every device, the same
 * program and config sent to all before any answer is awaited. */
static void dispatch_all(ctl_t *c, pto_device_dispatch_t *devs, const int *map, int n) {
  pto_dispatch_req_t req = c->req.u.dispatch;
  if (c->opts.priority || c->opts.request_id) {
    dispatch_opts(c, map, n);
  } else if (n == 1 && !ctl_multi(c)) {
    target_t *t = &c->targets[map[0]];
    pto_dispatch_result_t *r = NULL;
    if (t->shm) req.args = ctl_shm_args(t->shm);
    t->rc = pto_client_dispatch(t->client, &req, c->timeout_ms, &r, &t->err);
    t->result = r;
  } else if (n > 0) {
    pto_client_dispatch_multi(&req, devs, (size_t)n, c->timeout_ms, NULL);
    for (int k = 0; k < n; k++) {
      target_t *t = &c->targets[map[k]];
      t->rc = devs[k].rc;
      t->err = devs[k].err;
      t->result = devs[k].result;
    }
  }
}

int ctl_dispatch_run(ctl_t *c) {
  pto_device_dispatch_t devs[CTL_MAX_TARGETS];
  out_files_t files[CTL_MAX_TARGETS];
  int map[CTL_MAX_TARGETS], status, file_status = 0;
  memset(devs, 0, sizeof(devs));
  memset(files, 0, sizeof(files));
  dispatch_all(c, devs, map, stage_all(c, devs, map));
  for (int i = 0; i < c->ntargets; i++) {
    int rc = write_outputs(c, i, &c->targets[i], &files[i]);
    if (rc && !file_status) file_status = rc;
    rc = save_dfx(c, i, &c->targets[i]);
    if (rc && !file_status) file_status = rc;
  }
  c->files = files;
  status = ctl_show_all(c, c->view);
  for (int i = 0; i < c->ntargets; i++) out_files_free(&files[i]);
  c->files = NULL;
  return status ? status : file_status;
}
