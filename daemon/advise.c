/* SPDX-License-Identifier: Apache-2.0 */
/* advise.c — see advise.h. */
#include "advise.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

typedef struct seen_program {
  char name[65];
  uint64_t dispatches;
  pto_sizing_t max;
} seen_program_t;

struct advise {
  pthread_mutex_t lock;
  pto_sizing_t max;
  uint64_t dispatches;
  seen_program_t programs[ADVISE_MAX_PROGRAMS];
  uint32_t nprograms;
  pto_sizing_resolved_t sizings[ADVISE_MAX_SIZINGS]; /* distinct, in first-use order */
  uint32_t nsizings;
  /* The arena as dispatches met it (advise_note_arena). */
  bool have_last, alternating_logged, first_missed;
  pto_sizing_resolved_t last;
  uint64_t switches, first_build_us;
  char first_program[65];
};

int advise_create(advise_t **ret) {
  advise_t *a = calloc(1, sizeof(*a));
  if (!a) return -ENOMEM;
  pthread_mutex_init(&a->lock, NULL);
  *ret = a;
  return 0;
}

void advise_free(advise_t *a) {
  if (!a) return;
  pthread_mutex_destroy(&a->lock);
  free(a);
}

static void fold(pto_sizing_t *into, const pto_sizing_t *peaks) {
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++)
      if (peaks->value[f][r] > into->value[f][r]) into->value[f][r] = peaks->value[f][r];
}

static bool sizing_known(const advise_t *a, const pto_sizing_resolved_t *s) {
  for (uint32_t i = 0; i < a->nsizings; i++)
    if (pto_sizing_equal(&a->sizings[i], s)) return true;
  return false;
}

void advise_record(advise_t *a, const char *program, const pto_sizing_t *peaks,
                   const pto_sizing_resolved_t *sizing) {
  pthread_mutex_lock(&a->lock);
  fold(&a->max, peaks);
  a->dispatches++;
  if (program && strlen(program) < sizeof a->programs[0].name) {
    seen_program_t *p = NULL;
    for (uint32_t i = 0; i < a->nprograms && !p; i++)
      if (strcmp(a->programs[i].name, program) == 0) p = &a->programs[i];
    if (!p && a->nprograms < ADVISE_MAX_PROGRAMS) {
      p = &a->programs[a->nprograms++];
      snprintf(p->name, sizeof p->name, "%s", program);
    }
    if (p) {
      fold(&p->max, peaks);
      p->dispatches++;
    }
  }
  if (sizing && !sizing_known(a, sizing) && a->nsizings < ADVISE_MAX_SIZINGS) {
    a->sizings[a->nsizings] = *sizing;
    memset(a->sizings[a->nsizings].source, 0, sizeof a->sizings[0].source);
    a->nsizings++;
  }
  pthread_mutex_unlock(&a->lock);
}

uint64_t advise_observed(advise_t *a, pto_sizing_t *ret_observed) {
  uint64_t n;
  pthread_mutex_lock(&a->lock);
  *ret_observed = a->max;
  n = a->dispatches;
  pthread_mutex_unlock(&a->lock);
  return n;
}

/* The smallest power of 2 that is >= floor and >= value. */
static uint64_t pow2_at_least(uint64_t value, uint64_t floor) {
  uint64_t p = floor;
  while (p < value && p < (UINT64_C(1) << 62)) p <<= 1;
  return p;
}

void advise_recommend(const pto_sizing_t *observed, pto_sizing_t *ret) {
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    uint64_t deps = observed->value[PTO_FIELD_DEP_POOL][r];
    ret->value[PTO_FIELD_TASK_WINDOW][r] =
        pow2_at_least(observed->value[PTO_FIELD_TASK_WINDOW][r] + 1, 4);
    ret->value[PTO_FIELD_HEAP][r] = pow2_at_least(observed->value[PTO_FIELD_HEAP][r], 1024);
    ret->value[PTO_FIELD_DEP_POOL][r] = deps < 4 ? 4 : deps;
  }
}

/* "16,4,4,4" or, for the heap, "4K,1K,1M,256M" as the config file reads it. */
static void field_value(const pto_sizing_t *s, int f, char *buf, size_t len) {
  size_t used = 0;
  buf[0] = '\0';
  for (int r = 0; r < PTO_RING_COUNT && used < len; r++) {
    uint64_t v = s->value[f][r];
    const char *unit = "";
    if (f == PTO_FIELD_HEAP) {
      static const char *const units[] = {"K", "M", "G", "T"};
      /* Exact powers of 2 >= 1K: the largest unit that divides them. */
      for (int u = 3; u >= 0; u--)
        if (v >= (UINT64_C(1) << (10 * (u + 1))) && v % (UINT64_C(1) << (10 * (u + 1))) == 0) {
          v >>= 10 * (u + 1);
          unit = units[u];
          break;
        }
    }
    used += (size_t)snprintf(buf + used, len - used, "%s%" PRIu64 "%s", r ? "," : "", v, unit);
  }
}

static const char *const config_names[PTO_FIELD_COUNT] = {"task_window", "heap", "dep_pool"};

void advise_config_lines(const pto_sizing_t *s, char *buf, size_t len) {
  static const char *const sections[2] = {"ring", "prewarm"};
  size_t used = 0;
  if (!buf || len == 0) return;
  buf[0] = '\0';
  for (int sec = 0; sec < 2 && used < len; sec++) {
    used += (size_t)snprintf(buf + used, len - used, "%s[%s]\n", sec ? "\n" : "", sections[sec]);
    for (int f = 0; f < PTO_FIELD_COUNT && used < len; f++) {
      char v[128];
      field_value(s, f, v, sizeof v);
      used += (size_t)snprintf(buf + used, len - used, "%s = %s\n", config_names[f], v);
    }
  }
}

/* "task_window = 16,4,4,4, heap = 4K,1K,1K,1K, dep_pool = 4,4,4,4" */
static void inline_lines(const pto_sizing_t *s, const char *section, char *buf, size_t len) {
  char v[PTO_FIELD_COUNT][96];
  for (int f = 0; f < PTO_FIELD_COUNT; f++) field_value(s, f, v[f], sizeof v[f]);
  snprintf(buf, len, "[%s] task_window = %s, heap = %s, dep_pool = %s", section, v[0], v[1], v[2]);
}

void advise_note_arena(advise_t *a, const char *program, const pto_sizing_resolved_t *sizing,
                       bool first, bool hit, uint64_t build_us) {
  bool log_first = false, log_alternating = false;
  pto_sizing_t used, fix, peaks;
  uint32_t nsizings;
  char lines[400];

  /* The device thread is the only writer of what this reads (the last
   * sizing, the sizings seen), so it reads unlocked: a dispatch with the
   * last one's sizing changes nothing and takes no lock. */
  if (!first && a->have_last && pto_sizing_equal(&a->last, sizing)) return;
  pthread_mutex_lock(&a->lock);
  if (first && !hit) {
    a->first_missed = true;
    a->first_build_us = build_us;
    snprintf(a->first_program, sizeof a->first_program, "%s", program ? program : "");
    log_first = true;
  }
  if (a->have_last && !pto_sizing_equal(&a->last, sizing)) {
    a->switches++;
    /* Back to a sizing used before: the dispatches alternate. */
    if (sizing_known(a, sizing) && !a->alternating_logged) {
      a->alternating_logged = true;
      log_alternating = true;
    }
  }
  a->have_last = true;
  a->last = *sizing;
  peaks = a->max;
  nsizings = a->nsizings;
  pthread_mutex_unlock(&a->lock);

  if (log_first) {
    pto_sizing_from_resolved(sizing, &used);
    inline_lines(&used, "prewarm", lines, sizeof lines);
    log_warning("The first dispatch (of '%s') missed the prewarmed arena and built its own in "
                "%" PRIu64 " ms; to have it find its arena built, set %s.",
                program ? program : "", build_us / 1000u, lines);
  }
  if (log_alternating) {
    advise_recommend(&peaks, &fix);
    inline_lines(&fix, "ring", lines, sizeof lines);
    log_warning("Dispatches alternate between %u ring sizings, and each switch rebuilds the "
                "arena; one sizing serves every dispatch seen so far: set %s (and the same in "
                "[prewarm]), and have clients send no ring sizes or these.",
                nsizings, lines);
  }
}

int advise_snapshot(advise_t *a, advise_program_t **ret_programs, uint32_t *ret_nprograms,
                    pto_sizing_t *sizings, uint32_t *ret_nsizings, char (*warnings)[768],
                    uint32_t *ret_nwarnings) {
  advise_program_t *progs;
  pto_sizing_t fix;
  char lines[400];
  uint32_t nw = 0;

  pthread_mutex_lock(&a->lock);
  progs = calloc(a->nprograms ? a->nprograms : 1, sizeof *progs);
  if (!progs) {
    pthread_mutex_unlock(&a->lock);
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < a->nprograms; i++) {
    snprintf(progs[i].name, sizeof progs[i].name, "%s", a->programs[i].name);
    progs[i].dispatches = a->programs[i].dispatches;
    progs[i].observed = a->programs[i].max;
    advise_recommend(&progs[i].observed, &progs[i].recommended);
  }
  *ret_nprograms = a->nprograms;
  for (uint32_t i = 0; i < a->nsizings; i++) pto_sizing_from_resolved(&a->sizings[i], &sizings[i]);
  *ret_nsizings = a->nsizings;
  advise_recommend(&a->max, &fix);
  inline_lines(&fix, "ring", lines, sizeof lines);
  if (a->nsizings > 1)
    snprintf(warnings[nw++], sizeof warnings[0],
             "Dispatches ran with %u different ring sizings, and each switch between them "
             "rebuilds the arena (%" PRIu64 " switches so far); one sizing serves all of them: "
             "%s, the same in [prewarm], and clients sending no ring sizes or these.",
             a->nsizings, a->switches, lines);
  if (a->first_missed)
    snprintf(warnings[nw++], sizeof warnings[0],
             "The first dispatch (of '%s') missed the prewarmed arena and paid a build of "
             "%" PRIu64 " ms; set [prewarm] to the sizing the first dispatch uses.",
             a->first_program, a->first_build_us / 1000u);
  *ret_nwarnings = nw;
  pthread_mutex_unlock(&a->lock);
  *ret_programs = progs;
  return 0;
}

int advise_result(advise_t *a, proto_advise_result_t *ret, advise_result_mem_t *mem) {
  uint32_t np = 0, ns = 0, nw = 0;
  memset(ret, 0, sizeof *ret);
  mem->programs = NULL;
  mem->wire_programs = NULL;
  advise_observed(a, &ret->observed);
  advise_recommend(&ret->observed, &ret->recommended);
  advise_config_lines(&ret->recommended, mem->config, sizeof mem->config);
  ret->config = mem->config;
  if (advise_snapshot(a, &mem->programs, &np, mem->sizings, &ns, mem->warnings, &nw) < 0)
    return -ENOMEM;
  mem->wire_programs = calloc(np ? np : 1, sizeof *mem->wire_programs);
  if (!mem->wire_programs) {
    advise_result_free(mem);
    return -ENOMEM;
  }
  for (uint32_t i = 0; i < np; i++)
    mem->wire_programs[i] = (proto_advise_program_t){mem->programs[i].name,
                                                     mem->programs[i].dispatches,
                                                     mem->programs[i].observed,
                                                     mem->programs[i].recommended};
  for (uint32_t i = 0; i < nw; i++) mem->warning_ptrs[i] = mem->warnings[i];
  ret->programs = mem->wire_programs;
  ret->nprograms = np;
  ret->sizings = mem->sizings;
  ret->nsizings = ns;
  ret->warnings = mem->warning_ptrs;
  ret->nwarnings = nw;
  return 0;
}

void advise_result_free(advise_result_mem_t *mem) {
  free(mem->programs);
  free(mem->wire_programs);
  mem->programs = NULL;
  mem->wire_programs = NULL;
}
