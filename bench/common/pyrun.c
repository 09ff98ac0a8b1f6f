#include "pyrun.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define PYTHON "/usr/bin/python3"
#define MAX_ARGS 16
#define OUT_CAP 4096

/* The child: stdout into the pipe, the client on PYTHONPATH, exec. */
static void exec_python(int out_fd, const char *script, const char *const *args) {
  const char *argv[MAX_ARGS + 4] = {"python3", "-c", script};
  size_t n = 3;
  for (size_t i = 0; args && args[i] && i < MAX_ARGS; i++) argv[n++] = args[i];
  argv[n] = NULL;
  dup2(out_fd, 1);
  setenv("PYTHONPATH", PTOD_BENCH_PYTHONPATH, 1);
  execv(PYTHON, (char *const *)argv);
  fprintf(stderr, "Failed to run '%s': %s.\n", PYTHON, strerror(errno));
  _exit(127);
}

int bench_python(const char *script, const char *const *args, double *ret, size_t n) {
  char out[OUT_CAP], *p, *end;
  size_t have = 0, got = 0;
  int fds[2], status = 0;
  pid_t pid;

  if (pipe(fds) < 0) return -1;
  pid = fork();
  if (pid < 0) {
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  if (pid == 0) {
    close(fds[0]);
    exec_python(fds[1], script, args);
  }
  close(fds[1]);
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
