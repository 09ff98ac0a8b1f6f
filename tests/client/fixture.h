/* SPDX-License-Identifier: Apache-2.0 */
/* fixture.h — what the client tests share: a real ptod on a temporary
 * socket, and running a program with its output captured.
 *
 * Every helper aborts the test (ck_abort_msg) when the fixture itself
 * fails, so a test body only asserts on client behaviour.
 */
#ifndef CLIENT_TEST_FIXTURE_H
#define CLIENT_TEST_FIXTURE_H

#include <stddef.h>
#include <sys/types.h>

#include <pto/client.h>

/* The timeout of every call a test makes that is not about timeouts: none.
 * A loaded machine (a sanitizer, parallel tests) is slow, not hung; the
 * Check case's timeout catches a hang. */
#define WAIT_MS (-1)

typedef struct tdaemon {
  pid_t pid;        /* 0 once stopped */
  char dir[64];     /* the daemon's temporary directory */
  char socket[128]; /* dir/ptod.sock */
  char config[128]; /* dir/ptod.conf */
  char log[128];    /* dir/ptod.log: its stderr */
} tdaemon_t;

/* Start build/daemon/ptod on a temporary socket with the test config
 *   [daemon] socket = <dir>/ptod.sock
 *   [device] programs = PTOD_BUILD_PROGRAMS_DIR, memory = 1G, cores = 2
 *   [ring]   task_window = 256, heap = 1M, dep_pool = 1024
 * where each "section.key=value" of overrides (NULL-terminated, may be
 * NULL) replaces or adds one key.  Returns once the socket accepts.  The
 * daemon gets SIGKILL if the test process dies first. */
void tdaemon_start(tdaemon_t *d, const char *const *overrides);
/* SIGTERM, wait for it, remove its directory. */
void tdaemon_stop(tdaemon_t *d);
/* SIGKILL and reap it (the directory stays until tdaemon_stop). */
void tdaemon_kill(tdaemon_t *d);

/* A socket the test itself answers on (a scripted daemon) and the client
 * connected to it: fd is the test's end of the connection.  Close with
 * tpeer_close (after pto_client_close). */
typedef struct tpeer {
  char dir[64], path[96];
  int listen_fd, fd;
} tpeer_t;
void tpeer_open(tpeer_t *p, pto_client_t **ret_client);
void tpeer_close(tpeer_t *p);

/* A temporary directory (mkdtemp) for test files; remove with trmtree. */
void tmkdtemp(char *buf, size_t len);
void trmtree(const char *dir);
/* Write / read a whole file (read: malloc'ed, NUL-terminated, *ret_len
 * without the NUL). */
void twrite_file(const char *path, const void *data, size_t len);
char *tread_file(const char *path, size_t *ret_len);

/* Run argv[0] (a path) with argv, extra environment entries "K=V" (NULL-
 * terminated, may be NULL), stdout and stderr captured (malloc'ed, NUL-
 * terminated; free them).  Returns the exit status, or 128 + signal. */
int trun(const char *const *argv, const char *const *env, char **ret_out, char **ret_err);

#endif
