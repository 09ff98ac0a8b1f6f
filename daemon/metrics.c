#include "metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <pto/version.h>

#include "log.h"
#include "prewarm.h"
#include "request.h"

/* Upper bounds of the dispatch latency buckets, in seconds (+Inf implied). */
static const double latency_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                        0.025,  0.05,    0.1,    0.25,  0.5,    1,    2.5, 10};
#define LATENCY_BUCKETS (sizeof(latency_bounds) / sizeof(latency_bounds[0]))

void metrics_count_error(ptod_t *d, int code) {
  if (code <= 0 || code >= (int)(sizeof(d->error_counts) / sizeof(d->error_counts[0]))) return;
  pthread_mutex_lock(&d->lock);
  d->error_counts[code]++;
  pthread_mutex_unlock(&d->lock);
}

void metrics_observe_dispatch(ptod_t *d, uint64_t total_us) {
  double s = (double)total_us / 1e6;
  pthread_mutex_lock(&d->lock);
  for (size_t i = 0; i < LATENCY_BUCKETS; i++)
    if (s <= latency_bounds[i]) d->latency_buckets[i]++;
  d->latency_count++;
  d->latency_sum_s += s;
  pthread_mutex_unlock(&d->lock);
}

typedef struct text {
  char *buf;
  size_t len, cap;
  int failed;
} text_t;

static void put(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(text_t *t, const char *fmt, ...) {
  va_list ap;
  int n;
  if (t->failed) return;
  for (;;) {
    va_start(ap, fmt);
    n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = 1;
      return;
    }
    if ((size_t)n < t->cap - t->len) break;
    size_t cap = t->cap * 2 + (size_t)n;
    char *grown = realloc(t->buf, cap);
    if (!grown) {
      t->failed = 1;
      return;
    }
    t->buf = grown;
    t->cap = cap;
  }
  t->len += (size_t)n;
}

/* One metric with its HELP and TYPE lines. */
static void metric(text_t *t, const char *name, const char *type, const char *help,
                   unsigned long long value) {
  put(t, "# HELP %s %s\n# TYPE %s %s\n%s %llu\n", name, help, name, type, name, value);
}

char *metrics_render(ptod_t *d, size_t *ret_len) {
  text_t t = {malloc(4096), 0, 4096, 0};
  proto_status_result_t s;
  proto_arena_t *a = &s.arena;
  rt_cache_stats_t cs;
  buf_memory_t m;
  req_queue_stats_t q;
  srv_memory_t cm;
  uint64_t errors[sizeof(d->error_counts) / sizeof(d->error_counts[0])];
  uint64_t buckets[LATENCY_BUCKETS], count;
  double sum;

  if (!t.buf) return NULL;
  prewarm_arena_snapshot(&d->prewarm, d->rt, a);
  rt_cache_stats(d->rt, &cs);
  buf_memory(d->buffers, &m);
  req_queue_stats(d->requests, &q);
  srv_memory(d->srv, &cm);
  pthread_mutex_lock(&d->lock);
  memcpy(errors, d->error_counts, sizeof(errors));
  memcpy(buckets, d->latency_buckets, sizeof(buckets));
  count = d->latency_count;
  sum = d->latency_sum_s;
  pthread_mutex_unlock(&d->lock);

  put(&t, "# HELP ptod_info Build and device of this daemon.\n# TYPE ptod_info gauge\n");
  put(&t, "ptod_info{version=\"%s\",device=\"%u\",platform=\"%s\"} 1\n", PTO_VERSION,
      d->cfg.device.id, dev_name(d->dev));
  metric(&t, "ptod_uptime_seconds", "gauge", "Seconds since the daemon started.",
         (unsigned long long)((dsp_now_ns() - d->started_ns) / 1000000000u));
  put(&t, "# HELP ptod_state Current state (1 for the state the daemon is in).\n"
          "# TYPE ptod_state gauge\n");
  for (int st = PTOD_WARMING; st <= PTOD_DRAINING; st++)
    put(&t, "ptod_state{state=\"%s\"} %d\n", ptod_state_name((ptod_state_t)st),
        atomic_load(&d->state) == st);
  metric(&t, "ptod_clients", "gauge", "Connected clients.", srv_client_count(d->srv));
  metric(&t, "ptod_requests_total", "counter", "Requests received, every method.",
         (unsigned long long)atomic_load(&d->requests_total));
  put(&t, "# HELP ptod_dispatches_total Dispatches by outcome.\n# TYPE ptod_dispatches_total counter\n");
  put(&t, "ptod_dispatches_total{outcome=\"ok\"} %llu\n",
      (unsigned long long)atomic_load(&d->dispatches_ok));
  put(&t, "ptod_dispatches_total{outcome=\"failed\"} %llu\n",
      (unsigned long long)atomic_load(&d->dispatches_failed));
  put(&t, "ptod_dispatches_total{outcome=\"rejected\"} %llu\n",
      (unsigned long long)atomic_load(&d->dispatches_rejected));
  put(&t, "# HELP ptod_errors_total Errors answered, by name.\n# TYPE ptod_errors_total counter\n");
  for (size_t code = 1; code < sizeof(errors) / sizeof(errors[0]); code++)
    if (pto_error_name((int)code))
      put(&t, "ptod_errors_total{name=\"%s\"} %llu\n", pto_error_name((int)code),
          (unsigned long long)errors[code]);
  put(&t, "# HELP ptod_dispatch_duration_seconds From admission to the response, per dispatch "
          "that ran.\n# TYPE ptod_dispatch_duration_seconds histogram\n");
  for (size_t i = 0; i < LATENCY_BUCKETS; i++)
    put(&t, "ptod_dispatch_duration_seconds_bucket{le=\"%g\"} %llu\n", latency_bounds[i],
        (unsigned long long)buckets[i]);
  put(&t, "ptod_dispatch_duration_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)count);
  put(&t, "ptod_dispatch_duration_seconds_sum %.6f\n", sum);
  put(&t, "ptod_dispatch_duration_seconds_count %llu\n", (unsigned long long)count);
  metric(&t, "ptod_queue_depth", "gauge", "Device requests waiting for the device.", q.waiting);
  metric(&t, "ptod_queue_capacity", "gauge", "queue_depth: the admission queue's bound.",
         q.capacity);
  metric(&t, "ptod_queue_running", "gauge", "Device requests running (0 or 1).", q.running);
  metric(&t, "ptod_arena_builds_total", "counter", "Arena builds (prewarms included).", cs.builds);
  metric(&t, "ptod_arena_hits_total", "counter",
         "Arena lookups (dispatches and prewarms) whose sizing matched the cached arena.", cs.hits);
  metric(&t, "ptod_arena_misses_total", "counter",
         "Arena lookups (dispatches and prewarms) that had to build the arena.", cs.misses);
  put(&t, "# HELP ptod_arena_build_seconds_total Time spent building arenas.\n"
          "# TYPE ptod_arena_build_seconds_total counter\nptod_arena_build_seconds_total %.6f\n",
      (double)cs.total_build_us / 1e6);
  metric(&t, "ptod_arena_bytes", "gauge", "Device bytes the cached arena holds.", cs.bytes);
  put(&t, "# HELP ptod_prewarm_first_dispatch_hit Whether the first dispatch after the prewarm "
          "hit it (-1: no dispatch yet).\n# TYPE ptod_prewarm_first_dispatch_hit gauge\n"
          "ptod_prewarm_first_dispatch_hit %d\n",
      a->prewarm.first_dispatch_hit == PROTO_UNSET ? -1 : a->prewarm.first_dispatch_hit);
  metric(&t, "ptod_memory_limit_bytes", "gauge", "[device] memory.", m.limit);
  put(&t, "# HELP ptod_memory_used_bytes Device memory held, by use.\n"
          "# TYPE ptod_memory_used_bytes gauge\n");
  put(&t, "ptod_memory_used_bytes{use=\"arena\"} %llu\n", (unsigned long long)m.arena);
  put(&t, "ptod_memory_used_bytes{use=\"buffers\"} %llu\n", (unsigned long long)m.buffers);
  put(&t, "ptod_memory_used_bytes{use=\"staging\"} %llu\n", (unsigned long long)m.staging);
  metric(&t, "ptod_memory_free_bytes", "gauge", "Device memory left under the limit.", m.free);
  put(&t, "# HELP ptod_client_memory_bytes Bytes held for clients: unread input and decoded "
          "requests, and answers not yet written.\n# TYPE ptod_client_memory_bytes gauge\n");
  put(&t, "ptod_client_memory_bytes{use=\"input\"} %llu\n", (unsigned long long)cm.input);
  put(&t, "ptod_client_memory_bytes{use=\"output\"} %llu\n", (unsigned long long)cm.output);
  metric(&t, "ptod_client_memory_limit_bytes", "gauge", "[daemon] clients_memory.", cm.limit);
  metric(&t, "ptod_log_lines_suppressed_total", "counter",
         "Client-caused log lines dropped by the rate limit.", log_client_suppressed());

  if (t.failed) {
    free(t.buf);
    return NULL;
  }
  *ret_len = t.len;
  return t.buf;
}
