/* SPDX-License-Identifier: Apache-2.0 */
/* The error table of include/pto/errors.h. */
#include <pto/errors.h>

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static const struct {
  int code;
  const char *name;
  const char *message;
} error_table[] = {
#define PTO_ERROR_ROW_(name, code, msg) {(code), #name, (msg)},
    PTO_ERROR_MAP(PTO_ERROR_ROW_)
#undef PTO_ERROR_ROW_
};

#define ERROR_COUNT (sizeof(error_table) / sizeof(error_table[0]))

const char *pto_error_name(int code) {
  for (size_t i = 0; i < ERROR_COUNT; i++)
    if (error_table[i].code == code) return error_table[i].name;
  return NULL;
}

const char *pto_error_default_message(int code) {
  for (size_t i = 0; i < ERROR_COUNT; i++)
    if (error_table[i].code == code) return error_table[i].message;
  return NULL;
}

int pto_error_from_name(const char *name) {
  if (!name) return -1;
  for (size_t i = 0; i < ERROR_COUNT; i++)
    if (strcmp(error_table[i].name, name) == 0) return error_table[i].code;
  return -1;
}

void pto_error_clear(pto_error_t *err) {
  if (!err) return;
  /* Only what a reader looks at: the text fields end at their first byte,
   * so the ~850 bytes after it are never read (two clears per dispatch). */
  err->code = PTO_OK;
  err->ring = PTO_NO_RING;
  err->requested = err->capacity = 0;
  err->key[0] = err->message[0] = err->hint[0] = '\0';
}

int pto_error_set(pto_error_t *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    pto_error_clear(err);
    err->code = code;
    int n;
    va_start(ap, fmt);
    n = vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof(err->message)) pto_utf8_cut(err->message, sizeof(err->message) - 1);
  }
  return -code;
}

size_t pto_utf8_cut(char *text, size_t len) {
  size_t start = len, need;
  unsigned char lead;
  /* Back to the first byte of the last character, then keep it only if
   * all of it is there. */
  while (start > 0 && ((unsigned char)text[start - 1] & 0xc0) == 0x80 && len - start < 3) start--;
  if (start == 0) {
    text[len] = '\0';
    return len;
  }
  lead = (unsigned char)text[start - 1];
  need = lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 1;
  if (len - (start - 1) < need) len = start - 1;
  text[len] = '\0';
  return len;
}
