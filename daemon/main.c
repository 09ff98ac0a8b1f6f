/* SPDX-License-Identifier: Apache-2.0 */
/* ptod — the per-device worker daemon: start-up order, signals, shut-down. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/program.h>
#include <pto/sizing.h>
#include <pto/version.h>

#include "config.h"
#include "ptod_run.h"

static void print_version(void) {
  printf("ptod %s (protocol %d, program ABI %u)\n", PTO_VERSION, PTO_PROTOCOL_VERSION,
         PTO_PROGRAM_ABI_VERSION);
}

static void print_usage(FILE *out) {
  fprintf(out,
          "Usage: ptod [--config FILE]\n"
          "       ptod --check-config FILE\n"
          "       ptod --version\n"
          "\n"
          "  -c, --config FILE        read the configuration from FILE (default: built-in defaults)\n"
          "      --check-config FILE  validate FILE, print the effective configuration, exit\n"
          "  -V, --version            print the version and exit\n"
          "  -h, --help               print this help and exit\n");
}

static void print_error(const pto_error_t *err) {
  fprintf(stderr, "ptod: %s\n", err->message);
  if (err->hint[0]) fprintf(stderr, "ptod: %s\n", err->hint);
}

static void print_problem(const pto_error_t *problem, void *user) {
  (void)user;
  print_error(problem);
}

/* --check-config: the file and the PTO2_RING_* environment, as start-up
 * would read them; every problem found is reported, then 78. */
static int check_config(const char *path) {
  cfg_t cfg;
  pto_sizing_t env;
  pto_error_t err;
  int bad = 0;
  pto_error_clear(&err);
  if (cfg_load_report(path, &cfg, &err, print_problem, NULL) < 0) bad = 1;
  pto_error_clear(&err);
  if (pto_sizing_from_environ(&env, &err) < 0) {
    print_error(&err);
    bad = 1;
  }
  if (bad) return PTOD_EXIT_CONFIG;
  cfg_print(&cfg, &env, path, stdout);
  return fflush(stdout) == 0 ? 0 : 74; /* EX_IOERR */
}

int main(int argc, char **argv) {
  static const struct option options[] = {
      {"config", required_argument, NULL, 'c'},
      {"check-config", required_argument, NULL, 'C'},
      {"version", no_argument, NULL, 'V'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  const char *config_path = NULL;
  int opt;
  while ((opt = getopt_long(argc, argv, "c:Vh", options, NULL)) != -1) {
    switch (opt) {
    case 'c': config_path = optarg; break;
    case 'V': print_version(); return 0;
    case 'C': return check_config(optarg);
    case 'h': print_usage(stdout); return 0;
    default: print_usage(stderr); return 64; /* EX_USAGE */
    }
  }
  if (optind < argc) {
    fprintf(stderr, "ptod: unexpected argument '%s'\n", argv[optind]);
    print_usage(stderr);
    return 64;
  }
  return ptod_run(config_path);
}
