/* bench_datapath — inline data through a dispatch, 4 KiB to 64 MiB.
 *
 * One dispatch of the bench program `touch` (bench/programs/touch.c: one
 * task that increments the first byte) with one argument
 * {"data": S bytes, "dir": "inout"}: the bytes go to the daemon in the
 * request, are copied into device memory, and come back in the response.
 * The figure is S / round-trip time (the payload's rate; the wire carries
 * it twice), median over repetitions, against memcpy of S bytes between
 * two buffers in the same run, two ways:
 *   client  through libptoclient (what a user sees)
 *   raw     libptoclient's request bytes written from one buffer and the
 *           response read into another, both reused (so never faulted in
 *           again) and framed with the daemon's own reader: the daemon's
 *           part of the path
 * and the minor page faults per round trip on each side: a fresh page
 * costs 10-20 us on these virtual machines, so fresh buffers of many MiB
 * cost more than the copies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pto/client.h>

#include "bench.h"
#include "reader.h"

#define MAX_SIZES 8

static void fail(const char *what) {
  fprintf(stderr, "bench_datapath: %s\n", what);
  exit(1);
}

static long self_minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}

/* Minor page faults of process pid so far (field 10 of /proc/pid/stat). */
static long proc_minflt(pid_t pid) {
  char path[64], buf[1024], *p;
  long v = -1;
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  f = fopen(path, "r");
  if (!f) return -1;
  if (fgets(buf, sizeof buf, f) && (p = strrchr(buf, ')'))) {
    /* After ") ": state ppid pgrp session tty_nr tpgid flags minflt */
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %ld", &v) != 1) v = -1;
  }
  fclose(f);
  return v;
}

static double memcpy_us(char *dst, const char *src, size_t size, int iters) {
  uint64_t t0 = bench_now_ns();
  for (int i = 0; i < iters; i++) {
    memcpy(dst, src, size);
    __asm__ __volatile__("" : : "r"(dst) : "memory"); /* keep every copy */
  }
  return (double)(bench_now_ns() - t0) / 1000.0 / iters;
}

static int connect_path(const char *path) {
  struct sockaddr_un addr;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  if (fd < 0 || strlen(path) >= sizeof addr.sun_path) fail("socket");
  memcpy(addr.sun_path, path, strlen(path) + 1);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0) fail("connect");
  return fd;
}

static void write_all(int fd, const char *p, size_t len) {
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail("write");
    p += n;
    len -= (size_t)n;
  }
}

/* libptoclient's request bytes for touch(inout `size` bytes), captured on a
 * socket of ours: malloc'ed, *ret_len bytes. */
static char *capture_request(const unsigned char *data, size_t size, size_t *ret_len) {
  char dir[] = "/tmp/ptod-bench-cap-XXXXXX", path[64];
  struct sockaddr_un addr;
  pto_dispatch_arg_t args[1] = {pto_arg_inout(data, size)};
  pto_request_t req;
  pto_client_t *c;
  pto_error_t err;
  uint32_t msgid;
  size_t cap = size + (1u << 20), len = 0;
  char *buf = malloc(cap);
  int lfd, fd;

  if (!buf || !mkdtemp(dir)) fail("capture");
  snprintf(path, sizeof path, "%s/s", dir);
  memset(&addr, 0, sizeof addr);
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path, strlen(path) + 1);
  lfd = socket(AF_UNIX, SOCK_STREAM, 0);
  if (lfd < 0 || bind(lfd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(lfd, 1) < 0)
    fail("listen");
  if (pto_client_connect(path, 1000, &c, &err) < 0) fail(err.message);
  fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
  if (fd < 0) fail("accept");
  memset(&req, 0, sizeof req);
  req.method = PTO_METHOD_DISPATCH;
  req.u.dispatch.program = "touch";
  req.u.dispatch.args = args;
  req.u.dispatch.nargs = 1;
  /* Send and drain at once (the request may be larger than the socket
   * buffer): a child sends, waiting for room, while this reads. */
  {
    proto_reader_t r;
    size_t have = 0;
    pid_t pid = fork();
    if (pid < 0) fail("fork");
    if (pid == 0) {
      close(fd);
      _exit(pto_client_send(c, &req, 60000, &msgid, &err) < 0 ? 1 : 0);
    }
    proto_reader_init(&r, cap);
    for (;;) {
      struct pollfd p = {fd, POLLIN, 0};
      ssize_t n;
      int rc;
      if (poll(&p, 1, 60000) <= 0) fail("capture: nothing sent");
      n = read(fd, buf + have, cap - have);
      if (n <= 0) fail("capture: connection closed");
      have += (size_t)n;
      rc = proto_reader_feed(&r, buf, have, &len, NULL);
      if (rc < 0) fail("capture: not msgpack");
      if (rc == 1) break;
    }
    waitpid(pid, NULL, 0);
  }
  pto_client_close(c);
  close(fd);
  close(lfd);
  unlink(path);
  rmdir(dir);
  *ret_len = len;
  return buf;
}

/* One raw round trip: the request as is, the response into rx (cap bytes). */
static double raw_us(int fd, const char *req, size_t qlen, char *rx, size_t cap) {
  proto_reader_t r;
  size_t have = 0, len = 0;
  uint64_t t0 = bench_now_ns();
  proto_reader_init(&r, cap);
  write_all(fd, req, qlen);
  for (;;) {
    ssize_t n = read(fd, rx + have, cap - have);
    int rc;
    if (n <= 0) fail("read from ptod");
    have += (size_t)n;
    rc = proto_reader_feed(&r, rx, have, &len, NULL);
    if (rc < 0) fail("ptod's answer is not msgpack");
    if (rc == 1) break;
  }
  if (len != have) fail("more than one answer");
  return (double)(bench_now_ns() - t0) / 1000.0;
}

static double dispatch_us(pto_client_t *c, unsigned char *data, size_t size) {
  pto_dispatch_arg_t args[1];
  pto_dispatch_req_t req = {.program = "touch", .args = args, .nargs = 1};
  pto_dispatch_result_t *res;
  pto_error_t err;
  unsigned char before = data[0];
  uint64_t t0;
  double us;
  args[0] = pto_arg_inout(data, size);
  t0 = bench_now_ns();
  if (pto_client_dispatch(c, &req, 120000, &res, &err) < 0) {
    fprintf(stderr, "bench_datapath: dispatch of %zu bytes: %s\n", size, err.message);
    exit(1);
  }
  us = (double)(bench_now_ns() - t0) / 1000.0;
  if (res->noutputs != 1 || res->outputs[0].len != size ||
      res->outputs[0].ptr[0] != (unsigned char)(before + 1) ||
      memcmp(res->outputs[0].ptr + 1, data + 1, size - 1) != 0)
    fail("the data came back wrong");
  data[0] = res->outputs[0].ptr[0];
  pto_result_free(res);
  return us;
}

int main(int argc, char **argv) {
  static const size_t sizes[MAX_SIZES] = {4u << 10,  16u << 10, 64u << 10, 256u << 10,
                                          1u << 20,  4u << 20,  16u << 20, 64u << 20};
  bench_opts_t o;
  bench_daemon_t d;
  pto_client_t *c;
  pto_error_t err;
  unsigned char *data;
  char *src, *dst, key[64], note[256];
  int nsizes;

  bench_parse_args(argc, argv, "inline data round trip vs memcpy", &o);
  bench_header("Data path: inline inout argument round trip vs memcpy");
  nsizes = o.smoke ? 3 : MAX_SIZES;
  data = malloc(sizes[nsizes - 1]);
  src = malloc(sizes[nsizes - 1]);
  dst = malloc(sizes[nsizes - 1]);
  if (!data || !src || !dst) fail("out of memory");
  for (size_t i = 0; i < sizes[nsizes - 1]; i++) data[i] = (unsigned char)(i * 131u);
  memset(src, 1, sizes[nsizes - 1]);
  memset(dst, 2, sizes[nsizes - 1]);

  bench_daemon_start(&d, "[daemon]\nmax_message = 160M\n\n"
                         "[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n");
  if (pto_client_connect(d.socket, 5000, &c, &err) < 0) fail(err.message);
  printf("%9s %10s %7s %10s %7s %10s %7s %8s %8s | faults per round trip: %s\n", "bytes",
         "client", "GB/s", "raw", "GB/s", "memcpy", "GB/s", "cli/mc", "raw/mc",
         "ptod client, ptod raw, client");

  for (int si = 0; si < nsizes; si++) {
    size_t size = sizes[si];
    /* Enough iterations for about 0.2 s per repetition. */
    int iters = o.smoke ? 2 : (int)(size <= (64u << 10) ? 500 : size <= (1u << 20) ? 100 : 10);
    double *rt = calloc((size_t)o.reps, sizeof(double)), *mc = calloc((size_t)o.reps, sizeof(double));
    double *ratio = calloc((size_t)o.reps, sizeof(double)), *sample = calloc((size_t)iters, sizeof(double));
    double rt_med, mc_med, raw_med, dfaults = 0, cfaults = 0, rfaults = 0;
    double *raw = calloc((size_t)o.reps, sizeof(double)), *rratio = calloc((size_t)o.reps, sizeof(double));
    size_t qlen, rcap = 2 * size + (1u << 20);
    char *req = capture_request(data, size, &qlen), *rx = malloc(rcap);
    int fd = connect_path(d.socket);
    if (!raw || !rratio || !rx) fail("out of memory");
    memset(rx, 0, rcap); /* faulted in once, here */
    raw_us(fd, req, qlen, rx, rcap);
    if (!rt || !mc || !ratio || !sample) fail("out of memory");
    dispatch_us(c, data, size); /* warm-up: staging grows, buffers are touched */
    for (int r = 0; r < o.reps; r++) {
      long d0 = proc_minflt(d.pid), c0 = self_minflt();
      for (int i = 0; i < iters; i++) sample[i] = dispatch_us(c, data, size);
      dfaults += (double)(proc_minflt(d.pid) - d0) / iters / o.reps;
      cfaults += (double)(self_minflt() - c0) / iters / o.reps;
      rt[r] = bench_median(sample, (size_t)iters);
      d0 = proc_minflt(d.pid);
      for (int i = 0; i < iters; i++) sample[i] = raw_us(fd, req, qlen, rx, rcap);
      rfaults += (double)(proc_minflt(d.pid) - d0) / iters / o.reps;
      raw[r] = bench_median(sample, (size_t)iters);
      mc[r] = memcpy_us(dst, src, size, iters > 50 ? iters : 50);
      ratio[r] = mc[r] / rt[r];
      rratio[r] = mc[r] / raw[r];
    }
    rt_med = bench_median(rt, (size_t)o.reps);
    mc_med = bench_median(mc, (size_t)o.reps);
    raw_med = bench_median(raw, (size_t)o.reps);
    printf("%9zu %8.0fus %7.3f %8.0fus %7.3f %8.1fus %7.2f %8.4f %8.4f | %.0f, %.0f, %.0f\n",
           size, rt_med, (double)size / rt_med / 1e3, raw_med, (double)size / raw_med / 1e3,
           mc_med, (double)size / mc_med / 1e3, bench_median(ratio, (size_t)o.reps),
           bench_median(rratio, (size_t)o.reps), dfaults, rfaults, cfaults);
    snprintf(key, sizeof key, "datapath.%zuK.gbps", size >> 10);
    snprintf(note, sizeof note, "touch(inout %zu KiB): bytes / round trip (%.1f us)", size >> 10,
             rt_med);
    bench_figure(key, (double)size / rt_med / 1e3, "GB/s", note);
    snprintf(key, sizeof key, "datapath.%zuK.raw_gbps", size >> 10);
    snprintf(note, sizeof note, "the same, request and response buffers reused (%.1f us)",
             raw_med);
    bench_figure(key, (double)size / raw_med / 1e3, "GB/s", note);
    snprintf(key, sizeof key, "datapath.%zuK.raw_vs_memcpy", size >> 10);
    bench_figure(key, bench_median(rratio, (size_t)o.reps), "x",
                 "raw round-trip rate / memcpy rate, same run");
    snprintf(key, sizeof key, "datapath.%zuK.memcpy_gbps", size >> 10);
    bench_figure(key, (double)size / mc_med / 1e3, "GB/s", "memcpy of the same bytes, same run");
    snprintf(key, sizeof key, "datapath.%zuK.vs_memcpy", size >> 10);
    bench_figure(key, bench_median(ratio, (size_t)o.reps), "x",
                 "round-trip rate / memcpy rate, same run");
    close(fd);
    free(req);
    free(rx);
    free(raw);
    free(rratio);
    free(rt);
    free(mc);
    free(ratio);
    free(sample);
  }
  pto_client_close(c);
  bench_daemon_stop(&d);
  free(data);
  free(src);
  free(dst);
  return 0;
}
