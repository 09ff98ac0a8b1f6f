/* SPDX-License-Identifier: Apache-2.0 */
/* dfx.h — a dispatch's DFX artefacts (docs/runtime.md "DFX"): the run's
 * record (runtime trace.h) rendered as
 *   swimlane     Chrome trace-event JSON (Perfetto, chrome://tracing)
 *   scope_stats  JSON lines: the sizing, then one line per scope
 *   dep_graph    Graphviz DOT: one node per task, one edge per dependency
 * and, where the daemon has a diagnostics_dir, written there as files.
 *
 * Device thread (the record is read after rt_run returned).  Every
 * function returns 0 or a negative error; strings are malloc'ed and owned
 * by the dfx_artefacts_t until dfx_artefacts_free.
 */
#ifndef PTOD_DFX_H
#define PTOD_DFX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/sizing.h>

#include "methods.h"
#include "trace.h"

/* The most tasks one traced dispatch records (documented in
 * docs/runtime.md): a larger run gets `refused` instead of artefacts. */
#define DFX_MAX_TASKS RT_TRACE_DEFAULT_MAX_TASKS

typedef struct dfx_artefacts {
  char *text[3]; /* swimlane, scope_stats, dep_graph; NULL when not asked for */
  size_t len[3];
  char refused[512]; /* "" or why the result carries no artefacts */
} dfx_artefacts_t;

enum { DFX_SWIMLANE, DFX_SCOPE_STATS, DFX_DEP_GRAPH };

/* Whether the config asks for any artefact. */
bool dfx_wanted(const proto_config_t *c);

/* A record for a run with that config (rt_trace_free frees it): NULL in
 * *ret when nothing is asked for.  -ENOMEM. */
int dfx_trace_new(const proto_config_t *c, rt_trace_t **ret);

/* What the artefacts are of: the program, the device, the request's
 * request_id (NULL: none; protocol 1.2) and how log lines name the request
 * (request.h req_tag; NULL: "dispatch <seq>" alone).  The request_id goes
 * into every artefact: the swimlane's otherData, scope_stats' first line,
 * a comment atop the dep graph; so a file in diagnostics_dir names it too. */
typedef struct dfx_subject {
  const char *program;
  uint32_t device;
  const char *request_id;
  const char *tag;
} dfx_subject_t;

/* Render what c asks for from the record of a run of who->program on
 * who->device, in at most `budget` bytes of text for all artefacts together
 * (so rendering never takes more memory than could be delivered).  A
 * record that dropped anything against its caps, or artefacts that would
 * pass the budget, render nothing and say so in ret->refused.  -ENOMEM. */
int dfx_render(const rt_trace_t *tr, const proto_config_t *c, const dfx_subject_t *who,
               size_t budget, dfx_artefacts_t *ret);

/* Where a dispatch's artefacts go as files: diagnostics_dir and its
 * quota (diagnostics_max_bytes / _files). */
typedef struct dfx_dir {
  const char *path; /* NULL or "": no files */
  uint64_t max_bytes;
  uint32_t max_files;
} dfx_dir_t;

/* Write the artefacts as new files DIR/<name>-<pid>-<seq>.<ext> (never
 * following or replacing anything already there) after removing the
 * oldest artefact files in DIR (of any ptod run) until the new ones fit
 * the quota; artefacts larger than the quota by themselves are not
 * written.  ret_where gets the glob of the files written (DIR, then
 * "*-<pid>-<seq>.*"), else "".  Logged through the client log limiter
 * (log.h): written, refused or failed, once. */
void dfx_save(const dfx_artefacts_t *a, const dfx_dir_t *dir, uint64_t seq,
              const dfx_subject_t *who, char *ret_where, size_t len);

/* Fill the result's dfx map: the artefacts, unless they and the outputs
 * (`outputs_bytes`) would not fit in `output_limit` — then `refused` says
 * so (and where the files are, `where`, when written).  The map points
 * into a (keep it until the response is encoded). */
void dfx_to_result(dfx_artefacts_t *a, uint64_t outputs_bytes, uint64_t output_limit,
                   const char *where, proto_dfx_t *ret);

void dfx_artefacts_free(dfx_artefacts_t *a);

/* All of it for one dispatch that ran (successfully or not) with record
 * tr: render (within the larger of output_limit and, with a directory,
 * its max_bytes: what could be delivered at all), save under dir
 * (dfx_save; NULL: no files), fill *ret for the response.  Returns 0 or -ENOMEM (then *ret is empty).  Free a with
 * dfx_artefacts_free once encoded. */
int dfx_collect(const rt_trace_t *tr, const proto_config_t *c, const dfx_subject_t *who,
                const dfx_dir_t *dir, uint64_t seq, uint64_t outputs_bytes,
                uint64_t output_limit, dfx_artefacts_t *a, proto_dfx_t *ret);

#endif
