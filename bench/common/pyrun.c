/* SPDX-License-Identifier: Apache-2.0 */
#include "pyrun.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define MAX_ARGS 16
#define OUT_CAP 4096

extern char **environ;

/* Start the interpreter with stdout into out_fd (and stdin from in_fd
 * unless it is -1) and the client on PYTHONPATH; other_fd and close_fd
 * (-1: none) are closed in the child.  posix_spawn, not fork: a fork write-protects every page of
 * this process, and the benchmark's next writes into its buffers (the
 * client's receive buffer among them) would each take a page fault that is
 * the fork's, not the client's. */
static pid_t spawn_python(int out_fd, int in_fd, int other_fd, int close_fd, const char *script,
                          const char *const *args) {
  const char *argv[MAX_ARGS + 4] = {"python3", "-c", script};
  char **envp, pythonpath[] = "PYTHONPATH=" PTOD_BENCH_PYTHONPATH;
  size_t n = 3, nenv = 0;
  posix_spawn_file_actions_t fa;
  pid_t pid = -1;
  int rc;
  for (size_t i = 0; args && args[i] && i < MAX_ARGS; i++) argv[n++] = args[i];
  argv[n] = NULL;
  while (environ[nenv]) nenv++;
  envp = calloc(nenv + 2, sizeof(*envp));
  if (!envp) return -1;
  n = 0;
  for (size_t i = 0; i < nenv; i++)
    if (strncmp(environ[i], "PYTHONPATH=", 11) != 0) envp[n++] = environ[i];
  envp[n++] = pythonpath;
  envp[n] = NULL;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, out_fd, 1);
  posix_spawn_file_actions_addclose(&fa, out_fd);
  posix_spawn_file_actions_addclose(&fa, other_fd);
  if (in_fd >= 0) {
    posix_spawn_file_actions_adddup2(&fa, in_fd, 0);
    posix_spawn_file_actions_addclose(&fa, in_fd);
  }
  if (close_fd >= 0) posix_spawn_file_actions_addclose(&fa, close_fd);
  rc = posix_spawn(&pid, PYTHON, &fa, NULL, (char *const *)argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  free(envp);
  if (rc != 0) {
    fprintf(stderr, "Failed to run '%s': %s.\n", PYTHON, strerror(rc));
    return -1;
  }
  return pid;
}

int bench_python(const char *script, const char *const *args, double *ret, size_t n) {
  char out[OUT_CAP], *p, *end;
  size_t have = 0, got = 0;
  int fds[2], status = 0;
  pid_t pid;

  if (pipe(fds) < 0) return -1;
  pid = spawn_python(fds[1], -1, fds[0], -1, script, args);
  close(fds[1]);
  if (pid < 0) {
    close(fds[0]);
    return -1;
  }
  /* Read to EOF (past what fits, so the child never blocks on a full pipe). */
  for (;;) {
    char rest[512];
    bool full = have == sizeof out - 1;
    ssize_t r = full ? read(fds[0], rest, sizeof rest)
                     : read(fds[0], out + have, sizeof out - 1 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (!full) have += (size_t)r;
  }
  out[have] = '\0';
  close(fds[0]);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  for (p = out; got < n; p = end) {
    ret[got] = strtod(p, &end);
    if (end == p) break;
    got++;
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got < n) {
    fprintf(stderr, "The Python client's row did not run (%s, status %d, %zu of %zu numbers); "
            "it printed:\n%s\n", PYTHON, status, got, n, out);
    return -1;
  }
  return (int)n;
}

int bench_pystep_start(bench_pystep_t *p, const char *script, const char *const *args) {
  int out[2], in[2];
  p->pid = -1;
  p->to = p->from = -1;
  /* Close-on-exec: another snippet started later must not hold this one's
   * stdin open (its end of input is its cue to exit). */
  if (pipe2(out, O_CLOEXEC) < 0) return -1;
  if (pipe2(in, O_CLOEXEC) < 0) {
    close(out[0]);
    close(out[1]);
    return -1;
  }
  p->pid = spawn_python(out[1], in[0], out[0], in[1], script, args);
  close(out[1]);
  close(in[0]);
  p->from = out[0];
  p->to = in[1];
  if (p->pid < 0) {
    bench_pystep_stop(p);
    return -1;
  }
  return 0;
}

int bench_pystep(bench_pystep_t *p, size_t n, size_t cols, double *ret) {
  char line[4096], asks[64], *at, *end;
  size_t have = 0, got = 0;
  ssize_t r;
  memset(asks, '\n', sizeof asks);
  if (n > sizeof asks) return -1;
  while ((r = write(p->to, asks, n)) < 0 && errno == EINTR) {
  }
  if (r != (ssize_t)n) return -1;
  for (at = line; got < n;) {
    char *nl = memchr(at, '\n', have - (size_t)(at - line));
    if (nl) { /* a whole line: its numbers */
      for (size_t c = 0; c < cols; c++, at = end) {
        ret[got * cols + c] = strtod(at, &end);
        if (end == at || end > nl) return -1;
      }
      got++;
      at = nl + 1;
      continue;
    }
    if (have == sizeof line - 1) return -1;
    r = read(p->from, line + have, sizeof line - 1 - have);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return -1;
    have += (size_t)r;
  }
  return 0;
}

int bench_pystep_stop(bench_pystep_t *p) {
  int status = 0;
  if (p->to >= 0) close(p->to);
  if (p->from >= 0) close(p->from);
  p->to = p->from = -1;
  if (p->pid < 0) return -1;
  while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR) {
  }
  p->pid = -1;
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}
