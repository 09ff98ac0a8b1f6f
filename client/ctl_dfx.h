/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_dfx.h — ptoctl's DFX side: saving a dispatch's artefacts
 * (dispatch --dfx-dir) and drawing the rings' occupancy from a saved
 * swimlane (dfx ring-occupancy TRACE.json -o rings.svg).
 *
 * Functions return 0 or -CTL_EXIT_* with msg saying why (ctl_args.h).
 * The `dfx` command's handlers, also in ctl_dfx.c, are declared in ctl.h
 * with the other commands'.
 */
#ifndef PTOCTL_DFX_H
#define PTOCTL_DFX_H

#include <stddef.h>

#include <pto/client.h>

/* Write the artefacts present in dfx as DIR/swimlane.json,
 * DIR/scope_stats.jsonl and DIR/dep_graph.dot (DIR created if missing);
 * say on stderr what was written, and the daemon's refusal if it sent one
 * (then -CTL_EXIT_DAEMON). */
int ctl_dfx_save(const char *dir, const pto_dfx_t *dfx, char *msg, size_t len);

/* Read a swimlane written with enable_swimlane >= 2 and draw, per ring it
 * used, the heap bytes and task-window slots in use over the run against
 * each capacity, marking the request that failed.  out: an SVG file. */
int ctl_dfx_ring_occupancy(const char *trace_path, const char *out_path, char *msg, size_t len);

#endif
