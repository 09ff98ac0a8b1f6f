/* SPDX-License-Identifier: Apache-2.0 */
/* pyrun.h — the benchmarks' Python client rows: a snippet run by Debian's
 * /usr/bin/python3 (which has python3-msgpack; a pyenv python3 on PATH may
 * not) with the Python client of this source tree (client/python) on its
 * PYTHONPATH.
 *
 * The snippet measures and prints its figures as numbers on stdout; its
 * stderr is the benchmark's.  Start-up and imports happen before the
 * snippet's own clock, so they are not part of any figure. */
#ifndef PTOD_BENCH_PYRUN_H
#define PTOD_BENCH_PYRUN_H

#include <stddef.h>
#include <sys/types.h>

/* Run `script` as `python3 -c script args...` (args NULL-terminated, in
 * sys.argv[1:]) and read the first n numbers it prints into ret.  Returns
 * n, or -1 when Python could not run, failed or printed fewer numbers
 * (then what it printed goes to stderr, and the caller leaves its Python
 * row out). */
int bench_python(const char *script, const char *const *args, double *ret, size_t n);

/* A snippet run in lockstep with the benchmark, so that its samples
 * interleave with the benchmark's own (the same minutes of the machine):
 * for each byte it reads on stdin (a newline) it measures one sample and
 * prints it as one line of numbers on stdout.  Owned by the caller; one
 * thread. */
typedef struct bench_pystep {
  pid_t pid;
  int to, from; /* its stdin, its stdout */
} bench_pystep_t;

/* Start `script` (as bench_python).  Returns 0, or -1 (then stop is a no-op
 * that returns -1). */
int bench_pystep_start(bench_pystep_t *p, const char *script, const char *const *args);
/* Ask for n samples (at most 64) of `cols` numbers each and wait for them
 * all, into ret (n * cols, sample by sample).  Returns 0, or -1 when the
 * snippet failed or printed something else. */
int bench_pystep(bench_pystep_t *p, size_t n, size_t cols, double *ret);
/* Close its stdin (its cue to exit) and wait for it.  Returns 0 when it
 * exited with status 0, else -1. */
int bench_pystep_stop(bench_pystep_t *p);

#endif
