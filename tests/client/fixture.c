/* SPDX-License-Identifier: Apache-2.0 */
/* The client tests' fixture: a real daemon, files, child processes. */
#include "fixture.h"

#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static void sleep_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void tmkdtemp(char *buf, size_t len) {
  snprintf(buf, len, "/tmp/ptoc-XXXXXX");
  ck_assert_msg(mkdtemp(buf) != NULL, "mkdtemp: %s", strerror(errno));
}

void trmtree(const char *dir) {
  DIR *d = opendir(dir);
  struct dirent *e;
  if (!d) return;
  for (;;) {
    char path[512];
    struct stat st;
    e = readdir(d);
    if (!e) break;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode))
      trmtree(path);
    else
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

void twrite_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_msg(f != NULL, "cannot write '%s': %s", path, strerror(errno));
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

char *tread_file(const char *path, size_t *ret_len) {
  FILE *f = fopen(path, "rb");
  char *buf = NULL;
  size_t len = 0, cap = 0, n;
  ck_assert_msg(f != NULL, "cannot read '%s': %s", path, strerror(errno));
  do {
    if (cap - len < 4096) {
      cap = cap ? cap * 2 : 8192;
      buf = realloc(buf, cap);
      ck_assert_ptr_nonnull(buf);
    }
    n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
  } while (n > 0);
  fclose(f);
  buf[len] = '\0';
  if (ret_len) *ret_len = len;
  return buf;
}

/* --- the daemon --------------------------------------------------------- */

typedef struct ini_key {
  const char *section, *key;
  char value[256];
} ini_key_t;

static void write_config(const tdaemon_t *d, const char *const *overrides) {
  ini_key_t keys[48] = {
      {"daemon", "socket", ""},       {"device", "programs", PTOD_BUILD_PROGRAMS_DIR},
      {"device", "memory", "1G"},     {"device", "cores", "2"},
      {"ring", "task_window", "256"}, {"ring", "heap", "1M"},
      {"ring", "dep_pool", "1024"},
  };
  static char names[48][2][64];
  size_t n = 7;
  const char *sections[] = {"daemon", "device", "ring", "prewarm"};
  FILE *f;
  snprintf(keys[0].value, sizeof(keys[0].value), "%s", d->socket);
  for (size_t o = 0; overrides && overrides[o]; o++) {
    const char *dot = strchr(overrides[o], '.'), *eq = strchr(overrides[o], '=');
    size_t i;
    ck_assert_msg(dot && eq && dot < eq, "bad override '%s'", overrides[o]);
    snprintf(names[o][0], sizeof(names[o][0]), "%.*s", (int)(dot - overrides[o]), overrides[o]);
    snprintf(names[o][1], sizeof(names[o][1]), "%.*s", (int)(eq - dot - 1), dot + 1);
    for (i = 0; i < n; i++)
      if (strcmp(keys[i].section, names[o][0]) == 0 && strcmp(keys[i].key, names[o][1]) == 0) break;
    if (i == n) {
      ck_assert_uint_lt(n, 48);
      keys[n].section = names[o][0];
      keys[n].key = names[o][1];
      n++;
    }
    snprintf(keys[i].value, sizeof(keys[i].value), "%s", eq + 1);
  }
  f = fopen(d->config, "w");
  ck_assert_ptr_nonnull(f);
  for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
    bool any = false;
    for (size_t i = 0; i < n; i++) {
      if (strcmp(keys[i].section, sections[s]) != 0) continue;
      if (!any) fprintf(f, "[%s]\n", sections[s]);
      any = true;
      fprintf(f, "%s = %s\n", keys[i].key, keys[i].value);
    }
  }
  ck_assert_int_eq(fclose(f), 0);
}

static void dump_log(const tdaemon_t *d) {
  size_t len;
  char *log = tread_file(d->log, &len);
  fprintf(stderr, "--- %s ---\n%s--- end of log ---\n", d->log, log);
  free(log);
}

static bool socket_accepts(const char *path) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0), rc;
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%.100s", path);
  rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
  close(fd);
  return rc == 0;
}

void tdaemon_start(tdaemon_t *d, const char *const *overrides) {
  char ptod[512];
  long deadline;
  memset(d, 0, sizeof(*d));
  tmkdtemp(d->dir, sizeof(d->dir));
  snprintf(d->socket, sizeof(d->socket), "%s/ptod.sock", d->dir);
  snprintf(d->config, sizeof(d->config), "%s/ptod.conf", d->dir);
  snprintf(d->log, sizeof(d->log), "%s/ptod.log", d->dir);
  snprintf(ptod, sizeof(ptod), "%s/daemon/ptod", PTOD_BINARY_DIR);
  write_config(d, overrides);

  d->pid = fork();
  ck_assert_int_ge(d->pid, 0);
  if (d->pid == 0) {
    int fd = open(d->log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (fd >= 0) {
      dup2(fd, 1);
      dup2(fd, 2);
    }
    /* The sizing sources the tests expect are config and request only. */
    unsetenv("PTO2_RING_TASK_WINDOW");
    unsetenv("PTO2_RING_HEAP");
    unsetenv("PTO2_RING_DEP_POOL");
    unsetenv("NOTIFY_SOCKET");
    execl(ptod, ptod, "--config", d->config, (char *)NULL);
    _exit(127);
  }
  deadline = now_ms() + 60000;
  for (;;) {
    int status;
    if (socket_accepts(d->socket)) return;
    if (waitpid(d->pid, &status, WNOHANG) == d->pid) {
      d->pid = 0;
      dump_log(d);
      ck_abort_msg("ptod exited during start-up (status 0x%x); its log is above", status);
    }
    if (now_ms() > deadline) {
      dump_log(d);
      ck_abort_msg("ptod did not accept on '%s' within 60 s", d->socket);
    }
    sleep_ms(5);
  }
}

void tdaemon_kill(tdaemon_t *d) {
  if (d->pid > 0) {
    kill(d->pid, SIGKILL);
    waitpid(d->pid, NULL, 0);
    d->pid = 0;
  }
}

void tdaemon_stop(tdaemon_t *d) {
  if (d->pid > 0) {
    long deadline = now_ms() + 30000;
    kill(d->pid, SIGTERM);
    for (;;) {
      if (waitpid(d->pid, NULL, WNOHANG) == d->pid) break;
      if (now_ms() > deadline) {
        kill(d->pid, SIGKILL);
        waitpid(d->pid, NULL, 0);
        break;
      }
      sleep_ms(5);
    }
    d->pid = 0;
  }
  if (d->dir[0]) trmtree(d->dir);
  d->dir[0] = '\0';
}

/* --- child processes ------------------------------------------------------- */

typedef struct sink {
  int fd;
  char *buf;
  size_t len, cap;
} sink_t;

static bool sink_read(sink_t *s) {
  char tmp[65536];
  ssize_t n = read(s->fd, tmp, sizeof(tmp));
  if (n < 0 && errno == EINTR) return true;
  if (n <= 0) {
    close(s->fd);
    s->fd = -1;
    return false;
  }
  if (s->len + (size_t)n + 1 > s->cap) {
    while (s->len + (size_t)n + 1 > s->cap) s->cap = s->cap ? s->cap * 2 : 65536;
    s->buf = realloc(s->buf, s->cap);
    ck_assert_ptr_nonnull(s->buf);
  }
  memcpy(s->buf + s->len, tmp, (size_t)n);
  s->len += (size_t)n;
  return true;
}

int trun(const char *const *argv, const char *const *env, char **ret_out, char **ret_err) {
  int out[2], err[2], status;
  sink_t sinks[2];
  pid_t pid;
  ck_assert_int_eq(pipe2(out, O_CLOEXEC), 0);
  ck_assert_int_eq(pipe2(err, O_CLOEXEC), 0);
  pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDONLY);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    dup2(devnull, 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (size_t i = 0; env && env[i]; i++) putenv((char *)(uintptr_t)env[i]);
    execve(argv[0], (char *const *)(uintptr_t)argv, environ);
    fprintf(stderr, "cannot run '%s': %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  memset(sinks, 0, sizeof(sinks));
  sinks[0].fd = out[0];
  sinks[1].fd = err[0];
  while (sinks[0].fd >= 0 || sinks[1].fd >= 0) {
    struct pollfd p[2] = {{.fd = sinks[0].fd, .events = POLLIN},
                          {.fd = sinks[1].fd, .events = POLLIN}};
    if (poll(p, 2, -1) < 0) {
      ck_assert_int_eq(errno, EINTR);
      continue;
    }
    for (int i = 0; i < 2; i++)
      if (sinks[i].fd >= 0 && p[i].revents) sink_read(&sinks[i]);
  }
  ck_assert_int_eq(waitpid(pid, &status, 0), pid);
  for (int i = 0; i < 2; i++) {
    if (!sinks[i].buf) {
      sinks[i].buf = malloc(1);
      ck_assert_ptr_nonnull(sinks[i].buf);
    }
    sinks[i].buf[sinks[i].len] = '\0';
  }
  if (ret_out)
    *ret_out = sinks[0].buf;
  else
    free(sinks[0].buf);
  if (ret_err)
    *ret_err = sinks[1].buf;
  else
    free(sinks[1].buf);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void tpeer_open(tpeer_t *p, pto_client_t **ret_client) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  pto_error_t err;
  memset(p, 0, sizeof(*p));
  tmkdtemp(p->dir, sizeof(p->dir));
  snprintf(p->path, sizeof(p->path), "%s/fake.sock", p->dir);
  snprintf(addr.sun_path, sizeof(addr.sun_path), "%s", p->path);
  p->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (p->listen_fd < 0 || bind(p->listen_fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
      listen(p->listen_fd, 4) != 0)
    ck_abort_msg("fake daemon socket '%s': %s", p->path, strerror(errno));
  /* connect() completes from the backlog, before the accept. */
  if (pto_client_connect(p->path, WAIT_MS, ret_client, &err) != 0) ck_abort_msg("%s", err.message);
  p->fd = accept(p->listen_fd, NULL, NULL);
  if (p->fd < 0) ck_abort_msg("accept: %s", strerror(errno));
}

void tpeer_close(tpeer_t *p) {
  close(p->fd);
  close(p->listen_fd);
  trmtree(p->dir);
}
