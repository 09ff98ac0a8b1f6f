/* SPDX-License-Identifier: Apache-2.0 */
/* pto/program.h — the device program ABI.
 *
 * A program is a shared object in ptod's programs directory.  It exports one
 * data symbol, `pto_program` (declare it with PTO_PROGRAM_EXPORT), whose first
 * field is the ABI version it was built for; ptod refuses a program built for
 * another version, naming both.
 *
 * A program has an orchestration function and kernels.  The orchestration
 * runs on the runtime's orchestrator thread inside an implicit outermost
 * scope and submits tasks; a task is one kernel call with tensor and scalar
 * arguments.  Kernels are plain C functions, run later on a core thread once
 * every task they depend on has finished.  Dependencies are discovered from
 * the tensors' regions and directions, never declared.
 *
 * A program sees only this header: it never includes a daemon header and
 * never links against ptod; the runtime hands it a table of functions.
 * See docs/runtime.md for how to write one and how rings and scopes decide
 * what fits.
 */
#ifndef PTO_PROGRAM_H
#define PTO_PROGRAM_H

#include <stddef.h>
#include <stdint.h>

#include <pto/errors.h>

#ifdef __cplusplus
extern "C" {
#endif

#define PTO_PROGRAM_ABI_VERSION 1u

#define PTO_MAX_DIMS 4
#define PTO_MAX_TASK_TENSORS 8
#define PTO_MAX_TASK_SCALARS 8

typedef enum pto_dtype {
  PTO_F32 = 0,
  PTO_I32 = 1,
  PTO_I64 = 2,
  PTO_U8 = 3,
} pto_dtype_t;

static inline uint64_t pto_dtype_size(pto_dtype_t dtype) {
  switch (dtype) {
  case PTO_F32: return 4;
  case PTO_I32: return 4;
  case PTO_I64: return 8;
  case PTO_U8: return 1;
  }
  return 1;
}

/* A view over device memory.  `base` is the start of the whole buffer (the
 * tensor map's key: views of one buffer are checked against each other for
 * overlap); `offset` and `strides` are in elements. */
typedef struct pto_tensor {
  void *base;
  uint64_t buffer_bytes; /* size of the whole buffer at base */
  uint64_t offset;       /* element index of the view's first element */
  uint64_t shape[PTO_MAX_DIMS];
  int64_t strides[PTO_MAX_DIMS];
  uint32_t ndims;
  pto_dtype_t dtype;
} pto_tensor_t;

/* Address of the view's first element. */
static inline void *pto_tensor_data(const pto_tensor_t *t) {
  return (char *)t->base + t->offset * pto_dtype_size(t->dtype);
}

/* Number of elements in the view. */
static inline uint64_t pto_tensor_numel(const pto_tensor_t *t) {
  uint64_t n = 1;
  for (uint32_t d = 0; d < t->ndims; d++) n *= t->shape[d];
  return n;
}

/* A contiguous row-major view of `ndims` dimensions starting at element
 * `offset` of the buffer (base, buffer_bytes).  Used for OUT tensors too:
 * there base is NULL and the runtime fills base and buffer_bytes. */
static inline pto_tensor_t pto_tensor_view(void *base, uint64_t buffer_bytes, pto_dtype_t dtype,
                                           uint64_t offset, uint32_t ndims,
                                           const uint64_t shape[]) {
  pto_tensor_t t;
  int64_t stride = 1;
  t.base = base;
  t.buffer_bytes = buffer_bytes;
  t.offset = offset;
  t.ndims = ndims;
  t.dtype = dtype;
  for (uint32_t d = PTO_MAX_DIMS; d-- > 0;) {
    t.shape[d] = d < ndims ? shape[d] : 1;
    t.strides[d] = d < ndims ? stride : 0;
    if (d < ndims) stride *= (int64_t)shape[d];
  }
  return t;
}

typedef enum pto_dir {
  PTO_IN = 0,           /* read */
  PTO_INOUT = 1,        /* read, then written in place */
  PTO_OUT_EXISTING = 2, /* written into an existing buffer */
  PTO_OUT = 3,          /* a new output the runtime allocates from the ring's heap */
} pto_dir_t;

typedef union pto_scalar {
  int64_t i;
  double f;
} pto_scalar_t;

/* One task's arguments.  The orchestration fills it and passes it to
 * submit(); for PTO_OUT tensors it sets dtype, ndims and shape and leaves
 * base NULL, and submit() writes back the allocated view (base,
 * buffer_bytes, offset 0, row-major strides) so later tasks can use it.
 * The kernel receives the runtime's copy, with every OUT tensor filled in. */
typedef struct pto_task_args {
  uint32_t ntensors;
  uint32_t nscalars;
  pto_tensor_t tensor[PTO_MAX_TASK_TENSORS];
  pto_dir_t dir[PTO_MAX_TASK_TENSORS];
  pto_scalar_t scalar[PTO_MAX_TASK_SCALARS];
} pto_task_args_t;

/* A kernel.  It must touch only the memory of its tensors, and only write
 * the ones whose direction allows it. */
typedef void (*pto_kernel_fn)(const pto_task_args_t *args);

/* One argument of a dispatch, as the orchestration receives it. */
typedef enum pto_arg_kind {
  PTO_ARG_BUFFER = 0, /* a device-resident buffer (or a slice of one), read-write */
  PTO_ARG_INPUT = 1,  /* host data copied in; read-only */
  PTO_ARG_INOUT = 2,  /* host data copied in, and back out in the result */
  PTO_ARG_OUTPUT = 3, /* host output: device memory returned in the result */
  PTO_ARG_INT = 4,
  PTO_ARG_FLOAT = 5,
} pto_arg_kind_t;

typedef struct pto_arg {
  pto_arg_kind_t kind;
  void *base;            /* start of the underlying device buffer */
  uint64_t base_bytes;   /* its size */
  uint64_t offset;       /* byte offset of this argument within it */
  uint64_t bytes;        /* bytes of this argument */
  int64_t i;             /* PTO_ARG_INT */
  double f;              /* PTO_ARG_FLOAT */
} pto_arg_t;

/* A view of a memory argument as `ndims` row-major dimensions.  The
 * argument's byte offset must be a multiple of the element size (programs
 * check with pto_arg_aligned). */
static inline pto_tensor_t pto_arg_tensor(const pto_arg_t *arg, pto_dtype_t dtype, uint32_t ndims,
                                          const uint64_t shape[]) {
  return pto_tensor_view(arg->base, arg->base_bytes, dtype, arg->offset / pto_dtype_size(dtype),
                         ndims, shape);
}

static inline int pto_arg_is_memory(const pto_arg_t *arg) {
  return arg->kind <= PTO_ARG_OUTPUT;
}

static inline int pto_arg_aligned(const pto_arg_t *arg, pto_dtype_t dtype) {
  return arg->offset % pto_dtype_size(dtype) == 0;
}

/* The runtime, as the orchestration sees it. */
typedef struct pto_orch pto_orch_t;

typedef struct pto_orch_api {
  uint32_t abi_version; /* PTO_PROGRAM_ABI_VERSION */
  /* Open and close a nested scope.  A task's ring is min(depth, 3); tasks of
   * a scope can be reclaimed only after the scope ends. */
  void (*scope_begin)(pto_orch_t *orch);
  void (*scope_end)(pto_orch_t *orch);
  /* Submit one task; blocks while its ring has no room (back-pressure).
   * Returns 0, or a negative error once the run has failed (deadlock,
   * overflow, or an earlier failure): the orchestration should then return
   * that value at once.  OUT tensors in *args are filled on success. */
  int (*submit)(pto_orch_t *orch, pto_kernel_fn kernel, pto_task_args_t *args);
  /* Fail the run with `code` (PTO_E_INVALID_ARGS for bad arguments,
   * PTO_E_EXPLICIT_ORCH_FATAL otherwise) and a message; returns -code. */
  int (*fatal)(pto_orch_t *orch, int code, const char *fmt, ...)
      __attribute__((format(printf, 3, 4)));
} pto_orch_api_t;

/* What a dispatch may pass in one argument position, for `programs`. */
typedef struct pto_arg_spec {
  const char *name;
  const char *kind;     /* "in", "inout", "out", "buffer", "int", "float" */
  int optional;         /* may be omitted (trailing scalars with defaults) */
  const char *doc;      /* one line: shape, dtype, default */
} pto_arg_spec_t;

/* The orchestration: validate the arguments (argument count, sizes, scalar
 * ranges: a mismatch is api->fatal(orch, PTO_E_INVALID_ARGS, ...) naming the
 * argument), then submit the tasks.  Returns 0 or a negative error. */
typedef int (*pto_orchestrate_fn)(const pto_orch_api_t *api, pto_orch_t *orch,
                                  const pto_arg_t *args, uint32_t nargs);

typedef struct pto_program {
  uint32_t abi_version; /* PTO_PROGRAM_ABI_VERSION: must stay the first field */
  const char *name;     /* equals the file name without ".so" */
  const char *description;
  uint32_t nargs;
  const pto_arg_spec_t *args;
  pto_orchestrate_fn orchestrate;
} pto_program_t;

/* What one run with the given arguments does at most, in counts: the
 * daemon turns them into time with its own rates, to decide before the run
 * whether it is bounded enough to run without a thread hand-off
 * (docs/runtime.md, "Declaring a cost").  Every count is an upper bound. */
typedef struct pto_cost {
  uint64_t tasks;   /* tasks submitted */
  uint64_t wait_us; /* time kernels spend waiting (sleeping), all tasks together */
  uint64_t bytes;   /* bytes of memory kernels read and write */
  uint64_t flops;   /* arithmetic operations of the kernels */
} pto_cost_t;

/* Optional.  A program may export one more symbol, `pto_program_cost`
 * (define it with PTO_PROGRAM_COST_EXPORT): called with the arguments of a
 * dispatch before its run, with `base` NULL (no memory behind them yet), it
 * fills *ret_cost and returns 0, or returns -1 for arguments it cannot
 * bound (ones the orchestration would refuse).  It must be fast and touch
 * nothing but its arguments.  A program without it is never run where a
 * bound is needed.  It does not change the program ABI: a ptod that
 * predates it ignores the symbol. */
typedef int (*pto_cost_fn)(const pto_arg_t *args, uint32_t nargs, pto_cost_t *ret_cost);

#define PTO_PROGRAM_SYMBOL "pto_program"
#define PTO_PROGRAM_EXPORT __attribute__((visibility("default"))) const pto_program_t pto_program
#define PTO_PROGRAM_COST_SYMBOL "pto_program_cost"
#define PTO_PROGRAM_COST_EXPORT                                                                \
  __attribute__((visibility("default"))) int pto_program_cost(const pto_arg_t *args,             \
                                                              uint32_t nargs, pto_cost_t *ret_cost)

#ifdef __cplusplus
}
#endif
#endif
