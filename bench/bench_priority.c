/* SPDX-License-Identifier: Apache-2.0 */
/* bench_priority — priorities and cancellation (protocol 1.2, issue 21):
 *   urgent    one connection queues a backlog of 1 ms noops at priority 0;
 *             another then sends one noop at priority -1 and one at 0: the
 *             timing_us.queue of each (the -1 should wait for the running
 *             dispatch only)
 *   cancel    1,000 noops queued behind a hold of the device, then 1,000
 *             cancels: how many came back CANCELLED, how many ran, the
 *             time from the first cancel sent to the last answer read, and
 *             the bytes still counted for clients afterwards
 * A raw msgpack client in Debian's python3 (pyrun.h) drives both, so the
 * figures do not wait for a client library to speak 1.2. */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"
#include "pyrun.h"

#define MAX_REPS 64
#define NFIG 7 /* urgent queue, same-priority queue, cancelled, ran, cancel ms, bytes left,
                * backlog still queued when the urgent one was sent */

/* argv: socket, backlog, cancels, hold us. */
static const char python_script[] =
    "import socket, sys, time, msgpack\n"
    "path, backlog, ncancel, hold_us = sys.argv[1], *map(int, sys.argv[2:5])\n"
    "class Conn:\n"
    "    def __init__(self):\n"
    "        self.s = socket.socket(socket.AF_UNIX)\n"
    "        self.s.connect(path)\n"
    "        self.u = msgpack.Unpacker(raw=False)\n"
    "        self.got = {}\n"
    "    def send(self, msgs):\n"
    "        self.s.sendall(b''.join(msgpack.packb(m, use_bin_type=True) for m in msgs))\n"
    "    def answer(self, i):\n"
    "        while i not in self.got:\n"
    "            for m in self.u:\n"
    "                if m[0] == 1:\n"
    "                    self.got[m[1]] = (m[2], m[3])\n"
    "            if i not in self.got:\n"
    "                self.u.feed(self.s.recv(1 << 20))\n"
    "        return self.got.pop(i)\n"
    "    def call(self, method, params=None, i=4000000000):\n"
    "        self.send([[0, i, method, [] if params is None else [params]]])\n"
    "        err, res = self.answer(i)\n"
    "        assert err is None, err\n"
    "        return res\n"
    "def noop(us, **kw):\n"
    "    return dict({'program': 'noop', 'args': [{'scalar': 1}, {'scalar': 0}, {'scalar': us}]}, **kw)\n"
    "def wait(st, pred):\n"
    "    while True:\n"
    "        s = st.call('status')\n"
    "        if pred(s):\n"
    "            return s\n"
    "        time.sleep(0.001)\n"
    "st, heavy, light = Conn(), Conn(), Conn()\n"
    "ok = st.call('status')['dispatches']['ok']\n"
    "heavy.send([0, i, 'dispatch', [noop(1000)]] for i in range(1, backlog + 1))\n"
    "ahead = wait(st, lambda s: s['queue']['depth'] + s['queue']['running'] + "
    "s['dispatches']['ok'] - ok >= backlog)['queue']['depth']\n"
    "urgent = light.call('dispatch', noop(0, priority=-1))['timing_us']['queue']\n"
    "same = light.call('dispatch', noop(0))['timing_us']['queue']\n"
    "for i in range(1, backlog + 1):\n"
    "    heavy.answer(i)\n"
    "hold, c = Conn(), Conn()\n"
    "hold.send([[0, 1, 'dispatch', [noop(hold_us)]]])\n"
    "wait(st, lambda s: s['queue']['running'] == 1)\n"
    "ok = st.call('status')['dispatches']['ok']\n"
    "c.send([0, i, 'dispatch', [noop(0)]] for i in range(1, ncancel + 1))\n"
    "wait(st, lambda s: s['queue']['depth'] >= ncancel)\n"
    "t0 = time.perf_counter()\n"
    "c.send([2, 'cancel', [{'msgid': i}]] for i in range(1, ncancel + 1))\n"
    "errs = [c.answer(i)[0] for i in range(1, ncancel + 1)]\n"
    "ms = (time.perf_counter() - t0) * 1e3\n"
    "left = st.call('status')['client_memory']['input']\n"
    "hold.answer(1)\n"
    "ran = st.call('status')['dispatches']['ok'] - ok - 1\n"
    "cancelled = sum(1 for e in errs if e and e['name'] == 'CANCELLED')\n"
    "print(urgent / 1e3, same / 1e3, cancelled, ran, ms, left, ahead)\n";

int main(int argc, char **argv) {
  bench_opts_t o;
  bench_daemon_t d;
  double v[NFIG][MAX_REPS];
  char sb[32], sc[32], sh[32], note[128];
  const char *args[] = {NULL, sb, sc, sh, NULL};
  int reps, backlog, ncancel;

  bench_parse_args(argc, argv, "priority -1 under a backlog; 1,000 queued requests cancelled",
                   &o);
  bench_header("Priority and cancel: a priority -1 dispatch under a backlog of 1 ms priority-0 "
               "dispatches, and 1,000 queued dispatches cancelled");
  reps = o.reps > MAX_REPS ? MAX_REPS : o.reps;
  backlog = o.smoke ? 20 : 500;
  ncancel = o.smoke ? 20 : 1000;
  snprintf(sb, sizeof sb, "%d", backlog);
  snprintf(sc, sizeof sc, "%d", ncancel);
  snprintf(sh, sizeof sh, "%d", o.smoke ? 200000 : 2000000);
  bench_daemon_start(&d, "[daemon]\nmax_pending = 4096\n");
  args[0] = d.socket;
  printf("backlog %d noops of 1 ms from one connection; %d cancels behind a %s us hold; "
         "%d repetitions\n", backlog, ncancel, sh, reps);
  for (int r = 0; r < reps; r++) {
    double out[NFIG];
    if (bench_python(python_script, args, out, NFIG) < 0) {
      bench_daemon_stop(&d);
      return 1;
    }
    for (int k = 0; k < NFIG; k++) v[k][r] = out[k];
    printf("rep %d (load %s): %.0f queued ahead; queue -1 %.3f ms, 0 %.3f ms; cancelled %.0f "
           "ran %.0f in %.1f ms, %.0f bytes left\n", r, bench_loadavg(), out[6], out[0], out[1],
           out[2], out[3], out[4], out[5]);
  }
  bench_daemon_stop(&d);
  snprintf(note, sizeof note, "priority -1 behind %d queued 1 ms priority-0 dispatches; target "
           "<= 1.5", backlog);
  bench_figure("priority.urgent.queue", bench_median(v[0], (size_t)reps), "ms", note);
  bench_figure("priority.urgent.ahead", bench_median(v[6], (size_t)reps), "requests",
               "the backlog still queued when the priority -1 dispatch was sent");
  bench_figure("priority.same.queue", bench_median(v[1], (size_t)reps), "ms",
               "priority 0 from the other connection, right after (1.1 fairness)");
  bench_figure("priority.cancel.cancelled", bench_min(v[2], (size_t)reps), "requests",
               "of 1,000 queued, the fewest answered CANCELLED in a rep; target 1000");
  bench_figure("priority.cancel.ran", bench_max(v[3], (size_t)reps), "requests",
               "of 1,000 cancelled while queued, the most that ran in a rep; target 0");
  bench_figure("priority.cancel.ms", bench_median(v[4], (size_t)reps), "ms",
               "1,000 cancels sent to the last CANCELLED read");
  bench_figure("priority.cancel.bytes_left", bench_max(v[5], (size_t)reps), "bytes",
               "client input still counted after the cancels (read buffers and the hold)");
  return 0;
}
