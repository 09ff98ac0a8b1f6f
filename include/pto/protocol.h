/* SPDX-License-Identifier: Apache-2.0 */
/* pto/protocol.h — the shapes of the ptod wire protocol (docs/protocol.md):
 * the method list and the result of each method.  The error codes are the
 * table of pto/errors.h, included here.
 *
 * Both sides compile against this header: libptoclient (pto/client.h
 * includes it) decodes answers into these structs, and the daemon encodes
 * its answers from them (proto/methods.h).  Nothing here is a function of
 * either side; it declares types only.
 *
 * Ownership of the strings, arrays and bytes a result points to is the
 * side's that filled it: pto/client.h for libptoclient's results (one
 * allocation, released with pto_result_free()), proto/methods.h for the
 * daemon's.
 */
#ifndef PTO_PROTOCOL_H
#define PTO_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/errors.h>
#include <pto/program.h>
#include <pto/sizing.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- methods ---------------------------------------------------------------- */

/* The methods of the protocol, in their wire order: X(ID, "wire name").
 * This list is the protocol's only one: pto_method_t below, the codec's
 * method table and the daemon's are all made from it. */
#define PTO_METHOD_MAP(X)             \
  X(PING, "ping")                     \
  X(STATUS, "status")                 \
  X(METRICS, "metrics")               \
  X(PROGRAMS, "programs")             \
  X(DISPATCH, "dispatch")             \
  X(BUFFER_ALLOC, "buffer.alloc")     \
  X(BUFFER_WRITE, "buffer.write")     \
  X(BUFFER_READ, "buffer.read")       \
  X(BUFFER_FREE, "buffer.free")       \
  X(BUFFER_LIST, "buffer.list")       \
  X(PREWARM, "prewarm")               \
  X(ADVISE, "advise")                 \
  X(SHM_REGISTER, "shm.register")     \
  X(SHM_UNREGISTER, "shm.unregister") \
  X(SHM_LIST, "shm.list")

/* The methods: PTO_METHOD_PING = 0, ... (the daemon's PROTO_M_* are the same
 * numbers). */
typedef enum pto_method {
#define PTO_METHOD_ENUM_(id, name) PTO_METHOD_##id,
  PTO_METHOD_MAP(PTO_METHOD_ENUM_)
#undef PTO_METHOD_ENUM_
} pto_method_t;

/* --- results ---------------------------------------------------------------- */

/* Each result struct below is the shape of that method's answer on the
 * wire (docs/protocol.md), member for member: libptoclient decodes an
 * answer straight into it, one table row per key (proto/methods.c), and the
 * daemon encodes its answers from the same structs.  A key libptoclient
 * does not know (a newer daemon's) is ignored, and still there in
 * pto_result_msgpack(); a key it needs that is missing or of the wrong type
 * fails the call with PTO_E_PROTOCOL_ERROR naming the key. */

/* Bytes of a result.  ptr NULL: nothing (a dispatch argument that returns
 * no output); a present empty output has a non-NULL ptr and len 0. */
typedef struct pto_bytes {
  const uint8_t *ptr;
  size_t len;
} pto_bytes_t;

typedef struct pto_ping {
  const char *version; /* the daemon's release */
  uint32_t device;
  const char *state; /* "warming", "ready" or "draining" */
  /* What the daemon speaks beyond protocol version 1 ("dfx", "shm"); none
   * from a daemon older than version 1.1. */
  const char *const *features;
  uint32_t nfeatures;
} pto_ping_t;

/* status.arena, and prewarm's result.  Sizings are complete (every entry set). */
typedef struct pto_arena_info {
  pto_sizing_t sizing;
  uint64_t key; /* pto_sizing_key(); a 16-digit hex string on the wire */
  uint64_t bytes, build_us, builds, hits, misses;
  struct {
    pto_sizing_t sizing;
    uint64_t key;
    int first_dispatch_hit; /* -1 until the first dispatch, then 0 or 1 */
  } prewarm;
} pto_arena_info_t;

typedef struct pto_status {
  uint32_t device;
  const char *platform, *version;
  uint64_t uptime_s;
  const char *state;
  struct {
    uint64_t depth, capacity, running;
    uint64_t by_priority[16]; /* waiting, per priority -8 .. 7 */
    uint64_t cancelled;       /* requests answered CANCELLED since start */
  } queue;
  pto_arena_info_t arena;
  struct {
    uint64_t limit, arena, buffers, free;
  } memory;
  struct {
    uint64_t ok, failed, rejected;
  } dispatches;
  uint64_t clients;
  struct {
    uint64_t input, output; /* bytes the daemon holds for all its clients together */
    uint64_t limit;         /* its clients_memory budget */
    struct {
      uint64_t input_limit, output_limit; /* each connection's bounds */
      uint64_t most_input, most_output;   /* the most one connection holds now */
    } per_connection;                     /* added in 1.1 (0 from an older daemon) */
  } client_memory;
  struct {
    uint64_t regions, bytes; /* shared-memory regions mapped for all clients together */
    uint64_t regions_limit;  /* shm_regions_total */
    uint64_t bytes_limit;    /* shm_limit_total (0 from a daemon without it) */
  } shm;
  struct {
    uint64_t parked;  /* passed by clients (SCM_RIGHTS) and not yet taken */
    uint64_t closing; /* passed fds and closed connections' sockets not yet closed */
    uint64_t limit;   /* the daemon's RLIMIT_NOFILE */
    uint64_t most_parked; /* the most one connection has parked (0 from a daemon without it) */
  } fds;
} pto_status_t;

/* metrics: Prometheus text exposition, NUL-terminated (len excludes it). */
typedef struct pto_text {
  const char *text;
  size_t len;
} pto_text_t;

typedef struct pto_program_info {
  const char *name, *description;
  const pto_arg_spec_t *args; /* {name, kind, optional, doc} (pto/program.h) */
  uint32_t nargs;
} pto_program_info_t;

typedef struct pto_programs {
  const pto_program_info_t *programs;
  uint32_t count;
} pto_programs_t;

/* A dispatch's DFX artefacts (docs/protocol.md "dfx"), when its config
 * set enable_swimlane, enable_scope_stats or enable_dep_gen: each ptr is
 * NULL unless asked for; `refused` (NULL otherwise) says why the daemon
 * sent none (too large for its output budget, or too many tasks). */
typedef struct pto_dfx {
  pto_bytes_t swimlane;    /* Chrome trace-event JSON (Perfetto, chrome://tracing) */
  pto_bytes_t scope_stats; /* JSON lines: the sizing, then one line per scope */
  pto_bytes_t dep_graph;   /* Graphviz DOT */
  const char *refused;
} pto_dfx_t;

typedef struct pto_dispatch_result {
  const pto_bytes_t *outputs; /* one per argument: bytes of INOUT/OUTPUT args, else ptr NULL */
  uint32_t noutputs;
  struct {
    bool hit; /* the cached arena fit this sizing: no build */
    uint64_t build_us;
    uint64_t key;
  } arena;
  pto_sizing_resolved_t sizing; /* the effective vector and each value's source */
  pto_sizing_t peaks;           /* the most each ring used: peaks.value[field][ring] */
  struct {
    uint64_t queue, arena, run, total;
  } timing_us;
  uint64_t tasks;
  pto_dfx_t dfx; /* all NULL when no DFX flag was set */
  /* The request_id the dispatch was sent with (protocol 1.2), echoed; NULL
   * when it had none.  Last, so the struct only grew. */
  const char *request_id;
} pto_dispatch_result_t;

typedef struct pto_buffer_info {
  const char *name;
  uint64_t bytes;
} pto_buffer_info_t;

typedef struct pto_buffer_list {
  const pto_buffer_info_t *buffers;
  uint32_t count;
} pto_buffer_list_t;

/* buffer.write and buffer.free. */
typedef struct pto_byte_count {
  uint64_t bytes;
} pto_byte_count_t;

typedef struct pto_advise_program {
  const char *program;
  uint64_t dispatches;
  pto_sizing_t observed, recommended;
} pto_advise_program_t;

typedef struct pto_advise {
  pto_sizing_t observed;    /* the peaks seen, per field and ring */
  pto_sizing_t recommended; /* the smallest valid sizing at or above them */
  const char *config;       /* the [ring] and [prewarm] config-file lines that set it */
  /* The rest is none from a daemon before version 1.1. */
  const pto_advise_program_t *programs; /* the same per program */
  uint32_t nprograms;
  const pto_sizing_t *sizings; /* the distinct sizings dispatches ran with */
  uint32_t nsizings;
  const char *const *warnings; /* sentences: several sizings, a missed prewarm */
  uint32_t nwarnings;
} pto_advise_t;

#ifdef __cplusplus
}
#endif
#endif
