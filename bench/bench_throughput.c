/* SPDX-License-Identifier: Apache-2.0 */
/* bench_throughput — pipelined no-op dispatches per second with 1, 4 and 16
 * clients, each a process of its own with its own connection keeping a
 * window of requests in flight.
 *
 * Three kinds of client, measured in the same run:
 *   echo    baseline: the same request/response sizes against an echo
 *           server (one process, one thread, epoll, answers every whole
 *           request of a read in one write): what the socket and the
 *           scheduler allow for this traffic on this machine
 *   raw     ptod, with libptoclient's request bytes written as they are and
 *           the responses only framed (msgpack unpacker): the daemon's rate
 *   client  ptod through libptoclient: pto_client_send / pto_client_wait_any,
 *           every response decoded (clients share the 2 CPUs with the
 *           daemon, so the client library's cost shows here)
 * Each figure is the median over the repetitions of (responses / seconds). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>
#include <pto/client.h>

#include "bench.h"

#define MAX_MSG 4096
#define WINDOW 32
#define MAX_CLIENTS 16

typedef enum { MODE_ECHO, MODE_RAW, MODE_CLIENT } client_mode_t;
static const char *mode_names[] = {"echo", "raw", "client"};

static void fail(const char *what) {
  fprintf(stderr, "bench_throughput: %s: %s\n", what, strerror(errno));
  exit(1);
}

/* ---- the request bytes ---------------------------------------------------- */

static char g_req[MAX_MSG];
static size_t g_qlen, g_rlen;

/* ---- the echo server -------------------------------------------------------- */

typedef struct echo_conn {
  int fd;
  size_t have; /* bytes of a partial request */
} echo_conn_t;

static void echo_serve(int lfd) {
  int ep = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  static char in[256 * 1024], out[256 * 1024];
  memset(out, 0xa5, sizeof out);
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev) < 0) fail("epoll");
  for (;;) {
    struct epoll_event evs[64];
    int n = epoll_wait(ep, evs, 64, -1);
    for (int i = 0; i < n; i++) {
      echo_conn_t *c = evs[i].data.ptr;
      ssize_t got;
      size_t whole;
      if (!c) {
        int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0) continue;
        c = calloc(1, sizeof *c);
        if (!c) fail("calloc");
        c->fd = fd;
        ev.events = EPOLLIN;
        ev.data.ptr = c;
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
        continue;
      }
      got = read(c->fd, in, sizeof in);
      if (got <= 0) {
        close(c->fd);
        free(c);
        continue;
      }
      c->have += (size_t)got;
      whole = c->have / g_qlen;
      c->have %= g_qlen;
      while (whole) {
        size_t batch = whole * g_rlen <= sizeof out ? whole : sizeof out / g_rlen;
        bench_write_all(c->fd, out, batch * g_rlen);
        whole -= batch;
      }
    }
  }
}

static pid_t start_echo(char *path, size_t cap) {
  char dir[] = "/tmp/ptod-bench-echo-XXXXXX";
  pid_t pid;
  int lfd;
  if (!mkdtemp(dir)) fail("mkdtemp");
  snprintf(path, cap, "%s/echo.sock", dir);
  lfd = bench_listen_unix(path, 128);
  pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) echo_serve(lfd);
  close(lfd);
  return pid;
}

/* ---- clients ------------------------------------------------------------------ */

typedef struct client_report {
  uint64_t done;
  uint64_t elapsed_ns;
} client_report_t;

/* Raw: write the request bytes, count whole responses (fixed size for echo,
 * framed by msgpack for ptod), keep WINDOW in flight until the deadline. */
static client_report_t run_raw_client(int fd, bool echo, uint64_t duration_ns) {
  static char batch[WINDOW * MAX_MSG];
  client_report_t rep = {0, 0};
  msgpack_unpacker u;
  msgpack_unpacked out;
  uint64_t t0 = bench_now_ns(), inflight = 0, partial = 0;
  bool sending = true;

  msgpack_unpacker_init(&u, 64 * 1024);
  msgpack_unpacked_init(&out);
  for (int i = 0; i < WINDOW; i++) memcpy(batch + (size_t)i * g_qlen, g_req, g_qlen);
  bench_write_all(fd, batch, WINDOW * g_qlen);
  inflight = WINDOW;
  while (inflight) {
    uint64_t got = 0;
    ssize_t n;
    if (!msgpack_unpacker_reserve_buffer(&u, 64 * 1024)) fail("unpacker");
    n = read(fd, msgpack_unpacker_buffer(&u), msgpack_unpacker_buffer_capacity(&u));
    if (n <= 0) fail("read");
    if (echo) {
      partial += (uint64_t)n;
      got = partial / g_rlen;
      partial %= g_rlen;
    } else {
      msgpack_unpacker_buffer_consumed(&u, (size_t)n);
      while (msgpack_unpacker_next(&u, &out) == MSGPACK_UNPACK_SUCCESS) got++;
    }
    inflight -= got;
    rep.done += got;
    if (sending && bench_now_ns() - t0 >= duration_ns) sending = false;
    if (sending && got) {
      bench_write_all(fd, batch, got * g_qlen);
      inflight += got;
    }
  }
  rep.elapsed_ns = bench_now_ns() - t0;
  msgpack_unpacked_destroy(&out);
  msgpack_unpacker_destroy(&u);
  return rep;
}

static client_report_t run_lib_client(pto_client_t *c, uint64_t duration_ns) {
  pto_dispatch_arg_t args[] = {pto_arg_int(1)};
  pto_request_t req;
  client_report_t rep = {0, 0};
  uint64_t t0 = bench_now_ns();
  size_t inflight = 0;
  bool sending = true;
  pto_error_t err;
  uint32_t msgid;

  memset(&req, 0, sizeof req);
  req.method = PTO_METHOD_DISPATCH;
  req.u.dispatch.program = "noop";
  req.u.dispatch.args = args;
  req.u.dispatch.nargs = 1;
  for (int i = 0; i < WINDOW; i++) {
    if (pto_client_send(c, &req, 10000, &msgid, &err) < 0) {
      fprintf(stderr, "bench_throughput: send: %s\n", err.message);
      exit(1);
    }
    inflight++;
  }
  while (inflight) {
    void *res;
    if (pto_client_wait_any(c, 10000, &msgid, &res, &err) < 0) {
      fprintf(stderr, "bench_throughput: dispatch: %s: %s\n", pto_client_error_name(err.code),
              err.message);
      exit(1);
    }
    pto_result_free(res);
    inflight--;
    rep.done++;
    if (sending && bench_now_ns() - t0 >= duration_ns) sending = false;
    if (sending) {
      if (pto_client_send(c, &req, 10000, &msgid, &err) < 0) {
        fprintf(stderr, "bench_throughput: send: %s\n", err.message);
        exit(1);
      }
      inflight++;
    }
  }
  rep.elapsed_ns = bench_now_ns() - t0;
  return rep;
}

/* Run `n` client processes against `path`; returns responses per second. */
static double run_clients(client_mode_t mode, const char *path, int n, uint64_t duration_ns,
                          double *ret_cpu_per_req) {
  int go[2], res[2];
  pid_t pids[MAX_CLIENTS];
  uint64_t total = 0, longest = 0, client_cpu_ns = 0;
  char start[MAX_CLIENTS];

  if (pipe(go) < 0 || pipe(res) < 0) fail("pipe");
  for (int i = 0; i < n; i++) {
    pids[i] = fork();
    if (pids[i] < 0) fail("fork");
    if (pids[i] == 0) {
      client_report_t rep;
      pto_client_t *c = NULL;
      pto_error_t err;
      char b;
      int fd = -1;
      close(go[1]);
      close(res[0]);
      if (mode == MODE_CLIENT) {
        if (pto_client_connect(path, 5000, &c, &err) < 0) {
          fprintf(stderr, "bench_throughput: connect: %s\n", err.message);
          _exit(1);
        }
      } else {
        fd = bench_connect_unix(path);
      }
      if (read(go[0], &b, 1) != 1) _exit(1);
      rep = mode == MODE_CLIENT ? run_lib_client(c, duration_ns)
                                : run_raw_client(fd, mode == MODE_ECHO, duration_ns);
      bench_write_all(res[1], &rep, sizeof rep);
      if (c) pto_client_close(c);
      _exit(0);
    }
  }
  close(go[0]);
  close(res[1]);
  bench_sleep_us(50000); /* every client connected */
  memset(start, 'g', sizeof start);
  bench_write_all(go[1], start, (size_t)n);
  for (int i = 0; i < n; i++) {
    client_report_t rep;
    size_t got = 0;
    while (got < sizeof rep) {
      ssize_t r = read(res[0], (char *)&rep + got, sizeof rep - got);
      if (r <= 0) fail("a client died");
      got += (size_t)r;
    }
    total += rep.done;
    if (rep.elapsed_ns > longest) longest = rep.elapsed_ns;
  }
  for (int i = 0; i < n; i++) {
    struct rusage ru;
    int status;
    if (wait4(pids[i], &status, 0, &ru) == pids[i])
      client_cpu_ns += (uint64_t)ru.ru_utime.tv_sec * 1000000000u +
                       (uint64_t)ru.ru_utime.tv_usec * 1000u +
                       (uint64_t)ru.ru_stime.tv_sec * 1000000000u +
                       (uint64_t)ru.ru_stime.tv_usec * 1000u;
  }
  close(go[1]);
  close(res[0]);
  if (ret_cpu_per_req) *ret_cpu_per_req = (double)client_cpu_ns / 1000.0 / (double)total;
  return (double)total / ((double)longest / 1e9);
}

int main(int argc, char **argv) {
  static const int counts[] = {1, 4, 16};
  bench_opts_t o;
  bench_daemon_t d;
  char echo_path[128], key[64], note[256];
  double *rates[3][3];
  uint64_t duration;
  pid_t echo;

  bench_parse_args(argc, argv, "pipelined no-op dispatches per second, 1/4/16 clients", &o);
  bench_header("Throughput: pipelined noop(1) dispatches/s, window 32 per client");
  duration = o.smoke ? 100000000u : 1000000000u;
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < 3; k++) {
      rates[m][k] = calloc((size_t)o.reps, sizeof(double));
      if (!rates[m][k]) fail("calloc");
    }

  g_qlen = bench_capture_noop(g_req, sizeof g_req);
  bench_daemon_start(&d, "[daemon]\nqueue_depth = 4096\n\n"
                         "[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n");
  {
    /* The response size, for the echo server. */
    int fd = bench_connect_unix(d.socket);
    msgpack_unpacker u;
    msgpack_unpacked out;
    size_t size = 0;
    msgpack_unpacker_init(&u, MAX_MSG);
    msgpack_unpacked_init(&out);
    bench_write_all(fd, g_req, g_qlen);
    while (msgpack_unpacker_next_with_size(&u, &out, &size) != MSGPACK_UNPACK_SUCCESS) {
      ssize_t n;
      msgpack_unpacker_reserve_buffer(&u, MAX_MSG);
      n = read(fd, msgpack_unpacker_buffer(&u), msgpack_unpacker_buffer_capacity(&u));
      if (n <= 0) fail("read from ptod");
      msgpack_unpacker_buffer_consumed(&u, (size_t)n);
    }
    if (out.data.type != MSGPACK_OBJECT_ARRAY || out.data.via.array.size != 4 ||
        out.data.via.array.ptr[2].type != MSGPACK_OBJECT_NIL) {
      fprintf(stderr, "bench_throughput: the noop dispatch failed; see %s\n", d.log);
      return 1;
    }
    g_rlen = size;
    msgpack_unpacked_destroy(&out);
    msgpack_unpacker_destroy(&u);
    close(fd);
  }
  echo = start_echo(echo_path, sizeof echo_path);
  printf("request %zu bytes, response %zu bytes; %.1f s per measurement, %d repetitions\n",
         g_qlen, g_rlen, (double)duration / 1e9, o.reps);
  printf("%-4s %-8s %12s %12s %12s %s\n", "rep", "clients", "echo/s", "raw/s", "client/s",
         "daemon CPU (client run)");

  if (o.only) {
    /* --only MODE:CLIENTS[:SECONDS], e.g. raw:4:10 — one load, for a profiler. */
    char mode[16] = "";
    int clients = 0, secs = 5;
    if (sscanf(o.only, "%15[a-z]:%d:%d", mode, &clients, &secs) < 2 || clients < 1 ||
        clients > MAX_CLIENTS || secs < 1) {
      fprintf(stderr, "bench_throughput: --only takes MODE:CLIENTS[:SECONDS], e.g. raw:4:10\n");
      return 2;
    }
    for (int m = 0; m < 3; m++)
      if (strcmp(mode, mode_names[m]) == 0) {
        double cpu, rate;
        uint64_t c0 = bench_cpu_ns(d.pid), w0 = bench_now_ns();
        rate = run_clients((client_mode_t)m, m == MODE_ECHO ? echo_path : d.socket, clients,
                           (uint64_t)secs * 1000000000u, &cpu);
        printf("%s x %d: %.0f req/s, client CPU %.2f us/req, daemon %.2f us/req (%.2f cores)\n",
               mode, clients, rate, cpu,
               (double)(bench_cpu_ns(d.pid) - c0) / 1000.0 / (rate * (double)secs),
               (double)(bench_cpu_ns(d.pid) - c0) / (double)(bench_now_ns() - w0));
      }
    o.reps = 0;
  }

  for (int r = 0; r < o.reps; r++)
    for (int k = 0; k < 3; k++) {
      double cores = 0, cpu_req[3] = {0, 0, 0};
      for (int i = 0; i < 3; i++) {
        /* Rotate the order per repetition. */
        int m = (i + r) % 3;
        uint64_t cpu0 = bench_cpu_ns(d.pid), w0 = bench_now_ns();
        rates[m][k][r] = run_clients((client_mode_t)m, m == MODE_ECHO ? echo_path : d.socket,
                                     counts[k], duration, &cpu_req[m]);
        if (m == MODE_CLIENT)
          cores = (double)(bench_cpu_ns(d.pid) - cpu0) / (double)(bench_now_ns() - w0);
      }
      printf("%-4d %-8d %12.0f %12.0f %12.0f %6.2f cores   client CPU/req: echo %.2f raw %.2f "
             "client %.2f us\n",
             r, counts[k], rates[MODE_ECHO][k][r], rates[MODE_RAW][k][r],
             rates[MODE_CLIENT][k][r], cores, cpu_req[MODE_ECHO], cpu_req[MODE_RAW],
             cpu_req[MODE_CLIENT]);
      fflush(stdout);
    }

  for (int k = 0; k < 3 && o.reps > 0; k++) {
    double ratio[1000];
    for (int m = 0; m < 3; m++) {
      snprintf(key, sizeof key, "throughput.%s.c%d", mode_names[m], counts[k]);
      snprintf(note, sizeof note, "%s, %d client processes x window %d%s", mode_names[m],
               counts[k], WINDOW,
               m == MODE_CLIENT && counts[k] == 4 ? "; target >= 100000/s" : "");
      bench_figure(key, bench_median(rates[m][k], (size_t)o.reps), "req/s", note);
    }
    for (int r = 0; r < o.reps; r++) ratio[r] = rates[MODE_CLIENT][k][r] / rates[MODE_ECHO][k][r];
    snprintf(key, sizeof key, "throughput.ratio.c%d", counts[k]);
    bench_figure(key, bench_median(ratio, (size_t)o.reps), "x",
                 "client / echo server, same run (1.0 = as fast as a bare echo server)");
    for (int r = 0; r < o.reps; r++) ratio[r] = rates[MODE_RAW][k][r] / rates[MODE_ECHO][k][r];
    snprintf(key, sizeof key, "throughput.raw_ratio.c%d", counts[k]);
    bench_figure(key, bench_median(ratio, (size_t)o.reps), "x", "raw / echo server, same run");
    for (int r = 0; r < o.reps; r++) ratio[r] = rates[MODE_CLIENT][k][r] / rates[MODE_RAW][k][r];
    snprintf(key, sizeof key, "throughput.client_vs_raw.c%d", counts[k]);
    bench_figure(key, bench_median(ratio, (size_t)o.reps), "x",
                 "libptoclient / raw msgpack client, pipelined, same rep");
  }

  kill(echo, SIGTERM);
  waitpid(echo, NULL, 0);
  unlink(echo_path);
  {
    char *slash = strrchr(echo_path, '/');
    if (slash) {
      *slash = '\0';
      rmdir(echo_path);
    }
  }
  bench_daemon_stop(&d);
  for (int m = 0; m < 3; m++)
    for (int k = 0; k < 3; k++) free(rates[m][k]);
  return 0;
}
