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
 * What the figure includes that is not work: valgrind runs one thread at a
 * time, so while the device thread is inside uv_async_send the loop
 * thread's libuv completion handler spins on the async handle's pending
 * flag; those instructions (1.6k to 2.8k per dispatch, the split's first
 * libuv row, and most of the spread between repetitions) count here,
 * though on a machine that runs both threads at once the wait is a few
 * instructions.  Compare variants in one run, interleaved.
 *
 * The first repetition also prints where one dispatch's instructions go:
 * each function's own instructions (callgrind_annotate, exclusive) in the
 * full run less the base run, divided by n, the largest first.
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
#define MAX_FUNCS 4096 /* functions kept per callgrind_annotate listing */
#define SPLIT_ROWS 30  /* functions printed in the split */

/* One function's own instructions in one callgrind run. */
typedef struct {
  char name[200]; /* callgrind_annotate's "file:function [object]" */
  uint64_t ir;
} func_ir_t;

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

/* The functions of a callgrind output file with their own (exclusive)
 * instructions, as callgrind_annotate lists them; returns how many. */
static size_t callgrind_functions(const char *path, func_ir_t *ret, size_t cap) {
  char cmd[256], line[1024];
  size_t n = 0;
  FILE *p;
  snprintf(cmd, sizeof cmd, "callgrind_annotate --auto=no --threshold=100 '%s' 2>/dev/null", path);
  p = popen(cmd, "r");
  if (!p) return 0;
  while (fgets(line, sizeof line, p) && n < cap) {
    /* "  1,234 (12.3%)  file.c:function [object]"; skip the header lines */
    char *s = line, *name;
    uint64_t ir = 0;
    while (*s == ' ') s++;
    if (*s < '0' || *s > '9') continue;
    for (; (*s >= '0' && *s <= '9') || *s == ','; s++)
      if (*s != ',') ir = ir * 10 + (uint64_t)(*s - '0');
    name = strstr(s, ")  ");
    if (!name || strstr(line, "PROGRAM TOTALS")) continue;
    name += 3;
    name[strcspn(name, "\n")] = '\0';
    snprintf(ret[n].name, sizeof ret[n].name, "%s", name);
    ret[n++].ir = ir;
  }
  pclose(p);
  return n;
}

static int by_ir_desc(const void *a, const void *b) {
  const func_ir_t *x = a, *y = b;
  return x->ir < y->ir ? 1 : x->ir > y->ir ? -1 : 0;
}

/* Prints each function's own instructions per dispatch: (full - base) / n. */
static void print_split(const char *base_out, const char *full_out, size_t n) {
  static func_ir_t base[MAX_FUNCS], full[MAX_FUNCS];
  size_t nb = callgrind_functions(base_out, base, MAX_FUNCS);
  size_t nf = callgrind_functions(full_out, full, MAX_FUNCS);
  for (size_t i = 0; i < nf; i++) {
    uint64_t b = 0;
    for (size_t j = 0; j < nb; j++)
      if (strcmp(full[i].name, base[j].name) == 0) b = base[j].ir;
    full[i].ir = full[i].ir > b ? (full[i].ir - b) / n : 0;
  }
  qsort(full, nf, sizeof full[0], by_ir_desc);
  printf("where one dispatch's instructions go (own instructions per dispatch, top %d):\n",
         SPLIT_ROWS);
  for (size_t i = 0; i < nf && i < SPLIT_ROWS && full[i].ir > 0; i++)
    printf("  %8" PRIu64 "  %s\n", full[i].ir, full[i].name);
}

/* print_split over the outputs count_run left in two directories, which
 * it then removes. */
static void print_and_remove_split(const char *base_dir, const char *full_dir, size_t n) {
  char base_out[96], full_out[96];
  snprintf(base_out, sizeof base_out, "%s/callgrind.out", base_dir);
  snprintf(full_out, sizeof full_out, "%s/callgrind.out", full_dir);
  print_split(base_out, full_out, n);
  unlink(base_out);
  unlink(full_out);
  rmdir(base_dir);
  rmdir(full_dir);
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
 * dispatches back to back.  With keep_dir, the output is left in that
 * directory (keep_dir/callgrind.out, the caller removes it) instead. */
static uint64_t count_run(const char *req, size_t qlen, size_t count, char keep_dir[26]) {
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
  if (keep_dir) {
    memcpy(keep_dir, dir, sizeof dir);
  } else {
    unlink(out);
    rmdir(dir);
  }
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
    char base_dir[26], full_dir[26];
    bool split = r == 0;
    uint64_t base = count_run(req, qlen, warm, split ? base_dir : NULL);
    uint64_t full = count_run(req, qlen, warm + n, split ? full_dir : NULL);
    per[r] = full > base ? (double)(full - base) / (double)n : 0;
    printf("rep %d: base %" PRIu64 " full %" PRIu64 " instructions: %.0f per dispatch (load %s)\n",
           r, base, full, per[r], bench_loadavg());
    if (split) print_and_remove_split(base_dir, full_dir, n);
    fflush(stdout);
  }
  snprintf(note, sizeof note, "daemon instructions (all threads, callgrind Ir) per noop(1) "
           "dispatch back to back, spin_us = 0; (Ir of %zu - Ir of %zu dispatches) / %zu",
           warm + n, warm, n);
  bench_figure("instructions.noop.per_dispatch", bench_median(per, (size_t)reps), "instructions",
               note);
  return 0;
}
