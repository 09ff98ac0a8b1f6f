/* SPDX-License-Identifier: Apache-2.0 */
/* Every method's params and result, as schema tables (proto/methods.h). */
#include "methods.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "schema.h"

/* Row builders.  T is the struct the rows of one table describe. */
#include "schema_rows.h"

/* --- names ------------------------------------------------------------- */

static const char *const method_names[PROTO_M_COUNT] = {
#define PROTO_METHOD_NAME_(id, name) name,
    PTO_METHOD_MAP(PROTO_METHOD_NAME_)
#undef PROTO_METHOD_NAME_
};

/* The names' lengths, so looking a method up compares no more than it must. */
static const size_t method_name_lens[PROTO_M_COUNT] = {
#define PROTO_METHOD_LEN_(id, name) sizeof(name) - 1,
    PTO_METHOD_MAP(PROTO_METHOD_LEN_)
#undef PROTO_METHOD_LEN_
};

/* What decoding messages call a method's params and result map
 * ("dispatch params"): constants, so a decode that does not fail builds no
 * text. */
enum { SIDE_PARAMS, SIDE_RESULT };
static const char *const method_sides[PROTO_M_COUNT][2] = {
#define PROTO_METHOD_SIDES_(id, name) {name " params", name " result"},
    PTO_METHOD_MAP(PROTO_METHOD_SIDES_)
#undef PROTO_METHOD_SIDES_
};

const char *proto_method_name(proto_method_t method) {
  return (unsigned)method < PROTO_M_COUNT ? method_names[method] : NULL;
}

int proto_method_from_name(const char *name, size_t len) {
  for (int m = 0; m < PROTO_M_COUNT; m++)
    if (method_name_lens[m] == len && memcmp(method_names[m], name, len) == 0) return m;
  return -1;
}

bool proto_name_valid(const char *name, size_t len) {
  if (len == 0 || len > PROTO_NAME_MAX || name[0] == '.') return false;
  for (size_t i = 0; i < len; i++) {
    char c = name[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

/* --- shapes used everywhere: sizing, peaks, resolved sizing ------------- */

#define QUAD_ROWS(T, member, k0, k1, k2)                   \
  ROW_K(k0, SK_QUAD, T, member[PTO_FIELD_TASK_WINDOW], 0), \
      ROW_K(k1, SK_QUAD, T, member[PTO_FIELD_HEAP], 0),    \
      ROW_K(k2, SK_QUAD, T, member[PTO_FIELD_DEP_POOL], 0)

static const schema_spec_t sizing_rows[] = {
    QUAD_ROWS(pto_sizing_t, value, "ring_task_window", "ring_heap", "ring_dep_pool")};
static const schema_t sizing_schema = SCHEMA(sizing_rows);

static const schema_spec_t peaks_rows[] = {
    QUAD_ROWS(pto_sizing_t, value, "task_window", "heap", "dep_pool")};
static const schema_t peaks_schema = SCHEMA(peaks_rows);

static const schema_spec_t source_rows[] = {
    ROW_K("ring_task_window", SK_SOURCES, pto_sizing_resolved_t, source[PTO_FIELD_TASK_WINDOW], 0),
    ROW_K("ring_heap", SK_SOURCES, pto_sizing_resolved_t, source[PTO_FIELD_HEAP], 0),
    ROW_K("ring_dep_pool", SK_SOURCES, pto_sizing_resolved_t, source[PTO_FIELD_DEP_POOL], 0),
};
static const schema_t source_schema = SCHEMA(source_rows);

static const schema_spec_t resolved_rows[] = {
    QUAD_ROWS(pto_sizing_resolved_t, value, "ring_task_window", "ring_heap", "ring_dep_pool"),
    ROW_MAP_HERE("source", source_schema),
};
const schema_t proto_sizing_resolved_schema = SCHEMA(resolved_rows);

/* --- config ------------------------------------------------------------- */

static size_t config_extra_count(const void *base) {
  return ((const proto_config_t *)base)->nextra;
}

/* Pass-through keys: the key, then the caller's encoded value as is. */
static int config_extra_pack(msgpack_packer *pk, const void *base) {
  const proto_config_t *c = base;
  int rc = 0;
  for (size_t i = 0; i < c->nextra; i++) {
    const proto_raw_kv_t *kv = &c->extra[i];
    size_t n = strlen(kv->key);
    rc |= msgpack_pack_str(pk, n) | msgpack_pack_str_body(pk, kv->key, n);
    if (kv->value && kv->value_len > 0)
      rc |= pk->callback(pk->data, kv->value, kv->value_len);
    else
      rc |= msgpack_pack_nil(pk);
  }
  return rc;
}

static const schema_spec_t config_rows[] = {
    RING_ROW("ring_task_window", PTO_FIELD_TASK_WINDOW),
    RING_ROW("ring_heap", PTO_FIELD_HEAP),
    RING_ROW("ring_dep_pool", PTO_FIELD_DEP_POOL),
    ROW_U("aicpu_thread_num", proto_config_t, aicpu_thread_num, 2, 16, F_OPT | F_ZERO),
    ROW_I("enable_swimlane", proto_config_t, enable_swimlane, 0, 4, PROTO_UNSET, F_OPT),
    ROW_K("enable_scope_stats", SK_TRI, proto_config_t, enable_scope_stats, F_OPT),
    ROW_K("enable_dep_gen", SK_TRI, proto_config_t, enable_dep_gen, F_OPT),
};
static const schema_t config_schema = {.what = "config",
                                       .fields = config_rows,
                                       .nfields = sizeof(config_rows) / sizeof(config_rows[0]),
                                       .config = true,
                                       .extra_count = config_extra_count,
                                       .extra_pack = config_extra_pack};
static const schema_spec_t config_root = {.kind = SK_MAP, .sub = &config_schema};

void proto_config_init(proto_config_t *config) {
  memset(config, 0, sizeof(*config));
  schema_init(&config_schema, config);
}

bool proto_config_empty(const proto_config_t *config) {
  return schema_absent(&config_root, config);
}


/* --- params ------------------------------------------------------------- */

#define T proto_dispatch_params_t
static const schema_spec_t dispatch_rows[] = {
    ROW_K("program", SK_NAME, T, program, 0),
    ROW_LIST("args", T, args, nargs, proto_arg_elem),
    ROW_MAP("config", T, config, config_schema, F_OPT),
    ROW_I("deadline_ms", T, deadline_ms, 0, INT64_MAX, PROTO_UNSET, F_OPT),
    ROW_K("request_id", SK_RID, T, request_id, F_OPT),
    ROW_I("priority", T, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX, 0, F_OPT),
};
#undef T
static const schema_t dispatch_schema = SCHEMA(dispatch_rows);

static int alloc_check(schema_ctx_t *ctx, const void *base) {
  const proto_buffer_alloc_params_t *p = base;
  char expect[96];
  msgpack_object got = {.type = MSGPACK_OBJECT_BIN};
  if (!p->init.ptr || p->init.len == p->bytes) return 0;
  got.via.bin.size = (uint32_t)p->init.len;
  snprintf(expect, sizeof(expect), "exactly %" PRIu64 " bytes long (the value of 'bytes')",
           p->bytes);
  return schema_bad_value(ctx, "init", expect, &got);
}

#define T proto_buffer_alloc_params_t
static const schema_spec_t alloc_rows[] = {
    ROW_K("name", SK_NAME, T, name, 0),
    ROW_U("bytes", T, bytes, 1, BYTES_MAX, 0),
    ROW_K("init", SK_BIN, T, init, F_OPT),
    ROW_K("request_id", SK_RID, T, request_id, F_OPT),
    ROW_I("priority", T, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX, 0, F_OPT),
};
#undef T
static const schema_t alloc_schema = {.fields = alloc_rows,
                                      .nfields = sizeof(alloc_rows) / sizeof(alloc_rows[0]),
                                      .check = alloc_check};

/* buffer.write: the bytes inline (`data`) or from a region (`shm` and
 * `bytes`), never both. */
static int write_check(schema_ctx_t *ctx, const void *base) {
  const proto_buffer_write_params_t *p = base;
  if (p->shm && p->data.ptr)
    return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                         "buffer.write takes its bytes from 'data' or from 'shm', not both.");
  if (!p->shm && !p->data.ptr) {
    int rc = pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                           "missing required key 'data' in buffer.write params (or 'shm' and "
                           "'bytes' to write from a shared-memory region).");
    if (ctx->err) snprintf(ctx->err->key, sizeof(ctx->err->key), "data");
    return rc;
  }
  if (p->shm && !p->bytes)
    return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                         "buffer.write from 'shm' needs 'bytes': how many to copy from the "
                         "region.");
  if (!p->shm && (p->bytes || p->shm_offset))
    return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                         "'bytes' and 'shm_offset' go with 'shm'; with 'data' its length is "
                         "the byte count.");
  return 0;
}

#define T proto_buffer_write_params_t
static const schema_spec_t write_rows[] = {
    ROW_K("name", SK_NAME, T, name, 0),
    ROW_U("offset", T, offset, 0, BYTES_MAX, F_OPT),
    ROW_K("data", SK_BIN, T, data, F_OPT),
    ROW_K("shm", SK_NAME, T, shm, F_OPT),
    ROW_U("shm_offset", T, shm_offset, 0, BYTES_MAX, F_OPT),
    ROW_U("bytes", T, bytes, 1, BYTES_MAX, F_OPT),
    ROW_K("request_id", SK_RID, T, request_id, F_OPT),
    ROW_I("priority", T, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX, 0, F_OPT),
};
#undef T
static const schema_t write_schema = {.fields = write_rows,
                                      .nfields = sizeof(write_rows) / sizeof(write_rows[0]),
                                      .check = write_check};

/* buffer.read into a region: `bytes` says how many. */
static int read_check(schema_ctx_t *ctx, const void *base) {
  const proto_buffer_read_params_t *p = base;
  if (p->shm && !p->bytes)
    return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST,
                         "buffer.read into 'shm' needs 'bytes': how many to copy into the "
                         "region.");
  if (!p->shm && p->shm_offset)
    return pto_error_set(ctx->err, PTO_E_INVALID_REQUEST, "'shm_offset' goes with 'shm'.");
  return 0;
}

#define T proto_buffer_read_params_t
static const schema_spec_t read_rows[] = {
    ROW_K("name", SK_NAME, T, name, 0),
    ROW_U("offset", T, offset, 0, BYTES_MAX, F_OPT),
    ROW_U("bytes", T, bytes, 1, BYTES_MAX, F_OPT | F_ZERO),
    ROW_K("shm", SK_NAME, T, shm, F_OPT),
    ROW_U("shm_offset", T, shm_offset, 0, BYTES_MAX, F_OPT),
    ROW_K("request_id", SK_RID, T, request_id, F_OPT),
    ROW_I("priority", T, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX, 0, F_OPT),
};
#undef T
static const schema_t read_schema = {.fields = read_rows,
                                     .nfields = sizeof(read_rows) / sizeof(read_rows[0]),
                                     .check = read_check};

#define T proto_shm_register_params_t
static const schema_spec_t shm_register_rows[] = {
    ROW_K("name", SK_NAME, T, name, 0),
    ROW_U("bytes", T, bytes, 1, BYTES_MAX, 0),
};
#undef T
static const schema_t shm_register_schema = SCHEMA(shm_register_rows);

static const schema_spec_t shm_unregister_rows[] = {
    ROW_K("name", SK_NAME, proto_shm_unregister_params_t, name, 0)};
static const schema_t shm_unregister_schema = SCHEMA(shm_unregister_rows);

static const schema_spec_t free_rows[] = {
    ROW_K("name", SK_NAME, proto_buffer_free_params_t, name, 0),
    ROW_K("request_id", SK_RID, proto_buffer_free_params_t, request_id, F_OPT),
    ROW_I("priority", proto_buffer_free_params_t, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX,
          0, F_OPT)};
static const schema_t free_schema = SCHEMA(free_rows);

static const schema_spec_t prewarm_rows[] = {
    ROW_MAP("config", proto_prewarm_params_t, config, config_schema, F_OPT),
    ROW_K("request_id", SK_RID, proto_prewarm_params_t, request_id, F_OPT),
    ROW_I("priority", proto_prewarm_params_t, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX, 0,
          F_OPT)};
static const schema_t prewarm_schema = SCHEMA(prewarm_rows);

static const schema_spec_t list_rows[] = {
    ROW_K("request_id", SK_RID, proto_buffer_list_params_t, request_id, F_OPT),
    ROW_I("priority", proto_buffer_list_params_t, priority, PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX,
          0, F_OPT)};
static const schema_t list_schema = SCHEMA(list_rows);

static const schema_t no_params_schema = {.nfields = 0};

/* --- results ------------------------------------------------------------ */

/* Rows of the public result structs of <pto/protocol.h>: what libptoclient
 * decodes into and the daemon encodes from.  Decoding ignores keys that
 * have no row (a newer daemon's). */

static const schema_spec_t str_elem = ROW_ELEM(SK_STR, const char *, NULL);

#define T pto_ping_t
static const schema_spec_t ping_rows[] = {
    ROW_K("version", SK_STR, T, version, 0),
    ROW_U("device", T, device, 0, UINT32_MAX, 0),
    ROW_K("state", SK_STR, T, state, 0),
    /* Optional when decoded: a version-1.0 daemon does not send it. */
    {.key = "features", .kind = SK_LIST, .flags = F_OPT, .off = offsetof(T, features),
     .off2 = offsetof(T, nfeatures), .sub = &str_elem},
};
#undef T
static const schema_t ping_schema = SCHEMA(ping_rows);

#define T pto_arena_info_t
static const schema_spec_t prewarm_info_rows[] = {
    ROW_MAP("sizing", T, prewarm.sizing, sizing_schema, 0),
    ROW_K("key", SK_KEY, T, prewarm.key, 0),
    ROW_K("first_dispatch_hit", SK_TRI, T, prewarm.first_dispatch_hit, F_NIL),
};
static const schema_t prewarm_info_schema = SCHEMA(prewarm_info_rows);
static const schema_spec_t arena_rows[] = {
    ROW_MAP("sizing", T, sizing, sizing_schema, 0),
    ROW_K("key", SK_KEY, T, key, 0),
    ROW_COUNT("bytes", T, bytes),
    ROW_COUNT("build_us", T, build_us),
    ROW_COUNT("builds", T, builds),
    ROW_COUNT("hits", T, hits),
    ROW_COUNT("misses", T, misses),
    ROW_MAP_HERE("prewarm", prewarm_info_schema),
};
#undef T
static const schema_t arena_schema = SCHEMA(arena_rows);

#define T pto_status_t
static const schema_spec_t by_priority_rows[] = {
#define PRIORITY_ROW(p) ROW_COUNT(#p, T, queue.by_priority[(p) + 8])
    PRIORITY_ROW(-8), PRIORITY_ROW(-7), PRIORITY_ROW(-6), PRIORITY_ROW(-5), PRIORITY_ROW(-4),
    PRIORITY_ROW(-3), PRIORITY_ROW(-2), PRIORITY_ROW(-1), PRIORITY_ROW(0), PRIORITY_ROW(1),
    PRIORITY_ROW(2), PRIORITY_ROW(3), PRIORITY_ROW(4), PRIORITY_ROW(5), PRIORITY_ROW(6),
    PRIORITY_ROW(7),
#undef PRIORITY_ROW
};
static const schema_t by_priority_schema = SCHEMA(by_priority_rows);
static const schema_spec_t queue_rows[] = {
    ROW_COUNT("depth", T, queue.depth),
    ROW_COUNT("capacity", T, queue.capacity),
    ROW_COUNT("running", T, queue.running),
    /* Protocol 1.2: absent from an older daemon's answer. */
    {.key = "by_priority", .kind = SK_MAP, .flags = F_NEW, .sub = &by_priority_schema},
    ROW_U("cancelled", T, queue.cancelled, 0, INT64_MAX, F_NEW),
};
static const schema_t queue_schema = SCHEMA(queue_rows);
static const schema_spec_t memory_rows[] = {
    ROW_COUNT("limit", T, memory.limit),
    ROW_COUNT("arena", T, memory.arena),
    ROW_COUNT("buffers", T, memory.buffers),
    ROW_COUNT("free", T, memory.free),
};
static const schema_t memory_schema = SCHEMA(memory_rows);
static const schema_spec_t dispatches_rows[] = {
    ROW_COUNT("ok", T, dispatches.ok),
    ROW_COUNT("failed", T, dispatches.failed),
    ROW_COUNT("rejected", T, dispatches.rejected),
};
static const schema_t dispatches_schema = SCHEMA(dispatches_rows);
static const schema_spec_t per_connection_rows[] = {
    ROW_COUNT("input_limit", T, client_memory.per_connection.input_limit),
    ROW_COUNT("output_limit", T, client_memory.per_connection.output_limit),
    ROW_COUNT("most_input", T, client_memory.per_connection.most_input),
    ROW_COUNT("most_output", T, client_memory.per_connection.most_output),
};
static const schema_t per_connection_schema = SCHEMA(per_connection_rows);
static const schema_spec_t client_memory_rows[] = {
    ROW_COUNT("input", T, client_memory.input),
    ROW_COUNT("output", T, client_memory.output),
    ROW_COUNT("limit", T, client_memory.limit),
    /* Added with the memory model: an older daemon's has none (left 0). */
    {.key = "per_connection", .kind = SK_MAP, .flags = F_OPT, .sub = &per_connection_schema},
};
static const schema_t client_memory_schema = SCHEMA(client_memory_rows);
static const schema_spec_t shm_usage_rows[] = {
    ROW_COUNT("regions", T, shm.regions),
    ROW_COUNT("bytes", T, shm.bytes),
    ROW_COUNT("regions_limit", T, shm.regions_limit),
    /* Added with shm_limit_total: absent from an earlier 1.2 daemon (left 0). */
    ROW_U("bytes_limit", T, shm.bytes_limit, 0, INT64_MAX, F_OPT),
};
static const schema_t shm_usage_schema = SCHEMA(shm_usage_rows);
static const schema_spec_t fds_rows[] = {
    ROW_COUNT("parked", T, fds.parked),
    ROW_COUNT("closing", T, fds.closing),
    ROW_COUNT("limit", T, fds.limit),
    /* Added with most_parked: absent from an earlier 1.2 daemon (left 0). */
    ROW_U("most_parked", T, fds.most_parked, 0, INT64_MAX, F_OPT),
};
static const schema_t fds_schema = SCHEMA(fds_rows);
static const schema_spec_t status_rows[] = {
    ROW_U("device", T, device, 0, UINT32_MAX, 0),  ROW_K("platform", SK_STR, T, platform, 0),
    ROW_K("version", SK_STR, T, version, 0),       ROW_COUNT("uptime_s", T, uptime_s),
    ROW_K("state", SK_STR, T, state, 0),           ROW_MAP_HERE("queue", queue_schema),
    ROW_MAP("arena", T, arena, arena_schema, 0),   ROW_MAP_HERE("memory", memory_schema),
    ROW_MAP_HERE("dispatches", dispatches_schema), ROW_COUNT("clients", T, clients),
    /* Added in 1.1: an older daemon's status has none (left 0). */
    {.key = "client_memory", .kind = SK_MAP, .flags = F_OPT, .sub = &client_memory_schema},
    /* Added in 1.2: mapped shared memory and passed fds (left 0 when absent). */
    {.key = "shm", .kind = SK_MAP, .flags = F_OPT, .sub = &shm_usage_schema},
    {.key = "fds", .kind = SK_MAP, .flags = F_OPT, .sub = &fds_schema},
};
#undef T
static const schema_t status_schema = SCHEMA(status_rows);

#define T pto_arg_spec_t
static const schema_spec_t arg_spec_rows[] = {
    ROW_K("name", SK_STR, T, name, 0),
    ROW_K("kind", SK_STR, T, kind, 0),
    ROW_BOOL("optional", T, optional),
    ROW_K("doc", SK_STR, T, doc, 0),
};
#undef T
static const schema_t arg_spec_schema = SCHEMA(arg_spec_rows);
static const schema_spec_t arg_spec_elem = ROW_ELEM(SK_MAP, pto_arg_spec_t, &arg_spec_schema);

#define T pto_program_info_t
static const schema_spec_t program_rows[] = {
    ROW_K("name", SK_STR, T, name, 0),
    ROW_K("description", SK_STR, T, description, 0),
    ROW_LIST("args", T, args, nargs, arg_spec_elem),
};
#undef T
static const schema_t program_schema = SCHEMA(program_rows);
static const schema_spec_t program_elem = ROW_ELEM(SK_MAP, pto_program_info_t, &program_schema);

#define T pto_dispatch_result_t
static const schema_spec_t output_elem = ROW_ELEM(SK_OPTBIN, pto_bytes_t, NULL);
static const schema_spec_t dispatch_arena_rows[] = {
    ROW_BOOL("hit", T, arena.hit),
    ROW_COUNT("build_us", T, arena.build_us),
    ROW_K("key", SK_KEY, T, arena.key, 0),
};
static const schema_t dispatch_arena_schema = SCHEMA(dispatch_arena_rows);
static const schema_spec_t timing_rows[] = {
    ROW_COUNT("queue", T, timing_us.queue),
    ROW_COUNT("arena", T, timing_us.arena),
    ROW_COUNT("run", T, timing_us.run),
    ROW_COUNT("total", T, timing_us.total),
};
static const schema_t timing_schema = SCHEMA(timing_rows);
static const schema_spec_t dispatch_result_rows[] = {
    ROW_LIST("outputs", T, outputs, noutputs, output_elem),
    ROW_MAP_HERE("arena", dispatch_arena_schema),
    ROW_MAP("sizing", T, sizing, proto_sizing_resolved_schema, 0),
    ROW_MAP("peaks", T, peaks, peaks_schema, 0),
    ROW_MAP_HERE("timing_us", timing_schema),
    ROW_COUNT("tasks", T, tasks),
    ROW_MAP("dfx", T, dfx, proto_dfx_schema, F_OPT),
    ROW_K("request_id", SK_STR, T, request_id, F_OPT), /* 1.2: echoed when sent */
};
#undef T
static const schema_t dispatch_result_schema = SCHEMA(dispatch_result_rows);

static const schema_spec_t buffer_info_rows[] = {
    ROW_K("name", SK_STR, pto_buffer_info_t, name, 0),
    ROW_COUNT("bytes", pto_buffer_info_t, bytes),
};
static const schema_t buffer_info_schema = SCHEMA(buffer_info_rows);
static const schema_spec_t buffer_info_elem =
    ROW_ELEM(SK_MAP, pto_buffer_info_t, &buffer_info_schema);

static const schema_spec_t byte_count_rows[] = {ROW_COUNT("bytes", pto_byte_count_t, bytes)};
static const schema_t byte_count_schema = SCHEMA(byte_count_rows);

#define T pto_advise_program_t
static const schema_spec_t advise_program_rows[] = {
    ROW_K("program", SK_STR, T, program, 0),
    ROW_COUNT("dispatches", T, dispatches),
    ROW_MAP("observed", T, observed, peaks_schema, 0),
    ROW_MAP("recommended", T, recommended, sizing_schema, 0),
};
#undef T
static const schema_t advise_program_schema = SCHEMA(advise_program_rows);
static const schema_spec_t advise_program_elem =
    ROW_ELEM(SK_MAP, pto_advise_program_t, &advise_program_schema);
static const schema_spec_t sizing_elem = ROW_ELEM(SK_MAP, pto_sizing_t, &sizing_schema);

#define T pto_advise_t
#define ROW_OPT_LIST(k, items, count, elem)                                                   \
  {                                                                                           \
    .key = k, .kind = SK_LIST, .flags = F_OPT, .off = offsetof(T, items),                     \
    .off2 = offsetof(T, count), .sub = &(elem)                                                \
  }
static const schema_spec_t advise_rows[] = {
    ROW_MAP("observed", T, observed, peaks_schema, 0),
    ROW_MAP("recommended", T, recommended, sizing_schema, 0),
    ROW_K("config", SK_STR, T, config, 0),
    ROW_OPT_LIST("programs", programs, nprograms, advise_program_elem),
    ROW_OPT_LIST("sizings", sizings, nsizings, sizing_elem),
    ROW_OPT_LIST("warnings", warnings, nwarnings, str_elem),
};
#undef ROW_OPT_LIST
#undef T
static const schema_t advise_schema = SCHEMA(advise_rows);

/* --- the method table --------------------------------------------------- */

#define ROOT_MAP(schema) \
  { .kind = SK_MAP, .sub = &(schema) }

typedef struct method_def {
  schema_spec_t params; /* always a map row */
  schema_spec_t result;
} method_def_t;

static const method_def_t methods[PROTO_M_COUNT] = {
    [PROTO_M_PING] = {ROOT_MAP(no_params_schema), ROOT_MAP(ping_schema)},
    [PROTO_M_STATUS] = {ROOT_MAP(no_params_schema), ROOT_MAP(status_schema)},
    [PROTO_M_METRICS] = {ROOT_MAP(no_params_schema),
                         {.kind = SK_STR,
                          .flags = F_LEN,
                          .off = offsetof(pto_text_t, text),
                          .off2 = offsetof(pto_text_t, len)}},
    [PROTO_M_PROGRAMS] = {ROOT_MAP(no_params_schema),
                          ROW_LIST(NULL, pto_programs_t, programs, count, program_elem)},
    [PROTO_M_DISPATCH] = {ROOT_MAP(dispatch_schema), ROOT_MAP(dispatch_result_schema)},
    [PROTO_M_BUFFER_ALLOC] = {ROOT_MAP(alloc_schema), ROOT_MAP(buffer_info_schema)},
    [PROTO_M_BUFFER_WRITE] = {ROOT_MAP(write_schema), ROOT_MAP(byte_count_schema)},
    [PROTO_M_BUFFER_READ] = {ROOT_MAP(read_schema), {.kind = SK_BIN}},
    [PROTO_M_BUFFER_FREE] = {ROOT_MAP(free_schema), ROOT_MAP(byte_count_schema)},
    [PROTO_M_BUFFER_LIST] = {ROOT_MAP(list_schema),
                             ROW_LIST(NULL, pto_buffer_list_t, buffers, count, buffer_info_elem)},
    [PROTO_M_PREWARM] = {ROOT_MAP(prewarm_schema), ROOT_MAP(arena_schema)},
    [PROTO_M_ADVISE] = {ROOT_MAP(no_params_schema), ROOT_MAP(advise_schema)},
    [PROTO_M_SHM_REGISTER] = {ROOT_MAP(shm_register_schema), ROOT_MAP(buffer_info_schema)},
    [PROTO_M_SHM_UNREGISTER] = {ROOT_MAP(shm_unregister_schema), ROOT_MAP(byte_count_schema)},
    [PROTO_M_SHM_LIST] = {ROOT_MAP(no_params_schema),
                          ROW_LIST(NULL, pto_buffer_list_t, buffers, count, buffer_info_elem)},
};

const schema_spec_t *proto_params_row(proto_method_t m) {
  return (unsigned)m < PROTO_M_COUNT ? &methods[m].params : NULL;
}

const schema_spec_t *proto_result_row(proto_method_t m) {
  return (unsigned)m < PROTO_M_COUNT ? &methods[m].result : NULL;
}

static void ctx_init(schema_ctx_t *ctx, proto_method_t m, int side, bool strict,
                     msgpack_zone *zone, pto_error_t *err) {
  memset(ctx, 0, sizeof(*ctx));
  ctx->err = err;
  ctx->zone = zone;
  ctx->strict = strict;
  ctx->method = method_names[m];
  ctx->what = method_sides[m][side];
}

static int bad_method(pto_error_t *err, proto_method_t m) {
  return pto_error_set(err, PTO_E_UNKNOWN_METHOD, "No method number %d; see docs/protocol.md.",
                       (int)m);
}

int proto_params_decode(proto_method_t method, const msgpack_object *params, msgpack_zone *zone,
                        proto_params_t *ret, pto_error_t *ret_err) {
  static const msgpack_object empty = {.type = MSGPACK_OBJECT_MAP};
  proto_params_t scratch;
  schema_ctx_t ctx;
  const schema_t *sc;
  if ((unsigned)method >= PROTO_M_COUNT) return bad_method(ret_err, method);
  sc = methods[method].params.sub;
  if (!ret) ret = &scratch;
  memset(ret, 0, sizeof(*ret));
  schema_init(sc, ret);
  ctx_init(&ctx, method, SIDE_PARAMS, true, zone, ret_err);
  return schema_decode_map(&ctx, sc, params ? params : &empty, ret, NULL);
}

int proto_params_pack(msgpack_packer *pk, proto_method_t method, const proto_params_t *params) {
  const schema_spec_t *root;
  int rc;
  if ((unsigned)method >= PROTO_M_COUNT) return -EINVAL;
  root = &methods[method].params;
  if (!params || ((const schema_t *)root->sub)->nfields == 0 || schema_absent(root, params))
    return msgpack_pack_array(pk, 0) == 0 ? 0 : -ENOMEM;
  rc = msgpack_pack_array(pk, 1) | schema_pack(pk, root, params);
  return rc == 0 ? 0 : -ENOMEM;
}

int proto_result_pack(msgpack_packer *pk, proto_method_t method, const proto_result_t *result) {
  if ((unsigned)method >= PROTO_M_COUNT) return -EINVAL;
  return schema_pack(pk, &methods[method].result, result) == 0 ? 0 : -ENOMEM;
}

int proto_result_decode(proto_method_t method, const msgpack_object *result, msgpack_zone *zone,
                        proto_result_t *ret, pto_error_t *ret_err) {
  const schema_spec_t *root;
  schema_ctx_t ctx;
  if ((unsigned)method >= PROTO_M_COUNT) return bad_method(ret_err, method);
  root = &methods[method].result;
  memset(ret, 0, sizeof(*ret));
  if (root->kind == SK_MAP) schema_init(root->sub, ret);
  ctx_init(&ctx, method, SIDE_RESULT, false, zone, ret_err);
  return schema_decode(&ctx, root, result, ret);
}

