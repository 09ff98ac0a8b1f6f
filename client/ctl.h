/* SPDX-License-Identifier: Apache-2.0 */
/* ctl.h — what ptoctl's commands share (ptoctl.c): the command line as
 * parsed (ctl_t), the daemons talked to (target_t), a row of the command
 * table, and the plumbing that sends one request to every daemon and shows
 * every daemon's outcome.
 *
 * A command is a row of ptoctl.c's table and its handlers in the ctl_*.c
 * of its family.  main() runs a row in two steps: check, which reads the
 * command's words and options into c->req and c->view and contacts no
 * daemon (a usage error leaves before any connection), then, once every
 * daemon is connected (rows that connect), run.
 *
 * Single-threaded.  Functions returning int return an exit status
 * (CTL_EXIT_*, ctl_args.h) after saying why on stderr, 0 when all went
 * well.
 */
#ifndef CTL_H
#define CTL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <pto/client.h>

#include "ctl_args.h"
#include "ctl_json.h"
#include "ctl_shm.h"
#include "paths.h"

#define CTL_MAX_TARGETS 256

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

typedef struct ctl ctl_t;
typedef struct ctl_command ctl_command_t;

/* How one successful result is shown. */
typedef struct view {
  void (*human)(ctl_t *c, target_t *t);
  void (*json)(ctl_t *c, json_t *j, target_t *t); /* NULL: the daemon's result as is */
} view_t;

struct ctl {
  target_t targets[CTL_MAX_TARGETS];
  int ntargets;
  bool json;
  int timeout_ms;
  int connect_timeout_ms;
  pto_config_t *config;
  int64_t deadline_ms;
  pto_call_opts_t opts; /* --priority, --request-id: sent with device requests */
  const char *out_dir, *output;
  const char *dfx_dir, *apply; /* dispatch --dfx-dir, advise --apply */
  bool dfx_flags;              /* an enable_* key was given with --config-set */
  bool shm;                    /* --shm: data through a shared-memory region */
  uint64_t offset, bytes;
  long count, warmup;
  char **words; /* the command and its arguments */
  int nwords;
  /* What the command's check prepared for its run (freed by main). */
  const ctl_command_t *cmd; /* the row of words[0] */
  pto_request_t req;        /* the request every daemon is sent */
  const view_t *view;       /* how each daemon's result is shown */
  ctl_args_t args;          /* dispatch, bench: the arguments req points into */
  ctl_data_t data;          /* buffer alloc, write: the bytes req points at */
  struct out_files *files;  /* dispatch: per target, where its outputs went */
};

/* A row of the command table. */
struct ctl_command {
  const char *name;
  /* Its lines under "Commands:" in --help, or NULL. */
  const char *help;
  /* Also named on --help's first line of commands ("ping | status | ..."). */
  bool listed_first;
  /* main connects to every daemon between check and run. */
  bool connects;
  /* The method a query calls (ctl_query_check). */
  pto_method_t method;
  /* The words and options into c->req and c->view; contacts no daemon. */
  int (*check)(ctl_t *c);
  /* NULL: ctl_call_show. */
  int (*run)(ctl_t *c);
  /* Non-NULL: `ptoctl NAME ARG...` with NAME first is this command alone,
   * with options of its own; argv[0] is NAME. */
  int (*own_main)(int argc, char **argv);
};

/* The command table, ending with a row whose name is NULL. */
extern const ctl_command_t ctl_commands[];

/* --help's text. */
void ctl_usage(FILE *f);
/* "ptoctl: MESSAGE\nTry 'ptoctl --help'." on stderr; CTL_EXIT_USAGE. */
int ctl_usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An error of ctl_args and friends (rc = -CTL_EXIT_*, msg) as ptoctl
 * reports it; the exit status. */
int ctl_local_error(int rc, const char *msg);
double ctl_now_ms(void);

/* --- targets ------------------------------------------------------------ */

/* A daemon to talk to: its --device number (or -1) and --socket path (or
 * NULL: the device's). */
int ctl_add_target(ctl_t *c, int device, const char *socket);
/* More than one daemon: each outcome is shown under its daemon's name. */
bool ctl_multi(const ctl_t *c);
/* t's device number, from --device or the daemon's answer; -1 unknown. */
int ctl_target_device(const target_t *t);
/* Send req to every connected target, then collect every answer. */
void ctl_call_all(ctl_t *c, const pto_request_t *req);
/* What goes with a request of `method`: c->opts for device requests, else
 * NULL (an option a command has no use for is ignored). */
const pto_call_opts_t *ctl_opts(const ctl_t *c, pto_method_t method);
/* Every target's outcome, shown by v; the exit status: that of the first
 * failure. */
int ctl_show_all(ctl_t *c, const view_t *v);
/* ctl_call_all of c->req, then ctl_show_all by c->view. */
int ctl_call_show(ctl_t *c);
/* A result's msgpack as JSON; bin (may be NULL) writes its bins. */
void ctl_json_raw(json_t *j, const void *result, json_bin_fn bin, void *ctx);

/* --- options (ctl_options.c) -------------------------------------------- */

/* The options into c, c->words the words after them.  0, -1 when --help or
 * --version was answered, or an exit status. */
int ctl_parse_options(ctl_t *c, int argc, char **argv);

/* --- the commands, by family --------------------------------------------- */

/* ctl_query.c: ping, status, metrics, programs, advise (c->cmd->method),
 * advise's --apply, prewarm. */
int ctl_query_check(ctl_t *c);
int ctl_advise_run(ctl_t *c);
int ctl_prewarm_check(ctl_t *c);
/* ctl_dispatch.c: dispatch; the program and its arguments into c->req
 * (bench too; `what` names the command in its usage error). */
int ctl_dispatch_parse(ctl_t *c, const char *what);
int ctl_dispatch_check(ctl_t *c);
int ctl_dispatch_run(ctl_t *c);
/* ctl_bench.c */
int ctl_bench_check(ctl_t *c);
int ctl_bench_run(ctl_t *c);
/* ctl_buffer.c: buffer alloc | write | read | free | list. */
int ctl_buffer_check(ctl_t *c);
int ctl_buffer_run(ctl_t *c);
/* ctl_dfx.c: dfx ring-occupancy. */
int ctl_dfx_check(ctl_t *c);
int ctl_dfx_run(ctl_t *c);
/* ctl_cdi.c: `cdi` after other words. */
int ctl_cdi_misplaced(ctl_t *c);

#endif
