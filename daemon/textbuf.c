/* SPDX-License-Identifier: Apache-2.0 */
/* textbuf.c — see textbuf.h. */
#include "textbuf.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

void tb_init(tb_t *t) {
  t->buf = NULL;
  t->len = t->cap = 0;
  t->max = SIZE_MAX;
  t->failed = t->too_large = false;
}

void tb_limit(tb_t *t, size_t max) { t->max = max; }

static bool tb_grow(tb_t *t, size_t need) {
  size_t cap = t->cap ? t->cap : 4096;
  char *grown;
  if (need >= t->max || t->len >= t->max - need) {
    free(t->buf);
    t->buf = NULL;
    t->failed = t->too_large = true;
    return false;
  }
  while (cap - t->len <= need) cap *= 2;
  if (cap > t->max) cap = t->max;
  grown = realloc(t->buf, cap);
  if (!grown) {
    t->failed = true;
    return false;
  }
  t->buf = grown;
  t->cap = cap;
  return true;
}

void tb_put(tb_t *t, const char *fmt, ...) {
  va_list ap;
  int n;
  if (t->failed) return;
  if (!t->buf && !tb_grow(t, 0)) return;
  for (;;) {
    va_start(ap, fmt);
    n = vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    if (n < 0) {
      t->failed = true;
      return;
    }
    if ((size_t)n < t->cap - t->len) break;
    if (!tb_grow(t, (size_t)n)) return;
  }
  t->len += (size_t)n;
}

void tb_json_str(tb_t *t, const char *s) {
  tb_put(t, "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      tb_put(t, "\\%c", *p);
    else if (*p < 0x20)
      tb_put(t, "\\u%04x", *p);
    else
      tb_put(t, "%c", *p);
  }
  tb_put(t, "\"");
}

char *tb_take(tb_t *t, size_t *ret_len) {
  char *buf = t->buf;
  if (t->failed || !buf) {
    tb_free(t);
    return NULL;
  }
  *ret_len = t->len;
  tb_init(t);
  return buf;
}

void tb_free(tb_t *t) {
  free(t->buf);
  tb_init(t);
}
