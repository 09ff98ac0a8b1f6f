/* SPDX-License-Identifier: Apache-2.0 */
/* proto/methods.h — typed params and results of every method of
 * docs/protocol.md, both directions.
 *
 * The client encodes params and decodes results; the daemon decodes params
 * and encodes results.  One union each, proto_params_t and proto_result_t,
 * with one member per method (the member named after the method:
 * params.dispatch, result.buffer_read, ...); methods without params have no
 * member and take NULL.
 *
 * The result types are the public ones of <pto/protocol.h> (one shape per
 * result): the rows in methods.c name their fields, so libptoclient
 * decodes an answer straight into what its caller reads, and a new result
 * key is one struct member there plus one row here.  The proto_*_t names
 * below are aliases of them, kept for the daemon's code.
 *
 *   method        params member            result member
 *   ping          —                        ping      pto_ping_t
 *   status        —                        status    pto_status_t
 *   metrics       —                        metrics   pto_text_t
 *   programs      —                        programs  pto_programs_t
 *   dispatch      dispatch                 dispatch  pto_dispatch_result_t
 *   buffer.alloc  buffer_alloc             buffer_alloc  pto_buffer_info_t
 *   buffer.write  buffer_write             buffer_write  pto_byte_count_t
 *   buffer.read   buffer_read              buffer_read   pto_bytes_t
 *   buffer.free   buffer_free              buffer_free   pto_byte_count_t
 *   buffer.list   buffer_list (request_id) buffer_list   pto_buffer_list_t
 *   prewarm       prewarm                  prewarm   pto_arena_info_t
 *   advise        —                        advise    pto_advise_t
 *   shm.register  shm_register             shm_register    pto_buffer_info_t
 *   shm.unregister shm_unregister          shm_unregister  pto_byte_count_t
 *   shm.list      —                        shm_list        pto_buffer_list_t
 * (buffer.read with `shm` answers {bytes}: decode it as buffer.write's
 * result, pto_byte_count_t.)
 *
 * Decoding is strict for params (the daemon's side): an unknown key is
 * INVALID_REQUEST naming it (err->key = the key, message
 * "unknown key 'ring_heapp' in dispatch config; known keys: ..."), so is a
 * duplicate key, a missing required key, and a value of the wrong type or
 * range ("key 'bytes' in buffer.alloc params must be an integer in [1,
 * 1099511627776], got \"12\".").  Errors in a dispatch argument start with
 * its index: "args[2]: ...", err->key "args[2]".  Values inside `config` are
 * INVALID_CONFIG: the ring fields with the RunConfig messages of
 * pto/sizing.h, unchanged; the other keys in the same style
 * ("enable_swimlane must be an integer in [0, 4], got true.").  An optional
 * key sent as nil counts as left out.
 * Decoding results (the client's side) ignores unknown keys, so a client
 * keeps working against a newer daemon, and requires every documented key.
 *
 * Lifetime of decoded values: strings are NUL-terminated copies in the
 * msgpack zone; bins (data, init, outputs, buffer.read) point into the
 * message bytes without a copy; arrays (args, outputs, programs, buffers)
 * live in the zone.  All of it is valid while both the message bytes and the
 * msgpack_unpacked they were decoded from are (see proto/rpc.h).
 *
 * Encoding packs through a msgpack_packer; the proto_encode_* functions
 * write a whole message into a msgpack_sbuffer, reserving room for the large
 * bins first so that each byte of data is copied exactly once.  Encoders do
 * not validate (the daemon validates what it decodes); they return 0 or
 * -ENOMEM (or -EINVAL for a method number out of range).  An array with a
 * non-zero count must have a non-NULL pointer; a NULL string is sent as "".
 */
#ifndef PROTO_METHODS_H
#define PROTO_METHODS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>
#include <pto/errors.h>
#include <pto/program.h>
#include <pto/protocol.h>
#include <pto/sizing.h>

#include "rpc.h"

/* The method list is the public one (pto/protocol.h), so PROTO_M_x ==
 * PTO_METHOD_x. */
typedef enum proto_method {
#define PROTO_METHOD_ENUM_(id, name) PROTO_M_##id,
  PTO_METHOD_MAP(PROTO_METHOD_ENUM_)
#undef PROTO_METHOD_ENUM_
      PROTO_M_COUNT
} proto_method_t;

/* "buffer.alloc" for PROTO_M_BUFFER_ALLOC; NULL out of range. */
const char *proto_method_name(proto_method_t method);
/* The method for a wire name (not NUL-terminated); -1 when unknown. */
int proto_method_from_name(const char *name, size_t len);

/* Limits of the protocol. */
#define PROTO_NAME_MAX  64                  /* buffer and program names */
#define PROTO_BYTES_MAX (UINT64_C(1) << 40) /* bytes, offsets, out sizes */
#define PROTO_UNSET     (-1)                /* an optional int/bool not given */

/* Bytes that are not a string: a bin on the wire.  ptr NULL means "not
 * given" (an optional bin) or nil (a dispatch output with nothing to
 * return); a present empty bin has a non-NULL ptr and len 0. */
typedef pto_bytes_t proto_bytes_t;

/* One extra `config` key a client passes through untouched (a knob this
 * library does not know yet): key, and its value as one encoded msgpack
 * object.  Encode side only; the daemon rejects keys it does not know. */
typedef struct proto_raw_kv {
  const char *key;
  const void *value;
  size_t value_len;
} proto_raw_kv_t;

/* The per-dispatch RunConfig (`config` of dispatch and prewarm).  Start from
 * proto_config_init(): everything unset.  Ring fields: 0 entries are unset
 * (a scalar on the wire sets all four rings; on encode, four equal values go
 * out as a scalar, anything else as the list). */
typedef struct proto_config {
  pto_sizing_t sizing;
  int aicpu_thread_num;        /* 0 = unset, else 2..16 */
  int enable_swimlane;         /* PROTO_UNSET or 0..4 */
  int enable_scope_stats;      /* PROTO_UNSET, 0 or 1 */
  int enable_dep_gen;          /* PROTO_UNSET, 0 or 1 */
  const proto_raw_kv_t *extra; /* encode only: passed through after the known keys */
  size_t nextra;
} proto_config_t;

void proto_config_init(proto_config_t *config);
/* Whether nothing is set (no key would be sent). */
bool proto_config_empty(const proto_config_t *config);

/* One dispatch argument.  kind (pto/program.h) picks the wire form:
 *   PTO_ARG_BUFFER  {"buffer": buffer}, or with bytes != 0
 *                   {"buffer": buffer, "offset": offset, "bytes": bytes}
 *   PTO_ARG_INPUT   {"data": data}          (also {"data": .., "dir": "in"})
 *   PTO_ARG_INOUT   {"data": data, "dir": "inout"}
 *   PTO_ARG_OUTPUT  {"out": bytes}
 *   PTO_ARG_INT     {"scalar": i}
 *   PTO_ARG_FLOAT   {"scalar": f} */
/* One dispatch argument.  kind PTO_ARG_INPUT / INOUT / OUTPUT with `shm`
 * set: the bytes [offset, offset + bytes) of the connection's shared-memory
 * region of that name (`{"shm": name, "offset": o, "bytes": n, "dir": ...}`)
 * instead of `data` / `out`. */
typedef struct proto_arg {
  pto_arg_kind_t kind;
  const char *buffer;
  const char *shm;
  uint64_t offset;
  uint64_t bytes;
  proto_bytes_t data;
  int64_t i;
  double f;
} proto_arg_t;

typedef struct proto_dispatch_params {
  const char *program; /* a name: 1..64 of [A-Za-z0-9._-], not starting with '.' */
  const proto_arg_t *args;
  uint32_t nargs;
  proto_config_t config;
  int64_t deadline_ms; /* PROTO_UNSET, or >= 0 */
  const char *request_id; /* optional (NULL): the caller's id, echoed (1.2) */
  int32_t priority; /* -8 .. 7, lower runs sooner; default 0 */
} proto_dispatch_params_t;

typedef struct proto_buffer_alloc_params {
  const char *name;
  uint64_t bytes;     /* 1..2^40 */
  proto_bytes_t init; /* optional (ptr NULL); exactly `bytes` long */
  const char *request_id;
  int32_t priority; /* -8 .. 7, lower runs sooner; default 0 */
} proto_buffer_alloc_params_t;

/* Exactly one of `data` and `shm`: with `shm`, `bytes` bytes come from the
 * connection's region at shm_offset. */
typedef struct proto_buffer_write_params {
  const char *name;
  uint64_t offset; /* optional, default 0 */
  proto_bytes_t data;
  const char *shm;     /* optional: a region name */
  uint64_t shm_offset; /* optional, default 0 */
  uint64_t bytes;      /* with shm: 1..2^40 */
  const char *request_id;
  int32_t priority; /* -8 .. 7, lower runs sooner; default 0 */
} proto_buffer_write_params_t;

/* With `shm`: the bytes go into the connection's region at shm_offset
 * (`bytes` then required), and the result is {bytes}. */
typedef struct proto_buffer_read_params {
  const char *name;
  uint64_t offset; /* optional, default 0 */
  uint64_t bytes;  /* optional: 0 = to the end of the buffer */
  const char *shm;     /* optional: a region name */
  uint64_t shm_offset; /* optional, default 0 */
  const char *request_id;
  int32_t priority; /* -8 .. 7, lower runs sooner; default 0 */
} proto_buffer_read_params_t;

typedef struct proto_shm_register_params {
  const char *name; /* per connection; the fd travels as SCM_RIGHTS */
  uint64_t bytes;   /* 1..2^40, at most the memfd's size */
} proto_shm_register_params_t;

typedef struct proto_shm_unregister_params {
  const char *name;
} proto_shm_unregister_params_t;

typedef struct proto_buffer_free_params {
  const char *name;
  const char *request_id;
  int32_t priority; /* -8 .. 7, lower runs sooner; default 0 */
} proto_buffer_free_params_t;

/* buffer.list takes protocol 1.2's request_id (its result, a list, has no
 * room to echo it) and priority (answered on the loop at once: it orders
 * nothing). */
typedef struct proto_buffer_list_params {
  const char *request_id;
  int32_t priority;
} proto_buffer_list_params_t;

typedef struct proto_prewarm_params {
  proto_config_t config; /* optional: empty = the daemon's resolved baseline */
  const char *request_id;
  int32_t priority; /* -8 .. 7, lower runs sooner; default 0 */
} proto_prewarm_params_t;

/* Device requests (dispatch, buffer.alloc/write/read/free, prewarm) may
 * carry "priority": an int in [PROTO_PRIORITY_MIN, PROTO_PRIORITY_MAX]. */
#define PROTO_PRIORITY_MIN (-8)
#define PROTO_PRIORITY_MAX 7

typedef union proto_params {
  proto_dispatch_params_t dispatch;
  proto_buffer_alloc_params_t buffer_alloc;
  proto_buffer_write_params_t buffer_write;
  proto_buffer_read_params_t buffer_read;
  proto_buffer_free_params_t buffer_free;
  proto_buffer_list_params_t buffer_list;
  proto_prewarm_params_t prewarm;
  proto_shm_register_params_t shm_register;
  proto_shm_unregister_params_t shm_unregister;
} proto_params_t;

/* The cancel notification, [2, "cancel", [{"msgid": id}]]: take back a
 * queued request of the same connection. */
#define PROTO_CANCEL "cancel"
typedef struct proto_cancel_params {
  uint32_t msgid;
} proto_cancel_params_t;

/* Decode a cancel notification's params (the map, or NULL for []): 0, or
 * -PTO_E_INVALID_REQUEST with ret_err saying what is wrong. */
int proto_cancel_decode(const msgpack_object *params, proto_cancel_params_t *ret,
                        pto_error_t *ret_err);

/* A device request's priority (0 for methods that take none). */
int proto_params_priority(proto_method_t method, const proto_params_t *params);

/* Results: the public structs of <pto/protocol.h>, under the names the
 * daemon's code uses. */
typedef pto_ping_t proto_ping_result_t;
typedef pto_arena_info_t proto_arena_t; /* status.arena and prewarm's result */
typedef pto_status_t proto_status_result_t;
typedef pto_text_t proto_text_t;
typedef pto_program_info_t proto_program_info_t;
typedef pto_programs_t proto_programs_result_t;
typedef pto_dfx_t proto_dfx_t;
typedef pto_dispatch_result_t proto_dispatch_result_t;
typedef pto_buffer_info_t proto_buffer_info_t;
typedef pto_byte_count_t proto_byte_count_t;
typedef pto_buffer_list_t proto_buffer_list_t;
typedef pto_advise_program_t proto_advise_program_t;
typedef pto_advise_t proto_advise_result_t;

/* Whether the dfx map has anything to send. */
bool proto_dfx_present(const proto_dfx_t *dfx);

typedef union proto_result {
  proto_ping_result_t ping;
  proto_status_result_t status;
  proto_text_t metrics;
  proto_programs_result_t programs;
  proto_dispatch_result_t dispatch;
  proto_buffer_info_t buffer_alloc;
  proto_byte_count_t buffer_write;
  proto_bytes_t buffer_read;
  proto_byte_count_t buffer_free;
  proto_buffer_list_t buffer_list;
  proto_arena_t prewarm;
  proto_advise_result_t advise;
  proto_buffer_info_t shm_register;
  proto_byte_count_t shm_unregister;
  proto_buffer_list_t shm_list;
} proto_result_t;

/* request_id (protocol 1.2): device requests (dispatch, buffer.*,
 * prewarm) may carry the caller's
 * own id for the work, 1..PROTO_REQUEST_ID_MAX bytes of printable ASCII
 * (0x20..0x7e); anything else is INVALID_REQUEST naming the key.  The
 * daemon never interprets it; it echoes it in the result map, the error
 * map, its log lines and DFX artefacts. */
#define PROTO_REQUEST_ID_MAX 64
bool proto_request_id_valid(const char *id, size_t len);
/* The request_id a decoded params union carries (NULL: none, or a method
 * that takes none).  params as proto_params_decode filled it. */
const char *proto_params_request_id(proto_method_t method, const proto_params_t *params);

/* Decode the params of `method`: params is the map of a `[map]` params
 * array, or NULL for `[]` (proto_envelope_t.params).  zone is the one the
 * message was unpacked into (unpacked.zone, never NULL after proto_decode):
 * decoded strings and arrays are allocated there.  ret may be NULL for methods without params.  Returns 0,
 * -PTO_E_INVALID_REQUEST, -PTO_E_INVALID_CONFIG (ret_err says which key and
 * why), or -PTO_E_INTERNAL, out of memory (pto/errors.h: never an errno). */
int proto_params_decode(proto_method_t method, const msgpack_object *params, msgpack_zone *zone,
                        proto_params_t *ret, pto_error_t *ret_err);

/* Pack the params array of `method`: `[]` when there is nothing to send,
 * else `[{...}]` with the keys that are set.  params may be NULL for
 * methods without params. */
int proto_params_pack(msgpack_packer *pk, proto_method_t method, const proto_params_t *params);

/* The same with protocol 1.2's "priority" key after the others when
 * priority != 0 (0, the default, is not sent).  The codec does not range
 * check it (the caller does); the daemon's side of priority is the
 * scheduler's (dispatch.h), and a daemon without it refuses the key. */
int proto_params_pack_priority(msgpack_packer *pk, proto_method_t method,
                               const proto_params_t *params, int priority);
/* Set the request_id of params (its SK_RID row): -1 when `method` takes
 * none (not a device method), else 0. */
int proto_params_set_request_id(proto_method_t method, proto_params_t *params, const char *id);

/* Pack the result object of `method`. */
int proto_result_pack(msgpack_packer *pk, proto_method_t method, const proto_result_t *result);

/* Decode the result object of a successful response to `method`.  Returns
 * 0, -PTO_E_INVALID_REQUEST naming the bad key ("... in status result"), or
 * -PTO_E_INTERNAL, out of memory. */
int proto_result_decode(proto_method_t method, const msgpack_object *result, msgpack_zone *zone,
                        proto_result_t *ret, pto_error_t *ret_err);

/* Whole messages into sb (appended): the request `[0, msgid, name, params]`
 * and the success response `[1, msgid, nil, result]`. */
int proto_encode_request(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                         const proto_params_t *params);
int proto_encode_response(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                          const proto_result_t *result);
/* The same, echoing request_id (NULL: none, the same bytes as above) as the
 * result map's "request_id" key.  A dispatch's comes from
 * result->dispatch.request_id instead (its struct has the member); a
 * result that is not a map (buffer.read's bytes) cannot carry it. */
int proto_encode_response_id(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                             const proto_result_t *result, const char *request_id);
/* The room proto_encode_response_id makes in sb before it packs: the
 * answer's byte strings (outputs, DFX artefacts, buffer.read's bytes) and
 * room for the keys around them, so each byte string is copied once; 0
 * when the answer is one write of its own length (a dispatch without
 * bytes, DFX or request_id).  The one place that says how much an answer
 * needs: a caller that makes the room itself (the daemon: huge pages for a
 * large answer) then packs with proto_pack_response_id. */
size_t proto_response_room(proto_method_t method, const proto_result_t *result);
/* proto_encode_response_id into the room the caller made: nothing is
 * reserved (a write beyond the room grows sb). */
int proto_pack_response_id(msgpack_sbuffer *sb, uint32_t msgid, proto_method_t method,
                           const proto_result_t *result, const char *request_id);

/* A failed device request's response whose error map carries, besides
 * the keys of proto_pack_error_map, the "dfx" key (what a dispatch's run
 * recorded until it failed; dfx NULL or empty: none) and the request's
 * "request_id" (NULL: none).  With neither, the bytes of
 * proto_pack_response_error. */
int proto_encode_error_response_dfx(msgpack_sbuffer *sb, uint32_t msgid, const pto_error_t *err,
                                    const proto_dfx_t *dfx, const char *request_id);
/* Decode the "dfx" map of an error map (NULL when it has none: *ret is
 * then all absent).  Bins point into the message. */
int proto_dfx_decode_error(const msgpack_object *error_map, msgpack_zone *zone, proto_dfx_t *ret,
                           pto_error_t *ret_err);

/* Whether name is a valid buffer or program name: 1..PROTO_NAME_MAX bytes of
 * [A-Za-z0-9._-], not starting with '.' (so never a path, never hidden). */
bool proto_name_valid(const char *name, size_t len);

#endif
