/* SPDX-License-Identifier: Apache-2.0 */
/* The built-in socket path of proto/paths.h. */
#include "paths.h"

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
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

static bool owned_by(uid_t uid, const uid_t *owners, size_t nowners) {
  for (size_t i = 0; i < nowners; i++)
    if (owners[i] == uid) return true;
  return false;
}

/* lstat path: ABSENT when nothing is there, DENIED when we may not look. */
static pto_socket_trust_t look(const char *path, struct stat *st) {
  if (lstat(path, st) == 0) return PTO_SOCKET_TRUSTED;
  return errno == EACCES ? PTO_SOCKET_DENIED : PTO_SOCKET_ABSENT;
}

/* One of path's checks failed: say which in why. */
static pto_socket_trust_t untrusted(char *why, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static pto_socket_trust_t untrusted(char *why, size_t len, const char *fmt, ...) {
  va_list ap;
  if (why && len) {
    va_start(ap, fmt);
    vsnprintf(why, len, fmt, ap);
    va_end(ap);
  }
  return PTO_SOCKET_UNTRUSTED;
}

pto_socket_trust_t pto_socket_trust(const char *path, const uid_t *owners, size_t nowners,
                                    char *why, size_t len) {
  char dir[PTO_SOCKET_PATH_MAX];
  const char *slash = strrchr(path, '/');
  struct stat st;
  pto_socket_trust_t t;
  size_t n = slash ? (size_t)(slash - path) : 0;
  if (why && len) why[0] = '\0';
  if (n == 0 || n >= sizeof dir) return untrusted(why, len, "'%s' is not a socket path.", path);
  memcpy(dir, path, n);
  dir[n] = '\0';
  if ((t = look(dir, &st)) != PTO_SOCKET_TRUSTED) return t;
  if (!S_ISDIR(st.st_mode))
    return untrusted(why, len, "'%s' is not a directory (a symbolic link or a file).", dir);
  if (!owned_by(st.st_uid, owners, nowners))
    return untrusted(why, len, "its directory '%s' belongs to uid %u.", dir, (unsigned)st.st_uid);
  if (st.st_mode & 0022)
    return untrusted(why, len, "its directory '%s' (mode %04o) is writable by others.", dir,
                     (unsigned)(st.st_mode & 07777));
  if ((t = look(path, &st)) != PTO_SOCKET_TRUSTED) return t;
  if (!S_ISSOCK(st.st_mode)) return untrusted(why, len, "'%s' is not a socket.", path);
  if (!owned_by(st.st_uid, owners, nowners))
    return untrusted(why, len, "the socket belongs to uid %u.", (unsigned)st.st_uid);
  return PTO_SOCKET_TRUSTED;
}

/* The uids a client trusts for the system path: root and the daemon's. */
static size_t system_owners(uid_t owners[2]) {
  struct passwd pw, *res = NULL;
  char buf[1024];
  owners[0] = 0;
  if (getpwnam_r(PTO_DAEMON_USER, &pw, buf, sizeof buf, &res) == 0 && res) {
    owners[1] = pw.pw_uid;
    return 2;
  }
  return 1;
}

/* Judge one candidate; an untrusted one adds its sentence to skipped. */
static pto_socket_trust_t judge(const char *path, const uid_t *owners, size_t nowners,
                                char *skipped, size_t len) {
  char why[256];
  size_t used;
  pto_socket_trust_t t = pto_socket_trust(path, owners, nowners, why, sizeof why);
  if (t != PTO_SOCKET_UNTRUSTED || !skipped || !len) return t;
  used = strlen(skipped);
  snprintf(skipped + used, len - used, "%sSkipped the socket '%s', which this user cannot trust: %s",
           used ? " " : "", path, why);
  return t;
}

static void set_path(char *buf, size_t len, const char *path) {
  snprintf(buf, len, "%s", path);
}

int pto_find_socket_path(int device, char *buf, size_t len, char *ret_skipped,
                         size_t skipped_len) {
  char own[PTO_SOCKET_PATH_MAX], sys[PTO_SOCKET_PATH_MAX];
  uid_t euid = geteuid(), owners[2];
  size_t nsys = system_owners(owners);
  pto_socket_trust_t t_own, t_sys;
  /* RUNTIME_DIRECTORY is the daemon's business: in a client it names the
   * client's own service directory. */
  int rc = pto_socket_path_for(euid, NULL, getenv("XDG_RUNTIME_DIR"), device, own, sizeof own);
  if (ret_skipped && skipped_len) ret_skipped[0] = '\0';
  if (rc == 0 && strlen(own) >= len) rc = -ENAMETOOLONG;
  if (rc < 0) {
    if (buf && len) buf[0] = '\0';
    return rc;
  }
  (void)pto_socket_path_for(0, NULL, NULL, device, sys, sizeof sys);
  t_own = strcmp(own, sys) == 0 ? judge(own, owners, nsys, ret_skipped, skipped_len)
                                 : judge(own, &euid, 1, ret_skipped, skipped_len);
  if (t_own == PTO_SOCKET_TRUSTED || t_own == PTO_SOCKET_DENIED || strcmp(own, sys) == 0) {
    set_path(buf, len, t_own == PTO_SOCKET_UNTRUSTED ? "" : own);
    return t_own == PTO_SOCKET_UNTRUSTED ? -EPERM : 0;
  }
  t_sys = judge(sys, owners, nsys, ret_skipped, skipped_len);
  if (t_sys == PTO_SOCKET_TRUSTED || t_sys == PTO_SOCKET_DENIED) {
    set_path(buf, len, sys);
    return 0;
  }
  if (t_own == PTO_SOCKET_ABSENT) {
    set_path(buf, len, own);
    return 0;
  }
  set_path(buf, len, t_sys == PTO_SOCKET_ABSENT ? sys : "");
  return t_sys == PTO_SOCKET_ABSENT ? 0 : -EPERM;
}
