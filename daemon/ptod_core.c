/* SPDX-License-Identifier: Apache-2.0 */
/* ptod_core.c — see ptod.h: the daemon object, made and taken apart in
 * its start-up order. */
#include "ptod.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <pto/version.h>

#include "log.h"
#include "notify.h"

const char *const ptod_state_names[PTOD_STATE_COUNT] = {
    [PTOD_WARMING] = "warming",
    [PTOD_READY] = "ready",
    [PTOD_DRAINING] = "draining",
};

const char *ptod_state_name(ptod_state_t state) {
  return (unsigned)state < PTOD_STATE_COUNT ? ptod_state_names[state] : "unknown";
}

void ptod_snapshot(ptod_t *d, metrics_snapshot_t *s) {
  rt_cache_stats_t cs;
  buf_memory_t m;
  dsp_stats_t q;
  buf_info_t *infos = NULL;
  size_t nbufs = 0;

  metrics_snapshot_init(s);
  s->version = PTO_VERSION;
  s->platform = dev_name(d->device.dev);
  s->device = d->loop.cfg.device.id;
  s->state_names = ptod_state_names;
  s->nstates = PTOD_STATE_COUNT;
  s->state = atomic_load(&d->state);
  s->uptime_s = (dsp_now_ns() - d->loop.started_ns) / 1000000000u;
  s->clients = d->loop.srv ? srv_client_count(d->loop.srv) : 0;
  metrics_totals(d->metrics, &s->totals);
  if (d->loop.dsp) {
    dsp_get_stats(d->loop.dsp, &q);
    s->queue_depth = q.depth;
    s->queue_capacity = d->loop.cfg.daemon.queue_depth;
    s->queue_running = q.running;
    for (int p = 0; p < 16; p++) s->queue_by_priority[p] = q.by_priority[p];
  }
  rt_cache_stats(d->device.rt, &cs);
  s->arena_builds = cs.builds;
  s->arena_hits = cs.hits;
  s->arena_misses = cs.misses;
  s->arena_build_us_total = cs.total_build_us;
  s->arena_bytes = cs.bytes;
  s->prewarm_first_dispatch_hit = prewarm_record_first_hit(&d->device.prewarm);
  buf_memory(d->device.buffers, &m);
  s->memory_limit = m.limit;
  s->memory_arena = m.arena;
  s->memory_buffers = m.buffers;
  s->memory_staging = m.staging;
  s->memory_free = m.free;
  if (buf_list(d->device.buffers, &infos, &nbufs) == 0) free(infos);
  s->resident_buffers = nbufs;
  advise_observed(d->device.advise, &s->peaks);
  if (d->loop.srv) {
    srv_memory_t cm;
    srv_fds_t fds;
    srv_memory(d->loop.srv, &cm);
    s->client_input = cm.input;
    s->client_output = cm.output;
    s->client_limit = cm.limit;
    srv_fds(d->loop.srv, &fds);
    s->fds_parked = fds.parked;
    s->fds_most_parked = fds.most_parked;
    s->fds_closing = fds.closing;
    s->fds_limit = fds.limit;
    s->conn_input_limit = cm.input_limit;
    s->conn_output_limit = cm.output_limit;
    s->conn_most_input = cm.most_input;
    s->conn_most_output = cm.most_output;
  }
  s->shm_regions = d->loop.shm_totals.regions;
  s->shm_bytes = d->loop.shm_totals.bytes;
  s->shm_regions_limit = d->loop.cfg.daemon.shm_regions_total;
  s->shm_bytes_limit = d->loop.cfg.daemon.shm_limit_total;
  s->log_lines_suppressed = log_client_suppressed();
}

uint32_t ptod_queue_capacity(const cfg_t *cfg) {
  return cfg->daemon.queue_full == CFG_QUEUE_BUSY ? cfg->daemon.queue_depth : UINT32_MAX;
}

void ptod_server_options(const cfg_t *cfg, srv_options_t *o) {
  memset(o, 0, sizeof(*o));
  o->socket_path = cfg->daemon.socket;
  o->socket_mode = cfg->daemon.socket_mode;
  o->socket_gid = cfg->daemon.socket_group.gid == CFG_NO_GID ? (gid_t)-1
                                                             : (gid_t)cfg->daemon.socket_group.gid;
  o->n_allowed_uids = cfg->daemon.allowed_uids.count;
  for (uint32_t i = 0; i < cfg->daemon.allowed_uids.count; i++)
    o->allowed_uids[i] = cfg->daemon.allowed_uids.id[i];
  o->n_allowed_gids = cfg->daemon.allowed_gids.count;
  for (uint32_t i = 0; i < cfg->daemon.allowed_gids.count; i++)
    o->allowed_gids[i] = cfg->daemon.allowed_gids.id[i];
  o->max_clients = cfg->daemon.max_clients;
  o->max_message = cfg->daemon.max_message;
  o->max_objects = cfg->daemon.max_objects;
  o->max_pending = cfg->daemon.max_pending;
  o->input_limit = cfg->daemon.input_limit;
  o->clients_memory = cfg->daemon.clients_memory;
  o->client_timeout_ms = cfg->daemon.client_timeout_ms;
  o->idle_timeout_ms = cfg->daemon.idle_timeout_ms;
  o->output_limit = cfg->daemon.output_limit;
}

/* d->loop.cfg's device, its runtime, the buffer table, the advisor, the
 * metrics and the staging area. */
static int open_device(ptod_t *d, pto_error_t *err) {
  dev_options_t dopts = {.cores = d->loop.cfg.device.cores};
  rt_options_t ropts = {0};
  int rc;

  rc = dev_open(d->loop.cfg.device.platform, &dopts, &d->device.dev, err);
  if (rc < 0) return rc;
  ropts.device = d->device.dev;
  ropts.programs_dir = d->loop.cfg.device.programs;
  ropts.cores = d->loop.cfg.device.cores;
  ropts.aicpu_thread_num = d->loop.cfg.device.aicpu_thread_num;
  ropts.deadlock_timeout_ms = (uint32_t)d->loop.cfg.device.deadlock_timeout_ms;
  ropts.run_timeout_ms = (uint32_t)d->loop.cfg.device.run_timeout_ms;
  rc = rt_create(&ropts, &d->device.rt, err);
  if (rc < 0) return rc;
  if (access(d->loop.cfg.device.programs, R_OK | X_OK) < 0)
    log_warning("The programs directory '%s' cannot be read: %s; no program can be dispatched "
                "until it can. Set [device] programs to the directory holding the NAME.so "
                "programs.",
                d->loop.cfg.device.programs, strerror(errno));
  if (buf_table_create(d->device.dev, d->loop.cfg.device.memory, &d->device.buffers) < 0 ||
      advise_create(&d->device.advise) < 0 || metrics_create(&d->metrics) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "Out of memory.");
  staging_init(&d->device.staging, d->device.dev, d->device.buffers);
  return 0;
}

static void close_device(ptod_t *d) {
  staging_release(&d->device.staging);
  rt_destroy(d->device.rt);
  buf_table_free(d->device.buffers);
  advise_free(d->device.advise);
  metrics_free(d->metrics);
  dev_close(d->device.dev);
}

int ptod_create(const cfg_t *cfg, const pto_sizing_t *env, uv_loop_t *loop,
                srv_handlers_t (*handlers)(ptod_t *d), ptod_t **ret, pto_error_t *err) {
  ptod_t *d = calloc(1, sizeof(*d));
  srv_options_t so;
  srv_handlers_t h;
  int rc;

  *ret = NULL;
  if (!d) return pto_error_set(err, PTO_E_INTERNAL, "Out of memory.");
  d->loop.cfg = *cfg;
  d->device.env = *env;
  d->loop.uv = loop;
  d->loop.started_ns = dsp_now_ns();
  prewarm_record_init(&d->device.prewarm);
  rc = open_device(d, err);
  if (rc < 0) {
    log_err("Failed to start device %u: %s", d->loop.cfg.device.id, err->message);
    ptod_destroy(d);
    return rc == -PTO_E_INVALID_CONFIG ? rc : -PTO_E_INTERNAL;
  }
  if (dsp_create(loop, ptod_queue_capacity(&d->loop.cfg), &d->loop.dsp) < 0) {
    pto_error_set(err, PTO_E_INTERNAL, "Failed to start the device thread.");
    log_err("%s", err->message);
    ptod_destroy(d);
    return -PTO_E_INTERNAL;
  }
  dsp_set_spin_us(d->loop.dsp, d->loop.cfg.daemon.spin_us);
  dsp_set_aging_us(d->loop.dsp, d->loop.cfg.daemon.priority_aging_ms * 1000u);
  /* The socket, bound and not yet accepting (srv_listen): a path that is
   * unsafe or that a live daemon serves fails now, in milliseconds. */
  ptod_server_options(&d->loop.cfg, &so);
  h = handlers(d);
  if (srv_create(loop, &so, &h, &d->loop.srv, err) < 0) {
    log_err("%s", err->message);
    notify_sendf("STATUS=%s", err->message);
    d->loop.srv = NULL;
    ptod_destroy(d);
    return -PTO_E_INTERNAL;
  }
  *ret = d;
  return 0;
}

void ptod_destroy(ptod_t *d) {
  if (!d) return;
  if (d->loop.srv) srv_close(d->loop.srv);
  d->loop.srv = NULL;
  if (d->loop.dsp) dsp_destroy(d->loop.dsp);
  d->loop.dsp = NULL;
  uv_run(d->loop.uv, UV_RUN_DEFAULT); /* the close callbacks */
  close_device(d);
  prewarm_record_destroy(&d->device.prewarm);
  free(d);
}
