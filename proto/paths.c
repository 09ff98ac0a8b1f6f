/* The built-in socket path of proto/paths.h. */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int pto_socket_path_for(uid_t euid, const char *xdg_runtime_dir, int device, char *buf,
                        size_t len) {
  if (buf && len) buf[0] = '\0';
  if (device < 0 || device > 255) return -EINVAL;
  if (!buf || len == 0) return -ENAMETOOLONG;
  int n;
  if (euid == 0)
    n = snprintf(buf, len, "/run/ptod/ptod%d.sock", device);
  else if (xdg_runtime_dir && xdg_runtime_dir[0] == '/')
    n = snprintf(buf, len, "%s/ptod/ptod%d.sock", xdg_runtime_dir, device);
  else
    n = snprintf(buf, len, "/tmp/ptod-%u/ptod%d.sock", (unsigned)euid, device);
  if (n < 0 || (size_t)n >= len || n >= PTO_SOCKET_PATH_MAX) {
    buf[0] = '\0';
    return -ENAMETOOLONG;
  }
  return 0;
}

int pto_default_socket_path(int device, char *buf, size_t len) {
  return pto_socket_path_for(geteuid(), getenv("XDG_RUNTIME_DIR"), device, buf, len);
}
