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

static void stop_echo(int fd, pid_t pid) {
  close(fd);
  waitpid(pid, NULL, 0);
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

/* The raw-socket baseline's peer: send back whatever it reads, as it reads
 * it, until EOF (one buffer, reused). */
static pid_t start_echo(int *ret_fd, size_t size) {
  int sv[2];
  pid_t pid;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) fail("socketpair");
  pid = fork();
  if (pid < 0) fail("fork");
  if (pid == 0) {
    char *buf = malloc(size);
    close(sv[0]);
    if (!buf) _exit(1);
    memset(buf, 0, size);
    for (;;) {
      ssize_t n = read(sv[1], buf, size);
      if (n <= 0) _exit(0);
      write_all(sv[1], buf, (size_t)n);
    }
  }
  close(sv[1]);
  *ret_fd = sv[0];
  return pid;
}

/* One raw-socket round trip of `size` bytes each way, in us. */
static double socket_us(int fd, const char *tx, char *rx, size_t size) {
  uint64_t t0 = bench_now_ns();
  size_t have = 0;
  /* Write in pieces and read between them: the peer echoes while we send,
   * and neither side's socket buffer has to hold the whole message. */
  for (size_t off = 0; off < size || have < size;) {
    if (off < size) {
      size_t chunk = size - off < (256u << 10) ? size - off : (256u << 10);
      write_all(fd, tx + off, chunk);
      off += chunk;
    }
    while (have < off) {
      ssize_t n = read(fd, rx + have, size - have);
      if (n <= 0) fail("read from the echo peer");
      have += (size_t)n;
    }
  }
  return (double)(bench_now_ns() - t0) / 1000.0;
}

/* The Python client (client/python, Debian's python3 with python3-msgpack):
 * the median round trip of `iters` dispatches of touch(inout size), in us,
 * or -1 when it cannot run. */
static double python_us(const char *socket, size_t size, int iters) {
  char cmd[2048];
  double us = -1;
  FILE *f;
  snprintf(cmd, sizeof cmd,
           "PYTHONPATH=%s /usr/bin/python3 -c '\n"
           "import statistics, sys, time\n"
           "from ptoclient import Client, InOut\n"
           "data = bytearray(%zu)\n"
           "with Client(socket_path=\"%s\", timeout=120) as c:\n"
           "    c.dispatch(\"touch\", [InOut(data)])\n"
           "    t = []\n"
           "    for _ in range(%d):\n"
           "        t0 = time.perf_counter()\n"
           "        r = c.dispatch(\"touch\", [InOut(data)])\n"
           "        t.append((time.perf_counter() - t0) * 1e6)\n"
           "        assert len(r[\"outputs\"][0]) == %zu\n"
           "print(statistics.median(t))\n' 2>&1",
           PTOD_BENCH_PYTHONPATH, size, socket, iters, size);
  f = popen(cmd, "r");
  if (!f) return -1;
  if (fscanf(f, "%lf", &us) != 1) us = -1;
  pclose(f);
  return us;
}

#define KINDS 5 /* client, raw, python, socket, memcpy */
static const char *const kind_keys[KINDS] = {"client", "raw", "python", "socket", "memcpy"};
static const char *const kind_notes[KINDS] = {
    "through libptoclient", "libptoclient's request bytes from one buffer, the response into "
    "another, both reused (the daemon's share)", "through the Python client (client/python)",
    "baseline: the same bytes both ways over a raw Unix socket to an echo process, buffers reused",
    "baseline: one memcpy of the same bytes"};

int main(int argc, char **argv) {
  static const size_t sizes[] = {4u << 10, 64u << 10, 1u << 20, 4u << 20,
                                 16u << 20, 64u << 20, 256u << 20};
  bench_opts_t o;
  bench_daemon_t d;
  pto_client_t *c;
  pto_error_t err;
  unsigned char *data;
  char *src, *dst, key[64], note[400];
  int nsizes = (int)(sizeof sizes / sizeof sizes[0]);

  bench_parse_args(argc, argv, "inline data round trip vs memcpy and a raw socket", &o);
  bench_header("Data path: inline inout argument round trip (C, raw, Python) vs memcpy and a "
               "raw Unix socket");
  if (o.smoke) nsizes = 3;
  data = malloc(sizes[nsizes - 1]);
  src = malloc(sizes[nsizes - 1]);
  dst = malloc(sizes[nsizes - 1]);
  if (!data || !src || !dst) fail("out of memory");
  for (size_t i = 0; i < sizes[nsizes - 1]; i++) data[i] = (unsigned char)(i * 131u);
  memset(src, 1, sizes[nsizes - 1]);
  memset(dst, 2, sizes[nsizes - 1]);

  bench_daemon_start(&d, "[daemon]\nmax_message = 300M\noutput_limit = 1G\n\n"
                         "[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n");
  if (pto_client_connect(d.socket, 5000, &c, &err) < 0) fail(err.message);
  printf("shm: not measured: the shm argument path does not exist yet (its row goes beside "
         "'client' below, datapath.<size>.shm)\n");
  printf("%9s %10s %10s %10s %10s %10s | GB/s: %s | faults per round trip: ptod client, ptod "
         "raw, client\n", "bytes", "client", "raw", "python", "socket", "memcpy",
         "client raw python socket memcpy");

  for (int si = 0; si < nsizes; si++) {
    size_t size = sizes[si];
    /* About 0.1-1 s per kind and repetition. */
    int iters = o.smoke ? 2 : size <= (64u << 10) ? 300 : size <= (4u << 20) ? 30
                            : size <= (64u << 20) ? 5 : 2;
    int reps = size >= (64u << 20) && o.reps > 3 ? 3 : o.reps;
    double *v[KINDS], med[KINDS], *sample = calloc((size_t)iters, sizeof(double));
    double dfaults = 0, cfaults = 0, rfaults = 0;
    size_t qlen, rcap = 2 * size + (1u << 20);
    char *req = capture_request(data, size, &qlen), *rx = malloc(rcap);
    int fd = connect_path(d.socket), efd;
    pid_t echo = start_echo(&efd, size);
    for (int k = 0; k < KINDS; k++) v[k] = calloc((size_t)reps, sizeof(double));
    if (!rx || !sample || !v[KINDS - 1]) fail("out of memory");
    memset(rx, 0, rcap); /* faulted in once, here */
    raw_us(fd, req, qlen, rx, rcap);
    socket_us(efd, src, dst, size);
    dispatch_us(c, data, size); /* warm-up: staging grows, buffers are touched */
    for (int r = 0; r < reps; r++) {
      long d0 = proc_minflt(d.pid), c0 = self_minflt();
      for (int i = 0; i < iters; i++) sample[i] = dispatch_us(c, data, size);
      dfaults += (double)(proc_minflt(d.pid) - d0) / iters / reps;
      cfaults += (double)(self_minflt() - c0) / iters / reps;
      v[0][r] = bench_median(sample, (size_t)iters);
      d0 = proc_minflt(d.pid);
      for (int i = 0; i < iters; i++) sample[i] = raw_us(fd, req, qlen, rx, rcap);
      rfaults += (double)(proc_minflt(d.pid) - d0) / iters / reps;
      v[1][r] = bench_median(sample, (size_t)iters);
      v[2][r] = python_us(d.socket, size, iters);
      for (int i = 0; i < iters; i++) sample[i] = socket_us(efd, src, dst, size);
      v[3][r] = bench_median(sample, (size_t)iters);
      v[4][r] = memcpy_us(dst, src, size, iters > 50 ? iters : 50);
    }
    for (int k = 0; k < KINDS; k++) med[k] = bench_median(v[k], (size_t)reps);
    printf("%9zu %8.0fus %8.0fus %8.0fus %8.0fus %8.1fus | %.3f %.3f %.3f %.3f %.2f | %.0f, %.0f, "
           "%.0f\n", size, med[0], med[1], med[2], med[3], med[4], (double)size / med[0] / 1e3,
           (double)size / med[1] / 1e3, (double)size / med[2] / 1e3, (double)size / med[3] / 1e3,
           (double)size / med[4] / 1e3, dfaults, rfaults, cfaults);
    for (int k = 0; k < KINDS; k++) {
      if (med[k] < 0) continue; /* the Python client could not run */
      snprintf(key, sizeof key, "datapath.%zuK.%s.gbps", size >> 10, kind_keys[k]);
      if (k < 3)
        snprintf(note, sizeof note, "touch(inout %zu KiB) %s: bytes / round trip (%.1f us), "
                 "median of %d reps", size >> 10, kind_notes[k], med[k], reps);
      else
        snprintf(note, sizeof note, "%s, %zu KiB (%.1f us), median of %d reps", kind_notes[k],
                 size >> 10, med[k], reps);
      bench_figure(key, (double)size / med[k] / 1e3, "GB/s", note);
    }
    for (int k = 0; k < 3; k++) {
      double ratio[64];
      if (med[k] < 0) continue;
      for (int base = 3; base < KINDS; base++) {
        for (int r = 0; r < reps; r++) ratio[r] = v[base][r] / v[k][r];
        snprintf(key, sizeof key, "datapath.%zuK.%s_vs_%s", size >> 10, kind_keys[k],
                 kind_keys[base]);
        snprintf(note, sizeof note, "%s rate / %s rate, same rep, median of reps", kind_keys[k],
                 kind_keys[base]);
        bench_figure(key, bench_median(ratio, (size_t)reps), "x", note);
      }
    }
    stop_echo(efd, echo);
    close(fd);
    free(req);
    free(rx);
    for (int k = 0; k < KINDS; k++) free(v[k]);
    free(sample);
  }
  pto_client_close(c);
  bench_daemon_stop(&d);
  free(data);
  free(src);
  free(dst);
  return 0;
}
