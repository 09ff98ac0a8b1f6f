/* SPDX-License-Identifier: Apache-2.0 */
/* closer.c — the helper thread of closer.h. */
#include "closer.h"
#include "quiet_thread.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int *queue; /* fds to close, [0, queued); the thread takes the last */
static size_t queued, cap;
static uint64_t pending; /* queued, plus the one being closed */
static bool started;

static void *closer_main(void *arg) {
  (void)arg;
  pthread_setname_np(pthread_self(), "ptod-closer");
  pthread_mutex_lock(&lock);
  for (;;) {
    while (queued == 0) pthread_cond_wait(&wake, &lock);
    int fd = queue[--queued];
    pthread_mutex_unlock(&lock);
    close(fd);
    pthread_mutex_lock(&lock);
    pending--;
  }
  return NULL;
}

/* Lock held: the thread runs and the queue has room for one more. */
static bool ready_for_one(void) {
  if (!started) {
    pthread_t thread;
    pthread_attr_t attr;
    if (pthread_attr_init(&attr) != 0) return false;
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    started = quiet_thread_create(&thread, &attr, closer_main, NULL) == 0;
    pthread_attr_destroy(&attr);
    if (!started) return false;
  }
  if (queued == cap) {
    size_t grown_cap = cap ? cap * 2 : 64;
    int *grown = realloc(queue, grown_cap * sizeof(*queue));
    if (!grown) return false;
    queue = grown;
    cap = grown_cap;
  }
  return true;
}

void closer_close(int fd) {
  static const struct linger abort_close = {1, 0};
  if (fd < 0) return;
  pthread_mutex_lock(&lock);
  if (ready_for_one()) {
    queue[queued++] = fd;
    pending++;
    pthread_cond_signal(&wake);
    pthread_mutex_unlock(&lock);
    return;
  }
  pthread_mutex_unlock(&lock);
  /* No thread: a socket is reset instead of lingering, then closed here. */
  (void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &abort_close, sizeof(abort_close));
  close(fd);
}

bool closer_is_memfd(int fd) { return fcntl(fd, F_GET_SEALS) >= 0; }

uint64_t closer_pending(void) {
  pthread_mutex_lock(&lock);
  uint64_t n = pending;
  pthread_mutex_unlock(&lock);
  return n;
}
