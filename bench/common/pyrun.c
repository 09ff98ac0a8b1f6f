/* SPDX-License-Identifier: Apache-2.0 */
#include "pyrun.h"

#include <errno.h>
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

/* Start the interpreter with stdout into out_fd and the client on
 * PYTHONPATH.  posix_spawn, not fork: a fork write-protects every page of
 * this process, and the benchmark's next writes into its buffers (the
 * client's receive buffer among them) would each take a page fault that is
 * the fork's, not the client's. */
static pid_t spawn_python(int out_fd, int other_fd, const char *script, const char *const *args) {
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
  pid = spawn_python(fds[1], fds[0], script, args);
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
