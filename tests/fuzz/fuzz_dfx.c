/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz the DFX renderers (daemon/dfx.c, dfx_swimlane.c) on records of runs
 * built from the input, as rt_run could have left them: every index in
 * range (a task's ring, core, scope and producers; a scope's parent), the
 * lanes ncores + 1 + schedulers, phases only at level >= 2, names of real
 * functions as kernels; everything else (times, counts, sizes, the program
 * name's bytes, the failure, what was dropped) as the input says.
 *
 * Input: [swimlane 0..4] [scope_stats] [dep_gen] [device u32] [ncores]
 *   [nsched] [t0 u64] [end u64] [sizing 12 x u64] [failure...] [dropped]
 *   [outputs_bytes u32] [output_limit u32] [name len] name, then one task,
 *   scope or phase per step until the input ends.
 *
 * Checked:
 *   - dfx_render returns 0; a record that dropped anything renders nothing
 *     and says why in `refused`; otherwise exactly the artefacts asked for,
 *     each a text without NUL bytes;
 *   - the swimlane is one JSON value (a strict grammar) with one task
 *     event per task; scope_stats is one JSON object per line, 1 + one per
 *     scope; the dep graph is a `digraph` with braces balanced outside its
 *     strings, one node per task and one edge per dependency;
 *   - dfx_to_result refuses the artefacts exactly when they and the outputs
 *     do not fit output_limit, and otherwise points at them.
 */
#include <pto/errors.h>

#include "dfx.h"
#include "fuzz_common.h"

#define MAX_TASKS 256u
#define MAX_DEPS (4u * MAX_TASKS)
#define MAX_SCOPES 64u
#define MAX_PHASES 64u

/* Kernels: functions of libc (named by dladdr) and, rarely (symname_of
 * then reads this executable's symbol table, which is slow), a function of
 * this file. */
static void kernel_local(void) {}
static pto_kernel_fn kernel(uint8_t k) {
  switch (k % 16) {
    case 0: return (pto_kernel_fn)(uintptr_t)kernel_local;
    case 1: return (pto_kernel_fn)(uintptr_t)strlen;
    case 2: return (pto_kernel_fn)(uintptr_t)memmove;
    default: return (pto_kernel_fn)(uintptr_t)memcpy;
  }
}

/* The record's storage, reused by every input (no allocation per run). */
static struct {
  rt_trace_t tr;
  rt_trace_task_t tasks[MAX_TASKS];
  uint32_t deps[MAX_DEPS];
  rt_trace_scope_t scopes[MAX_SCOPES];
  rt_trace_lane_t lanes[16 + 1 + 4];
  rt_trace_phase_t phases[16 + 1 + 4][MAX_PHASES];
} rec;

static const char *const phase_names[] = {"orchestration", "wait for room", "hand-off"};
static const char *const fields[] = {"ring_task_window", "ring_heap", "ring_dep_pool"};

/* ---- a strict JSON grammar (RFC 8259; bytes >= 0x80 taken as they are) ---- */

typedef struct json {
  const char *p, *end;
  int depth;
} json_t;

static void ws(json_t *j) {
  while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\t' || *j->p == '\r')) j->p++;
}

static bool lit(json_t *j, const char *s) {
  size_t n = strlen(s);
  if ((size_t)(j->end - j->p) < n || memcmp(j->p, s, n) != 0) return false;
  j->p += n;
  return true;
}

static bool digits(json_t *j) {
  const char *start = j->p;
  while (j->p < j->end && *j->p >= '0' && *j->p <= '9') j->p++;
  return j->p > start;
}

static bool number(json_t *j) {
  if (j->p < j->end && *j->p == '-') j->p++;
  if (j->p < j->end && *j->p == '0')
    j->p++;
  else if (!digits(j))
    return false;
  if (j->p < j->end && *j->p == '.' && (j->p++, !digits(j))) return false;
  if (j->p < j->end && (*j->p == 'e' || *j->p == 'E')) {
    j->p++;
    if (j->p < j->end && (*j->p == '+' || *j->p == '-')) j->p++;
    if (!digits(j)) return false;
  }
  return true;
}

static bool string(json_t *j) {
  if (!lit(j, "\"")) return false;
  while (j->p < j->end && *j->p != '"') {
    unsigned char c = (unsigned char)*j->p++;
    if (c < 0x20) return false;
    if (c != '\\') continue;
    if (j->p >= j->end) return false;
    c = (unsigned char)*j->p++;
    if (c == 'u') {
      for (int i = 0; i < 4; i++, j->p++)
        if (j->p >= j->end || !strchr("0123456789abcdefABCDEF", *j->p) || !*j->p) return false;
    } else if (!strchr("\"\\/bfnrt", c) || !c) {
      return false;
    }
  }
  return lit(j, "\"");
}

static bool value(json_t *j);

/* An object (open '{', close '}', members) or an array ('[', ']'). */
static bool container(json_t *j, char open, char close, bool members) {
  if (!lit(j, (char[]){open, 0}) || ++j->depth > 64) return false;
  ws(j);
  if (lit(j, (char[]){close, 0})) return j->depth--, true;
  for (;;) {
    ws(j);
    if (members && (!string(j) || (ws(j), !lit(j, ":")))) return false;
    if (!value(j)) return false;
    ws(j);
    if (lit(j, (char[]){close, 0})) return j->depth--, true;
    if (!lit(j, ",")) return false;
  }
}

static bool value(json_t *j) {
  ws(j);
  if (j->p >= j->end) return false;
  switch (*j->p) {
    case '{': return container(j, '{', '}', true);
    case '[': return container(j, '[', ']', false);
    case '"': return string(j);
    case 't': return lit(j, "true");
    case 'f': return lit(j, "false");
    case 'n': return lit(j, "null");
    default: return number(j);
  }
}

/* Whether [p, end) is exactly one JSON value (blanks around it allowed). */
static bool json_valid(const char *p, const char *end) {
  json_t j = {p, end, 0};
  if (!value(&j)) return false;
  ws(&j);
  return j.p == end;
}

static size_t count(const char *text, const char *what) {
  size_t n = 0;
  for (const char *p = strstr(text, what); p; p = strstr(p + 1, what)) n++;
  return n;
}

/* ---- the record ------------------------------------------------------------ */

static void read_task(fuzz_in_t *in, rt_trace_t *tr, uint32_t ndeps_room) {
  rt_trace_task_t *k = &tr->tasks[tr->ntasks];
  uint32_t i = tr->ntasks++;
  uint8_t core = fuzz_u8(in), scope = fuzz_u8(in), ndeps = fuzz_u8(in) % 8;
  k->kernel = kernel(fuzz_u8(in));
  k->ring = fuzz_u8(in) % PTO_RING_COUNT;
  k->core = core == 0xff || tr->nlanes == 0 ? RT_TRACE_NONE : core % tr->nlanes;
  k->scope = scope == 0xff || tr->nscopes == 0 ? RT_TRACE_NONE : scope % tr->nscopes;
  k->submit_ns = fuzz_u32(in);
  k->ready_ns = k->submit_ns + fuzz_u16(in);
  k->start_ns = k->ready_ns + fuzz_u16(in);
  k->end_ns = fuzz_u8(in) == 0 ? fuzz_u64(in) : k->start_ns + fuzz_u16(in);
  k->heap_bytes = fuzz_u64(in);
  k->ring_tasks = fuzz_u16(in);
  k->ring_heap = fuzz_u64(in);
  k->ring_deps = fuzz_u16(in);
  k->id = i;
  k->dep_begin = tr->ndeps;
  if (i == 0 || ndeps > ndeps_room) ndeps = 0;
  for (uint8_t d = 0; d < ndeps; d++) tr->deps[tr->ndeps++] = fuzz_u8(in) % i;
  k->ndeps = ndeps;
}

static void read_scope(fuzz_in_t *in, rt_trace_t *tr) {
  rt_trace_scope_t *s = &tr->scopes[tr->nscopes];
  uint32_t i = tr->nscopes++;
  uint8_t parent = fuzz_u8(in);
  s->parent = parent == 0xff || i == 0 ? RT_TRACE_NONE : parent % i;
  s->depth = s->parent == RT_TRACE_NONE ? 0 : tr->scopes[s->parent].depth + 1;
  s->ring = fuzz_u8(in) % PTO_RING_COUNT;
  s->begin_ns = fuzz_u32(in);
  s->end_ns = fuzz_u8(in) == 0 ? 0 : s->begin_ns + fuzz_u32(in); /* 0: still open at the end */
  s->tasks = fuzz_u16(in);
}

static void read_phase(fuzz_in_t *in, rt_trace_t *tr) {
  rt_trace_lane_t *l = &tr->lanes[fuzz_u8(in) % tr->nlanes];
  rt_trace_phase_t *p;
  uint8_t ring = fuzz_u8(in);
  if (l->nphases == MAX_PHASES) return;
  p = &l->phases[l->nphases++];
  p->name = phase_names[fuzz_u8(in) % 3];
  p->ring = ring == 0xff ? RT_TRACE_NONE : ring % PTO_RING_COUNT;
  p->begin_ns = fuzz_u32(in);
  p->end_ns = p->begin_ns + fuzz_u32(in);
}

static void read_failure(fuzz_in_t *in, rt_trace_t *tr) {
  rt_trace_failure_t *f = &tr->failure;
  uint8_t how = fuzz_u8(in);
  if (!(how & 1)) return;
  f->set = true;
  f->code = how & 2 ? PTO_E_OUT_OF_MEMORY : (int)fuzz_u8(in);
  f->ring = fuzz_u8(in) % PTO_RING_COUNT;
  f->scope = tr->nscopes && (how & 4) ? fuzz_u8(in) % tr->nscopes : RT_TRACE_NONE;
  f->field = fields[fuzz_u8(in) % 3];
  f->at_ns = fuzz_u64(in);
  f->requested = fuzz_u64(in);
  f->capacity = fuzz_u64(in);
  f->ring_tasks = fuzz_u64(in);
  f->ring_heap = fuzz_u64(in);
  f->ring_deps = fuzz_u64(in);
}

/* The record's fixed part; tasks, scopes and phases follow from the rest. */
static void read_record(fuzz_in_t *in, rt_trace_t *tr, uint32_t level) {
  uint8_t ncores = fuzz_u8(in) % 16 + 1, nsched = fuzz_u8(in) % 4;
  tr->level = level;
  tr->ncores = ncores;
  tr->nlanes = ncores + 1u + nsched;
  for (uint32_t l = 0; level >= 2 && l < tr->nlanes; l++) tr->lanes[l].phases = rec.phases[l];
  tr->t0_ns = fuzz_u64(in);
  tr->end_ns = fuzz_u64(in);
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++) tr->sizing.value[f][r] = fuzz_u64(in);
}

static void read_steps(fuzz_in_t *in, rt_trace_t *tr) {
  while (in->left > 0) {
    uint8_t step = fuzz_u8(in);
    if (step % 4 == 0 && tr->nscopes < MAX_SCOPES)
      read_scope(in, tr);
    else if (step % 4 == 1 && tr->level >= 2)
      read_phase(in, tr);
    else if (tr->ntasks < MAX_TASKS)
      read_task(in, tr, tr->max_deps - tr->ndeps);
    else
      break;
  }
}

/* ---- the checks ------------------------------------------------------------ */

static uint32_t lines_valid_json(const char *text, size_t len) {
  uint32_t lines = 0;
  for (const char *p = text, *end = text + len; p < end; lines++) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    FUZZ_CHECK(nl, "scope_stats line %u has no newline", lines);
    FUZZ_CHECK(json_valid(p, nl), "scope_stats line %u is not JSON: %.*s", lines, (int)(nl - p), p);
    p = nl + 1;
  }
  return lines;
}

static void check_dot(const char *text, const rt_trace_t *tr) {
  int depth = 0;
  bool quoted = false;
  uint64_t ndeps = 0;
  const char *body = strchr(text, '\n'); /* after the name, which may hold anything */
  FUZZ_CHECK(strncmp(text, "digraph \"", 9) == 0 && body, "the dep graph does not start a digraph");
  for (const char *p = text; *p; p++) {
    if (quoted && *p == '\\' && p[1])
      p++;
    else if (*p == '"')
      quoted = !quoted;
    else if (!quoted && (*p == '{' || *p == '}'))
      depth += *p == '{' ? 1 : -1;
    FUZZ_CHECK(depth >= 0, "the dep graph closes a brace it did not open");
  }
  FUZZ_CHECK(!quoted && depth == 0, "the dep graph leaves a string or brace open");
  for (uint32_t i = 0; i < tr->ntasks; i++) ndeps += tr->tasks[i].ndeps;
  FUZZ_CHECK(count(body, " -> t") == ndeps, "the dep graph has %zu edges for %llu dependencies",
             count(body, " -> t"), (unsigned long long)ndeps);
  FUZZ_CHECK(count(body, " [label=\"t") == tr->ntasks, "the dep graph has %zu nodes for %u tasks",
             count(body, " [label=\"t"), tr->ntasks);
}

static void check_artefacts(const dfx_artefacts_t *a, const rt_trace_t *tr,
                            const proto_config_t *c) {
  bool asked[3] = {c->enable_swimlane > 0, c->enable_scope_stats == 1, c->enable_dep_gen == 1};
  for (int w = 0; w < 3; w++) {
    FUZZ_CHECK(!a->text[w] == !asked[w], "artefact %d: asked %d, rendered %d", w, asked[w],
               a->text[w] != NULL);
    if (a->text[w])
      FUZZ_CHECK(strlen(a->text[w]) == a->len[w], "artefact %d holds a NUL byte", w);
  }
  if (a->text[DFX_SWIMLANE]) {
    const char *s = a->text[DFX_SWIMLANE];
    FUZZ_CHECK(json_valid(s, s + a->len[DFX_SWIMLANE]), "the swimlane is not JSON:\n%s", s);
    FUZZ_CHECK(count(s, "\"args\": {\"task\": ") == tr->ntasks,
               "the swimlane has %zu task events for %u tasks", count(s, "\"args\": {\"task\": "),
               tr->ntasks);
  }
  if (a->text[DFX_SCOPE_STATS]) {
    uint32_t lines = lines_valid_json(a->text[DFX_SCOPE_STATS], a->len[DFX_SCOPE_STATS]);
    FUZZ_CHECK(lines == 1 + tr->nscopes, "scope_stats has %u lines for %u scopes", lines,
               tr->nscopes);
  }
  if (a->text[DFX_DEP_GRAPH]) check_dot(a->text[DFX_DEP_GRAPH], tr);
}

static void check_result(dfx_artefacts_t *a, uint64_t outputs, uint64_t limit) {
  uint64_t total = a->len[0] + a->len[1] + a->len[2];
  bool was_refused = a->refused[0] != '\0';
  proto_dfx_t r;
  dfx_to_result(a, outputs, limit, "", &r);
  if (was_refused || total + outputs > limit) {
    FUZZ_CHECK(r.refused && r.refused[0], "artefacts of %llu bytes + %llu over %llu not refused",
               (unsigned long long)total, (unsigned long long)outputs,
               (unsigned long long)limit);
    FUZZ_CHECK(!r.swimlane.ptr && !r.scope_stats.ptr && !r.dep_graph.ptr,
               "a refused result still carries artefacts");
    return;
  }
  FUZZ_CHECK(!r.refused, "artefacts that fit were refused: %s", r.refused);
  FUZZ_CHECK(r.swimlane.len == a->len[DFX_SWIMLANE] && r.scope_stats.len == a->len[DFX_SCOPE_STATS] &&
                 r.dep_graph.len == a->len[DFX_DEP_GRAPH],
             "the result does not carry the artefacts as rendered");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in_t in = {data, size};
  proto_config_t c;
  rt_trace_t *tr = &rec.tr;
  dfx_artefacts_t a;
  char program[PROTO_NAME_MAX + 1];
  dfx_subject_t who = {0};
  size_t nlen, budget;
  const uint8_t *name;
  uint32_t device;
  uint64_t outputs, limit;
  uint8_t dropped;

  proto_config_init(&c);
  c.enable_swimlane = fuzz_u8(&in) % 5;
  c.enable_scope_stats = fuzz_u8(&in) & 1;
  c.enable_dep_gen = fuzz_u8(&in) & 1;
  if (!dfx_wanted(&c)) c.enable_dep_gen = 1; /* else the daemon keeps no record */
  device = fuzz_u32(&in);
  memset(&rec, 0, sizeof rec);
  tr->max_tasks = MAX_TASKS;
  tr->max_deps = MAX_DEPS;
  tr->tasks = rec.tasks;
  tr->deps = rec.deps;
  tr->scopes = rec.scopes;
  tr->lanes = rec.lanes;
  read_record(&in, tr, (uint32_t)c.enable_swimlane); /* as dfx_trace_new records */
  read_failure(&in, tr);
  dropped = fuzz_u8(&in);
  tr->tasks_dropped = dropped & 1;
  tr->scopes_dropped = (dropped >> 1) & 1;
  outputs = fuzz_u32(&in);
  limit = fuzz_u32(&in);
  name = fuzz_bytes(&in, fuzz_u8(&in) % (PROTO_NAME_MAX + 1), &nlen);
  memcpy(program, name, nlen);
  program[nlen] = '\0';
  for (size_t i = 0; i < nlen; i++)
    if (!program[i]) program[i] = '?'; /* a C string, any other byte */
  /* No budget, or one the artefacts may pass (then nothing is rendered). */
  budget = fuzz_u8(&in) & 1 ? SIZE_MAX : fuzz_u32(&in);
  read_steps(&in, tr);

  who.program = program;
  who.device = device;
  FUZZ_CHECK(dfx_render(tr, &c, &who, budget, &a) == 0, "dfx_render failed");
  if (!tr->t0_ns) {
    FUZZ_CHECK(!a.text[0] && !a.text[1] && !a.text[2] && !a.refused[0],
               "a record of no run rendered something");
  } else if (rt_trace_incomplete(tr)) {
    FUZZ_CHECK(a.refused[0] && !a.text[0] && !a.text[1] && !a.text[2],
               "an incomplete record was rendered");
  } else if (budget != SIZE_MAX && a.refused[0]) {
    FUZZ_CHECK(!a.text[0] && !a.text[1] && !a.text[2], "artefacts refused but rendered");
  } else {
    FUZZ_CHECK(a.len[0] + a.len[1] + a.len[2] <= budget, "artefacts past their budget");
    check_artefacts(&a, tr, &c);
  }
  check_result(&a, outputs, limit);
  dfx_artefacts_free(&a);
  return 0;
}
