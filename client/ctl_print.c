/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl's human-readable output (ctl_print.h). */
#include "ctl_print.h"

#include <inttypes.h>
#include <string.h>

static const char *const field_names[PTO_FIELD_COUNT] = {"task_window", "heap", "dep_pool"};

/* A ring value: heap as a size, the others as counts. */
static void value_text(int field, uint64_t v, char *buf, size_t len) {
  if (field == PTO_FIELD_HEAP)
    pto_size_format(v, buf, len);
  else
    snprintf(buf, len, "%" PRIu64, v);
}

void ctl_print_sizing(FILE *f, const pto_sizing_t *s) {
  for (int field = 0; field < PTO_FIELD_COUNT; field++) {
    fprintf(f, "%s%s [", field ? "  " : "", field_names[field]);
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      char v[32];
      value_text(field, s->value[field][r], v, sizeof(v));
      fprintf(f, "%s%s", r ? ", " : "", v);
    }
    fputc(']', f);
  }
  fputc('\n', f);
}

static void print_resolved(FILE *f, const pto_sizing_resolved_t *s) {
  fprintf(f, "  %-6s %-24s %-24s %-24s\n", "ring", "task_window", "heap", "dep_pool");
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    fprintf(f, "  %-6d", r);
    for (int field = 0; field < PTO_FIELD_COUNT; field++) {
      char v[32], cell[64];
      value_text(field, s->value[field][r], v, sizeof(v));
      snprintf(cell, sizeof(cell), "%s (%s)", v,
               pto_sizing_source_name((pto_sizing_source_t)s->source[field][r]));
      fprintf(f, " %-24s", cell);
    }
    fputc('\n', f);
  }
}

void ctl_print_ping(FILE *f, const pto_ping_t *p, double ms) {
  fprintf(f, "device %" PRIu32 ": %s (ptod %s), answered in %.3f ms\n", p->device, p->state,
          p->version, ms);
}

static void print_arena_body(FILE *f, const pto_arena_info_t *a) {
  char bytes[32], key[17], pkey[17];
  pto_size_format(a->bytes, bytes, sizeof(bytes));
  pto_sizing_key_hex(a->key, key);
  pto_sizing_key_hex(a->prewarm.key, pkey);
  fprintf(f,
          "arena      key %s, %s, %" PRIu64 " build%s (%" PRIu64 " us last); %" PRIu64
          " hit%s, %" PRIu64 " miss%s\n",
          key, bytes, a->builds, a->builds == 1 ? "" : "s", a->build_us, a->hits,
          a->hits == 1 ? "" : "s", a->misses, a->misses == 1 ? "" : "es");
  fprintf(f, "  sizing   ");
  ctl_print_sizing(f, &a->sizing);
  fprintf(f, "prewarm    key %s, first dispatch %s\n", pkey,
          a->prewarm.first_dispatch_hit < 0   ? "not yet"
          : a->prewarm.first_dispatch_hit > 0 ? "hit it"
                                              : "missed it");
  fprintf(f, "  sizing   ");
  ctl_print_sizing(f, &a->prewarm.sizing);
}

void ctl_print_status(FILE *f, const pto_status_t *s) {
  char limit[32], arena[32], buffers[32], avail[32];
  pto_size_format(s->memory.limit, limit, sizeof(limit));
  pto_size_format(s->memory.arena, arena, sizeof(arena));
  pto_size_format(s->memory.buffers, buffers, sizeof(buffers));
  pto_size_format(s->memory.free, avail, sizeof(avail));
  fprintf(f, "device     %" PRIu32 " (%s), ptod %s, %s, up %" PRIu64 " s, %" PRIu64 " client%s\n",
          s->device, s->platform, s->version, s->state, s->uptime_s, s->clients,
          s->clients == 1 ? "" : "s");
  fprintf(f, "queue      %" PRIu64 " waiting of %" PRIu64 ", %" PRIu64 " running\n", s->queue.depth,
          s->queue.capacity, s->queue.running);
  fprintf(f, "memory     limit %s: arena %s, buffers %s, free %s\n", limit, arena, buffers, avail);
  fprintf(f, "dispatches %" PRIu64 " ok, %" PRIu64 " failed, %" PRIu64 " rejected\n",
          s->dispatches.ok, s->dispatches.failed, s->dispatches.rejected);
  print_arena_body(f, &s->arena);
}

void ctl_print_arena(FILE *f, const pto_arena_info_t *a) {
  print_arena_body(f, a);
}

void ctl_print_programs(FILE *f, const pto_programs_t *p) {
  for (uint32_t i = 0; i < p->count; i++) {
    const pto_program_info_t *pi = &p->programs[i];
    fprintf(f, "%s%s\n  %s\n", i ? "\n" : "", pi->name, pi->description);
    for (uint32_t a = 0; a < pi->nargs; a++)
      fprintf(f, "    %-3u %-10s %-7s %s%s\n", a, pi->args[a].name, pi->args[a].kind,
              pi->args[a].optional ? "(optional) " : "", pi->args[a].doc);
  }
}

/* The first bytes as float32 and hex. */
static void summarise(FILE *f, const uint8_t *p, size_t len) {
  size_t nf = len % 4 == 0 ? len / 4 : 0;
  if (nf) {
    fprintf(f, "f32 [");
    for (size_t i = 0; i < nf && i < 8; i++) {
      float v;
      memcpy(&v, p + 4 * i, 4);
      fprintf(f, "%s%g", i ? ", " : "", (double)v);
    }
    fprintf(f, "%s]  ", nf > 8 ? ", ..." : "");
  }
  fprintf(f, "hex ");
  for (size_t i = 0; i < len && i < 16; i++) fprintf(f, "%02x", p[i]);
  if (len > 16) fprintf(f, "...");
  if (len == 0) fprintf(f, "(empty)");
}

void ctl_print_dispatch(FILE *f, const pto_dispatch_result_t *r, char *const *files) {
  char key[17];
  pto_sizing_key_hex(r->arena.key, key);
  fprintf(f, "tasks      %" PRIu64 "\n", r->tasks);
  fprintf(f,
          "timing     queue %" PRIu64 " us, arena %" PRIu64 " us, run %" PRIu64
          " us, total %" PRIu64 " us\n",
          r->timing_us.queue, r->timing_us.arena, r->timing_us.run, r->timing_us.total);
  if (r->arena.hit)
    fprintf(f, "arena      hit (key %s)\n", key);
  else
    fprintf(f, "arena      miss: built in %" PRIu64 " us (key %s)\n", r->arena.build_us, key);
  fprintf(f, "sizing\n");
  print_resolved(f, &r->sizing);
  fprintf(f, "peaks      ");
  ctl_print_sizing(f, &r->peaks);
  for (uint32_t i = 0; i < r->noutputs; i++) {
    const pto_bytes_t *o = &r->outputs[i];
    if (!o->ptr) continue;
    fprintf(f, "output %-3u %zu bytes", i, o->len);
    if (files && files[i]) {
      fprintf(f, " -> %s\n", files[i]);
    } else {
      fprintf(f, ": ");
      summarise(f, o->ptr, o->len);
      fputc('\n', f);
    }
  }
}

void ctl_print_advise(FILE *f, const pto_advise_t *a) {
  fprintf(f, "observed     ");
  ctl_print_sizing(f, &a->observed);
  fprintf(f, "recommended  ");
  ctl_print_sizing(f, &a->recommended);
  for (uint32_t i = 0; i < a->nprograms; i++) {
    fprintf(f, "\n%s (%" PRIu64 " dispatches)\n  observed     ", a->programs[i].program,
            a->programs[i].dispatches);
    ctl_print_sizing(f, &a->programs[i].observed);
    fprintf(f, "  recommended  ");
    ctl_print_sizing(f, &a->programs[i].recommended);
  }
  fprintf(f, "\nconfig lines:\n%s", a->config);
  if (a->config[0] && a->config[strlen(a->config) - 1] != '\n') fputc('\n', f);
  for (uint32_t i = 0; i < a->nwarnings; i++) fprintf(f, "\nwarning: %s\n", a->warnings[i]);
}

void ctl_print_buffer_list(FILE *f, const pto_buffer_list_t *l) {
  if (l->count == 0) {
    fprintf(f, "no buffers\n");
    return;
  }
  fprintf(f, "%-32s %16s\n", "NAME", "BYTES");
  for (uint32_t i = 0; i < l->count; i++)
    fprintf(f, "%-32s %16" PRIu64 "\n", l->buffers[i].name, l->buffers[i].bytes);
}

void ctl_print_hexdump(FILE *f, const uint8_t *p, size_t len, size_t max) {
  size_t n = len < max ? len : max;
  for (size_t off = 0; off < n; off += 16) {
    fprintf(f, "%08zx ", off);
    for (size_t i = off; i < off + 16; i++) {
      if (i < n)
        fprintf(f, " %02x", p[i]);
      else
        fprintf(f, "   ");
    }
    fprintf(f, "  |");
    for (size_t i = off; i < off + 16 && i < n; i++)
      fputc(p[i] >= 0x20 && p[i] < 0x7f ? p[i] : '.', f);
    fprintf(f, "|\n");
  }
  if (len > n) fprintf(f, "... %zu more bytes (use -o FILE to save them all)\n", len - n);
}

void ctl_json_error(json_t *j, const pto_error_t *err) {
  json_begin_object(j);
  json_key(j, "code");
  json_int(j, err->code);
  json_key(j, "name");
  json_cstr(j, pto_client_error_name(err->code));
  json_key(j, "message");
  json_cstr(j, err->message);
  if (err->ring >= 0) {
    json_key(j, "ring");
    json_int(j, err->ring);
  }
  if (err->ring >= 0 || err->requested || err->capacity) {
    json_key(j, "requested");
    json_uint(j, err->requested);
    json_key(j, "capacity");
    json_uint(j, err->capacity);
  }
  if (err->hint[0]) {
    json_key(j, "hint");
    json_cstr(j, err->hint);
  }
  if (err->key[0]) {
    json_key(j, "key");
    json_cstr(j, err->key);
  }
  json_end_object(j);
}

void ctl_json_sizing(json_t *j, const pto_sizing_resolved_t *s) {
  json_begin_object(j);
  for (int field = 0; field < PTO_FIELD_COUNT; field++) {
    json_key(j, pto_sizing_field_key((pto_ring_field_t)field));
    json_begin_array(j);
    for (int r = 0; r < PTO_RING_COUNT; r++) json_uint(j, s->value[field][r]);
    json_end_array(j);
  }
  json_key(j, "source");
  json_begin_object(j);
  for (int field = 0; field < PTO_FIELD_COUNT; field++) {
    json_key(j, pto_sizing_field_key((pto_ring_field_t)field));
    json_begin_array(j);
    for (int r = 0; r < PTO_RING_COUNT; r++)
      json_cstr(j, pto_sizing_source_name((pto_sizing_source_t)s->source[field][r]));
    json_end_array(j);
  }
  json_end_object(j);
  json_end_object(j);
}
