/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_options.c — ptoctl's options (ctl.h), before or after the command:
 * every option is read for every command; those a command has no use for
 * are ignored. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/client.h>
#include <pto/version.h>

#include "ctl.h"

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
  OPT_PRIORITY,
  OPT_REQUEST_ID,
};

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
    {"priority", required_argument, NULL, OPT_PRIORITY},
    {"request-id", required_argument, NULL, OPT_REQUEST_ID},
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

static bool parse_long(const char *s, long lo, long hi, long *ret) {
  char *end = NULL;
  long v;
  errno = 0;
  v = strtol(s, &end, 10);
  if (!*s || *end || errno || v < lo || v > hi) return false;
  *ret = v;
  return true;
}

/* -s PATH, -d N: one more daemon. */
static int target_option(ctl_t *c, int opt, const char *value) {
  long v;
  if (opt == 's') {
    if (strlen(value) >= PTO_SOCKET_PATH_MAX)
      return ctl_usage_error("The socket path '%s' is longer than %d bytes.", value,
                             PTO_SOCKET_PATH_MAX - 1);
    return ctl_add_target(c, -1, value);
  }
  if (!parse_long(value, 0, 255, &v))
    return ctl_usage_error("--device '%s' must be a number in 0..255.", value);
  return ctl_add_target(c, (int)v, NULL);
}

/* The options that take a count or a number of milliseconds. */
static int number_option(ctl_t *c, int opt, const char *value) {
  long v;
  switch (opt) {
    case 't':
      if (!parse_long(value, 0, INT32_MAX, &v))
        return ctl_usage_error("--timeout '%s' must be a number of milliseconds.", value);
      c->timeout_ms = (int)v;
      return 0;
    case OPT_CONNECT_TIMEOUT:
      if (!parse_long(value, 0, INT32_MAX, &v))
        return ctl_usage_error("--connect-timeout '%s' must be a number of milliseconds.", value);
      c->connect_timeout_ms = (int)v;
      return 0;
    case OPT_DEADLINE:
      if (!parse_long(value, 1, INT32_MAX, &v))
        return ctl_usage_error("--deadline '%s' must be a positive number of milliseconds.",
                               value);
      c->deadline_ms = v;
      return 0;
    case OPT_PRIORITY:
      if (!parse_long(value, PTO_PRIORITY_MIN, PTO_PRIORITY_MAX, &v))
        return ctl_usage_error("--priority '%s' must be a number in %d..%d (lower runs sooner).",
                               value, PTO_PRIORITY_MIN, PTO_PRIORITY_MAX);
      c->opts.priority = (int)v;
      return 0;
    case 'n':
      if (!parse_long(value, 1, 10000000, &c->count))
        return ctl_usage_error("--count '%s' must be a number in 1..10000000.", value);
      return 0;
    default: /* 'w' */
      if (!parse_long(value, 0, 10000000, &c->warmup))
        return ctl_usage_error("--warmup '%s' must be a number in 0..10000000.", value);
      return 0;
  }
}

/* --offset N, --bytes N: sizes, with K, M, G. */
static int size_option(ctl_t *c, int opt, const char *value) {
  char msg[600];
  bool offset = opt == OPT_OFFSET;
  if (ctl_parse_size(offset ? "--offset" : "--bytes", value, offset ? &c->offset : &c->bytes,
                     msg, sizeof(msg)) < 0)
    return ctl_usage_error("%s", msg);
  return 0;
}

static int ring_option(ctl_t *c, pto_ring_field_t field, const char *opt, const char *value) {
  pto_error_t err;
  if (pto_config_parse_ring(c->config, field, value, &err) == 0) return 0;
  fprintf(stderr, "ptoctl: --%s %s: %s\n", opt, value, err.message);
  if (err.hint[0]) fprintf(stderr, "ptoctl: %s\n", err.hint);
  return CTL_EXIT_USAGE;
}

/* The ring options and --config-set: keys of the config sent. */
static int config_option(ctl_t *c, int opt, const char *value) {
  char msg[600];
  int rc;
  switch (opt) {
    case OPT_RING_TASK_WINDOW:
      return ring_option(c, PTO_FIELD_TASK_WINDOW, "ring-task-window", value);
    case OPT_RING_HEAP: return ring_option(c, PTO_FIELD_HEAP, "ring-heap", value);
    case OPT_RING_DEP_POOL: return ring_option(c, PTO_FIELD_DEP_POOL, "ring-dep-pool", value);
    default: /* OPT_CONFIG_SET */
      if (strncmp(value, "enable_", 7) == 0) c->dfx_flags = true;
      rc = ctl_config_set(c->config, value, msg, sizeof(msg));
      if (rc < 0) fprintf(stderr, "ptoctl: %s\n", msg);
      return -rc;
  }
}

/* An option getopt did not take: one missing its value, or unknown. */
static int bad_option(int opt, char **argv) {
  const char *word = argv[optind - 1];
  if (opt == ':') return ctl_usage_error("Option '%s' needs a value.", word);
  if (optopt >= '0' && optopt <= '9')
    return ctl_usage_error("'%s' reads as an option: write int:%s / float:%s, or put '--' "
                           "before the arguments.",
                           word, word, word);
  return ctl_usage_error("Unknown option '%s'.", word);
}

/* One option; -1 when it was --help or --version, answered. */
static int parse_option(ctl_t *c, int opt, char **argv) {
  switch (opt) {
    case 's':
    case 'd': return target_option(c, opt, optarg);
    case 't':
    case OPT_CONNECT_TIMEOUT:
    case OPT_DEADLINE:
    case OPT_PRIORITY:
    case 'n':
    case 'w': return number_option(c, opt, optarg);
    case OPT_OFFSET:
    case OPT_BYTES: return size_option(c, opt, optarg);
    case OPT_RING_TASK_WINDOW:
    case OPT_RING_HEAP:
    case OPT_RING_DEP_POOL:
    case OPT_CONFIG_SET: return config_option(c, opt, optarg);
    case 'j': c->json = true; return 0;
    case OPT_SHM: c->shm = true; return 0;
    case OPT_OUT_DIR: c->out_dir = optarg; return 0;
    case OPT_DFX_DIR: c->dfx_dir = optarg; return 0;
    case OPT_APPLY: c->apply = optarg; return 0;
    case OPT_REQUEST_ID: c->opts.request_id = optarg; return 0; /* the library checks it */
    case 'o': c->output = optarg; return 0;
    case 'h': ctl_usage(stdout); return -1;
    case 'V': printf("ptoctl %s (protocol %d)\n", PTO_VERSION, PTO_PROTOCOL_VERSION); return -1;
    default: return bad_option(opt, argv);
  }
}

int ctl_parse_options(ctl_t *c, int argc, char **argv) {
  opterr = 0;
  for (;;) {
    int rc, opt = getopt_long(argc, argv, ":s:d:jt:o:n:w:hV", options, NULL);
    if (opt == -1) break;
    rc = parse_option(c, opt, argv);
    if (rc) return rc;
  }
  c->words = argv + optind;
  c->nwords = argc - optind;
  return 0;
}
