/* SPDX-License-Identifier: Apache-2.0 */
/* bench_latency's Python client rows (latency_python.h).
 *
 * Own CPU: a client's thread CPU time (user + system, the send and receive
 * syscalls included) from just before its call to just after it; what is
 * left of the round trip is the wait for the daemon.  After idle both
 * clients start cold, and the gap between them is (nearly) the difference
 * of their own CPU.  The bare-Python round trip (pyfloor) is what any
 * Python client costs at least: the request's bytes sent from a bytes
 * object, poll, recv_into a preallocated buffer, msgpack.unpackb; no
 * client code at all.  pyfloor_idle20_vs_client is therefore the lowest
 * python_idle20_vs_client that a client written in CPython can reach on
 * this machine. */
#include "latency_python.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "pyrun.h"

#define PY_DAEMONS 2
#define PY_REPS 64
#define PAIR_BLOCK 10 /* dispatches per block in python_pairs */
#define PY_COLS 9     /* per sample: the columns python_idle_script prints */
#define C_CPU_CALLS 1000

/* Kinds of figures, each a p50 and p99 per daemon and rep (a mean is kept
 * as both). */
enum {
  S_PY, S_PY_CPU, S_C_CPU, S_C_IDLE, S_C_IDLE_CPU,
  S_PY_IDLE, S_PY_IDLE_CPU, S_FLOOR, S_FLOOR_CPU, /* python_idle_script's columns, in order */
  S_PY_IDLE_PRE, S_PY_IDLE_POST, S_PY_PRE, S_PY_POST, S_FLOOR_POST, S_COUNT
};

typedef struct py_series {
  double p50[PY_REPS], p99[PY_REPS];
} py_series_t;

static py_series_t series[PY_DAEMONS][S_COUNT];
static bool python_ok = true; /* every Python row ran */

static void set(int di, int k, int rep, double p50, double p99) {
  series[di][k].p50[rep] = p50;
  series[di][k].p99[rep] = p99;
}

static void record(int di, int k, int rep, double *v, size_t n) {
  set(di, k, rep, bench_percentile(v, n, 50), bench_percentile(v, n, 99));
}

static uint64_t thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The Python client's noop(1) back to back: after `warm` dispatches, the
 * p50 and p99 (nearest rank, as bench_percentile) of `n`, and its thread's
 * CPU per dispatch over them (the timing loop included), in us. */
static const char python_script[] =
    "import math, sys, time\n"
    "from ptoclient import Client\n"
    "sock, n, warm = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "t = []\n"
    "with Client(socket_path=sock, timeout=10) as c:\n"
    "    for i in range(warm + n):\n"
    "        if i == warm:\n"
    "            c0 = time.thread_time()\n"
    "        t0 = time.perf_counter()\n"
    "        c.dispatch('noop', [1])\n"
    "        t.append((time.perf_counter() - t0) * 1e6)\n"
    "    cpu = (time.thread_time() - c0) * 1e6 / n\n"
    "t = sorted(t[warm:])\n"
    "rank = lambda p: t[min(n, max(1, math.ceil(p / 100 * n))) - 1]\n"
    "print(rank(50), rank(99), cpu)\n";

void python_b2b(int di, int rep, const char *socket, pto_client_t *c, py_client_once_fn once,
                size_t n, size_t warm) {
  char sn[32], sw[32];
  const char *args[] = {socket, sn, sw, NULL};
  double v[3];
  uint64_t cpu0;
  snprintf(sn, sizeof sn, "%zu", n);
  snprintf(sw, sizeof sw, "%zu", warm);
  if (bench_python(python_script, args, v, 3) < 0) {
    python_ok = false;
    v[0] = v[1] = v[2] = -1;
  }
  set(di, S_PY, rep, v[0], v[1]);
  set(di, S_PY_CPU, rep, v[2], v[2]);
  /* libptoclient's own CPU the same way: its thread's, over a loop */
  for (size_t i = 0; i < warm; i++) once(c);
  cpu0 = thread_cpu_ns();
  for (size_t i = 0; i < C_CPU_CALLS; i++) once(c);
  v[0] = (double)(thread_cpu_ns() - cpu0) / 1000.0 / C_CPU_CALLS;
  set(di, S_C_CPU, rep, v[0], v[0]);
}

/* The Python client's noop(1) when asked: for each line on stdin one
 * sample, each call after `idle` seconds of its own sleep: the client's
 * wall and thread CPU; a bare-Python round trip's (the same request from a
 * bytes object, poll, recv_into, unpackb; read on until unpackb takes the
 * answer whole) wall and thread CPU; then, on a second connection whose
 * socket and poller are wrapped to mark when its send starts and when its
 * wait ends, the client's time before the send and after the wait, cold
 * and again at once (warm), and the bare round trip's time after the wait
 * (nan when the client's internals moved and nothing was marked: the
 * other figures stay); in us, one line of PY_COLS numbers. */
static const char python_idle_script[] =
    "import math, os, select, socket, sys, time\n"
    "import msgpack\n"
    "from ptoclient import Client\n"
    "sock, idle = sys.argv[1], float(sys.argv[2])\n"
    "pc, tt = time.perf_counter, time.thread_time\n"
    "req = msgpack.packb([0, 1, 'dispatch', [{'program': 'noop', 'args': [{'scalar': 1}]}]])\n"
    "raw = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n"
    "raw.connect(sock)\n"
    "poller = select.poll()\n"
    "poller.register(raw, select.POLLIN)\n"
    "view = memoryview(bytearray(1 << 16))\n"
    "marks = []\n"
    "class Marked:\n"
    "    def __init__(self, inner):\n"
    "        self.inner = inner\n"
    "    def send(self, data, *flags):\n"
    "        marks.append(pc())\n"
    "        return self.inner.send(data, *flags)\n"
    "    def poll(self, *ms):\n"
    "        ready = self.inner.poll(*ms)\n"
    "        marks.append(pc())\n"
    "        return ready\n"
    "    def recv_into(self, buf):\n"
    "        return self.inner.recv_into(buf)\n"
    "    def __getattr__(self, name):\n"
    "        return getattr(self.inner, name)\n"
    "def bare(_program=None, _args=None, s=raw, p=poller):\n"
    "    s.send(req)\n"
    "    n = 0\n"
    "    while True:\n"
    "        p.poll()\n"
    "        n += s.recv_into(view[n:])\n"
    "        try:\n"
    "            return msgpack.unpackb(view[:n])\n"
    "        except ValueError:\n"
    "            pass\n"
    "def split(call):\n"
    "    del marks[:]\n"
    "    t0 = pc(); call('noop', [1]); t1 = pc()\n"
    "    if len(marks) < 2:\n"
    "        return math.nan, math.nan  # the client no longer sends or waits there\n"
    "    return (marks[0] - t0) * 1e6, (t1 - marks[-1]) * 1e6\n"
    "bare_marked = lambda p, a: bare(p, a, Marked(raw), Marked(poller))\n"
    "with Client(socket_path=sock, timeout=10) as c, Client(socket_path=sock, timeout=10) as m:\n"
    "    m._sock, m._poller = Marked(m._sock), Marked(m._poller)\n"
    "    bare(); m.dispatch('noop', [1])\n"
    "    while os.read(0, 1):\n"
    "        time.sleep(idle)\n"
    "        c0 = tt(); t0 = pc(); c.dispatch('noop', [1]); t1 = pc(); c1 = tt()\n"
    "        time.sleep(idle)\n"
    "        c2 = tt(); t2 = pc(); bare(); t3 = pc(); c3 = tt()\n"
    "        time.sleep(idle)\n"
    "        cold, warm = split(m.dispatch), split(m.dispatch)\n"
    "        time.sleep(idle)\n"
    "        floor = split(bare_marked)\n"
    "        v = ((t1 - t0) * 1e6, (c1 - c0) * 1e6, (t3 - t2) * 1e6, (c3 - c2) * 1e6)\n"
    "        v += cold + warm + floor[1:]\n"
    "        os.write(1, (' '.join('%.3f' % x for x in v) + '\\n').encode())\n";

/* The samples of one python_pairs: libptoclient's wall and CPU, then
 * Python's PY_COLS columns, n each. */
typedef struct pairs {
  double *c, *c_cpu, *py[PY_COLS];
} pairs_t;

static bool pairs_alloc(pairs_t *s, size_t n) {
  double *all = calloc(n * (2 + PY_COLS), sizeof *all);
  s->c = all;
  s->c_cpu = all + n;
  for (int i = 0; i < PY_COLS; i++) s->py[i] = all + n * (size_t)(2 + i);
  return all != NULL;
}

/* Alternating blocks: 1 + PAIR_BLOCK dispatches through libptoclient, each
 * after 20 ms of its own process's sleep, then as many samples from the
 * Python process in lockstep (each after its own 20 ms sleeps): both see
 * the same minutes.  The first block, and the first sample of each (after
 * the other's whole block), are left out. */
void python_pairs(int di, int rep, const char *socket, pto_client_t *c, py_client_once_fn once,
                  size_t n) {
  const char *args[] = {socket, "0.02", NULL};
  double cb[PAIR_BLOCK + 1], cc[PAIR_BLOCK + 1], pb[(PAIR_BLOCK + 1) * PY_COLS];
  bench_pystep_t p;
  pairs_t s;
  bool ok;
  if (!pairs_alloc(&s, n)) {
    fprintf(stderr, "bench_latency: out of memory\n");
    exit(1);
  }
  ok = bench_pystep_start(&p, python_idle_script, args) == 0;
  for (size_t got = 0, b = 0; ok && got < n; b++) {
    size_t k = n - got < PAIR_BLOCK ? n - got : PAIR_BLOCK;
    for (size_t i = 0; i <= k; i++) {
      uint64_t cpu0;
      bench_sleep_us(20000);
      cpu0 = thread_cpu_ns();
      cb[i] = once(c);
      cc[i] = (double)(thread_cpu_ns() - cpu0) / 1000.0;
    }
    ok = bench_pystep(&p, k + 1, PY_COLS, pb) == 0;
    if (b == 0) continue;
    memcpy(s.c + got, cb + 1, k * sizeof *cb);
    memcpy(s.c_cpu + got, cc + 1, k * sizeof *cc);
    for (size_t i = 0; i < k; i++)
      for (int col = 0; col < PY_COLS; col++) s.py[col][got + i] = pb[(i + 1) * PY_COLS + col];
    got += k;
  }
  if (bench_pystep_stop(&p) < 0 || !ok) python_ok = false;
  if (ok) {
    record(di, S_C_IDLE, rep, s.c, n);
    record(di, S_C_IDLE_CPU, rep, s.c_cpu, n);
    for (int col = 0; col < PY_COLS; col++) record(di, S_PY_IDLE + col, rep, s.py[col], n);
  }
  free(s.c);
}

void python_rep_line(int di, int rep) {
  const py_series_t *s = series[di];
  printf(" python %.1f (cpu %.1f, client's %.1f), idle20 %.1f (cpu %.1f) vs client %.1f (cpu "
         "%.1f), bare python %.1f (cpu %.1f) us |",
         s[S_PY].p50[rep], s[S_PY_CPU].p50[rep], s[S_C_CPU].p50[rep], s[S_PY_IDLE].p50[rep],
         s[S_PY_IDLE_CPU].p50[rep], s[S_C_IDLE].p50[rep], s[S_C_IDLE_CPU].p50[rep],
         s[S_FLOOR].p50[rep], s[S_FLOOR_CPU].p50[rep]);
}

static double med(const double *v, int reps) {
  double tmp[PY_REPS];
  memcpy(tmp, v, sizeof(double) * (size_t)reps);
  return bench_median(tmp, (size_t)reps);
}

/* What python_figures prints: key (after "latency.SPIN."), kind, whether
 * p99 and the reps' spread go with it (a series of round trips), note. */
static const struct {
  const char *what;
  int k;
  bool series;
  const char *note;
} rows[] = {
    {"python", S_PY, true, "noop(1) through the Python client, back to back"},
    {"python_idle20", S_PY_IDLE, true, "noop(1) through the Python client, each after 20 ms idle"},
    {"client_idle20_paired", S_C_IDLE, true,
     "noop(1) through libptoclient, after 20 ms idle, in blocks alternating with Python's"},
    {"pyfloor_idle20", S_FLOOR, true,
     "noop(1) from bare Python after 20 ms idle, no client (send a bytes object, poll, "
     "recv_into, msgpack.unpackb), in Python's blocks: the least a CPython client costs"},
    {"python_cpu", S_PY_CPU, false,
     "the Python client's own CPU (its thread, user + system) per noop(1), back to back, mean"},
    {"client_cpu", S_C_CPU, false,
     "libptoclient's own CPU (its thread, user + system) per noop(1), back to back, mean"},
    {"python_idle20_cpu", S_PY_IDLE_CPU, false,
     "the Python client's own CPU per noop(1) after 20 ms idle, p50 (the rest is the wait)"},
    {"client_idle20_cpu", S_C_IDLE_CPU, false,
     "libptoclient's own CPU per noop(1) after 20 ms idle, p50, in the alternating blocks"},
    {"pyfloor_idle20_cpu", S_FLOOR_CPU, false,
     "bare Python's own CPU per noop(1) after 20 ms idle, p50 (pyfloor_idle20's)"},
    {"python_idle20_pre", S_PY_IDLE_PRE, false,
     "the Python client after 20 ms idle: from the call to its send(), p50 (wall, on a second "
     "connection whose socket and poller mark the times)"},
    {"python_idle20_post", S_PY_IDLE_POST, false,
     "the same: from the wait's end (poll returns) to the call's return: recv, decode, "
     "hand-over"},
    {"python_pre", S_PY_PRE, false, "the same call's pre-send time at once again (warm), p50"},
    {"python_post", S_PY_POST, false, "the same call's post-wait time at once again (warm), p50"},
    {"pyfloor_idle20_post", S_FLOOR_POST, false,
     "bare Python after 20 ms idle: from poll's return to the answer decoded, p50 (its time "
     "before the send is one bytes object)"},
};

/* Ratios of two kinds (the client's back-to-back series given apart). */
#define K_CLIENT_B2B (-1)
static const struct {
  const char *what;
  int a, b;
  const char *note;
} ratios[] = {
    {"python_vs_client", S_PY, K_CLIENT_B2B,
     "Python client / libptoclient, noop(1) back to back, same rep"},
    {"python_idle20_vs_client", S_PY_IDLE, S_C_IDLE,
     "Python client / libptoclient, noop(1) after 20 ms idle, alternating blocks, same rep"},
    {"pyfloor_idle20_vs_client", S_FLOOR, S_C_IDLE,
     "bare Python / libptoclient after 20 ms idle, same blocks: the lowest "
     "python_idle20_vs_client a CPython client can reach"},
    {"python_idle20_vs_pyfloor", S_PY_IDLE, S_FLOOR,
     "Python client / bare Python after 20 ms idle, same process: what the client adds"},
};

void python_figures(int di, const char *sn, int reps, const double *client_b2b) {
  char key[128], note[400];
  if (!python_ok) return;
  for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
    const py_series_t *s = &series[di][rows[i].k];
    if (!rows[i].series) {
      snprintf(key, sizeof key, "latency.%s.%s", sn, rows[i].what);
      bench_figure(key, med(s->p50, reps), "us", rows[i].note);
      continue;
    }
    snprintf(key, sizeof key, "latency.%s.%s.p50", sn, rows[i].what);
    snprintf(note, sizeof note, "%s; reps min %.1f max %.1f", rows[i].note,
             bench_min(s->p50, (size_t)reps), bench_max(s->p50, (size_t)reps));
    bench_figure(key, med(s->p50, reps), "us", note);
    snprintf(key, sizeof key, "latency.%s.%s.p99", sn, rows[i].what);
    bench_figure(key, med(s->p99, reps), "us", rows[i].note);
  }
  for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
    const double *a = series[di][ratios[i].a].p50;
    const double *b = ratios[i].b == K_CLIENT_B2B ? client_b2b : series[di][ratios[i].b].p50;
    double r[PY_REPS];
    for (int j = 0; j < reps; j++) r[j] = a[j] / b[j];
    snprintf(key, sizeof key, "latency.%s.%s.p50", sn, ratios[i].what);
    bench_figure(key, bench_median(r, (size_t)reps), "x", ratios[i].note);
  }
}
