/* SPDX-License-Identifier: Apache-2.0 */
#include "notify.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define LISTEN_FDS_START 3

int notify_send(const char *state) {
  const char *path = getenv("NOTIFY_SOCKET");
  struct sockaddr_un addr;
  size_t path_len;
  socklen_t addr_len;
  ssize_t sent;
  int fd;

  if (!path || !*path) return 0;
  path_len = strlen(path);
  if ((path[0] != '/' && path[0] != '@') || path_len >= sizeof(addr.sun_path)) return -EINVAL;

  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, path, path_len);
  if (path[0] == '@') addr.sun_path[0] = '\0'; /* abstract namespace */
  addr_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + path_len);

  fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -errno;
  sent = sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&addr, addr_len);
  if (sent < 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  close(fd);
  return 0;
}

int notify_sendf(const char *fmt, ...) {
  char state[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(state, sizeof(state), fmt, ap);
  va_end(ap);
  return notify_send(state);
}

int notify_reloading(void) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return notify_sendf("RELOADING=1\nMONOTONIC_USEC=%" PRIu64,
                      (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u);
}

/* A decimal number from the environment; 0 when unset or malformed. */
static uint64_t env_u64(const char *name) {
  const char *text = getenv(name);
  char *end;
  unsigned long long value;
  if (!text || !*text) return 0;
  errno = 0;
  value = strtoull(text, &end, 10);
  if (errno || *end) return 0;
  return value;
}

uint64_t notify_watchdog_usec(void) {
  uint64_t pid = env_u64("WATCHDOG_PID");
  if (getenv("WATCHDOG_PID") && pid != (uint64_t)getpid()) return 0;
  return env_u64("WATCHDOG_USEC");
}

int notify_listen_fd(int *ret_fd) {
  uint64_t pid = env_u64("LISTEN_PID");
  uint64_t count = env_u64("LISTEN_FDS");
  int fd = LISTEN_FDS_START, type = 0, listening = 0, flags;
  socklen_t len;
  struct sockaddr_storage addr;

  unsetenv("LISTEN_PID");
  unsetenv("LISTEN_FDS");
  unsetenv("LISTEN_FDNAMES");
  if (pid != (uint64_t)getpid() || count == 0) return 0;
  if (count > 1) return -E2BIG;

  flags = fcntl(fd, F_GETFD);
  if (flags < 0) return -errno;
  if (fcntl(fd, F_SETFD, flags | FD_CLOEXEC) < 0) return -errno;

  len = sizeof(type);
  if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) < 0) return -errno;
  len = sizeof(listening);
  if (getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) < 0) return -errno;
  len = sizeof(addr);
  if (getsockname(fd, (struct sockaddr *)&addr, &len) < 0) return -errno;
  if (type != SOCK_STREAM || !listening || addr.ss_family != AF_UNIX) return -EINVAL;
  *ret_fd = fd;
  return 1;
}
