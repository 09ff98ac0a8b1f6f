/* SPDX-License-Identifier: Apache-2.0 */
/* textbuf.h — a growable text buffer for the daemon's text artefacts
 * (Prometheus exposition, DFX JSON and DOT).
 *
 * tb_put appends printf-formatted text; the first allocation failure
 * latches `failed` and every later call does nothing, so a writer checks
 * once at the end.  The buffer is malloc'ed: tb_take hands it to the
 * caller (who frees it), tb_free drops it.  Not thread-safe (one writer).
 */
#ifndef PTOD_TEXTBUF_H
#define PTOD_TEXTBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tb {
  char *buf;
  size_t len, cap;
  size_t max;     /* the most bytes the buffer may take (SIZE_MAX: no limit) */
  bool failed;    /* out of memory, or over max */
  bool too_large; /* failed because the text would pass max */
} tb_t;

void tb_init(tb_t *t);
/* Bound the buffer (its NUL included) at max bytes: a text that would not
 * fit latches failed and too_large, and the buffer is freed at once. */
void tb_limit(tb_t *t, size_t max);
void tb_put(tb_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A JSON string literal (quotes included) for s: ", \ and control
 * characters escaped; bytes >= 0x80 pass through (s is UTF-8). */
void tb_json_str(tb_t *t, const char *s);
/* The text (NUL-terminated) and its length; NULL when a write failed
 * (the buffer is then freed).  The caller frees the text. */
char *tb_take(tb_t *t, size_t *ret_len);
void tb_free(tb_t *t);

#endif
