/* SPDX-License-Identifier: Apache-2.0 */
/* bench_datapath — a dispatch's data, inline and through shared memory,
 * 4 KiB to 256 MiB, and resident-buffer loads from a region.
 *
 * The table: one dispatch of the bench program `touch`
 * (bench/programs/touch.c: one task that increments the first byte) with
 * one inout argument of S bytes.  The figure is S / round-trip time (the
 * payload's rate), median over repetitions, for
 *   client      {"data": S bytes, "dir": "inout"} through libptoclient: the
 *               bytes go to the daemon in the request, are copied into
 *               device memory, and come back in the response
 *   shm         {"shm": r, "bytes": S, "dir": "inout"} through libptoclient,
 *               one region created once and reused: the daemon copies the
 *               bytes from the region into device memory and back (two
 *               copies, no bytes in any message)
 *   raw         client's request bytes written from one buffer and the
 *               response read into another, both reused (so never faulted
 *               in again) and framed with the daemon's own reader: the
 *               daemon's part of the inline path
 *   python      the inline argument through the Python client
 *   python_shm  the shm argument through the Python client's region
 * against baselines measured in the same repetition: memcpy of S bytes
 * between two buffers (and two of them for shm, the copies it must make),
 * and the same S bytes both ways over a raw Unix socket to an echo
 * process.  Also the minor page faults per round trip on each side: a
 * fresh page costs 10-20 us on these virtual machines, so a path that
 * faults in fresh buffers of many MiB pays more than the copies.
 *
 * The buffer part: buffer.write of the largest size from a region into a
 * resident buffer, and buffer.read from it back into the region (the
 * weight-load path), interleaved sample by sample with memcpys of the same
 * size.
 *
 * --only table | buffer: one part. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pto/client.h>

#include "bench.h"
#include "datapath.h"
#include "pyrun.h"

#define MAX_REPS 64

static void fail(const char *what) {
  fprintf(stderr, "bench_datapath: %s\n", what);
  exit(1);
}

/* One dispatch of touch(arg), in us; exits when it fails. */
static double touch_us(pto_client_t *c, pto_dispatch_arg_t arg, size_t size,
                       pto_dispatch_result_t **ret_res) {
  pto_dispatch_req_t req = {.program = "touch", .args = &arg, .nargs = 1};
  pto_error_t err;
  uint64_t t0 = bench_now_ns();
  if (pto_client_dispatch(c, &req, 120000, ret_res, &err) < 0) {
    fprintf(stderr, "bench_datapath: dispatch of %zu bytes: %s\n", size, err.message);
    exit(1);
  }
  return (double)(bench_now_ns() - t0) / 1000.0;
}

/* Inline: the bytes come back in the answer, the first one incremented. */
static double inline_us(pto_client_t *c, unsigned char *data, size_t size) {
  pto_dispatch_result_t *res;
  unsigned char before = data[0];
  double us = touch_us(c, pto_arg_inout(data, size), size, &res);
  if (res->noutputs != 1 || res->outputs[0].len != size ||
      res->outputs[0].ptr[0] != (unsigned char)(before + 1) ||
      memcmp(res->outputs[0].ptr + 1, data + 1, size - 1) != 0)
    fail("the data came back wrong");
  data[0] = res->outputs[0].ptr[0];
  pto_result_free(res);
  return us;
}

/* Through the region: nothing in the answer, the region's first byte
 * incremented in place. */
static double shm_us(pto_client_t *c, pto_shm_t *r, size_t size) {
  pto_dispatch_result_t *res;
  volatile unsigned char *p = pto_shm_data(r);
  unsigned char before = p[0];
  double us = touch_us(c, pto_arg_shm(r, 0, size, PTO_ARG_INOUT), size, &res);
  if (res->noutputs != 1 || res->outputs[0].ptr != NULL || p[0] != (unsigned char)(before + 1))
    fail("the region's bytes were not written back");
  pto_result_free(res);
  return us;
}

/* The Python client, one process per repetition: the median round trip
 * of `iters` dispatches of touch(inout), first inline, then through a
 * region of its own, each after three warm-up calls made as the timed ones
 * are (the result before is still held when the next answer comes, so the
 * client's two reused receive blocks both exist: warm, as the C client is
 * after its warm-up); prints both, in us. */
static const char python_script[] =
    "import statistics, sys, time\n"
    "from ptoclient import Client, InOut\n"
    "sock, size, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])\n"
    "def median_us(call, check):\n"
    "    r = None\n"
    "    for _ in range(3):\n"
    "        r = call()\n"
    "        check(r)\n"
    "    t = []\n"
    "    for _ in range(iters):\n"
    "        t0 = time.perf_counter()\n"
    "        r = call()\n"
    "        t.append((time.perf_counter() - t0) * 1e6)\n"
    "        check(r)\n"
    "    return statistics.median(t)\n"
    "data = bytearray(size)\n"
    "def inline_ok(r):\n"
    "    assert len(r['outputs'][0]) == size\n"
    "with Client(socket_path=sock, timeout=120) as c:\n"
    "    us = median_us(lambda: c.dispatch('touch', [InOut(data)]), inline_ok)\n"
    "    with c.shm(size) as reg:\n"
    "        buf = reg.buffer\n"
    "        def shm_call():\n"
    "            before = buf[0]\n"
    "            return c.dispatch('touch', [reg.arg(0, size, 'inout')]), before\n"
    "        def shm_ok(rb):\n"
    "            assert rb[0]['outputs'][0] is None and buf[0] == (rb[1] + 1) & 255\n"
    "        shm = median_us(shm_call, shm_ok)\n"
    "        del buf\n"
    "print(us, shm)\n";

static void python_us(const char *socket, size_t size, int iters, double *ret_inline,
                      double *ret_shm) {
  char s[32], n[32];
  const char *args[] = {socket, s, n, NULL};
  double v[2];
  snprintf(s, sizeof s, "%zu", size);
  snprintf(n, sizeof n, "%d", iters);
  if (bench_python(python_script, args, v, 2) < 0) v[0] = v[1] = -1;
  *ret_inline = v[0];
  *ret_shm = v[1];
}

enum { K_CLIENT, K_SHM, K_RAW, K_PY, K_PYSHM, K_SOCKET, K_MEMCPY, KINDS };
#define MEASURED K_SOCKET /* kinds before it are paths through ptod, the rest baselines */
static const char *const kind_keys[KINDS] = {"client", "shm", "raw", "python", "python_shm",
                                             "socket", "memcpy"};
static const char *const kind_notes[KINDS] = {
    "inline through libptoclient",
    "shm inout from one region, reused, through libptoclient",
    "libptoclient's inline request bytes from one buffer, the response into another, both "
    "reused (the daemon's share)",
    "inline through the Python client (client/python)",
    "shm inout through the Python client's region (client/python)",
    "baseline: the same bytes both ways over a raw Unix socket to an echo process, buffers reused",
    "baseline: one memcpy of the same bytes"};

/* Median over reps of num[r] * scale / den[r]. */
static double med_ratio(const double *num, const double *den, double scale, int reps) {
  double r[MAX_REPS];
  for (int i = 0; i < reps; i++) r[i] = num[i] * scale / den[i];
  return bench_median(r, (size_t)reps);
}

/* The figures of one size: rates, ratios to the baselines, the targets. */
static void size_figures(size_t size, double *const v[KINDS], const double med[KINDS], int reps) {
  char key[96], note[400];
  size_t kib = size >> 10;
  for (int k = 0; k < KINDS; k++) {
    if (med[k] < 0) continue; /* the Python client could not run */
    snprintf(key, sizeof key, "datapath.%zuK.%s.gbps", kib, kind_keys[k]);
    if (k < MEASURED)
      snprintf(note, sizeof note, "touch(inout %zu KiB) %s: bytes / round trip (%.1f us), "
               "median of %d reps", kib, kind_notes[k], med[k], reps);
    else
      snprintf(note, sizeof note, "%s, %zu KiB (%.1f us), median of %d reps", kind_notes[k],
               kib, med[k], reps);
    bench_figure(key, (double)size / med[k] / 1e3, "GB/s", note);
  }
  for (int k = 0; k < MEASURED; k++) {
    if (med[k] < 0) continue;
    for (int base = MEASURED; base < KINDS; base++) {
      snprintf(key, sizeof key, "datapath.%zuK.%s_vs_%s", kib, kind_keys[k], kind_keys[base]);
      snprintf(note, sizeof note, "%s rate / %s rate, same rep, median of reps%s", kind_keys[k],
               kind_keys[base], k == K_CLIENT && base == K_SOCKET && kib == 65536
                                    ? "; target >= 0.5" : "");
      bench_figure(key, med_ratio(v[base], v[k], 1, reps), "x", note);
    }
  }
  snprintf(key, sizeof key, "datapath.%zuK.shm_vs_2memcpy", kib);
  snprintf(note, sizeof note, "shm rate / the rate of two memcpys of the same bytes (the copies "
           "into device memory and back), same rep%s", kib == 65536 ? "; target >= 0.5" : "");
  bench_figure(key, med_ratio(v[K_MEMCPY], v[K_SHM], 2, reps), "x", note);
  snprintf(key, sizeof key, "datapath.%zuK.shm_vs_inline_rtt", kib);
  snprintf(note, sizeof note, "shm round trip / inline (client) round trip, same rep (a time: "
           "below 1 is shm faster)%s", kib == 4 ? "; target <= 1.2" : "");
  bench_figure(key, med_ratio(v[K_SHM], v[K_CLIENT], 1, reps), "x", note);
  if (med[K_PY] >= 0) {
    snprintf(key, sizeof key, "datapath.%zuK.python_vs_client", kib);
    bench_figure(key, med_ratio(v[K_CLIENT], v[K_PY], 1, reps), "x",
                 "Python client's inline rate / libptoclient's inline rate, same rep");
  }
  if (med[K_PYSHM] >= 0) {
    snprintf(key, sizeof key, "datapath.%zuK.python_shm_vs_shm", kib);
    snprintf(note, sizeof note, "Python client's shm rate / the C client's, same rep%s",
             kib >= 65536 ? "; target >= 0.9 (throughput, where the bytes dominate)" : "");
    bench_figure(key, med_ratio(v[K_SHM], v[K_PYSHM], 1, reps), "x", note);
  }
}

/* Faults per round trip: the daemon's and ours, inline and shm. */
typedef struct faults {
  double daemon[KINDS], self[KINDS];
} faults_t;

static void fault_figures(size_t size, const faults_t *f) {
  static const int kinds[] = {K_CLIENT, K_SHM};
  char key[96], note[256];
  for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
    int k = kinds[i];
    snprintf(key, sizeof key, "datapath.%zuK.%s.faults_daemon", size >> 10, kind_keys[k]);
    snprintf(note, sizeof note, "ptod's minor page faults per round trip, warm (the payload "
             "covers %zu 4-KiB pages); target: none proportional to the payload", size >> 12);
    bench_figure(key, f->daemon[k], "faults", note);
    snprintf(key, sizeof key, "datapath.%zuK.%s.faults_client", size >> 10, kind_keys[k]);
    bench_figure(key, f->self[k], "faults", "the client's (this process's) minor page faults "
                 "per round trip, warm; target: none proportional to the payload");
  }
}

/* The table's row of one size. */
static void size_row(const bench_daemon_t *d, pto_client_t *c, pto_shm_t *region,
                     unsigned char *data, char *src, char *dst, size_t size, int reps, bool smoke) {
  /* About 0.1-1 s per kind and repetition. */
  int iters = smoke ? 2 : size <= (64u << 10) ? 300 : size <= (4u << 20) ? 30
                        : size <= (64u << 20) ? 5 : 2;
  double *v[KINDS], med[KINDS], *sample = calloc((size_t)iters, sizeof(double));
  faults_t f = {{0}, {0}};
  size_t qlen, rcap = 2 * size + (1u << 20);
  pto_dispatch_arg_t arg = pto_arg_inout(data, size);
  pto_request_t touch = {.method = PTO_METHOD_DISPATCH,
                         .u.dispatch = {.program = "touch", .args = &arg, .nargs = 1}};
  char *req = bench_capture_request(&touch, size + (1u << 20), &qlen), *rx = malloc(rcap);
  int fd = bench_connect_unix(d->socket), efd;
  pid_t echo = dp_start_echo(&efd, size);
  for (int k = 0; k < KINDS; k++) v[k] = calloc((size_t)reps, sizeof(double));
  if (!rx || !sample || !v[KINDS - 1]) fail("out of memory");
  memset(rx, 0, rcap); /* faulted in once, here */
  dp_raw_us(fd, req, qlen, rx, rcap);
  dp_socket_us(efd, src, dst, size);
  inline_us(c, data, size); /* warm-up: staging grows, buffers are touched */
  shm_us(c, region, size);
  for (int r = 0; r < reps; r++) {
    for (int k = K_CLIENT; k <= K_SHM; k++) {
      long d0 = bench_minflt(d->pid), c0 = bench_self_minflt();
      for (int i = 0; i < iters; i++)
        sample[i] = k == K_CLIENT ? inline_us(c, data, size) : shm_us(c, region, size);
      f.daemon[k] += (double)(bench_minflt(d->pid) - d0) / iters / reps;
      f.self[k] += (double)(bench_self_minflt() - c0) / iters / reps;
      v[k][r] = bench_median(sample, (size_t)iters);
    }
    {
      long d0 = bench_minflt(d->pid);
      for (int i = 0; i < iters; i++) sample[i] = dp_raw_us(fd, req, qlen, rx, rcap);
      f.daemon[K_RAW] += (double)(bench_minflt(d->pid) - d0) / iters / reps;
      v[K_RAW][r] = bench_median(sample, (size_t)iters);
    }
    python_us(d->socket, size, iters, &v[K_PY][r], &v[K_PYSHM][r]);
    for (int i = 0; i < iters; i++) sample[i] = dp_socket_us(efd, src, dst, size);
    v[K_SOCKET][r] = bench_median(sample, (size_t)iters);
    v[K_MEMCPY][r] = dp_memcpy_us(dst, src, size, iters > 50 ? iters : 50);
  }
  for (int k = 0; k < KINDS; k++) {
    med[k] = bench_median(v[k], (size_t)reps);
    for (int r = 0; r < reps; r++)
      if (v[k][r] < 0) med[k] = -1; /* a Python rep that did not run: no row */
  }
  printf("%9zu", size);
  for (int k = 0; k < KINDS; k++) {
    if (med[k] < 0)
      printf(" %11s", "-"); /* a row that did not run */
    else
      printf(" %9.1fus", med[k]);
  }
  printf(" |");
  for (int k = 0; k < KINDS; k++) {
    if (med[k] < 0)
      printf(" -");
    else
      printf(" %.3f", (double)size / med[k] / 1e3);
  }
  printf(" | %.0f %.0f %.0f | %.0f %.0f\n", f.daemon[K_CLIENT], f.daemon[K_SHM], f.daemon[K_RAW],
         f.self[K_CLIENT], f.self[K_SHM]);
  size_figures(size, v, med, reps);
  fault_figures(size, &f);
  bench_peer_stop(efd, echo);
  close(fd);
  free(req);
  free(rx);
  for (int k = 0; k < KINDS; k++) free(v[k]);
  free(sample);
}

/* buffer.write from the region and buffer.read into it, size bytes,
 * against memcpy of size bytes; interleaved sample by sample. */
static void buffer_part(pto_client_t *c, pto_shm_t *region, const unsigned char *data, char *src,
                        char *dst, size_t size, int reps, bool smoke) {
  enum { B_WRITE, B_READ, B_MEMCPY, B_KINDS };
  static const char *const keys[B_KINDS] = {"write", "read", "memcpy"};
  int iters = smoke ? 2 : 5;
  double v[B_KINDS][MAX_REPS], sample[B_KINDS][8], med[B_KINDS];
  unsigned char *p = pto_shm_data(region);
  pto_buffer_info_t *info;
  pto_error_t err;
  char key[96], note[256];

  if (pto_client_buffer_alloc(c, "bench-weights", size, NULL, 60000, &info, &err) < 0) fail(err.message);
  pto_result_free(info);
  memcpy(p, data, size);
  if (pto_client_buffer_write_shm(c, "bench-weights", 0, region, 0, size, 60000, NULL, &err) < 0)
    fail(err.message);
  memset(p, 0, size);
  if (pto_client_buffer_read_shm(c, "bench-weights", 0, region, 0, size, 60000, NULL, &err) < 0)
    fail(err.message);
  if (memcmp(p, data, size) != 0) fail("buffer.read into the region did not return the bytes");
  for (int r = 0; r < reps; r++) {
    for (int i = 0; i < iters; i++) {
      uint64_t t0 = bench_now_ns();
      if (pto_client_buffer_write_shm(c, "bench-weights", 0, region, 0, size, 60000, NULL,
                                      &err) < 0)
        fail(err.message);
      sample[B_WRITE][i] = (double)(bench_now_ns() - t0) / 1000.0;
      t0 = bench_now_ns();
      if (pto_client_buffer_read_shm(c, "bench-weights", 0, region, 0, size, 60000, NULL,
                                     &err) < 0)
        fail(err.message);
      sample[B_READ][i] = (double)(bench_now_ns() - t0) / 1000.0;
      sample[B_MEMCPY][i] = dp_memcpy_us(dst, src, size, 1);
    }
    for (int k = 0; k < B_KINDS; k++) v[k][r] = bench_median(sample[k], (size_t)iters);
  }
  if (pto_client_buffer_free(c, "bench-weights", 60000, NULL, &err) < 0) fail(err.message);
  for (int k = 0; k < B_KINDS; k++) {
    double tmp[MAX_REPS];
    memcpy(tmp, v[k], sizeof(double) * (size_t)reps);
    med[k] = bench_median(tmp, (size_t)reps);
    snprintf(key, sizeof key, "datapath.buffer.%zuK.%s.gbps", size >> 10, keys[k]);
    if (k == B_MEMCPY)
      snprintf(note, sizeof note, "baseline: memcpy of %zu KiB between two warm buffers (%.1f "
               "us), interleaved with the writes and reads, median of %d reps", size >> 10,
               med[k], reps);
    else
      snprintf(note, sizeof note, "buffer.%s of %zu KiB %s a region through libptoclient (%.1f "
               "us), median of %d reps", keys[k], size >> 10, k == B_WRITE ? "from" : "into",
               med[k], reps);
    bench_figure(key, (double)size / med[k] / 1e3, "GB/s", note);
  }
  for (int k = B_WRITE; k <= B_READ; k++) {
    snprintf(key, sizeof key, "datapath.buffer.%zuK.%s_vs_memcpy", size >> 10, keys[k]);
    bench_figure(key, med_ratio(v[B_MEMCPY], v[k], 1, reps), "x",
                 "buffer rate / memcpy rate, same rep, median of reps; target >= 0.7");
  }
  printf("buffer %zu bytes: write %.1f us, read %.1f us, memcpy %.1f us\n", size, med[B_WRITE],
         med[B_READ], med[B_MEMCPY]);
}

int main(int argc, char **argv) {
  static const size_t sizes[] = {4u << 10, 64u << 10, 1u << 20, 4u << 20,
                                 16u << 20, 64u << 20, 256u << 20};
  bench_opts_t o;
  bench_daemon_t d;
  pto_client_t *c;
  pto_shm_t *region;
  pto_error_t err;
  unsigned char *data;
  char *src, *dst;
  int nsizes = (int)(sizeof sizes / sizeof sizes[0]), reps;
  size_t largest;
  bool table, buffer;

  bench_parse_args(argc, argv, "dispatch data inline and through shm vs memcpy and a raw "
                   "socket; buffer loads from a region", &o);
  table = !o.only || strcmp(o.only, "table") == 0;
  buffer = !o.only || strcmp(o.only, "buffer") == 0;
  if (!table && !buffer) {
    fprintf(stderr, "bench_datapath: --only takes 'table' or 'buffer', got '%s'.\n", o.only);
    return 2;
  }
  bench_header("Data path: inout argument round trip, inline and shm (C, raw, Python) vs "
               "memcpy and a raw Unix socket; buffer.write/read from a region vs memcpy");
  if (o.smoke) nsizes = 3;
  largest = sizes[nsizes - 1];
  data = malloc(largest);
  src = malloc(largest);
  dst = malloc(largest);
  if (!data || !src || !dst) fail("out of memory");
  for (size_t i = 0; i < largest; i++) data[i] = (unsigned char)(i * 131u);
  memset(src, 1, largest);
  memset(dst, 2, largest);

  /* Inline 256 MiB each way needs max_message and output_limit above it;
   * the C region and the Python one (largest each) fit shm_limit, and the
   * staging of a dispatch plus the resident buffer fit device memory. */
  bench_daemon_start(&d, "[daemon]\nmax_message = 300M\noutput_limit = 1G\nshm_limit = 1G\n\n"
                         "[device]\nmemory = 4G\n\n"
                         "[ring]\ntask_window = 64\nheap = 64K\ndep_pool = 64\n");
  if (pto_client_connect(d.socket, 5000, &c, &err) < 0) fail(err.message);
  if (pto_shm_create(c, largest, 60000, &region, &err) < 0) fail(err.message);
  memcpy(pto_shm_data(region), data, largest);

  if (table) {
    printf("%9s", "bytes");
    for (int k = 0; k < KINDS; k++) printf(" %11s", kind_keys[k]);
    printf(" | GB/s, same order | faults per round trip: ptod client shm raw | this process "
           "client shm\n");
    for (int si = 0; si < nsizes; si++) {
      reps = sizes[si] >= (64u << 20) && o.reps > 3 ? 3 : o.reps;
      size_row(&d, c, region, data, src, dst, sizes[si], reps > MAX_REPS ? MAX_REPS : reps,
               o.smoke);
    }
  }
  if (buffer) {
    reps = o.reps > MAX_REPS ? MAX_REPS : o.reps;
    buffer_part(c, region, data, src, dst, largest, reps, o.smoke);
  }
  pto_shm_free(region);
  pto_client_close(c);
  bench_daemon_stop(&d);
  free(data);
  free(src);
  free(dst);
  return 0;
}
