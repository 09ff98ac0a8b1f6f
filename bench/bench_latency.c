/* SPDX-License-Identifier: Apache-2.0 */
/* bench_latency — the round trip of a no-op dispatch (noop, 1 task)
 * through ptod, back to back and after idle, against Unix-socket
 * ping-pongs of the same message sizes measured in the same run.
 *
 * Baselines (two processes over a Unix stream socket, the request's bytes
 * one way and the response's bytes back):
 *   spin      both sides poll with non-blocking reads: no one ever sleeps,
 *             the floor for a round trip between two processes
 *   block     blocking read/write, back to back
 *   idle      blocking, each round trip after the same idle time as the
 *             dispatches below (what waking a sleeping process costs)
 * Against them, for two daemons, one with [daemon] spin_us = 0 (nothing
 * spins) and one with the default (50):
 *   raw       libptoclient's request bytes on a plain socket, the response
 *             read with a msgpack unpacker (the daemon's own share),
 *             back to back, and after 20 ms and 2 ms idle
 *   ping      a ping after 20 ms idle (no device thread: socket and loop)
 *   client    pto_client_dispatch() back to back (what a user sees)
 *   client    after 20 ms idle too
 *   python    the Python client, back to back and after 20 ms idle against
 *             libptoclient, with each one's own CPU and a bare-Python
 *             round trip (latency_python.h)
 * and the peer baseline a user would otherwise pick (zmq_peer.h): a ZeroMQ
 * REQ/REP round trip over ipc:// with msgpack messages of the same sizes,
 * back to back and after 20 ms idle.  client_vs_zmq splits into
 * client_vs_raw (what libptoclient adds) times raw_vs_zmq (the daemon's).
 * The idle loops interleave sample by sample (sleep, ping-pong; sleep,
 * ZeroMQ; sleep, dispatch on one daemon; sleep, the other...), so every
 * kind sees the same machine.  Also: what the daemon uses while raw
 * dispatches stream back to back (CPU time per dispatch, cores, and its
 * threads' context switches per dispatch: sleeps, and switches away from
 * a spin or poll, counts that do not depend on the machine's speed),
 * against the blocking ping-pong peer's CPU per round trip, and its CPU
 * use while idle.
 * Figures are medians over repetitions of each loop's p50 (p99). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>
#include <pto/client.h>

#include "bench.h"
#include "latency_python.h"
#include "pingpong.h"
#include "zmq_peer.h"

#define MAX_MSG 4096
#define NDAEMONS 2
#define MAX_REPS 64

static const char *const spin_names[NDAEMONS] = {"spin0", "spin50"};
static const char *const spin_conf[NDAEMONS] = {"[daemon]\nspin_us = 0\n",
                                                "[daemon]\nspin_us = 50\n"};

static void fail(const char *what) {
  fprintf(stderr, "bench_latency: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* Read one whole msgpack object from fd; returns its size.  `ok`: whether
 * it was an answer without error ([1, id, nil, result]). */
static size_t read_response(int fd, msgpack_unpacker *u, bool *ok) {
  msgpack_unpacked out;
  size_t total = 0;
  msgpack_unpacked_init(&out);
  for (;;) {
    msgpack_unpack_return r = msgpack_unpacker_next_with_size(u, &out, &total);
    ssize_t n;
    if (r == MSGPACK_UNPACK_SUCCESS) break;
    if (r != MSGPACK_UNPACK_CONTINUE) {
      fprintf(stderr, "bench_latency: the daemon's answer is not msgpack\n");
      exit(1);
    }
    if (!msgpack_unpacker_reserve_buffer(u, MAX_MSG)) fail("unpacker");
    n = read(fd, msgpack_unpacker_buffer(u), msgpack_unpacker_buffer_capacity(u));
    if (n <= 0) fail("read from ptod");
    msgpack_unpacker_buffer_consumed(u, (size_t)n);
  }
  if (ok)
    *ok = out.data.type == MSGPACK_OBJECT_ARRAY && out.data.via.array.size == 4 &&
          out.data.via.array.ptr[2].type == MSGPACK_OBJECT_NIL;
  msgpack_unpacked_destroy(&out);
  return total;
}

static double raw_once(int fd, msgpack_unpacker *u, const char *req, size_t qlen) {
  uint64_t t0 = bench_now_ns();
  bool ok;
  bench_write_all(fd, req, qlen);
  read_response(fd, u, &ok);
  if (!ok) {
    fprintf(stderr, "bench_latency: a dispatch failed\n");
    exit(1);
  }
  return (double)(bench_now_ns() - t0) / 1000.0;
}

static double client_once(pto_client_t *c) {
  pto_dispatch_arg_t args[] = {pto_arg_int(1)};
  pto_dispatch_req_t req = {.program = "noop", .args = args, .nargs = 1};
  pto_dispatch_result_t *res;
  pto_error_t err;
  uint64_t t0 = bench_now_ns();
  if (pto_client_dispatch(c, &req, 10000, &res, &err) < 0) {
    fprintf(stderr, "bench_latency: dispatch: %s\n", err.message);
    exit(1);
  }
  pto_result_free(res);
  return (double)(bench_now_ns() - t0) / 1000.0;
}

/* Per kind of loop: p50 and p99 of each repetition. */
typedef struct series {
  double p50[MAX_REPS], p99[MAX_REPS];
} series_t;

static void record(series_t *s, int rep, double *lat, size_t n) {
  s->p50[rep] = bench_percentile(lat, n, 50);
  s->p99[rep] = bench_percentile(lat, n, 99);
}

typedef struct target {
  bench_daemon_t d;
  int fd;
  msgpack_unpacker u;
  pto_client_t *c;
} target_t;

/* Kinds of series. */
enum {
  K_PP_SPIN, K_PP_BLOCK, K_PP_IDLE20, K_PP_IDLE2, K_ZMQ_B2B, K_ZMQ_IDLE20,
  K_RAW_B2B, K_RAW_IDLE20 = K_RAW_B2B + NDAEMONS, K_RAW_IDLE2 = K_RAW_IDLE20 + NDAEMONS,
  K_PING_IDLE20 = K_RAW_IDLE2 + NDAEMONS, K_CLIENT = K_PING_IDLE20 + NDAEMONS,
  K_CLIENT_IDLE20 = K_CLIENT + NDAEMONS, K_COUNT = K_CLIENT_IDLE20 + NDAEMONS
};

/* Back-to-back loops per repetition: two ping-pongs and ZeroMQ, then raw,
 * client and python for each daemon. */
#define B2B_PEERS 3
#define B2B_LOOPS (B2B_PEERS + 3 * NDAEMONS)

/* After-idle samples, interleaved: the ping-pong and ZeroMQ, then per
 * daemon raw, ping and client (after 2 ms idle only the ping-pong and raw). */
#define IDLE_PP 0
#define IDLE_ZMQ 1
#define IDLE_RAW(di) (2 + 3 * (di))
#define IDLE_PING(di) (3 + 3 * (di))
#define IDLE_CLIENT(di) (4 + 3 * (di))
#define IDLE_KINDS (2 + 3 * NDAEMONS)

static series_t series[K_COUNT];
/* What each daemon used while raw dispatches streamed back to back, per
 * rep: use_rows[] says what each is. */
enum { U_CPU, U_CPU_VS_PEER, U_CORES, U_SLEEPS, U_SWITCHED, U_COUNT };
static double use[NDAEMONS][U_COUNT][MAX_REPS];
static const struct {
  const char *what, *unit, *note;
} use_rows[U_COUNT] = {
    {"daemon_cpu_per_dispatch", "us",
     "daemon CPU time (all threads) per dispatch, raw back to back, spins included"},
    {"daemon_cpu_vs_peer", "x",
     "daemon_cpu_per_dispatch / the blocking ping-pong peer's CPU per round trip, same rep"},
    {"daemon_cores", "cores", "daemon CPU time / wall time while raw dispatches stream back to back"},
    {"daemon_sleeps_per_dispatch", "switches",
     "voluntary context switches (a daemon thread slept: a wake-up to come) per raw dispatch "
     "back to back, all threads"},
    {"daemon_switched_per_dispatch", "switches",
     "nonvoluntary context switches (a daemon thread preempted, or yielding its CPU to a "
     "runnable thread: a spin or poll beside other work) per raw dispatch back to back"},
};
/* The blocking ping-pong peer's CPU time per round trip, per rep: what
 * serving one request at a time costs a process that only reads and
 * writes (its syscalls and wake-ups), the floor under the daemon's. */
static double peer_cpu[MAX_REPS];

static double med(const double *v, int reps) {
  double tmp[MAX_REPS];
  memcpy(tmp, v, sizeof(double) * (size_t)reps);
  return bench_median(tmp, (size_t)reps);
}

/* Median over reps of a/b per rep. */
static double med_ratio(const double *a, const double *b, int reps) {
  double r[MAX_REPS];
  for (int i = 0; i < reps; i++) r[i] = a[i] / b[i];
  return bench_median(r, (size_t)reps);
}

static void figure_series(const char *key, int k, int reps, const char *note) {
  char name[128], n2[320];
  snprintf(name, sizeof name, "latency.%s.p50", key);
  snprintf(n2, sizeof n2, "%s; reps min %.1f max %.1f", note,
           bench_min(series[k].p50, (size_t)reps), bench_max(series[k].p50, (size_t)reps));
  bench_figure(name, med(series[k].p50, reps), "us", n2);
  snprintf(name, sizeof name, "latency.%s.p99", key);
  bench_figure(name, med(series[k].p99, reps), "us", note);
}

/* Everything one run measures with. */
typedef struct run {
  target_t t[NDAEMONS];
  zmq_peer_t zmq;
  char req[MAX_MSG];
  size_t qlen, rlen, n, warm, nidle;
  double *lat, *lat2[IDLE_KINDS];
} run_t;

/* A ping request, [0, 7, "ping", []] in msgpack. */
static const char ping_req[] = "\x94\x00\x07\xa4ping\x90";
#define PING_LEN (sizeof ping_req - 1)

/* Start the daemons (their first dispatch tells the answer's size), then
 * the ZeroMQ peer answering with as many bytes. */
static void run_start(run_t *x) {
  x->qlen = bench_capture_noop(x->req, sizeof x->req);
  if (getenv("PTOD_BENCH_PTOD"))
    printf("daemon: %s, on its own defaults (no spin_us: it may predate the key); the spin0 "
           "and spin50 figures are both that\n", bench_ptod_path());
  for (int i = 0; i < NDAEMONS; i++) {
    target_t *t = &x->t[i];
    char conf[256];
    pto_error_t err;
    snprintf(conf, sizeof conf, "%s[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n",
             getenv("PTOD_BENCH_PTOD") ? "" : spin_conf[i]);
    bench_daemon_start(&t->d, conf);
    t->fd = bench_connect_unix(t->d.socket);
    msgpack_unpacker_init(&t->u, MAX_MSG);
    bench_write_all(t->fd, x->req, x->qlen);
    x->rlen = read_response(t->fd, &t->u, NULL);
    if (pto_client_connect(t->d.socket, 1000, &t->c, &err) < 0) {
      fprintf(stderr, "bench_latency: connect: %s\n", err.message);
      exit(1);
    }
  }
  zmq_peer_start(&x->zmq, x->rlen);
  zmq_peer_round_trip(&x->zmq, x->req, x->qlen); /* connected */
}

static void run_stop(run_t *x) {
  zmq_peer_stop(&x->zmq);
  for (int i = 0; i < NDAEMONS; i++) {
    pto_client_close(x->t[i].c);
    close(x->t[i].fd);
    msgpack_unpacker_destroy(&x->t[i].u);
    bench_daemon_stop(&x->t[i].d);
  }
}

/* One back-to-back loop of `warm + n` round trips: loop s of B2B_LOOPS. */
static void b2b_loop(run_t *x, int s, int r) {
  size_t total = x->warm + x->n;
  if (s < 2) {
    bool spin = s == 0;
    int echo_fd;
    pid_t echo = pingpong_start(&echo_fd, x->qlen, x->rlen, spin);
    uint64_t cpu0 = bench_cpu_ns(echo);
    for (size_t i = 0; i < total; i++)
      x->lat[i] = pingpong_once(echo_fd, x->req, x->qlen, x->rlen, spin);
    if (!spin) peer_cpu[r] = (double)(bench_cpu_ns(echo) - cpu0) / 1000.0 / (double)total;
    bench_peer_stop(echo_fd, echo);
    record(&series[spin ? K_PP_SPIN : K_PP_BLOCK], r, x->lat + x->warm, x->n);
  } else if (s == 2) {
    for (size_t i = 0; i < total; i++) x->lat[i] = zmq_peer_round_trip(&x->zmq, x->req, x->qlen);
    record(&series[K_ZMQ_B2B], r, x->lat + x->warm, x->n);
  } else if ((s - B2B_PEERS) % 3 == 2) {
    int di = (s - B2B_PEERS) / 3;
    python_b2b(di, r, x->t[di].d.socket, x->t[di].c, client_once, x->n, x->warm);
  } else {
    int di = (s - B2B_PEERS) / 3;
    target_t *t = &x->t[di];
    bool client = (s - B2B_PEERS) % 3 == 1;
    uint64_t cpu0 = bench_cpu_ns(t->d.pid), w0 = bench_now_ns(), cpu1, w1, v0, v1, n0, n1;
    bench_switches(t->d.pid, &v0, &n0);
    for (size_t i = 0; i < total; i++)
      x->lat[i] = client ? client_once(t->c) : raw_once(t->fd, &t->u, x->req, x->qlen);
    w1 = bench_now_ns();
    cpu1 = bench_cpu_ns(t->d.pid);
    bench_switches(t->d.pid, &v1, &n1);
    record(&series[client ? K_CLIENT + di : K_RAW_B2B + di], r, x->lat + x->warm, x->n);
    if (!client) {
      use[di][U_CPU][r] = (double)(cpu1 - cpu0) / 1000.0 / (double)total;
      use[di][U_CORES][r] = (double)(cpu1 - cpu0) / (double)(w1 - w0);
      use[di][U_SLEEPS][r] = (double)(v1 - v0) / (double)total;
      use[di][U_SWITCHED][r] = (double)(n1 - n0) / (double)total;
    }
  }
}

/* The after-idle loops of one repetition, interleaved sample by sample. */
static void idle_loops(run_t *x, int r) {
  for (int gap = 0; gap < 2; gap++) {
    uint64_t idle_us = gap == 0 ? 20000 : 2000;
    int echo_fd;
    pid_t echo = pingpong_start(&echo_fd, x->qlen, x->rlen, false);
    for (size_t i = 0; i < x->nidle; i++) {
      bench_sleep_us(idle_us);
      x->lat2[IDLE_PP][i] = pingpong_once(echo_fd, x->req, x->qlen, x->rlen, false);
      if (gap == 0) {
        bench_sleep_us(idle_us);
        x->lat2[IDLE_ZMQ][i] = zmq_peer_round_trip(&x->zmq, x->req, x->qlen);
      }
      for (int di = 0; di < NDAEMONS; di++) {
        target_t *t = &x->t[di];
        bench_sleep_us(idle_us);
        x->lat2[IDLE_RAW(di)][i] = raw_once(t->fd, &t->u, x->req, x->qlen);
        if (gap != 0) continue;
        bench_sleep_us(idle_us);
        x->lat2[IDLE_PING(di)][i] = raw_once(t->fd, &t->u, ping_req, PING_LEN);
        bench_sleep_us(idle_us);
        x->lat2[IDLE_CLIENT(di)][i] = client_once(t->c);
      }
    }
    bench_peer_stop(echo_fd, echo);
    record(&series[gap == 0 ? K_PP_IDLE20 : K_PP_IDLE2], r, x->lat2[IDLE_PP], x->nidle);
    for (int di = 0; di < NDAEMONS; di++)
      record(&series[(gap == 0 ? K_RAW_IDLE20 : K_RAW_IDLE2) + di], r, x->lat2[IDLE_RAW(di)],
             x->nidle);
    if (gap != 0) continue;
    record(&series[K_ZMQ_IDLE20], r, x->lat2[IDLE_ZMQ], x->nidle);
    for (int di = 0; di < NDAEMONS; di++) {
      record(&series[K_PING_IDLE20 + di], r, x->lat2[IDLE_PING(di)], x->nidle);
      record(&series[K_CLIENT_IDLE20 + di], r, x->lat2[IDLE_CLIENT(di)], x->nidle);
    }
  }
}

static void print_rep(int r) {
  printf("rep %d: pp spin %.1f block %.1f idle20 %.1f idle2 %.1f us | zmq b2b %.1f idle20 %.1f "
         "us |", r, series[K_PP_SPIN].p50[r], series[K_PP_BLOCK].p50[r],
         series[K_PP_IDLE20].p50[r], series[K_PP_IDLE2].p50[r], series[K_ZMQ_B2B].p50[r],
         series[K_ZMQ_IDLE20].p50[r]);
  for (int di = 0; di < NDAEMONS; di++) {
    printf(" %s: b2b %.1f idle20 %.1f idle2 %.1f ping20 %.1f client %.1f (idle20 %.1f) us, "
           "%.1f us cpu, %.2f cores;",
           spin_names[di], series[K_RAW_B2B + di].p50[r], series[K_RAW_IDLE20 + di].p50[r],
           series[K_RAW_IDLE2 + di].p50[r], series[K_PING_IDLE20 + di].p50[r],
           series[K_CLIENT + di].p50[r], series[K_CLIENT_IDLE20 + di].p50[r], use[di][U_CPU][r],
           use[di][U_CORES][r]);
    python_rep_line(di, r);
  }
  printf("\n");
  fflush(stdout);
}

/* Idle: any spin must have ended. */
static void idle_cpu_figures(run_t *x, bool smoke) {
  for (int di = 0; di < NDAEMONS; di++) {
    char key[128];
    uint64_t cpu0, cpu1, t0, t1;
    bench_sleep_us(200000);
    cpu0 = bench_cpu_ns(x->t[di].d.pid);
    t0 = bench_now_ns();
    bench_sleep_us(smoke ? 200000 : 2000000);
    cpu1 = bench_cpu_ns(x->t[di].d.pid);
    t1 = bench_now_ns();
    snprintf(key, sizeof key, "latency.%s.idle_cpu", spin_names[di]);
    bench_figure(key, 100.0 * (double)(cpu1 - cpu0) / (double)(t1 - t0), "%",
                 "daemon CPU use while idle, from 0.2 s after the last dispatch");
  }
}

static void ratio_figure(const char *sn, const char *what, int a, int b, int reps,
                         const char *note) {
  char key[128];
  snprintf(key, sizeof key, "latency.%s.%s.p50", sn, what);
  bench_figure(key, med_ratio(series[a].p50, series[b].p50, reps), "x", note);
}

static void baseline_figures(const run_t *x, int reps) {
  char note[256];
  snprintf(note, sizeof note, "baseline: Unix-socket ping-pong, two processes, %zu B -> %zu B, "
           "both sides spinning on non-blocking reads (the floor)", x->qlen, x->rlen);
  figure_series("pingpong_spin", K_PP_SPIN, reps, note);
  figure_series("pingpong_block", K_PP_BLOCK, reps, "the same, blocking reads, back to back");
  figure_series("pingpong_idle20", K_PP_IDLE20, reps,
                "the same, blocking, each round trip after 20 ms idle (a wake-up)");
  figure_series("pingpong_idle2", K_PP_IDLE2, reps, "the same, after 2 ms idle");
  snprintf(note, sizeof note, "peer baseline: ZeroMQ REQ/REP over ipc://, msgpack %zu B -> "
           "%zu B, back to back", x->qlen, x->rlen);
  figure_series("zmq_b2b", K_ZMQ_B2B, reps, note);
  figure_series("zmq_idle20", K_ZMQ_IDLE20, reps, "the same, each round trip after 20 ms idle");
  bench_figure("latency.pingpong_block.peer_cpu", med(peer_cpu, reps), "us",
               "the blocking ping-pong peer's CPU time per round trip: serving one request at a "
               "time with nothing but its read and write (the floor under daemon_cpu_per_dispatch)");
  /* The floors of client_vs_spin and client_vs_zmq_b2b for a client that
   * blocks for its answer (libptoclient, ZeroMQ's REQ): a ping-pong that
   * does nothing else. */
  bench_figure("latency.pingpong_block_vs_spin.p50",
               med_ratio(series[K_PP_BLOCK].p50, series[K_PP_SPIN].p50, reps), "x",
               "blocking ping-pong / spinning ping-pong, same rep: the lowest client_vs_spin a "
               "client that blocks for its answer can reach");
  bench_figure("latency.pingpong_block_vs_zmq_b2b.p50",
               med_ratio(series[K_PP_BLOCK].p50, series[K_ZMQ_B2B].p50, reps), "x",
               "blocking ping-pong / ZeroMQ REQ/REP back to back, same rep: the lowest "
               "client_vs_zmq_b2b a client that blocks for its answer can reach");
}

/* The ratios each daemon's figures end with: series a (a daemon's) over
 * series b (a baseline's, or the same daemon's), p50 of the same rep. */
typedef struct ratio {
  const char *what;
  int a, b;
  bool b_per_daemon;
  const char *note;
} ratio_t;

static const ratio_t ratios[] = {
    {"b2b_vs_spin", K_RAW_B2B, K_PP_SPIN, false,
     "raw dispatch back to back / spinning ping-pong, same rep"},
    {"client_vs_spin", K_CLIENT, K_PP_SPIN, false,
     "libptoclient dispatch back to back / spinning ping-pong, same rep"},
    {"b2b_vs_block", K_RAW_B2B, K_PP_BLOCK, false,
     "raw dispatch back to back / blocking ping-pong, same rep"},
    {"client_vs_block", K_CLIENT, K_PP_BLOCK, false,
     "libptoclient dispatch back to back / blocking ping-pong, same rep"},
    {"idle20_vs_block", K_RAW_IDLE20, K_PP_IDLE20, false,
     "raw dispatch after 20 ms idle / blocking ping-pong after 20 ms idle, interleaved"},
    {"idle2_vs_block", K_RAW_IDLE2, K_PP_IDLE2, false,
     "raw dispatch after 2 ms idle / blocking ping-pong after 2 ms idle, interleaved"},
    {"client_vs_zmq_b2b", K_CLIENT, K_ZMQ_B2B, false,
     "libptoclient dispatch / ZeroMQ REQ/REP round trip, back to back, same rep"},
    {"client_vs_zmq_idle20", K_CLIENT_IDLE20, K_ZMQ_IDLE20, false,
     "libptoclient dispatch / ZeroMQ REQ/REP round trip, after 20 ms idle, interleaved"},
    /* The two halves of client_vs_zmq: what the client adds, what the daemon takes. */
    {"client_vs_raw", K_CLIENT, K_RAW_B2B, true,
     "libptoclient dispatch / raw msgpack client, back to back, same rep (the client's share)"},
    {"client_vs_raw_idle20", K_CLIENT_IDLE20, K_RAW_IDLE20, true,
     "libptoclient dispatch / raw msgpack client, after 20 ms idle, interleaved"},
    {"raw_vs_zmq_b2b", K_RAW_B2B, K_ZMQ_B2B, false,
     "raw dispatch / ZeroMQ REQ/REP round trip, back to back, same rep (the daemon's share)"},
    {"raw_vs_zmq_idle20", K_RAW_IDLE20, K_ZMQ_IDLE20, false,
     "raw dispatch / ZeroMQ REQ/REP round trip, after 20 ms idle, interleaved"},
};

/* Each daemon's series: key, kind (the daemon's index added), what it is. */
static const struct {
  const char *what;
  int k;
  const char *note;
} daemon_series[] = {
    {"b2b", K_RAW_B2B, "noop(1), raw socket, back to back"},
    {"idle20", K_RAW_IDLE20, "noop(1), raw socket, each after 20 ms idle"},
    {"idle2", K_RAW_IDLE2, "noop(1), raw socket, each after 2 ms idle"},
    {"ping_idle20", K_PING_IDLE20, "ping (no device thread), after 20 ms idle"},
    {"client", K_CLIENT, "noop(1) through libptoclient, back to back"},
    {"client_idle20", K_CLIENT_IDLE20, "noop(1) through libptoclient, after 20 ms idle"},
};

static void daemon_figures(int di, int reps) {
  const char *sn = spin_names[di];
  char k2[96], key[128];
  for (size_t i = 0; i < sizeof daemon_series / sizeof daemon_series[0]; i++) {
    snprintf(k2, sizeof k2, "%s.%s", sn, daemon_series[i].what);
    figure_series(k2, daemon_series[i].k + di, reps, daemon_series[i].note);
  }
  for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
    const ratio_t *q = &ratios[i];
    ratio_figure(sn, q->what, q->a + di, q->b + (q->b_per_daemon ? di : 0), reps, q->note);
  }
  snprintf(key, sizeof key, "latency.%s.idle20_vs_block.p99", sn);
  bench_figure(key, med_ratio(series[K_RAW_IDLE20 + di].p99, series[K_PP_IDLE20].p99, reps),
               "x", "raw dispatch after 20 ms idle / blocking ping-pong after 20 ms idle, p99");
  for (int r = 0; r < reps; r++) /* both are in once the rep is over */
    use[di][U_CPU_VS_PEER][r] = use[di][U_CPU][r] / peer_cpu[r];
  for (int u = 0; u < U_COUNT; u++) {
    snprintf(key, sizeof key, "latency.%s.%s", sn, use_rows[u].what);
    bench_figure(key, med(use[di][u], reps), use_rows[u].unit, use_rows[u].note);
  }
  python_figures(di, sn, reps, series[K_CLIENT + di].p50);
}

int main(int argc, char **argv) {
  bench_opts_t o;
  run_t x;
  int reps;

  bench_parse_args(argc, argv, "no-op dispatch round trip vs Unix-socket ping-pongs and ZeroMQ",
                   &o);
  bench_header("RPC latency: noop (1 task) round trip vs Unix-socket ping-pongs and a ZeroMQ "
               "peer, back to back and after idle");
  memset(&x, 0, sizeof x);
  reps = o.reps > MAX_REPS ? MAX_REPS : o.reps;
  x.n = o.smoke ? 200 : 5000;
  x.warm = o.smoke ? 20 : 500;
  x.nidle = o.smoke ? 4 : 100;
  x.lat = calloc(x.n + x.warm, sizeof *x.lat);
  if (!x.lat) fail("calloc");
  for (size_t i = 0; i < IDLE_KINDS; i++)
    if (!(x.lat2[i] = calloc(x.nidle, sizeof *x.lat))) fail("calloc");
  run_start(&x);
  printf("request %zu bytes, response %zu bytes; back to back %zu round trips per loop after "
         "%zu warm-up; after idle %zu per loop; %d repetitions\n",
         x.qlen, x.rlen, x.n, x.warm, x.nidle, reps);

  for (int r = 0; r < reps; r++) {
    /* Back to back: each loop alone, in an order that turns every rep. */
    for (int step = 0; step < B2B_LOOPS; step++) b2b_loop(&x, (step + r) % B2B_LOOPS, r);
    idle_loops(&x, r);
    for (int di = 0; di < NDAEMONS; di++)
      python_pairs(di, r, x.t[di].d.socket, x.t[di].c, client_once, x.nidle);
    print_rep(r);
  }
  idle_cpu_figures(&x, o.smoke);
  baseline_figures(&x, reps);
  for (int di = 0; di < NDAEMONS; di++) daemon_figures(di, reps);

  run_stop(&x);
  for (size_t i = 0; i < IDLE_KINDS; i++) free(x.lat2[i]);
  free(x.lat);
  return 0;
}
