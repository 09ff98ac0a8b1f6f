/* SPDX-License-Identifier: Apache-2.0 */
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
#include "prewarm.h"
#include "server.h"
#include "shm.h"
#include "staging.h"

typedef enum ptod_state {
  PTOD_WARMING = 0,
  PTOD_READY = 1,
  PTOD_DRAINING = 2,
} ptod_state_t;

static inline const char *ptod_state_name(ptod_state_t state) {
  switch (state) {
  case PTOD_WARMING: return "warming";
  case PTOD_READY: return "ready";
  case PTOD_DRAINING: return "draining";
  }
  return "unknown";
}

/* Each member has one owner, the module that writes it; the others read.
 * The loop thread owns cfg and the modules it runs (srv, requests); the
 * device thread (dispatch.h) owns the runtime's runs, staging and
 * dispatch_seq; what both touch is atomic or behind its module's lock. */
typedef struct ptod {
  uv_loop_t *loop;
  const char *config_path; /* NULL: built-in defaults */
  cfg_t cfg;               /* the running configuration (ptod.c, loop thread) */
  pto_sizing_t env;        /* PTO2_RING_* as read at start-up */

  dev_device_t *dev;
  rt_runtime_t *rt;
  buf_table_t *buffers;
  advise_t *advise;
  dsp_t *dsp;
  srv_t *srv;
  prewarm_record_t prewarm; /* prewarm.c */
  staging_t staging;        /* staging.c, device thread */
  uint64_t dispatch_seq;    /* jobs.c, device thread */
  shm_totals_t shm_totals;  /* shm.c: every connection's regions; loop thread */

  atomic_int state; /* ptod_state_t; ptod.c */
  uint64_t started_ns;
  metrics_t *metrics;          /* metrics.c: every event counted, its own lock */
  struct metrics_feed *feed;   /* metrics_feed.c: the HTTP endpoint and textfile; loop thread */
} ptod_t;

#endif
