#include "advise.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct advise {
  pthread_mutex_t lock;
  pto_sizing_t max;
  uint64_t dispatches;
};

int advise_create(advise_t **ret) {
  advise_t *a = calloc(1, sizeof(*a));
  if (!a) return -1;
  pthread_mutex_init(&a->lock, NULL);
  *ret = a;
  return 0;
}

void advise_free(advise_t *a) {
  if (!a) return;
  pthread_mutex_destroy(&a->lock);
  free(a);
}

void advise_record(advise_t *a, const pto_sizing_t *peaks) {
  pthread_mutex_lock(&a->lock);
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++)
      if (peaks->value[f][r] > a->max.value[f][r]) a->max.value[f][r] = peaks->value[f][r];
  a->dispatches++;
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

/* The smallest power of 2 that is >= floor and > value. */
static uint64_t pow2_above(uint64_t value, uint64_t floor) {
  uint64_t p = floor;
  while (p <= value && p < (UINT64_C(1) << 62)) p <<= 1;
  return p;
}

void advise_recommend(const pto_sizing_t *observed, pto_sizing_t *ret, char *config, size_t len) {
  static const char *const config_names[PTO_FIELD_COUNT] = {"task_window", "heap", "dep_pool"};
  size_t used = 0;
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    uint64_t deps = observed->value[PTO_FIELD_DEP_POOL][r];
    ret->value[PTO_FIELD_TASK_WINDOW][r] = pow2_above(observed->value[PTO_FIELD_TASK_WINDOW][r], 4);
    ret->value[PTO_FIELD_HEAP][r] = pow2_above(observed->value[PTO_FIELD_HEAP][r], 1024);
    ret->value[PTO_FIELD_DEP_POOL][r] = deps < 4 ? 4 : deps;
  }
  if (!config || len == 0) return;
  config[0] = '\0';
  used += (size_t)snprintf(config, len, "[ring]\n");
  for (int f = 0; f < PTO_FIELD_COUNT && used < len; f++) {
    used += (size_t)snprintf(config + used, len - used, "%s = ", config_names[f]);
    for (int r = 0; r < PTO_RING_COUNT && used < len; r++) {
      char size[32];
      uint64_t v = ret->value[f][r];
      if (f == PTO_FIELD_HEAP && v >= 1024)
        /* K/M/G as the config file reads them. */
        snprintf(size, sizeof(size), "%llu%s",
                 (unsigned long long)(v >= (1u << 30) ? v >> 30 : v >= (1u << 20) ? v >> 20 : v >> 10),
                 v >= (1u << 30) ? "G" : v >= (1u << 20) ? "M" : "K");
      else
        snprintf(size, sizeof(size), "%llu", (unsigned long long)v);
      used += (size_t)snprintf(config + used, len - used, "%s%s", r ? "," : "", size);
    }
    if (used < len) used += (size_t)snprintf(config + used, len - used, "\n");
  }
}
