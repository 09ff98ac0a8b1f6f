/* SPDX-License-Identifier: Apache-2.0 */
#include "bench.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <pto/client.h>

#include "reader.h"

#define DAEMON_READY_TIMEOUT_NS (UINT64_C(60) * 1000000000u)

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  exit(1);
}

void bench_parse_args(int argc, char **argv, const char *what, bench_opts_t *ret) {
  ret->reps = 5;
  ret->smoke = false;
  ret->only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--smoke") == 0) {
      ret->smoke = true;
    } else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
      ret->only = argv[++i];
    } else if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc) {
      char *end;
      unsigned long v;
      errno = 0;
      v = strtoul(argv[++i], &end, 10);
      if (errno || *end || v < 1 || v > 1000) {
        fprintf(stderr, "%s: --reps takes a number from 1 to 1000, got '%s'.\n", argv[0], argv[i]);
        exit(2);
      }
      ret->reps = (int)v;
    } else {
      fprintf(stderr,
              "%s: %s\n"
              "Usage: %s [--reps N] [--smoke] [--only WHAT]\n"
              "  --reps N     repetitions of each measurement; figures are medians (default 5)\n"
              "  --smoke      tiny counts, only to check that the benchmark runs\n"
              "  --only WHAT  run one part only, for profiling (see the benchmark's source)\n",
              argv[0], what, argv[0]);
      exit(strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0 ? 0 : 2);
    }
  }
  if (ret->smoke) ret->reps = 1;
}

uint64_t bench_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_sleep_us(uint64_t us) {
  struct timespec ts = {(time_t)(us / 1000000u), (long)(us % 1000000u) * 1000};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n) {
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_percentile(double *v, size_t n, double p) {
  size_t rank;
  if (n == 0) return 0;
  qsort(v, n, sizeof *v, cmp_double);
  rank = (size_t)(p / 100.0 * (double)n + 0.999999);
  if (rank < 1) rank = 1;
  if (rank > n) rank = n;
  return v[rank - 1];
}

double bench_min(const double *v, size_t n) {
  double m = n ? v[0] : 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] < m) m = v[i];
  return m;
}

double bench_max(const double *v, size_t n) {
  double m = n ? v[0] : 0;
  for (size_t i = 1; i < n; i++)
    if (v[i] > m) m = v[i];
  return m;
}

/* The first line of `path` (newline cut) into buf, or "unknown". */
static void read_line(const char *path, char *buf, size_t cap) {
  FILE *f = fopen(path, "r");
  snprintf(buf, cap, "unknown");
  if (!f) return;
  if (fgets(buf, (int)cap, f)) buf[strcspn(buf, "\n")] = '\0';
  fclose(f);
}

/* The first three fields of /proc/loadavg into buf. */
static void read_loadavg(char *buf, size_t cap) {
  char *p = buf;
  read_line("/proc/loadavg", buf, cap);
  for (int fields = 0; *p && fields < 3; p++)
    if (*p == ' ' && ++fields == 3) *p = '\0';
}

/* The hypervisor's CPUID signature (leaf 0x40000000), or "none". */
static void hypervisor(char *buf, size_t cap) {
  snprintf(buf, cap, "none");
#if defined(__x86_64__) || defined(__i386__)
  {
    unsigned a, b, c, d, ecx1;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(ecx1), "=d"(d) : "a"(1), "c"(0));
    if (ecx1 & (1u << 31)) {
      char sig[13];
      __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x40000000u), "c"(0));
      memcpy(sig, &b, 4);
      memcpy(sig + 4, &c, 4);
      memcpy(sig + 8, &d, 4);
      sig[12] = '\0';
      /* some signatures are padded with blanks ("bhyve bhyve "): one word */
      for (char *p = sig; *p; p++)
        if (*p == ' ') *p = '_';
      for (size_t n = strlen(sig); n > 0 && sig[n - 1] == '_'; n--) sig[n - 1] = '\0';
      snprintf(buf, cap, "%s", sig[0] ? sig : "unnamed");
    }
  }
#endif
}

/* Whether a virtio balloon reports free pages to the host (feature bit 5,
 * VIRTIO_BALLOON_F_REPORTING): then memory freed a while ago is given back
 * to the host, and committing it again pays the host's faults too. */
static const char *free_page_reporting(void) {
  DIR *dir = opendir("/sys/bus/virtio/drivers/virtio_balloon");
  const char *state = "no balloon";
  struct dirent *e;
  if (!dir) return state;
  while ((e = readdir(dir))) {
    char path[512], bits[256];
    if (strncmp(e->d_name, "virtio", 6) != 0) continue;
    snprintf(path, sizeof path, "/sys/bus/virtio/drivers/virtio_balloon/%s/features", e->d_name);
    read_line(path, bits, sizeof bits);
    state = strlen(bits) > 5 && bits[5] == '1' ? "on" : "off";
  }
  closedir(dir);
  return state;
}

void bench_header(const char *title) {
  char line[512], model[256] = "unknown", hv[16], thp[128], defrag[128], order[32], idle[64],
      haltpoll[32];
  char loadavg[64];
  struct utsname u;
  FILE *f = fopen("/proc/cpuinfo", "r");
  if (f) {
    while (fgets(line, sizeof line, f)) {
      if (strncmp(line, "model name", 10) == 0) {
        char *colon = strchr(line, ':');
        if (colon) {
          snprintf(model, sizeof model, "%s", colon + 2);
          model[strcspn(model, "\n")] = '\0';
        }
        break;
      }
    }
    fclose(f);
  }
  if (uname(&u) != 0) snprintf(u.release, sizeof u.release, "unknown");
  hypervisor(hv, sizeof hv);
  read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp);
  read_line("/sys/kernel/mm/transparent_hugepage/defrag", defrag, sizeof defrag);
  read_line("/sys/module/page_reporting/parameters/page_reporting_order", order, sizeof order);
  read_line("/sys/devices/system/cpu/cpuidle/current_driver", idle, sizeof idle);
  /* cpuidle-haltpoll polls this long before halting an idle vCPU: at 0 every
   * wake-up of an idle vCPU waits for the hypervisor (BENCHMARKS.md). */
  read_line("/sys/module/haltpoll/parameters/guest_halt_poll_ns", haltpoll, sizeof haltpoll);
  read_loadavg(loadavg, sizeof loadavg);
  printf("== %s\n", title);
  /* One line, the same in every benchmark: scripts/bench files it with the
   * figures. */
  printf("MACHINE cpus=%ld model=\"%s\" hypervisor=%s kernel=%s thp=\"%s\" thp_defrag=\"%s\" "
         "free_page_reporting=%s(order %s) cpuidle=%s guest_halt_poll_ns=%s load=\"%s\"\n",
         sysconf(_SC_NPROCESSORS_ONLN), model, hv, u.release, thp, defrag, free_page_reporting(),
         order, idle, haltpoll, loadavg);
  fflush(stdout);
}

const char *bench_loadavg(void) {
  static char buf[64];
  read_loadavg(buf, sizeof buf);
  return buf;
}

void bench_figure(const char *key, double value, const char *unit, const char *note) {
  printf("FIGURE %s %.6g %s | %s\n", key, value, unit, note ? note : "");
  fflush(stdout);
}

/* ---- a daemon for the run ------------------------------------------------ */

const char *bench_programs_dir(void) { return PTOD_BENCH_PROGRAMS_DIR; }

const char *bench_ptod_path(void) {
  const char *other = getenv("PTOD_BENCH_PTOD");
  return other && *other ? other : PTOD_BENCH_PTOD;
}

static bool daemon_ready(const char *socket) {
  pto_client_t *c;
  pto_ping_t *ping;
  pto_error_t err;
  bool ready = false;
  if (pto_client_connect(socket, 1000, &c, &err) < 0) return false;
  if (pto_client_ping(c, 5000, &ping, &err) == 0) {
    ready = strcmp(ping->state, "ready") == 0;
    pto_result_free(ping);
  }
  pto_client_close(c);
  return ready;
}

static void print_log(const char *path) {
  char line[1024];
  FILE *f = fopen(path, "r");
  if (!f) return;
  fprintf(stderr, "--- %s\n", path);
  while (fgets(line, sizeof line, f)) fputs(line, stderr);
  fclose(f);
}

void bench_daemon_start(bench_daemon_t *d, const char *config) {
  bench_daemon_start_under(d, config, NULL);
}

/* The child's side: exec the daemon, under the wrapper if any. */
static void exec_daemon(const char *config_path, const char *log, const char *const *wrapper) {
  const char *argv[32];
  size_t n = 0;
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd >= 0) {
    dup2(fd, 2);
    dup2(fd, 1);
  }
  for (; wrapper && wrapper[n] && n < 28; n++) argv[n] = wrapper[n];
  argv[n++] = bench_ptod_path();
  argv[n++] = "--config";
  argv[n++] = config_path;
  argv[n] = NULL;
  execvp(argv[0], (char *const *)argv);
  fprintf(stderr, "Failed to run '%s': %s.\n", argv[0], strerror(errno));
  _exit(127);
}

void bench_daemon_start_under(bench_daemon_t *d, const char *config, const char *const *wrapper) {
  char path[256];
  FILE *f;
  uint64_t t0;

  memset(d, 0, sizeof *d);
  snprintf(d->dir, sizeof d->dir, "/tmp/ptod-bench-XXXXXX");
  if (!mkdtemp(d->dir)) die("Failed to create a temporary directory: %s.", strerror(errno));
  snprintf(d->socket, sizeof d->socket, "%s/ptod.sock", d->dir);
  snprintf(d->log, sizeof d->log, "%s/ptod.log", d->dir);
  snprintf(path, sizeof path, "%s/ptod.conf", d->dir);
  f = fopen(path, "w");
  if (!f) die("Failed to write '%s': %s.", path, strerror(errno));
  /* Keys of one section may come in several blocks of it (inih merges). */
  fprintf(f, "[daemon]\nsocket = %s\nlog_level = warning\n\n[device]\nprograms = %s\n\n%s\n",
          d->socket, bench_programs_dir(), config ? config : "");
  fclose(f);

  d->pid = fork();
  if (d->pid < 0) die("fork failed: %s.", strerror(errno));
  if (d->pid == 0) exec_daemon(path, d->log, wrapper);
  t0 = bench_now_ns();
  while (!daemon_ready(d->socket)) {
    int status;
    if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
      print_log(d->log);
      die("ptod exited before it was ready (status %d); its log is above.", status);
    }
    if (bench_now_ns() - t0 > DAEMON_READY_TIMEOUT_NS) {
      print_log(d->log);
      kill(d->pid, SIGKILL);
      die("ptod was not ready within 60 s; its log is above.");
    }
    bench_sleep_us(2000);
  }
}

void bench_daemon_stop(bench_daemon_t *d) {
  char path[256];
  int status = 0;
  if (d->pid <= 0) return;
  kill(d->pid, SIGTERM);
  while (waitpid(d->pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    print_log(d->log);
    fprintf(stderr, "ptod did not exit cleanly (status %d); its log is above.\n", status);
  }
  d->pid = 0;
  unlink(d->log);
  snprintf(path, sizeof path, "%s/ptod.conf", d->dir);
  unlink(path);
  unlink(d->socket);
  rmdir(d->dir);
}

/* ---- sockets -------------------------------------------------------------- */

/* A Unix stream socket (close-on-exec) and path's address for it. */
static int unix_socket(const char *path, struct sockaddr_un *addr) {
  int fd;
  memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  if (strlen(path) >= sizeof addr->sun_path)
    die("The socket path '%s' is too long (at most %zu bytes).", path, sizeof addr->sun_path - 1);
  memcpy(addr->sun_path, path, strlen(path) + 1);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) die("Failed to create a Unix socket: %s.", strerror(errno));
  return fd;
}

int bench_connect_unix(const char *path) {
  struct sockaddr_un addr;
  int fd = unix_socket(path, &addr);
  if (connect(fd, (struct sockaddr *)&addr, sizeof addr) < 0)
    die("Failed to connect to '%s': %s.", path, strerror(errno));
  return fd;
}

int bench_listen_unix(const char *path, int backlog) {
  struct sockaddr_un addr;
  int fd = unix_socket(path, &addr);
  if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, backlog) < 0)
    die("Failed to listen on '%s': %s.", path, strerror(errno));
  return fd;
}

void bench_write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) {
      struct pollfd pf = {fd, POLLOUT, 0};
      poll(&pf, 1, 1000);
      continue;
    }
    if (n <= 0) die("Failed to write to a socket: %s.", n < 0 ? strerror(errno) : "wrote nothing");
    p += n;
    len -= (size_t)n;
  }
}

char *bench_capture_request(const pto_request_t *req, size_t cap, size_t *ret_len) {
  char dir[] = "/tmp/ptod-bench-cap-XXXXXX", path[64];
  proto_reader_t r;
  pto_client_t *c;
  pto_error_t err;
  size_t have = 0, len = 0;
  char *buf = malloc(cap);
  int lfd, fd;
  pid_t pid;

  if (!buf) die("Out of memory for a %zu-byte request.", cap);
  if (!mkdtemp(dir)) die("Failed to create a temporary directory: %s.", strerror(errno));
  snprintf(path, sizeof path, "%s/s", dir);
  lfd = bench_listen_unix(path, 1);
  if (pto_client_connect(path, 1000, &c, &err) < 0) die("Capture: %s", err.message);
  fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (fd < 0) die("Failed to accept on '%s': %s.", path, strerror(errno));
  pid = fork();
  if (pid < 0) die("fork failed: %s.", strerror(errno));
  if (pid == 0) {
    uint32_t msgid;
    close(fd);
    _exit(pto_client_send(c, req, 60000, &msgid, &err) < 0 ? 1 : 0);
  }
  proto_reader_init(&r, cap);
  for (;;) {
    struct pollfd p = {fd, POLLIN, 0};
    ssize_t n;
    int rc;
    if (poll(&p, 1, 60000) <= 0) die("Capture: libptoclient sent nothing within 60 s.");
    n = read(fd, buf + have, cap - have);
    if (n <= 0) die("Capture: the connection closed after %zu bytes.", have);
    have += (size_t)n;
    rc = proto_reader_feed(&r, buf, have, &len, NULL);
    if (rc < 0) die("Capture: libptoclient's %zu bytes are not one msgpack request.", have);
    if (rc == 1) break;
  }
  waitpid(pid, NULL, 0);
  pto_client_close(c);
  close(fd);
  close(lfd);
  unlink(path);
  rmdir(dir);
  *ret_len = len;
  return buf;
}

size_t bench_capture_noop(char *buf, size_t cap) {
  pto_dispatch_arg_t arg = pto_arg_int(1);
  pto_request_t noop = {.method = PTO_METHOD_DISPATCH,
                        .u.dispatch = {.program = "noop", .args = &arg, .nargs = 1}};
  size_t len;
  char *bytes = bench_capture_request(&noop, cap, &len);
  memcpy(buf, bytes, len);
  free(bytes);
  return len;
}

pid_t bench_peer_start(int *ret_fd, void (*serve)(int fd, void *arg), void *arg) {
  int sv[2];
  pid_t pid;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
    die("socketpair failed: %s.", strerror(errno));
  pid = fork();
  if (pid < 0) die("fork failed: %s.", strerror(errno));
  if (pid == 0) {
    close(sv[0]);
    serve(sv[1], arg);
    _exit(0);
  }
  close(sv[1]);
  *ret_fd = sv[0];
  return pid;
}

void bench_peer_stop(int fd, pid_t pid) {
  close(fd);
  while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
  }
}

/* ---- processes ------------------------------------------------------------ */

long bench_rss_kib(pid_t pid) {
  char path[64], line[256];
  long kib = -1;
  FILE *f;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  f = fopen(path, "r");
  if (!f) return -1;
  while (fgets(line, sizeof line, f))
    if (strncmp(line, "VmRSS:", 6) == 0) {
      char *end;
      kib = strtol(line + 6, &end, 10);
      break;
    }
  fclose(f);
  return kib;
}

/* Calls each(path of a thread's directory, sum) for every thread of pid
 * (none when the process is gone: sum stays as it was). */
static void for_each_thread(pid_t pid, void (*each)(const char *dir, uint64_t *sum),
                            uint64_t *sum) {
  char path[128];
  struct dirent *e;
  DIR *dir;
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  dir = opendir(path);
  if (!dir) return;
  while ((e = readdir(dir))) {
    char task[128 + sizeof e->d_name + 1];
    if (e->d_name[0] == '.') continue;
    snprintf(task, sizeof task, "%s/%s", path, e->d_name);
    each(task, sum);
  }
  closedir(dir);
}

/* Room for a thread's directory (for_each_thread) and a file name in it. */
#define TASK_FILE_MAX (128 + 256 + 1 + 16)

static void add_run_ns(const char *task, uint64_t *sum) {
  char file[TASK_FILE_MAX];
  unsigned long long run = 0;
  FILE *f;
  snprintf(file, sizeof file, "%s/schedstat", task);
  f = fopen(file, "r");
  if (!f) return;
  if (fscanf(f, "%llu", &run) == 1) *sum += run;
  fclose(f);
}

uint64_t bench_cpu_ns(pid_t pid) {
  uint64_t total = 0;
  for_each_thread(pid, add_run_ns, &total);
  return total;
}

/* sum[0] voluntary, sum[1] nonvoluntary. */
static void add_switches(const char *task, uint64_t *sum) {
  char file[TASK_FILE_MAX], line[128];
  FILE *f;
  snprintf(file, sizeof file, "%s/status", task);
  f = fopen(file, "r");
  if (!f) return;
  while (fgets(line, sizeof line, f)) {
    unsigned long long n;
    if (sscanf(line, "voluntary_ctxt_switches: %llu", &n) == 1) sum[0] += n;
    if (sscanf(line, "nonvoluntary_ctxt_switches: %llu", &n) == 1) sum[1] += n;
  }
  fclose(f);
}

void bench_switches(pid_t pid, uint64_t *ret_voluntary, uint64_t *ret_nonvoluntary) {
  uint64_t sum[2] = {0, 0};
  for_each_thread(pid, add_switches, sum);
  *ret_voluntary = sum[0];
  *ret_nonvoluntary = sum[1];
}

long bench_minflt(pid_t pid) {
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

long bench_self_minflt(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_minflt;
}
