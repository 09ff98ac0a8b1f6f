/* SPDX-License-Identifier: Apache-2.0 */
/* bench_arena — what committing and building an arena costs, and what
 * prewarming buys.  Default sizing (16384 tasks, 256 MiB heap, 16384
 * dependency entries per ring): 1100 MiB.
 *
 * Cold (what a daemon's start-up pays): every run is a fresh process
 * started after 5 s of idle, when the VM has reported the memory freed
 * since back to the host (free page reporting), so committing it pays the
 * host's faults too:
 *   probes      this program again (--probe), committing the same bytes one
 *               way with 1 or 2 threads on disjoint parts: memset over 4 KiB
 *               pages, MADV_HUGEPAGE + memset, MADV_HUGEPAGE +
 *               MADV_POPULATE_WRITE, mmap(MAP_POPULATE), MADV_NOHUGEPAGE +
 *               MADV_POPULATE_WRITE
 *   prewarm     ptod started with the default sizing and [device] cores = 1
 *               or 2 (its commit threads); its status.arena.build_us
 * in an order that turns every repetition; figures: each rate, and the
 * prewarm's rate against the best single-thread probe of the same
 * repetition.
 *
 * Warm, for contrast (in-process, into memory freed a moment ago: the host
 * still backs it): rt_ensure_arena and one probe.
 *   rebuild     a different sizing whose regions fit those already
 *               committed: initialisation only; against a fresh in-process
 *               build of that same sizing
 *
 * Through ptod:
 *   first       the first dispatch after the daemon prewarmed, against warm
 *               dispatches made the same way (each after 20 ms idle, so both
 *               pay the same wake-ups), medians over daemon restarts; with
 *               the default sizing (1.1 GiB arena) and a small one (22 MiB),
 *               since committing a GiB evicts every CPU cache on the way
 *   alternate   100 dispatches alternating two sizings (every one a rebuild)
 *               against 100 keeping one. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pto/client.h>
#include <pto/program.h>
#include <pto/sizing.h>

#include "bench.h"
#include "device.h"
#include "runtime.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

#define HUGE_2M (UINT64_C(2) << 20)
#define PLENTY (UINT64_C(1) << 40)

static void fail(const char *what) {
  fprintf(stderr, "bench_arena: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* ---- the kernel's own rates ---------------------------------------------- */

/* A 2 MiB-aligned anonymous mapping of `bytes` (munmap with unmap_aligned). */
static char *map_aligned(uint64_t bytes, int extra_flags) {
  char *raw = mmap(NULL, bytes + HUGE_2M, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | extra_flags, -1, 0);
  uint64_t lead;
  if (raw == MAP_FAILED) fail("mmap");
  lead = (HUGE_2M - (uintptr_t)raw % HUGE_2M) % HUGE_2M;
  if (lead) munmap(raw, lead);
  if (HUGE_2M - lead) munmap(raw + lead + bytes, HUGE_2M - lead);
  return raw + lead;
}

/* ---- cold commit probes: one commit, in a fresh process ----------------------- */

/* A fresh process after seconds of idle is what start-up is: the VM has
 * reported the memory freed since back to the host (free page reporting),
 * so committing it again pays the host's faults as well as the guest's.
 * Memory freed a moment ago is faster to commit, so in-process rates after
 * other commits are no measure of a cold start. */
enum { P_4K, P_THP, P_POPULATE_THP, P_MAP_POPULATE, P_POPULATE_4K, P_COUNT };
static const char *probe_keys[P_COUNT] = {"fault_4k", "fault_thp", "populate_thp",
                                          "map_populate", "populate_4k"};
static const char *probe_names[P_COUNT] = {
    "memset over 4 KiB pages (MADV_NOHUGEPAGE)", "MADV_HUGEPAGE + memset",
    "MADV_HUGEPAGE + MADV_POPULATE_WRITE", "mmap(MAP_POPULATE), 4 KiB pages",
    "MADV_NOHUGEPAGE + MADV_POPULATE_WRITE"};
#define PROBE_IDLE_US 5000000u

typedef struct probe_part {
  int how;
  char *p;
  uint64_t bytes;
  pthread_t thread;
} probe_part_t;

static void *probe_part_main(void *arg) {
  probe_part_t *part = arg;
  switch (part->how) {
  case P_4K:
  case P_THP:
    memset(part->p, 0, part->bytes);
    break;
  case P_POPULATE_THP:
  case P_POPULATE_4K:
    if (madvise(part->p, part->bytes, MADV_POPULATE_WRITE) != 0) fail("MADV_POPULATE_WRITE");
    break;
  case P_MAP_POPULATE:
    part->p = mmap(NULL, part->bytes, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (part->p == MAP_FAILED) fail("mmap(MAP_POPULATE)");
    break;
  }
  return NULL;
}

/* Seconds to commit `bytes` one way with `threads` threads, each taking a
 * disjoint 2 MiB-aligned part (MAP_POPULATE: a mapping of its own). */
static double probe_commit(int how, int threads, uint64_t bytes) {
  probe_part_t parts[16];
  uint64_t t0 = bench_now_ns(), per, off = 0;
  char *p = NULL;
  if (threads < 1 || threads > 16) threads = 1;
  per = (bytes / (uint64_t)threads + HUGE_2M - 1) / HUGE_2M * HUGE_2M;
  if (how != P_MAP_POPULATE) {
    p = map_aligned(bytes, 0);
    madvise(p, bytes, how == P_4K || how == P_POPULATE_4K ? MADV_NOHUGEPAGE : MADV_HUGEPAGE);
  }
  for (int i = 0; i < threads; i++) {
    parts[i].how = how;
    parts[i].p = p ? p + off : NULL;
    parts[i].bytes = off + per <= bytes ? per : bytes - off;
    off += parts[i].bytes;
    if (i == threads - 1) {
      probe_part_main(&parts[i]);
    } else if (pthread_create(&parts[i].thread, NULL, probe_part_main, &parts[i]) != 0) {
      fail("pthread_create");
    }
  }
  for (int i = 0; i < threads - 1; i++) pthread_join(parts[i].thread, NULL);
  return (double)(bench_now_ns() - t0) / 1e9;
}

/* Run one probe in a fresh process (this program, --probe), after
 * PROBE_IDLE_US of idle; seconds. */
static uint64_t probe_idle_us = PROBE_IDLE_US; /* --smoke: 0 */

static double probe_cold(int how, int threads, uint64_t bytes) {
  char a1[16], a2[16], a3[32], out[64] = "";
  int fds[2];
  pid_t pid;
  ssize_t n;
  bench_sleep_us(probe_idle_us);
  if (pipe(fds) < 0) fail("pipe");
  pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    snprintf(a1, sizeof a1, "%d", how);
    snprintf(a2, sizeof a2, "%d", threads);
    snprintf(a3, sizeof a3, "%llu", (unsigned long long)bytes);
    dup2(fds[1], 1);
    execl("/proc/self/exe", "bench_arena", "--probe", a1, a2, a3, (char *)NULL);
    _exit(127);
  }
  close(fds[1]);
  n = read(fds[0], out, sizeof out - 1);
  close(fds[0]);
  waitpid(pid, NULL, 0);
  if (n <= 0) fail("probe");
  out[n] = '\0';
  return strtod(out, NULL);
}

/* The start-up prewarm of a fresh daemon with the default sizing and
 * `conf` (e.g. its cores, which set the commit threads), after
 * PROBE_IDLE_US of idle: seconds its arena build took (status.arena). */
static double prewarm_cold(const char *conf, const char *ring, uint64_t *ret_bytes) {
  bench_daemon_t d;
  pto_client_t *c;
  pto_status_t *st;
  pto_error_t err;
  char text[256];
  double secs;
  snprintf(text, sizeof text, "%s%s", conf, ring);
  bench_sleep_us(probe_idle_us);
  bench_daemon_start(&d, text);
  if (pto_client_connect(d.socket, 5000, &c, &err) < 0 ||
      pto_client_status(c, 5000, &st, &err) < 0) {
    fprintf(stderr, "bench_arena: status: %s\n", err.message);
    exit(1);
  }
  secs = (double)st->arena.build_us / 1e6;
  *ret_bytes = st->arena.bytes;
  pto_result_free(st);
  pto_client_close(c);
  bench_daemon_stop(&d);
  return secs;
}

typedef struct cold_run {
  int how;     /* a probe, or -1: the daemon's prewarm */
  int threads; /* probe threads, or the daemon's commit threads */
  const char *conf;
} cold_run_t;

static const cold_run_t cold_runs[] = {
    {P_4K, 1, NULL},           {P_4K, 2, NULL},           {P_THP, 1, NULL},
    {P_POPULATE_THP, 1, NULL}, {P_POPULATE_THP, 2, NULL}, {P_MAP_POPULATE, 1, NULL},
    {P_MAP_POPULATE, 2, NULL}, {P_POPULATE_4K, 1, NULL},  {P_POPULATE_4K, 2, NULL},
    {-1, 1, "[device]\ncores = 1\n"}, {-1, 2, "[device]\ncores = 2\n"},
};
#define NCOLD (sizeof cold_runs / sizeof cold_runs[0])

/* Every cold run, `reps` times, rotating the order; figures arena.cold.*. */
static void cold_section(uint64_t bytes, int reps, const char *ring) {
  double secs[NCOLD][8], med_rate[NCOLD];
  char key[96], note[320];
  uint64_t daemon_bytes = bytes;
  size_t best = 0;

  for (int r = 0; r < reps; r++) {
    for (size_t i = 0; i < NCOLD; i++) {
      size_t k = (i + (size_t)r * 4) % NCOLD;
      const cold_run_t *c = &cold_runs[k];
      secs[k][r] = c->how < 0 ? prewarm_cold(c->conf, ring, &daemon_bytes)
                              : probe_cold(c->how, c->threads, bytes);
    }
    printf("cold rep %d (load %s):", r, bench_loadavg());
    for (size_t k = 0; k < NCOLD; k++)
      printf(" %s.t%d %.3f s;", cold_runs[k].how < 0 ? "prewarm" : probe_keys[cold_runs[k].how],
             cold_runs[k].threads, secs[k][r]);
    printf("\n");
    fflush(stdout);
  }
  if (daemon_bytes != bytes)
    printf("note: the daemon's arena is %.1f MiB, the probes commit %.1f MiB\n",
           (double)daemon_bytes / (1 << 20), (double)bytes / (1 << 20));
  for (size_t k = 0; k < NCOLD; k++) {
    const cold_run_t *c = &cold_runs[k];
    double tmp[8], t;
    uint64_t b = c->how < 0 ? daemon_bytes : bytes;
    memcpy(tmp, secs[k], sizeof(double) * (size_t)reps);
    t = bench_median(tmp, (size_t)reps);
    med_rate[k] = (double)b / t / 1e9;
    if (c->how >= 0 && c->threads == 1 && med_rate[k] > med_rate[best]) best = k;
    snprintf(key, sizeof key, "arena.cold.%s.t%d", c->how < 0 ? "prewarm" : probe_keys[c->how],
             c->threads);
    snprintf(note, sizeof note, "%s, %d thread%s, %.0f MiB, fresh process after %u s idle: "
             "median %.3f s (min %.3f, max %.3f)",
             c->how < 0 ? "ptod start-up prewarm (status.arena.build_us)" : probe_names[c->how],
             c->threads, c->threads > 1 ? "s" : "", (double)b / (1 << 20),
             (unsigned)(probe_idle_us / 1000000u),
             t, bench_min(secs[k], (size_t)reps), bench_max(secs[k], (size_t)reps));
    bench_figure(key, med_rate[k], "GB/s", note);
  }
  snprintf(note, sizeof note, "the best single-thread commit probe, cold: %s",
           probe_names[cold_runs[best].how]);
  bench_figure("arena.cold.best_probe.t1", med_rate[best], "GB/s", note);
  for (size_t k = NCOLD - 2; k < NCOLD; k++) {
    double ratio[8];
    for (int r = 0; r < reps; r++)
      ratio[r] = ((double)daemon_bytes / secs[k][r]) / ((double)bytes / secs[best][r]);
    snprintf(key, sizeof key, "arena.cold.prewarm.t%d.vs_best_probe", cold_runs[k].threads);
    snprintf(note, sizeof note, "start-up prewarm rate with %d commit thread%s / the best "
             "single-thread probe's (%s), same rep, median of reps; target %s",
             cold_runs[k].threads, cold_runs[k].threads > 1 ? "s" : "",
             probe_keys[cold_runs[best].how], cold_runs[k].threads > 1 ? "> 100" : ">= 90");
    bench_figure(key, 100.0 * bench_median(ratio, (size_t)reps), "%", note);
  }
}

/* ---- arenas in-process ------------------------------------------------------ */

static pto_sizing_resolved_t sizing_of(uint64_t window, uint64_t heap, uint64_t dep) {
  pto_sizing_resolved_t s;
  memset(&s, 0, sizeof s);
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    s.value[PTO_FIELD_TASK_WINDOW][r] = window;
    s.value[PTO_FIELD_HEAP][r] = heap;
    s.value[PTO_FIELD_DEP_POOL][r] = dep;
  }
  return s;
}

static rt_runtime_t *new_runtime(dev_device_t *dev) {
  rt_options_t o;
  rt_runtime_t *rt;
  pto_error_t err;
  memset(&o, 0, sizeof o);
  o.device = dev;
  o.programs_dir = bench_programs_dir();
  if (rt_create(&o, &rt, &err) < 0) {
    fprintf(stderr, "bench_arena: rt_create: %s\n", err.message);
    exit(1);
  }
  return rt;
}

/* Seconds rt_ensure_arena takes for `s` (the runtime's own build_us is
 * printed alongside by the caller when useful). */
static double ensure(rt_runtime_t *rt, const pto_sizing_resolved_t *s, bool expect_build) {
  rt_arena_result_t res;
  pto_error_t err;
  uint64_t t0 = bench_now_ns();
  if (rt_ensure_arena(rt, s, PLENTY, &res, &err) < 0) {
    fprintf(stderr, "bench_arena: rt_ensure_arena: %s\n", err.message);
    exit(1);
  }
  if (res.hit == expect_build) {
    fprintf(stderr, "bench_arena: expected a %s\n", expect_build ? "build" : "hit");
    exit(1);
  }
  return (double)(bench_now_ns() - t0) / 1e9;
}

/* ---- through the daemon ----------------------------------------------------- */

/* Round trip in us; *ret_total_us (may be NULL) the daemon's own service
 * time, timing_us.total - timing_us.queue: from the device thread taking the
 * dispatch to the end of its run (resolve, program, arena, run). */
static double dispatch_us(pto_client_t *c, const pto_config_t *cfg, bool *ret_hit,
                          double *ret_total_us) {
  pto_dispatch_arg_t args[] = {pto_arg_int(1)};
  pto_dispatch_req_t req = {.program = "noop", .args = args, .nargs = 1, .config = cfg};
  pto_dispatch_result_t *res;
  pto_error_t err;
  uint64_t t0 = bench_now_ns();
  if (pto_client_dispatch(c, &req, 60000, &res, &err) < 0) {
    fprintf(stderr, "bench_arena: dispatch: %s\n", err.message);
    exit(1);
  }
  if (ret_hit) *ret_hit = res->arena.hit;
  /* The daemon's service time: from the device thread taking the job to
   * the run's end (its wake-up, the noisiest part, left out). */
  if (ret_total_us) *ret_total_us = (double)(res->timing_us.total - res->timing_us.queue);
  pto_result_free(res);
  return (double)(bench_now_ns() - t0) / 1000.0;
}

static pto_client_t *connect_daemon(const bench_daemon_t *d) {
  pto_client_t *c;
  pto_error_t err;
  if (pto_client_connect(d->socket, 5000, &c, &err) < 0) {
    fprintf(stderr, "bench_arena: connect: %s\n", err.message);
    exit(1);
  }
  return c;
}

static void ping(pto_client_t *c) {
  pto_ping_t *p;
  pto_error_t err;
  if (pto_client_ping(c, 5000, &p, &err) < 0) {
    fprintf(stderr, "bench_arena: ping: %s\n", err.message);
    exit(1);
  }
  pto_result_free(p);
}

/* The first dispatch after prewarm against warm ones (each after 20 ms
 * idle), over `restarts` daemons prewarmed with `ring` (INI [ring] lines;
 * "" for the defaults); figures named arena.<name>.*. */
static void first_vs_warm(const char *name, const char *ring, const char *what, int restarts,
                          int nwarm) {
  double first[64], warm_med[64], ratio[64], dfirst[64], dwarm_med[64], dratio[64];
  char key[96], note[256];
  /* One daemon first, untimed: this process's own first dispatch (lazy
   * symbol binding, first allocations) is not the daemon's. */
  for (int r = -1; r < restarts; r++) {
    bench_daemon_t d;
    pto_client_t *c;
    double warm[64], dwarm[64], f, df;
    bool hit = false;
    bench_daemon_start(&d, ring);
    c = connect_daemon(&d);
    ping(c); /* the connection is up: what is left is the dispatch path */
    bench_sleep_us(20000);
    f = dispatch_us(c, NULL, &hit, &df);
    if (!hit) {
      fprintf(stderr, "bench_arena: the first dispatch missed the prewarmed arena\n");
      exit(1);
    }
    for (int i = 0; i < nwarm; i++) {
      bench_sleep_us(20000);
      warm[i] = dispatch_us(c, NULL, NULL, &dwarm[i]);
    }
    pto_client_close(c);
    bench_daemon_stop(&d);
    if (r < 0) continue;
    first[r] = f;
    dfirst[r] = df;
    warm_med[r] = bench_median(warm, (size_t)nwarm);
    dwarm_med[r] = bench_median(dwarm, (size_t)nwarm);
    ratio[r] = first[r] / warm_med[r];
    dratio[r] = dfirst[r] / dwarm_med[r];
    printf("%s, restart %d: first %.1f us (service %.0f us), warm after 20 ms idle %.1f us "
           "(service %.0f us)\n",
           name, r, first[r], dfirst[r], warm_med[r], dwarm_med[r]);
  }
  snprintf(key, sizeof key, "arena.%s.first_dispatch.us", name);
  snprintf(note, sizeof note, "first noop(1) dispatch after prewarm, %s (20 ms after connecting)",
           what);
  bench_figure(key, bench_median(first, (size_t)restarts), "us", note);
  snprintf(key, sizeof key, "arena.%s.warm_dispatch.us", name);
  bench_figure(key, bench_median(warm_med, (size_t)restarts), "us",
               "warm noop(1) dispatches, each after 20 ms idle");
  snprintf(key, sizeof key, "arena.%s.first_vs_warm", name);
  bench_figure(key, bench_median(ratio, (size_t)restarts), "x",
               "first / warm round trip, same daemon; target <= 1.1");
  snprintf(key, sizeof key, "arena.%s.first_vs_warm.daemon", name);
  bench_figure(key, bench_median(dratio, (size_t)restarts), "x",
               "the daemon's service time (timing_us total - queue: the device thread taking the "
               "job to the run's end, wake-up left out), first / warm");
}

int main(int argc, char **argv) {
  bench_opts_t o;
  dev_device_t *dev;
  pto_error_t err;
  pto_sizing_resolved_t big, small;
  rt_runtime_t *rt;
  uint64_t bytes, small_bytes;
  double warm[64], warm_probe[64], cold_small[64], rebuild[64];
  char note[256];
  int reps;

  if (argc == 5 && strcmp(argv[1], "--probe") == 0) {
    printf("%.6f\n", probe_commit(atoi(argv[2]), atoi(argv[3]), strtoull(argv[4], NULL, 10)));
    return 0;
  }
  bench_parse_args(argc, argv, "arena build, rebuild and prewarm", &o);
  bench_header("Arena: cold commit probes and start-up prewarm; warm build; rebuild; first "
               "dispatch");
  reps = o.reps > 64 ? 64 : o.reps;
  if (dev_open("sim", NULL, &dev, &err) < 0) {
    fprintf(stderr, "bench_arena: %s\n", err.message);
    return 1;
  }
  /* --smoke: a small sizing, so the run takes no time. */
  big = o.smoke ? sizing_of(1024, 4 << 20, 1024) : sizing_of(16384, 256 << 20, 16384);
  small = o.smoke ? sizing_of(1024, 4 << 20, 512) : sizing_of(8192, 256 << 20, 8192);
  rt = new_runtime(dev);
  bytes = rt_arena_bytes(rt, &big);
  small_bytes = rt_arena_bytes(rt, &small);
  rt_destroy(rt);

  /* ---- cold: every commit probe and the daemon's start-up prewarm, each
   * in a fresh process after PROBE_IDLE_US of idle, rotating ---- */
  printf("arena of the %s sizing: %.1f MiB\n", o.smoke ? "smoke" : "default",
         (double)bytes / (1 << 20));
  if (o.smoke) probe_idle_us = 0;
  cold_section(bytes, reps > 3 ? 3 : reps,
               o.smoke ? "[ring]\ntask_window = 1024\nheap = 4M\ndep_pool = 1024\n" : "");
  if (o.only && strcmp(o.only, "cold") == 0) return 0; /* --only cold: that part alone */

  /* ---- warm, for contrast: in-process, into memory freed a moment ago
   * (what the old "cold build" figure measured) ---- */
  for (int r = 0; r < reps; r++) {
    rt = new_runtime(dev);
    warm[r] = ensure(rt, &big, true);
    rt_destroy(rt);
    warm_probe[r] = probe_commit(P_POPULATE_4K, 1, bytes);
  }
  {
    double t = bench_median(warm, (size_t)reps), tp = bench_median(warm_probe, (size_t)reps);
    snprintf(note, sizeof note, "in-process rt_ensure_arena of %.0f MiB right after freeing the "
             "same (not cold: the host still backs the memory): %.3f s", (double)bytes / (1 << 20),
             t);
    bench_figure("arena.warm.build", (double)bytes / t / 1e9, "GB/s", note);
    snprintf(note, sizeof note, "the same state, %s, 1 thread: %.3f s", probe_names[P_POPULATE_4K],
             tp);
    bench_figure("arena.warm.probe.populate_4k.t1", (double)bytes / tp / 1e9, "GB/s", note);
  }

  /* ---- rebuild into committed memory vs a cold build of that sizing ---- */
  for (int r = 0; r < reps; r++) {
    rt = new_runtime(dev);
    ensure(rt, &big, true);
    rebuild[r] = ensure(rt, &small, true);
    rt_destroy(rt);
    rt = new_runtime(dev);
    cold_small[r] = ensure(rt, &small, true);
    rt_destroy(rt);
  }
  {
    double ratios[64];
    for (int r = 0; r < reps; r++) ratios[r] = rebuild[r] / cold_small[r];
    snprintf(note, sizeof note, "rebuild to a sizing of %.0f MiB inside regions already "
             "committed (window and pool 8192)",
             (double)small_bytes / (1 << 20));
    bench_figure("arena.rebuild.us", bench_median(rebuild, (size_t)reps) * 1e6, "us", note);
    bench_figure("arena.rebuild.cold_us", bench_median(cold_small, (size_t)reps) * 1e6, "us",
                 "fresh in-process build of that same sizing (warm memory)");
    bench_figure("arena.rebuild.vs_cold", 100.0 * bench_median(ratios, (size_t)reps), "%",
                 "rebuild / fresh build of the same sizing, same run; target <= 5");
  }
  dev_close(dev);

  /* ---- through the daemon: the first dispatch after prewarm ---- */
  if (o.smoke) {
    first_vs_warm("small", "[ring]\ntask_window = 1024\nheap = 4M\ndep_pool = 1024\n",
                  "arena of 22 MiB", 1, 3);
  } else {
    first_vs_warm("default", "", "default sizing, arena of 1100 MiB", reps, 20);
    first_vs_warm("small", "[ring]\ntask_window = 1024\nheap = 4M\ndep_pool = 1024\n",
                  "arena of 22 MiB", reps, 20);
  }

  /* ---- alternating two sizings vs keeping one ---- */
  {
    int n = o.smoke ? 4 : 100;
    bench_daemon_t d;
    pto_client_t *c;
    pto_config_t *a, *b;
    double keep[64], alt[64], ratio[64];
    bench_daemon_start(&d, o.smoke ? "[ring]\ntask_window = 1024\nheap = 4M\ndep_pool = 1024\n"
                                   : "");
    c = connect_daemon(&d);
    pto_config_new(&a);
    pto_config_new(&b);
    /* a: the baseline spelled out (a hit on the prewarmed slot); b: half
     * the dependency pool, which fits a's regions. */
    pto_config_set_ring(a, PTO_FIELD_DEP_POOL, o.smoke ? 1024 : 16384, &err);
    pto_config_set_ring(b, PTO_FIELD_DEP_POOL, o.smoke ? 512 : 8192, &err);
    for (int r = 0; r < reps; r++) {
      uint64_t t0;
      dispatch_us(c, a, NULL, NULL);
      t0 = bench_now_ns();
      for (int i = 0; i < n; i++) dispatch_us(c, a, NULL, NULL);
      keep[r] = (double)(bench_now_ns() - t0) / 1000.0 / n;
      t0 = bench_now_ns();
      for (int i = 0; i < n; i++) dispatch_us(c, i % 2 ? a : b, NULL, NULL);
      alt[r] = (double)(bench_now_ns() - t0) / 1000.0 / n;
      ratio[r] = alt[r] / keep[r];
      printf("rep %d: keeping one sizing %.1f us/dispatch, alternating two %.1f us/dispatch\n", r,
             keep[r], alt[r]);
    }
    bench_figure("arena.keep_one.us", bench_median(keep, (size_t)reps), "us",
                 "mean noop(1) dispatch, one sizing throughout (every dispatch a hit)");
    bench_figure("arena.alternate.us", bench_median(alt, (size_t)reps), "us",
                 "mean noop(1) dispatch, two sizings alternating (every dispatch a rebuild)");
    bench_figure("arena.alternate_vs_keep", bench_median(ratio, (size_t)reps), "x",
                 "alternating / keeping one, same run");
    pto_config_free(a);
    pto_config_free(b);
    pto_client_close(c);
    bench_daemon_stop(&d);
  }
  return 0;
}
