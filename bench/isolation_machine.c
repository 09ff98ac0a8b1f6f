/* SPDX-License-Identifier: Apache-2.0 */
/* isolation_machine.c — the MACHINE line of bench/isolation.py, from the
 * same bench_header as every other benchmark (the script itself runs the
 * adversarial modules of tests/adversarial/ and prints their figures). */
#include "bench.h"

int main(void) {
  bench_header("isolation: issue 18's targets, one adversarial module at a time");
  return 0;
}
