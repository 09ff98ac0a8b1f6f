/* SPDX-License-Identifier: Apache-2.0 */
/* bench_instructions — the instructions the daemon executes per no-op
 * dispatch (noop, 1 task), all threads together, counted by valgrind's
 * callgrind: a count that does not depend on the machine's speed or load,
 * so it compares across hosts and runs.
 *
 * Each repetition starts two daemons under callgrind, one after the other,
 * with [daemon] spin_us = 0 (a spin is time, not work: under valgrind it
 * would count whatever the host's speed lets it run):
 *   base   `warm` dispatches back to back, then SIGTERM
 *   full   `warm + n` dispatches, then SIGTERM
 * The requests are libptoclient's bytes of noop(1) on a plain socket, one
 * at a time.  Everything but the n extra dispatches (start-up, the first
 * dispatches that build the arena, the readiness pings, shutdown) is the
 * same in both, so (Ir(full) - Ir(base)) / n is one dispatch's share, the
 * idle baseline subtracted.  The figure is the median over repetitions.
 *
 * Needs valgrind on PATH (scripts/deps --bench). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "bench.h"
#include "datapath.h"

#define MAX_MSG 4096
#define MAX_REPS 64

static const char config[] =
    "[daemon]\nspin_us = 0\n[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n";

/* The total instructions (Ir) of a callgrind output file, or 0. */
static uint64_t callgrind_total(const char *path) {
  char line[512];
  uint64_t total = 0;
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  while (fgets(line, sizeof line, f)) {
    /* "summary: N" in the header, "totals: N" at the end: the same count */
    if (sscanf(line, "summary: %" SCNu64, &total) == 1) break;
    if (sscanf(line, "totals: %" SCNu64, &total) == 1) break;
  }
  fclose(f);
  return total;
}

/* Whether rx starts with an answer without error ([1, id, nil, result]). */
static bool answered(const char *rx, size_t len) {
  msgpack_unpacked u;
  bool ok;
  msgpack_unpacked_init(&u);
  ok = msgpack_unpack_next(&u, rx, len, NULL) == MSGPACK_UNPACK_SUCCESS &&
       u.data.type == MSGPACK_OBJECT_ARRAY && u.data.via.array.size == 4 &&
       u.data.via.array.ptr[2].type == MSGPACK_OBJECT_NIL;
  msgpack_unpacked_destroy(&u);
  return ok;
}

/* Instructions of a daemon under callgrind that serves `count` noop(1)
 * dispatches back to back. */
static uint64_t count_run(const char *req, size_t qlen, size_t count) {
  char dir[] = "/tmp/ptod-bench-cg-XXXXXX", out[96], opt[128], rx[MAX_MSG];
  const char *wrapper[] = {"valgrind", "--tool=callgrind", "--quiet", opt, NULL};
  bench_daemon_t d;
  uint64_t total;
  int fd;
  if (!mkdtemp(dir)) {
    perror("bench_instructions: mkdtemp");
    exit(1);
  }
  snprintf(out, sizeof out, "%s/callgrind.out", dir);
  snprintf(opt, sizeof opt, "--callgrind-out-file=%s", out);
  bench_daemon_start_under(&d, config, wrapper);
  fd = bench_connect_unix(d.socket);
  for (size_t i = 0; i < count; i++) {
    dp_raw_us(fd, req, qlen, rx, sizeof rx);
    if (i == 0 && !answered(rx, sizeof rx)) {
      fprintf(stderr, "bench_instructions: the noop dispatch failed; see %s\n", d.log);
      exit(1);
    }
  }
  close(fd);
  bench_daemon_stop(&d);
  total = callgrind_total(out);
  unlink(out);
  rmdir(dir);
  if (total == 0) {
    fprintf(stderr, "bench_instructions: no instruction count in %s (is valgrind installed?)\n",
            out);
    exit(1);
  }
  return total;
}

int main(int argc, char **argv) {
  bench_opts_t o;
  char req[MAX_MSG], note[256];
  double per[MAX_REPS];
  size_t qlen, warm, n;
  int reps;

  bench_parse_args(argc, argv, "daemon instructions per no-op dispatch (callgrind)", &o);
  bench_header("Instructions: the daemon's instructions per noop (1 task) dispatch, callgrind");
  reps = o.reps > MAX_REPS ? MAX_REPS : o.reps;
  warm = o.smoke ? 5 : 50;
  n = o.smoke ? 20 : 2000;
  qlen = bench_capture_noop(req, sizeof req);
  printf("request %zu bytes; base run %zu dispatches, full run %zu; %d repetitions\n", qlen,
         warm, warm + n, reps);
  for (int r = 0; r < reps; r++) {
    uint64_t base = count_run(req, qlen, warm), full = count_run(req, qlen, warm + n);
    per[r] = full > base ? (double)(full - base) / (double)n : 0;
    printf("rep %d: base %" PRIu64 " full %" PRIu64 " instructions: %.0f per dispatch (load %s)\n",
           r, base, full, per[r], bench_loadavg());
    fflush(stdout);
  }
  snprintf(note, sizeof note, "daemon instructions (all threads, callgrind Ir) per noop(1) "
           "dispatch back to back, spin_us = 0; (Ir of %zu - Ir of %zu dispatches) / %zu",
           warm + n, warm, n);
  bench_figure("instructions.noop.per_dispatch", bench_median(per, (size_t)reps), "instructions",
               note);
  return 0;
}
