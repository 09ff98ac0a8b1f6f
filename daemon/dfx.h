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

/* Render what c asks for from the record of a run of `program` on
 * `device`.  A record that dropped anything against its caps renders
 * nothing and says so in ret->refused.  -ENOMEM. */
int dfx_render(const rt_trace_t *tr, const proto_config_t *c, const char *program,
               uint32_t device, dfx_artefacts_t *ret);

/* Write the artefacts as new files DIR/<name>-<pid>-<seq>.<ext> (never
 * following or replacing anything already there); ret_where (may be NULL)
 * gets the common prefix "DIR/...-<pid>-<seq>".  -errno of the first
 * failure. */
int dfx_write_files(const dfx_artefacts_t *a, const char *dir, uint64_t seq, char *ret_where,
                    size_t len);

/* Fill the result's dfx map: the artefacts, unless they and the outputs
 * (`outputs_bytes`) would not fit in `output_limit` — then `refused` says
 * so (and where the files are, `where`, when written).  The map points
 * into a (keep it until the response is encoded). */
void dfx_to_result(dfx_artefacts_t *a, uint64_t outputs_bytes, uint64_t output_limit,
                   const char *where, proto_dfx_t *ret);

void dfx_artefacts_free(dfx_artefacts_t *a);

/* All of it for one dispatch that ran (successfully or not) with record
 * tr: render, write under dir (NULL or "": no files; a failure is logged
 * and ignored), fill *ret for the response.  Returns 0 or -ENOMEM (then
 * *ret is empty).  Free a with dfx_artefacts_free once encoded. */
int dfx_collect(const rt_trace_t *tr, const proto_config_t *c, const char *program,
                uint32_t device, const char *dir, uint64_t seq, uint64_t outputs_bytes,
                uint64_t output_limit, dfx_artefacts_t *a, proto_dfx_t *ret);

#endif
