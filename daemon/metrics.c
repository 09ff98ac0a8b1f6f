/* SPDX-License-Identifier: Apache-2.0 */
/* metrics.c — see metrics.h. */
#include "metrics.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/errors.h>

#include "textbuf.h"

/* Upper bounds of the duration buckets, in microseconds, the unit
 * durations are observed in (+Inf implied); exposed in seconds. */
static const uint64_t bounds_us[] = {100,    250,    500,    1000,    2500,    5000,
                                     10000,  25000,  50000,  100000,  250000,  500000,
                                     1000000, 2500000, 10000000};
#define NBOUNDS (sizeof(bounds_us) / sizeof(bounds_us[0]))
#define MAX_CODE 1100

typedef struct histogram {
  /* bucket i counts observations in (bounds_us[i-1], bounds_us[i]]; the
   * exposition sums them (Prometheus buckets are cumulative), so an
   * observation, once a dispatch, touches one counter, not every bucket */
  uint64_t buckets[NBOUNDS];
  uint64_t count;
  double sum_s;
} histogram_t;

enum { H_QUEUE, H_ARENA, H_COMPUTE, H_REQUEST, H_COUNT };

static const struct {
  const char *name, *help;
} hist_info[H_COUNT] = {
    {"ptod_dispatch_queue_duration_seconds",
     "Time dispatches waited for the device after admission (Triton: queue duration)."},
    {"ptod_dispatch_arena_duration_seconds",
     "Time dispatches spent getting their arena (0 on a hit, the build on a miss)."},
    {"ptod_dispatch_compute_duration_seconds",
     "Time the runtime ran dispatches (Triton: compute duration)."},
    {"ptod_dispatch_request_duration_seconds",
     "Time from admission to the response being ready, per dispatch that reached the device."},
};

enum { O_OK, O_FAILED, O_REJECTED, O_COUNT };
static const char *const outcome_names[O_COUNT] = {"ok", "failed", "rejected"};

typedef struct program_counts {
  char name[65];
  uint64_t n[O_COUNT];
} program_counts_t;

struct metrics {
  pthread_mutex_t lock;
  /* The totals: atomic, so the loop's count of each request takes no lock. */
  atomic_uint_fast64_t requests, dispatches[O_COUNT], cancelled;
  uint64_t errors[MAX_CODE];
  histogram_t hist[H_COUNT];
  program_counts_t programs[METRICS_MAX_PROGRAMS + 1]; /* the last: "_other" */
  uint32_t nprograms;
  uint64_t sizing_switches;
  bool have_key;
  uint64_t last_key;
};

int metrics_create(metrics_t **ret) {
  metrics_t *m = calloc(1, sizeof *m);
  if (!m) return -ENOMEM;
  pthread_mutex_init(&m->lock, NULL);
  snprintf(m->programs[METRICS_MAX_PROGRAMS].name, sizeof m->programs[0].name, "_other");
  *ret = m;
  return 0;
}

void metrics_free(metrics_t *m) {
  if (!m) return;
  pthread_mutex_destroy(&m->lock);
  free(m);
}

void metrics_count_error(metrics_t *m, int code) {
  if (code <= 0 || code >= MAX_CODE) return;
  pthread_mutex_lock(&m->lock);
  m->errors[code]++;
  pthread_mutex_unlock(&m->lock);
}

static void observe(histogram_t *h, uint64_t us) {
  size_t i = 0;
  while (i < NBOUNDS && us > bounds_us[i]) i++;
  if (i < NBOUNDS) h->buckets[i]++;
  h->count++;
  h->sum_s += (double)us / 1e6;
}

/* The counts of `program` (under lock). */
static program_counts_t *program_of(metrics_t *m, const char *program) {
  if (!program || !program[0] || strlen(program) >= sizeof m->programs[0].name)
    return &m->programs[METRICS_MAX_PROGRAMS];
  for (uint32_t i = 0; i < m->nprograms; i++)
    if (strcmp(m->programs[i].name, program) == 0) return &m->programs[i];
  if (m->nprograms == METRICS_MAX_PROGRAMS) return &m->programs[METRICS_MAX_PROGRAMS];
  snprintf(m->programs[m->nprograms].name, sizeof m->programs[0].name, "%s", program);
  return &m->programs[m->nprograms++];
}

void metrics_observe_dispatch(metrics_t *m, const metrics_dispatch_t *o) {
  pthread_mutex_lock(&m->lock);
  program_of(m, o->program)->n[o->code == PTO_OK ? O_OK : O_FAILED]++;
  observe(&m->hist[H_QUEUE], o->queue_us);
  observe(&m->hist[H_ARENA], o->arena_us);
  observe(&m->hist[H_COMPUTE], o->run_us);
  observe(&m->hist[H_REQUEST], o->total_us);
  if (o->arena_ready) {
    if (m->have_key && m->last_key != o->arena_key) m->sizing_switches++;
    m->have_key = true;
    m->last_key = o->arena_key;
  }
  pthread_mutex_unlock(&m->lock);
}

void metrics_count_rejected(metrics_t *m, const char *program) {
  pthread_mutex_lock(&m->lock);
  program_of(m, program)->n[O_REJECTED]++;
  pthread_mutex_unlock(&m->lock);
  metrics_count_dispatch(m, METRICS_REJECTED);
}

void metrics_count_request(metrics_t *m) {
  atomic_fetch_add_explicit(&m->requests, 1, memory_order_relaxed);
}

void metrics_count_cancelled(metrics_t *m) {
  atomic_fetch_add_explicit(&m->cancelled, 1, memory_order_relaxed);
}

void metrics_count_dispatch(metrics_t *m, metrics_outcome_t outcome) {
  static const int slot[] = {[METRICS_OK] = O_OK, [METRICS_FAILED] = O_FAILED,
                             [METRICS_REJECTED] = O_REJECTED};
  atomic_fetch_add_explicit(&m->dispatches[slot[outcome]], 1, memory_order_relaxed);
}

void metrics_totals(metrics_t *m, metrics_totals_t *t) {
  t->requests = atomic_load(&m->requests);
  t->dispatches_ok = atomic_load(&m->dispatches[O_OK]);
  t->dispatches_failed = atomic_load(&m->dispatches[O_FAILED]);
  t->dispatches_rejected = atomic_load(&m->dispatches[O_REJECTED]);
  t->cancelled = atomic_load(&m->cancelled);
}

void metrics_snapshot_init(metrics_snapshot_t *s) {
  memset(s, 0, sizeof *s);
  s->prewarm_first_dispatch_hit = -1;
}

/* ---- the exposition ----------------------------------------------------- */

static void head(tb_t *t, const char *name, const char *type, const char *help) {
  tb_put(t, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A gauge of client memory in two samples, {use="input"} and {use="output"}. */
static void by_use(tb_t *t, const char *name, const char *help, uint64_t input, uint64_t output) {
  head(t, name, "gauge", help);
  tb_put(t, "%s{use=\"input\"} %llu\n", name, (unsigned long long)input);
  tb_put(t, "%s{use=\"output\"} %llu\n", name, (unsigned long long)output);
}

static void one(tb_t *t, const char *name, const char *type, const char *help, uint64_t v) {
  head(t, name, type, help);
  tb_put(t, "%s %" PRIu64 "\n", name, v);
}

static void ring_gauge(tb_t *t, const char *name, const char *help, const pto_sizing_t *p,
                       int field) {
  head(t, name, "gauge", help);
  for (int r = 0; r < PTO_RING_COUNT; r++)
    tb_put(t, "%s{ring=\"%d\"} %" PRIu64 "\n", name, r, p->value[field][r]);
}

static void histogram(tb_t *t, const char *name, const char *help, const histogram_t *h) {
  uint64_t below = 0;
  head(t, name, "histogram", help);
  for (size_t i = 0; i < NBOUNDS; i++) {
    below += h->buckets[i];
    tb_put(t, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, (double)bounds_us[i] / 1e6,
           below);
  }
  tb_put(t, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.6f\n%s_count %" PRIu64 "\n", name,
         h->count, name, h->sum_s, name, h->count);
}

static void daemon_part(tb_t *t, const metrics_snapshot_t *s) {
  head(t, "ptod_info", "gauge", "Build and device of this daemon (always 1).");
  tb_put(t, "ptod_info{version=\"%s\",device=\"%u\",platform=\"%s\"} 1\n", s->version, s->device,
         s->platform);
  one(t, "ptod_uptime_seconds", "gauge", "Seconds since the daemon started.", s->uptime_s);
  head(t, "ptod_state", "gauge", "1 for the state the daemon is in, 0 for the others.");
  for (int i = 0; i < s->nstates; i++)
    tb_put(t, "ptod_state{state=\"%s\"} %d\n", s->state_names[i], s->state == i);
  one(t, "ptod_clients", "gauge", "Connected clients.", s->clients);
  one(t, "ptod_requests_total", "counter", "Requests received, every method.", s->totals.requests);
  head(t, "ptod_dispatches_total", "counter", "Dispatches answered, by outcome.");
  tb_put(t, "ptod_dispatches_total{outcome=\"ok\"} %" PRIu64 "\n", s->totals.dispatches_ok);
  tb_put(t, "ptod_dispatches_total{outcome=\"failed\"} %" PRIu64 "\n", s->totals.dispatches_failed);
  tb_put(t, "ptod_dispatches_total{outcome=\"rejected\"} %" PRIu64 "\n", s->totals.dispatches_rejected);
  one(t, "ptod_pending_requests", "gauge",
      "Device requests admitted and not answered yet: waiting plus running (Triton: pending "
      "requests).",
      s->queue_depth + s->queue_running);
  one(t, "ptod_queue_depth", "gauge", "Device requests waiting for the device.", s->queue_depth);
  one(t, "ptod_queue_capacity", "gauge", "queue_depth: the admission queue's bound.",
      s->queue_capacity);
  one(t, "ptod_queue_running", "gauge", "Device requests running (0 or 1).", s->queue_running);
  head(t, "ptod_queue_waiting", "gauge",
       "Device requests waiting, by priority (lower runs sooner; an aged request counts as -8).");
  for (int p = 0; p < 16; p++)
    tb_put(t, "ptod_queue_waiting{priority=\"%d\"} %" PRIu64 "\n", p - 8, s->queue_by_priority[p]);
  one(t, "ptod_requests_cancelled_total", "counter",
      "Requests their client cancelled while they waited (answered CANCELLED).",
      s->totals.cancelled);
  by_use(t, "ptod_client_held_bytes",
         "Bytes held for clients: unread input and decoded requests, answers not yet written.",
         s->client_input, s->client_output);
  one(t, "ptod_client_memory_limit_bytes", "gauge", "[daemon] clients_memory.", s->client_limit);
  by_use(t, "ptod_client_connection_limit_bytes",
         "Per connection: [daemon] input_limit and output_limit.", s->conn_input_limit,
         s->conn_output_limit);
  by_use(t, "ptod_client_connection_held_max_bytes",
         "The most one connection holds: input (received and decoded), output (unsent answers).",
         s->conn_most_input, s->conn_most_output);
  one(t, "ptod_log_lines_suppressed_total", "counter",
      "Client-caused log lines dropped by the rate limit.", s->log_lines_suppressed);
  one(t, "ptod_shm_regions", "gauge", "Shared-memory regions registered, all clients.",
      s->shm_regions);
  one(t, "ptod_shm_regions_limit", "gauge", "[daemon] shm_regions_total.", s->shm_regions_limit);
  one(t, "ptod_shm_mapped_bytes", "gauge", "Bytes of shared-memory regions mapped, all clients.",
      s->shm_bytes);
  one(t, "ptod_shm_mapped_limit_bytes", "gauge", "[daemon] shm_limit_total.", s->shm_bytes_limit);
  tb_put(t, "# HELP ptod_passed_fds File descriptors clients passed: parked (not yet taken by "
            "shm.register), closing (these and closed connections' sockets, handed to the closing "
            "thread).\n"
            "# TYPE ptod_passed_fds gauge\n");
  tb_put(t, "ptod_passed_fds{state=\"parked\"} %llu\n", (unsigned long long)s->fds_parked);
  tb_put(t, "ptod_passed_fds{state=\"closing\"} %llu\n", (unsigned long long)s->fds_closing);
  one(t, "ptod_passed_fds_parked_max", "gauge",
      "The most passed fds one connection has parked (at most 8).", s->fds_most_parked);
  one(t, "ptod_open_files_limit", "gauge", "The daemon's RLIMIT_NOFILE.", s->fds_limit);
}

static void arena_part(tb_t *t, const metrics_snapshot_t *s, uint64_t switches) {
  one(t, "ptod_arena_builds_total", "counter", "Arena builds (prewarms included).", s->arena_builds);
  one(t, "ptod_arena_hits_total", "counter", "Dispatches whose sizing matched the cached arena.",
      s->arena_hits);
  one(t, "ptod_arena_misses_total", "counter", "Dispatches that had to build the arena.",
      s->arena_misses);
  head(t, "ptod_arena_build_seconds_total", "counter", "Time spent building arenas.");
  tb_put(t, "ptod_arena_build_seconds_total %.6f\n", (double)s->arena_build_us_total / 1e6);
  one(t, "ptod_arena_sizing_switches_total", "counter",
      "Dispatches whose sizing differed from the previous dispatch's (each rebuilds the arena; "
      "see advise).",
      switches);
  one(t, "ptod_arena_bytes", "gauge", "Device bytes the cached arena holds.", s->arena_bytes);
  head(t, "ptod_prewarm_first_dispatch_hit", "gauge",
       "Whether the first dispatch after the prewarm hit it (-1: no dispatch yet).");
  tb_put(t, "ptod_prewarm_first_dispatch_hit %d\n", s->prewarm_first_dispatch_hit);
  ring_gauge(t, "ptod_ring_peak_tasks", "Most tasks live at once on the ring, any dispatch.",
             &s->peaks, PTO_FIELD_TASK_WINDOW);
  ring_gauge(t, "ptod_ring_peak_heap_bytes", "Most heap bytes live on the ring, any dispatch.",
             &s->peaks, PTO_FIELD_HEAP);
  ring_gauge(t, "ptod_ring_peak_dep_entries",
             "Most dependency-pool entries in use on the ring, any dispatch.", &s->peaks,
             PTO_FIELD_DEP_POOL);
  one(t, "ptod_memory_limit_bytes", "gauge", "[device] memory.", s->memory_limit);
  head(t, "ptod_memory_used_bytes", "gauge", "Device memory held, by use.");
  tb_put(t, "ptod_memory_used_bytes{use=\"arena\"} %" PRIu64 "\n", s->memory_arena);
  tb_put(t, "ptod_memory_used_bytes{use=\"buffers\"} %" PRIu64 "\n", s->memory_buffers);
  tb_put(t, "ptod_memory_used_bytes{use=\"staging\"} %" PRIu64 "\n", s->memory_staging);
  one(t, "ptod_memory_free_bytes", "gauge", "Device memory left under the limit.", s->memory_free);
  one(t, "ptod_resident_bytes", "gauge", "Bytes of the device-resident buffers (KV caches, ...).",
      s->memory_buffers);
  one(t, "ptod_resident_buffers", "gauge", "Device-resident buffers allocated.",
      s->resident_buffers);
}

char *metrics_render(metrics_t *m, const metrics_snapshot_t *s, size_t *ret_len) {
  metrics_t copy;
  tb_t t;

  pthread_mutex_lock(&m->lock);
  memcpy(&copy, m, sizeof copy); /* the lock member of the copy is never used */
  pthread_mutex_unlock(&m->lock);

  tb_init(&t);
  daemon_part(&t, s);
  head(&t, "ptod_program_dispatches_total", "counter",
       "Dispatches answered, by program and outcome (Triton: per-model success and failure).");
  for (uint32_t i = 0; i <= METRICS_MAX_PROGRAMS; i++) {
    const program_counts_t *p = &copy.programs[i];
    if (i >= copy.nprograms && i != METRICS_MAX_PROGRAMS) continue;
    if (i == METRICS_MAX_PROGRAMS && !(p->n[0] | p->n[1] | p->n[2])) continue;
    for (int o = 0; o < O_COUNT; o++)
      tb_put(&t, "ptod_program_dispatches_total{program=\"%s\",outcome=\"%s\"} %" PRIu64 "\n",
             p->name, outcome_names[o], p->n[o]);
  }
  head(&t, "ptod_errors_total", "counter", "Errors answered, by name.");
  /* The table's rows, not every code below MAX_CODE looked up in it: a
   * lookup per code was about 32,000 comparisons a render. */
#define ERROR_LINE_(name, code, msg)                                                               \
  if ((code) < MAX_CODE)                                                                           \
    tb_put(&t, "ptod_errors_total{name=\"%s\"} %" PRIu64 "\n", #name, copy.errors[code]);
  PTO_ERROR_MAP(ERROR_LINE_)
#undef ERROR_LINE_
  for (int h = 0; h < H_COUNT; h++) histogram(&t, hist_info[h].name, hist_info[h].help, &copy.hist[h]);
  arena_part(&t, s, copy.sizing_switches);
  return tb_take(&t, ret_len);
}
