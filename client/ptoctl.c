/* ptoctl — the operator's command-line client for ptod. */
#include <stdio.h>
#include <string.h>

#include <pto/version.h>

int main(int argc, char **argv) {
  if (argc == 2 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
    printf("ptoctl %s (protocol %d)\n", PTO_VERSION, PTO_PROTOCOL_VERSION);
    return 0;
  }
  fprintf(stderr, "Usage: ptoctl --version\n");
  return 64;
}
