/* SPDX-License-Identifier: Apache-2.0 */
/* jobs.c — what the device thread does for each device method: dispatch,
 * buffer.alloc/write/read/free and prewarm.  Each job ends with its
 * response encoded in req->response (success or error), so the loop only
 * has to send it. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "log.h"
#include "dfx.h"
#include "jobs.h"
#include "prewarm.h"
#include "request.h"
#include "service.h"

#define STAGING_ALIGN 1024u
/* The largest msgpack bin (bin 32): a result byte string longer than this
 * cannot be encoded. */
#define MAX_BIN UINT64_C(0xffffffff)

static uint64_t align_up(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

static void encode_error(req_t *req, const pto_error_t *err) {
  req->result_code = err->code ? err->code : PTO_E_INTERNAL;
  msgpack_sbuffer_clear(&req->response);
  proto_encode_error_response_dfx(&req->response, req->msgid, err, NULL, req->request_id);
}

/* The answer's room at once (proto_response_room): no doubling
 * reallocations, and huge pages for a large one (srv_buffer_hint).
 * sb is empty.  Returns 0 or -ENOMEM. */
static int reserve_response(msgpack_sbuffer *sb, size_t room) {
  char *data;
  if (room < SRV_HUGE_BUFFER || room <= sb->alloc) return proto_sbuffer_reserve(sb, room);
  if ((data = malloc(room)) == NULL) return -ENOMEM;
  srv_buffer_hint(data, room);
  free(sb->data);
  sb->data = data;
  sb->size = 0;
  sb->alloc = room;
  return 0;
}

/* The response, as `method`'s result (the request's own method, but for
 * buffer.read into a region, answered in buffer.write's shape). */
static void encode_result_as(req_t *req, proto_method_t method, const proto_result_t *result) {
  pto_error_t err;
  msgpack_sbuffer_clear(&req->response);
  if (reserve_response(&req->response, proto_response_room(method, result)) < 0 ||
      proto_pack_response_id(&req->response, req->msgid, method, result, req->request_id) < 0) {
    pto_error_set(&err, PTO_E_INTERNAL, "The daemon is out of memory encoding the response.");
    encode_error(req, &err);
    return;
  }
  req->result_code = PTO_OK;
}

static void encode_result(req_t *req, const proto_result_t *result) {
  encode_result_as(req, req->method, result);
}

/* A dispatch's answer: outputs of PROTO_REF_MIN bytes or more are written
 * to the socket from the staging area (the sim device's memory is host
 * memory), which is lent to the answer until then; smaller ones are
 * copied into the message.  The area is lent whole (and charged whole to
 * the client until written), so only when the outputs are at least half of
 * it: large inputs beside a small output are not pinned by an answer the
 * client does not read — that output is copied. */
static void encode_dispatch_result(req_t *req, const proto_result_t *result, uint64_t out_bytes) {
  staging_t *st = &req->d->device.staging;
  if (out_bytes >= PROTO_REF_MIN && st->mem && st->bytes / 2 <= out_bytes) {
    const char *lo = st->mem;
    if (answer_encode(&req->response, &req->refs, req->msgid, PROTO_M_DISPATCH, result, lo,
                      lo + st->bytes) == 0 &&
        (req->refs.n == 0 || (req->lent = staging_lend(st)) != NULL)) {
      req->result_code = PTO_OK;
      return;
    }
    req->refs.n = 0;
  }
  encode_result(req, result);
}

/* Keep the account's view of the arena in step with the runtime's slot. */
static void account_arena(ptod_t *d) {
  rt_cache_stats_t cs;
  rt_cache_stats(d->device.rt, &cs);
  buf_set_arena_bytes(d->device.buffers, cs.bytes);
}

/* ---- dispatch ------------------------------------------------------------ */

/* Point the program's arguments at device memory: resident buffers by
 * reference, host data copied into the staging area, outputs zeroed there
 * (a program that leaves part of an output unwritten must not hand back
 * another dispatch's bytes). */
static int bind_args(ptod_t *d, const proto_dispatch_params_t *p, pto_arg_t *args,
                     pto_error_t *err) {
  uint64_t need = 0, at = 0;
  int rc;

  for (uint32_t i = 0; i < p->nargs; i++) {
    const proto_arg_t *a = &p->args[i];
    if (a->kind == PTO_ARG_OUTPUT && !a->shm && a->bytes > MAX_BIN) {
      rc = pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "args[%u]: an output of %llu bytes is more than one message can carry "
                         "(%llu bytes); write it to a resident buffer and read that in parts.",
                         i, (unsigned long long)a->bytes, (unsigned long long)MAX_BIN);
      snprintf(err->key, sizeof(err->key), "args[%u]", i);
      return rc;
    }
    if (a->kind == PTO_ARG_INPUT || a->kind == PTO_ARG_INOUT)
      need += align_up(a->data.len ? a->data.len : 1, STAGING_ALIGN);
    else if (a->kind == PTO_ARG_OUTPUT)
      need += align_up(a->bytes ? a->bytes : 1, STAGING_ALIGN);
  }
  rc = staging_reserve(&d->device.staging, need, err);
  if (rc < 0) return rc;

  for (uint32_t i = 0; i < p->nargs; i++) {
    const proto_arg_t *a = &p->args[i];
    pto_arg_t *out = &args[i];
    memset(out, 0, sizeof(*out));
    out->kind = a->kind;
    switch (a->kind) {
    case PTO_ARG_BUFFER: {
      void *base;
      uint64_t size;
      rc = buf_lookup(d->device.buffers, a->buffer, &base, &size, err);
      if (rc < 0) {
        snprintf(err->key, sizeof(err->key), "args[%u]", i);
        return rc;
      }
      out->base = base;
      out->base_bytes = size;
      jobs_buffer_slice(a, size, &out->offset, &out->bytes);
      if (out->offset > size || out->bytes > size - out->offset) {
        rc = pto_error_set(err, PTO_E_INVALID_REQUEST,
                           "args[%u]: the slice of buffer '%s' at offset %llu of %llu bytes is "
                           "outside the buffer's %llu bytes.",
                           i, a->buffer, (unsigned long long)a->offset,
                           (unsigned long long)a->bytes, (unsigned long long)size);
        snprintf(err->key, sizeof(err->key), "args[%u]", i);
        return rc;
      }
      break;
    }
    case PTO_ARG_INPUT:
    case PTO_ARG_INOUT:
    case PTO_ARG_OUTPUT: {
      uint64_t bytes = a->kind == PTO_ARG_OUTPUT ? a->bytes : a->data.len;
      out->base = (char *)d->device.staging.mem + at;
      out->base_bytes = bytes;
      out->bytes = bytes;
      if (a->kind == PTO_ARG_OUTPUT)
        memset(out->base, 0, bytes);
      else
        dev_copy_to_device(d->device.dev, out->base, a->data.ptr, bytes);
      at += align_up(bytes ? bytes : 1, STAGING_ALIGN);
      break;
    }
    case PTO_ARG_INT: out->i = a->i; break;
    case PTO_ARG_FLOAT: out->f = a->f; break;
    }
  }
  return 0;
}

/* A dispatch the device took: its outcome and timings, for metrics.  t_*
 * are 0 for the stages it did not reach. */
static void observe(req_t *req, int code, const rt_arena_result_t *arena, uint64_t t_arena,
                    uint64_t t_run, uint64_t t_done) {
  const dsp_job_t *job = &req->job;
  uint64_t end = t_done ? t_done : dsp_now_ns();
  metrics_dispatch_t o = {
      .program = req->params.dispatch.program,
      .code = code,
      .arena_ready = t_run != 0,
      .arena_hit = t_run && arena->hit,
      .arena_key = t_run ? arena->key : 0,
      .queue_us = (job->started_ns - job->admitted_ns) / 1000u,
      .arena_us = t_run ? (t_run - t_arena) / 1000u : 0,
      .run_us = t_done && t_run ? (t_done - t_run) / 1000u : 0,
      .total_us = (end - job->admitted_ns) / 1000u,
  };
  metrics_observe_dispatch(req->d->metrics, &o);
}

/* One dispatch on its way through the device: what each stage leaves for
 * the next.  t_* are 0 for the stages it did not reach. */
typedef struct dispatch_run {
  rt_arena_result_t arena;
  rt_run_stats_t stats;
  pto_arg_t *args;
  proto_bytes_t *outputs;
  uint64_t t_arena, t_run, t_done, out_bytes;
  rt_trace_t *trace;
  dfx_artefacts_t dfx;
  bool ran;
} dispatch_run_t;

/* The program's arguments, bound in device memory (bind_args). */
static int bind_dispatch(req_t *req, dispatch_run_t *run, pto_error_t *err) {
  const proto_dispatch_params_t *p = &req->params.dispatch;
  if (p->nargs) {
    run->args = msgpack_zone_malloc(req->unpacked.zone, p->nargs * sizeof(*run->args));
    run->outputs = msgpack_zone_malloc(req->unpacked.zone, p->nargs * sizeof(*run->outputs));
    if (!run->args || !run->outputs) return service_out_of_memory(err);
  }
  return bind_args(req->d, p, run->args, err);
}

/* The arena for the dispatch's sizing: the cached one, or built now. */
static int get_arena(req_t *req, dispatch_run_t *run, pto_error_t *err) {
  ptod_t *d = req->d;
  const char *program = req->params.dispatch.program;
  int rc;
  run->t_arena = dsp_now_ns();
  rc = rt_ensure_arena(d->device.rt, &req->snap.sizing, buf_room_for_arena(d->device.buffers),
                       &run->arena, err);
  account_arena(d);
  if (rc < 0) return rc;
  advise_note_arena(d->device.advise, program, &req->snap.sizing,
                    prewarm_record_dispatch(&d->device.prewarm, run->arena.hit), run->arena.hit,
                    run->arena.build_us);
  if (!run->arena.hit) {
    char text[256], tag[REQ_TAG_MAX];
    pto_sizing_format(&req->snap.sizing, text, sizeof(text));
    log_client(LOG_INFO, "Built the arena for %s in %llu ms (dispatch of '%s', %s).", text,
               (unsigned long long)(run->arena.build_us / 1000u), program,
               req_tag(req, tag, sizeof(tag)));
  }
  return 0;
}

/* The program's run, traced when the dispatch asks for DFX artefacts. */
static int run_program(req_t *req, dispatch_run_t *run, pto_error_t *err) {
  const proto_dispatch_params_t *p = &req->params.dispatch;
  rt_run_config_t rcfg = {0};
  int rc;
  run->t_run = dsp_now_ns();
  rcfg.aicpu_thread_num = (uint32_t)p->config.aicpu_thread_num;
  rcfg.run_timeout_ms = req->snap.run_timeout_ms;
  rcfg.deadlock_timeout_ms = req->snap.deadlock_timeout_ms;
  if (dfx_trace_new(&p->config, &run->trace) < 0)
    return pto_error_set(err, PTO_E_INTERNAL, "The daemon is out of memory for the DFX record.");
  rcfg.trace = run->trace;
  rc = rt_run(req->d->device.rt, req->snap.program, run->args, p->nargs, &rcfg, &run->stats, err);
  run->t_done = dsp_now_ns();
  run->ran = true;
  return rc;
}

/* What the run returns: its peaks (to the advisor and the result), and
 * each output into the client's region or into the answer. */
static void take_outputs(req_t *req, dispatch_run_t *run, proto_dispatch_result_t *r) {
  ptod_t *d = req->d;
  const proto_dispatch_params_t *p = &req->params.dispatch;
  for (int rg = 0; rg < PTO_RING_COUNT; rg++) {
    r->peaks.value[PTO_FIELD_TASK_WINDOW][rg] = run->stats.peak_tasks[rg];
    r->peaks.value[PTO_FIELD_HEAP][rg] = run->stats.peak_heap[rg];
    r->peaks.value[PTO_FIELD_DEP_POOL][rg] = run->stats.peak_dep_pool[rg];
  }
  advise_record(d->device.advise, p->program, &r->peaks, &req->snap.sizing);
  for (uint32_t i = 0; i < p->nargs; i++) {
    const pto_arg_t *a = &run->args[i];
    bool returned = a->kind == PTO_ARG_INOUT || a->kind == PTO_ARG_OUTPUT;
    if (returned && req->shm_ptr && req->shm_ptr[i]) {
      /* Into the client's region, once, as a device's DMA out would; its
       * output in the answer is nil. */
      dev_copy_from_device(d->device.dev, req->shm_ptr[i], a->base, a->bytes);
      returned = false;
    }
    /* The sim device's memory is host memory: the encoder copies the bytes
     * straight from it, once. */
    run->outputs[i].ptr = returned ? a->base : NULL;
    run->outputs[i].len = returned ? a->bytes : 0;
    run->out_bytes += run->outputs[i].len;
  }
  r->outputs = run->outputs;
  r->noutputs = p->nargs;
}

/* The DFX artefacts of what the run recorded (out_bytes: the outputs'
 * share of output_limit; 0 for a failed run). */
static int collect_dfx(req_t *req, dispatch_run_t *run, uint64_t out_bytes, proto_dfx_t *ret) {
  const proto_dispatch_params_t *p = &req->params.dispatch;
  const dfx_dir_t files = {req->snap.diagnostics_dir, req->snap.diagnostics_max_bytes,
                           req->snap.diagnostics_max_files};
  char tag[REQ_TAG_MAX];
  const dfx_subject_t who = {p->program, req->snap.device_id, req->request_id,
                             req_tag(req, tag, sizeof(tag))};
  return dfx_collect(run->trace, &p->config, &who, &files, req->d->device.dispatch_seq, out_bytes,
                     req->snap.output_limit, &run->dfx, ret);
}

/* The result's arena, sizing, timings and task count. */
static void describe_run(const req_t *req, const dispatch_run_t *run,
                         proto_dispatch_result_t *r) {
  r->request_id = req->request_id;
  r->arena.hit = run->arena.hit;
  r->arena.build_us = run->arena.build_us;
  r->arena.key = run->arena.key;
  r->sizing = req->snap.sizing;
  r->timing_us.queue = (req->job.started_ns - req->job.admitted_ns) / 1000u;
  r->timing_us.arena = (run->t_run - run->t_arena) / 1000u;
  r->timing_us.run = (run->t_done - run->t_run) / 1000u;
  r->timing_us.total = (run->t_done - req->job.admitted_ns) / 1000u;
  r->tasks = run->stats.tasks;
}

/* A failed dispatch's answer: the error, with what the run recorded until
 * it failed where it ran traced (that is what explains the failure). */
static void answer_failure(req_t *req, dispatch_run_t *run, int rc, pto_error_t *err) {
  const char *program = req->params.dispatch.program;
  proto_dfx_t fail_dfx = {0};
  char tag[REQ_TAG_MAX];
  if (err->code == PTO_OK) pto_error_set(err, -rc, "%s", pto_error_default_message(-rc));
  log_client(LOG_INFO, "Dispatch of '%s' (%s) failed: %s: %s", program,
             req_tag(req, tag, sizeof(tag)), pto_error_name(err->code), err->message);
  if (run->ran && run->trace) (void)collect_dfx(req, run, 0, &fail_dfx);
  encode_error(req, err);
  if (proto_dfx_present(&fail_dfx)) {
    msgpack_sbuffer_clear(&req->response);
    if (proto_encode_error_response_dfx(&req->response, req->msgid, err, &fail_dfx,
                                        req->request_id) < 0)
      encode_error(req, err);
  }
}

void jobs_dispatch(req_t *req) {
  proto_result_t result;
  proto_dispatch_result_t *r = &result.dispatch;
  dispatch_run_t run;
  pto_error_t err;
  int rc;

  pto_error_clear(&err);
  memset(r, 0, sizeof(*r)); /* the member the answer reads, not the whole union */
  memset(&run, 0, sizeof(run));
  req->d->device.dispatch_seq++;
  rc = bind_dispatch(req, &run, &err);
  if (rc == 0) rc = get_arena(req, &run, &err);
  if (rc == 0) rc = run_program(req, &run, &err);
  if (rc == 0) {
    take_outputs(req, &run, r);
    if (run.trace && collect_dfx(req, &run, run.out_bytes, &r->dfx) < 0)
      rc = pto_error_set(&err, PTO_E_INTERNAL,
                         "The daemon is out of memory for the DFX artefacts.");
  }
  if (rc == 0) {
    describe_run(req, &run, r);
    encode_dispatch_result(req, &result, run.out_bytes);
    observe(req, req->result_code, &run.arena, run.t_arena, run.t_run, run.t_done);
  } else {
    answer_failure(req, &run, rc, &err);
    observe(req, err.code, &run.arena, run.t_arena, run.t_run, run.t_done);
  }
  dfx_artefacts_free(&run.dfx);
  rt_trace_free(run.trace);
}

/* ---- buffers and prewarm ------------------------------------------------- */

/* A buffer job's end: its error, or its result in its method's shape. */
static void encode_outcome(req_t *req, int rc, const pto_error_t *err,
                           const proto_result_t *result) {
  if (rc < 0)
    encode_error(req, err);
  else
    encode_result(req, result);
}

void jobs_buffer_alloc(req_t *req) {
  const proto_buffer_alloc_params_t *p = &req->params.buffer_alloc;
  proto_result_t result;
  pto_error_t err;
  int rc;
  pto_error_clear(&err);
  memset(&result, 0, sizeof(result));
  rc = buf_alloc(req->d->device.buffers, p->name, p->bytes, p->init.ptr, &err);
  result.buffer_alloc.name = p->name;
  result.buffer_alloc.bytes = p->bytes;
  encode_outcome(req, rc, &err, &result);
}

void jobs_buffer_write(req_t *req) {
  const proto_buffer_write_params_t *p = &req->params.buffer_write;
  proto_result_t result;
  pto_error_t err;
  int rc;
  pto_error_clear(&err);
  memset(&result, 0, sizeof(result));
  rc = buf_write(req->d->device.buffers, p->name, p->offset, p->data.ptr, p->data.len, &err);
  result.buffer_write.bytes = p->data.len;
  encode_outcome(req, rc, &err, &result);
}

void jobs_buffer_read(req_t *req) {
  ptod_t *d = req->d;
  const proto_buffer_read_params_t *p = &req->params.buffer_read;
  proto_result_t result;
  pto_error_t err;
  const void *data = NULL;
  uint64_t bytes = p->bytes;
  int rc;
  pto_error_clear(&err);
  memset(&result, 0, sizeof(result));
  rc = buf_read(d->device.buffers, p->name, p->offset, &bytes, &data, &err);
  if (rc == 0 && p->shm) {
    /* Into the client's region; the answer is {bytes}, buffer.write's shape. */
    dev_copy_from_device(d->device.dev, req->shm_ptr[0], data, bytes);
    result.buffer_write.bytes = bytes;
    encode_result_as(req, PROTO_M_BUFFER_WRITE, &result);
    return;
  }
  if (rc == 0) rc = service_check_read(p->name, bytes, req->snap.output_limit, &err);
  if (rc == 0 && bytes > MAX_BIN) {
    rc = pto_error_set(&err, PTO_E_INVALID_REQUEST,
                       "Reading %llu bytes of buffer '%s' at once is more than one message can "
                       "carry (%llu bytes); read it in parts with offset and bytes.",
                       (unsigned long long)bytes, p->name, (unsigned long long)MAX_BIN);
    snprintf(err.key, sizeof(err.key), "bytes");
  }
  result.buffer_read.ptr = data;
  result.buffer_read.len = bytes;
  encode_outcome(req, rc, &err, &result);
}

void jobs_buffer_free(req_t *req) {
  proto_result_t result;
  pto_error_t err;
  int rc;
  pto_error_clear(&err);
  memset(&result, 0, sizeof(result));
  rc = buf_free(req->d->device.buffers, req->params.buffer_free.name, &result.buffer_free.bytes,
                &err);
  encode_outcome(req, rc, &err, &result);
}

/* The warm-up run of a prewarm: one empty task through the runtime, and a
 * dispatch result encoded and thrown away. */
static void warm_kernel(const pto_task_args_t *args) { (void)args; }

static int warm_orchestrate(const pto_orch_api_t *api, pto_orch_t *orch, const pto_arg_t *args,
                            uint32_t nargs) {
  pto_task_args_t ta;
  (void)args;
  (void)nargs;
  memset(&ta, 0, sizeof(ta));
  return api->submit(orch, warm_kernel, &ta);
}

static const pto_program_t warm_program = {
    PTO_PROGRAM_ABI_VERSION, "ptod-warm-up", "", 0, NULL, warm_orchestrate,
};

#ifndef MADV_POPULATE_READ
#define MADV_POPULATE_READ 22
#endif

/* Map every page of code now (ptod, its libraries, the programs just
 * loaded): each page a first dispatch touches would otherwise fault in on
 * the way, 10-20 us apiece on a virtual machine.  Best effort: kernels
 * before 5.14 refuse MADV_POPULATE_READ, and nothing breaks. */
static void prefault_code(void) {
  char line[512];
  FILE *f = fopen("/proc/self/maps", "re");
  if (!f) return;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    char perms[8];
    if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3 || perms[2] != 'x') continue;
    (void)madvise((void *)lo, hi - lo, MADV_POPULATE_READ);
  }
  fclose(f);
}

/* A first dispatch runs code no one has run yet, and each of its pages
 * faults in (tens of microseconds each on a virtual machine): run the
 * dispatch path once here, where nobody waits for it. */
static void warm_up(ptod_t *d, const pto_sizing_resolved_t *sizing) {
  proto_result_t result;
  msgpack_sbuffer sb;
  rt_run_stats_t stats;
  pto_error_t err;
  memset(&result, 0, sizeof(result));
  if (rt_run(d->device.rt, &warm_program, NULL, 0, NULL, &stats, &err) < 0) return;
  result.dispatch.sizing = *sizing;
  result.dispatch.tasks = stats.tasks;
  msgpack_sbuffer_init(&sb);
  (void)proto_encode_response(&sb, 0, PROTO_M_DISPATCH, &result);
  msgpack_sbuffer_destroy(&sb);
}

static void ignore_program(void *data, const char *name, const pto_program_t *prog,
                           const pto_error_t *err) {
  (void)data;
  (void)name;
  (void)prog;
  (void)err; /* a program that cannot be loaded fails its dispatches, saying why */
}

int jobs_prewarm(ptod_t *d, const pto_sizing_resolved_t *sizing, rt_arena_result_t *ret,
                 pto_error_t *err) {
  int rc = rt_prewarm_arena(d->device.rt, sizing, buf_room_for_arena(d->device.buffers), ret, err);
  account_arena(d);
  if (rc == 0) prewarm_record_set(&d->device.prewarm, sizing);
  /* Load the programs now too: a first dispatch would otherwise pay the
   * dlopen of its program (about half a millisecond) on top of the run. */
  (void)rt_programs_foreach(d->device.rt, ignore_program, NULL);
  if (rc == 0) {
    prefault_code();
    warm_up(d, sizing);
  }
  return rc;
}

void jobs_prewarm_request(req_t *req) {
  ptod_t *d = req->d;
  proto_result_t result;
  rt_arena_result_t arena = {0};
  pto_error_t err;

  pto_error_clear(&err);
  if (jobs_prewarm(d, &req->snap.sizing, &arena, &err) < 0) {
    encode_error(req, &err);
    return;
  }
  memset(&result, 0, sizeof(result));
  prewarm_arena_snapshot(&d->device.prewarm, d->device.rt, &result.prewarm);
  encode_result(req, &result);
}
