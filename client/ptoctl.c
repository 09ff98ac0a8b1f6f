/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl — the operator's command-line client for ptod (ptoctl(1)).
 *
 * Every command runs against one daemon or several (-s/--device given more
 * than once): requests go to all of them before any answer is awaited, so
 * the devices work in parallel, and each device's outcome is shown.
 * Human-readable output by default; --json prints the daemon's result as
 * JSON (the wire's keys), {"error": {...}} on failure, and
 * {"devices": [...]} for several daemons.
 *
 * This file holds main, the command table and the plumbing every command
 * shares (ctl.h); each command's handlers live in the ctl_*.c of its
 * family.  Adding a command is a row below and its handlers.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <pto/client.h>

#include "ctl.h"
#include "ctl_cdi.h"
#include "ctl_print.h"
#include "paths.h"

#define DEFAULT_CONNECT_TIMEOUT_MS 5000

/* --help lists the commands in this order. */
const ctl_command_t ctl_commands[] = {
    {.name = "ping", .listed_first = true, .connects = true, .method = PTO_METHOD_PING,
     .check = ctl_query_check},
    {.name = "status", .listed_first = true, .connects = true, .method = PTO_METHOD_STATUS,
     .check = ctl_query_check},
    {.name = "metrics", .listed_first = true, .connects = true, .method = PTO_METHOD_METRICS,
     .check = ctl_query_check},
    {.name = "programs", .listed_first = true, .connects = true, .method = PTO_METHOD_PROGRAMS,
     .check = ctl_query_check},
    {.name = "dispatch",
     .help = "  dispatch PROGRAM [ARG]...      run PROGRAM once\n",
     .connects = true,
     .check = ctl_dispatch_check,
     .run = ctl_dispatch_run},
    {.name = "bench",
     .help = "  bench PROGRAM [ARG]...         run it -n times after --warmup runs, same config\n",
     .connects = true,
     .check = ctl_bench_check,
     .run = ctl_bench_run},
    {.name = "buffer",
     .help = "  buffer alloc NAME SIZE|DATA    a resident buffer (zeroed, or holding DATA)\n"
             "  buffer write NAME DATA         [--offset N]\n"
             "  buffer read NAME               [--offset N] [--bytes N] [-o FILE]\n"
             "  buffer free NAME | buffer list\n",
     .connects = true,
     .check = ctl_buffer_check,
     .run = ctl_buffer_run},
    {.name = "prewarm",
     .help = "  prewarm                        build the arena for the ring options now\n",
     .connects = true,
     .check = ctl_prewarm_check},
    {.name = "advise",
     .help =
         "  advise [--apply FILE]          the sizing that serves every dispatch seen; --apply\n"
         "                                 writes its [ring] and [prewarm] lines into FILE\n",
     .listed_first = true,
     .connects = true,
     .method = PTO_METHOD_ADVISE,
     .check = ctl_query_check,
     .run = ctl_advise_run},
    {.name = "dfx",
     .help = "  dfx ring-occupancy TRACE.json -o OUT.svg\n"
             "                                 draw the rings' use over a traced dispatch\n",
     .check = ctl_dfx_check,
     .run = ctl_dfx_run},
    {.name = "cdi",
     .help = "  cdi generate [OPTION]...       a CDI spec for containers (ptoctl cdi --help)\n",
     .check = ctl_cdi_misplaced,
     .own_main = ctl_cdi_main},
    {.name = NULL},
};

static const ctl_command_t *find_command(const char *name) {
  for (const ctl_command_t *cmd = ctl_commands; cmd->name; cmd++)
    if (strcmp(cmd->name, name) == 0) return cmd;
  return NULL;
}

/* "Commands:": those listed first on one line, then each row's help. */
static void usage_commands(FILE *f) {
  const char *sep = "  ";
  fputs("Commands:\n", f);
  for (const ctl_command_t *cmd = ctl_commands; cmd->name; cmd++) {
    if (!cmd->listed_first) continue;
    fprintf(f, "%s%s", sep, cmd->name);
    sep = " | ";
  }
  fputs("\n", f);
  for (const ctl_command_t *cmd = ctl_commands; cmd->name; cmd++)
    if (cmd->help) fputs(cmd->help, f);
}

void ctl_usage(FILE *f) {
  fputs("Usage: ptoctl [OPTION]... COMMAND [ARG]...\n\n", f);
  usage_commands(f);
  fprintf(f,
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
          "      --priority N           device commands: -8..7, lower runs sooner (default 0)\n"
          "      --request-id ID        device commands: your id for the request, echoed in\n"
          "                             the result and in ptod's logs and DFX artefacts\n"
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

int ctl_usage_error(const char *fmt, ...) {
  va_list ap;
  fputs("ptoctl: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputs("\nTry 'ptoctl --help'.\n", stderr);
  return CTL_EXIT_USAGE;
}

int ctl_local_error(int rc, const char *msg) {
  if (rc == -CTL_EXIT_USAGE) return ctl_usage_error("%s", msg);
  fprintf(stderr, "ptoctl: %s\n", msg);
  return -rc;
}

double ctl_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* --- targets ------------------------------------------------------------------ */

int ctl_add_target(ctl_t *c, int device, const char *socket) {
  target_t *t;
  if (c->ntargets == CTL_MAX_TARGETS)
    return ctl_usage_error("At most %d daemons at once.", CTL_MAX_TARGETS);
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

int ctl_target_device(const target_t *t) {
  return t->device >= 0 ? t->device : pto_client_device(t->client);
}

static void target_label(const target_t *t, char *buf, size_t len) {
  int device = ctl_target_device(t);
  if (device >= 0)
    snprintf(buf, len, "device %d", device);
  else
    snprintf(buf, len, "socket '%.*s'", PTO_SOCKET_PATH_MAX - 1, t->socket);
}

bool ctl_multi(const ctl_t *c) {
  return c->ntargets > 1;
}

/* The error on stderr, always; with --json and one target also on stdout. */
static void report_error(const ctl_t *c, const target_t *t, const pto_error_t *err) {
  char label[PTO_SOCKET_PATH_MAX + 32];
  target_label(t, label, sizeof(label));
  /* A multi-device dispatch already names the device in the message. */
  if (ctl_multi(c) && strncmp(err->message, "device ", 7) != 0 &&
      strncmp(err->message, "socket '", 8) != 0)
    fprintf(stderr, "ptoctl: %s: %s: %s\n", label, pto_client_error_name(err->code), err->message);
  else
    fprintf(stderr, "ptoctl: %s: %s\n", pto_client_error_name(err->code), err->message);
  if (err->hint[0]) fprintf(stderr, "ptoctl: %s\n", err->hint);
}

static void connect_all(ctl_t *c) {
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
}

/* Everything the command and its targets hold. */
static void close_all(ctl_t *c) {
  for (int i = 0; i < c->ntargets; i++) {
    pto_result_free(c->targets[i].result);
    ctl_shm_free(c->targets[i].shm);
    free((void *)(uintptr_t)c->targets[i].shm_read.ptr);
    pto_client_close(c->targets[i].client);
  }
  ctl_args_free(&c->args);
  free(c->data.ptr);
  pto_config_free(c->config);
}

/* Options a command has no use for are ignored (ctl_options.c): priority
 * and request_id go with the device requests only. */
const pto_call_opts_t *ctl_opts(const ctl_t *c, pto_method_t method) {
  switch (method) {
    case PTO_METHOD_DISPATCH:
    case PTO_METHOD_BUFFER_ALLOC:
    case PTO_METHOD_BUFFER_WRITE:
    case PTO_METHOD_BUFFER_READ:
    case PTO_METHOD_BUFFER_FREE:
    case PTO_METHOD_BUFFER_LIST:
    case PTO_METHOD_PREWARM: return &c->opts;
    default: return NULL;
  }
}

void ctl_call_all(ctl_t *c, const pto_request_t *req) {
  double t0 = ctl_now_ms();
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc == 0)
      t->rc = pto_client_send_opts(t->client, req, ctl_opts(c, req->method), c->timeout_ms,
                                   &t->msgid, &t->err);
  }
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc < 0) continue;
    t->rc = pto_client_wait(t->client, t->msgid, c->timeout_ms, &t->result, &t->err);
    t->ms = ctl_now_ms() - t0;
  }
}

int ctl_call_show(ctl_t *c) {
  ctl_call_all(c, &c->req);
  return ctl_show_all(c, c->view);
}

void ctl_json_raw(json_t *j, const void *result, json_bin_fn bin, void *ctx) {
  const void *data;
  size_t len;
  pto_result_msgpack(result, &data, &len);
  if (!json_msgpack_bytes(j, data, len, bin, ctx)) json_null(j);
}

/* --json, several daemons: the members before a target's result or error. */
static void json_target_head(json_t *j, const target_t *t) {
  int device = ctl_target_device(t);
  json_begin_object(j);
  json_key(j, "device");
  if (device >= 0)
    json_int(j, device);
  else
    json_null(j);
  json_key(j, "socket");
  json_cstr(j, pto_client_socket_path(t->client)[0] ? pto_client_socket_path(t->client)
                                                     : t->socket);
  json_key(j, "ok");
  json_bool(j, t->rc == 0);
  json_key(j, t->rc == 0 ? "result" : "error");
}

static void json_target(ctl_t *c, json_t *j, target_t *t, const view_t *v) {
  if (ctl_multi(c)) {
    json_target_head(j, t);
  } else if (t->rc < 0) {
    json_begin_object(j);
    json_key(j, "error");
  }
  if (t->rc < 0)
    ctl_json_error(j, &t->err);
  else if (v->json)
    v->json(c, j, t);
  else
    ctl_json_raw(j, t->result, NULL, NULL);
  if (ctl_multi(c) || t->rc < 0) json_end_object(j);
}

static void human_target(ctl_t *c, int i, target_t *t, const view_t *v) {
  if (ctl_multi(c)) {
    char label[PTO_SOCKET_PATH_MAX + 32];
    target_label(t, label, sizeof(label));
    printf("%s== %s (%s) ==\n", i ? "\n" : "", label, t->socket);
  }
  if (t->rc == 0)
    v->human(c, t);
  else if (ctl_multi(c))
    printf("error: %s: %s\n", pto_client_error_name(t->err.code), t->err.message);
}

int ctl_show_all(ctl_t *c, const view_t *v) {
  int status = CTL_EXIT_OK;
  json_t j;
  json_init(&j, stdout);
  if (c->json && ctl_multi(c)) {
    json_begin_object(&j);
    json_key(&j, "devices");
    json_begin_array(&j);
  }
  for (int i = 0; i < c->ntargets; i++) {
    target_t *t = &c->targets[i];
    if (t->rc < 0) {
      report_error(c, t, &t->err);
      if (status == CTL_EXIT_OK) status = ctl_exit_for(t->rc);
    }
    if (c->json)
      json_target(c, &j, t, v);
    else
      human_target(c, i, t, v);
  }
  if (c->json) {
    if (ctl_multi(c)) {
      json_end_array(&j);
      json_end_object(&j);
    }
    json_finish(&j);
  }
  fflush(stdout);
  return status;
}

/* --- main ------------------------------------------------------------------------- */

/* What every command starts from, after the options: a daemon when none
 * was named, the sizing note, --dfx-dir's default flags. */
static int prepare(ctl_t *c) {
  char note[1024];
  if (c->ntargets == 0) {
    /* PTOD_SOCKET names the default daemon, before device 0's built-in path. */
    const char *env = pto_client_env_socket();
    ctl_add_target(c, env ? -1 : 0, env);
  }
  if (pto_client_env_sizing_note(note, sizeof(note)) > 0) fprintf(stderr, "ptoctl: %s\n", note);
  if (c->dfx_dir && !c->dfx_flags) {
    /* --dfx-dir alone: every artefact, with the phases and ring counters. */
    pto_error_t err;
    if (pto_config_set_int(c->config, "enable_swimlane", 2, &err) < 0 ||
        pto_config_set_bool(c->config, "enable_scope_stats", true, &err) < 0 ||
        pto_config_set_bool(c->config, "enable_dep_gen", true, &err) < 0) {
      fprintf(stderr, "ptoctl: %s\n", err.message);
      return CTL_EXIT_PROTOCOL;
    }
  }
  return 0;
}

static int run_command(ctl_t *c) {
  int rc;
  c->cmd = find_command(c->words[0]);
  if (!c->cmd) return ctl_usage_error("Unknown command '%s'.", c->words[0]);
  rc = c->cmd->check(c);
  if (rc) return rc;
  if (c->cmd->connects) connect_all(c);
  return c->cmd->run ? c->cmd->run(c) : ctl_call_show(c);
}

int main(int argc, char **argv) {
  static ctl_t c;
  int rc;
  if (argc > 1) {
    const ctl_command_t *cmd = find_command(argv[1]);
    if (cmd && cmd->own_main) return cmd->own_main(argc - 1, argv + 1);
  }
  c.timeout_ms = -1;
  c.opts = (pto_call_opts_t)PTO_CALL_OPTS_INIT;
  c.connect_timeout_ms = DEFAULT_CONNECT_TIMEOUT_MS;
  c.count = 100;
  c.warmup = 3;
  if (pto_config_new(&c.config) < 0) {
    fprintf(stderr, "ptoctl: Out of memory.\n");
    return CTL_EXIT_PROTOCOL;
  }
  rc = ctl_parse_options(&c, argc, argv);
  if (rc == 0 && c.nwords == 0) rc = ctl_usage_error("No command given.");
  if (rc) {
    pto_config_free(c.config);
    return rc < 0 ? CTL_EXIT_OK : rc;
  }
  rc = prepare(&c);
  if (rc == 0) rc = run_command(&c);
  close_all(&c);
  return rc;
}
