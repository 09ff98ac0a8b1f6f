/* SPDX-License-Identifier: Apache-2.0 */
/* dfx.c — what a dispatch's DFX flags produce: see dfx.h. */
#include "dfx.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dfx_render.h"
#include "log.h"

bool dfx_wanted(const proto_config_t *c) {
  return c->enable_swimlane > 0 || c->enable_scope_stats == 1 || c->enable_dep_gen == 1;
}

int dfx_trace_new(const proto_config_t *c, rt_trace_t **ret) {
  *ret = NULL;
  if (!dfx_wanted(c)) return 0;
  return rt_trace_create(c->enable_swimlane > 0 ? (uint32_t)c->enable_swimlane : 0,
                         DFX_MAX_TASKS, ret);
}

/* Line 1 the sizing, then one line per scope: its tasks and the most of
 * each resource its ring had in use at any of its submits.  Those are the
 * moments the run's peaks are taken, so the per-ring maxima over these
 * lines are the dispatch's peaks. */
static void render_scope_stats(tb_t *t, const rt_trace_t *tr, const dfx_subject_t *who) {
  uint64_t (*peak)[3] = calloc(tr->nscopes ? tr->nscopes : 1, sizeof *peak);
  if (!peak) {
    t->failed = true;
    return;
  }
  for (uint32_t i = 0; i < tr->ntasks; i++) {
    const rt_trace_task_t *k = &tr->tasks[i];
    uint64_t *p;
    if (k->scope == RT_TRACE_NONE || k->scope >= tr->nscopes) continue;
    p = peak[k->scope];
    if (k->ring_tasks > p[0]) p[0] = k->ring_tasks;
    if (k->ring_heap > p[1]) p[1] = k->ring_heap;
    if (k->ring_deps > p[2]) p[2] = k->ring_deps;
  }
  tb_put(t, "{\"program\": ");
  tb_json_str(t, who->program);
  if (who->request_id) {
    tb_put(t, ", \"request_id\": ");
    tb_json_str(t, who->request_id);
  }
  tb_put(t, ", \"sizing\": ");
  dfx_put_sizing(t, &tr->sizing);
  if (tr->failure.set)
    tb_put(t, ", \"error\": \"%s\", \"error_ring\": %u, \"error_scope\": %d",
           pto_error_name(tr->failure.code), tr->failure.ring,
           tr->failure.scope == RT_TRACE_NONE ? -1 : (int)tr->failure.scope);
  tb_put(t, "}\n");
  for (uint32_t i = 0; i < tr->nscopes; i++) {
    const rt_trace_scope_t *s = &tr->scopes[i];
    tb_put(t, "{\"scope\": %u, \"depth\": %u, \"ring\": %u, \"parent\": ", i, s->depth, s->ring);
    if (s->parent == RT_TRACE_NONE)
      tb_put(t, "null");
    else
      tb_put(t, "%u", s->parent);
    tb_put(t, ", \"tasks\": %" PRIu64 ", \"peak_task_window\": %" PRIu64 ", \"peak_heap\": %" PRIu64
              ", \"peak_dep_pool\": %" PRIu64 "}\n",
           s->tasks, peak[i][0], peak[i][1], peak[i][2]);
  }
  free(peak);
}

/* One node per task (in a cluster per scope), one edge per dependency:
 * producer -> consumer. */
static void render_dep_graph(tb_t *t, const rt_trace_t *tr, const dfx_subject_t *who,
                             dfx_names_t *names) {
  /* A request_id is printable ASCII; a C comment holds any of it but its end. */
  if (who->request_id && !strstr(who->request_id, "*/"))
    tb_put(t, "/* request_id %s */\n", who->request_id);
  tb_put(t, "digraph ");
  tb_json_str(t, who->program);
  tb_put(t, " {\n  rankdir=LR;\n  node [shape=box, fontname=\"monospace\"];\n");
  for (uint32_t s = 0; s <= tr->nscopes; s++) {
    uint32_t scope = s < tr->nscopes ? s : RT_TRACE_NONE;
    bool open = false;
    for (uint32_t i = 0; i < tr->ntasks; i++) {
      const rt_trace_task_t *k = &tr->tasks[i];
      char label[160];
      if (k->scope != scope) continue;
      if (!open && scope != RT_TRACE_NONE) {
        tb_put(t, "  subgraph cluster_scope%u {\n    label=\"scope %u (depth %u, ring %u)\";\n",
               scope, scope, tr->scopes[scope].depth, tr->scopes[scope].ring);
        open = true;
      }
      snprintf(label, sizeof label, "t%u %s\\nring %u, %" PRIu64 " heap bytes", i,
               dfx_kernel_name(names, k->kernel), k->ring, k->heap_bytes);
      tb_put(t, "    t%u [label=\"%s\"];\n", i, label);
    }
    if (open) tb_put(t, "  }\n");
  }
  for (uint32_t i = 0; i < tr->ntasks; i++) {
    const rt_trace_task_t *k = &tr->tasks[i];
    for (uint32_t d = 0; d < k->ndeps; d++) tb_put(t, "  t%u -> t%u;\n", tr->deps[k->dep_begin + d], i);
  }
  tb_put(t, "}\n");
}

/* Hand t's text to ret: 0, -ENOMEM, or 1 when it passed its limit. */
static int take(tb_t *t, dfx_artefacts_t *ret, int which, size_t *budget) {
  bool too_large = t->too_large;
  ret->text[which] = tb_take(t, &ret->len[which]);
  if (!ret->text[which]) return too_large ? 1 : -ENOMEM;
  *budget -= ret->len[which];
  return 0;
}

/* Render one artefact into ret within *budget bytes. */
static int render_one(const rt_trace_t *tr, const proto_config_t *c, const dfx_subject_t *who,
                      dfx_names_t *names, int which, size_t *budget, dfx_artefacts_t *ret) {
  tb_t t;
  tb_init(&t);
  tb_limit(&t, *budget);
  if (which == DFX_SWIMLANE)
    dfx_render_swimlane(&t, tr, (uint32_t)c->enable_swimlane, who, names);
  else if (which == DFX_SCOPE_STATS)
    render_scope_stats(&t, tr, who);
  else
    render_dep_graph(&t, tr, who, names);
  return take(&t, ret, which, budget);
}

int dfx_render(const rt_trace_t *tr, const proto_config_t *c, const dfx_subject_t *who,
               size_t budget, dfx_artefacts_t *ret) {
  const bool wanted[3] = {c->enable_swimlane > 0, c->enable_scope_stats == 1,
                          c->enable_dep_gen == 1};
  const size_t limit = budget;
  dfx_names_t names;
  int rc = 0;

  memset(ret, 0, sizeof *ret);
  names.n = 0;
  if (!tr->t0_ns) return 0; /* rt_run refused before recording anything */
  if (rt_trace_incomplete(tr)) {
    snprintf(ret->refused, sizeof ret->refused,
             "The run submitted %" PRIu64 " tasks; a traced dispatch records at most %u "
             "(DFX_MAX_TASKS), so no artefact is returned rather than an incomplete one; trace "
             "a smaller run of the program.",
             (uint64_t)tr->ntasks + tr->tasks_dropped, tr->max_tasks);
    return 0;
  }
  for (int w = 0; w < 3 && rc == 0; w++)
    if (wanted[w]) rc = render_one(tr, c, who, &names, w, &budget, ret);
  if (rc != 0) dfx_artefacts_free(ret);
  if (rc == 1)
    snprintf(ret->refused, sizeof ret->refused,
             "The DFX artefacts of this run would take more than %zu bytes, the most ptod renders "
             "for one dispatch (the larger of output_limit and, with a diagnostics_dir, "
             "diagnostics_max_bytes), so none is returned; trace a smaller run of the program.",
             limit);
  return rc < 0 ? rc : 0;
}

void dfx_to_result(dfx_artefacts_t *a, uint64_t outputs_bytes, uint64_t output_limit,
                   const char *where, proto_dfx_t *ret) {
  uint64_t total = 0;
  memset(ret, 0, sizeof *ret);
  for (int w = 0; w < 3; w++) total += a->len[w];
  if (!a->refused[0] && total + outputs_bytes > output_limit)
    snprintf(a->refused, sizeof a->refused,
             "The DFX artefacts (%" PRIu64 " bytes) and the outputs (%" PRIu64 " bytes) of this "
             "dispatch exceed the connection's output budget (output_limit = %" PRIu64 " bytes), "
             "so the artefacts are not in the result%s%s; raise [daemon] output_limit or trace a "
             "smaller run.",
             total, outputs_bytes, output_limit, where && where[0] ? "; they were written to " : "",
             where && where[0] ? where : "");
  if (a->refused[0]) {
    ret->refused = a->refused;
    return;
  }
  if (a->text[DFX_SWIMLANE])
    ret->swimlane = (proto_bytes_t){(const uint8_t *)a->text[DFX_SWIMLANE], a->len[DFX_SWIMLANE]};
  if (a->text[DFX_SCOPE_STATS])
    ret->scope_stats =
        (proto_bytes_t){(const uint8_t *)a->text[DFX_SCOPE_STATS], a->len[DFX_SCOPE_STATS]};
  if (a->text[DFX_DEP_GRAPH])
    ret->dep_graph = (proto_bytes_t){(const uint8_t *)a->text[DFX_DEP_GRAPH], a->len[DFX_DEP_GRAPH]};
}

void dfx_artefacts_free(dfx_artefacts_t *a) {
  for (int w = 0; w < 3; w++) {
    free(a->text[w]);
    a->text[w] = NULL;
    a->len[w] = 0;
  }
}

int dfx_collect(const rt_trace_t *tr, const proto_config_t *c, const dfx_subject_t *who,
                const dfx_dir_t *dir, uint64_t seq, uint64_t outputs_bytes,
                uint64_t output_limit, dfx_artefacts_t *a, proto_dfx_t *ret) {
  char where[PATH_MAX + 64] = "";
  bool files = dir && dir->path && dir->path[0];
  uint64_t budget = files && dir->max_bytes > output_limit ? dir->max_bytes : output_limit;
  int rc;
  memset(ret, 0, sizeof *ret);
  rc = dfx_render(tr, c, who, budget > SIZE_MAX ? SIZE_MAX : (size_t)budget, a);
  if (rc < 0) return rc;
  if (files && !a->refused[0]) dfx_save(a, dir, seq, who, where, sizeof where);
  dfx_to_result(a, outputs_bytes, output_limit, where, ret);
  return 0;
}
