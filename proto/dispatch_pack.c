/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch_pack.c — dispatch's response from cached and fixed bytes
 * (proto/dispatch_pack.h). */
#include "dispatch_pack.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "rpc.h"
#include "schema.h"

/* The answer after the outputs: the sizing bytes, ~90 bytes of fixed keys
 * and 20 numbers of at most 9 bytes each. */
#define REST_MAX (PROTO_SIZING_BYTES_MAX + 320u)
/* What is packed at a cursor before it goes to the packer: the envelope
 * and the outputs' nils (flushed when this runs short), then the rest. */
#define PIECE_MAX (REST_MAX + 256u)

static _Thread_local proto_sizing_bytes_t cached;

/* The fixed bytes of the layout, each map key with its fixstr header
 * (0xa0 | length) and the map headers between them, in order. */
static const char k_outputs[] = "\xa7" "outputs";
static const char k_arena_hit[] = "\xa5" "arena" "\x83" "\xa3" "hit";
static const char k_build_us[] = "\xa8" "build_us";
static const char k_peaks_tw[] = "\xa5" "peaks" "\x83" "\xab" "task_window";
static const char k_heap[] = "\xa4" "heap";
static const char k_dep_pool[] = "\xa8" "dep_pool";
static const char k_timing_queue[] = "\xa9" "timing_us" "\x84" "\xa5" "queue";
static const char k_arena[] = "\xa5" "arena";
static const char k_run[] = "\xa3" "run";
static const char k_total[] = "\xa5" "total";
static const char k_tasks[] = "\xa5" "tasks";

/* A msgpack writer into a fixed array; fails (so the packer does) on
 * overflow. */
typedef struct fixed_out {
  char *bytes;
  size_t len, cap;
} fixed_out_t;

static int fixed_write(void *data, const char *buf, size_t len) {
  fixed_out_t *out = data;
  if (len > out->cap - out->len) return -1;
  memcpy(out->bytes + out->len, buf, len);
  out->len += len;
  return 0;
}

static bool same_sizing(const pto_sizing_resolved_t *a, const pto_sizing_resolved_t *b) {
  return memcmp(a->value, b->value, sizeof(a->value)) == 0 &&
         memcmp(a->source, b->source, sizeof(a->source)) == 0;
}

int proto_sizing_bytes_make(proto_sizing_bytes_t *sb, uint64_t key,
                            const pto_sizing_resolved_t *sizing) {
  fixed_out_t out = {(char *)sb->bytes, 0, sizeof(sb->bytes)};
  msgpack_packer pk;
  char hex[17];
  if (sb->valid && sb->key == key && same_sizing(&sb->sizing, sizing)) return 0;
  sb->valid = false;
  pto_sizing_key_hex(key, hex);
  msgpack_packer_init(&pk, &out, fixed_write);
  /* "key" as schema.c packs an SK_KEY row, the sizing by its rows. */
  if (msgpack_pack_str_with_body(&pk, "key", 3) | msgpack_pack_str_with_body(&pk, hex, 16) |
      msgpack_pack_str_with_body(&pk, "sizing", 6) |
      schema_pack_map(&pk, &proto_sizing_resolved_schema, sizing))
    return -ENOMEM;
  sb->key = key;
  memcpy(&sb->sizing, sizing, sizeof(sb->sizing));
  sb->len = out.len;
  sb->valid = true;
  return 0;
}

/* ---- writing at a cursor: the encodings msgpack-c's packer chooses ---- */

/* The smallest form, as msgpack_pack_uint64 writes it. */
static char *put_uint(char *p, uint64_t v) {
  if (v < 128) {
    *p++ = (char)v;
    return p;
  }
  if (v < 256) {
    *p++ = (char)0xcc;
    *p++ = (char)v;
    return p;
  }
  if (v < 65536) {
    *p++ = (char)0xcd;
    *p++ = (char)(v >> 8);
    *p++ = (char)v;
    return p;
  }
  if (v <= UINT32_MAX) {
    *p++ = (char)0xce;
    for (int s = 24; s >= 0; s -= 8) *p++ = (char)(v >> s);
    return p;
  }
  *p++ = (char)0xcf;
  for (int s = 56; s >= 0; s -= 8) *p++ = (char)(v >> s);
  return p;
}

static char *put_array_header(char *p, uint32_t n) {
  if (n < 16) {
    *p++ = (char)(0x90 | n);
  } else if (n < 65536) {
    *p++ = (char)0xdc;
    *p++ = (char)(n >> 8);
    *p++ = (char)n;
  } else {
    *p++ = (char)0xdd;
    for (int s = 24; s >= 0; s -= 8) *p++ = (char)(n >> s);
  }
  return p;
}

static char *put_quad(char *p, const uint64_t v[PTO_RING_COUNT]) {
  *p++ = (char)(0x90 | PTO_RING_COUNT);
  for (int r = 0; r < PTO_RING_COUNT; r++) p = put_uint(p, v[r]);
  return p;
}

/* One of the fixed pieces above, without its NUL. */
#define PUT(p, k) (memcpy((p), (k), sizeof(k) - 1), (p) + sizeof(k) - 1)

/* ---- the response -------------------------------------------------------- */

typedef struct piece {
  msgpack_packer *pk;
  char buf[PIECE_MAX];
  int rc;
} piece_t;

/* Hand buf[0, end) to the packer's writer. */
static void flush(piece_t *pc, const char *end) {
  if (end > pc->buf) pc->rc |= pc->pk->callback(pc->pk->data, pc->buf, (size_t)(end - pc->buf));
}

/* [1, msgid, nil, {"outputs": [...] ...: the envelope, then every output:
 * nil in place, bytes through the packer (which may keep a reference to
 * large ones instead of copying them: proto/refbuf.h).  Returns where the
 * next bytes go in pc->buf. */
static char *put_outputs(piece_t *pc, uint32_t msgid, const proto_dispatch_result_t *r) {
  char *p = pc->buf;
  *p++ = (char)0x94;
  *p++ = (char)PROTO_MSG_RESPONSE;
  p = put_uint(p, msgid);
  *p++ = (char)0xc0;
  *p++ = (char)(0x80 | (6 + proto_dfx_present(&r->dfx) + (r->request_id != NULL)));
  p = PUT(p, k_outputs);
  p = put_array_header(p, r->noutputs);
  for (uint32_t i = 0; i < r->noutputs; i++) {
    const proto_bytes_t *o = &r->outputs[i];
    if (!o->ptr) {
      *p++ = (char)0xc0;
      if (p - pc->buf >= (ptrdiff_t)(PIECE_MAX - REST_MAX)) {
        flush(pc, p);
        p = pc->buf;
      }
      continue;
    }
    flush(pc, p);
    p = pc->buf;
    pc->rc |= msgpack_pack_bin(pc->pk, o->len) | msgpack_pack_bin_body(pc->pk, o->ptr, o->len);
  }
  return p;
}

/* "arena" ... "tasks": everything after the outputs but the dfx map. */
static char *put_rest(char *p, const proto_dispatch_result_t *r, const proto_sizing_bytes_t *sb) {
  p = PUT(p, k_arena_hit);
  *p++ = r->arena.hit ? (char)0xc3 : (char)0xc2;
  p = PUT(p, k_build_us);
  p = put_uint(p, r->arena.build_us);
  memcpy(p, sb->bytes, sb->len);
  p += sb->len;
  p = PUT(p, k_peaks_tw);
  p = put_quad(p, r->peaks.value[PTO_FIELD_TASK_WINDOW]);
  p = PUT(p, k_heap);
  p = put_quad(p, r->peaks.value[PTO_FIELD_HEAP]);
  p = PUT(p, k_dep_pool);
  p = put_quad(p, r->peaks.value[PTO_FIELD_DEP_POOL]);
  p = PUT(p, k_timing_queue);
  p = put_uint(p, r->timing_us.queue);
  p = PUT(p, k_arena);
  p = put_uint(p, r->timing_us.arena);
  p = PUT(p, k_run);
  p = put_uint(p, r->timing_us.run);
  p = PUT(p, k_total);
  p = put_uint(p, r->timing_us.total);
  p = PUT(p, k_tasks);
  return put_uint(p, r->tasks);
}

int proto_dispatch_response_pack(msgpack_packer *pk, uint32_t msgid,
                                 const proto_dispatch_result_t *result) {
  piece_t pc; /* not an initialiser: that would zero buf, which is written before it is read */
  char *p;
  pc.pk = pk;
  pc.rc = 0;
  if (proto_sizing_bytes_make(&cached, result->arena.key, &result->sizing) < 0) return -ENOMEM;
  p = put_outputs(&pc, msgid, result); /* leaves at least REST_MAX bytes free */
  flush(&pc, put_rest(p, result, &cached));
  if (proto_dfx_present(&result->dfx))
    pc.rc |= msgpack_pack_str_with_body(pk, "dfx", 3) |
             schema_pack_map(pk, &proto_dfx_schema, &result->dfx);
  if (result->request_id) /* as its SK_STR row packs it (methods.c) */
    pc.rc |= msgpack_pack_str_with_body(pk, "request_id", 10) |
             msgpack_pack_str_with_body(pk, result->request_id, strlen(result->request_id));
  return pc.rc ? -ENOMEM : 0;
}

size_t proto_dispatch_result_payload(const proto_dispatch_result_t *result) {
  const pto_dfx_t *dfx = &result->dfx;
  size_t total = (dfx->swimlane.ptr ? dfx->swimlane.len : 0) +
                 (dfx->scope_stats.ptr ? dfx->scope_stats.len : 0) +
                 (dfx->dep_graph.ptr ? dfx->dep_graph.len : 0);
  for (uint32_t i = 0; i < result->noutputs; i++)
    if (result->outputs[i].ptr) total += result->outputs[i].len;
  return total;
}

/* ---- reading the layout back ------------------------------------------- */

typedef struct cursor {
  const uint8_t *p, *end;
  bool ok; /* false once anything differed or ran out */
} cursor_t;

static void take_fixed(cursor_t *c, const void *bytes, size_t n) {
  if (c->ok && (size_t)(c->end - c->p) >= n && memcmp(c->p, bytes, n) == 0)
    c->p += n;
  else
    c->ok = false;
}
#define TAKE(c, k) take_fixed((c), (k), sizeof(k) - 1)

/* The n-byte big-endian number after a header byte, when all there. */
static uint64_t take_be(cursor_t *c, int n) {
  uint64_t v = 0;
  if (!c->ok || c->end - c->p < 1 + n) {
    c->ok = false;
    return 0;
  }
  for (int i = 1; i <= n; i++) v = (v << 8) | c->p[i];
  c->p += 1 + n;
  return v;
}

/* An unsigned integer in any of msgpack's forms for one, at most max (as
 * the table's range for it). */
static uint64_t take_uint(cursor_t *c, uint64_t max) {
  uint64_t v = 0;
  if (c->ok && c->p < c->end && *c->p <= 0x7f)
    v = *c->p++;
  else if (c->ok && c->p < c->end && *c->p >= 0xcc && *c->p <= 0xcf)
    v = take_be(c, 1 << (*c->p - 0xcc));
  else
    c->ok = false;
  if (v > max) c->ok = false;
  return c->ok ? v : 0;
}

static void take_quad(cursor_t *c, uint64_t v[PTO_RING_COUNT]) {
  static const char quad[] = {(char)(0x90 | PTO_RING_COUNT), 0};
  TAKE(c, quad);
  for (int r = 0; r < PTO_RING_COUNT; r++) v[r] = take_uint(c, UINT64_MAX);
}

static bool take_bool(cursor_t *c) {
  if (!c->ok || c->p >= c->end || (*c->p != 0xc2 && *c->p != 0xc3)) {
    c->ok = false;
    return false;
  }
  return *c->p++ == 0xc3;
}

/* The count of an array header. */
static uint32_t take_array(cursor_t *c) {
  if (c->ok && c->p < c->end && (*c->p & 0xf0) == 0x90) return *c->p++ & 0x0f;
  if (c->ok && c->p < c->end && (*c->p == 0xdc || *c->p == 0xdd))
    return (uint32_t)take_be(c, *c->p == 0xdc ? 2 : 4);
  c->ok = false;
  return 0;
}

/* One output: nil, or a bin in any of its three forms, all there. */
static proto_bytes_t take_output(cursor_t *c) {
  proto_bytes_t o = {NULL, 0};
  uint64_t n;
  if (c->ok && c->p < c->end && *c->p == 0xc0) {
    c->p++;
    return o;
  }
  if (!c->ok || c->p >= c->end || *c->p < 0xc4 || *c->p > 0xc6) {
    c->ok = false;
    return o;
  }
  n = take_be(c, 1 << (*c->p - 0xc4));
  if (!c->ok || (uint64_t)(c->end - c->p) < n) {
    c->ok = false;
    return o;
  }
  o.ptr = c->p;
  o.len = (size_t)n;
  c->p += n;
  return o;
}

size_t proto_dispatch_response_match(const uint8_t *b, size_t len, const proto_sizing_bytes_t *sb,
                                     uint32_t *ret_msgid, proto_dispatch_result_t *ret,
                                     proto_bytes_t *outputs, uint32_t max_outputs) {
  static const char envelope[] = {(char)0x94, (char)PROTO_MSG_RESPONSE, 0};
  static const char result_map[] = {(char)0xc0, (char)0x86, 0}; /* no error; six keys, no dfx */
  cursor_t c = {b, b + len, sb->valid};
  proto_dispatch_result_t r;
  uint32_t msgid;
  memset(&r, 0, sizeof(r));
  TAKE(&c, envelope);
  msgid = (uint32_t)take_uint(&c, UINT32_MAX);
  TAKE(&c, result_map);
  TAKE(&c, k_outputs);
  r.noutputs = take_array(&c);
  if (r.noutputs > max_outputs) return 0;
  for (uint32_t i = 0; i < r.noutputs && c.ok; i++) outputs[i] = take_output(&c);
  r.outputs = outputs;
  TAKE(&c, k_arena_hit);
  r.arena.hit = take_bool(&c);
  TAKE(&c, k_build_us);
  r.arena.build_us = take_uint(&c, INT64_MAX);
  take_fixed(&c, sb->bytes, sb->len);
  TAKE(&c, k_peaks_tw);
  take_quad(&c, r.peaks.value[PTO_FIELD_TASK_WINDOW]);
  TAKE(&c, k_heap);
  take_quad(&c, r.peaks.value[PTO_FIELD_HEAP]);
  TAKE(&c, k_dep_pool);
  take_quad(&c, r.peaks.value[PTO_FIELD_DEP_POOL]);
  TAKE(&c, k_timing_queue);
  r.timing_us.queue = take_uint(&c, INT64_MAX);
  TAKE(&c, k_arena);
  r.timing_us.arena = take_uint(&c, INT64_MAX);
  TAKE(&c, k_run);
  r.timing_us.run = take_uint(&c, INT64_MAX);
  TAKE(&c, k_total);
  r.timing_us.total = take_uint(&c, INT64_MAX);
  TAKE(&c, k_tasks);
  r.tasks = take_uint(&c, INT64_MAX);
  if (!c.ok) return 0;
  r.arena.key = sb->key;
  r.sizing = sb->sizing;
  *ret_msgid = msgid;
  *ret = r;
  return (size_t)(c.p - b);
}
