/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl — the operator's command-line client for ptod (ptoctl(1)).
 *
 * Every command runs against one daemon or several (-s/--device given more
 * than once): requests go to all of them before any answer is awaited, so
 * the devices work in parallel, and each device's outcome is shown.
 * Human-readable output by default; --json prints the daemon's result as
 * JSON (the wire's keys), {"error": {...}} on failure, and
 * {"devices": [...]} for several daemons.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <pto/client.h>
#include <pto/version.h>

#include "ctl_advise.h"
#include "ctl_args.h"
#include "ctl_cdi.h"
#include "ctl_dfx.h"
#include "ctl_json.h"
#include "ctl_print.h"
#include "ctl_shm.h"
#include "paths.h"

#define MAX_TARGETS 256
#define DEFAULT_CONNECT_TIMEOUT_MS 5000
#define HEXDUMP_MAX 4096
#define JSON_F32_MAX 4096

typedef struct target {
  int device; /* from --device, else -1 */
  char socket[PTO_SOCKET_PATH_MAX + 64];
  pto_client_t *client;
  int rc; /* 0 or -code: the outcome of connect or of the command */
  pto_error_t err;
  uint32_t msgid;
  void *result;
  double ms; /* from sending to the answer */
  ctl_shm_t *shm;       /* --shm dispatch: its data's region */
  bool via_shm;         /* --shm buffer write/read: the outcome is here, not in result */
  uint64_t shm_count;   /* buffer write: the bytes written */
  pto_bytes_t shm_read; /* buffer read: a malloc'ed copy of the bytes */
} target_t;

typedef struct ctl {
  target_t targets[MAX_TARGETS];
  int ntargets;
  bool json;
  int timeout_ms;
  int connect_timeout_ms;
  pto_config_t *config;
  int64_t deadline_ms;
  const char *out_dir, *output;
  const char *dfx_dir, *apply; /* dispatch --dfx-dir, advise --apply */
  bool dfx_flags;              /* an enable_* key was given with --config-set */
  bool shm;                    /* --shm: data through a shared-memory region */
  uint64_t offset, bytes;
  long count, warmup;
  char **words; /* the command and its arguments */
  int nwords;
  struct out_files *files; /* dispatch: per target, where its outputs went */
} ctl_t;

static void usage(FILE *f) {
  fprintf(f,
          "Usage: ptoctl [OPTION]... COMMAND [ARG]...\n"
          "\n"
          "Commands:\n"
          "  ping | status | metrics | programs | advise\n"
          "  dispatch PROGRAM [ARG]...      run PROGRAM once\n"
          "  bench PROGRAM [ARG]...         run it -n times after --warmup runs, same config\n"
          "  buffer alloc NAME SIZE|DATA    a resident buffer (zeroed, or holding DATA)\n"
          "  buffer write NAME DATA         [--offset N]\n"
          "  buffer read NAME               [--offset N] [--bytes N] [-o FILE]\n"
          "  buffer free NAME | buffer list\n"
          "  prewarm                        build the arena for the ring options now\n"
          "  advise [--apply FILE]          the sizing that serves every dispatch seen; --apply\n"
          "                                 writes its [ring] and [prewarm] lines into FILE\n"
          "  dfx ring-occupancy TRACE.json -o OUT.svg\n"
          "                                 draw the rings' use over a traced dispatch\n"
          "  cdi generate [OPTION]...       a CDI spec for containers (ptoctl cdi --help)\n"
          "\n"
          "Dispatch arguments: @FILE, f32:1,2,3, i32:1,2, hex:00ff (inputs); inout:DATA;\n"
          "  buf:NAME[:OFFSET:BYTES]; out:SIZE; int:N, float:X or a bare number.\n"
          "\n"
          "Options:\n"
          "  -s, --socket PATH          the daemon's socket (repeat for several daemons)\n"
          "  -d, --device N             device N's built-in socket (repeatable; default 0)\n"
          "                             (neither: $PTOD_SOCKET if set, else device 0's)\n"
          "  -j, --json                 JSON output\n"
          "  -t, --timeout MS           give up on an answer after MS ms (default: wait)\n"
          "      --connect-timeout MS   (default %d)\n"
          "      --ring-task-window V   per-dispatch ring sizing: 512 or 512,0,0,0\n"
          "      --ring-heap V          sizes take K, M, G: 512M or 512M,0,0,0\n"
          "      --ring-dep-pool V\n"
          "      --config-set KEY=VALUE another config key, passed through as given\n"
          "      --deadline MS          the daemon gives up if the dispatch has not started\n"
          "      --out-dir DIR          write dispatch outputs to DIR/outN.bin\n"
          "      --dfx-dir DIR          dispatch: save its DFX artefacts (swimlane.json,\n"
          "                             scope_stats.jsonl, dep_graph.dot) in DIR, on failure too;\n"
          "                             asks for all three unless --config-set enable_... does\n"
          "  -o, --output FILE          buffer read: write the bytes to FILE\n"
          "      --offset N, --bytes N  buffer read/write position\n"
          "  -n, --count N              bench repetitions (default 100)\n"
          "  -w, --warmup N             bench warm-up runs (default 3)\n"
          "      --shm                  dispatch, bench, buffer write|read: move the data\n"
          "                             through a shared-memory region, not in the messages\n"
          "  -h, --help, -V, --version\n"
          "\n"
          "Environment: PTOD_SOCKET the default daemon's socket, like DOCKER_HOST;\n"
          "  PTOD_SOCKET_N device N's socket, before its built-in path (-d N).\n"
          "Exit status: 0 ok, 1 the daemon answered an error, 2 usage, 3 cannot connect or\n"
          "connection lost, 4 timeout, 5 local file error, 6 answer not understood.\n"
          "See ptoctl(1).\n",
          DEFAULT_CONNECT_TIMEOUT_MS);
}

/* An error of ctl_args (msg, -CTL_EXIT_*) as ptoctl reports it. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int local_error(int rc, const char *msg);
static int usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("ptoctl: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nTry 'ptoctl --help'.\n", stderr);
  return CTL_EXIT_USAGE;
}

static int local_error(int rc, const char *msg) {
  if (rc == -CTL_EXIT_USAGE) return usage_error("%s", msg);
  fprintf(stderr, "ptoctl: %s\n", msg);
  return -rc;
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- targets ------------------------------------------------------------------ */

static void target_label(const target_t *t, char *buf, size_t len) {
  int device = t->device >= 0 ? t->device : pto_client_device(t->client);
  if (device >= 0)
    snprintf(buf, len, "device %d", device);
  else
    snprintf(buf, len, "socket '%.*s'", PTO_SOCKET_PATH_MAX - 1, t->socket);
}

static bool multi(const ctl_t *c) {
  return c->ntargets > 1;
}

/* The error on stderr, always; with --json and one target also on stdout. */
static void report_error(const ctl_t *c, const target_t *t, const pto_error_t *err) {
  char label[PTO_SOCKET_PATH_MAX + 32];
  target_label(t, label, sizeof(label));
  /* A multi-device dispatch already names the device in the message. */
  if (multi(c) && strncmp(err->message, "device ", 7) != 0 &&
      strncmp(err->message, "socket '", 8) != 0)
    fprintf(stderr, "ptoctl: %s: %s: %s\n", label, pto_client_error_name(err->code), err->message);
  else
    fprintf(stderr, "ptoctl: %s: %s\n", pto_client_error_name(err->code), err->message);
  if (err->hint[0]) fprintf(stderr, "ptoctl: %s\n", err->hint);
}

static int connect_all(ctl_t *c) {
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->device >= 0) {
      t->rc = pto_client_connect_device(t->device, c->connect_timeout_ms, &t->client, &t->err);
      /* A failed connect says it in its error. */
      if (t->rc == 0 && pto_client_path_warning(t->client)[0])
        fprintf(stderr, "ptoctl: warning: %s\n", pto_client_path_warning(t->client));
    } else
      t->rc = pto_client_connect(t->socket, c->connect_timeout_ms, &t->client, &t->err);
  }
  return 0;
}

static void close_all(ctl_t *c) {
  for (int i = 0; i < c->ntargets; i++) {
    pto_result_free(c->targets[i].result);
    ctl_shm_free(c->targets[i].shm);
    free((void *)(uintptr_t)c->targets[i].shm_read.ptr);
    pto_client_close(c->targets[i].client);
  }
}

/* Send req to every connected target, then collect every answer. */
static void call_all(ctl_t *c, const pto_request_t *req) {
  double t0 = now_ms();
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc == 0) t->rc = pto_client_send(t->client, req, c->timeout_ms, &t->msgid, &t->err);
  }
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc < 0) continue;
    t->rc = pto_client_wait(t->client, t->msgid, c->timeout_ms, &t->result, &t->err);
    t->ms = now_ms() - t0;
  }
}

/* How one successful result is shown. */
typedef struct view {
  void (*human)(ctl_t *c, target_t *t);
  void (*json)(ctl_t *c, json_t *j, target_t *t); /* NULL: the daemon's result as is */
} view_t;

static void json_raw(json_t *j, const void *result, json_bin_fn bin, void *ctx) {
  const void *data;
  size_t len;
  pto_result_msgpack(result, &data, &len);
  if (!json_msgpack_bytes(j, data, len, bin, ctx)) json_null(j);
}

/* Every target's outcome, and the exit status: that of the first failure. */
static int show_all(ctl_t *c, const view_t *v) {
  int status = CTL_EXIT_OK;
  json_t j;
  json_init(&j, stdout);
  if (c->json && multi(c)) {
    json_begin_object(&j);
    json_key(&j, "devices");
    json_begin_array(&j);
  }
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    char label[PTO_SOCKET_PATH_MAX + 32];
    int device = t->device >= 0 ? t->device : pto_client_device(t->client);
    target_label(t, label, sizeof(label));
    if (t->rc < 0) {
      report_error(c, t, &t->err);
      if (status == CTL_EXIT_OK) status = ctl_exit_for(t->rc);
    }
    if (c->json) {
      if (multi(c)) {
        json_begin_object(&j);
        json_key(&j, "device");
        if (device >= 0)
          json_int(&j, device);
        else
          json_null(&j);
        json_key(&j, "socket");
        json_cstr(&j, pto_client_socket_path(t->client)[0] ? pto_client_socket_path(t->client)
                                                           : t->socket);
        json_key(&j, "ok");
        json_bool(&j, t->rc == 0);
        json_key(&j, t->rc == 0 ? "result" : "error");
      } else if (t->rc < 0) {
        json_begin_object(&j);
        json_key(&j, "error");
      }
      if (t->rc < 0)
        ctl_json_error(&j, &t->err);
      else if (v->json)
        v->json(c, &j, t);
      else
        json_raw(&j, t->result, NULL, NULL);
      if (multi(c) || t->rc < 0) json_end_object(&j);
    } else {
      if (multi(c)) printf("%s== %s (%s) ==\n", i ? "\n" : "", label, t->socket);
      if (t->rc == 0)
        v->human(c, t);
      else if (multi(c))
        printf("error: %s: %s\n", pto_client_error_name(t->err.code), t->err.message);
    }
  }
  if (c->json) {
    if (multi(c)) {
      json_end_array(&j);
      json_end_object(&j);
    }
    json_finish(&j);
  }
  fflush(stdout);
  return status;
}

static int run_simple(ctl_t *c, const pto_request_t *req, const view_t *v) {
  connect_all(c);
  call_all(c, req);
  return show_all(c, v);
}

/* --- the simple commands ------------------------------------------------------------ */

static void human_ping(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_ping(stdout, t->result, t->ms);
}
static void human_status(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_status(stdout, t->result);
}
static void human_metrics(ctl_t *c, target_t *t) {
  const pto_text_t *m = t->result;
  (void)c;
  fwrite(m->text, 1, m->len, stdout);
}
static void human_programs(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_programs(stdout, t->result);
}
static void human_arena(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_arena(stdout, t->result);
}
static void human_advise(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_advise(stdout, t->result);
}
static void human_buffer_list(ctl_t *c, target_t *t) {
  (void)c;
  ctl_print_buffer_list(stdout, t->result);
}

static int cmd_simple(ctl_t *c, pto_method_t method) {
  static const view_t views[] = {
      [PTO_METHOD_PING] = {human_ping, NULL},
      [PTO_METHOD_STATUS] = {human_status, NULL},
      [PTO_METHOD_METRICS] = {human_metrics, NULL},
      [PTO_METHOD_PROGRAMS] = {human_programs, NULL},
      [PTO_METHOD_ADVISE] = {human_advise, NULL},
      [PTO_METHOD_BUFFER_LIST] = {human_buffer_list, NULL},
  };
  pto_request_t req = {.method = method};
  if (c->nwords != 1) return usage_error("'%s' takes no arguments.", c->words[0]);
  return run_simple(c, &req, &views[method]);
}

static int cmd_advise(ctl_t *c) {
  char msg[4600];
  int rc = cmd_simple(c, PTO_METHOD_ADVISE);
  if (rc || !c->apply) return rc;
  if (multi(c)) return usage_error("advise --apply takes one daemon: each may need its own.");
  rc = ctl_advise_apply(c->targets[0].result, c->apply, msg, sizeof(msg));
  return rc < 0 ? local_error(rc, msg) : 0;
}

static int cmd_dfx(ctl_t *c) {
  char msg[4600];
  int rc;
  if (c->nwords != 3 || strcmp(c->words[1], "ring-occupancy") != 0 || !c->output)
    return usage_error("Usage: dfx ring-occupancy TRACE.json -o OUT.svg");
  rc = ctl_dfx_ring_occupancy(c->words[2], c->output, msg, sizeof(msg));
  if (rc < 0) return local_error(rc, msg);
  fprintf(stderr, "ptoctl: wrote %s\n", c->output);
  return 0;
}

static int cmd_prewarm(ctl_t *c) {
  static const view_t view = {human_arena, NULL};
  pto_request_t req = {.method = PTO_METHOD_PREWARM};
  if (c->nwords != 1) return usage_error("'prewarm' takes no arguments, only ring options.");
  req.u.prewarm.config = c->config;
  return run_simple(c, &req, &view);
}

/* --- buffer ------------------------------------------------------------------------------ */

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

static void human_buffer_read(ctl_t *c, target_t *t) {
  const pto_bytes_t *b = t->via_shm ? &t->shm_read : t->result;
  if (c->output) {
    printf("%zu bytes -> %s\n", b->len, c->output);
    return;
  }
  printf("%zu bytes\n", b->len);
  ctl_print_hexdump(stdout, b->ptr, b->len, HEXDUMP_MAX);
}

static void json_buffer_read(ctl_t *c, json_t *j, target_t *t) {
  const pto_bytes_t *b = t->via_shm ? &t->shm_read : t->result;
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

/* --shm: buffer write / read on every target, each through a region of its
 * own connection. */
static void shm_call_all(ctl_t *c, const pto_request_t *req) {
  double t0 = now_ms();
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
    t->ms = now_ms() - t0;
  }
}

static int shm_buffer_all(ctl_t *c, const pto_request_t *req, const view_t *v) {
  connect_all(c);
  shm_call_all(c, req);
  return show_all(c, v);
}

static int cmd_buffer(ctl_t *c) {
  static const view_t info = {human_buffer_info, NULL},
                      wrote = {human_buffer_write, json_buffer_write},
                      freed = {human_buffer_free, NULL}, list = {human_buffer_list, NULL},
                      read = {human_buffer_read, json_buffer_read};
  pto_request_t req;
  const char *sub = c->nwords > 1 ? c->words[1] : "";
  char msg[512];
  ctl_data_t data = {NULL, 0};
  int rc, status;
  memset(&req, 0, sizeof(req));
  if (strcmp(sub, "list") == 0) {
    if (c->nwords != 2) return usage_error("'buffer list' takes no arguments.");
    req.method = PTO_METHOD_BUFFER_LIST;
    return run_simple(c, &req, &list);
  }
  if (strcmp(sub, "alloc") == 0) {
    if (c->nwords != 4) return usage_error("Usage: buffer alloc NAME SIZE|DATA");
    req.method = PTO_METHOD_BUFFER_ALLOC;
    req.u.buffer_alloc.name = c->words[2];
    rc = ctl_parse_data(c->words[3], &data, msg, sizeof(msg));
    if (rc < 0) return local_error(rc, msg);
    if (rc == 0) {
      req.u.buffer_alloc.bytes = data.len;
      req.u.buffer_alloc.init = data.ptr;
    } else {
      rc = ctl_parse_size("The buffer size", c->words[3], &req.u.buffer_alloc.bytes, msg,
                          sizeof(msg));
      if (rc < 0) return usage_error("%s", msg);
    }
    status = run_simple(c, &req, &info);
    free(data.ptr);
    return status;
  }
  if (strcmp(sub, "write") == 0) {
    if (c->nwords != 4) return usage_error("Usage: buffer write NAME DATA [--offset N]");
    rc = ctl_parse_data(c->words[3], &data, msg, sizeof(msg));
    if (rc == 1)
      return usage_error("'%s' is not data: use @FILE, f32:LIST, i32:LIST or hex:HEX.",
                         c->words[3]);
    if (rc < 0) return local_error(rc, msg);
    req.method = PTO_METHOD_BUFFER_WRITE;
    req.u.buffer_write.name = c->words[2];
    req.u.buffer_write.offset = c->offset;
    req.u.buffer_write.data = data.ptr;
    req.u.buffer_write.len = data.len;
    if (c->shm)
      status = shm_buffer_all(c, &req, &wrote);
    else
      status = run_simple(c, &req, &wrote);
    free(data.ptr);
    return status;
  }
  if (strcmp(sub, "read") == 0) {
    if (c->nwords != 3)
      return usage_error("Usage: buffer read NAME [--offset N] [--bytes N] [-o FILE]");
    if (c->output && multi(c)) return usage_error("-o FILE reads from one daemon only.");
    req.method = PTO_METHOD_BUFFER_READ;
    req.u.buffer_read.name = c->words[2];
    req.u.buffer_read.offset = c->offset;
    req.u.buffer_read.bytes = c->bytes;
    connect_all(c);
    if (c->shm)
      shm_call_all(c, &req);
    else
      call_all(c, &req);
    if (c->output && c->targets[0].rc == 0) {
      const pto_bytes_t *b = c->targets[0].via_shm ? &c->targets[0].shm_read : c->targets[0].result;
      rc = ctl_write_file(c->output, b->ptr, b->len, msg, sizeof(msg));
      if (rc < 0) {
        fprintf(stderr, "ptoctl: %s\n", msg);
        return -rc;
      }
    }
    return show_all(c, &read);
  }
  if (strcmp(sub, "free") == 0) {
    if (c->nwords != 3) return usage_error("Usage: buffer free NAME");
    req.method = PTO_METHOD_BUFFER_FREE;
    req.u.buffer_free.name = c->words[2];
    return run_simple(c, &req, &freed);
  }
  return usage_error("'buffer' needs alloc, write, read, free or list%s%s%s.",
                     sub[0] ? ", not '" : "", sub, sub[0] ? "'" : "");
}

/* --- dispatch ---------------------------------------------------------------------------- */

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

/* --out-dir: DIR/outN.bin, or DIR/deviceD/outN.bin (DIR/targetK/... when
 * the device number is unknown) for several daemons. */
/* The dispatch result as shown: with --shm, the outputs from the region. */
static const pto_dispatch_result_t *shown(const target_t *t) {
  return t->shm ? ctl_shm_result(t->shm, t->result) : t->result;
}

static int write_outputs(ctl_t *c, int index, target_t *t, out_files_t *ret) {
  const pto_dispatch_result_t *r = shown(t);
  char dir[4096], msg[4400];
  int rc;
  memset(ret, 0, sizeof(*ret));
  if (!c->out_dir || t->rc < 0) return 0;
  rc = make_dir(c->out_dir, msg, sizeof(msg));
  if (rc == 0 && multi(c)) {
    int device = t->device >= 0 ? t->device : pto_client_device(t->client);
    if (device >= 0)
      snprintf(dir, sizeof(dir), "%s/device%d", c->out_dir, device);
    else
      snprintf(dir, sizeof(dir), "%s/target%d", c->out_dir, index);
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
 * trace is what explains it); DIR/deviceD for several daemons. */
static int save_dfx(ctl_t *c, int index, target_t *t) {
  const pto_dfx_t *dfx;
  char dir[4096], msg[4400];
  int rc;
  if (!c->dfx_dir || !t->client) return 0;
  dfx = t->rc == 0 ? &((const pto_dispatch_result_t *)t->result)->dfx
                   : pto_client_error_dfx(t->client);
  if (t->rc < 0 && !dfx) return 0; /* failed before it ran: nothing was traced */
  if (multi(c)) {
    int device = t->device >= 0 ? t->device : pto_client_device(t->client);
    rc = make_dir(c->dfx_dir, msg, sizeof(msg));
    if (rc < 0) return local_error(rc, msg);
    if (device >= 0)
      snprintf(dir, sizeof(dir), "%s/device%d", c->dfx_dir, device);
    else
      snprintf(dir, sizeof(dir), "%s/target%d", c->dfx_dir, index);
  } else {
    snprintf(dir, sizeof(dir), "%s", c->dfx_dir);
  }
  rc = ctl_dfx_save(dir, dfx, msg, sizeof(msg));
  return rc < 0 ? local_error(rc, msg) : 0;
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
    json_raw(j, t->result, json_output, &b);
}

static int parse_dispatch(ctl_t *c, const char *what, ctl_args_t *args, pto_dispatch_req_t *req) {
  char msg[600];
  int rc;
  if (c->nwords < 2) return usage_error("Usage: %s PROGRAM [ARG]...", what);
  rc = ctl_parse_args(c->words + 2, c->nwords - 2, args, msg, sizeof(msg));
  if (rc < 0) return local_error(rc, msg);
  memset(req, 0, sizeof(*req));
  req->program = c->words[1];
  req->args = args->args;
  req->nargs = args->n;
  req->config = c->config;
  req->deadline_ms = c->deadline_ms;
  return 0;
}

static int cmd_dispatch(ctl_t *c) {
  static const view_t view = {human_dispatch, json_dispatch};
  pto_device_dispatch_t devs[MAX_TARGETS];
  int map[MAX_TARGETS], n = 0, status, file_status = 0;
  pto_dispatch_req_t req;
  ctl_args_t args;
  out_files_t files[MAX_TARGETS];
  int rc = parse_dispatch(c, "dispatch", &args, &req);
  if (rc) return rc;
  connect_all(c);
  memset(devs, 0, sizeof(devs));
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc == 0 && c->shm)
      t->rc = ctl_shm_stage(t->client, args.args, args.n, c->timeout_ms, &t->shm, &t->err);
    if (t->rc < 0) continue;
    devs[n].client = t->client;
    if (t->shm) {
      devs[n].args = ctl_shm_args(t->shm);
      devs[n].nargs = args.n;
    }
    map[n++] = i;
  }
  if (n == 1 && !multi(c)) {
    target_t *t = &c->targets[map[0]];
    pto_dispatch_result_t *r = NULL;
    if (t->shm) req.args = ctl_shm_args(t->shm);
    t->rc = pto_client_dispatch(t->client, &req, c->timeout_ms, &r, &t->err);
    t->result = r;
  } else if (n > 0) {
    /* One call for every device: the same program and config, sent to all
     * before any answer is awaited. */
    pto_client_dispatch_multi(&req, devs, (size_t)n, c->timeout_ms, NULL);
    for (int k = 0; k < n; k++) {
      target_t *t = &c->targets[map[k]];
      t->rc = devs[k].rc;
      t->err = devs[k].err;
      t->result = devs[k].result;
    }
  }
  memset(files, 0, sizeof(files));
  for (int i = 0; i < c->ntargets; i++) {
    rc = write_outputs(c, i, &c->targets[i], &files[i]);
    if (rc && !file_status) file_status = rc;
    rc = save_dfx(c, i, &c->targets[i]);
    if (rc && !file_status) file_status = rc;
  }
  c->files = files;
  status = show_all(c, &view);
  for (int i = 0; i < c->ntargets; i++) out_files_free(&files[i]);
  ctl_args_free(&args);
  return status ? status : file_status;
}

/* --- bench ---------------------------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, long n, double p) {
  long rank = (long)ceil(p / 100.0 * (double)n);
  if (rank < 1) rank = 1;
  return v[rank - 1];
}

static void json_stats(json_t *j, const char *key, const double *v, long n) {
  double sum = 0;
  for (long i = 0; i < n; i++) sum += v[i];
  json_key(j, key);
  json_begin_object(j);
  json_key(j, "min");
  json_int(j, llround(v[0]));
  json_key(j, "median");
  json_int(j, llround(percentile(v, n, 50)));
  json_key(j, "p99");
  json_int(j, llround(percentile(v, n, 99)));
  json_key(j, "max");
  json_int(j, llround(v[n - 1]));
  json_key(j, "mean");
  json_int(j, llround(sum / (double)n));
  json_end_object(j);
}

static int cmd_bench(ctl_t *c) {
  pto_dispatch_req_t req;
  pto_sizing_resolved_t sizing;
  ctl_args_t args;
  target_t *t = &c->targets[0];
  double *lat, *total;
  long hits = 0, misses = 0;
  int rc;
  memset(&sizing, 0, sizeof(sizing));
  if (multi(c)) return usage_error("'bench' measures one daemon; give one --socket or --device.");
  rc = parse_dispatch(c, "bench", &args, &req);
  if (rc) return rc;
  lat = calloc((size_t)c->count, sizeof(double));
  total = calloc((size_t)c->count, sizeof(double));
  if (!lat || !total) {
    free(lat);
    free(total);
    ctl_args_free(&args);
    fprintf(stderr, "ptoctl: Out of memory for %ld samples.\n", c->count);
    return CTL_EXIT_PROTOCOL;
  }
  connect_all(c);
  if (t->rc == 0 && c->shm) {
    t->rc = ctl_shm_stage(t->client, args.args, args.n, c->timeout_ms, &t->shm, &t->err);
    if (t->rc == 0) req.args = ctl_shm_args(t->shm);
  }
  /* The warm-up and every measured run send the very same request, config
   * included, so they all resolve to the same sizing and share the arena.
   * With --shm every run reads the same inputs too: inouts are put back
   * before each (not timed; inline, encoding them is). */
  for (long i = 0; t->rc == 0 && i < c->warmup + c->count; i++) {
    pto_dispatch_result_t *r = NULL;
    double t0;
    if (t->shm) ctl_shm_refill(t->shm);
    t0 = now_ms();
    t->rc = pto_client_dispatch(t->client, &req, c->timeout_ms, &r, &t->err);
    if (t->rc < 0) break;
    if (i >= c->warmup) {
      long k = i - c->warmup;
      lat[k] = (now_ms() - t0) * 1000.0;
      total[k] = (double)r->timing_us.total;
      hits += r->arena.hit;
      misses += !r->arena.hit;
    }
    sizing = r->sizing;
    pto_result_free(r);
  }
  if (t->rc < 0) {
    rc = show_all(c, &(view_t){NULL, NULL});
  } else {
    qsort(lat, (size_t)c->count, sizeof(double), cmp_double);
    qsort(total, (size_t)c->count, sizeof(double), cmp_double);
    if (c->json) {
      json_t j;
      json_init(&j, stdout);
      json_begin_object(&j);
      json_key(&j, "program");
      json_cstr(&j, req.program);
      json_key(&j, "count");
      json_int(&j, c->count);
      json_key(&j, "warmup");
      json_int(&j, c->warmup);
      json_stats(&j, "latency_us", lat, c->count);
      json_stats(&j, "daemon_total_us", total, c->count);
      json_key(&j, "arena");
      json_begin_object(&j);
      json_key(&j, "hits");
      json_int(&j, hits);
      json_key(&j, "misses");
      json_int(&j, misses);
      json_end_object(&j);
      json_key(&j, "sizing");
      ctl_json_sizing(&j, &sizing);
      json_end_object(&j);
      json_finish(&j);
    } else {
      printf("bench %s: %ld dispatches after %ld warm-up\n", req.program, c->count, c->warmup);
      printf("latency (client round trip)  min %.0f us  median %.0f us  p99 %.0f us  max %.0f us\n",
             lat[0], percentile(lat, c->count, 50), percentile(lat, c->count, 99),
             lat[c->count - 1]);
      printf("daemon total                 min %.0f us  median %.0f us  p99 %.0f us  max %.0f us\n",
             total[0], percentile(total, c->count, 50), percentile(total, c->count, 99),
             total[c->count - 1]);
      printf("arena                        %ld hit%s, %ld miss%s\n", hits, hits == 1 ? "" : "s",
             misses, misses == 1 ? "" : "es");
      printf("sizing                       ");
      {
        pto_sizing_t s;
        pto_sizing_from_resolved(&sizing, &s);
        ctl_print_sizing(stdout, &s);
      }
    }
    rc = CTL_EXIT_OK;
  }
  free(lat);
  free(total);
  ctl_args_free(&args);
  return rc;
}

/* --- options ---------------------------------------------------------------------------- */

enum {
  OPT_CONNECT_TIMEOUT = 256,
  OPT_RING_TASK_WINDOW,
  OPT_RING_HEAP,
  OPT_RING_DEP_POOL,
  OPT_CONFIG_SET,
  OPT_DEADLINE,
  OPT_OUT_DIR,
  OPT_DFX_DIR,
  OPT_APPLY,
  OPT_OFFSET,
  OPT_BYTES,
  OPT_SHM,
};

static bool parse_long(const char *s, long lo, long hi, long *ret) {
  char *end = NULL;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) return false;
  *ret = v;
  return true;
}

static int add_target(ctl_t *c, int device, const char *socket) {
  target_t *t;
  if (c->ntargets == MAX_TARGETS) return usage_error("At most %d daemons at once.", MAX_TARGETS);
  t = &c->targets[c->ntargets++];
  memset(t, 0, sizeof(*t));
  t->device = device;
  if (!socket) socket = pto_client_env_device_socket(device); /* where connect_device goes */
  if (socket) {
    snprintf(t->socket, sizeof(t->socket), "%s", socket);
  } else if (pto_find_socket_path(device, t->socket, sizeof(t->socket), NULL, 0) < 0) {
    snprintf(t->socket, sizeof(t->socket), "(device %d)", device);
  }
  return 0;
}

static int ring_option(ctl_t *c, pto_ring_field_t field, const char *opt, const char *value) {
  pto_error_t err;
  if (pto_config_parse_ring(c->config, field, value, &err) == 0) return 0;
  fprintf(stderr, "ptoctl: --%s %s: %s\n", opt, value, err.message);
  if (err.hint[0]) fprintf(stderr, "ptoctl: %s\n", err.hint);
  return CTL_EXIT_USAGE;
}

static int parse_options(ctl_t *c, int argc, char **argv) {
  static const struct option options[] = {
      {"socket", required_argument, NULL, 's'},
      {"device", required_argument, NULL, 'd'},
      {"json", no_argument, NULL, 'j'},
      {"timeout", required_argument, NULL, 't'},
      {"connect-timeout", required_argument, NULL, OPT_CONNECT_TIMEOUT},
      {"ring-task-window", required_argument, NULL, OPT_RING_TASK_WINDOW},
      {"ring-heap", required_argument, NULL, OPT_RING_HEAP},
      {"ring-dep-pool", required_argument, NULL, OPT_RING_DEP_POOL},
      {"config-set", required_argument, NULL, OPT_CONFIG_SET},
      {"deadline", required_argument, NULL, OPT_DEADLINE},
      {"out-dir", required_argument, NULL, OPT_OUT_DIR},
      {"dfx-dir", required_argument, NULL, OPT_DFX_DIR},
      {"apply", required_argument, NULL, OPT_APPLY},
      {"output", required_argument, NULL, 'o'},
      {"offset", required_argument, NULL, OPT_OFFSET},
      {"bytes", required_argument, NULL, OPT_BYTES},
      {"count", required_argument, NULL, 'n'},
      {"warmup", required_argument, NULL, 'w'},
      {"shm", no_argument, NULL, OPT_SHM},
      {"help", no_argument, NULL, 'h'},
      {"version", no_argument, NULL, 'V'},
      {NULL, 0, NULL, 0},
  };
  char msg[600];
  int opt, rc;
  long v;
  opterr = 0;
  for (;;) {
    opt = getopt_long(argc, argv, ":s:d:jt:o:n:w:hV", options, NULL);
    if (opt == -1) break;
    switch (opt) {
      case 's':
        if (strlen(optarg) >= PTO_SOCKET_PATH_MAX)
          return usage_error("The socket path '%s' is longer than %d bytes.", optarg,
                             PTO_SOCKET_PATH_MAX - 1);
        rc = add_target(c, -1, optarg);
        if (rc) return rc;
        break;
      case 'd':
        if (!parse_long(optarg, 0, 255, &v))
          return usage_error("--device '%s' must be a number in 0..255.", optarg);
        rc = add_target(c, (int)v, NULL);
        if (rc) return rc;
        break;
      case 'j': c->json = true; break;
      case 't':
        if (!parse_long(optarg, 0, INT32_MAX, &v))
          return usage_error("--timeout '%s' must be a number of milliseconds.", optarg);
        c->timeout_ms = (int)v;
        break;
      case OPT_CONNECT_TIMEOUT:
        if (!parse_long(optarg, 0, INT32_MAX, &v))
          return usage_error("--connect-timeout '%s' must be a number of milliseconds.", optarg);
        c->connect_timeout_ms = (int)v;
        break;
      case OPT_RING_TASK_WINDOW:
        rc = ring_option(c, PTO_FIELD_TASK_WINDOW, "ring-task-window", optarg);
        if (rc) return rc;
        break;
      case OPT_RING_HEAP:
        rc = ring_option(c, PTO_FIELD_HEAP, "ring-heap", optarg);
        if (rc) return rc;
        break;
      case OPT_RING_DEP_POOL:
        rc = ring_option(c, PTO_FIELD_DEP_POOL, "ring-dep-pool", optarg);
        if (rc) return rc;
        break;
      case OPT_CONFIG_SET:
        if (strncmp(optarg, "enable_", 7) == 0) c->dfx_flags = true;
        rc = ctl_config_set(c->config, optarg, msg, sizeof(msg));
        if (rc < 0) {
          fprintf(stderr, "ptoctl: %s\n", msg);
          return -rc;
        }
        break;
      case OPT_DEADLINE:
        if (!parse_long(optarg, 1, INT32_MAX, &v))
          return usage_error("--deadline '%s' must be a positive number of milliseconds.", optarg);
        c->deadline_ms = v;
        break;
      case OPT_OUT_DIR: c->out_dir = optarg; break;
      case OPT_SHM: c->shm = true; break;
      case OPT_DFX_DIR: c->dfx_dir = optarg; break;
      case OPT_APPLY: c->apply = optarg; break;
      case 'o': c->output = optarg; break;
      case OPT_OFFSET:
        rc = ctl_parse_size("--offset", optarg, &c->offset, msg, sizeof(msg));
        if (rc < 0) return usage_error("%s", msg);
        break;
      case OPT_BYTES:
        rc = ctl_parse_size("--bytes", optarg, &c->bytes, msg, sizeof(msg));
        if (rc < 0) return usage_error("%s", msg);
        break;
      case 'n':
        if (!parse_long(optarg, 1, 10000000, &c->count))
          return usage_error("--count '%s' must be a number in 1..10000000.", optarg);
        break;
      case 'w':
        if (!parse_long(optarg, 0, 10000000, &c->warmup))
          return usage_error("--warmup '%s' must be a number in 0..10000000.", optarg);
        break;
      case 'h': usage(stdout); return -1;
      case 'V': printf("ptoctl %s (protocol %d)\n", PTO_VERSION, PTO_PROTOCOL_VERSION); return -1;
      case ':': return usage_error("Option '%s' needs a value.", argv[optind - 1]);
      default:
        if (optopt >= '0' && optopt <= '9')
          return usage_error(
              "'%s' reads as an option: write int:%s / float:%s, or put '--' "
              "before the arguments.",
              argv[optind - 1], argv[optind - 1], argv[optind - 1]);
        return usage_error("Unknown option '%s'.", argv[optind - 1]);
    }
  }
  c->words = argv + optind;
  c->nwords = argc - optind;
  return 0;
}

int main(int argc, char **argv) {
  static ctl_t c;
  const char *cmd;
  int rc;
  /* cdi talks to no daemon and takes its own options. */
  if (argc > 1 && strcmp(argv[1], "cdi") == 0) return ctl_cdi_main(argc - 1, argv + 1);
  c.timeout_ms = -1;
  c.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  c.count = 100;
  c.warmup = 3;
  if (pto_config_new(&c.config) < 0) {
    fprintf(stderr, "ptoctl: Out of memory.\n");
    return CTL_EXIT_PROTOCOL;
  }
  rc = parse_options(&c, argc, argv);
  if (rc) {
    pto_config_free(c.config);
    return rc < 0 ? CTL_EXIT_OK : rc;
  }
  if (c.nwords == 0) {
    pto_config_free(c.config);
    return usage_error("No command given.");
  }
  if (c.ntargets == 0) {
    /* PTOD_SOCKET names the default daemon, before device 0's built-in path. */
    const char *env = pto_client_env_socket();
    add_target(&c, env ? -1 : 0, env);
  }
  {
    char note[1024];
    if (pto_client_env_sizing_note(note, sizeof(note)) > 0) fprintf(stderr, "ptoctl: %s\n", note);
  }
  if (c.dfx_dir && !c.dfx_flags) {
    /* --dfx-dir alone: every artefact, with the phases and ring counters. */
    pto_error_t err;
    if (pto_config_set_int(c.config, "enable_swimlane", 2, &err) < 0 ||
        pto_config_set_bool(c.config, "enable_scope_stats", true, &err) < 0 ||
        pto_config_set_bool(c.config, "enable_dep_gen", true, &err) < 0) {
      fprintf(stderr, "ptoctl: %s\n", err.message);
      pto_config_free(c.config);
      return CTL_EXIT_PROTOCOL;
    }
  }
  cmd = c.words[0];
  if (strcmp(cmd, "ping") == 0)
    rc = cmd_simple(&c, PTO_METHOD_PING);
  else if (strcmp(cmd, "status") == 0)
    rc = cmd_simple(&c, PTO_METHOD_STATUS);
  else if (strcmp(cmd, "metrics") == 0)
    rc = cmd_simple(&c, PTO_METHOD_METRICS);
  else if (strcmp(cmd, "programs") == 0)
    rc = cmd_simple(&c, PTO_METHOD_PROGRAMS);
  else if (strcmp(cmd, "advise") == 0)
    rc = cmd_advise(&c);
  else if (strcmp(cmd, "dfx") == 0)
    rc = cmd_dfx(&c);
  else if (strcmp(cmd, "prewarm") == 0)
    rc = cmd_prewarm(&c);
  else if (strcmp(cmd, "dispatch") == 0)
    rc = cmd_dispatch(&c);
  else if (strcmp(cmd, "bench") == 0)
    rc = cmd_bench(&c);
  else if (strcmp(cmd, "buffer") == 0)
    rc = cmd_buffer(&c);
  else if (strcmp(cmd, "cdi") == 0)
    rc = usage_error("'cdi' must come first and takes its own options: ptoctl cdi generate "
                     "[OPTION]... (ptoctl cdi --help).");
  else
    rc = usage_error("Unknown command '%s'.", cmd);
  close_all(&c);
  pto_config_free(c.config);
  return rc;
}
