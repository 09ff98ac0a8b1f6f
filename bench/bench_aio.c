/* SPDX-License-Identifier: Apache-2.0 */
/* bench_aio — the asyncio Python client (ptoclient.aio) against the
 * blocking one (ptoclient.Client), same daemon, same repetition:
 *   b2b       noop(1) back to back: `await dev.dispatch(...)` vs
 *             `c.dispatch(...)`, p50 of each loop
 *   window64  noop(1) throughput with 64 in flight on one connection: 64
 *             tasks each awaiting dispatches vs the blocking client's
 *             send_dispatch pipeline (64 sent ahead, one collected per send)
 * One Python process per repetition runs all four loops, in an order that
 * turns every repetition; its start-up is not timed.  Figures are medians
 * over the repetitions, and the ratios are taken per repetition. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "pyrun.h"

#define MAX_REPS 64
#define NFIG 4 /* blocking b2b p50, aio b2b p50, blocking window rate, aio window rate */

/* argv: socket, back-to-back count, warm-up, window dispatches, first loop. */
static const char python_script[] =
    "import asyncio, sys, time\n"
    "import ptoclient.aio\n"
    "from ptoclient import Client\n"
    "sock, n, warm, total, first = sys.argv[1], *map(int, sys.argv[2:6])\n"
    "W = 64\n"
    "def p50(t):\n"
    "    t = sorted(t[warm:])\n"
    "    return t[(len(t) + 1) // 2 - 1]\n"
    "def blocking_b2b(c):\n"
    "    t = []\n"
    "    for _ in range(warm + n):\n"
    "        t0 = time.perf_counter()\n"
    "        c.dispatch('noop', [1])\n"
    "        t.append((time.perf_counter() - t0) * 1e6)\n"
    "    return p50(t)\n"
    "def blocking_window(c):\n"
    "    ids = [c.send_dispatch('noop', [1]) for _ in range(W)]\n"
    "    t0 = time.perf_counter()\n"
    "    for i in range(total):\n"
    "        c.result(ids[i % W])\n"
    "        ids[i % W] = c.send_dispatch('noop', [1])\n"
    "    rate = total / (time.perf_counter() - t0)\n"
    "    c.gather(ids)\n"
    "    return rate\n"
    "async def aio_b2b(dev):\n"
    "    t = []\n"
    "    for _ in range(warm + n):\n"
    "        t0 = time.perf_counter()\n"
    "        await dev.dispatch('noop', [1])\n"
    "        t.append((time.perf_counter() - t0) * 1e6)\n"
    "    return p50(t)\n"
    "async def aio_window(dev):\n"
    "    left = [total]\n"
    "    async def worker():\n"
    "        while left[0] > 0:\n"
    "            left[0] -= 1\n"
    "            await dev.dispatch('noop', [1])\n"
    "    await asyncio.gather(*(dev.dispatch('noop', [1]) for _ in range(W)))\n"
    "    t0 = time.perf_counter()\n"
    "    await asyncio.gather(*(worker() for _ in range(W)))\n"
    "    return total / (time.perf_counter() - t0)\n"
    "async def aio_all(order):\n"
    "    out = {}\n"
    "    async with ptoclient.aio.connect(sock, timeout=30) as dev:\n"
    "        for k in order:\n"
    "            out[k] = await (aio_b2b(dev) if k == 1 else aio_window(dev))\n"
    "    return out\n"
    "fig = {}\n"
    "for side in ((0, 1) if first % 2 == 0 else (1, 0)):\n"
    "    if side == 0:\n"
    "        with Client(sock, timeout=30) as c:\n"
    "            fig[0], fig[2] = blocking_b2b(c), blocking_window(c)\n"
    "    else:\n"
    "        got = asyncio.run(aio_all((1, 3) if first < 2 else (3, 1)))\n"
    "        fig[1], fig[3] = got[1], got[3]\n"
    "print(fig[0], fig[1], fig[2], fig[3])\n";

static double median_of(double *v, int reps) {
  return bench_median(v, (size_t)reps);
}

int main(int argc, char **argv) {
  bench_opts_t o;
  bench_daemon_t d;
  double v[NFIG][MAX_REPS], b2b_ratio[MAX_REPS], rate_ratio[MAX_REPS];
  char sn[32], sw[32], st[32], sf[32];
  const char *args[] = {NULL, sn, sw, st, sf, NULL};
  int reps;

  bench_parse_args(argc, argv, "the asyncio Python client vs the blocking one", &o);
  bench_header("ptoclient.aio vs ptoclient.Client: noop(1) back to back, and 64 in flight on "
               "one connection");
  reps = o.reps > MAX_REPS ? MAX_REPS : o.reps;
  snprintf(sn, sizeof sn, "%d", o.smoke ? 100 : 5000);
  snprintf(sw, sizeof sw, "%d", o.smoke ? 10 : 500);
  snprintf(st, sizeof st, "%d", o.smoke ? 256 : 20000);
  bench_daemon_start(&d, "[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n");
  args[0] = d.socket;
  printf("back to back %s dispatches after %s warm-up; %s dispatches with 64 in flight; "
         "%d repetitions\n", sn, sw, st, reps);
  for (int r = 0; r < reps; r++) {
    double out[NFIG];
    snprintf(sf, sizeof sf, "%d", r % 4);
    if (bench_python(python_script, args, out, NFIG) < 0) {
      bench_daemon_stop(&d);
      return 1;
    }
    for (int k = 0; k < NFIG; k++) v[k][r] = out[k];
    b2b_ratio[r] = out[1] / out[0];
    rate_ratio[r] = out[3] / out[2];
    printf("rep %d (load %s): b2b blocking %.1f aio %.1f us; window64 blocking %.0f aio %.0f "
           "per s\n", r, bench_loadavg(), out[0], out[1], out[2], out[3]);
  }
  bench_daemon_stop(&d);
  bench_figure("aio.b2b.blocking.p50", median_of(v[0], reps), "us",
               "noop(1) back to back, Client.dispatch");
  bench_figure("aio.b2b.aio.p50", median_of(v[1], reps), "us",
               "noop(1) back to back, await AsyncClient.dispatch");
  bench_figure("aio.b2b.aio_vs_blocking.p50", median_of(b2b_ratio, reps), "x",
               "asyncio / blocking p50, same rep; target <= 1.2");
  bench_figure("aio.window64.blocking", median_of(v[2], reps), "dispatch/s",
               "Client.send_dispatch with 64 in flight");
  bench_figure("aio.window64.aio", median_of(v[3], reps), "dispatch/s",
               "64 tasks awaiting AsyncClient.dispatch on one connection");
  bench_figure("aio.window64.aio_vs_blocking", median_of(rate_ratio, reps), "x",
               "asyncio / blocking pipelined throughput, same rep; target >= 0.8");
  return 0;
}
