/* SPDX-License-Identifier: Apache-2.0 */
/* ptod.c — the daemon's life: start-up order, signals, reload, shut-down.
 *
 * Start-up: config -> device -> socket (bound and listening, so a second
 * daemon on the same path fails at once instead of after a prewarm) ->
 * prewarm (STATUS= progress; connections wait in the backlog) -> accept ->
 * READY=1.  SIGTERM/SIGINT: STOPPING=1, stop accepting, queued requests
 * answered SHUTTING_DOWN, the running one finishes within drain_timeout,
 * exit 0; a second signal exits at once.  SIGHUP: RELOADING=1, re-read the
 * file (a bad file keeps the running configuration), apply what applies
 * live, rebuild a changed prewarm sizing when the device is idle, READY=1.
 */
#include "ptod_run.h"

#include <errno.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <pto/version.h>

#include "log.h"
#include "metrics_feed.h"
#include "notify.h"
#include "jobs.h"
#include "request.h"

#define DRAIN_POLL_MS 10

typedef struct life {
  ptod_t *d;
  uv_loop_t loop;
  uv_signal_t sig_term, sig_int, sig_hup;
  uv_timer_t watchdog, drain_poll;
  uint64_t drain_deadline_ns;
  bool reloading;
  int exit_code;
} life_t;

typedef struct prewarm_job {
  dsp_job_t job;
  life_t *life;
  pto_sizing_resolved_t sizing;
  int rc;
  pto_error_t err;
  rt_arena_result_t arena;
} prewarm_job_t;

static void notify_ready_status(life_t *life) {
  char sizing[256];
  pto_sizing_resolved_t prewarmed;
  prewarm_record_sizing(&life->d->device.prewarm, &prewarmed);
  pto_sizing_format(&prewarmed, sizing, sizeof(sizing));
  notify_sendf("READY=1\nSTATUS=Serving device %u on '%s'; prewarmed %s",
               life->d->loop.cfg.device.id, srv_socket_path(life->d->loop.srv), sizing);
}

/* ---- shut-down ----------------------------------------------------------- */

static void close_handle(uv_handle_t *h) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

/* Everything on the loop goes; uv_run then returns. */
static void finish(life_t *life) {
  uv_timer_stop(&life->drain_poll);
  metrics_feed_stop(life->d->loop.feed);
  life->d->loop.feed = NULL;
  srv_close(life->d->loop.srv);
  life->d->loop.srv = NULL;
  dsp_destroy(life->d->loop.dsp);
  life->d->loop.dsp = NULL;
  close_handle((uv_handle_t *)&life->sig_term);
  close_handle((uv_handle_t *)&life->sig_int);
  close_handle((uv_handle_t *)&life->sig_hup);
  close_handle((uv_handle_t *)&life->watchdog);
  close_handle((uv_handle_t *)&life->drain_poll);
}

static void on_drain_poll(uv_timer_t *t) {
  life_t *life = t->data;
  if (dsp_idle(life->d->loop.dsp)) {
    log_notice("Drained; exiting.");
    finish(life);
    return;
  }
  if (dsp_now_ns() > life->drain_deadline_ns) {
    log_err("A dispatch is still running after drain_timeout = %llu ms; exiting without it.",
            (unsigned long long)life->d->loop.cfg.daemon.drain_timeout_ms);
    notify_send("STATUS=Exited with a dispatch still running (drain_timeout)");
    _exit(1);
  }
}

static void begin_drain(life_t *life, int signum) {
  if (atomic_load(&life->d->state) == PTOD_DRAINING) {
    log_warning("Second %s while draining; exiting at once.", strsignal(signum));
    _exit(1);
  }
  log_notice("Received %s: draining (queued requests are answered SHUTTING_DOWN, the running one "
             "may take up to %llu ms).",
             strsignal(signum), (unsigned long long)life->d->loop.cfg.daemon.drain_timeout_ms);
  atomic_store(&life->d->state, PTOD_DRAINING);
  notify_send("STOPPING=1\nSTATUS=Draining");
  srv_stop_accepting(life->d->loop.srv);
  dsp_drain(life->d->loop.dsp);
  life->drain_deadline_ns = dsp_now_ns() + life->d->loop.cfg.daemon.drain_timeout_ms * 1000000u;
  uv_timer_start(&life->drain_poll, on_drain_poll, 0, DRAIN_POLL_MS);
}

static void on_stop_signal(uv_signal_t *sig, int signum) { begin_drain(sig->data, signum); }

/* ---- reload --------------------------------------------------------------- */

static void prewarm_job_run(dsp_job_t *job) {
  prewarm_job_t *pj = (prewarm_job_t *)job;
  pto_error_clear(&pj->err);
  pj->rc = jobs_prewarm(pj->life->d, &pj->sizing, &pj->arena, &pj->err);
}

static void prewarm_job_complete(dsp_job_t *job) {
  prewarm_job_t *pj = (prewarm_job_t *)job;
  life_t *life = pj->life;
  char text[256];
  pto_sizing_format(&pj->sizing, text, sizeof(text));
  if (job->outcome != DSP_RAN)
    log_notice("Reload prewarm of %s was not run: the daemon is shutting down.", text);
  else if (pj->rc < 0)
    log_err("Reload prewarm of %s failed, keeping the previous arena: %s", text, pj->err.message);
  else
    log_notice("Prewarmed %s after reload in %llu ms.", text,
               (unsigned long long)(pj->arena.build_us / 1000u));
  if (atomic_load(&life->d->state) != PTOD_DRAINING) {
    atomic_store(&life->d->state, PTOD_READY);
    notify_ready_status(life);
  }
  life->reloading = false;
  free(pj);
}

/* ---- live keys: how each key a reload changes takes effect ----------------- */

static void apply_server(life_t *life) {
  srv_options_t so;
  ptod_server_options(&life->d->loop.cfg, &so);
  srv_update_options(life->d->loop.srv, &so);
}

static void apply_log_level(life_t *life) { log_set_level(life->d->loop.cfg.daemon.log_level); }

static void apply_spin(life_t *life) {
  dsp_set_spin_us(life->d->loop.dsp, life->d->loop.cfg.daemon.spin_us);
}

static void apply_queue(life_t *life) {
  dsp_set_capacity(life->d->loop.dsp, ptod_queue_capacity(&life->d->loop.cfg));
  dsp_set_aging_us(life->d->loop.dsp, life->d->loop.cfg.daemon.priority_aging_ms * 1000u);
}

/* Read from d->loop.cfg where it is used: as each request is admitted (queue,
 * ring baseline, device timeouts, diagnostics), at the next drain, or by
 * the prewarm comparison in reload(). */
static void apply_where_used(life_t *life) { (void)life; }

/* How each apply class of config.h's key rows takes effect in a reload. */
static void (*const appliers[CFG_APPLY_COUNT])(life_t *life) = {
    [CFG_APPLY_SERVER] = apply_server, [CFG_APPLY_LOG_LEVEL] = apply_log_level,
    [CFG_APPLY_SPIN] = apply_spin,     [CFG_APPLY_QUEUE] = apply_queue,
    [CFG_APPLY_WHERE_USED] = apply_where_used,
};

/* Take the merged configuration, then run the applier of each class whose
 * keys changed, once. */
static void apply_live_keys(life_t *life, const cfg_t *merged) {
  unsigned changed = cfg_live_changes(&life->d->loop.cfg, merged);
  life->d->loop.cfg = *merged;
  for (unsigned a = 0; a < CFG_APPLY_COUNT; a++)
    if ((changed & (1u << a)) && appliers[a]) appliers[a](life);
}

static void reload(life_t *life) {
  ptod_t *d = life->d;
  cfg_t loaded, merged;
  pto_sizing_resolved_t old_prewarm, new_prewarm;
  pto_error_t err;
  char report[4096];
  unsigned changed;

  if (atomic_load(&d->state) == PTOD_DRAINING || life->reloading) {
    log_warning("SIGHUP while %s; ignoring.", life->reloading ? "a reload is in progress" : "draining");
    return;
  }
  notify_reloading();
  log_notice("Received SIGHUP: reloading '%s'.",
             d->loop.config_path ? d->loop.config_path : "(built-in defaults)");
  pto_error_clear(&err);
  if (cfg_load(d->loop.config_path, &loaded, &err) < 0) {
    log_err("Reload failed, keeping the running configuration: %s", err.message);
    notify_ready_status(life);
    return;
  }
  changed = cfg_diff(&d->loop.cfg, &loaded, report, sizeof(report));
  if (!changed) {
    log_notice("Reload: nothing changed.");
    notify_ready_status(life);
    return;
  }
  for (const char *line = report; *line;) {
    size_t n = strcspn(line, "\n");
    log_notice("Reload: %.*s", (int)n, line);
    line += n;
    if (*line) line++;
  }
  if (changed & CFG_CHANGED_RESTART)
    log_warning("Reload: some changed keys need a restart; they keep their running values.");

  cfg_resolve_sizings(&d->loop.cfg, &d->device.env, NULL, &old_prewarm);
  cfg_merge_live(&d->loop.cfg, &loaded, &merged);
  apply_live_keys(life, &merged);
  cfg_resolve_sizings(&d->loop.cfg, &d->device.env, NULL, &new_prewarm);

  if (!pto_sizing_equal(&old_prewarm, &new_prewarm)) {
    prewarm_job_t *pj = calloc(1, sizeof(*pj));
    if (pj) {
      pj->life = life;
      pj->sizing = new_prewarm;
      pj->job.run = prewarm_job_run;
      pj->job.complete = prewarm_job_complete;
      if (dsp_submit_internal(d->loop.dsp, &pj->job) == 0) {
        /* READY=1 follows once the device has built it. */
        life->reloading = true;
        atomic_store(&d->state, PTOD_WARMING);
        notify_send("STATUS=Prewarming the new sizing after reload");
        return;
      }
      free(pj);
    }
    log_err("Reload: could not queue the prewarm of the new sizing; it is built by the first "
            "dispatch that uses it.");
  }
  notify_ready_status(life);
}

static void on_hup(uv_signal_t *sig, int signum) {
  (void)signum;
  reload(sig->data);
}

static void on_watchdog(uv_timer_t *t) {
  (void)t;
  notify_send("WATCHDOG=1");
}

/* ---- start-up -------------------------------------------------------------- */

/* fds the daemon opens for itself (logs, device, programs, metrics), on
 * top of one per client and SRV_MAX_FDS passed fds each. */
#define OWN_FDS 64

/* The soft RLIMIT_NOFILE raised to the hard limit: every connection takes
 * one fd and may park SRV_MAX_FDS passed ones, and the usual soft limit of
 * 1024 is less than max_clients (256) of them need.  Said once at start;
 * a hard limit too low for max_clients is a warning, since running out
 * only makes new connections wait (server.h). */
static void raise_fd_limit(const cfg_t *cfg) {
  struct rlimit lim;
  uint64_t need = (uint64_t)cfg->daemon.max_clients * (1 + SRV_MAX_FDS) + OWN_FDS;
  if (getrlimit(RLIMIT_NOFILE, &lim) < 0) return;
  if (lim.rlim_cur < lim.rlim_max) {
    rlim_t was = lim.rlim_cur;
    lim.rlim_cur = lim.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &lim) == 0)
      log_info("Raised the open-file limit (RLIMIT_NOFILE) from %llu to %llu.",
               (unsigned long long)was, (unsigned long long)lim.rlim_cur);
    else
      lim.rlim_cur = was;
  }
  if (lim.rlim_cur != RLIM_INFINITY && lim.rlim_cur < need)
    log_warning("The open-file limit (RLIMIT_NOFILE) is %llu, less than the %llu that "
                "max_clients = %u clients passing %d file descriptors each may need; raise "
                "LimitNOFILE= (the hard limit) or lower max_clients. Connections wait while "
                "none are free.",
                (unsigned long long)lim.rlim_cur, (unsigned long long)need,
                cfg->daemon.max_clients, SRV_MAX_FDS);
}

static int prewarm(life_t *life, pto_error_t *err) {
  ptod_t *d = life->d;
  pto_sizing_resolved_t sizing;
  rt_arena_result_t arena;
  char text[256];
  uint64_t bytes;
  int rc;

  cfg_resolve_sizings(&d->loop.cfg, &d->device.env, NULL, &sizing);
  pto_sizing_format(&sizing, text, sizeof(text));
  bytes = rt_arena_bytes(d->device.rt, &sizing);
  notify_sendf("STATUS=Prewarming the arena (%llu MiB): %s\nEXTEND_TIMEOUT_USEC=%llu",
               (unsigned long long)(bytes >> 20), text, 120ull * 1000000u);
  log_info("Prewarming the arena for %s (%llu bytes).", text, (unsigned long long)bytes);
  rc = jobs_prewarm(d, &sizing, &arena, err);
  if (rc < 0) return rc;
  log_notice("Prewarmed the arena (key %016llx, %llu bytes) in %llu ms.",
             (unsigned long long)arena.key, (unsigned long long)arena.bytes,
             (unsigned long long)(arena.build_us / 1000u));
  return 0;
}

/* Signals (SIGTERM and SIGINT drain, SIGHUP reloads) and the systemd
 * watchdog, on the loop. */
static void watch_signals(life_t *life) {
  uint64_t watchdog_usec = notify_watchdog_usec();
  uv_signal_init(&life->loop, &life->sig_term);
  uv_signal_init(&life->loop, &life->sig_int);
  uv_signal_init(&life->loop, &life->sig_hup);
  life->sig_term.data = life->sig_int.data = life->sig_hup.data = life;
  uv_signal_start(&life->sig_term, on_stop_signal, SIGTERM);
  uv_signal_start(&life->sig_int, on_stop_signal, SIGINT);
  uv_signal_start(&life->sig_hup, on_hup, SIGHUP);
  uv_timer_init(&life->loop, &life->watchdog);
  uv_timer_init(&life->loop, &life->drain_poll);
  life->drain_poll.data = life;
  if (watchdog_usec) {
    uint64_t every_ms = watchdog_usec / 2000u ? watchdog_usec / 2000u : 1;
    uv_timer_start(&life->watchdog, on_watchdog, every_ms, every_ms);
    log_info("Watchdog: pinging systemd every %llu ms.", (unsigned long long)every_ms);
  }
}

/* Start-up steps 4 to 6 on the made daemon (ptod_create did 2 and 3),
 * then serve until drained.  Returns the exit status. */
static int serve(life_t *life) {
  ptod_t *d = life->d;
  pto_error_t err;
  int rc;

  /* 4. prewarm, before anyone is served; until 5. connections wait in the
   * listen backlog. */
  pto_error_clear(&err);
  rc = prewarm(life, &err);
  if (rc < 0) {
    log_err("Failed to prewarm the arena: %s", err.message);
    notify_sendf("STATUS=Prewarm failed: %s", err.message);
    return rc == -PTO_E_INVALID_CONFIG || rc == -PTO_E_OUT_OF_MEMORY ? PTOD_EXIT_CONFIG : 1;
  }

  /* 5. accept. */
  if (srv_listen(d->loop.srv, &err) < 0) {
    log_err("%s", err.message);
    notify_sendf("STATUS=%s", err.message);
    return 1;
  }
  log_notice("Listening on '%s' (%s socket).", srv_socket_path(d->loop.srv),
             srv_socket_origin(d->loop.srv));
  d->loop.feed = metrics_feed_start(d, &err);
  if (!d->loop.feed) {
    log_err("%s", err.message);
    return err.code == PTO_E_INVALID_CONFIG ? PTOD_EXIT_CONFIG : 1;
  }
  watch_signals(life);

  /* 6. ready. */
  atomic_store(&d->state, PTOD_READY);
  notify_ready_status(life);
  uv_run(&life->loop, UV_RUN_DEFAULT);
  return 0;
}

int ptod_run(const char *config_path) {
  life_t *life;
  cfg_t cfg;
  pto_sizing_t env;
  pto_error_t err;
  int rc, exit_code;

  /* Messages and answers of up to max_message come and go: keep the large
   * ones out of the heap (glibc's threshold would otherwise grow to 32 MiB
   * and keep them resident after they are freed).  Fixing that threshold
   * also fixes the trim threshold at its 128 KiB default, and answers are
   * allocated on the device thread (its own arena) and freed on the loop:
   * the arena then gave its top back with madvise and faulted it in again
   * every few answers (~950 madvise calls a second, 16 pipelining clients).
   * Keep up to 8 MiB of free top per arena instead. */
  mallopt(M_MMAP_THRESHOLD, 1 << 20);
  mallopt(M_TRIM_THRESHOLD, 8 << 20);
  pto_error_clear(&err);

  /* 1. configuration: the file and the PTO2_RING_* environment. */
  if (cfg_load(config_path, &cfg, &err) < 0 || pto_sizing_from_environ(&env, &err) < 0) {
    log_err("%s", err.message);
    notify_sendf("STATUS=Invalid configuration\nERRNO=22");
    return PTOD_EXIT_CONFIG;
  }
  log_set_level(cfg.daemon.log_level);
  log_info("ptod %s starting on device %u (%s), config %s.", PTO_VERSION, cfg.device.id,
           cfg.device.platform, config_path ? config_path : "built-in defaults");
  signal(SIGPIPE, SIG_IGN);
  raise_fd_limit(&cfg);

  /* 2. device and runtime, 3. the socket, before the long prewarm: a path
   * that is unsafe or that a live daemon serves fails now, in
   * milliseconds. */
  life = calloc(1, sizeof(*life));
  if (!life) return 1;
  uv_loop_init(&life->loop);
  rc = ptod_create(&cfg, &env, &life->loop, req_handlers, &life->d, &err);
  if (rc < 0) {
    exit_code = rc == -PTO_E_INVALID_CONFIG ? PTOD_EXIT_CONFIG : 1;
  } else {
    life->d->loop.config_path = config_path;
    exit_code = serve(life);
  }
  ptod_destroy(life->d); /* what is still open, and the loop's close callbacks */
  if (uv_loop_close(&life->loop) != 0) log_warning("The event loop still had handles at exit.");
  free(life);
  return exit_code;
}
