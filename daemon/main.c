/* ptod — the per-device worker daemon: start-up order, signals, shut-down. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/program.h>
#include <pto/version.h>

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

int main(int argc, char **argv) {
  static const struct option options[] = {
      {"config", required_argument, NULL, 'c'},
      {"check-config", required_argument, NULL, 'C'},
      {"version", no_argument, NULL, 'V'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int opt;
  while ((opt = getopt_long(argc, argv, "c:Vh", options, NULL)) != -1) {
    switch (opt) {
    case 'V': print_version(); return 0;
    case 'h': print_usage(stdout); return 0;
    default: print_usage(stderr); return 64; /* EX_USAGE */
    }
  }
  print_usage(stderr);
  return 64;
}
