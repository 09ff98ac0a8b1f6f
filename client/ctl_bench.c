/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_bench.c — bench PROGRAM [ARG]... (ctl.h): the same dispatch
 * --warmup times, then --count times measured, on one daemon; the
 * latency's and the daemon's own time's spread, the arena's hits and the
 * sizing. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "ctl.h"
#include "ctl_print.h"

/* The measured runs. */
typedef struct samples {
  double *lat;   /* client round trip, us, per run */
  double *total; /* the daemon's timing_us.total, per run */
  long hits, misses;
  pto_sizing_resolved_t sizing; /* the last run's */
} samples_t;

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Nearest-rank percentile of sorted v[0..n). */
static double percentile(const double *v, long n, double p) {
  long rank = (long)ceil(p / 100.0 * (double)n);
  if (rank < 1) rank = 1;
  return v[rank - 1];
}

int ctl_bench_check(ctl_t *c) {
  if (ctl_multi(c))
    return ctl_usage_error("'bench' measures one daemon; give one --socket or --device.");
  return ctl_dispatch_parse(c, "bench");
}

/* The warm-up and every measured run send the very same request, config
 * included, so they all resolve to the same sizing and share the arena.
 * With --shm every run reads the same inputs too: inouts are put back
 * before each (not timed; inline, encoding them is). */
static void measure(ctl_t *c, target_t *t, samples_t *s) {
  pto_request_t req = {.method = PTO_METHOD_DISPATCH, .u.dispatch = c->req.u.dispatch};
  if (t->rc == 0 && c->shm) {
    t->rc = ctl_shm_stage(t->client, c->args.args, c->args.n, c->timeout_ms, &t->shm, &t->err);
    if (t->rc == 0) req.u.dispatch.args = ctl_shm_args(t->shm);
  }
  for (long i = 0; t->rc == 0 && i < c->warmup + c->count; i++) {
    pto_dispatch_result_t *r = NULL;
    void *any = NULL;
    double t0;
    if (t->shm) ctl_shm_refill(t->shm);
    t0 = ctl_now_ms();
    t->rc = pto_client_call(t->client, &req, &c->opts, c->timeout_ms, &any, &t->err);
    r = any;
    if (t->rc < 0) break;
    if (i >= c->warmup) {
      long k = i - c->warmup;
      s->lat[k] = (ctl_now_ms() - t0) * 1000.0;
      s->total[k] = (double)r->timing_us.total;
      s->hits += r->arena.hit;
      s->misses += !r->arena.hit;
    }
    s->sizing = r->sizing;
    pto_result_free(r);
  }
}

static void json_stats(json_t *j, const char *key, const double *v, long n) {
  double sum = 0;
  for (long i = 0; i < n; i++) sum += v[i];
  json_key(j, key);
  json_begin_object(j);
  json_key(j, "min");
  json_int(j, llround(v[0]));
  json_key(j, "median");
  json_int(j, llround(percentile(v, n, 50)));
  json_key(j, "p99");
  json_int(j, llround(percentile(v, n, 99)));
  json_key(j, "max");
  json_int(j, llround(v[n - 1]));
  json_key(j, "mean");
  json_int(j, llround(sum / (double)n));
  json_end_object(j);
}

static void json_bench(const ctl_t *c, const samples_t *s) {
  json_t j;
  json_init(&j, stdout);
  json_begin_object(&j);
  json_key(&j, "program");
  json_cstr(&j, c->req.u.dispatch.program);
  json_key(&j, "count");
  json_int(&j, c->count);
  json_key(&j, "warmup");
  json_int(&j, c->warmup);
  json_stats(&j, "latency_us", s->lat, c->count);
  json_stats(&j, "daemon_total_us", s->total, c->count);
  json_key(&j, "arena");
  json_begin_object(&j);
  json_key(&j, "hits");
  json_int(&j, s->hits);
  json_key(&j, "misses");
  json_int(&j, s->misses);
  json_end_object(&j);
  json_key(&j, "sizing");
  ctl_json_sizing(&j, &s->sizing);
  json_end_object(&j);
  json_finish(&j);
}

static void human_bench(const ctl_t *c, const samples_t *s) {
  long n = c->count;
  pto_sizing_t sizing;
  printf("bench %s: %ld dispatches after %ld warm-up\n", c->req.u.dispatch.program, n, c->warmup);
  printf("latency (client round trip)  min %.0f us  median %.0f us  p99 %.0f us  max %.0f us\n",
         s->lat[0], percentile(s->lat, n, 50), percentile(s->lat, n, 99), s->lat[n - 1]);
  printf("daemon total                 min %.0f us  median %.0f us  p99 %.0f us  max %.0f us\n",
         s->total[0], percentile(s->total, n, 50), percentile(s->total, n, 99), s->total[n - 1]);
  printf("arena                        %ld hit%s, %ld miss%s\n", s->hits, s->hits == 1 ? "" : "s",
         s->misses, s->misses == 1 ? "" : "es");
  printf("sizing                       ");
  pto_sizing_from_resolved(&s->sizing, &sizing);
  ctl_print_sizing(stdout, &sizing);
}

int ctl_bench_run(ctl_t *c) {
  target_t *t = &c->targets[0];
  samples_t s = {0};
  int rc = CTL_EXIT_OK;
  s.lat = calloc((size_t)c->count, sizeof(double));
  s.total = calloc((size_t)c->count, sizeof(double));
  if (!s.lat || !s.total) {
    fprintf(stderr, "ptoctl: Out of memory for %ld samples.\n", c->count);
    rc = CTL_EXIT_PROTOCOL;
  } else {
    measure(c, t, &s);
    if (t->rc < 0) {
      rc = ctl_show_all(c, &(view_t){NULL, NULL});
    } else {
      qsort(s.lat, (size_t)c->count, sizeof(double), cmp_double);
      qsort(s.total, (size_t)c->count, sizeof(double), cmp_double);
      if (c->json)
        json_bench(c, &s);
      else
        human_bench(c, &s);
    }
  }
  free(s.lat);
  free(s.total);
  return rc;
}
