/* SPDX-License-Identifier: Apache-2.0 */
/* seq_orch.c — see seq_orch.h. */
#include "seq_orch.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Far above anything a test allocates; keeps the heap sums from wrapping. */
#define SEQ_OUT_MAX_BYTES (UINT64_C(1) << 48)

/* Consecutive tasks of one ring that share a scope: they become reclaimable
 * together, so one entry stands for all of them (a million noop tasks in one
 * scope cost one entry). */
struct seq_entry {
  uint64_t scope;
  uint64_t ntasks;
  uint64_t bytes;     /* heap bytes of these tasks, as counted (rounded) */
  uint64_t first_seq; /* submission number of the first of them */
};

struct seq_alloc {
  unsigned char *ptr;
  uint64_t bytes; /* exactly what the tensor needs */
  uint64_t seq;   /* the task that made it */
  uint32_t ring;
  int reclaimed;
};

struct seq_ring {
  struct seq_entry *e;
  size_t n, head, cap; /* entries [head, n) are not reclaimed */
  uint64_t live_bytes, live_tasks;
  uint64_t heap_limit; /* 0: none */
};

struct seq_orch {
  struct seq_ring ring[SEQ_ORCH_RINGS];
  struct seq_alloc *allocs;
  size_t nallocs, cap_allocs;
  uint64_t *scopes; /* ids of the open scopes; [0] is the implicit outermost */
  size_t nscopes, cap_scopes;
  uint64_t next_scope, next_seq;
  const pto_arg_t *args;
  uint32_t nargs;
  int check_inputs;
  seq_orch_stats_t stats;
  pto_error_t err;
};

static seq_orch_t *seq_of(pto_orch_t *orch) {
  return (seq_orch_t *)(void *)orch;
}

static int seq_grow(void **p, size_t *cap, size_t need, size_t elem) {
  size_t ncap;
  void *np;
  if (need <= *cap) return 0;
  ncap = *cap ? *cap * 2 : 16;
  while (ncap < need) ncap *= 2;
  np = realloc(*p, ncap * elem);
  if (np == NULL) return -ENOMEM;
  *p = np;
  *cap = ncap;
  return 0;
}

static int seq_failv(seq_orch_t *s, int code, const char *fmt, va_list ap)
    __attribute__((format(printf, 3, 0)));
static int seq_failv(seq_orch_t *s, int code, const char *fmt, va_list ap) {
  if (s->err.code == PTO_OK) {
    s->err.code = code;
    vsnprintf(s->err.message, sizeof s->err.message, fmt, ap);
  }
  return -code;
}

static int seq_fail(seq_orch_t *s, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int seq_fail(seq_orch_t *s, int code, const char *fmt, ...) {
  va_list ap;
  int rc;
  va_start(ap, fmt);
  rc = seq_failv(s, code, fmt, ap);
  va_end(ap);
  return rc;
}

static int seq_scope_open(const seq_orch_t *s, uint64_t scope) {
  for (size_t i = 0; i < s->nscopes; i++)
    if (s->scopes[i] == scope) return 1;
  return 0;
}

static void seq_poison(struct seq_alloc *a) {
  a->reclaimed = 1;
  memset(a->ptr, 0xff, a->bytes);
}

/* Retire, per ring, the leading entries whose scope has ended. */
static void seq_reclaim(seq_orch_t *s) {
  for (uint32_t r = 0; r < SEQ_ORCH_RINGS; r++) {
    struct seq_ring *ring = &s->ring[r];
    uint64_t boundary;
    while (ring->head < ring->n && !seq_scope_open(s, ring->e[ring->head].scope)) {
      ring->live_bytes -= ring->e[ring->head].bytes;
      ring->live_tasks -= ring->e[ring->head].ntasks;
      ring->head++;
    }
    if (ring->head == ring->n) ring->head = ring->n = 0;
    boundary = ring->head < ring->n ? ring->e[ring->head].first_seq : UINT64_MAX;
    for (size_t i = 0; i < s->nallocs; i++) {
      struct seq_alloc *a = &s->allocs[i];
      if (a->ring == r && !a->reclaimed && a->seq < boundary) seq_poison(a);
    }
  }
}

static void seq_release(seq_orch_t *s) {
  for (size_t i = 0; i < s->nallocs; i++) free(s->allocs[i].ptr);
  s->nallocs = 0;
  for (uint32_t r = 0; r < SEQ_ORCH_RINGS; r++) {
    s->ring[r].n = s->ring[r].head = 0;
    s->ring[r].live_bytes = s->ring[r].live_tasks = 0;
  }
}

static void seq_scope_begin(pto_orch_t *orch) {
  seq_orch_t *s = seq_of(orch);
  if (seq_grow((void **)&s->scopes, &s->cap_scopes, s->nscopes + 1, sizeof *s->scopes)) {
    seq_fail(s, PTO_E_INTERNAL, "seq_orch: out of memory for scope %zu.", s->nscopes);
    return;
  }
  s->scopes[s->nscopes++] = s->next_scope++;
  if (s->nscopes - 1 > s->stats.max_depth) s->stats.max_depth = (uint32_t)(s->nscopes - 1);
}

static void seq_scope_end(pto_orch_t *orch) {
  seq_orch_t *s = seq_of(orch);
  if (s->nscopes <= 1) {
    seq_fail(s, PTO_E_INTERNAL,
             "seq_orch: scope_end was called with no scope open; pair every scope_end with a "
             "scope_begin.");
    return;
  }
  s->nscopes--;
  seq_reclaim(s);
}

static int seq_fatal(pto_orch_t *orch, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int seq_fatal(pto_orch_t *orch, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  seq_failv(seq_of(orch), code, fmt, ap);
  va_end(ap);
  return -code;
}

static uint64_t seq_dim(const pto_tensor_t *t, uint32_t d) {
  return d < t->ndims ? t->shape[d] : 1;
}

static int64_t seq_stride(const pto_tensor_t *t, uint32_t d) {
  return d < t->ndims ? t->strides[d] : 0;
}

/* The bytes [*ret_lo, *ret_hi) of the buffer that the view's elements span;
 * -1 if that overflows or starts before the buffer. */
static int seq_span(const pto_tensor_t *t, uint64_t *ret_lo, uint64_t *ret_hi) {
  int64_t lo, hi, ds = (int64_t)pto_dtype_size(t->dtype);
  if (t->offset > INT64_MAX) return -1;
  lo = hi = (int64_t)t->offset;
  for (uint32_t d = 0; d < PTO_MAX_DIMS; d++) {
    int64_t ext;
    if (seq_dim(t, d) - 1 > INT64_MAX) return -1;
    if (__builtin_mul_overflow((int64_t)(seq_dim(t, d) - 1), seq_stride(t, d), &ext)) return -1;
    if (__builtin_add_overflow(ext < 0 ? lo : hi, ext, ext < 0 ? &lo : &hi)) return -1;
  }
  if (lo < 0 || __builtin_mul_overflow(lo, ds, &lo) || __builtin_add_overflow(hi, 1, &hi) ||
      __builtin_mul_overflow(hi, ds, &hi))
    return -1;
  *ret_lo = (uint64_t)lo;
  *ret_hi = (uint64_t)hi;
  return 0;
}

/* Copy the view's elements, in index order, to dst. */
static void seq_gather(const pto_tensor_t *t, unsigned char *dst) {
  const unsigned char *base = t->base;
  uint64_t ds = pto_dtype_size(t->dtype);
  for (uint64_t i0 = 0; i0 < seq_dim(t, 0); i0++)
    for (uint64_t i1 = 0; i1 < seq_dim(t, 1); i1++)
      for (uint64_t i2 = 0; i2 < seq_dim(t, 2); i2++)
        for (uint64_t i3 = 0; i3 < seq_dim(t, 3); i3++) {
          int64_t e = (int64_t)t->offset + (int64_t)i0 * seq_stride(t, 0) +
                      (int64_t)i1 * seq_stride(t, 1) + (int64_t)i2 * seq_stride(t, 2) +
                      (int64_t)i3 * seq_stride(t, 3);
          memcpy(dst, base + (uint64_t)e * ds, ds);
          dst += ds;
        }
}

static int seq_writes(pto_dir_t dir) {
  return dir == PTO_INOUT || dir == PTO_OUT_EXISTING || dir == PTO_OUT;
}

static const char *seq_dir_name(pto_dir_t dir) {
  switch (dir) {
  case PTO_IN: return "IN";
  case PTO_INOUT: return "INOUT";
  case PTO_OUT_EXISTING: return "OUT_EXISTING";
  case PTO_OUT: return "OUT";
  }
  return "?";
}

/* A view handed in by the orchestration must lie inside memory the run owns:
 * one memory argument, or one live OUT tensor; a write needs a writable one. */
static int seq_check_view(seq_orch_t *s, uint64_t task, uint32_t i, const pto_tensor_t *t,
                          pto_dir_t dir) {
  uint64_t lo, hi;
  int inside = 0, writable = 0;
  if (t->base == NULL)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " (%s) has no base; only OUT tensors are left for the runtime to fill.",
                    task, i, seq_dir_name(dir));
  if (seq_span(t, &lo, &hi))
    return seq_fail(s, PTO_E_INTERNAL,
                    "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    ": its offset and strides overflow or reach before the buffer.",
                    task, i);
  for (uint32_t j = 0; j < s->nargs; j++) {
    const pto_arg_t *a = &s->args[j];
    if (!pto_arg_is_memory(a) || a->base != t->base) continue;
    if (lo < a->offset || hi > a->offset + a->bytes) continue;
    if (t->buffer_bytes != a->base_bytes)
      return seq_fail(s, PTO_E_INTERNAL,
                      "seq_orch: task %" PRIu64 ", tensor %" PRIu32 ": buffer_bytes is %" PRIu64
                      " but argument #%" PRIu32 "'s buffer has %" PRIu64 " bytes.",
                      task, i, t->buffer_bytes, j, a->base_bytes);
    inside = 1;
    if (a->kind != PTO_ARG_INPUT) writable = 1;
  }
  for (size_t j = 0; j < s->nallocs && !inside; j++) {
    const struct seq_alloc *a = &s->allocs[j];
    if (a->ptr != t->base) continue;
    if (a->reclaimed)
      return seq_fail(s, PTO_E_INTERNAL,
                      "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                      " names the OUT tensor of task %" PRIu64 ", which ring %" PRIu32
                      " already reclaimed (its scope ended).",
                      task, i, a->seq, a->ring);
    if (hi > a->bytes || t->buffer_bytes != a->bytes)
      return seq_fail(s, PTO_E_INTERNAL,
                      "seq_orch: task %" PRIu64 ", tensor %" PRIu32 " spans bytes %" PRIu64
                      " to %" PRIu64 " of an OUT tensor of %" PRIu64
                      " bytes (its buffer_bytes says %" PRIu64 ").",
                      task, i, lo, hi, a->bytes, t->buffer_bytes);
    inside = writable = 1;
  }
  if (!inside)
    return seq_fail(s, PTO_E_INTERNAL,
                    "seq_orch: task %" PRIu64 ", tensor %" PRIu32 " (%s) spans bytes %" PRIu64
                    " to %" PRIu64 " of its buffer, outside every memory argument and OUT tensor "
                    "of the run.",
                    task, i, seq_dir_name(dir), lo, hi);
  if (seq_writes(dir) && !writable)
    return seq_fail(s, PTO_E_INTERNAL,
                    "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " (%s) writes into an argument of kind input, which is read-only.",
                    task, i, seq_dir_name(dir));
  return 0;
}

/* Shape rules common to every tensor, and the element count. */
static int seq_check_shape(seq_orch_t *s, uint64_t task, uint32_t i, const pto_tensor_t *t,
                           pto_dir_t dir, uint64_t *ret_bytes) {
  uint64_t bytes;
  if ((unsigned)dir > PTO_OUT)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " has direction %d, which is not a pto_dir_t.", task, i, (int)dir);
  if ((unsigned)t->dtype > PTO_U8)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " has dtype %d, which is not a pto_dtype_t.", task, i, (int)t->dtype);
  if (t->ndims < 1 || t->ndims > PTO_MAX_DIMS)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " has %" PRIu32 " dimensions; expected 1 to %d.", task, i, t->ndims,
                    PTO_MAX_DIMS);
  bytes = pto_dtype_size(t->dtype);
  for (uint32_t d = 0; d < t->ndims; d++) {
    if (t->shape[d] == 0)
      return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                      " has no elements (dimension %" PRIu32 " is 0).", task, i, d);
    if (__builtin_mul_overflow(bytes, t->shape[d], &bytes))
      return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                      ": its size overflows 64 bits.", task, i);
  }
  if (dir == PTO_OUT && bytes > SEQ_OUT_MAX_BYTES)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " is an OUT of %" PRIu64 " bytes, more than seq_orch allocates (%" PRIu64
                    ").", task, i, bytes, (uint64_t)SEQ_OUT_MAX_BYTES);
  *ret_bytes = bytes;
  return 0;
}

static int seq_record_alloc(seq_orch_t *s, pto_tensor_t *t, uint64_t bytes, uint64_t task,
                            uint32_t ring) {
  struct seq_alloc *a;
  pto_tensor_t filled;
  if (seq_grow((void **)&s->allocs, &s->cap_allocs, s->nallocs + 1, sizeof *s->allocs))
    return -ENOMEM;
  a = &s->allocs[s->nallocs];
  a->ptr = malloc(bytes);
  if (a->ptr == NULL) return -ENOMEM;
  memset(a->ptr, 0xff, bytes);
  a->bytes = bytes;
  a->seq = task;
  a->ring = ring;
  a->reclaimed = 0;
  s->nallocs++;
  filled = pto_tensor_view(a->ptr, bytes, t->dtype, 0, t->ndims, t->shape);
  *t = filled;
  return 0;
}

static int seq_record_task(seq_orch_t *s, uint32_t ring, uint64_t task, uint64_t request) {
  struct seq_ring *r = &s->ring[ring];
  uint64_t scope = s->scopes[s->nscopes - 1];
  if (r->n > r->head && r->e[r->n - 1].scope == scope) {
    r->e[r->n - 1].ntasks++;
    r->e[r->n - 1].bytes += request;
  } else {
    if (seq_grow((void **)&r->e, &r->cap, r->n + 1, sizeof *r->e)) return -ENOMEM;
    r->e[r->n].scope = scope;
    r->e[r->n].ntasks = 1;
    r->e[r->n].bytes = request;
    r->e[r->n].first_seq = task;
    r->n++;
  }
  r->live_bytes += request;
  r->live_tasks++;
  s->stats.tasks++;
  s->stats.ring_tasks[ring]++;
  if (r->live_tasks > s->stats.ring_peak_tasks[ring]) s->stats.ring_peak_tasks[ring] = r->live_tasks;
  return 0;
}

/* The heap a task asks for, checked against the ring's limit. */
static int seq_reserve(seq_orch_t *s, uint32_t ring, uint64_t task, uint64_t request) {
  struct seq_ring *r = &s->ring[ring];
  uint64_t need = r->live_bytes + request;
  if (need > s->stats.ring_peak_heap[ring]) s->stats.ring_peak_heap[ring] = need;
  if (r->heap_limit == 0 || need <= r->heap_limit) return 0;
  seq_fail(s, PTO_E_HEAP_RING_DEADLOCK,
           "Ring %" PRIu32 " cannot reserve %" PRIu64 " heap bytes for task %" PRIu64
           ": %" PRIu64 " bytes are still live and the ring heap holds %" PRIu64 ".",
           ring, request, task, r->live_bytes, r->heap_limit);
  s->err.ring = (int)ring;
  s->err.requested = request;
  s->err.capacity = r->heap_limit;
  snprintf(s->err.hint, sizeof s->err.hint,
           "Raise ring_heap[%" PRIu32 "] to at least %" PRIu64
           " bytes, or submit the work in scopes that end sooner.",
           ring, need);
  return -PTO_E_HEAP_RING_DEADLOCK;
}

struct seq_snapshot {
  uint32_t tensor;
  uint64_t bytes;
  unsigned char *before, *after;
};

/* Copies of the task's IN views that no written view of the task overlaps. */
static int seq_snapshot_inputs(const pto_task_args_t *args, struct seq_snapshot *snaps,
                               uint32_t *ret_n) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < args->ntensors; i++) {
    const pto_tensor_t *t = &args->tensor[i];
    uint64_t lo, hi;
    int overlapped = 0;
    if (args->dir[i] != PTO_IN) continue;
    seq_span(t, &lo, &hi);
    for (uint32_t j = 0; j < args->ntensors; j++) {
      uint64_t wlo, whi;
      if (!seq_writes(args->dir[j]) || args->tensor[j].base != t->base) continue;
      seq_span(&args->tensor[j], &wlo, &whi);
      if (wlo < hi && lo < whi) overlapped = 1;
    }
    if (overlapped) continue;
    snaps[n].tensor = i;
    snaps[n].bytes = pto_tensor_numel(t) * pto_dtype_size(t->dtype);
    snaps[n].before = malloc(snaps[n].bytes);
    snaps[n].after = malloc(snaps[n].bytes);
    if (snaps[n].before == NULL || snaps[n].after == NULL) {
      free(snaps[n].before);
      free(snaps[n].after);
      *ret_n = n;
      return -ENOMEM;
    }
    seq_gather(t, snaps[n].before);
    n++;
  }
  *ret_n = n;
  return 0;
}

static int seq_submit(pto_orch_t *orch, pto_kernel_fn kernel, pto_task_args_t *args) {
  seq_orch_t *s = seq_of(orch);
  uint64_t task = s->next_seq, request = 0, bytes[PTO_MAX_TASK_TENSORS];
  uint32_t ring, nsnaps = 0;
  struct seq_snapshot snaps[PTO_MAX_TASK_TENSORS];
  pto_task_args_t copy;
  int rc = 0;

  if (s->err.code != PTO_OK) return -s->err.code;
  if (kernel == NULL || args == NULL)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 " has no kernel or no arguments.",
                    task);
  if (args->ntensors > PTO_MAX_TASK_TENSORS || args->nscalars > PTO_MAX_TASK_SCALARS)
    return seq_fail(s, PTO_E_INTERNAL,
                    "seq_orch: task %" PRIu64 " has %" PRIu32 " tensors and %" PRIu32
                    " scalars; the limits are %d and %d.",
                    task, args->ntensors, args->nscalars, PTO_MAX_TASK_TENSORS,
                    PTO_MAX_TASK_SCALARS);
  s->next_seq++;
  ring = s->nscopes - 1 < 3 ? (uint32_t)(s->nscopes - 1) : 3;

  for (uint32_t i = 0; i < args->ntensors && !rc; i++) {
    rc = seq_check_shape(s, task, i, &args->tensor[i], args->dir[i], &bytes[i]);
    if (rc) break;
    if (args->dir[i] != PTO_OUT) {
      rc = seq_check_view(s, task, i, &args->tensor[i], args->dir[i]);
    } else if (args->tensor[i].base != NULL) {
      rc = seq_fail(s, PTO_E_INTERNAL, "seq_orch: task %" PRIu64 ", tensor %" PRIu32
                    " is OUT but has a base; leave it NULL for the runtime to fill.", task, i);
    } else {
      request += (bytes[i] + SEQ_ORCH_HEAP_ALIGN - 1) / SEQ_ORCH_HEAP_ALIGN * SEQ_ORCH_HEAP_ALIGN;
    }
  }
  if (rc) return rc;
  rc = seq_reserve(s, ring, task, request);
  if (rc) return rc;
  for (uint32_t i = 0; i < args->ntensors && !rc; i++)
    if (args->dir[i] == PTO_OUT) rc = seq_record_alloc(s, &args->tensor[i], bytes[i], task, ring);
  if (!rc && s->check_inputs) rc = seq_snapshot_inputs(args, snaps, &nsnaps);
  if (!rc) rc = seq_record_task(s, ring, task, request);
  if (!rc) {
    copy = *args;
    kernel(&copy);
    for (uint32_t k = 0; k < nsnaps; k++) {
      seq_gather(&args->tensor[snaps[k].tensor], snaps[k].after);
      if (memcmp(snaps[k].before, snaps[k].after, snaps[k].bytes) != 0)
        seq_fail(s, PTO_E_INTERNAL,
                 "seq_orch: the kernel of task %" PRIu64 " wrote into tensor %" PRIu32
                 ", which it was given as IN.",
                 task, snaps[k].tensor);
    }
  }
  for (uint32_t k = 0; k < nsnaps; k++) {
    free(snaps[k].before);
    free(snaps[k].after);
  }
  if (rc == -ENOMEM)
    return seq_fail(s, PTO_E_INTERNAL, "seq_orch: out of memory while submitting task %" PRIu64 ".",
                    task);
  return s->err.code != PTO_OK ? -s->err.code : 0;
}

static const pto_orch_api_t seq_api = {
    PTO_PROGRAM_ABI_VERSION, seq_scope_begin, seq_scope_end, seq_submit, seq_fatal,
};

const pto_orch_api_t *seq_orch_api(void) {
  return &seq_api;
}

int seq_orch_new(seq_orch_t **ret_seq) {
  seq_orch_t *s = calloc(1, sizeof *s);
  if (s == NULL) return -ENOMEM;
  s->check_inputs = 1;
  s->err.ring = PTO_NO_RING;
  *ret_seq = s;
  return 0;
}

void seq_orch_free(seq_orch_t *seq) {
  if (seq == NULL) return;
  seq_release(seq);
  for (uint32_t r = 0; r < SEQ_ORCH_RINGS; r++) free(seq->ring[r].e);
  free(seq->allocs);
  free(seq->scopes);
  free(seq);
}

void seq_orch_set_ring_heap(seq_orch_t *seq, uint32_t ring, uint64_t bytes) {
  if (ring < SEQ_ORCH_RINGS) seq->ring[ring].heap_limit = bytes;
}

void seq_orch_set_check_inputs(seq_orch_t *seq, int on) {
  seq->check_inputs = on;
}

int seq_orch_run(seq_orch_t *seq, pto_orchestrate_fn orchestrate, const pto_arg_t *args,
                 uint32_t nargs) {
  int rc;
  seq_release(seq);
  memset(&seq->stats, 0, sizeof seq->stats);
  memset(&seq->err, 0, sizeof seq->err);
  seq->err.ring = PTO_NO_RING;
  if (seq_grow((void **)&seq->scopes, &seq->cap_scopes, 1, sizeof *seq->scopes)) {
    seq_fail(seq, PTO_E_INTERNAL, "seq_orch: out of memory before the run.");
    return -PTO_E_INTERNAL;
  }
  seq->scopes[0] = 0;
  seq->nscopes = 1;
  seq->next_scope = 1;
  seq->next_seq = 0;
  seq->args = args;
  seq->nargs = nargs;

  rc = orchestrate(seq_orch_api(), (pto_orch_t *)(void *)seq, args, nargs);
  seq->stats.orch_rc = rc;
  if (seq->err.code == PTO_OK && rc != 0)
    seq_fail(seq, PTO_E_INTERNAL,
             "seq_orch: the orchestration returned %d without reporting an error through fatal() "
             "or a failed submit().",
             rc);
  if (seq->err.code == PTO_OK && seq->nscopes != 1)
    seq_fail(seq, PTO_E_INTERNAL,
             "seq_orch: the orchestration returned with %zu scopes still open; end every scope "
             "it begins.",
             seq->nscopes - 1);

  seq_release(seq);
  seq->args = NULL;
  seq->nargs = 0;
  return seq->err.code != PTO_OK ? -seq->err.code : 0;
}

const seq_orch_stats_t *seq_orch_stats(const seq_orch_t *seq) {
  return &seq->stats;
}

const pto_error_t *seq_orch_error(const seq_orch_t *seq) {
  return &seq->err;
}
