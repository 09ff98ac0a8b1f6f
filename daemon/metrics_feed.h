/* SPDX-License-Identifier: Apache-2.0 */
/* metrics_feed.h — the daemon's side of its metrics: the snapshot of its
 * gauges for metrics_render, and the two ways out besides the `metrics`
 * method: the HTTP endpoint ([metrics] listen, metrics_http.h) and the
 * node_exporter textfile ([metrics] textfile, rewritten atomically every
 * textfile_interval and once more at shut-down).
 *
 * Loop thread only.
 */
#ifndef PTOD_METRICS_FEED_H
#define PTOD_METRICS_FEED_H

#include <stddef.h>

#include "ptod.h"

typedef struct metrics_feed metrics_feed_t;

/* The exposition as of now, malloc'ed (the caller frees); NULL when out of
 * memory. */
char *metrics_feed_text(ptod_t *d, size_t *ret_len);

/* Start what [metrics] asks for (nothing by default): the feed, which
 * ptod.c keeps in d->feed, or NULL with the error of the endpoint that
 * could not start (err says which and why; nothing is left running). */
metrics_feed_t *metrics_feed_start(ptod_t *d, pto_error_t *err);

/* Stop serving, write the textfile a last time.  NULL accepted. */
void metrics_feed_stop(metrics_feed_t *f);

#endif
