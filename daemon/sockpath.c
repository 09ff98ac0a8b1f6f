/* SPDX-License-Identifier: Apache-2.0 */
#include "sockpath.h"

#include <errno.h>
#include <stdbool.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"

#define SUN_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

static bool owner_trusted(uid_t uid) { return uid == 0 || uid == geteuid(); }

/* One component: a directory we or root own that nobody else can write
 * (unless sticky), or a link we or root own. */
static int check_component(const char *path, const struct stat *st, pto_error_t *err) {
  if (S_ISLNK(st->st_mode)) {
    if (!owner_trusted(st->st_uid))
      return pto_error_set(err, PTO_E_INVALID_CONFIG,
                           "'%s' on the way to the socket is a symbolic link of uid %u, who could "
                           "point it elsewhere; refusing to listen there. Set [daemon] socket to "
                           "a path without it.",
                           path, (unsigned)st->st_uid);
    return 0;
  }
  if (!S_ISDIR(st->st_mode))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "'%s' on the way to the socket is not a directory; refusing to listen "
                         "there.",
                         path);
  if (!owner_trusted(st->st_uid))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Directory '%s' on the way to the socket belongs to uid %u, not to this "
                         "daemon (uid %u) or root, who could replace the socket; refusing to "
                         "listen there. Set [daemon] socket to another path.",
                         path, (unsigned)st->st_uid, (unsigned)geteuid());
  if ((st->st_mode & 0022) && !(st->st_mode & S_ISVTX))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Directory '%s' on the way to the socket (mode %04o) is writable by "
                         "others, who could replace the socket; make it 0755 or tighter, or set "
                         "[daemon] socket to another path.",
                         path, (unsigned)(st->st_mode & 07777));
  return 0;
}

/* Every prefix of dir ("/", "/run", "/run/ptod"), lstat'ed: nothing
 * followed, so a link is judged as a link. */
static int check_prefixes(const char *dir, pto_error_t *err) {
  char prefix[PATH_MAX];
  size_t len = strlen(dir), last = 0;
  struct stat st;
  if (len >= sizeof(prefix))
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Socket directory '%s' is too long.", dir);
  for (size_t end = 0; end <= len; end++) {
    size_t n = end ? end : 1;
    int rc;
    if ((end < len && dir[end] != '/') || n == last || (end > 0 && dir[end - 1] == '/')) continue;
    memcpy(prefix, dir, n);
    prefix[n] = '\0';
    last = n;
    if (lstat(prefix, &st) < 0)
      return pto_error_set(err, PTO_E_INVALID_CONFIG,
                           "Cannot inspect '%s' on the way to the socket: %s.", prefix,
                           strerror(errno));
    rc = check_component(prefix, &st, err);
    if (rc < 0) return rc;
  }
  return 0;
}

/* The socket's own directory: a sticky bit keeps others from removing our
 * socket, not from binding the name while ptod restarts, nor from planting
 * a socket there for clients to find.  So nobody else may write it. */
static int check_parent(const char *dir, pto_error_t *err) {
  struct stat st;
  if (stat(dir, &st) < 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Cannot inspect socket directory '%s': %s.",
                         dir, strerror(errno));
  if (st.st_mode & 0022)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Socket directory '%s' (mode %04o) is writable by others, who could take "
                         "the socket's name while ptod restarts or plant one for clients; use a "
                         "directory of its own, 0755 or tighter (e.g. /run/ptod), for [daemon] "
                         "socket.",
                         dir, (unsigned)(st.st_mode & 07777));
  return 0;
}

int sockpath_check_dirs(const char *path, pto_error_t *err) {
  char dir[PATH_MAX], real[PATH_MAX];
  const char *slash = strrchr(path, '/');
  size_t n;
  int rc;
  if (path[0] != '/' || !slash)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Socket path '%s' is not absolute.", path);
  n = slash == path ? 1 : (size_t)(slash - path);
  if (n >= sizeof(dir))
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Socket path '%s' is too long.", path);
  memcpy(dir, path, n);
  dir[n] = '\0';
  /* As written (links judged by their owner), then as resolved (the
   * directories the links lead to). */
  rc = check_prefixes(dir, err);
  if (rc < 0) return rc;
  if (!realpath(dir, real))
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "Cannot resolve socket directory '%s': %s.",
                         dir, strerror(errno));
  rc = strcmp(real, dir) == 0 ? 0 : check_prefixes(real, err);
  return rc < 0 ? rc : check_parent(real, err);
}

static void fill_addr(struct sockaddr_un *addr, const char *path) {
  memset(addr, 0, sizeof(*addr));
  addr->sun_family = AF_UNIX;
  memcpy(addr->sun_path, path, strlen(path) + 1);
}

/* A socket file at path: a live daemon answers connect(), a dead one's file
 * refuses it.  Replace only the dead one's. */
static int clear_stale_socket(const char *path, pto_error_t *err) {
  struct stat st;
  struct sockaddr_un addr;
  int fd, rc, saved;

  if (lstat(path, &st) < 0) {
    if (errno == ENOENT) return 0;
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to inspect socket path '%s': %s.", path,
                         strerror(errno));
  }
  if (!S_ISSOCK(st.st_mode))
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "'%s' exists and is not a socket; refusing to replace it. Remove it or "
                         "set [daemon] socket to another path.",
                         path);
  fill_addr(&addr, path);
  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to create a socket: %s.", strerror(errno));
  rc = connect(fd, (struct sockaddr *)&addr, sizeof(addr));
  saved = errno;
  close(fd);
  if (rc == 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Another daemon is already serving on '%s'; stop it first or set "
                         "[daemon] socket to another path.",
                         path);
  if (saved != ECONNREFUSED)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to probe existing socket '%s': %s.", path,
                         strerror(saved));
  if (unlink(path) < 0 && errno != ENOENT)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to remove stale socket '%s': %s.", path,
                         strerror(errno));
  log_notice("Removed stale socket '%s' left by a daemon that is gone.", path);
  return 0;
}

/* The socket's directory, when it does not exist yet (e.g. /run/ptod
 * outside systemd, $XDG_RUNTIME_DIR/ptod). */
static int ensure_parent_dir(const char *path, pto_error_t *err) {
  char dir[SUN_PATH_MAX];
  char *slash;
  memcpy(dir, path, strlen(path) + 1);
  slash = strrchr(dir, '/');
  if (!slash || slash == dir) return 0;
  *slash = '\0';
  if (mkdir(dir, 0750) < 0 && errno != EEXIST)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to create socket directory '%s': %s.", dir,
                         strerror(errno));
  return 0;
}

int sockpath_bind(const char *path, unsigned mode, gid_t gid, int backlog, int *ret_fd,
                  pto_error_t *err) {
  struct sockaddr_un addr;
  mode_t old_umask;
  int fd, rc;

  if (!path || !*path)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "No socket path is configured.");
  if (strlen(path) >= SUN_PATH_MAX)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Socket path '%s' is %zu bytes; a Unix socket path must be under %zu.",
                         path, strlen(path), SUN_PATH_MAX);
  if ((rc = ensure_parent_dir(path, err)) < 0 || (rc = sockpath_check_dirs(path, err)) < 0 ||
      (rc = clear_stale_socket(path, err)) < 0)
    return rc;

  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to create a socket: %s.", strerror(errno));
  fill_addr(&addr, path);
  /* Create the file owner-only, then open it up to the configured mode: no
   * moment where it is wider than asked for. */
  old_umask = umask(0177);
  rc = bind(fd, (struct sockaddr *)&addr, sizeof(addr));
  umask(old_umask);
  if (rc < 0) {
    rc = pto_error_set(err, PTO_E_INTERNAL, "Failed to bind '%s': %s.", path, strerror(errno));
    close(fd);
    return rc;
  }
  if (gid != (gid_t)-1 && chown(path, (uid_t)-1, gid) < 0)
    rc = pto_error_set(err, PTO_E_INTERNAL, "Failed to give socket '%s' group %u: %s.", path,
                       (unsigned)gid, strerror(errno));
  else if (chmod(path, mode & 0777) < 0)
    rc = pto_error_set(err, PTO_E_INTERNAL, "Failed to set mode %04o on socket '%s': %s.", mode,
                       path, strerror(errno));
  else if (listen(fd, backlog) < 0)
    rc = pto_error_set(err, PTO_E_INTERNAL, "Failed to listen on '%s': %s.", path,
                       strerror(errno));
  if (rc < 0) {
    unlink(path);
    close(fd);
    return rc;
  }
  *ret_fd = fd;
  return 0;
}
