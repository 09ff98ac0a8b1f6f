/* bench_latency — the round trip of a no-op dispatch (noop, 1 task) through
 * ptod, against a raw Unix-socket ping-pong of the same message sizes
 * between two processes, measured in the same run.
 *
 * Three loops, each one request at a time, interleaved per repetition:
 *   pingpong  two processes over a Unix stream socket: blocking write of
 *             the request's bytes, blocking read of the response's bytes
 *   raw       the same request bytes sent to ptod on a plain socket, the
 *             response read with a msgpack unpacker (the daemon's own cost)
 *   client    pto_client_dispatch() of libptoclient (what a user sees)
 * The request bytes are libptoclient's own, captured on a socket of ours;
 * the response size is what ptod answers them with.
 *
 * Also: the daemon's CPU time per dispatch while the client loop runs, and
 * its CPU use while idle after it (bounded spins must end: ~0). */
#include <errno.h>
#include <poll.h>
#include <signal.h>
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

#define MAX_MSG 4096

static void fail(const char *what) {
  fprintf(stderr, "bench_latency: %s: %s\n", what, strerror(errno));
  exit(1);
}

static void write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    p += n;
    len -= (size_t)n;
  }
}

static bool read_all(int fd, void *buf, size_t len) {
  char *p = buf;
  while (len) {
    ssize_t n = read(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    p += n;
    len -= (size_t)n;
  }
  return true;
}

/* The bytes libptoclient sends for one noop dispatch of 1 task. */
static size_t capture_request(char *buf, size_t cap) {
  char dir[] = "/tmp/ptod-bench-cap-XXXXXX", path[128];
  struct sockaddr_un addr;
  pto_dispatch_arg_t args[] = {pto_arg_int(1)};
  pto_request_t req;
  pto_client_t *c;
  pto_error_t err;
  uint32_t msgid;
  size_t len = 0;
  int lfd, fd;

  if (!mkdtemp(dir)) fail("mkdtemp");
  snprintf(path, sizeof path, "%s/s", dir);
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 1) < 0)
    fail("listen");
  if (pto_client_connect(path, 1000, &c, &err) < 0) {
    fprintf(stderr, "bench_latency: connect: %s\n", err.message);
    exit(1);
  }
  memset(&req, 0, sizeof req);
  req.method = PTO_METHOD_DISPATCH;
  req.u.dispatch.program = "noop";
  req.u.dispatch.args = args;
  req.u.dispatch.nargs = 1;
  if (pto_client_send(c, &req, 1000, &msgid, &err) < 0) {
    fprintf(stderr, "bench_latency: send: %s\n", err.message);
    exit(1);
  }
  fd = accept(lfd, NULL, NULL);
  if (fd < 0) fail("accept");
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t n;
    if (poll(&p, 1, 200) <= 0) break;
    n = read(fd, buf + len, cap - len);
    if (n <= 0) break;
    len += (size_t)n;
  }
  pto_client_close(c);
  close(fd);
  close(lfd);
  unlink(path);
  rmdir(dir);
  return len;
}

/* Read one whole msgpack object from fd; returns its size. */
static size_t read_response(int fd, msgpack_unpacker *u, msgpack_unpacked *out) {
  size_t total = 0;
  for (;;) {
    msgpack_unpack_return r = msgpack_unpacker_next_with_size(u, out, &total);
    ssize_t n;
    if (r == MSGPACK_UNPACK_SUCCESS) return total;
    if (r != MSGPACK_UNPACK_CONTINUE) {
      fprintf(stderr, "bench_latency: the daemon's answer is not msgpack\n");
      exit(1);
    }
    if (!msgpack_unpacker_reserve_buffer(u, MAX_MSG)) fail("unpacker");
    n = read(fd, msgpack_unpacker_buffer(u), msgpack_unpacker_buffer_capacity(u));
    if (n <= 0) fail("read from ptod");
    msgpack_unpacker_buffer_consumed(u, (size_t)n);
  }
}

static int connect_raw(const char *path) {
  struct sockaddr_un addr;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr.sun_path) {
    fprintf(stderr, "bench_latency: socket path '%s' is too long\n", path);
    exit(1);
  }
  memcpy(addr.sun_path, path, strlen(path) + 1);
  if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) fail("connect to ptod");
  return fd;
}

/* The ping-pong peer: read req bytes, answer resp bytes, until EOF. */
static pid_t start_echo(int *ret_fd, size_t req, size_t resp) {
  int sv[2];
  pid_t pid;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) fail("socketpair");
  pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    char in[MAX_MSG], out[MAX_MSG];
    close(sv[0]);
    memset(out, 0xa5, sizeof out);
    while (read_all(sv[1], in, req)) write_all(sv[1], out, resp);
    _exit(0);
  }
  close(sv[1]);
  *ret_fd = sv[0];
  return pid;
}

typedef struct loop_result {
  double p50, p99;
} loop_result_t;

static loop_result_t summarize(double *lat, size_t n) {
  loop_result_t r;
  r.p50 = bench_percentile(lat, n, 50);
  r.p99 = bench_percentile(lat, n, 99);
  return r;
}

static loop_result_t run_pingpong(int fd, const char *req, size_t qlen, size_t rlen, double *lat,
                                  size_t n, size_t warm) {
  char in[MAX_MSG];
  for (size_t i = 0; i < warm + n; i++) {
    uint64_t t0 = bench_now_ns();
    write_all(fd, req, qlen);
    if (!read_all(fd, in, rlen)) fail("read from the ping-pong peer");
    if (i >= warm) lat[i - warm] = (double)(bench_now_ns() - t0) / 1000.0;
  }
  return summarize(lat, n);
}

static loop_result_t run_raw(int fd, const char *req, size_t qlen, double *lat, size_t n,
                             size_t warm) {
  msgpack_unpacker u;
  msgpack_unpacked out;
  msgpack_unpacker_init(&u, MAX_MSG);
  msgpack_unpacked_init(&out);
  for (size_t i = 0; i < warm + n; i++) {
    uint64_t t0 = bench_now_ns();
    write_all(fd, req, qlen);
    read_response(fd, &u, &out);
    if (i >= warm) lat[i - warm] = (double)(bench_now_ns() - t0) / 1000.0;
  }
  msgpack_unpacked_destroy(&out);
  msgpack_unpacker_destroy(&u);
  return summarize(lat, n);
}

static loop_result_t run_client(pto_client_t *c, double *lat, size_t n, size_t warm) {
  pto_dispatch_arg_t args[] = {pto_arg_int(1)};
  pto_dispatch_req_t req = {.program = "noop", .args = args, .nargs = 1};
  for (size_t i = 0; i < warm + n; i++) {
    pto_dispatch_result_t *res;
    pto_error_t err;
    uint64_t t0 = bench_now_ns();
    if (pto_client_dispatch(c, &req, 10000, &res, &err) < 0) {
      fprintf(stderr, "bench_latency: dispatch: %s\n", err.message);
      exit(1);
    }
    pto_result_free(res);
    if (i >= warm) lat[i - warm] = (double)(bench_now_ns() - t0) / 1000.0;
  }
  return summarize(lat, n);
}

int main(int argc, char **argv) {
  bench_opts_t o;
  bench_daemon_t d;
  pto_client_t *c;
  pto_error_t err;
  char req[MAX_MSG], note[256];
  size_t qlen, rlen, n, warm;
  double *lat, *pp50, *pp99, *raw50, *raw99, *cl50, *cl99, *cpu_per, *ratio50, *ratio99,
      *raw_ratio50, *cores;
  int echo_fd, raw_fd;
  pid_t echo;

  bench_parse_args(argc, argv, "no-op dispatch round trip vs a raw Unix-socket ping-pong", &o);
  bench_header("RPC latency: noop (1 task) round trip vs Unix-socket ping-pong");
  n = o.smoke ? 200 : 20000;
  warm = o.smoke ? 20 : 1000;
  lat = calloc(n, sizeof *lat);
  pp50 = calloc((size_t)o.reps * 12, sizeof *pp50);
  if (!lat || !pp50) fail("calloc");
  pp99 = pp50 + o.reps;
  raw50 = pp99 + o.reps;
  raw99 = raw50 + o.reps;
  cl50 = raw99 + o.reps;
  cl99 = cl50 + o.reps;
  cpu_per = cl99 + o.reps;
  ratio50 = cpu_per + o.reps;
  ratio99 = ratio50 + o.reps;
  raw_ratio50 = ratio99 + o.reps;
  cores = raw_ratio50 + o.reps;

  qlen = capture_request(req, sizeof req);
  bench_daemon_start(&d, getenv("BENCH_RING") ? getenv("BENCH_RING") : "[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n");
  raw_fd = connect_raw(d.socket);
  {
    msgpack_unpacker u;
    msgpack_unpacked out;
    msgpack_unpacker_init(&u, MAX_MSG);
    msgpack_unpacked_init(&out);
    write_all(raw_fd, req, qlen);
    rlen = read_response(raw_fd, &u, &out);
    /* [1, msgid, nil, result]: the dispatch must have succeeded. */
    if (out.data.type != MSGPACK_OBJECT_ARRAY || out.data.via.array.size != 4 ||
        out.data.via.array.ptr[2].type != MSGPACK_OBJECT_NIL) {
      fprintf(stderr, "bench_latency: the noop dispatch failed; see %s\n", d.log);
      exit(1);
    }
    msgpack_unpacked_destroy(&out);
    msgpack_unpacker_destroy(&u);
  }
  if (pto_client_connect(d.socket, 1000, &c, &err) < 0) {
    fprintf(stderr, "bench_latency: connect: %s\n", err.message);
    return 1;
  }
  echo = start_echo(&echo_fd, qlen, rlen);
  printf("request %zu bytes, response %zu bytes; %zu round trips per loop after %zu warm-up, "
         "%d repetitions\n",
         qlen, rlen, n, warm, o.reps);
  printf("%-4s %10s %10s %10s %10s %10s %10s %12s\n", "rep", "pp p50", "pp p99", "raw p50",
         "raw p99", "cli p50", "cli p99", "daemon cpu");

  for (int r = 0; r < o.reps; r++) {
    loop_result_t pp = {0, 0}, raw, cl;
    uint64_t cpu0, cpu1, w0, w1;
    /* Alternate the order: whatever drifts during a repetition hits each. */
    if (r % 2 == 0) pp = run_pingpong(echo_fd, req, qlen, rlen, lat, n, warm);
    raw = run_raw(raw_fd, req, qlen, lat, n, warm);
    cpu0 = bench_cpu_ns(d.pid);
    w0 = bench_now_ns();
    cl = run_client(c, lat, n, warm);
    w1 = bench_now_ns();
    cpu1 = bench_cpu_ns(d.pid);
    if (r % 2 == 1) pp = run_pingpong(echo_fd, req, qlen, rlen, lat, n, warm);
    pp50[r] = pp.p50;
    pp99[r] = pp.p99;
    raw50[r] = raw.p50;
    raw99[r] = raw.p99;
    cl50[r] = cl.p50;
    cl99[r] = cl.p99;
    cpu_per[r] = (double)(cpu1 - cpu0) / 1000.0 / (double)(n + warm);
    cores[r] = (double)(cpu1 - cpu0) / (double)(w1 - w0);
    ratio50[r] = cl.p50 / pp.p50;
    ratio99[r] = cl.p99 / pp.p99;
    raw_ratio50[r] = raw.p50 / pp.p50;
    printf("%-4d %8.1fus %8.1fus %8.1fus %8.1fus %8.1fus %8.1fus %9.1fus/op %5.2f cores\n", r,
           pp.p50, pp.p99, raw.p50, raw.p99, cl.p50, cl.p99, cpu_per[r], cores[r]);
    fflush(stdout);
  }

  /* Idle: any spin must have ended. */
  {
    uint64_t cpu0, cpu1, t0, t1;
    bench_sleep_us(200000);
    cpu0 = bench_cpu_ns(d.pid);
    t0 = bench_now_ns();
    bench_sleep_us(o.smoke ? 200000 : 2000000);
    cpu1 = bench_cpu_ns(d.pid);
    t1 = bench_now_ns();
    bench_figure("latency.idle_cpu", 100.0 * (double)(cpu1 - cpu0) / (double)(t1 - t0), "%",
                 "daemon CPU use while idle, from 0.2 s after the last dispatch; target ~0");
  }

  snprintf(note, sizeof note, "baseline: Unix-socket ping-pong, two processes, %zu B -> %zu B",
           qlen, rlen);
  bench_figure("latency.pingpong.p50", bench_median(pp50, (size_t)o.reps), "us", note);
  bench_figure("latency.pingpong.p99", bench_median(pp99, (size_t)o.reps), "us", note);
  bench_figure("latency.dispatch.p50", bench_median(cl50, (size_t)o.reps), "us",
               "noop(1) through libptoclient");
  bench_figure("latency.dispatch.p99", bench_median(cl99, (size_t)o.reps), "us",
               "noop(1) through libptoclient");
  bench_figure("latency.ratio.p50", bench_median(ratio50, (size_t)o.reps), "x",
               "dispatch p50 / ping-pong p50, same run; target <= 2.0");
  bench_figure("latency.ratio.p99", bench_median(ratio99, (size_t)o.reps), "x",
               "dispatch p99 / ping-pong p99, same run");
  bench_figure("latency.raw.p50", bench_median(raw50, (size_t)o.reps), "us",
               "noop(1), request bytes on a plain socket (no client library)");
  bench_figure("latency.raw.p99", bench_median(raw99, (size_t)o.reps), "us",
               "noop(1), request bytes on a plain socket (no client library)");
  bench_figure("latency.raw_ratio.p50", bench_median(raw_ratio50, (size_t)o.reps), "x",
               "raw dispatch p50 / ping-pong p50, same run");
  bench_figure("latency.daemon_cpu_per_dispatch", bench_median(cpu_per, (size_t)o.reps), "us",
               "daemon CPU time (all threads) per dispatch, spins included");
  bench_figure("latency.daemon_cores", bench_median(cores, (size_t)o.reps), "cores",
               "daemon CPU time / wall time during the dispatch loop (2 = both vCPUs)");

  pto_client_close(c);
  close(raw_fd);
  close(echo_fd);
  waitpid(echo, NULL, 0);
  bench_daemon_stop(&d);
  free(lat);
  free(pp50);
  return 0;
}
