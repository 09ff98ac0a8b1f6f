/* SPDX-License-Identifier: Apache-2.0 */
/* Typed params and results of every method (proto/methods.h): the exact
 * wire shapes, round trips both ways, and every rejection with its message. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "check_main.h"
#include "methods.h"
#include "msgpack_build.h"

#define TW   PTO_FIELD_TASK_WINDOW
#define HEAP PTO_FIELD_HEAP
#define DEP  PTO_FIELD_DEP_POOL

/* ---- helpers ------------------------------------------------------------ */

typedef struct wire {
  msgpack_sbuffer sb;
  msgpack_unpacked up;
  proto_envelope_t env;
  pto_error_t err;
} wire_t;

static char text_buf[8192];

/* Decoded values point into their message: round trips keep the messages
 * here until the test ends (freed by the teardown fixture). */
static wire_t held[32];
static int nheld;

static void hold(const wire_t *w) {
  ck_assert_int_lt(nheld, 32);
  held[nheld++] = *w;
}

static void release_held(void) {
  while (nheld > 0) {
    nheld--;
    msgpack_unpacked_destroy(&held[nheld].up);
    msgpack_sbuffer_destroy(&held[nheld].sb);
  }
}

static void wire_unpack(wire_t *w) {
  msgpack_unpacked_init(&w->up);
  ck_assert_int_eq(proto_decode(w->sb.data, w->sb.size, &w->up, &w->env, &w->err), 0);
}

static void wire_free(wire_t *w) {
  msgpack_unpacked_destroy(&w->up);
  msgpack_sbuffer_destroy(&w->sb);
}

/* Element 3 of the envelope: a request's params or a response's result. */
static const char *payload_text(const wire_t *w) {
  return mb_print(&w->up.data.via.array.ptr[3], text_buf, sizeof(text_buf));
}

static int encode(msgpack_sbuffer *sb, proto_method_t m, bool request, const void *value) {
  return request ? proto_encode_request(sb, 42, m, value) : proto_encode_response(sb, 42, m, value);
}

static int decode(const wire_t *w, proto_method_t m, bool request, void *ret, pto_error_t *err) {
  pto_error_clear(err);
  if (request) return proto_params_decode(m, w->env.params, w->up.zone, ret, err);
  return proto_result_decode(m, w->env.result, w->up.zone, ret, err);
}

/* Encode value as the params (request) or the result (response) of m, check
 * its wire text (unless expect is NULL), decode it into ret, and check that
 * encoding ret gives the same bytes again. */
static void round_trip(proto_method_t m, bool request, const void *value, const char *expect,
                       void *ret) {
  wire_t w;
  msgpack_sbuffer again;
  msgpack_sbuffer_init(&w.sb);
  ck_assert_int_eq(encode(&w.sb, m, request, value), 0);
  wire_unpack(&w);
  if (request) ck_assert_int_eq(proto_method_from_name(w.env.method, w.env.method_len), (int)m);
  if (expect) ck_assert_str_eq(payload_text(&w), expect);
  ck_assert_msg(decode(&w, m, request, ret, &w.err) == 0, "%s", w.err.message);
  msgpack_sbuffer_init(&again);
  ck_assert_int_eq(encode(&again, m, request, ret), 0);
  ck_assert_uint_eq(again.size, w.sb.size);
  ck_assert_mem_eq(again.data, w.sb.data, w.sb.size);
  msgpack_sbuffer_destroy(&again);
  hold(&w);
}

static void params_round_trip(proto_method_t m, const proto_params_t *p, const char *expect,
                              proto_params_t *ret) {
  round_trip(m, true, p, expect, ret);
}

static void results_round_trip(proto_method_t m, const proto_result_t *r, const char *expect,
                               proto_result_t *ret) {
  round_trip(m, false, r, expect, ret);
}

/* Decode `payload` (the text of a params array, or of a result) for m. */
static int decode_text(proto_method_t m, bool request, const char *payload, void *ret,
                       pto_error_t *err, wire_t *w) {
  char text[4096];
  if (request)
    snprintf(text, sizeof(text), "[0, 1, \"%s\", %s]", proto_method_name(m), payload);
  else
    snprintf(text, sizeof(text), "[1, 1, nil, %s]", payload);
  w->sb = mb_build(text);
  wire_unpack(w);
  return decode(w, m, request, ret, err);
}

static int decode_params(proto_method_t m, const char *params, proto_params_t *ret,
                         pto_error_t *err, wire_t *w) {
  return decode_text(m, true, params, ret, err, w);
}

static int decode_result(proto_method_t m, const char *result, proto_result_t *ret,
                         pto_error_t *err, wire_t *w) {
  return decode_text(m, false, result, ret, err, w);
}

static void set_sizing(pto_sizing_t *s, uint64_t tw, uint64_t heap, uint64_t dep) {
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    s->value[TW][r] = tw;
    s->value[HEAP][r] = heap;
    s->value[DEP][r] = dep;
  }
}

#define DEFAULT_SIZING_TEXT                                                                     \
  "{\"ring_task_window\": [16384, 16384, 16384, 16384], \"ring_heap\": [268435456, 268435456, " \
  "268435456, 268435456], \"ring_dep_pool\": [16384, 16384, 16384, 16384]}"

/* ---- names -------------------------------------------------------------- */

START_TEST(method_names) {
  static const char *const names[] = {"ping",        "status",       "metrics",      "programs",
                                      "dispatch",    "buffer.alloc", "buffer.write", "buffer.read",
                                      "buffer.free", "buffer.list",  "prewarm",      "advise",
                                      "shm.register", "shm.unregister", "shm.list"};
  ck_assert_int_eq(PROTO_M_COUNT, 15);
  for (int m = 0; m < PROTO_M_COUNT; m++) {
    ck_assert_str_eq(proto_method_name((proto_method_t)m), names[m]);
    ck_assert_int_eq(proto_method_from_name(names[m], strlen(names[m])), m);
  }
  ck_assert_int_eq(proto_method_from_name("buffer.allocate", 15), -1);
  ck_assert_int_eq(proto_method_from_name("ping", 3), -1);
  ck_assert_ptr_null(proto_method_name(PROTO_M_COUNT));
}
END_TEST

START_TEST(names_valid) {
  char long_name[70];
  memset(long_name, 'a', sizeof(long_name));
  ck_assert(proto_name_valid("kv", 2));
  ck_assert(proto_name_valid("attention_prefill", 17));
  ck_assert(proto_name_valid("w.layer-0_q", 11));
  ck_assert(proto_name_valid(long_name, 64));
  ck_assert(!proto_name_valid(long_name, 65));
  ck_assert(!proto_name_valid("", 0));
  ck_assert(!proto_name_valid(".hidden", 7));
  ck_assert(!proto_name_valid("../x", 4));
  ck_assert(!proto_name_valid("a/b", 3));
  ck_assert(!proto_name_valid("a b", 3));
  ck_assert(!proto_name_valid("a\0b", 3));
}
END_TEST

/* ---- params round trips ---------------------------------------------------- */

START_TEST(no_params_methods) {
  static const proto_method_t none[] = {PROTO_M_PING, PROTO_M_STATUS, PROTO_M_METRICS,
                                        PROTO_M_PROGRAMS, PROTO_M_ADVISE};
  for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
    proto_params_t p;
    wire_t w;
    pto_error_t err;
    char expect[128];
    const char *name = proto_method_name(none[i]);
    params_round_trip(none[i], NULL, "[]", &p);
    ck_assert_int_eq(decode_params(none[i], "[{}]", NULL, &err, &w), 0);
    wire_free(&w);
    ck_assert_int_eq(decode_params(none[i], "[]", NULL, &err, &w), 0);
    wire_free(&w);
    ck_assert_int_eq(decode_params(none[i], "[{\"x\": 1}]", &p, &err, &w), -PTO_E_INVALID_REQUEST);
    snprintf(expect, sizeof(expect), "unknown key 'x' in %s params; %s takes no parameters.", name,
             name);
    ck_assert_str_eq(err.message, expect);
    ck_assert_str_eq(err.key, "x");
    wire_free(&w);
  }
}
END_TEST

START_TEST(dispatch_params_every_arg_form) {
  static const uint8_t bytes[] = {1, 2, 3};
  static const uint8_t raw_value[] = {0xa3, 'n', 'e', 'w'}; /* "new" */
  proto_raw_kv_t extra = {"future_knob", raw_value, sizeof(raw_value)};
  proto_arg_t args[7] = {
      {.kind = PTO_ARG_BUFFER, .buffer = "kv"},
      {.kind = PTO_ARG_BUFFER, .buffer = "kv", .offset = 0, .bytes = 4096},
      {.kind = PTO_ARG_INPUT, .data = {bytes, 3}},
      {.kind = PTO_ARG_INOUT, .data = {bytes, 2}},
      {.kind = PTO_ARG_OUTPUT, .bytes = 1024},
      {.kind = PTO_ARG_INT, .i = -5},
      {.kind = PTO_ARG_FLOAT, .f = 0.25},
  };
  proto_params_t p, back;
  memset(&p, 0, sizeof(p));
  p.dispatch.program = "attention_prefill";
  p.dispatch.args = args;
  p.dispatch.nargs = 7;
  proto_config_init(&p.dispatch.config);
  p.dispatch.config.sizing.value[TW][0] = 64;
  p.dispatch.config.sizing.value[TW][1] = 64;
  p.dispatch.config.sizing.value[TW][2] = 64;
  p.dispatch.config.sizing.value[TW][3] = 64;
  p.dispatch.config.sizing.value[HEAP][0] = 1 << 20;
  p.dispatch.config.aicpu_thread_num = 4;
  p.dispatch.config.enable_swimlane = 0;
  p.dispatch.config.enable_dep_gen = 1;
  p.dispatch.deadline_ms = 250;
  params_round_trip(
      PROTO_M_DISPATCH, &p,
      "[{\"program\": \"attention_prefill\", \"args\": [{\"buffer\": \"kv\"}, {\"buffer\": \"kv\", "
      "\"offset\": 0, \"bytes\": 4096}, {\"data\": b\"\\x01\\x02\\x03\"}, {\"data\": "
      "b\"\\x01\\x02\", \"dir\": \"inout\"}, {\"out\": 1024}, {\"scalar\": -5}, {\"scalar\": "
      "0.25}], \"config\": {\"ring_task_window\": 64, \"ring_heap\": [1048576, 0, 0, 0], "
      "\"aicpu_thread_num\": 4, \"enable_swimlane\": 0, \"enable_dep_gen\": true}, "
      "\"deadline_ms\": 250}]",
      &back);
  ck_assert_str_eq(back.dispatch.program, "attention_prefill");
  ck_assert_uint_eq(back.dispatch.nargs, 7);
  ck_assert_int_eq(back.dispatch.args[0].kind, PTO_ARG_BUFFER);
  ck_assert_str_eq(back.dispatch.args[1].buffer, "kv");
  ck_assert_uint_eq(back.dispatch.args[1].bytes, 4096);
  ck_assert_int_eq(back.dispatch.args[2].kind, PTO_ARG_INPUT);
  ck_assert_mem_eq(back.dispatch.args[2].data.ptr, bytes, 3);
  ck_assert_int_eq(back.dispatch.args[3].kind, PTO_ARG_INOUT);
  ck_assert_int_eq(back.dispatch.args[4].kind, PTO_ARG_OUTPUT);
  ck_assert_uint_eq(back.dispatch.args[4].bytes, 1024);
  ck_assert_int_eq(back.dispatch.args[5].i, -5);
  ck_assert_int_eq(back.dispatch.args[6].kind, PTO_ARG_FLOAT);
  ck_assert(back.dispatch.args[6].f == 0.25);
  ck_assert_uint_eq(back.dispatch.config.sizing.value[TW][3], 64);
  ck_assert_uint_eq(back.dispatch.config.sizing.value[HEAP][0], 1 << 20);
  ck_assert_uint_eq(back.dispatch.config.sizing.value[HEAP][1], 0);
  ck_assert_uint_eq(back.dispatch.config.sizing.value[DEP][0], 0);
  ck_assert_int_eq(back.dispatch.config.enable_swimlane, 0);
  ck_assert_int_eq(back.dispatch.config.enable_scope_stats, PROTO_UNSET);
  ck_assert_int_eq(back.dispatch.config.enable_dep_gen, 1);
  ck_assert_int_eq(back.dispatch.deadline_ms, 250);

  /* a pass-through key reaches the wire whole, and the daemon names it */
  {
    wire_t w;
    pto_error_t err;
    p.dispatch.config.extra = &extra;
    p.dispatch.config.nextra = 1;
    msgpack_sbuffer_init(&w.sb);
    ck_assert_int_eq(proto_encode_request(&w.sb, 1, PROTO_M_DISPATCH, &p), 0);
    wire_unpack(&w);
    ck_assert_ptr_nonnull(
        strstr(payload_text(&w), "\"enable_dep_gen\": true, \"future_knob\": \"new\"}"));
    ck_assert_int_eq(proto_params_decode(PROTO_M_DISPATCH, w.env.params, w.up.zone, &back, &err),
                     -PTO_E_INVALID_REQUEST);
    ck_assert_str_eq(err.key, "future_knob");
    ck_assert_str_eq(err.message,
                     "unknown key 'future_knob' in dispatch config; known keys: ring_task_window, "
                     "ring_heap, ring_dep_pool, aicpu_thread_num, enable_swimlane, "
                     "enable_scope_stats, enable_dep_gen.");
    wire_free(&w);
  }
}
END_TEST

START_TEST(dispatch_params_minimal) {
  proto_params_t p, back;
  memset(&p, 0, sizeof(p));
  p.dispatch.program = "noop";
  proto_config_init(&p.dispatch.config);
  p.dispatch.deadline_ms = PROTO_UNSET;
  ck_assert(proto_config_empty(&p.dispatch.config));
  params_round_trip(PROTO_M_DISPATCH, &p, "[{\"program\": \"noop\", \"args\": []}]", &back);
  ck_assert_uint_eq(back.dispatch.nargs, 0);
  ck_assert(proto_config_empty(&back.dispatch.config));
  ck_assert_int_eq(back.dispatch.deadline_ms, PROTO_UNSET);
  ck_assert_int_eq(back.dispatch.config.aicpu_thread_num, 0);
}
END_TEST

START_TEST(dispatch_params_accepted_spellings) {
  proto_params_t p;
  pto_error_t err;
  wire_t w;
  ck_assert_int_eq(
      decode_params(
          PROTO_M_DISPATCH,
          "[{\"program\": \"noop\", \"args\": [{\"data\": b\"\", \"dir\": \"in\"}, "
          "{\"data\": b\"ab\", \"dir\": nil}, {\"buffer\": \"kv\", \"offset\": 8, "
          "\"bytes\": 8}, {\"out\": 0}, {\"scalar\": 9223372036854775807}], \"config\": "
          "{\"ring_heap\": nil, \"ring_dep_pool\": [0, 64, 0, 0], \"aicpu_thread_num\": 0, "
          "\"enable_swimlane\": nil, \"enable_scope_stats\": false}, \"deadline_ms\": nil}]",
          &p, &err, &w),
      0);
  ck_assert_int_eq(p.dispatch.args[0].kind, PTO_ARG_INPUT);
  ck_assert_ptr_nonnull(p.dispatch.args[0].data.ptr);
  ck_assert_uint_eq(p.dispatch.args[0].data.len, 0);
  ck_assert_int_eq(p.dispatch.args[1].kind, PTO_ARG_INPUT);
  ck_assert_uint_eq(p.dispatch.args[2].offset, 8);
  ck_assert_int_eq(p.dispatch.args[3].kind, PTO_ARG_OUTPUT);
  ck_assert_int_eq(p.dispatch.args[4].i, INT64_MAX);
  ck_assert_uint_eq(p.dispatch.config.sizing.value[HEAP][0], 0);
  ck_assert_uint_eq(p.dispatch.config.sizing.value[DEP][1], 64);
  ck_assert_int_eq(p.dispatch.config.aicpu_thread_num, 0);
  ck_assert_int_eq(p.dispatch.config.enable_swimlane, PROTO_UNSET);
  ck_assert_int_eq(p.dispatch.config.enable_scope_stats, 0);
  ck_assert_int_eq(p.dispatch.deadline_ms, PROTO_UNSET);
  wire_free(&w);
}
END_TEST

START_TEST(buffer_params) {
  static const uint8_t init[4] = {9, 8, 7, 6};
  proto_params_t p, back;
  memset(&p, 0, sizeof(p));
  p.buffer_alloc = (proto_buffer_alloc_params_t){.name = "kv", .bytes = 4, .init = {init, 4}};
  params_round_trip(PROTO_M_BUFFER_ALLOC, &p,
                    "[{\"name\": \"kv\", \"bytes\": 4, \"init\": b\"\\x09\\x08\\x07\\x06\"}]",
                    &back);
  ck_assert_str_eq(back.buffer_alloc.name, "kv");
  ck_assert_mem_eq(back.buffer_alloc.init.ptr, init, 4);
  p.buffer_alloc.init.ptr = NULL;
  params_round_trip(PROTO_M_BUFFER_ALLOC, &p, "[{\"name\": \"kv\", \"bytes\": 4}]", &back);
  ck_assert_ptr_null(back.buffer_alloc.init.ptr);

  p.buffer_write = (proto_buffer_write_params_t){.name = "kv", .offset = 2, .data = {init, 2}};
  params_round_trip(PROTO_M_BUFFER_WRITE, &p,
                    "[{\"name\": \"kv\", \"offset\": 2, \"data\": b\"\\x09\\x08\"}]", &back);
  ck_assert_uint_eq(back.buffer_write.offset, 2);
  p.buffer_write.offset = 0;
  params_round_trip(PROTO_M_BUFFER_WRITE, &p, "[{\"name\": \"kv\", \"data\": b\"\\x09\\x08\"}]",
                    &back);

  p.buffer_read = (proto_buffer_read_params_t){.name = "kv", .offset = 1, .bytes = 2};
  params_round_trip(PROTO_M_BUFFER_READ, &p, "[{\"name\": \"kv\", \"offset\": 1, \"bytes\": 2}]",
                    &back);
  ck_assert_uint_eq(back.buffer_read.bytes, 2);
  p.buffer_read = (proto_buffer_read_params_t){.name = "kv"};
  params_round_trip(PROTO_M_BUFFER_READ, &p, "[{\"name\": \"kv\"}]", &back);
  ck_assert_uint_eq(back.buffer_read.bytes, 0);

  p.buffer_free = (proto_buffer_free_params_t){.name = "kv"};
  params_round_trip(PROTO_M_BUFFER_FREE, &p, "[{\"name\": \"kv\"}]", &back);
  ck_assert_str_eq(back.buffer_free.name, "kv");
}
END_TEST

START_TEST(prewarm_params) {
  proto_params_t p, back;
  memset(&p, 0, sizeof(p));
  proto_config_init(&p.prewarm.config);
  params_round_trip(PROTO_M_PREWARM, &p, "[]", &back);
  ck_assert(proto_config_empty(&back.prewarm.config));
  p.prewarm.config.sizing.value[HEAP][0] = 512u << 20;
  p.prewarm.config.sizing.value[HEAP][1] = 256u << 20;
  p.prewarm.config.sizing.value[HEAP][2] = 256u << 20;
  p.prewarm.config.sizing.value[HEAP][3] = 256u << 20;
  params_round_trip(PROTO_M_PREWARM, &p,
                    "[{\"config\": {\"ring_heap\": [536870912, 268435456, 268435456, 268435456]}}]",
                    &back);
  ck_assert_uint_eq(back.prewarm.config.sizing.value[HEAP][0], 512u << 20);
}
END_TEST

/* ---- params rejections ---------------------------------------------------- */

static const struct reject {
  proto_method_t method;
  const char *params;
  int code;
  const char *key;
  const char *message;
} rejects[] = {
    /* dispatch: the params map */
    {PROTO_M_DISPATCH, "[]", PTO_E_INVALID_REQUEST, "program",
     "missing required key 'program' in dispatch params."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\"}]", PTO_E_INVALID_REQUEST, "args",
     "missing required key 'args' in dispatch params."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"ring_heap\": 1024}]",
     PTO_E_INVALID_REQUEST, "ring_heap",
     "unknown key 'ring_heap' in dispatch params; known keys: program, args, config, deadline_ms, request_id, priority."},
    /* a long unknown key is shown cut, with "..." */
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk\": 1}]",
     PTO_E_INVALID_REQUEST, "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk",
     "unknown key 'kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...' in dispatch params; known keys: program, args, config, "
     "deadline_ms, request_id, priority."},
    /* request_id (1.2): 1 to 64 bytes of printable ASCII, on every device method */
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"request_id\": \"\"}]",
     PTO_E_INVALID_REQUEST, "request_id",
     "key 'request_id' in dispatch params must be a string of 1 to 64 printable ASCII "
     "characters, got \"\"."},
    {PROTO_M_BUFFER_FREE,
     "[{\"name\": \"kv\", \"request_id\": "
     "\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}]",
     PTO_E_INVALID_REQUEST, "request_id", NULL},
    {PROTO_M_PREWARM, "[{\"request_id\": 7}]", PTO_E_INVALID_REQUEST, "request_id",
     "key 'request_id' in prewarm params must be a string, got 7."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"bytes\": 1, \"request_id\": true}]",
     PTO_E_INVALID_REQUEST, "request_id",
     "key 'request_id' in buffer.alloc params must be a string, got true."},
    {PROTO_M_DISPATCH, "[{\"program\": 5, \"args\": []}]", PTO_E_INVALID_REQUEST, "program",
     "key 'program' in dispatch params must be a string, got 5."},
    {PROTO_M_DISPATCH, "[{\"program\": \"../evil\", \"args\": []}]", PTO_E_INVALID_REQUEST,
     "program",
     "key 'program' in dispatch params must be a name of 1 to 64 characters of A-Z, a-z, 0-9, "
     "'.', '_' and '-', not starting with '.', got \"../evil\"."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": {}}]", PTO_E_INVALID_REQUEST, "args",
     "key 'args' in dispatch params must be an array, got a map of 0."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"program\": \"noop\", \"args\": []}]",
     PTO_E_INVALID_REQUEST, "program",
     "duplicate key 'program' in dispatch params; send each key once."},
    {PROTO_M_DISPATCH, "[{5: 1}]", PTO_E_INVALID_REQUEST, "",
     "a key in dispatch params is 5, not a string; keys are strings."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"deadline_ms\": -1}]",
     PTO_E_INVALID_REQUEST, "deadline_ms",
     "key 'deadline_ms' in dispatch params must be an integer >= 0, got -1."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"deadline_ms\": 1.5}]",
     PTO_E_INVALID_REQUEST, "deadline_ms",
     "key 'deadline_ms' in dispatch params must be an integer >= 0, got 1.5."},
    /* dispatch: arguments */
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [5]}]", PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: a dispatch argument must be a map, one of {\"buffer\": name}, {\"buffer\": name, "
     "\"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, \"dir\": \"inout\"}, "
     "{\"out\": "
     "n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}; got 5."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [{\"out\": 4}, {\"buffer\": \"kv\", "
     "\"data\": b\"x\"}]}]",
     PTO_E_INVALID_REQUEST, "args[1]",
     "args[1]: a dispatch argument must be one of {\"buffer\": name}, {\"buffer\": name, "
     "\"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, \"dir\": \"inout\"}, "
     "{\"out\": "
     "n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}; got the keys 'buffer', 'data'."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{}]}]", PTO_E_INVALID_REQUEST,
     "args[0]",
     "args[0]: a dispatch argument must be one of {\"buffer\": name}, {\"buffer\": name, "
     "\"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, \"dir\": \"inout\"}, "
     "{\"out\": "
     "n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}; got an empty map."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [{\"data\": b\"\", \"dir\": \"in\\x00out\"}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'dir' in a dispatch argument must be a string without NUL bytes, got "
     "\"in\\x00out\"."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"scalar\": nil}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'scalar' is nil; a dispatch argument must be one of {\"buffer\": name}, "
     "{\"buffer\": name, \"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, "
     "\"dir\": \"inout\"}, {\"out\": n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": nil}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...' is nil; a dispatch argument must be one of {\"buffer\": name}, "
     "{\"buffer\": name, \"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, "
     "\"dir\": \"inout\"}, {\"out\": n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"buffer\": \"kv\", \"offset\": 4}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: a dispatch argument must be one of {\"buffer\": name}, {\"buffer\": name, "
     "\"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, \"dir\": \"inout\"}, "
     "{\"out\": "
     "n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}; got the keys 'buffer', 'offset'."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"out\": 4, \"dir\": \"inout\"}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: a dispatch argument must be one of {\"buffer\": name}, {\"buffer\": name, "
     "\"offset\": o, \"bytes\": n}, {\"data\": bin}, {\"data\": bin, \"dir\": \"inout\"}, "
     "{\"out\": "
     "n}, {\"scalar\": int | float} or {\"shm\": region, \"offset\": o, \"bytes\": n, \"dir\": \"in\" | \"out\" | \"inout\"}; got the keys 'dir', 'out'."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"bufer\": \"kv\"}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: unknown key 'bufer' in a dispatch argument; known keys: buffer, offset, bytes, "
     "data, dir, out, scalar, shm."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [{\"out\": 1}, {\"out\": 2}, {\"out\": "
     "-1}]}]",
     PTO_E_INVALID_REQUEST, "args[2]",
     "args[2]: key 'out' in a dispatch argument must be an integer in [0, 1099511627776], got -1."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"out\": 1099511627777}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'out' in a dispatch argument must be an integer in [0, 1099511627776], got "
     "1099511627777."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"data\": \"text\"}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'data' in a dispatch argument must be a bin, got \"text\"."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [{\"data\": b\"x\", \"dir\": \"out\"}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'dir' in a dispatch argument must be \"in\" or \"inout\", got \"out\"."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"scalar\": true}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'scalar' in a dispatch argument must be a 64-bit integer or a float, got "
     "true."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"scalar\": 18446744073709551615}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'scalar' in a dispatch argument must be a 64-bit integer or a float, got "
     "18446744073709551615."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [{\"buffer\": \"kv\", \"offset\": 0, "
     "\"bytes\": 0}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'bytes' in a dispatch argument must be an integer in [1, 1099511627776], got "
     "0."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [{\"buffer\": \"a/b\"}]}]",
     PTO_E_INVALID_REQUEST, "args[0]",
     "args[0]: key 'buffer' in a dispatch argument must be a name of 1 to 64 characters of A-Z, "
     "a-z, 0-9, '.', '_' and '-', not starting with '.', got \"a/b\"."},
    /* dispatch: config */
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"config\": 5}]",
     PTO_E_INVALID_REQUEST, "config", "key 'config' in dispatch params must be a map, got 5."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_heapp\": 1}}]",
     PTO_E_INVALID_REQUEST, "ring_heapp",
     "unknown key 'ring_heapp' in dispatch config; known keys: ring_task_window, ring_heap, "
     "ring_dep_pool, aicpu_thread_num, enable_swimlane, enable_scope_stats, enable_dep_gen."},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_heap\": 1000}}]",
     PTO_E_INVALID_CONFIG, "ring_heap",
     "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000"},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_heap\": [1024, "
     "1000, 0, 0]}}]",
     PTO_E_INVALID_CONFIG, "ring_heap",
     "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got 1000"},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_task_window\": true}}]",
     PTO_E_INVALID_CONFIG, "ring_task_window",
     "ring_task_window must be a power of 2 >= 4, got true"},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_dep_pool\": [4, 4, 4]}}]",
     PTO_E_INVALID_CONFIG, "ring_dep_pool",
     "ring_dep_pool must have exactly 4 entries (one per scope-depth ring), got 3"},
    {PROTO_M_DISPATCH, "[{\"program\": \"noop\", \"args\": [], \"config\": {\"ring_heap\": 0}}]",
     PTO_E_INVALID_CONFIG, "ring_heap",
     "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 0"},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"aicpu_thread_num\": 1}}]",
     PTO_E_INVALID_CONFIG, "aicpu_thread_num",
     "aicpu_thread_num must be an integer in [2, 16] (0 or nil to leave it unset), got 1."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"aicpu_thread_num\": \"4\"}}]",
     PTO_E_INVALID_CONFIG, "aicpu_thread_num",
     "aicpu_thread_num must be an integer in [2, 16] (0 or nil to leave it unset), got \"4\"."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"enable_swimlane\": true}}]",
     PTO_E_INVALID_CONFIG, "enable_swimlane",
     "enable_swimlane must be an integer in [0, 4], got true."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"enable_swimlane\": 5}}]",
     PTO_E_INVALID_CONFIG, "enable_swimlane",
     "enable_swimlane must be an integer in [0, 4], got 5."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"enable_scope_stats\": 1}}]",
     PTO_E_INVALID_CONFIG, "enable_scope_stats", "enable_scope_stats must be a boolean, got 1."},
    {PROTO_M_DISPATCH,
     "[{\"program\": \"noop\", \"args\": [], \"config\": {\"enable_dep_gen\": \"yes\"}}]",
     PTO_E_INVALID_CONFIG, "enable_dep_gen", "enable_dep_gen must be a boolean, got \"yes\"."},
    /* buffers */
    {PROTO_M_BUFFER_ALLOC, "[{\"bytes\": 4}]", PTO_E_INVALID_REQUEST, "name",
     "missing required key 'name' in buffer.alloc params."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \".x\", \"bytes\": 4}]", PTO_E_INVALID_REQUEST, "name",
     "key 'name' in buffer.alloc params must be a name of 1 to 64 characters of A-Z, a-z, 0-9, "
     "'.', '_' and '-', not starting with '.', got \".x\"."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"\", \"bytes\": 4}]", PTO_E_INVALID_REQUEST, "name",
     "key 'name' in buffer.alloc params must be a name of 1 to 64 characters of A-Z, a-z, 0-9, "
     "'.', '_' and '-', not starting with '.', got \"\"."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"bytes\": 0}]", PTO_E_INVALID_REQUEST, "bytes",
     "key 'bytes' in buffer.alloc params must be an integer in [1, 1099511627776], got 0."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"bytes\": \"12\"}]", PTO_E_INVALID_REQUEST,
     "bytes",
     "key 'bytes' in buffer.alloc params must be an integer in [1, 1099511627776], got \"12\"."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"bytes\": 1099511627777}]", PTO_E_INVALID_REQUEST,
     "bytes",
     "key 'bytes' in buffer.alloc params must be an integer in [1, 1099511627776], got "
     "1099511627777."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"bytes\": 4, \"init\": b\"abc\"}]",
     PTO_E_INVALID_REQUEST, "init",
     "key 'init' in buffer.alloc params must be exactly 4 bytes long (the value of 'bytes'), got a "
     "bin of 3 bytes."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"bytes\": 4, \"init\": \"abcd\"}]",
     PTO_E_INVALID_REQUEST, "init",
     "key 'init' in buffer.alloc params must be a bin, got \"abcd\"."},
    {PROTO_M_BUFFER_ALLOC, "[{\"name\": \"kv\", \"size\": 4}]", PTO_E_INVALID_REQUEST, "size",
     "unknown key 'size' in buffer.alloc params; known keys: name, bytes, init, request_id, priority."},
    {PROTO_M_BUFFER_WRITE, "[{\"name\": \"kv\"}]", PTO_E_INVALID_REQUEST, "data",
     "missing required key 'data' in buffer.write params (or 'shm' and 'bytes' to write from a shared-memory region)."},
    {PROTO_M_BUFFER_WRITE, "[{\"name\": \"kv\", \"offset\": -1, \"data\": b\"\"}]",
     PTO_E_INVALID_REQUEST, "offset",
     "key 'offset' in buffer.write params must be an integer in [0, 1099511627776], got -1."},
    {PROTO_M_BUFFER_WRITE, "[{\"name\": \"kv\", \"data\": [1, 2]}]", PTO_E_INVALID_REQUEST, "data",
     "key 'data' in buffer.write params must be a bin, got an array of 2."},
    {PROTO_M_BUFFER_WRITE, "[{\"name\": \"kv\", \"data\": b\"\", \"sync\": true}]",
     PTO_E_INVALID_REQUEST, "sync",
     "unknown key 'sync' in buffer.write params; known keys: name, offset, data, shm, shm_offset, bytes, request_id, priority."},
    {PROTO_M_BUFFER_READ, "[{\"name\": \"kv\", \"bytes\": -1}]", PTO_E_INVALID_REQUEST, "bytes",
     "key 'bytes' in buffer.read params must be an integer in [1, 1099511627776] (0 or nil to "
     "leave it unset), got -1."},
    {PROTO_M_BUFFER_READ, "[{\"name\": \"kv\", \"offset\": \"x\"}]", PTO_E_INVALID_REQUEST,
     "offset",
     "key 'offset' in buffer.read params must be an integer in [0, 1099511627776], got \"x\"."},
    {PROTO_M_BUFFER_READ, "[{\"name\": \"kv\", \"length\": 4}]", PTO_E_INVALID_REQUEST, "length",
     "unknown key 'length' in buffer.read params; known keys: name, offset, bytes, shm, shm_offset, request_id, priority."},
    {PROTO_M_BUFFER_FREE, "[{\"name\": 5}]", PTO_E_INVALID_REQUEST, "name",
     "key 'name' in buffer.free params must be a string, got 5."},
    {PROTO_M_BUFFER_FREE, "[{\"name\": \"kv\", \"bytes\": 4}]", PTO_E_INVALID_REQUEST, "bytes",
     "unknown key 'bytes' in buffer.free params; known keys: name, request_id, priority."},
    {PROTO_M_BUFFER_FREE, "[{\"name\": nil}]", PTO_E_INVALID_REQUEST, "name",
     "key 'name' in buffer.free params must be a string, got nil."},
    /* prewarm */
    {PROTO_M_PREWARM, "[{\"sizing\": {}}]", PTO_E_INVALID_REQUEST, "sizing",
     "unknown key 'sizing' in prewarm params; known keys: config, request_id, priority."},
    {PROTO_M_PREWARM, "[{\"config\": {\"ring_task_window\": 3}}]", PTO_E_INVALID_CONFIG,
     "ring_task_window", "ring_task_window must be a power of 2 >= 4, got 3"},
    {PROTO_M_PREWARM, "[{\"config\": {\"heap\": 1024}}]", PTO_E_INVALID_REQUEST, "heap",
     "unknown key 'heap' in prewarm config; known keys: ring_task_window, ring_heap, "
     "ring_dep_pool, aicpu_thread_num, enable_swimlane, enable_scope_stats, enable_dep_gen."},
};

START_TEST(params_rejected) {
  const struct reject *r = &rejects[_i];
  proto_params_t p;
  pto_error_t err;
  wire_t w;
  int rc = decode_params(r->method, r->params, &p, &err, &w);
  ck_assert_msg(rc == -r->code, "%s %s: rc %d (%s)", proto_method_name(r->method), r->params, rc,
                err.message);
  ck_assert_int_eq(err.code, r->code);
  if (r->message) ck_assert_str_eq(err.message, r->message);
  ck_assert_str_eq(err.key, r->key);
  wire_free(&w);
}
END_TEST

/* ---- results ------------------------------------------------------------- */

START_TEST(ping_result) {
  proto_result_t r = {.ping = {.version = "0.1.0", .device = 3, .state = "ready"}}, back;
  results_round_trip(PROTO_M_PING, &r,
                     "{\"version\": \"0.1.0\", \"device\": 3, \"state\": \"ready\", "
                     "\"features\": []}",
                     &back);
  ck_assert_str_eq(back.ping.state, "ready");
  ck_assert_uint_eq(back.ping.device, 3);
  ck_assert_uint_eq(back.ping.nfeatures, 0);

  static const char *const features[] = {"dfx", "shm"};
  r.ping.features = features;
  r.ping.nfeatures = 2;
  results_round_trip(PROTO_M_PING, &r,
                     "{\"version\": \"0.1.0\", \"device\": 3, \"state\": \"ready\", "
                     "\"features\": [\"dfx\", \"shm\"]}",
                     &back);
  ck_assert_uint_eq(back.ping.nfeatures, 2);
  ck_assert_str_eq(back.ping.features[1], "shm");
}
END_TEST

static void fill_arena(proto_arena_t *a) {
  set_sizing(&a->sizing, 16384, 256u << 20, 16384);
  a->key = UINT64_C(0x0123456789abcdef);
  a->bytes = 1u << 30;
  a->build_us = 812000;
  a->builds = 2;
  a->hits = 5;
  a->misses = 1;
  set_sizing(&a->prewarm.sizing, 16384, 256u << 20, 16384);
  a->prewarm.key = 42;
  a->prewarm.first_dispatch_hit = PROTO_UNSET;
}

#define ARENA_TEXT(hit)                                                            \
  "{\"sizing\": " DEFAULT_SIZING_TEXT                                              \
  ", \"key\": \"0123456789abcdef\", \"bytes\": 1073741824, "                       \
  "\"build_us\": 812000, \"builds\": 2, \"hits\": 5, \"misses\": 1, \"prewarm\": " \
  "{\"sizing\": " DEFAULT_SIZING_TEXT                                              \
  ", \"key\": \"000000000000002a\", \"first_dispatch_hit\": " hit "}}"

#define STATUS_ARENA_TEXT ARENA_TEXT("nil")

START_TEST(status_result) {
  proto_result_t r, back;
  proto_status_result_t *s = &r.status;
  memset(&r, 0, sizeof(r));
  s->device = 0;
  s->platform = "sim";
  s->version = "0.1.0";
  s->uptime_s = 12;
  s->state = "ready";
  s->queue.depth = 1;
  s->queue.capacity = 64;
  s->queue.running = 1;
  s->queue.by_priority[0] = 1; /* -8 */
  s->queue.by_priority[15] = 2; /* 7 */
  s->queue.cancelled = 3;
  fill_arena(&s->arena);
  s->memory.limit = 8ull << 30;
  s->memory.arena = 1u << 30;
  s->memory.buffers = 4096;
  s->memory.free = (8ull << 30) - (1u << 30) - 4096;
  s->dispatches.ok = 6;
  s->dispatches.failed = 1;
  s->dispatches.rejected = 2;
  s->clients = 3;
  s->client_memory.input = 65536;
  s->client_memory.output = 29;
  s->client_memory.limit = 2ull << 30;
  s->client_memory.per_connection.input_limit = 256u << 20;
  s->client_memory.per_connection.output_limit = 1u << 20;
  s->client_memory.per_connection.most_input = 4096;
  s->client_memory.per_connection.most_output = 29;
  results_round_trip(PROTO_M_STATUS, &r,
                     "{\"device\": 0, \"platform\": \"sim\", \"version\": \"0.1.0\", "
                     "\"uptime_s\": 12, \"state\": \"ready\", \"queue\": {\"depth\": 1, "
                     "\"capacity\": 64, \"running\": 1, "
                     "\"by_priority\": {\"-8\": 1, \"-7\": 0, \"-6\": 0, \"-5\": 0, \"-4\": 0, "
                     "\"-3\": 0, \"-2\": 0, \"-1\": 0, \"0\": 0, \"1\": 0, \"2\": 0, \"3\": 0, "
                     "\"4\": 0, \"5\": 0, \"6\": 0, \"7\": 2}, \"cancelled\": 3}, \"arena\": " STATUS_ARENA_TEXT
                     ", \"memory\": {\"limit\": 8589934592, \"arena\": 1073741824, "
                     "\"buffers\": 4096, \"free\": 7516188672}, \"dispatches\": {\"ok\": 6, "
                     "\"failed\": 1, \"rejected\": 2}, \"clients\": 3, \"client_memory\": "
                     "{\"input\": 65536, \"output\": 29, \"limit\": 2147483648, "
                     "\"per_connection\": {\"input_limit\": 268435456, \"output_limit\": "
                     "1048576, \"most_input\": 4096, \"most_output\": 29}}}",
                     &back);
  ck_assert_uint_eq(back.status.client_memory.limit, 2ull << 30);
  ck_assert_uint_eq(back.status.client_memory.per_connection.output_limit, 1u << 20);
  ck_assert_uint_eq(back.status.client_memory.per_connection.most_input, 4096);
  ck_assert_int_eq(back.status.arena.prewarm.first_dispatch_hit, PROTO_UNSET);
  ck_assert_uint_eq(back.status.arena.key, UINT64_C(0x0123456789abcdef));
  ck_assert_uint_eq(back.status.arena.sizing.value[HEAP][3], 256u << 20);
  ck_assert_uint_eq(back.status.memory.free, 7516188672u);
  ck_assert_str_eq(back.status.platform, "sim");

  s->arena.prewarm.first_dispatch_hit = 1;
  s->shm.regions_limit = 16384;
  s->shm.bytes_limit = 64ull << 30;
  s->fds.limit = 1024;
  s->fds.most_parked = 5;
  results_round_trip(PROTO_M_STATUS, &r, NULL, &back);
  ck_assert_int_eq(back.status.arena.prewarm.first_dispatch_hit, 1);
  ck_assert_uint_eq(back.status.shm.bytes_limit, 64ull << 30);
  ck_assert_uint_eq(back.status.fds.most_parked, 5);
}
END_TEST

START_TEST(prewarm_result) {
  proto_result_t r, back;
  memset(&r, 0, sizeof(r));
  fill_arena(&r.prewarm);
  r.prewarm.prewarm.first_dispatch_hit = 0;
  results_round_trip(PROTO_M_PREWARM, &r, ARENA_TEXT("false"), &back);
  ck_assert_int_eq(back.prewarm.prewarm.first_dispatch_hit, 0);
  ck_assert_uint_eq(back.prewarm.misses, 1);
}
END_TEST

START_TEST(metrics_result) {
  const char *text = "# TYPE ptod_dispatches_total counter\nptod_dispatches_total 3\n";
  proto_result_t r = {.metrics = {.text = text, .len = strlen(text)}}, back;
  results_round_trip(PROTO_M_METRICS, &r,
                     "\"# TYPE ptod_dispatches_total counter\\nptod_dispatches_total 3\\n\"",
                     &back);
  ck_assert_str_eq(back.metrics.text, text);
  ck_assert_uint_eq(back.metrics.len, strlen(text));
}
END_TEST

START_TEST(programs_result) {
  static const pto_arg_spec_t va_args[] = {{"a", "in", 0, "f32[n]"},
                                           {"b", "in", 0, "f32[n]"},
                                           {"c", "out", 0, "f32[n]"},
                                           {"n", "int", 1, "element count, default: from a"}};
  proto_program_info_t progs[] = {
      {.name = "noop", .description = "Does nothing.", .args = NULL, .nargs = 0},
      {.name = "vector_add", .description = "c = a + b", .args = va_args, .nargs = 4},
  };
  proto_result_t r = {.programs = {.programs = progs, .count = 2}}, back;
  results_round_trip(
      PROTO_M_PROGRAMS, &r,
      "[{\"name\": \"noop\", \"description\": \"Does nothing.\", \"args\": []}, {\"name\": "
      "\"vector_add\", \"description\": \"c = a + b\", \"args\": [{\"name\": \"a\", \"kind\": "
      "\"in\", \"optional\": false, \"doc\": \"f32[n]\"}, {\"name\": \"b\", \"kind\": \"in\", "
      "\"optional\": false, \"doc\": \"f32[n]\"}, {\"name\": \"c\", \"kind\": \"out\", "
      "\"optional\": false, \"doc\": \"f32[n]\"}, {\"name\": \"n\", \"kind\": \"int\", "
      "\"optional\": true, \"doc\": \"element count, default: from a\"}]}]",
      &back);
  ck_assert_uint_eq(back.programs.count, 2);
  ck_assert_str_eq(back.programs.programs[1].args[3].kind, "int");
  ck_assert_int_eq(back.programs.programs[1].args[3].optional, 1);
}
END_TEST

START_TEST(dispatch_result) {
  static const uint8_t out[5] = {1, 2, 3, 4, 5};
  proto_bytes_t outputs[3] = {{NULL, 0}, {out, 5}, {out, 0}};
  proto_result_t r, back;
  proto_dispatch_result_t *d = &r.dispatch;
  memset(&r, 0, sizeof(r));
  d->outputs = outputs;
  d->noutputs = 3;
  d->arena.hit = true;
  d->arena.build_us = 0;
  d->arena.key = 1;
  set_sizing((pto_sizing_t *)(void *)&d->sizing, 64, 1u << 20, 256);
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int ring = 0; ring < PTO_RING_COUNT; ring++)
      d->sizing.source[f][ring] = PTO_SOURCE_DEFAULT;
  d->sizing.source[HEAP][0] = PTO_SOURCE_REQUEST;
  d->sizing.source[TW][1] = PTO_SOURCE_ENV;
  d->sizing.source[DEP][3] = PTO_SOURCE_CONFIG;
  set_sizing(&d->peaks, 3, 2048, 7);
  d->timing_us.queue = 10, d->timing_us.arena = 0, d->timing_us.run = 300, d->timing_us.total = 320;
  d->tasks = 12;
  results_round_trip(
      PROTO_M_DISPATCH, &r,
      "{\"outputs\": [nil, b\"\\x01\\x02\\x03\\x04\\x05\", b\"\"], \"arena\": {\"hit\": true, "
      "\"build_us\": 0, \"key\": \"0000000000000001\"}, \"sizing\": {\"ring_task_window\": [64, "
      "64, "
      "64, 64], \"ring_heap\": [1048576, 1048576, 1048576, 1048576], \"ring_dep_pool\": [256, 256, "
      "256, 256], \"source\": {\"ring_task_window\": [\"default\", \"env\", \"default\", "
      "\"default\"], \"ring_heap\": [\"request\", \"default\", \"default\", \"default\"], "
      "\"ring_dep_pool\": [\"default\", \"default\", \"default\", \"config\"]}}, \"peaks\": "
      "{\"task_window\": [3, 3, 3, 3], \"heap\": [2048, 2048, 2048, 2048], \"dep_pool\": [7, 7, 7, "
      "7]}, \"timing_us\": {\"queue\": 10, \"arena\": 0, \"run\": 300, \"total\": 320}, \"tasks\": "
      "12}",
      &back);
  ck_assert_uint_eq(back.dispatch.noutputs, 3);
  ck_assert_ptr_null(back.dispatch.outputs[0].ptr);
  ck_assert_mem_eq(back.dispatch.outputs[1].ptr, out, 5);
  ck_assert_ptr_nonnull(back.dispatch.outputs[2].ptr);
  ck_assert_uint_eq(back.dispatch.outputs[2].len, 0);
  ck_assert_int_eq(back.dispatch.sizing.source[HEAP][0], PTO_SOURCE_REQUEST);
  ck_assert_uint_eq(back.dispatch.peaks.value[HEAP][2], 2048);
  ck_assert(back.dispatch.arena.hit);
}
END_TEST

/* A large output is copied once: the buffer is reserved up front and never
 * doubles while packing. */
START_TEST(dispatch_result_large_output_one_copy) {
  const size_t n = 16u << 20;
  uint8_t *big = malloc(n);
  proto_bytes_t outputs[2] = {{big, n}, {big, n / 2}};
  proto_result_t r;
  msgpack_sbuffer sb;
  memset(big, 0xab, n);
  memset(&r, 0, sizeof(r));
  r.dispatch.outputs = outputs;
  r.dispatch.noutputs = 2;
  msgpack_sbuffer_init(&sb);
  ck_assert_int_eq(proto_encode_response(&sb, 1, PROTO_M_DISPATCH, &r), 0);
  ck_assert_uint_gt(sb.size, n + n / 2);
  ck_assert_uint_le(sb.alloc, sb.size + 4096);
  msgpack_sbuffer_destroy(&sb);
  free(big);
}
END_TEST

START_TEST(buffer_results) {
  static const uint8_t data[3] = {7, 0, 7};
  proto_buffer_info_t list[2] = {{"kv", 1u << 20}, {"w.q", 4096}};
  proto_result_t r, back;
  r.buffer_alloc = (proto_buffer_info_t){"kv", 4096};
  results_round_trip(PROTO_M_BUFFER_ALLOC, &r, "{\"name\": \"kv\", \"bytes\": 4096}", &back);
  ck_assert_str_eq(back.buffer_alloc.name, "kv");
  r.buffer_write = (proto_byte_count_t){16};
  results_round_trip(PROTO_M_BUFFER_WRITE, &r, "{\"bytes\": 16}", &back);
  ck_assert_uint_eq(back.buffer_write.bytes, 16);
  r.buffer_free = (proto_byte_count_t){4096};
  results_round_trip(PROTO_M_BUFFER_FREE, &r, "{\"bytes\": 4096}", &back);
  r.buffer_read = (proto_bytes_t){data, 3};
  results_round_trip(PROTO_M_BUFFER_READ, &r, "b\"\\x07\\x00\\x07\"", &back);
  ck_assert_mem_eq(back.buffer_read.ptr, data, 3);
  r.buffer_list = (proto_buffer_list_t){list, 2};
  results_round_trip(
      PROTO_M_BUFFER_LIST, &r,
      "[{\"name\": \"kv\", \"bytes\": 1048576}, {\"name\": \"w.q\", \"bytes\": 4096}]", &back);
  ck_assert_str_eq(back.buffer_list.buffers[1].name, "w.q");
  r.buffer_list = (proto_buffer_list_t){NULL, 0};
  results_round_trip(PROTO_M_BUFFER_LIST, &r, "[]", &back);
  ck_assert_uint_eq(back.buffer_list.count, 0);
}
END_TEST

/* request_id (1.2): valid values, which params carry it, and its echo in a
 * map result, a dispatch result and an error map. */
START_TEST(request_id_echo) {
  static const char id65[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
  proto_params_t p;
  proto_result_t r, back;
  pto_error_t err;
  wire_t w;
  ck_assert(proto_request_id_valid("a b~/?", 6));
  ck_assert(proto_request_id_valid(id65, 64));
  ck_assert(!proto_request_id_valid(id65, 65));
  ck_assert(!proto_request_id_valid("", 0));
  ck_assert(!proto_request_id_valid("a\tb", 3));
  ck_assert(!proto_request_id_valid("caf\xc3\xa9", 5));
  ck_assert(!proto_request_id_valid("\x7f", 1));
  ck_assert_int_eq(decode_params(PROTO_M_BUFFER_READ,
                                 "[{\"name\": \"kv\", \"request_id\": \"r-1\"}]", &p, &err, &w),
                   0);
  ck_assert_str_eq(proto_params_request_id(PROTO_M_BUFFER_READ, &p), "r-1");
  ck_assert_ptr_null(proto_params_request_id(PROTO_M_SHM_UNREGISTER, &p));
  wire_free(&w);
  /* buffer.list: the id is its only key. */
  ck_assert_int_eq(decode_params(PROTO_M_BUFFER_LIST, "[{\"request_id\": \"l\"}]", &p, &err, &w),
                   0);
  ck_assert_str_eq(proto_params_request_id(PROTO_M_BUFFER_LIST, &p), "l");
  wire_free(&w);
  ck_assert_int_eq(decode_params(PROTO_M_BUFFER_LIST, "[{\"x\": 1}]", &p, &err, &w),
                   -PTO_E_INVALID_REQUEST);
  ck_assert_str_eq(err.message, "unknown key 'x' in buffer.list params; known keys: request_id, priority.");
  wire_free(&w);
  ck_assert_int_eq(decode_params(PROTO_M_PREWARM, "[]", &p, &err, &w), 0);
  ck_assert_ptr_null(proto_params_request_id(PROTO_M_PREWARM, &p));
  wire_free(&w);

  memset(&r, 0, sizeof(r));
  r.buffer_alloc = (proto_buffer_info_t){"kv", 8};
  msgpack_sbuffer_init(&w.sb);
  ck_assert_int_eq(proto_encode_response_id(&w.sb, 3, PROTO_M_BUFFER_ALLOC, &r, "r-2"), 0);
  wire_unpack(&w);
  ck_assert_str_eq(payload_text(&w), "{\"name\": \"kv\", \"bytes\": 8, \"request_id\": \"r-2\"}");
  wire_free(&w);

  memset(&r, 0, sizeof(r));
  r.dispatch.request_id = "r-3";
  msgpack_sbuffer_init(&w.sb);
  ck_assert_int_eq(proto_encode_response(&w.sb, 4, PROTO_M_DISPATCH, &r), 0);
  wire_unpack(&w);
  ck_assert_int_eq(decode(&w, PROTO_M_DISPATCH, false, &back, &err), 0);
  ck_assert_str_eq(back.dispatch.request_id, "r-3");
  wire_free(&w);

  pto_error_set(&err, PTO_E_NOT_FOUND, "gone");
  msgpack_sbuffer_init(&w.sb);
  ck_assert_int_eq(proto_encode_error_response_dfx(&w.sb, 5, &err, NULL, "r-4"), 0);
  wire_unpack(&w);
  ck_assert_str_eq(mb_print(&w.up.data.via.array.ptr[2], text_buf, sizeof(text_buf)),
                   "{\"code\": 1008, \"name\": \"NOT_FOUND\", \"message\": \"gone\", "
                   "\"request_id\": \"r-4\"}");
  wire_free(&w);
}
END_TEST

START_TEST(advise_result) {
  proto_result_t r, back;
  memset(&r, 0, sizeof(r));
  set_sizing(&r.advise.observed, 3, 2048, 9);
  set_sizing(&r.advise.recommended, 4, 2048, 9);
  r.advise.config = "[ring]\ntask_window = 4\nheap = 2K\ndep_pool = 9\n";
  {
    static const char *const warnings[] = {"Dispatches ran with 2 different ring sizings."};
    static proto_advise_program_t prog;
    prog.program = "noop";
    prog.dispatches = 7;
    set_sizing(&prog.observed, 3, 2048, 9);
    set_sizing(&prog.recommended, 4, 2048, 9);
    r.advise.programs = &prog;
    r.advise.nprograms = 1;
    r.advise.warnings = warnings;
    r.advise.nwarnings = 1;
  }
  results_round_trip(
      PROTO_M_ADVISE, &r,
      "{\"observed\": {\"task_window\": [3, 3, 3, 3], \"heap\": [2048, 2048, 2048, 2048], "
      "\"dep_pool\": [9, 9, 9, 9]}, \"recommended\": {\"ring_task_window\": [4, 4, 4, 4], "
      "\"ring_heap\": [2048, 2048, 2048, 2048], \"ring_dep_pool\": [9, 9, 9, 9]}, \"config\": "
      "\"[ring]\\ntask_window = 4\\nheap = 2K\\ndep_pool = 9\\n\", \"programs\": "
      "[{\"program\": \"noop\", \"dispatches\": 7, \"observed\": {\"task_window\": [3, 3, 3, "
      "3], \"heap\": [2048, 2048, 2048, 2048], \"dep_pool\": [9, 9, 9, 9]}, \"recommended\": "
      "{\"ring_task_window\": [4, 4, 4, 4], \"ring_heap\": [2048, 2048, 2048, 2048], "
      "\"ring_dep_pool\": [9, 9, 9, 9]}}], \"sizings\": [], \"warnings\": [\"Dispatches ran "
      "with 2 different ring sizings.\"]}",
      &back);
  ck_assert_uint_eq(back.advise.recommended.value[TW][0], 4);
  ck_assert_str_eq(back.advise.config, r.advise.config);
  ck_assert_uint_eq(back.advise.nprograms, 1);
  ck_assert_str_eq(back.advise.programs[0].program, "noop");
  ck_assert_uint_eq(back.advise.nwarnings, 1);
}
END_TEST

/* Results from a newer daemon: unknown keys are ignored; a documented key
 * missing or of the wrong type is an error naming it. */
static const struct bad_result {
  proto_method_t method;
  const char *result;
  const char *message; /* NULL: accepted */
} bad_results[] = {
    {PROTO_M_PING, "{\"version\": \"9\", \"device\": 0, \"state\": \"ready\", \"load\": [1, 2]}",
     NULL},
    {PROTO_M_PING, "{\"version\": \"9\", \"device\": 0}",
     "missing required key 'state' in ping result."},
    {PROTO_M_PING, "{\"version\": \"9\", \"device\": -1, \"state\": \"ready\"}",
     "key 'device' in ping result must be an integer in [0, 4294967295], got -1."},
    {PROTO_M_PING, "[1]", "The ping result must be a map, got an array of 1."},
    {PROTO_M_BUFFER_READ, "nil", "The buffer.read result must be a bin, got nil."},
    {PROTO_M_METRICS, "b\"x\"", "The metrics result must be a string, got a bin of 1 bytes."},
    {PROTO_M_PROGRAMS, "[{\"name\": 5, \"description\": \"\", \"args\": []}]",
     "key '[0].name' in programs result must be a string, got 5."},
    {PROTO_M_PROGRAMS,
     "[{\"name\": \"a\", \"description\": \"\", \"args\": [{\"name\": \"x\", \"kind\": \"in\", "
     "\"optional\": 1, \"doc\": \"\"}]}]",
     "key '[0].args[0].optional' in programs result must be a boolean, got 1."},
    {PROTO_M_BUFFER_LIST, "[{\"name\": \"kv\"}]",
     "missing required key '[0].bytes' in buffer.list result."},
    {PROTO_M_PREWARM,
     "{\"sizing\": " DEFAULT_SIZING_TEXT ", \"key\": \"xyz\", \"bytes\": 0, \"build_us\": 0, "
     "\"builds\": 0, \"hits\": 0, \"misses\": 0, \"prewarm\": {}}",
     "key 'key' in prewarm result must be a 16-digit lower-case hex string, got \"xyz\"."},
    {PROTO_M_PREWARM,
     "{\"sizing\": {\"ring_task_window\": [1, 2, 3], \"ring_heap\": [1, 2, 3, 4], "
     "\"ring_dep_pool\": [1, 2, 3, 4]}}",
     "key 'sizing.ring_task_window' in prewarm result must be an array of 4 integers >= 0, got an "
     "array of 3."},
    {PROTO_M_DISPATCH, "{\"outputs\": [nil, \"x\"]}",
     "key 'outputs[1]' in dispatch result must be a bin or nil, got \"x\"."},
    {PROTO_M_DISPATCH,
     "{\"outputs\": [], \"arena\": {\"hit\": true, \"build_us\": 0, \"key\": "
     "\"0000000000000001\"}, "
     "\"sizing\": {\"ring_task_window\": [4, 4, 4, 4], \"ring_heap\": [4, 4, 4, 4], "
     "\"ring_dep_pool\": [4, 4, 4, 4], \"source\": {\"ring_task_window\": [\"default\", \"env\", "
     "\"default\", \"default\"], \"ring_heap\": [\"request\", \"x\", \"default\", \"default\"]}}}",
     "key 'sizing.source.ring_heap' in dispatch result must be an array of 4 of \"request\", "
     "\"env\", \"config\", \"default\", got an array of 4."},
    {PROTO_M_STATUS,
     "{\"device\": 0, \"platform\": \"sim\", \"version\": \"1\", \"uptime_s\": 1, "
     "\"state\": \"ready\", \"queue\": {\"depth\": \"x\"}}",
     "key 'queue.depth' in status result must be an integer >= 0, got \"x\"."},
};

START_TEST(results_rejected) {
  const struct bad_result *b = &bad_results[_i];
  proto_result_t r;
  pto_error_t err;
  wire_t w;
  int rc = decode_result(b->method, b->result, &r, &err, &w);
  if (!b->message) {
    ck_assert_msg(rc == 0, "%s", err.message);
  } else {
    ck_assert_int_eq(rc, -PTO_E_INVALID_REQUEST);
    ck_assert_str_eq(err.message, b->message);
  }
  wire_free(&w);
}
END_TEST

START_TEST(unknown_method_number) {
  pto_error_t err;
  proto_result_t r;
  msgpack_sbuffer sb;
  msgpack_object nil = {.type = MSGPACK_OBJECT_NIL};
  ck_assert_int_eq(proto_params_decode(PROTO_M_COUNT, NULL, NULL, NULL, &err),
                   -PTO_E_UNKNOWN_METHOD);
  ck_assert_int_eq(proto_result_decode(PROTO_M_COUNT, &nil, NULL, &r, &err), -PTO_E_UNKNOWN_METHOD);
  msgpack_sbuffer_init(&sb);
  ck_assert_int_eq(proto_encode_request(&sb, 1, PROTO_M_COUNT, NULL), -EINVAL);
  msgpack_sbuffer_destroy(&sb);
}
END_TEST

static Suite *methods_suite(void) {
  Suite *s = suite_create("methods");
  TCase *tc = tcase_create("methods");
  tcase_add_checked_fixture(tc, NULL, release_held);
  tcase_add_test(tc, method_names);
  tcase_add_test(tc, names_valid);
  tcase_add_test(tc, no_params_methods);
  tcase_add_test(tc, dispatch_params_every_arg_form);
  tcase_add_test(tc, dispatch_params_minimal);
  tcase_add_test(tc, dispatch_params_accepted_spellings);
  tcase_add_test(tc, buffer_params);
  tcase_add_test(tc, prewarm_params);
  tcase_add_loop_test(tc, params_rejected, 0, (int)(sizeof(rejects) / sizeof(rejects[0])));
  tcase_add_test(tc, ping_result);
  tcase_add_test(tc, status_result);
  tcase_add_test(tc, prewarm_result);
  tcase_add_test(tc, metrics_result);
  tcase_add_test(tc, programs_result);
  tcase_add_test(tc, dispatch_result);
  tcase_add_test(tc, dispatch_result_large_output_one_copy);
  tcase_add_test(tc, buffer_results);
  tcase_add_test(tc, advise_result);
  tcase_add_test(tc, request_id_echo);
  tcase_add_loop_test(tc, results_rejected, 0, (int)(sizeof(bad_results) / sizeof(bad_results[0])));
  tcase_add_test(tc, unknown_method_number);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(methods_suite)
