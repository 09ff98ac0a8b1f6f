/* SPDX-License-Identifier: Apache-2.0 */
/* dispatch_pack.c — dispatch's response from cached and fixed bytes
 * (proto/dispatch_pack.h). */
#include "dispatch_pack.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "rpc.h"
#include "schema.h"

/* What one sizing packs to, from "key" to the end of the sizing map:
 * "key" <16 hex digits> "sizing" {values, sources}.  About 330 bytes for
 * any sizing (every value in at most 9 bytes). */
#define SIZING_BYTES_MAX 512u
/* The answer after the outputs: the sizing bytes, ~90 bytes of fixed keys
 * and 20 numbers of at most 9 bytes each. */
#define REST_MAX (SIZING_BYTES_MAX + 320u)
/* What is packed at a cursor before it goes to the packer: the envelope
 * and the outputs' nils (flushed when this runs short), then the rest. */
#define PIECE_MAX (REST_MAX + 256u)

typedef struct sizing_bytes {
  bool valid;
  uint64_t key;
  pto_sizing_resolved_t sizing;
  size_t len;
  char bytes[SIZING_BYTES_MAX];
} sizing_bytes_t;

static _Thread_local sizing_bytes_t cached;

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

/* The bytes of this result's key and sizing: the cached ones when they
 * are of the same key and sizing, else packed now by the schema rows (so
 * they are what proto_result_pack writes).  NULL if they do not fit. */
static const sizing_bytes_t *sizing_bytes(const proto_dispatch_result_t *r) {
  fixed_out_t out = {cached.bytes, 0, sizeof(cached.bytes)};
  msgpack_packer pk;
  char hex[17];
  if (cached.valid && cached.key == r->arena.key && same_sizing(&cached.sizing, &r->sizing))
    return &cached;
  cached.valid = false;
  pto_sizing_key_hex(r->arena.key, hex);
  msgpack_packer_init(&pk, &out, fixed_write);
  if (msgpack_pack_str_with_body(&pk, "key", 3) | msgpack_pack_str_with_body(&pk, hex, 16) |
      msgpack_pack_str_with_body(&pk, "sizing", 6) |
      schema_pack_map(&pk, &proto_sizing_resolved_schema, &r->sizing))
    return NULL;
  cached.key = r->arena.key;
  memcpy(&cached.sizing, &r->sizing, sizeof(cached.sizing));
  cached.len = out.len;
  cached.valid = true;
  return &cached;
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

/* A literal's bytes, without its NUL: the map keys below are literals
 * whose first byte is their msgpack fixstr header (0xa0 | length). */
#define PUT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) + sizeof(lit) - 1)

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
  *p++ = (char)(0x80 | (proto_dfx_present(&r->dfx) ? 7 : 6));
  p = PUT(p, "\xa7" "outputs");
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
static char *put_rest(char *p, const proto_dispatch_result_t *r, const sizing_bytes_t *sb) {
  p = PUT(p, "\xa5" "arena" "\x83" "\xa3" "hit");
  *p++ = r->arena.hit ? (char)0xc3 : (char)0xc2;
  p = PUT(p, "\xa8" "build_us");
  p = put_uint(p, r->arena.build_us);
  memcpy(p, sb->bytes, sb->len);
  p += sb->len;
  p = PUT(p, "\xa5" "peaks" "\x83" "\xab" "task_window");
  p = put_quad(p, r->peaks.value[PTO_FIELD_TASK_WINDOW]);
  p = PUT(p, "\xa4" "heap");
  p = put_quad(p, r->peaks.value[PTO_FIELD_HEAP]);
  p = PUT(p, "\xa8" "dep_pool");
  p = put_quad(p, r->peaks.value[PTO_FIELD_DEP_POOL]);
  p = PUT(p, "\xa9" "timing_us" "\x84" "\xa5" "queue");
  p = put_uint(p, r->timing_us.queue);
  p = PUT(p, "\xa5" "arena");
  p = put_uint(p, r->timing_us.arena);
  p = PUT(p, "\xa3" "run");
  p = put_uint(p, r->timing_us.run);
  p = PUT(p, "\xa5" "total");
  p = put_uint(p, r->timing_us.total);
  p = PUT(p, "\xa5" "tasks");
  return put_uint(p, r->tasks);
}

int proto_dispatch_response_pack(msgpack_packer *pk, uint32_t msgid,
                                 const proto_dispatch_result_t *result) {
  piece_t pc = {.pk = pk, .rc = 0};
  const sizing_bytes_t *sb = sizing_bytes(result);
  char *p;
  if (!sb) return -ENOMEM;
  p = put_outputs(&pc, msgid, result); /* leaves at least REST_MAX bytes free */
  flush(&pc, put_rest(p, result, sb));
  if (proto_dfx_present(&result->dfx))
    pc.rc |= msgpack_pack_str_with_body(pk, "dfx", 3) |
             schema_pack_map(pk, &proto_dfx_schema, &result->dfx);
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
