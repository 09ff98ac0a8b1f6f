/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.h — the daemon's Prometheus metrics: counters and histograms it
 * owns (fed by the modules that see the events), and the text exposition
 * (format 0.0.4) of those plus a snapshot of the daemon's gauges.
 *
 * Names follow Prometheus conventions (base units: _seconds, _bytes;
 * counters end in _total) and the peers' vocabulary: Triton's queue and
 * compute durations and pending requests become
 * ptod_dispatch_queue_duration_seconds, ptod_dispatch_compute_duration_seconds
 * and ptod_pending_requests; its per-model success/failure counts become
 * ptod_program_dispatches_total{program, outcome}.  docs/operations.md lists
 * every metric.
 *
 * Threading: every function may be called from any thread (one mutex,
 * held for a few stores).  This module knows nothing of the daemon's other
 * modules: the caller fills the snapshot (metrics_feed.c does, on the loop
 * thread).
 */
#ifndef PTOD_METRICS_H
#define PTOD_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/sizing.h>

typedef struct metrics metrics_t;

/* At most this many programs get their own label values; dispatches of
 * further names count under program="_other" (names come from clients:
 * the label set must stay bounded).  Callers pass a program name only for
 * a program that exists (NULL counts under "_other"), so names a client
 * makes up cannot take the slots of real programs. */
#define METRICS_MAX_PROGRAMS 64

/* Returns 0 or -ENOMEM.  Free with metrics_free (NULL accepted). */
int metrics_create(metrics_t **ret);
void metrics_free(metrics_t *m);

/* An error answered, by code (ptod_errors_total{name}). */
void metrics_count_error(metrics_t *m, int code);

/* One dispatch that reached the device, successful or not. */
typedef struct metrics_dispatch {
  const char *program; /* as requested */
  int code;            /* PTO_OK or the error answered */
  bool arena_ready;    /* the arena was in place (arena_key, arena_hit valid) */
  bool arena_hit;
  uint64_t arena_key;
  uint64_t queue_us, arena_us, run_us, total_us; /* as in the result's timing_us */
} metrics_dispatch_t;
void metrics_observe_dispatch(metrics_t *m, const metrics_dispatch_t *obs);

/* A dispatch answered without running (BUSY, DEADLINE_EXCEEDED, ...):
 * under its program and in the rejected total. */
void metrics_count_rejected(metrics_t *m, const char *program);

/* The totals (ptod_requests_total, ptod_dispatches_total{outcome}), as
 * `status` and the exposition show them: each request as it is read, each
 * dispatch as its answer goes out (ok or failed when it ran; rejected when
 * it did not, which metrics_count_rejected counts too, or when its client
 * went away before it ran). */
typedef enum metrics_outcome { METRICS_OK, METRICS_FAILED, METRICS_REJECTED } metrics_outcome_t;
void metrics_count_request(metrics_t *m);
void metrics_count_dispatch(metrics_t *m, metrics_outcome_t outcome);

/* A request its client cancelled while it waited (answered CANCELLED). */
void metrics_count_cancelled(metrics_t *m);

typedef struct metrics_totals {
  uint64_t requests, dispatches_ok, dispatches_failed, dispatches_rejected;
  uint64_t cancelled;
} metrics_totals_t;
void metrics_totals(metrics_t *m, metrics_totals_t *t);

/* What the exposition shows besides metrics' own counters. */
typedef struct metrics_snapshot {
  const char *version, *platform;
  uint32_t device;
  const char *const *state_names; /* nstates names; state indexes them */
  int nstates, state;
  uint64_t uptime_s, clients;
  metrics_totals_t totals; /* metrics_totals */
  uint64_t queue_depth, queue_capacity, queue_running;
  uint64_t queue_by_priority[16]; /* waiting, per priority -8 .. 7 */
  uint64_t arena_builds, arena_hits, arena_misses, arena_build_us_total, arena_bytes;
  int prewarm_first_dispatch_hit; /* -1: no dispatch yet, else 0 or 1 */
  uint64_t memory_limit, memory_arena, memory_buffers, memory_staging, memory_free;
  uint64_t resident_buffers; /* how many resident buffers */
  pto_sizing_t peaks;        /* per ring and field, the most any dispatch used */
  /* Bytes the server holds for clients (srv_memory): unread input and
   * decoded requests, unsent answers, and clients_memory. */
  uint64_t client_input, client_output, client_limit;
  /* Per connection: input_limit and output_limit, and the most one
   * connection holds of each. */
  uint64_t conn_input_limit, conn_output_limit, conn_most_input, conn_most_output;
  uint64_t log_lines_suppressed; /* client-caused lines the rate limit dropped */
  /* Shared-memory regions of all clients (count, bytes, shm_regions_total,
   * shm_limit_total)
   * and passed fds (srv_fds: parked, the most one connection has parked,
   * closing, RLIMIT_NOFILE). */
  uint64_t shm_regions, shm_bytes, shm_regions_limit, shm_bytes_limit;
  uint64_t fds_parked, fds_most_parked, fds_closing, fds_limit;
} metrics_snapshot_t;

/* A snapshot with every field zero. */
void metrics_snapshot_init(metrics_snapshot_t *s);

/* The exposition text, NUL-terminated and malloc'ed (the caller frees);
 * *ret_len its length.  NULL when out of memory. */
char *metrics_render(metrics_t *m, const metrics_snapshot_t *s, size_t *ret_len);

#endif
