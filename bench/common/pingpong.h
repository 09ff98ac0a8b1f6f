/* SPDX-License-Identifier: Apache-2.0 */
/* pingpong.h — the floor baselines of bench_latency: a Unix-socket
 * ping-pong between two processes, the request's bytes one way and the
 * answer's bytes back, with nothing else done on either side.
 *
 * The answering side is a child process (bench_peer_start).  spin: both
 * sides poll with non-blocking reads and never sleep (the child then takes
 * a whole CPU while it runs); otherwise reads block.  Messages up to
 * PINGPONG_MAX_MSG bytes.  Failures print why and exit(1), as in bench.h. */
#ifndef PTOD_BENCH_PINGPONG_H
#define PTOD_BENCH_PINGPONG_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PINGPONG_MAX_MSG 4096

/* Start the child answering every req bytes it reads with resp bytes,
 * until end of file; *ret_fd is our end.  Stop it with bench_peer_stop. */
pid_t pingpong_start(int *ret_fd, size_t req, size_t resp, bool spin);

/* One round trip: qlen bytes of req sent, rlen bytes read back; in us. */
double pingpong_once(int fd, const char *req, size_t qlen, size_t rlen, bool spin);

#endif
