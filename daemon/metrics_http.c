/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_http.c — see metrics_http.h. */
#include "metrics_http.h"

#include "listen_addr.h"
#include "quiet_thread.h"
#include "sockpath.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <microhttpd.h>

#define MHTTP_WAIT_S 5
/* The most connections served at once: one more, and the one whose
 * request began longest ago is cut (cut_oldest).  libmicrohttpd's own
 * limit leaves room for the cut ones until it has closed them: at its
 * limit it would close new connections unserved. */
#define MHTTP_CONNECTIONS 128
#define MHTTP_MHD_LIMIT (2 * MHTTP_CONNECTIONS)
#define MHTTP_IDLE_S 10
#define MHTTP_REQUEST_S 10
#define MHTTP_SOCKET_MODE 0660
#define CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct mhttp {
  uv_async_t async;
  struct MHD_Daemon *mhd;
  int fd;
  char unix_path[sizeof(((struct sockaddr_un *)0)->sun_path)];
  mhttp_render_fn render;
  void *data;

  pthread_mutex_t lock; /* guards the hand-off below */
  pthread_cond_t cond;
  bool want, done, stopping;
  char *text;
  size_t len;

  /* The connections and when their request began (or the previous one
   * ended): the reaper thread cuts those older than MHTTP_REQUEST_S, so a
   * client that trickles bytes cannot keep a slot however slowly it
   * sends, and a new connection past MHTTP_CONNECTIONS cuts the oldest, so
   * slow clients cannot hold every slot however many they open.  Written
   * by the server's thread (MHD's callbacks) and the reaper, under
   * reap_lock. */
  pthread_t reaper;
  bool reaper_started;
  pthread_mutex_t reap_lock;
  pthread_cond_t reap_cond; /* CLOCK_MONOTONIC */
  struct mhttp_slot {
    int fd; /* -1: free */
    bool cut; /* shut down, waiting for MHD to close it */
    struct timespec since;
  } slots[MHTTP_MHD_LIMIT];
  bool reap_stop;
};

/* The same checks and care as the main socket (sockpath.h): no directory
 * others could write, and a live socket of another process is never
 * replaced. */
static int bind_unix(mhttp_t *h, const char *path, pto_error_t *err) {
  pto_error_t e;
  pto_error_clear(&e);
  if (sockpath_bind(path, MHTTP_SOCKET_MODE, (gid_t)-1, 64, &h->fd, &e) < 0)
    return pto_error_set(err, e.code, "[metrics] listen = %s: %s", path, e.message);
  snprintf(h->unix_path, sizeof h->unix_path, "%s", path);
  return 0;
}

static int bind_tcp(mhttp_t *h, const char *listen_on, pto_error_t *err) {
  char host[256], port[8], why[128];
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
  int one = 1, rc;
  if (listen_addr_split(listen_on, host, sizeof host, port, sizeof port, why, sizeof why) < 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "[metrics] listen = %s: %s", listen_on, why);
  rc = getaddrinfo(host, port, &hints, &res);
  if (rc != 0)
    return pto_error_set(err, PTO_E_INVALID_CONFIG, "[metrics] listen = %s: cannot resolve '%s': %s.",
                         listen_on, host, gai_strerror(rc));
  h->fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (h->fd >= 0) setsockopt(h->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (h->fd < 0 || bind(h->fd, res->ai_addr, res->ai_addrlen) < 0) {
    rc = errno;
    freeaddrinfo(res);
    /* EAFNOSUPPORT is what systemd's RestrictAddressFamilies= answers for
     * a family the unit does not list. */
    const char *restricted = "";
    if (rc == EAFNOSUPPORT)
      restricted = " Under systemd, the unit's RestrictAddressFamilies= must allow AF_INET and "
                   "AF_INET6 (ptod@.service does; `systemctl cat` shows a drop-in that narrows "
                   "it), or listen on a Unix socket path instead.";
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to bind the metrics endpoint '%s': %s.%s",
                         listen_on, strerror(rc), restricted);
  }
  freeaddrinfo(res);
  if (listen(h->fd, 64) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Failed to listen on the metrics endpoint '%s': %s.",
                         listen_on, strerror(errno));
  return 0;
}

/* ---- the whole-request bound ------------------------------------------ */

static bool older_than(const struct timespec *since, const struct timespec *now, long s) {
  return now->tv_sec - since->tv_sec > s ||
         (now->tv_sec - since->tv_sec == s && now->tv_nsec >= since->tv_nsec);
}

static bool earlier(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

/* Under reap_lock.  shutdown() leaves the fd to MHD, which sees the end of
 * the stream and closes the connection; a slot is freed (under the lock)
 * before MHD closes its fd, so no fd is cut after it was reused. */
static void cut(struct mhttp_slot *sl) {
  (void)shutdown(sl->fd, SHUT_RDWR);
  sl->cut = true;
}

/* Reaper thread: sleep until the oldest connection's time is up (for ever
 * when there is none), then cut it. */
static void *reap(void *arg) {
  mhttp_t *h = arg;
  pthread_setname_np(pthread_self(), "ptod-http-reap");
  pthread_mutex_lock(&h->reap_lock);
  while (!h->reap_stop) {
    struct timespec now, next = {0, 0};
    bool any = false;
    clock_gettime(CLOCK_MONOTONIC, &now);
    for (int i = 0; i < MHTTP_MHD_LIMIT; i++) {
      struct mhttp_slot *sl = &h->slots[i];
      if (sl->fd < 0 || sl->cut) continue;
      if (older_than(&sl->since, &now, MHTTP_REQUEST_S)) {
        cut(sl); /* MHD frees the slot when it closes */
        continue;
      }
      if (!any || earlier(&sl->since, &next)) next = sl->since;
      any = true;
    }
    if (!any) {
      pthread_cond_wait(&h->reap_cond, &h->reap_lock);
      continue;
    }
    next.tv_sec += MHTTP_REQUEST_S;
    pthread_cond_timedwait(&h->reap_cond, &h->reap_lock, &next);
  }
  pthread_mutex_unlock(&h->reap_lock);
  return NULL;
}

/* Server thread, under reap_lock: with more than MHTTP_CONNECTIONS served,
 * cut the one whose request began longest ago (not `fresh`, which just
 * came): a new connection is always served, and a slow one keeps its slot
 * only until MHTTP_CONNECTIONS newer ones came. */
static void cut_oldest(mhttp_t *h, const struct mhttp_slot *fresh) {
  struct mhttp_slot *oldest = NULL;
  int served = 0;
  for (int i = 0; i < MHTTP_MHD_LIMIT; i++) {
    struct mhttp_slot *sl = &h->slots[i];
    if (sl->fd < 0 || sl->cut) continue;
    served++;
    if (sl != fresh && (!oldest || earlier(&sl->since, &oldest->since))) oldest = sl;
  }
  if (served > MHTTP_CONNECTIONS && oldest) cut(oldest);
}

/* Server thread: a connection opened (take a slot) or closed (free it). */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode code) {
  mhttp_t *h = cls;
  const union MHD_ConnectionInfo *info;
  pthread_mutex_lock(&h->reap_lock);
  if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    struct mhttp_slot *sl = *socket_context;
    if (sl) sl->fd = -1;
    *socket_context = NULL;
  } else if ((info = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD))) {
    for (int i = 0; i < MHTTP_MHD_LIMIT; i++) {
      if (h->slots[i].fd >= 0) continue;
      h->slots[i].fd = info->connect_fd;
      h->slots[i].cut = false;
      clock_gettime(CLOCK_MONOTONIC, &h->slots[i].since);
      *socket_context = &h->slots[i];
      cut_oldest(h, &h->slots[i]);
      pthread_cond_signal(&h->reap_cond);
      break;
    }
  }
  pthread_mutex_unlock(&h->reap_lock);
}

/* Server thread: a request was answered; the connection's next one gets
 * its own MHTTP_REQUEST_S. */
static void on_completed(void *cls, struct MHD_Connection *c, void **state,
                         enum MHD_RequestTerminationCode code) {
  mhttp_t *h = cls;
  const union MHD_ConnectionInfo *info =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  (void)state;
  (void)code;
  pthread_mutex_lock(&h->reap_lock);
  if (info && info->socket_context) {
    struct mhttp_slot *sl = info->socket_context;
    if (sl->fd >= 0) clock_gettime(CLOCK_MONOTONIC, &sl->since);
  }
  pthread_mutex_unlock(&h->reap_lock);
}

static int reaper_start(mhttp_t *h) {
  pthread_condattr_t attr;
  for (int i = 0; i < MHTTP_MHD_LIMIT; i++) h->slots[i].fd = -1;
  pthread_mutex_init(&h->reap_lock, NULL);
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
  pthread_cond_init(&h->reap_cond, &attr);
  pthread_condattr_destroy(&attr);
  h->reaper_started = quiet_thread_create(&h->reaper, NULL, reap, h) == 0;
  return h->reaper_started ? 0 : -1;
}

static void reaper_stop(mhttp_t *h) {
  if (h->reaper_started) {
    pthread_mutex_lock(&h->reap_lock);
    h->reap_stop = true;
    pthread_cond_signal(&h->reap_cond);
    pthread_mutex_unlock(&h->reap_lock);
    pthread_join(h->reaper, NULL);
    h->reaper_started = false;
  }
  pthread_cond_destroy(&h->reap_cond);
  pthread_mutex_destroy(&h->reap_lock);
}

/* Loop thread: render for a scrape that waits. */
static void on_async(uv_async_t *a) {
  mhttp_t *h = a->data;
  pthread_mutex_lock(&h->lock);
  if (h->want && !h->done) {
    h->text = h->render(h->data, &h->len);
    h->done = true;
    pthread_cond_broadcast(&h->cond);
  }
  pthread_mutex_unlock(&h->lock);
}

/* The server's thread: the text from the loop, or NULL. */
static char *fetch_text(mhttp_t *h, size_t *ret_len) {
  struct timespec until;
  char *text = NULL;
  clock_gettime(CLOCK_REALTIME, &until);
  until.tv_sec += MHTTP_WAIT_S;
  pthread_mutex_lock(&h->lock);
  free(h->text); /* a late answer to an earlier scrape that gave up */
  h->text = NULL;
  h->want = true;
  h->done = false;
  if (!h->stopping) uv_async_send(&h->async);
  while (!h->done && !h->stopping)
    if (pthread_cond_timedwait(&h->cond, &h->lock, &until) == ETIMEDOUT) break;
  if (h->done) {
    text = h->text;
    *ret_len = h->len;
    h->text = NULL;
  }
  h->want = false;
  pthread_mutex_unlock(&h->lock);
  return text;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *body) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(strlen(body), (void *)(uintptr_t)body, MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret;
  if (!r) return MHD_NO;
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **state) {
  mhttp_t *h = cls;
  struct MHD_Response *r;
  enum MHD_Result ret;
  size_t len = 0;
  char *text;
  (void)version;
  (void)upload;
  if (!*state) { /* the headers; a body, if any, comes in later calls */
    *state = h;
    return MHD_YES;
  }
  if (*upload_size) {
    *upload_size = 0; /* discarded */
    return MHD_YES;
  }
  if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && strcmp(method, MHD_HTTP_METHOD_HEAD) != 0)
    return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, "Only GET and HEAD are served.\n");
  if (strcmp(url, "/metrics") != 0)
    return reply(c, MHD_HTTP_NOT_FOUND, "ptod serves its metrics at /metrics.\n");
  text = fetch_text(h, &len);
  if (!text) return reply(c, MHD_HTTP_SERVICE_UNAVAILABLE, "The daemon did not answer in time.\n");
  r = MHD_create_response_from_buffer(len, text, MHD_RESPMEM_MUST_FREE);
  if (!r) {
    free(text);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, CONTENT_TYPE);
  ret = MHD_queue_response(c, MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  return ret;
}

static void free_handle(uv_handle_t *handle) {
  mhttp_t *h = handle->data;
  free(h->text);
  pthread_cond_destroy(&h->cond);
  pthread_mutex_destroy(&h->lock);
  free(h);
}

int mhttp_start(uv_loop_t *loop, const char *listen_on, mhttp_render_fn render, void *data,
                mhttp_t **ret, pto_error_t *err) {
  mhttp_t *h = calloc(1, sizeof *h);
  int rc;
  if (!h) return pto_error_set(err, PTO_E_INTERNAL, "Out of memory.");
  h->fd = -1;
  h->render = render;
  h->data = data;
  pthread_mutex_init(&h->lock, NULL);
  pthread_cond_init(&h->cond, NULL);
  rc = listen_on[0] == '/' ? bind_unix(h, listen_on, err) : bind_tcp(h, listen_on, err);
  if (rc == 0 && reaper_start(h) < 0)
    rc = pto_error_set(err, PTO_E_INTERNAL, "Failed to start the metrics server's reaper.");
  if (rc == 0) {
    /* libmicrohttpd starts its thread itself: it inherits this thread's
     * mask, quiet for the moment (a signal meanwhile waits, then comes). */
    sigset_t quiet, loop_mask;
    quiet_signals(&quiet);
    pthread_sigmask(SIG_BLOCK, &quiet, &loop_mask);
    h->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_POLL | MHD_USE_ITC, 0, NULL, NULL,
                              on_request, h, MHD_OPTION_LISTEN_SOCKET, (MHD_socket)h->fd,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)MHTTP_MHD_LIMIT,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)MHTTP_IDLE_S,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, h,
                              MHD_OPTION_NOTIFY_COMPLETED, on_completed, h, MHD_OPTION_END);
    pthread_sigmask(SIG_SETMASK, &loop_mask, NULL);
    if (!h->mhd)
      rc = pto_error_set(err, PTO_E_INTERNAL, "Failed to start the metrics server on '%s'.",
                         listen_on);
  }
  if (rc < 0) {
    reaper_stop(h);
    if (h->fd >= 0) close(h->fd);
    if (h->unix_path[0]) unlink(h->unix_path);
    pthread_cond_destroy(&h->cond);
    pthread_mutex_destroy(&h->lock);
    free(h);
    return rc;
  }
  uv_async_init(loop, &h->async, on_async);
  h->async.data = h;
  *ret = h;
  return 0;
}

void mhttp_stop(mhttp_t *h) {
  if (!h) return;
  pthread_mutex_lock(&h->lock);
  h->stopping = true;
  pthread_cond_broadcast(&h->cond);
  pthread_mutex_unlock(&h->lock);
  /* Quiesced, MHD hands the listening socket back instead of closing it. */
  (void)MHD_quiesce_daemon(h->mhd);
  MHD_stop_daemon(h->mhd); /* joins its thread */
  reaper_stop(h);
  close(h->fd);
  if (h->unix_path[0]) unlink(h->unix_path);
  uv_close((uv_handle_t *)&h->async, free_handle);
}
