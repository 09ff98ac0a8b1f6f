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

#include <pto/version.h>

#include "log.h"
#include "metrics.h"
#include "metrics_http.h"

struct metrics_feed {
  mhttp_t *http;
  uv_timer_t timer; /* the textfile's */
  bool timer_started;
};

static const char *const state_names[] = {"warming", "ready", "draining"};

static void snapshot(ptod_t *d, metrics_snapshot_t *s) {
  rt_cache_stats_t cs;
  buf_memory_t m;
  dsp_stats_t q;
  buf_info_t *infos = NULL;
  size_t nbufs = 0;

  metrics_snapshot_init(s);
  s->version = PTO_VERSION;
  s->platform = dev_name(d->dev);
  s->device = d->cfg.device.id;
  s->state_names = state_names;
  s->nstates = 3;
  s->state = atomic_load(&d->state);
  s->uptime_s = (dsp_now_ns() - d->started_ns) / 1000000000u;
  s->clients = d->srv ? srv_client_count(d->srv) : 0;
  metrics_totals(d->metrics, &s->totals);
  if (d->dsp) {
    dsp_get_stats(d->dsp, &q);
    s->queue_depth = q.depth;
    s->queue_capacity = d->cfg.daemon.queue_depth;
    s->queue_running = q.running;
  }
  rt_cache_stats(d->rt, &cs);
  s->arena_builds = cs.builds;
  s->arena_hits = cs.hits;
  s->arena_misses = cs.misses;
  s->arena_build_us_total = cs.total_build_us;
  s->arena_bytes = cs.bytes;
  s->prewarm_first_dispatch_hit = prewarm_record_first_hit(&d->prewarm);
  buf_memory(d->buffers, &m);
  s->memory_limit = m.limit;
  s->memory_arena = m.arena;
  s->memory_buffers = m.buffers;
  s->memory_staging = m.staging;
  s->memory_free = m.free;
  if (buf_list(d->buffers, &infos, &nbufs) == 0) free(infos);
  s->resident_buffers = nbufs;
  advise_observed(d->advise, &s->peaks);
  if (d->srv) {
    srv_memory_t cm;
    srv_fds_t fds;
    srv_memory(d->srv, &cm);
    s->client_input = cm.input;
    s->client_output = cm.output;
    s->client_limit = cm.limit;
    srv_fds(d->srv, &fds);
    s->fds_parked = fds.parked;
    s->fds_most_parked = fds.most_parked;
    s->fds_closing = fds.closing;
    s->fds_limit = fds.limit;
    s->conn_input_limit = cm.input_limit;
    s->conn_output_limit = cm.output_limit;
    s->conn_most_input = cm.most_input;
    s->conn_most_output = cm.most_output;
  }
  s->shm_regions = d->shm_totals.regions;
  s->shm_bytes = d->shm_totals.bytes;
  s->shm_regions_limit = d->cfg.daemon.shm_regions_total;
  s->shm_bytes_limit = d->cfg.daemon.shm_limit_total;
  s->log_lines_suppressed = log_client_suppressed();
}

char *metrics_feed_text(ptod_t *d, size_t *ret_len) {
  metrics_snapshot_t s;
  snapshot(d, &s);
  return metrics_render(d->metrics, &s, ret_len);
}

static char *render_for_http(void *data, size_t *ret_len) { return metrics_feed_text(data, ret_len); }

/* PATH.tmp written whole, then renamed over PATH: node_exporter never
 * reads half a file. */
static void write_textfile(ptod_t *d) {
  const char *path = d->cfg.metrics.textfile;
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

int metrics_feed_start(ptod_t *d, pto_error_t *err) {
  metrics_feed_t *f = calloc(1, sizeof *f);
  int rc;
  if (!f) return pto_error_set(err, PTO_E_INTERNAL, "Out of memory.");
  d->feed = f;
  if (d->cfg.metrics.listen[0]) {
    rc = mhttp_start(d->loop, d->cfg.metrics.listen, render_for_http, d, &f->http, err);
    if (rc < 0) return rc;
    log_notice("Serving metrics on http://%s/metrics.", d->cfg.metrics.listen);
  }
  if (d->cfg.metrics.textfile[0]) {
    uint64_t every = d->cfg.metrics.textfile_interval_ms;
    write_textfile(d);
    uv_timer_init(d->loop, &f->timer);
    f->timer.data = d;
    uv_timer_start(&f->timer, on_timer, every, every);
    f->timer_started = true;
    log_info("Writing metrics to '%s' every %llu ms.", d->cfg.metrics.textfile,
             (unsigned long long)every);
  }
  return 0;
}

static void free_feed(uv_handle_t *h) { free(h->data); }

void metrics_feed_stop(ptod_t *d) {
  metrics_feed_t *f = d->feed;
  if (!f) return;
  d->feed = NULL;
  mhttp_stop(f->http);
  if (!f->timer_started) {
    free(f);
    return;
  }
  write_textfile(d);
  uv_timer_stop(&f->timer);
  f->timer.data = f;
  uv_close((uv_handle_t *)&f->timer, free_feed);
}
