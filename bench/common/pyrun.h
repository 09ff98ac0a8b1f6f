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

/* Run `script` as `python3 -c script args...` (args NULL-terminated, in
 * sys.argv[1:]) and read the first n numbers it prints into ret.  Returns
 * n, or -1 when Python could not run, failed or printed fewer numbers
 * (then what it printed goes to stderr, and the caller leaves its Python
 * row out). */
int bench_python(const char *script, const char *const *args, double *ret, size_t n);

#endif
