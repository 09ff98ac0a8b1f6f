/* metrics.h — the Prometheus text exposition of the `metrics` method. */
#ifndef PTOD_METRICS_H
#define PTOD_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "ptod.h"

/* Count an error answered, by code (any thread). */
void metrics_count_error(ptod_t *d, int code);

/* Record one finished dispatch's total latency (loop thread). */
void metrics_observe_dispatch(ptod_t *d, uint64_t total_us);

/* The exposition text, malloc'ed (the caller frees); *ret_len its length.
 * NULL when out of memory.  Loop thread. */
char *metrics_render(ptod_t *d, size_t *ret_len);

#endif
