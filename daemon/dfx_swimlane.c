/* SPDX-License-Identifier: Apache-2.0 */
/* dfx_swimlane.c — the run's record as Chrome trace-event JSON.
 *
 * One process (the device), one thread per lane: core 0..n-1, then the
 * orchestrator (rt_run's caller, which also runs tasks), then the
 * schedulers.  Level 1: one complete event ("ph": "X") per task on the
 * lane that ran it.  Level >= 2 adds the orchestrator's phases (the
 * orchestration, every scope, every wait for room on a ring), the
 * schedulers' hand-offs (a core's finished task taken up by a scheduler),
 * one counter track per ring and resource
 * ("ring 1 heap bytes", "ring 1 task window"), each sample with the used
 * amount and the capacity, and an instant event for a ring error.  Times
 * are microseconds from the start of the run, as the format wants.
 * One event per line, so that a diff or grep of two traces reads well.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <pto/errors.h>

#include "dfx_render.h"
#include "symname.h"

const char *dfx_kernel_name(dfx_names_t *names, pto_kernel_fn fn) {
  for (uint32_t i = 0; i < names->n; i++)
    if (names->known[i].fn == fn) return names->known[i].name;
  if (names->n < sizeof names->known / sizeof names->known[0]) {
    uint32_t i = names->n++;
    names->known[i].fn = fn;
    return symname_of((const void *)(uintptr_t)fn, names->known[i].name,
                      sizeof names->known[i].name);
  }
  return symname_of((const void *)(uintptr_t)fn, names->scratch, sizeof names->scratch);
}

void dfx_put_sizing(tb_t *t, const pto_sizing_resolved_t *s) {
  static const char *const keys[PTO_FIELD_COUNT] = {"ring_task_window", "ring_heap",
                                                    "ring_dep_pool"};
  tb_put(t, "{");
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    tb_put(t, "%s\"%s\": [", f ? ", " : "", keys[f]);
    for (int r = 0; r < PTO_RING_COUNT; r++)
      tb_put(t, "%s%" PRIu64, r ? ", " : "", s->value[f][r]);
    tb_put(t, "]");
  }
  tb_put(t, "}");
}

static void us(tb_t *t, uint64_t ns) { tb_put(t, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000)); }

static void lane_names(tb_t *t, const rt_trace_t *tr, const char *program, uint32_t device) {
  tb_put(t, "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %u, \"args\": {\"name\": ", device);
  {
    char name[160];
    snprintf(name, sizeof name, "ptod device %u: %s", device, program);
    tb_json_str(t, name);
  }
  tb_put(t, "}},\n");
  for (uint32_t l = 0; l < tr->nlanes; l++) {
    char name[48];
    if (l < tr->ncores)
      snprintf(name, sizeof name, "core %u", l);
    else if (l == tr->ncores)
      snprintf(name, sizeof name, "orchestrator");
    else
      snprintf(name, sizeof name, "scheduler %u", l - tr->ncores - 1);
    tb_put(t, "{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %u, \"tid\": %u, "
              "\"args\": {\"name\": \"%s\"}},\n",
           device, l, name);
    tb_put(t, "{\"ph\": \"M\", \"name\": \"thread_sort_index\", \"pid\": %u, \"tid\": %u, "
              "\"args\": {\"sort_index\": %u}},\n",
           device, l, l);
  }
}

static void complete(tb_t *t, uint32_t device, uint32_t lane, const char *cat, const char *name,
                     uint64_t b, uint64_t e) {
  tb_put(t, "{\"ph\": \"X\", \"pid\": %u, \"tid\": %u, \"cat\": \"%s\", \"name\": ", device, lane,
         cat);
  tb_json_str(t, name);
  tb_put(t, ", \"ts\": ");
  us(t, b);
  tb_put(t, ", \"dur\": ");
  us(t, e > b ? e - b : 0);
}

static void tasks(tb_t *t, const rt_trace_t *tr, uint32_t device, dfx_names_t *names) {
  for (uint32_t i = 0; i < tr->ntasks; i++) {
    const rt_trace_task_t *k = &tr->tasks[i];
    if (k->core == RT_TRACE_NONE) {
      /* Skipped after an error: it never ran; mark where it was submitted. */
      tb_put(t, "{\"ph\": \"i\", \"s\": \"t\", \"pid\": %u, \"tid\": %u, \"cat\": \"not run\", "
                "\"name\": ", device, tr->ncores);
      tb_json_str(t, dfx_kernel_name(names, k->kernel));
      tb_put(t, ", \"ts\": ");
      us(t, k->submit_ns);
      tb_put(t, ", \"args\": {\"task\": %u, \"ring\": %u, \"heap_bytes\": %" PRIu64 "}},\n", i,
             k->ring, k->heap_bytes);
      continue;
    }
    complete(t, device, k->core, "task", dfx_kernel_name(names, k->kernel), k->start_ns,
             k->end_ns);
    tb_put(t, ", \"args\": {\"task\": %u, \"ring\": %u, \"scope\": ", i, k->ring);
    if (k->scope == RT_TRACE_NONE)
      tb_put(t, "null");
    else
      tb_put(t, "%u", k->scope);
    tb_put(t, ", \"heap_bytes\": %" PRIu64 ", \"deps\": %u, \"submit_us\": ", k->heap_bytes,
           k->ndeps);
    us(t, k->submit_ns);
    tb_put(t, ", \"ready_us\": ");
    us(t, k->ready_ns);
    tb_put(t, "}},\n");
  }
}

static void phases(tb_t *t, const rt_trace_t *tr, uint32_t device) {
  uint32_t orch = tr->ncores;
  for (uint32_t i = 0; i < tr->nscopes; i++) {
    const rt_trace_scope_t *s = &tr->scopes[i];
    char name[64];
    snprintf(name, sizeof name, "scope %u (depth %u, ring %u)", i, s->depth, s->ring);
    complete(t, device, orch, "scope", name, s->begin_ns, s->end_ns ? s->end_ns : tr->end_ns);
    tb_put(t, ", \"args\": {\"scope\": %u, \"depth\": %u, \"ring\": %u, \"tasks\": %" PRIu64 "}},\n",
           i, s->depth, s->ring, s->tasks);
  }
  for (uint32_t l = 0; l < tr->nlanes; l++)
    for (uint32_t i = 0; i < tr->lanes[l].nphases; i++) {
      const rt_trace_phase_t *p = &tr->lanes[l].phases[i];
      char name[64];
      if (p->ring == RT_TRACE_NONE)
        snprintf(name, sizeof name, "%s", p->name);
      else
        snprintf(name, sizeof name, "%s (ring %u)", p->name, p->ring);
      complete(t, device, l, l == orch ? "orchestrator" : "scheduler", name, p->begin_ns,
               p->end_ns);
      tb_put(t, "},\n");
    }
}

static void counter(tb_t *t, uint32_t device, uint32_t ring, const char *what, uint64_t ns,
                    uint64_t used, uint64_t capacity) {
  tb_put(t, "{\"ph\": \"C\", \"pid\": %u, \"name\": \"ring %u %s\", \"ts\": ", device, ring, what);
  us(t, ns);
  tb_put(t, ", \"args\": {\"used\": %" PRIu64 ", \"capacity\": %" PRIu64 "}},\n", used, capacity);
}

/* Ring use as each submit saw it (the peaks' view), back to 0 at the end. */
static void counters(tb_t *t, const rt_trace_t *tr, uint32_t device) {
  bool used[PTO_RING_COUNT] = {false};
  for (uint32_t i = 0; i < tr->ntasks; i++) {
    const rt_trace_task_t *k = &tr->tasks[i];
    uint32_t r = k->ring;
    used[r] = true;
    counter(t, device, r, "heap bytes", k->submit_ns, k->ring_heap,
            tr->sizing.value[PTO_FIELD_HEAP][r]);
    counter(t, device, r, "task window", k->submit_ns, k->ring_tasks,
            tr->sizing.value[PTO_FIELD_TASK_WINDOW][r] - 1);
  }
  if (tr->failure.set) {
    const rt_trace_failure_t *f = &tr->failure;
    used[f->ring] = true;
    tb_put(t, "{\"ph\": \"i\", \"s\": \"g\", \"pid\": %u, \"tid\": %u, \"cat\": \"error\", "
              "\"name\": \"%s on ring %u\", \"ts\": ",
           device, tr->ncores, pto_error_name(f->code), f->ring);
    us(t, f->at_ns);
    tb_put(t, ", \"args\": {\"ring\": %u, \"field\": \"%s\", \"requested\": %" PRIu64
              ", \"capacity\": %" PRIu64
              ", \"live_tasks\": %" PRIu64 ", \"live_heap\": %" PRIu64 ", \"live_deps\": %" PRIu64
              ", \"scope\": ",
           f->ring, f->field, f->requested, f->capacity, f->ring_tasks, f->ring_heap, f->ring_deps);
    if (f->scope == RT_TRACE_NONE)
      tb_put(t, "null}},\n");
    else
      tb_put(t, "%u}},\n", f->scope);
  }
  for (uint32_t r = 0; r < PTO_RING_COUNT; r++) {
    if (!used[r]) continue;
    counter(t, device, r, "heap bytes", tr->end_ns, 0, tr->sizing.value[PTO_FIELD_HEAP][r]);
    counter(t, device, r, "task window", tr->end_ns, 0,
            tr->sizing.value[PTO_FIELD_TASK_WINDOW][r] - 1);
  }
}

void dfx_render_swimlane(tb_t *t, const rt_trace_t *tr, uint32_t level, const dfx_subject_t *who,
                         dfx_names_t *names) {
  const char *program = who->program;
  uint32_t device = who->device;
  tb_put(t, "{\"displayTimeUnit\": \"ns\", \"otherData\": {\"program\": ");
  tb_json_str(t, program);
  if (who->request_id) {
    tb_put(t, ", \"request_id\": ");
    tb_json_str(t, who->request_id);
  }
  tb_put(t, ", \"level\": %u, \"tasks\": %u, \"run_us\": ", level, tr->ntasks);
  us(t, tr->end_ns);
  tb_put(t, ", \"sizing\": ");
  dfx_put_sizing(t, &tr->sizing);
  if (tr->failure.set)
    tb_put(t, ", \"error\": \"%s\", \"error_ring\": %u", pto_error_name(tr->failure.code),
           tr->failure.ring);
  tb_put(t, "},\n\"traceEvents\": [\n");
  lane_names(t, tr, program, device);
  tasks(t, tr, device, names);
  if (level >= 2) {
    phases(t, tr, device);
    counters(t, tr, device);
  }
  /* The last event: JSON has no trailing comma. */
  tb_put(t, "{\"ph\": \"M\", \"name\": \"process_sort_index\", \"pid\": %u, "
            "\"args\": {\"sort_index\": 0}}\n]}\n",
         device);
}
