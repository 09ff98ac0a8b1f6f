/* ptod.h — the daemon: what it owns, shared by its modules.
 *
 * One ptod_t per process.  The loop thread owns the configuration, the
 * server and the service; the device thread (dispatch.h) owns the runtime's
 * runs, resident buffer memory and the staging area.  What both read is
 * atomic or behind `lock`.
 */
#ifndef PTOD_PTOD_H
#define PTOD_PTOD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include <pto/sizing.h>

#include "advise.h"
#include "buffers.h"
#include "config.h"
#include "device.h"
#include "dispatch.h"
#include "metrics.h"
#include "runtime.h"
#include "server.h"

typedef enum ptod_state {
  PTOD_WARMING = 0,
  PTOD_READY = 1,
  PTOD_DRAINING = 2,
} ptod_state_t;

const char *ptod_state_name(ptod_state_t state);

typedef struct ptod {
  uv_loop_t *loop;
  const char *config_path; /* NULL: built-in defaults */
  cfg_t cfg;               /* the running configuration (loop thread) */
  pto_sizing_t env;        /* PTO2_RING_* as read at start-up */

  dev_device_t *dev;
  rt_runtime_t *rt;
  buf_table_t *buffers;
  advise_t *advise;
  dsp_t *dsp;
  srv_t *srv;

  atomic_int state; /* ptod_state_t */
  uint64_t started_ns;
  atomic_uint_fast64_t dispatches_ok, dispatches_failed, dispatches_rejected;
  atomic_uint_fast64_t requests;

  /* The prewarmed sizing and whether the first dispatch after it hit. */
  pthread_mutex_t lock;
  pto_sizing_resolved_t prewarm_sizing;
  uint64_t prewarm_key;
  int first_dispatch_hit; /* -1 until a dispatch reaches the arena, then 0 or 1 */

  metrics_t *metrics;          /* counters and histograms (metrics.h) */
  struct metrics_feed *feed;   /* the HTTP endpoint and textfile (metrics_feed.h); loop thread */

  /* Device thread only: the grow-only staging area for host arguments. */
  void *staging;
  uint64_t staging_bytes;
  uint64_t dispatch_seq;
} ptod_t;

/* Record an error code for metrics (any thread). */
void ptod_count_error(ptod_t *d, int code);

/* Record a prewarm of `sizing` (device thread, or start-up). */
void ptod_set_prewarm(ptod_t *d, const pto_sizing_resolved_t *sizing);

#endif
