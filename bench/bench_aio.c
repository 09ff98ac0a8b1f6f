/* SPDX-License-Identifier: Apache-2.0 */
/* bench_aio — the asyncio Python client (ptoclient.aio) against the
 * blocking one (ptoclient.Client), same daemon, same repetition:
 *   b2b       noop(1) back to back: `await dev.dispatch(...)` vs
 *             `c.dispatch(...)`, in alternating blocks of 250 calls on two
 *             connections of one process (so a change of the machine's
 *             load falls on both alike), p50 of each client's calls
 *   window64  noop(1) throughput with 64 in flight on one connection: 64
 *             tasks each awaiting dispatches vs the blocking client's
 *             send_dispatch pipeline (64 sent ahead, one collected per send)
 * One Python process per repetition runs both, in an order that turns
 * every repetition; its start-up is not timed.  Figures are medians over
 * the repetitions, and the ratios are taken per repetition. */
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
    "W, B = 64, 250\n"
    "def p50(t):\n"
    "    t = sorted(t)\n"
    "    return t[(len(t) + 1) // 2 - 1]\n"
    "def blocking_block(c, t):\n"
    "    for _ in range(B):\n"
    "        t0 = time.perf_counter()\n"
    "        c.dispatch('noop', [1])\n"
    "        t.append((time.perf_counter() - t0) * 1e6)\n"
    "async def aio_block(dev, t):\n"
    "    for _ in range(B):\n"
    "        t0 = time.perf_counter()\n"
    "        await dev.dispatch('noop', [1])\n"
    "        t.append((time.perf_counter() - t0) * 1e6)\n"
    "async def b2b(c, dev):\n"
    "    tb, ta = [], []\n"
    "    for k in range(-(-(warm + n) // B)):\n"
    "        if (k + first) % 2 == 0:\n"
    "            blocking_block(c, tb)\n"
    "        await aio_block(dev, ta)\n"
    "        if (k + first) % 2 == 1:\n"
    "            blocking_block(c, tb)\n"
    "    return p50(tb[warm:]), p50(ta[warm:])\n"
    "def blocking_window(c):\n"
    "    ids = [c.send_dispatch('noop', [1]) for _ in range(W)]\n"
    "    t0 = time.perf_counter()\n"
    "    for i in range(total):\n"
    "        c.result(ids[i % W])\n"
    "        ids[i % W] = c.send_dispatch('noop', [1])\n"
    "    rate = total / (time.perf_counter() - t0)\n"
    "    c.gather(ids)\n"
    "    return rate\n"
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
    "async def main():\n"
    "    fig = {}\n"
    "    with Client(sock, timeout=30) as c:\n"
    "        async with ptoclient.aio.connect(sock, timeout=30) as dev:\n"
    "            for k in ((0, 1) if first < 2 else (1, 0)):\n"
    "                if k == 0:\n"
    "                    fig[0], fig[1] = await b2b(c, dev)\n"
    "                elif first % 2 == 0:\n"
    "                    fig[2], fig[3] = blocking_window(c), await aio_window(dev)\n"
    "                else:\n"
    "                    fig[3], fig[2] = await aio_window(dev), blocking_window(c)\n"
    "    return fig\n"
    "fig = asyncio.run(main())\n"
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
