/* SPDX-License-Identifier: Apache-2.0 */
/* bench.h — what every benchmark under bench/ shares.
 *
 * A benchmark is a program that prints its figures.  Each figure is one
 * line that scripts/bench collects:
 *
 *   FIGURE <key> <value> <unit> | <baseline or target, in words>
 *
 * Every value is a median over several repetitions, and where a figure is
 * compared with a baseline, the baseline is measured in the same run (the
 * machines are shared and noisy: only same-run ratios mean anything).
 *
 * The helpers here: a clock, statistics over samples, the machine's
 * description, a ptod started for the run on a socket of its own, and
 * readers for a process's memory and CPU time.  Nothing here asserts on
 * time.  Helpers that fail print why and exit(1): a benchmark that cannot
 * set itself up has nothing to measure.
 */
#ifndef PTOD_BENCH_H
#define PTOD_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <pto/client.h>

typedef struct bench_opts {
  int reps;         /* repetitions of each measurement (--reps N; default 5) */
  bool smoke;       /* --smoke: tiny counts, only to prove the program works */
  const char *only; /* --only WHAT: one part of the benchmark (for profiling); NULL: all */
} bench_opts_t;

/* Parse --reps N, --smoke and --only WHAT; anything else prints usage and
 * exits 2.
 * `what` is the one-line description printed by --help. */
void bench_parse_args(int argc, char **argv, const char *what, bench_opts_t *ret);

/* CLOCK_MONOTONIC, in ns. */
uint64_t bench_now_ns(void);
void bench_sleep_us(uint64_t us);

/* Statistics over n samples; each sorts v in place. */
double bench_median(double *v, size_t n);
/* p in [0, 100]: the nearest-rank percentile. */
double bench_percentile(double *v, size_t n, double p);
double bench_min(const double *v, size_t n);
double bench_max(const double *v, size_t n);

/* Print the benchmark's title and one MACHINE line: CPUs, CPU model, the
 * hypervisor, kernel, transparent huge page mode, whether free pages are
 * reported to the host, the idle driver and the load average.  Every
 * benchmark prints it first; scripts/bench files it with the figures. */
void bench_header(const char *title);

/* The first three fields of /proc/loadavg, for per-repetition lines (a
 * static buffer). */
const char *bench_loadavg(void);

/* One figure line (see above).  `note` says what the value is compared with
 * and the target; may be NULL. */
void bench_figure(const char *key, double value, const char *unit, const char *note);

/* ---- a daemon for the run ------------------------------------------------ */

typedef struct bench_daemon {
  pid_t pid;
  char dir[128];     /* a private temporary directory: config, socket, log */
  char socket[192];
  char log[192];
} bench_daemon_t;

/* Start the ptod of this build tree on a socket in a new temporary
 * directory, with `config` (INI text: sections and keys; [daemon] socket
 * and log_level and [device] programs are added unless present) and wait
 * until it answers ping with state "ready".  The daemon's stderr goes to
 * d->log. */
void bench_daemon_start(bench_daemon_t *d, const char *config);
/* The same, the daemon run under `wrapper` (argv of a program that runs
 * the daemon's command line after its own, as valgrind does; looked up on
 * PATH; NULL-terminated), or directly when wrapper is NULL. */
void bench_daemon_start_under(bench_daemon_t *d, const char *config, const char *const *wrapper);
/* SIGTERM, wait, remove the directory; prints the log if it did not exit 0. */
void bench_daemon_stop(bench_daemon_t *d);

/* The ptod the benchmarks start: this build's, or $PTOD_BENCH_PTOD (another
 * build's, for a before/after comparison in one run of a benchmark). */
const char *bench_ptod_path(void);

/* The programs directory the benchmarks' daemons use (noop and the bench
 * programs). */
const char *bench_programs_dir(void);

/* ---- sockets -------------------------------------------------------------- */

/* A connected Unix stream socket to path (close-on-exec, blocking); exits
 * with the reason when it cannot connect. */
int bench_connect_unix(const char *path);
/* A Unix stream socket (close-on-exec) listening on path with backlog;
 * exits with the reason when it cannot. */
int bench_listen_unix(const char *path, int backlog);
/* Write all len bytes to fd: retries on EINTR, waits for room on a
 * non-blocking fd; exits with the reason on any other failure. */
void bench_write_all(int fd, const void *buf, size_t len);

/* The bytes libptoclient sends for req (at most cap), captured on a socket
 * of ours: a child sends, waiting for room, while this reads, so a request
 * larger than the socket buffer is captured too.  Malloc'ed (the caller
 * frees), *ret_len bytes: exactly one message, framed by the daemon's own
 * reader. */
char *bench_capture_request(const pto_request_t *req, size_t cap, size_t *ret_len);
/* The bytes of one noop(1) dispatch (a noop of 1 task) into buf (cap
 * bytes); returns how many. */
size_t bench_capture_noop(char *buf, size_t cap);

/* A peer process at the other end of a Unix socket pair: the child runs
 * serve(its end, arg) and exits 0; our end (close-on-exec) in *ret_fd.
 * bench_peer_stop closes our end (the peer sees EOF) and reaps it. */
pid_t bench_peer_start(int *ret_fd, void (*serve)(int fd, void *arg), void *arg);
void bench_peer_stop(int fd, pid_t pid);

/* ---- processes ------------------------------------------------------------ */

/* Resident set size of a process in KiB (VmRSS), or -1. */
long bench_rss_kib(pid_t pid);
/* CPU time used so far by every thread of a process, in ns (schedstat:
 * ns resolution), or 0 when it cannot be read. */
uint64_t bench_cpu_ns(pid_t pid);
/* Context switches so far of every thread of a process
 * (/proc/PID/task/TID/status): voluntary ones (it slept: a wake-up to come)
 * and nonvoluntary ones (it was preempted, or yielded to a runnable
 * thread); 0 when they cannot be read.  Counts, independent of the
 * machine's speed. */
void bench_switches(pid_t pid, uint64_t *ret_voluntary, uint64_t *ret_nonvoluntary);
/* Minor page faults so far of a process (/proc/PID/stat), or -1; of this
 * process (getrusage). */
long bench_minflt(pid_t pid);
long bench_self_minflt(void);

#endif
