/* bench_arena — what building an arena costs, and what prewarming buys.
 *
 * In-process (ptoruntime and the sim device, no daemon), for the default
 * sizing (16384 tasks, 256 MiB heap, 16384 dependency entries per ring):
 *   commit      the kernel committing the same bytes, several ways, each
 *               with its page-fault count: mmap(MAP_POPULATE) (the baseline
 *               the build is held to), memset over 4 KiB pages, memset over
 *               transparent huge pages, MADV_POPULATE_WRITE over huge pages
 *               (what the sim device does), and memset of memory already
 *               committed (no faults: the memory bandwidth)
 *   cold        rt_ensure_arena on a runtime that holds nothing: commit and
 *               initialise; its rate against MAP_POPULATE's
 *   rebuild     a different sizing whose regions fit those already
 *               committed: initialisation only; against a cold build of
 *               that same sizing
 * Fresh guest memory is slow to touch whichever method touches it first,
 * so an untimed commit of the same size runs first, and the methods
 * alternate their order between repetitions.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
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

static long minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* ---- the kernel's own rates ---------------------------------------------- */

enum { C_POPULATE, C_4K, C_THP, C_POPULATE_THP, C_MEMSET, C_COUNT };
static const char *commit_names[C_COUNT] = {"mmap(MAP_POPULATE)", "memset, 4 KiB pages",
                                            "memset, huge pages", "MADV_POPULATE_WRITE, huge",
                                            "memset, already committed"};
static const char *commit_keys[C_COUNT] = {"populate", "fault_4k", "fault_thp", "populate_thp",
                                           "memset_committed"};

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

/* Seconds to commit `bytes` one way; *ret_faults the minor faults taken. */
static double commit_once(int how, uint64_t bytes, long *ret_faults) {
  long f0;
  uint64_t t0;
  char *p = NULL;
  double secs;
  if (how == C_MEMSET) {
    p = map_aligned(bytes, 0);
    madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 1, bytes);
  }
  f0 = minflt();
  t0 = bench_now_ns();
  switch (how) {
  case C_POPULATE:
    p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
             0);
    if (p == MAP_FAILED) fail("mmap(MAP_POPULATE)");
    break;
  case C_4K:
    p = map_aligned(bytes, 0);
    madvise(p, bytes, MADV_NOHUGEPAGE);
    memset(p, 0, bytes);
    break;
  case C_THP:
    p = map_aligned(bytes, 0);
    madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    break;
  case C_POPULATE_THP:
    p = map_aligned(bytes, 0);
    madvise(p, bytes, MADV_HUGEPAGE);
    if (madvise(p, bytes, MADV_POPULATE_WRITE) != 0) fail("MADV_POPULATE_WRITE");
    break;
  case C_MEMSET:
    memset(p, 0, bytes);
    break;
  }
  secs = (double)(bench_now_ns() - t0) / 1e9;
  *ret_faults = minflt() - f0;
  munmap(p, bytes);
  return secs;
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
  double commit[C_COUNT][64], faults[C_COUNT], cold[64], cold_small[64], rebuild[64];
  char note[256], key[64];
  int reps;

  bench_parse_args(argc, argv, "arena build, rebuild and prewarm", &o);
  bench_header("Arena: cold build vs the kernel's commit rate; rebuild; prewarm");
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

  /* ---- the kernel's rates, and cold builds, alternating ---- */
  printf("arena of the %s sizing: %.1f MiB\n", o.smoke ? "smoke" : "default",
         (double)bytes / (1 << 20));
  {
    long f;
    commit_once(C_POPULATE, bytes, &f); /* fresh guest memory: untimed */
  }
  memset(faults, 0, sizeof faults);
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < C_COUNT + 1; i++) {
      int how = (i + r) % (C_COUNT + 1);
      if (how == C_COUNT) {
        rt = new_runtime(dev);
        cold[r] = ensure(rt, &big, true);
        rt_destroy(rt);
      } else {
        long f;
        commit[how][r] = commit_once(how, bytes, &f);
        faults[how] = (double)f;
      }
    }
    printf("rep %d: cold build %.3f s;", r, cold[r]);
    for (int h = 0; h < C_COUNT; h++) printf(" %s %.3f s;", commit_keys[h], commit[h][r]);
    printf("\n");
    fflush(stdout);
  }
  {
    double pop = bench_median(commit[C_POPULATE], (size_t)reps);
    double build = bench_median(cold, (size_t)reps);
    double ratios[64];
    for (int h = 0; h < C_COUNT; h++) {
      double t = bench_median(commit[h], (size_t)reps);
      snprintf(key, sizeof key, "arena.commit.%s", commit_keys[h]);
      if (faults[h] > 0)
        snprintf(note, sizeof note, "%s of %.0f MiB: %.3f s, %.0f minor faults, %.2f us each",
                 commit_names[h], (double)bytes / (1 << 20), t, faults[h], t * 1e6 / faults[h]);
      else
        snprintf(note, sizeof note, "%s of %.0f MiB: %.3f s, no page faults counted",
                 commit_names[h], (double)bytes / (1 << 20), t);
      bench_figure(key, (double)bytes / t / 1e9, "GB/s", note);
    }
    for (int r = 0; r < reps; r++) ratios[r] = commit[C_POPULATE][r] / cold[r];
    snprintf(note, sizeof note, "cold rt_ensure_arena of %.0f MiB: %.3f s",
             (double)bytes / (1 << 20), build);
    bench_figure("arena.cold.rate", (double)bytes / build / 1e9, "GB/s", note);
    bench_figure("arena.cold.vs_populate", 100.0 * bench_median(ratios, (size_t)reps), "%",
                 "cold build rate / mmap(MAP_POPULATE) rate of the same bytes, same run; "
                 "target >= 80");
    (void)pop;
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
                 "cold build of that same sizing");
    bench_figure("arena.rebuild.vs_cold", 100.0 * bench_median(ratios, (size_t)reps), "%",
                 "rebuild / cold build of the same sizing, same run; target <= 5");
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
