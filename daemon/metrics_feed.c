/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_feed.c — see metrics_feed.h. */
#include "metrics_feed.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "metrics_http.h"

struct metrics_feed {
  ptod_t *d;
  mhttp_t *http;
  uv_timer_t timer; /* the textfile's */
  bool timer_started;
};

char *metrics_feed_text(ptod_t *d, size_t *ret_len) {
  metrics_snapshot_t s;
  ptod_snapshot(d, &s);
  return metrics_render(d->metrics, &s, ret_len);
}

static char *render_for_http(void *data, size_t *ret_len) { return metrics_feed_text(data, ret_len); }

/* PATH.tmp written whole, then renamed over PATH: node_exporter never
 * reads half a file. */
static void write_textfile(ptod_t *d) {
  const char *path = d->loop.cfg.metrics.textfile;
  char tmp[PATH_MAX + 8];
  size_t len = 0, off = 0;
  char *text = metrics_feed_text(d, &len);
  int fd, rc = 0;
  if (!text) return;
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  (void)unlink(tmp);
  fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd < 0) rc = -errno;
  while (rc == 0 && off < len) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) rc = n < 0 ? -errno : -EIO;
    else off += (size_t)n;
  }
  if (fd >= 0 && close(fd) < 0 && rc == 0) rc = -errno;
  if (rc == 0 && rename(tmp, path) < 0) rc = -errno;
  if (rc < 0) {
    log_warning("Failed to write the metrics textfile '%s': %s, ignoring.", path, strerror(-rc));
    (void)unlink(tmp);
  }
  free(text);
}

static void on_timer(uv_timer_t *t) { write_textfile(t->data); }

metrics_feed_t *metrics_feed_start(ptod_t *d, pto_error_t *err) {
  metrics_feed_t *f = calloc(1, sizeof *f);
  if (!f) {
    pto_error_set(err, PTO_E_INTERNAL, "Out of memory.");
    return NULL;
  }
  f->d = d;
  if (d->loop.cfg.metrics.listen[0]) {
    if (mhttp_start(d->loop.uv, d->loop.cfg.metrics.listen, render_for_http, d, &f->http, err) <
        0) {
      free(f);
      return NULL;
    }
    log_notice("Serving metrics on http://%s/metrics.", d->loop.cfg.metrics.listen);
  }
  if (d->loop.cfg.metrics.textfile[0]) {
    uint64_t every = d->loop.cfg.metrics.textfile_interval_ms;
    write_textfile(d);
    uv_timer_init(d->loop.uv, &f->timer);
    f->timer.data = d;
    uv_timer_start(&f->timer, on_timer, every, every);
    f->timer_started = true;
    log_info("Writing metrics to '%s' every %llu ms.", d->loop.cfg.metrics.textfile,
             (unsigned long long)every);
  }
  return f;
}

static void free_feed(uv_handle_t *h) { free(h->data); }

void metrics_feed_stop(metrics_feed_t *f) {
  if (!f) return;
  mhttp_stop(f->http);
  if (!f->timer_started) {
    free(f);
    return;
  }
  write_textfile(f->d);
  uv_timer_stop(&f->timer);
  f->timer.data = f;
  uv_close((uv_handle_t *)&f->timer, free_feed);
}
