/* SPDX-License-Identifier: Apache-2.0 */
/* quiet_thread.h — threads that take no asynchronous signal.
 *
 * ptod handles SIGTERM, SIGINT and SIGHUP on its loop thread (libuv's
 * handlers), and the kernel gives a signal sent to the process to any
 * thread that does not block it.  Every other thread ptod starts (the
 * runtime's workers, the device thread, the closer, the metrics server's,
 * the simulator's populate threads) blocks every asynchronous signal from
 * its first instruction, so a signal for the process always reaches the
 * loop.  The faults a thread causes itself (SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL, SIGTRAP, SIGSYS, SIGABRT) stay open: blocked, the kernel would
 * kill without the sanitizers' report.
 *
 * Why it matters: a handler that runs on a worker parked in a raw futex
 * wait is fine in itself, but ThreadSanitizer defers a signal that reaches
 * such a thread until the thread wakes, and an idle daemon's workers never
 * do: the daemon ignored SIGTERM for good.  Lower in the tree than the
 * runtime so that the simulator uses it too; header only.
 */
#ifndef PTOD_QUIET_THREAD_H
#define PTOD_QUIET_THREAD_H

#include <pthread.h>
#include <signal.h>

/* The asynchronous signals: every signal but a thread's own faults. */
static inline void quiet_signals(sigset_t *set) {
  static const int faults[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS, SIGABRT};
  sigfillset(set);
  for (unsigned i = 0; i < sizeof faults / sizeof faults[0]; i++) sigdelset(set, faults[i]);
}

/* pthread_create with every asynchronous signal blocked in the new thread
 * from its start.  attr may be NULL (defaults); it is changed (its signal
 * mask), not destroyed.  Returns pthread_create's error number. */
static inline int quiet_thread_create(pthread_t *thread, pthread_attr_t *attr,
                                      void *(*start)(void *), void *arg) {
  pthread_attr_t defaults;
  sigset_t set;
  int rc;

  if (!attr) {
    rc = pthread_attr_init(&defaults);
    if (rc != 0) return rc;
  }
  quiet_signals(&set);
  rc = pthread_attr_setsigmask_np(attr ? attr : &defaults, &set);
  if (rc == 0) rc = pthread_create(thread, attr ? attr : &defaults, start, arg);
  if (!attr) pthread_attr_destroy(&defaults);
  return rc;
}

#endif
