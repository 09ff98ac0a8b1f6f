/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_dfx.c — see ctl_dfx.h. */
#include "ctl_dfx.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_jsonread.h"

/* ---- saving ------------------------------------------------------------------ */

int ctl_dfx_save(const char *dir, const pto_dfx_t *dfx, char *msg, size_t len) {
  static const char *const names[3] = {"swimlane.json", "scope_stats.jsonl", "dep_graph.dot"};
  const pto_bytes_t *parts[3];
  char path[4096];
  int rc;
  if (!dfx || (!dfx->swimlane.ptr && !dfx->scope_stats.ptr && !dfx->dep_graph.ptr &&
               !dfx->refused)) {
    snprintf(msg, len, "The daemon sent no DFX artefacts (does it speak protocol 1.1?).");
    return -CTL_EXIT_PROTOCOL;
  }
  if (dfx->refused) {
    snprintf(msg, len, "No DFX artefacts: %s", dfx->refused);
    return -CTL_EXIT_DAEMON;
  }
  if (mkdir(dir, 0755) < 0 && errno != EEXIST) {
    snprintf(msg, len, "Cannot create the directory '%s': %s.", dir, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  parts[0] = &dfx->swimlane;
  parts[1] = &dfx->scope_stats;
  parts[2] = &dfx->dep_graph;
  for (int i = 0; i < 3; i++) {
    if (!parts[i]->ptr) continue;
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    rc = ctl_write_file(path, parts[i]->ptr, parts[i]->len, msg, len);
    if (rc < 0) return rc;
    fprintf(stderr, "ptoctl: wrote %s (%zu bytes)\n", path, parts[i]->len);
  }
  return 0;
}

/* ---- the ring occupancy picture ------------------------------------------------ */

enum { F_HEAP, F_WINDOW, NFIELDS };
static const char *const counter_names[NFIELDS] = {"heap bytes", "task window"};
static const char *const field_titles[NFIELDS] = {"heap bytes in use", "task-window slots in use"};
static const char *const field_keys[NFIELDS] = {"heap", "task_window"};

typedef struct series {
  double *ts, *used;
  int n, cap;
  double capacity, peak;
} series_t;

typedef struct picture {
  series_t s[4][NFIELDS];
  double t_start, t_end; /* the span drawn: from a little before the first sample */
  const char *program;
  bool failed;
  const char *error, *field;
  int ring, scope;
  double at, requested, capacity, live_heap, live_tasks;
} picture_t;

static int add_point(series_t *s, double ts, double used, double capacity) {
  if (s->n == s->cap) {
    int cap = s->cap ? s->cap * 2 : 256;
    double *t = realloc(s->ts, (size_t)cap * sizeof *t), *u;
    if (!t) return -1;
    s->ts = t;
    u = realloc(s->used, (size_t)cap * sizeof *u);
    if (!u) return -1;
    s->used = u;
    s->cap = cap;
  }
  s->ts[s->n] = ts;
  s->used[s->n++] = used;
  s->capacity = capacity;
  if (used > s->peak) s->peak = used;
  return 0;
}

static void human(double v, bool bytes, char *buf, size_t len) {
  static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  if (!bytes) {
    snprintf(buf, len, "%.0f", v);
    return;
  }
  while (v >= 1024 && u < 4) {
    v /= 1024;
    u++;
  }
  snprintf(buf, len, v == floor(v) ? "%.0f %s" : "%.1f %s", v, units[u]);
}

/* The counters ("ring R heap bytes", "ring R task window") and the error. */
static int collect(const jr_doc_t *d, picture_t *pic, char *msg, size_t len) {
  int root = 0, events = jr_get(d, root, "traceEvents"), other = jr_get(d, root, "otherData");
  if (events < 0 || d->nodes[events].type != JR_ARRAY) {
    snprintf(msg, len, "This is not a Chrome trace: it has no \"traceEvents\" array.");
    return -CTL_EXIT_USAGE;
  }
  pic->program = jr_str(d, other, "program");
  pic->t_end = jr_num(d, other, "run_us", 0);
  for (int e = d->nodes[events].first; e >= 0; e = d->nodes[e].next) {
    const char *ph = jr_str(d, e, "ph"), *name = jr_str(d, e, "name"), *cat = jr_str(d, e, "cat");
    int args = jr_get(d, e, "args");
    double ts = jr_num(d, e, "ts", 0);
    unsigned ring;
    char what[32];
    if (!ph || !name) continue;
    if (ts > pic->t_end) pic->t_end = ts;
    if (strcmp(ph, "C") == 0 && sscanf(name, "ring %u %31[a-z ]", &ring, what) == 2 && ring < 4) {
      for (int f = 0; f < NFIELDS; f++)
        if (strcmp(what, counter_names[f]) == 0 &&
            add_point(&pic->s[ring][f], ts, jr_num(d, args, "used", 0),
                      jr_num(d, args, "capacity", 0)) < 0) {
          snprintf(msg, len, "Out of memory.");
          return -CTL_EXIT_PROTOCOL;
        }
    } else if (strcmp(ph, "i") == 0 && cat && strcmp(cat, "error") == 0 && !pic->failed) {
      pic->failed = true;
      pic->error = name;
      pic->field = jr_str(d, args, "field");
      pic->ring = (int)jr_num(d, args, "ring", -1);
      pic->scope = (int)jr_num(d, args, "scope", -1);
      pic->at = ts;
      pic->requested = jr_num(d, args, "requested", 0);
      pic->capacity = jr_num(d, args, "capacity", 0);
      pic->live_heap = jr_num(d, args, "live_heap", 0);
      pic->live_tasks = jr_num(d, args, "live_tasks", 0);
    }
  }
  pic->t_start = pic->t_end;
  for (int r = 0; r < 4; r++)
    for (int fld = 0; fld < NFIELDS; fld++)
      if (pic->s[r][fld].n && pic->s[r][fld].ts[0] < pic->t_start) pic->t_start = pic->s[r][fld].ts[0];
  /* The run's set-up before the first submit is not what anyone sizes. */
  pic->t_start -= (pic->t_end - pic->t_start) * 0.05;
  if (pic->t_start < 0) pic->t_start = 0;
  for (int r = 0; r < 4; r++)
    if (pic->s[r][F_HEAP].n || pic->s[r][F_WINDOW].n) return 0;
  snprintf(msg, len,
           "The trace has no ring counters; dispatch with enable_swimlane = 2 (or more) to "
           "record them.");
  return -CTL_EXIT_USAGE;
}

#define W 960.0
#define PANEL_H 170.0
#define LEFT 90.0
#define RIGHT 30.0
#define TOP 34.0
#define BOTTOM 30.0

static void panel(FILE *f, const picture_t *pic, int r, int fld, double y0) {
  const series_t *s = &pic->s[r][fld];
  bool bytes = fld == F_HEAP, fails = false;
  double plot_w = W - LEFT - RIGHT, plot_h = PANEL_H - TOP - BOTTOM, ymax, t0, span, prev_y;
  double want = 0;
  char cap[32], peak[32], a[32], b[32];

  if (pic->failed && pic->ring == r && pic->field &&
      strcmp(pic->field, fld == F_HEAP ? "ring_heap" : "ring_task_window") == 0) {
    fails = true;
    want = (fld == F_HEAP ? pic->live_heap : pic->live_tasks) + (fld == F_HEAP ? pic->requested : 1);
  }
  ymax = s->capacity > s->peak ? s->capacity : s->peak;
  if (want > ymax) ymax = want;
  ymax = ymax > 0 ? ymax * 1.15 : 1;
  t0 = pic->t_start;
  span = pic->t_end > t0 ? pic->t_end - t0 : 1;
#define X(t) (LEFT + ((t) - t0) / span * plot_w)
#define Y(v) (y0 + TOP + plot_h - (v) / ymax * plot_h)
  human(s->capacity, bytes, cap, sizeof cap);
  human(s->peak, bytes, peak, sizeof peak);
  fprintf(f, "<g class=\"panel\" data-ring=\"%d\" data-field=\"%s\">\n", r, field_keys[fld]);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"ptitle%s\">ring %d: %s — peak %s of %s (%.0f%%)%s</text>\n",
          LEFT, y0 + 20, fails || s->peak >= s->capacity ? " full" : "", r, field_titles[fld], peak,
          cap, s->capacity > 0 ? 100.0 * s->peak / s->capacity : 0.0,
          fails ? " — RAN OUT" : s->peak >= s->capacity ? " — FULL" : "");
  fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" class=\"plot\"/>\n", LEFT,
          y0 + TOP, plot_w, plot_h);
  for (int k = 0; k <= 4; k++) { /* time axis */
    double t = t0 + span * k / 4;
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"grid\"/>\n", X(t),
            y0 + TOP, X(t), y0 + TOP + plot_h);
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"middle\">%.1f µs</text>\n",
            X(t), y0 + TOP + plot_h + 16, t);
  }
  human(0, bytes, a, sizeof a);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick\" text-anchor=\"end\">%s</text>\n",
          LEFT - 6, Y(0) + 4, a);
  /* The capacity the ring has. */
  fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"capacity\"/>\n", LEFT,
          Y(s->capacity), LEFT + plot_w, Y(s->capacity));
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"tick cap\" text-anchor=\"end\">%s</text>\n",
          LEFT - 6, Y(s->capacity) + 4, cap);
  fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"caplabel\">capacity %s</text>\n", LEFT + 6,
          Y(s->capacity) - 4, cap);
  /* What was in use: a step line, filled below. */
  fprintf(f, "<polygon class=\"area\" points=\"%.1f,%.1f", X(t0), Y(0));
  prev_y = 0;
  for (int i = 0; i < s->n; i++) {
    fprintf(f, " %.1f,%.1f %.1f,%.1f", X(s->ts[i]), Y(prev_y), X(s->ts[i]), Y(s->used[i]));
    prev_y = s->used[i];
  }
  fprintf(f, " %.1f,%.1f %.1f,%.1f\"/>\n", X(pic->t_end), Y(prev_y), X(pic->t_end), Y(0));
  fprintf(f, "<polyline class=\"series\" data-ring=\"%d\" data-field=\"%s\" points=\"%.1f,%.1f", r,
          field_keys[fld], X(t0), Y(0));
  prev_y = 0;
  for (int i = 0; i < s->n; i++) {
    fprintf(f, " %.1f,%.1f %.1f,%.1f", X(s->ts[i]), Y(prev_y), X(s->ts[i]), Y(s->used[i]));
    prev_y = s->used[i];
  }
  fprintf(f, " %.1f,%.1f\"/>\n", X(pic->t_end), Y(prev_y));
  if (fails) { /* the request that could not be served */
    double live = fld == F_HEAP ? pic->live_heap : pic->live_tasks;
    human(live, bytes, a, sizeof a);
    human(fld == F_HEAP ? pic->requested : 1, bytes, b, sizeof b);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"failat\"/>\n",
            X(pic->at), y0 + TOP, X(pic->at), y0 + TOP + plot_h);
    fprintf(f, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" class=\"request\"/>\n",
            X(pic->at), Y(live), X(pic->at), Y(want));
    fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" class=\"failed\"/>\n", X(pic->at), Y(want));
    fprintf(f, "<text x=\"%.1f\" y=\"%.1f\" class=\"failtext\" text-anchor=\"end\">%s (scope %d) at "
               "%.1f µs: %s in use + %s asked &gt; %s</text>\n",
            X(pic->at) - 8, Y(want) + 4, pic->error, pic->scope, pic->at, a, b, cap);
  }
  fprintf(f, "</g>\n");
#undef X
#undef Y
}

static int draw(const picture_t *pic, const char *out_path, char *msg, size_t len) {
  int npanels = 0;
  double y = 44;
  FILE *f;
  for (int r = 0; r < 4; r++)
    for (int fld = 0; fld < NFIELDS; fld++) npanels += pic->s[r][fld].n > 0;
  f = fopen(out_path, "w");
  if (!f) {
    snprintf(msg, len, "Cannot write '%s': %s.", out_path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
             "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
             "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\">\n",
          W, y + npanels * PANEL_H + 10, W, y + npanels * PANEL_H + 10);
  fprintf(f, "<style>\n"
             ".title{font-size:17px;font-weight:bold}.title.failed{fill:#b00020}\n"
             ".ptitle{font-size:13px;font-weight:bold;fill:#222}.ptitle.full{fill:#b00020}\n"
             ".plot{fill:#fafafa;stroke:#999}.grid{stroke:#e4e4e4}.tick{font-size:11px;fill:#555}\n"
             ".cap{fill:#b00020}.capacity{stroke:#b00020;stroke-width:1.5;stroke-dasharray:6 4}\n"
             ".caplabel{font-size:11px;fill:#b00020}\n"
             ".area{fill:#1f77b4;fill-opacity:0.18}.series{fill:none;stroke:#1f77b4;stroke-width:1.8}\n"
             ".failat{stroke:#b00020;stroke-width:1}.request{stroke:#b00020;stroke-width:4}\n"
             ".failed{fill:#b00020}.failtext{font-size:12px;font-weight:bold;fill:#b00020}\n"
             "</style>\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
  if (pic->failed)
    fprintf(f, "<text x=\"%.1f\" y=\"26\" class=\"title failed\">%s — ring occupancy: %s at %.1f "
               "µs</text>\n",
            LEFT, pic->program ? pic->program : "dispatch", pic->error, pic->at);
  else
    fprintf(f, "<text x=\"%.1f\" y=\"26\" class=\"title\">%s — ring occupancy over %.1f µs</text>\n",
            LEFT, pic->program ? pic->program : "dispatch", pic->t_end);
  for (int r = 0; r < 4; r++)
    for (int fld = 0; fld < NFIELDS; fld++) {
      if (!pic->s[r][fld].n) continue;
      panel(f, pic, r, fld, y);
      y += PANEL_H;
    }
  fprintf(f, "</svg>\n");
  if (fclose(f) != 0) {
    snprintf(msg, len, "Cannot write '%s': %s.", out_path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  return 0;
}

int ctl_dfx_ring_occupancy(const char *trace_path, const char *out_path, char *msg, size_t len) {
  picture_t pic;
  jr_doc_t doc;
  char *text = NULL, why[256];
  size_t n = 0;
  int rc;
  FILE *f = fopen(trace_path, "rb");
  if (!f) {
    snprintf(msg, len, "Cannot read '%s': %s.", trace_path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  {
    FILE *m = open_memstream(&text, &n);
    char chunk[65536];
    size_t k;
    if (!m) {
      fclose(f);
      snprintf(msg, len, "Out of memory.");
      return -CTL_EXIT_PROTOCOL;
    }
    while ((k = fread(chunk, 1, sizeof chunk, f)) > 0) fwrite(chunk, 1, k, m);
    fclose(m);
  }
  fclose(f);
  if (jr_parse(text, n, &doc, why, sizeof why) < 0) {
    snprintf(msg, len, "'%s' is not valid JSON: %s", trace_path, why);
    free(text);
    return -CTL_EXIT_USAGE;
  }
  free(text);
  memset(&pic, 0, sizeof pic);
  rc = collect(&doc, &pic, msg, len);
  if (rc == 0) rc = draw(&pic, out_path, msg, len);
  for (int r = 0; r < 4; r++)
    for (int fld = 0; fld < NFIELDS; fld++) {
      free(pic.s[r][fld].ts);
      free(pic.s[r][fld].used);
    }
  jr_free(&doc);
  return rc;
}

/* ---- the command ------------------------------------------------------------- */

int ctl_dfx_check(ctl_t *c) {
  if (c->nwords != 3 || strcmp(c->words[1], "ring-occupancy") != 0 || !c->output)
    return ctl_usage_error("Usage: dfx ring-occupancy TRACE.json -o OUT.svg");
  return 0;
}

int ctl_dfx_run(ctl_t *c) {
  char msg[4600];
  int rc = ctl_dfx_ring_occupancy(c->words[2], c->output, msg, sizeof(msg));
  if (rc < 0) return ctl_local_error(rc, msg);
  fprintf(stderr, "ptoctl: wrote %s\n", c->output);
  return 0;
}
