/* SPDX-License-Identifier: Apache-2.0 */
/* datapath.h — bench_datapath's raw pieces: one raw round trip of
 * captured request bytes through ptod (bench_capture_request), and the
 * baselines the data path is measured against (memcpy, and the
 * same bytes both ways over a Unix socket to an echo process).
 *
 * Every buffer is the caller's and reused, so a measured loop faults
 * nothing in again.  Failures print why and exit(1), as in bench.h. */
#ifndef PTOD_BENCH_DATAPATH_H
#define PTOD_BENCH_DATAPATH_H

#include <stddef.h>
#include <sys/types.h>

/* The mean of `iters` memcpys of size bytes from src to dst, in us. */
double dp_memcpy_us(char *dst, const char *src, size_t size, int iters);

/* One raw round trip on fd, a connection to ptod: req sent as is, the
 * answer read into rx (cap bytes) and framed with the daemon's own reader;
 * in us. */
double dp_raw_us(int fd, const char *req, size_t qlen, char *rx, size_t cap);

/* The socket baseline's peer, a child that sends back whatever it reads,
 * as it reads it, until EOF (one buffer of size bytes, reused); our end in
 * *ret_fd.  bench_peer_stop closes it and reaps the child. */
pid_t dp_start_echo(int *ret_fd, size_t size);
/* One round trip of size bytes each way to the echo peer, in us. */
double dp_socket_us(int fd, const char *tx, char *rx, size_t size);

#endif
