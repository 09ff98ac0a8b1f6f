/* SPDX-License-Identifier: Apache-2.0 */
/* latency_python.h — bench_latency's Python client rows: the Python
 * client's noop(1) back to back and after 20 ms idle against libptoclient
 * in the same minutes, each side's own CPU per call, and a bare-Python
 * round trip after idle (no client: what CPython itself costs), so that
 * the gap between the two clients is explained by figures.
 *
 * One thread (bench_latency's); the state is this file's own, written by
 * these functions only.  A Python row that cannot run is left out of the
 * figures (bench_python says why on stderr); it never fails the run. */
#ifndef PTOD_BENCH_LATENCY_PYTHON_H
#define PTOD_BENCH_LATENCY_PYTHON_H

#include <stddef.h>

#include <pto/client.h>

/* bench_latency's one libptoclient noop(1) round trip, in us. */
typedef double (*py_client_once_fn)(pto_client_t *c);

/* The Python client back to back on daemon di's socket (n timed after
 * warm), then libptoclient's own CPU per call back to back on c. */
void python_b2b(int di, int rep, const char *socket, pto_client_t *c, py_client_once_fn once,
                size_t n, size_t warm);

/* Python against libptoclient after 20 ms idle on daemon di, n samples of
 * each, in alternating blocks. */
void python_pairs(int di, int rep, const char *socket, pto_client_t *c, py_client_once_fn once,
                  size_t n);

/* This rep's Python figures of daemon di, for bench_latency's rep line. */
void python_rep_line(int di, int rep);

/* The figures of daemon di (named sn) over reps; client_b2b: libptoclient's
 * back-to-back p50 per rep (python_vs_client). */
void python_figures(int di, const char *sn, int reps, const double *client_b2b);

#endif
