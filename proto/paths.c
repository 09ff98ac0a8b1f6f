/* The built-in socket path of proto/paths.h. */
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pto_socket_path_for(uid_t euid, const char *service_dir, const char *xdg_runtime_dir,
                        int device, char *buf, size_t len) {
  int n;
  if (buf && len) buf[0] = '\0';
  if (device < 0 || device > 255) return -EINVAL;
  if (!buf || len == 0) return -ENAMETOOLONG;
  if (euid == 0)
    n = snprintf(buf, len, "/run/ptod/ptod%d.sock", device);
  /* systemd sets RUNTIME_DIRECTORY for a service with RuntimeDirectory=; a
   * list (several directories) is not ours to pick from. */
  else if (service_dir && service_dir[0] == '/' && !strchr(service_dir, ':'))
    n = snprintf(buf, len, "%s/ptod%d.sock", service_dir, device);
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
  return pto_socket_path_for(geteuid(), getenv("RUNTIME_DIRECTORY"), getenv("XDG_RUNTIME_DIR"),
                             device, buf, len);
}

static int is_socket(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

int pto_find_socket_path(int device, char *buf, size_t len) {
  char system_path[PTO_SOCKET_PATH_MAX];
  /* RUNTIME_DIRECTORY is the daemon's business: in a client it names the
   * client's own service directory. */
  int rc = pto_socket_path_for(geteuid(), NULL, getenv("XDG_RUNTIME_DIR"), device, buf, len);
  if (rc < 0 || is_socket(buf)) return rc;
  if (pto_socket_path_for(0, NULL, NULL, device, system_path, sizeof(system_path)) == 0 &&
      is_socket(system_path) && strlen(system_path) < len)
    memcpy(buf, system_path, strlen(system_path) + 1);
  return 0;
}
