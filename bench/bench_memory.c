/* SPDX-License-Identifier: Apache-2.0 */
/* bench_memory — ptod's resident memory: idle without an arena, and what
 * each connected client adds.
 *
 *   idle        VmRSS of a daemon prewarmed with the smallest sizing (4
 *               tasks, 1 KiB heap, 4 dependency entries per ring: an arena
 *               of a few KiB), 0.5 s after it is ready, against an idle
 *               /bin/sleep measured the same way (what any dynamically
 *               linked process costs)
 *   default     the same daemon with the default sizing, for scale (the
 *               arena is committed memory, so it is resident)
 *   per client  N idle connections, each having made one ping (so the
 *               daemon holds its read buffer): (RSS with them - RSS
 *               before) / N.  The kernel's socket buffers are not in RSS. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pto/client.h>

#include "bench.h"

#define MAX_CLIENTS 200

static void fail(const char *what) {
  fprintf(stderr, "bench_memory: %s: %s\n", what, strerror(errno));
  exit(1);
}

static long sleep_rss(void) {
  pid_t pid = fork();
  long kib;
  if (pid < 0) fail("fork");
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "10", (char *)NULL);
    _exit(127);
  }
  bench_sleep_us(300000);
  kib = bench_rss_kib(pid);
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  return kib;
}

int main(int argc, char **argv) {
  static const char tiny[] = "[ring]\ntask_window = 4\nheap = 1K\ndep_pool = 4\n";
  bench_opts_t o;
  bench_daemon_t d;
  double idle[64], base[64], per[64], ratio[64];
  int nclients, reps;
  char note[256];

  bench_parse_args(argc, argv, "daemon RSS at idle and per connected client", &o);
  bench_header("Memory: daemon RSS idle (tiny arena) and per connected client");
  reps = o.reps > 64 ? 64 : o.reps;
  nclients = o.smoke ? 10 : MAX_CLIENTS;

  for (int r = 0; r < reps; r++) {
    pto_client_t *cs[MAX_CLIENTS];
    long before, after;
    base[r] = (double)sleep_rss();
    bench_daemon_start(&d, tiny);
    bench_sleep_us(500000);
    idle[r] = (double)bench_rss_kib(d.pid);
    ratio[r] = idle[r] / base[r];
    before = bench_rss_kib(d.pid);
    for (int i = 0; i < nclients; i++) {
      pto_ping_t *p;
      pto_error_t err;
      if (pto_client_connect(d.socket, 5000, &cs[i], &err) < 0 ||
          pto_client_ping(cs[i], 5000, &p, &err) < 0) {
        fprintf(stderr, "bench_memory: client %d: %s\n", i, err.message);
        return 1;
      }
      pto_result_free(p);
    }
    bench_sleep_us(200000);
    after = bench_rss_kib(d.pid);
    per[r] = (double)(after - before) / nclients;
    printf("rep %d: /bin/sleep %.0f KiB; ptod idle %.0f KiB; with %d clients %ld KiB (+%.1f KiB "
           "each)\n",
           r, base[r], idle[r], nclients, after, per[r]);
    for (int i = 0; i < nclients; i++) pto_client_close(cs[i]);
    bench_daemon_stop(&d);
  }
  bench_figure("memory.sleep_rss", bench_median(base, (size_t)reps), "KiB",
               "baseline: an idle /bin/sleep, same run");
  bench_figure("memory.idle_rss", bench_median(idle, (size_t)reps), "KiB",
               "ptod idle, ready, arena of the smallest sizing (a few KiB)");
  bench_figure("memory.idle_vs_sleep", bench_median(ratio, (size_t)reps), "x",
               "ptod idle RSS / /bin/sleep RSS, same run");
  snprintf(note, sizeof note, "RSS added per idle connected client (%d clients, one ping each)",
           nclients);
  bench_figure("memory.per_client", bench_median(per, (size_t)reps), "KiB", note);

  if (!o.smoke) {
    double rss[64];
    for (int r = 0; r < reps; r++) {
      bench_daemon_start(&d, "");
      bench_sleep_us(500000);
      rss[r] = (double)bench_rss_kib(d.pid);
      bench_daemon_stop(&d);
    }
    bench_figure("memory.default_arena_rss", bench_median(rss, (size_t)reps) / 1024.0, "MiB",
                 "ptod idle with the default sizing: the arena is committed, so resident");
  }
  return 0;
}
