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
  memset(err, 0, sizeof(*err));
  err->ring = PTO_NO_RING;
}

int pto_error_set(pto_error_t *err, int code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    pto_error_clear(err);
    err->code = code;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof(err->message), fmt, ap);
    va_end(ap);
  }
  return -code;
}
