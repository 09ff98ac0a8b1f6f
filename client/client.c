/* SPDX-License-Identifier: Apache-2.0 */
/* The connection: connect and close, and what a connection says about
 * itself (pto/client.h).  Its requests are pending.c's, its reading
 * receive.c's, its writing send.c's (connection.h). */
#include <errno.h>
#include <grp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "connection.h"
#include "paths.h"

/* The largest answer accepted: a buffer.read of the largest buffer the
 * protocol allows, plus its envelope. */
#define CLIENT_MAX_MESSAGE ((size_t)PROTO_BYTES_MAX + (1u << 20))
/* How often to retry a connect() that found the listen backlog full. */
#define CONNECT_RETRY_MS 10

/* --- time ----------------------------------------------------------------- */

int64_t client_now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t client_deadline(int timeout_ms) {
  return timeout_ms < 0 ? CLIENT_FOREVER : client_now_ms() + timeout_ms;
}

int conn_poll_timeout(int64_t deadline) {
  int64_t left;
  if (deadline == CLIENT_FOREVER) return -1;
  left = deadline - client_now_ms();
  if (left <= 0) return 0;
  return left > 1000000 ? 1000000 : (int)left;
}

/* --- connect ------------------------------------------------------------------------ */

/* Whether this process is in group gid (effective or supplementary). */
static bool in_group(gid_t gid) {
  gid_t groups[256];
  int n = getgroups(256, groups);
  if (gid == getegid()) return true;
  for (int i = 0; i < n; i++)
    if (groups[i] == gid) return true;
  return n < 0; /* cannot tell: do not claim otherwise */
}

/* EACCES on path: when the group of its directory is one this process is
 * not in, name it in group (len bytes) and return true. */
static bool denied_by_group(const char *path, char *group, size_t len) {
  char dir[PTO_SOCKET_PATH_MAX];
  const char *slash = strrchr(path, '/');
  struct group gr, *res = NULL;
  char buf[1024];
  struct stat st;
  size_t n = slash ? (size_t)(slash - path) : 0;
  if (n == 0 || n >= sizeof dir) return false;
  memcpy(dir, path, n);
  dir[n] = '\0';
  if (stat(dir, &st) < 0 || in_group(st.st_gid)) return false;
  if (getgrgid_r(st.st_gid, &gr, buf, sizeof buf, &res) == 0 && res)
    snprintf(group, len, "%s", gr.gr_name);
  else
    snprintf(group, len, "%u", (unsigned)st.st_gid);
  return true;
}

static int connect_error(pto_error_t *err, const char *path, int errnum) {
  char group[64];
  pto_error_t local;
  if (!err) err = &local;
  if ((errnum == EACCES || errnum == EPERM) && denied_by_group(path, group, sizeof group)) {
    client_error(err, PTO_E_CONNECT_FAILED,
                 "Cannot connect to ptod at '%s': permission denied; you are not in group '%s'.",
                 path, group);
    snprintf(err->hint, sizeof(err->hint),
             "Ask the operator to add you to group '%s' (then log in again).", group);
    return -PTO_E_CONNECT_FAILED;
  }
  client_error(err, PTO_E_CONNECT_FAILED, "Cannot connect to ptod at '%s': %s.", path,
               strerror(errnum));
  switch (errnum) {
    case ENOENT:
    case ECONNREFUSED:
      snprintf(err->hint, sizeof(err->hint),
               "Check that ptod is running and listens on that socket (systemctl status "
               "ptod@N, [daemon] socket in its config).");
      break;
    case EACCES:
    case EPERM:
      snprintf(err->hint, sizeof(err->hint),
               "Ask the operator to add you to the socket's group (usually 'ptod').");
      break;
    case ETIMEDOUT:
    case EAGAIN:
      snprintf(err->hint, sizeof(err->hint),
               "The daemon's listen backlog stayed full; it may be overloaded or stuck.");
      break;
    default: break;
  }
  return -PTO_E_CONNECT_FAILED;
}

int pto_client_connect(const char *socket_path, int timeout_ms, pto_client_t **ret_client,
                       pto_error_t *ret_err) {
  struct sockaddr_un addr;
  int64_t deadline = client_deadline(timeout_ms);
  pto_client_t *c;
  int fd;

  if (!socket_path || !ret_client)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_client_connect needs a socket path and somewhere to return the "
                        "client.");
  if (socket_path[0] == '\0' || strlen(socket_path) >= sizeof(addr.sun_path))
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "The socket path '%s' must be 1 to %zu bytes long.", socket_path,
                        sizeof(addr.sun_path) - 1);
  memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, socket_path, strlen(socket_path) + 1);

  fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return connect_error(ret_err, socket_path, errno);
  for (;;) {
    if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0) break;
    if (errno == EINTR) continue;
    if (errno == EAGAIN && conn_poll_timeout(deadline) != 0) {
      /* Backlog full: a Unix socket cannot be polled for it, so retry. */
      struct timespec ts = {0, CONNECT_RETRY_MS * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    if (errno == EINPROGRESS) {
      struct pollfd p = {.fd = fd, .events = POLLOUT};
      int so_err = 0;
      socklen_t len = sizeof(so_err);
      int n = poll(&p, 1, conn_poll_timeout(deadline));
      if (n <= 0) {
        close(fd);
        return connect_error(ret_err, socket_path, n == 0 ? ETIMEDOUT : errno);
      }
      if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_err, &len) < 0) so_err = errno;
      if (so_err == 0) break;
      close(fd);
      return connect_error(ret_err, socket_path, so_err);
    }
    {
      int e = errno;
      close(fd);
      return connect_error(ret_err, socket_path, e);
    }
  }

  c = calloc(1, sizeof(*c));
  if (!c || rxbuf_init(&c->rx) < 0) {
    free(c);
    close(fd);
    return client_error(ret_err, PTO_E_NO_MEMORY, NULL);
  }
  c->fd = fd;
  snprintf(c->path, sizeof(c->path), "%s", socket_path);
  c->device = -1;
  c->next_msgid = 1;
  c->shm.feature = -1;
  proto_reader_init(&c->reader, CLIENT_MAX_MESSAGE);
  msgpack_sbuffer_init(&c->out.sb);
  msgpack_sbuffer_init(&c->out.held);
  *ret_client = c;
  return 0;
}

const char *pto_client_env_device_socket(int device) {
  char name[sizeof(PTO_SOCKET_DEVICE_ENV_PREFIX) + 4];
  const char *s;
  if (device < 0 || device > 255) return NULL;
  snprintf(name, sizeof(name), PTO_SOCKET_DEVICE_ENV_PREFIX "%d", device);
  s = getenv(name);
  return s && s[0] ? s : NULL;
}

/* Connect to path as device's daemon. */
static int connect_device_at(const char *path, int device, int timeout_ms,
                             pto_client_t **ret_client, pto_error_t *ret_err) {
  int rc = pto_client_connect(path, timeout_ms, ret_client, ret_err);
  if (rc == 0) (*ret_client)->device = device;
  return rc;
}

/* A failed connect to a built-in path: add what was skipped on the way. */
static int with_skipped(int rc, const char *skipped, pto_error_t *err) {
  size_t used;
  if (!skipped[0] || !err) return rc;
  used = strlen(err->message);
  snprintf(err->message + used, sizeof(err->message) - used, " %s", skipped);
  return rc;
}

int pto_client_connect_device(int device, int timeout_ms, pto_client_t **ret_client,
                              pto_error_t *ret_err) {
  const char *env = pto_client_env_device_socket(device);
  if (env) return connect_device_at(env, device, timeout_ms, ret_client, ret_err);
  char path[PTO_SOCKET_PATH_MAX], skipped[sizeof((*ret_client)->path_warning)];
  int rc = pto_find_socket_path(device, path, sizeof(path), skipped, sizeof(skipped));
  if (rc == -EINVAL)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "The device must be a number in 0..255, got %d.", device);
  if (rc == -EPERM)
    return client_error(ret_err, PTO_E_CONNECT_FAILED,
                        "No socket for device %d can be trusted. %s Give the socket path "
                        "explicitly (or PTOD_SOCKET) if you trust it.",
                        device, skipped);
  if (rc < 0)
    return client_error(ret_err, PTO_E_CONNECT_FAILED,
                        "The built-in socket path for device %d does not fit in %d bytes; set "
                        "XDG_RUNTIME_DIR to a shorter directory or give the socket path.",
                        device, PTO_SOCKET_PATH_MAX);
  rc = pto_client_connect(path, timeout_ms, ret_client, ret_err);
  if (rc < 0) return with_skipped(rc, skipped, ret_err);
  (*ret_client)->device = device;
  snprintf((*ret_client)->path_warning, sizeof((*ret_client)->path_warning), "%s", skipped);
  return 0;
}

const char *pto_client_path_warning(const pto_client_t *c) { return c ? c->path_warning : ""; }

const char *pto_client_env_socket(void) {
  const char *s = getenv(PTO_SOCKET_ENV);
  return s && s[0] ? s : NULL;
}

int pto_client_connect_default(int timeout_ms, pto_client_t **ret_client, pto_error_t *ret_err) {
  const char *env = pto_client_env_socket();
  if (env) return pto_client_connect(env, timeout_ms, ret_client, ret_err);
  return pto_client_connect_device(0, timeout_ms, ret_client, ret_err);
}

int pto_client_env_sizing_note(char *buf, size_t len) {
  char names[128] = "", config[160] = "", daemon_env[256] = "";
  size_t np = 0, cp = 0, dp = 0;
  int count = 0;
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    const char *var = pto_sizing_env_var((pto_ring_field_t)f);
    const char *value = getenv(var);
    if (!value) continue;
    const char *sep = count ? ", " : "";
    np += (size_t)snprintf(names + np, np < sizeof(names) ? sizeof(names) - np : 0, "%s%s", sep,
                           var);
    cp += (size_t)snprintf(config + cp, cp < sizeof(config) ? sizeof(config) - cp : 0,
                           "%s%s=%.24s", sep, pto_sizing_field_key((pto_ring_field_t)f), value);
    dp += (size_t)snprintf(daemon_env + dp, dp < sizeof(daemon_env) ? sizeof(daemon_env) - dp : 0,
                           " %s=%.24s", var, value);
    count++;
  }
  if (buf && len) buf[0] = '\0';
  if (count == 0 || !buf) return count;
  const char *them = count == 1 ? "it" : "them";
  snprintf(buf, len,
           "%s %s set in this client's environment, but ring sizing from the environment is "
           "the daemon's: this client's dispatches do not use %s. To make %s take effect, put "
           "%s in the dispatch's config (%s), or in the daemon's environment (systemctl edit "
           "ptod@0: [Service] Environment=%s).",
           names, count == 1 ? "is" : "are", them, them, them, config, daemon_env + 1);
  return count;
}

void pto_client_close(pto_client_t *c) {
  if (!c) return;
  client_shm_detach_all(c);
  /* Requests still held go out as they would have at send (send.c), as
   * far as the socket takes them without waiting. */
  (void)conn_flush(c, 0);
  if (c->fd >= 0) close(c->fd);
  for (size_t i = 0; i < c->nslots; i++) slot_release(&c->slots[i]);
  free(c->slots);
  rxbuf_destroy(&c->rx);
  msgpack_sbuffer_destroy(&c->out.sb);
  msgpack_sbuffer_destroy(&c->out.held);
  proto_refbuf_free(&c->out.refs);
  free(c->out.iov);
  pto_result_free(c->error_dfx);
  free(c);
}

client_shm_state_t *client_shm_state(pto_client_t *c) {
  return &c->shm;
}

void client_learn_device(pto_client_t *c, uint32_t device) {
  if (c->device < 0 && device <= 255) c->device = (int)device;
}

const pto_dfx_t *pto_client_error_dfx(const pto_client_t *c) {
  return c && c->error_dfx ? &c->error_dfx->dfx : NULL;
}

const char *pto_client_socket_path(const pto_client_t *c) {
  return c ? c->path : "";
}

int pto_client_device(const pto_client_t *c) {
  return c ? c->device : -1;
}

bool pto_client_alive(const pto_client_t *c) {
  return c && !c->dead;
}
