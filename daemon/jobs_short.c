/* SPDX-License-Identifier: Apache-2.0 */
/* jobs_short.c — which device jobs are bounded well enough to run on the
 * loop (jobs.h, dispatch.h): the bound is known before the run, from the
 * request and what the program declares, never predicted from past runs
 * (a client controls what its next request asks for). */
#include <string.h>

#include "dfx.h"
#include "jobs.h"
#include "request.h"

/* The daemon's rates for a declared cost, on the slow side of what the
 * sim device does on a loaded 2-vCPU virtual machine: a task through the
 * runtime (submit, schedule, retire: ~0.1 us measured, waking a core
 * thread tens of us, once per run), a byte a kernel touches (a memcpy
 * moves several per ns), an operation (scalar f32: several per ns). */
#define JOBS_NS_PER_TASK 2000u
#define JOBS_NS_PER_BYTE 1u
#define JOBS_NS_PER_FLOP 1u
/* Programs take a handful of arguments; a dispatch with more than this is
 * not described to a cost function (no allocation on this path). */
#define JOBS_SHORT_ARGS 16u

uint64_t jobs_cost_bound_ns(const pto_cost_t *cost) {
  uint64_t t, b, f, w, sum;
  if (__builtin_mul_overflow(cost->tasks, (uint64_t)JOBS_NS_PER_TASK, &t) ||
      __builtin_mul_overflow(cost->bytes, (uint64_t)JOBS_NS_PER_BYTE, &b) ||
      __builtin_mul_overflow(cost->flops, (uint64_t)JOBS_NS_PER_FLOP, &f) ||
      __builtin_mul_overflow(cost->wait_us, (uint64_t)1000u, &w) ||
      __builtin_add_overflow(t, b, &sum) || __builtin_add_overflow(sum, f, &sum) ||
      __builtin_add_overflow(sum, w, &sum))
    return UINT64_MAX;
  return sum;
}

/* The bytes a dispatch moves between the client and the device: inputs
 * copied in, outputs copied out (in the message or through shm). */
static uint64_t message_bytes(const proto_dispatch_params_t *p) {
  uint64_t n = 0;
  for (uint32_t i = 0; i < p->nargs; i++) {
    const proto_arg_t *a = &p->args[i];
    if (a->kind == PTO_ARG_INPUT || a->kind == PTO_ARG_INOUT) n += a->data.len;
    if (a->kind == PTO_ARG_OUTPUT || a->kind == PTO_ARG_INOUT) n += a->bytes;
    if (n > JOBS_SHORT_BYTES) break; /* no wrap: each term is checked at decode */
  }
  return n;
}

/* The program's arguments as its cost function sees them (pto/program.h:
 * kinds, sizes and scalars, no memory); false where one cannot be
 * described (a buffer that does not exist: the run fails on the device
 * thread as usual). */
static bool describe_args(const req_t *req, pto_arg_t *args) {
  const proto_dispatch_params_t *p = &req->params.dispatch;
  for (uint32_t i = 0; i < p->nargs; i++) {
    const proto_arg_t *a = &p->args[i];
    pto_arg_t *out = &args[i];
    memset(out, 0, sizeof(*out));
    out->kind = a->kind;
    out->i = a->i;
    out->f = a->f;
    if (a->kind == PTO_ARG_BUFFER) {
      void *base;
      uint64_t size;
      pto_error_t err;
      if (buf_lookup(req->d->device.buffers, a->buffer, &base, &size, &err) < 0) return false;
      out->base_bytes = size;
      jobs_buffer_slice(a, size, &out->offset, &out->bytes);
    } else if (a->kind == PTO_ARG_INPUT || a->kind == PTO_ARG_INOUT) {
      out->base_bytes = out->bytes = a->data.len;
    } else if (a->kind == PTO_ARG_OUTPUT) {
      out->base_bytes = out->bytes = a->bytes;
    }
  }
  return true;
}

/* Whether the program's declared cost for these arguments is within the
 * budget. */
static bool cost_within_budget(const req_t *req) {
  const proto_dispatch_params_t *p = &req->params.dispatch;
  pto_arg_t args[JOBS_SHORT_ARGS];
  pto_cost_t cost;
  if (p->nargs > JOBS_SHORT_ARGS || !describe_args(req, args)) return false;
  if (rt_program_cost(req->d->device.rt, req->snap.program, args, p->nargs, &cost) < 0)
    return false;
  return jobs_cost_bound_ns(&cost) <= JOBS_LOOP_BUDGET_NS;
}

bool jobs_dispatch_is_short(const req_t *req) {
  const ptod_device_t *dev = &req->d->device;
  const proto_dispatch_params_t *p = &req->params.dispatch;
  rt_cache_stats_t cs;
  if (dfx_wanted(&p->config) || message_bytes(p) > JOBS_SHORT_BYTES) return false;
  rt_cache_stats(dev->rt, &cs);
  /* The built arena's sizing itself: equal sizings have equal keys, and
   * hashing this one would cost more than the comparison. */
  if (!cs.valid || !pto_sizing_equal(&cs.sizing, &req->snap.sizing)) return false;
  return cost_within_budget(req);
}

bool jobs_write_is_short(const req_t *req) {
  return req->params.buffer_write.data.len <= JOBS_SHORT_BYTES;
}

bool jobs_read_is_short(const req_t *req) {
  uint64_t bytes = req->params.buffer_read.bytes;
  return bytes != 0 && bytes <= JOBS_SHORT_BYTES;
}
