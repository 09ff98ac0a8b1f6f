/* SPDX-License-Identifier: Apache-2.0 */
/* ptod.h — the daemon: what it owns, shared by its modules, and how it is
 * made and taken apart (ptod_core.c; its life, signals and reload are
 * ptod.c's, ptod_run.h).
 *
 * One ptod_t per process, in two contexts: the loop thread's (the
 * configuration, the server, the dispatcher) and the device thread's (the
 * runtime's runs, resident buffer memory, the staging area); what both
 * touch is atomic or behind its module's lock.
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
  PTOD_STATE_COUNT
} ptod_state_t;

/* The states' names, as `status`, `ping` and the exposition show them:
 * ptod_state_names[PTOD_READY] is "ready". */
extern const char *const ptod_state_names[PTOD_STATE_COUNT];
const char *ptod_state_name(ptod_state_t state);

/* The loop thread's context: set by ptod_create (ptod_core.c), then
 * written by ptod.c alone (reload, drain, the metrics feed); the modules
 * the loop runs read it there.  shm_totals is the one exception: shm.c's
 * running sum of every connection's regions, kept here so status sees
 * them all (loop thread too). */
typedef struct ptod_loop {
  uv_loop_t *uv;
  const char *config_path; /* NULL: built-in defaults */
  cfg_t cfg;               /* the running configuration */
  srv_t *srv;
  dsp_t *dsp;
  struct metrics_feed *feed; /* metrics_feed_start's: the HTTP endpoint and textfile */
  shm_totals_t shm_totals;
  uint64_t started_ns;
} ptod_loop_t;

/* The device thread's context: opened by ptod_create, then the device
 * thread's (jobs.c runs every device request; prewarm before it has
 * work).  What the loop reads of it (program list, buffer list, advice,
 * the prewarm record) is behind each module's own lock; the rest is the
 * holder's of the device token (dispatch.h): the device thread's, or the
 * loop's while it runs a job bounded before it starts. */
typedef struct ptod_device {
  pto_sizing_t env; /* PTO2_RING_* as read at start-up */
  dev_device_t *dev;
  rt_runtime_t *rt;
  buf_table_t *buffers;
  advise_t *advise;
  prewarm_record_t prewarm;
  staging_t staging;
  uint64_t dispatch_seq;
} ptod_device_t;

/* One per process.  state and metrics are what both threads touch: state
 * is atomic (ptod.c writes it), metrics has its own lock (every module
 * counts into it). */
typedef struct ptod {
  ptod_loop_t loop;
  ptod_device_t device;
  atomic_int state; /* ptod_state_t */
  metrics_t *metrics;
} ptod_t;

/* Make the daemon for *cfg and the PTO2_RING_* sizing *env, in its
 * start-up order: the device, its runtime, buffer table, advisor, metrics
 * and staging area; the device thread (dispatch.h) on loop; the server on
 * cfg's socket, bound but not accepting until srv_listen, answering through
 * handlers(d) (request.h's req_handlers: passed in, so this module needs
 * nothing of the modules it serves).  state is PTOD_WARMING.  Returns 0
 * with *ret set; on failure, logs what failed, releases what was made and
 * returns -PTO_E_INVALID_CONFIG when the device cannot be opened as
 * configured, -PTO_E_INTERNAL otherwise (err says which and why).
 * Loop thread. */
int ptod_create(const cfg_t *cfg, const pto_sizing_t *env, uv_loop_t *loop,
                srv_handlers_t (*handlers)(ptod_t *d), ptod_t **ret, pto_error_t *err);

/* Close the server and the device thread (if still open), run the loop
 * until their handles are closed, then release the device and d.  NULL
 * accepted. */
void ptod_destroy(ptod_t *d);

/* What the daemon shows of itself as of now, for `status` and the
 * exposition alike (metrics.h's snapshot: gauges, totals, limits).  Loop
 * thread. */
void ptod_snapshot(ptod_t *d, metrics_snapshot_t *s);

/* The dispatcher's capacity for cfg's queue_depth and queue_full
 * (dsp_create, dsp_set_capacity): queue_depth when busy fails fast, no
 * bound when requests wait (the server bounds each connection). */
uint32_t ptod_queue_capacity(const cfg_t *cfg);

/* The server's options as cfg sets them (start-up and reload). */
void ptod_server_options(const cfg_t *cfg, srv_options_t *o);

#endif
