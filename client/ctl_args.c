/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl's parsing of command-line values (ctl_args.h). */
#include "ctl_args.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int fail(int code, char *msg, size_t msglen, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static int fail(int code, char *msg, size_t msglen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, msglen, fmt, ap);
  va_end(ap);
  return -code;
}

int ctl_exit_for(int code) {
  if (code < 0) code = -code;
  switch (code) {
    case 0: return CTL_EXIT_OK;
    case PTO_E_CONNECT_FAILED:
    case PTO_E_CONNECTION_LOST: return CTL_EXIT_CONNECT;
    case PTO_E_TIMEOUT: return CTL_EXIT_TIMEOUT;
    case PTO_E_INVALID_ARGUMENT: return CTL_EXIT_USAGE;
    case PTO_E_PROTOCOL_ERROR:
    case PTO_E_NO_MEMORY: return CTL_EXIT_PROTOCOL;
    default: return CTL_EXIT_DAEMON;
  }
}

static int read_file(const char *path, ctl_data_t *ret, char *msg, size_t msglen) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  uint8_t *buf = NULL;
  size_t len = 0, cap = 0;
  if (fd < 0)
    return fail(CTL_EXIT_FILE, msg, msglen, "Cannot read '%s': %s.", path, strerror(errno));
  for (;;) {
    ssize_t n;
    if (cap - len < 65536) {
      size_t ncap = cap ? cap * 2 : 65536;
      uint8_t *nb = realloc(buf, ncap);
      if (!nb) {
        free(buf);
        close(fd);
        return fail(CTL_EXIT_FILE, msg, msglen, "Out of memory reading '%s'.", path);
      }
      buf = nb;
      cap = ncap;
    }
    n = read(fd, buf + len, cap - len);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      free(buf);
      close(fd);
      return fail(CTL_EXIT_FILE, msg, msglen, "Cannot read '%s': %s.", path, strerror(e));
    }
    if (n == 0) break;
    len += (size_t)n;
  }
  close(fd);
  ret->ptr = buf;
  ret->len = len;
  return 0;
}

int ctl_write_file(const char *path, const void *data, size_t len, char *msg, size_t msglen) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const uint8_t *p = data;
  size_t off = 0;
  if (fd < 0)
    return fail(CTL_EXIT_FILE, msg, msglen, "Cannot write '%s': %s.", path, strerror(errno));
  while (off < len) {
    ssize_t n = write(fd, p + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int e = errno;
      close(fd);
      return fail(CTL_EXIT_FILE, msg, msglen, "Cannot write '%s': %s.", path, strerror(e));
    }
    off += (size_t)n;
  }
  if (close(fd) < 0)
    return fail(CTL_EXIT_FILE, msg, msglen, "Cannot write '%s': %s.", path, strerror(errno));
  return 0;
}

/* Comma-separated numbers into 4-byte little-endian values. */
static int parse_list(const char *form, const char *list, bool is_float, ctl_data_t *ret, char *msg,
                      size_t msglen) {
  size_t count = 1, i = 0;
  const char *p = list;
  uint8_t *buf;
  for (const char *c = list; *c; c++) count += *c == ',';
  if (!*list)
    return fail(CTL_EXIT_USAGE, msg, msglen, "'%s:' needs a comma-separated list of numbers.",
                form);
  buf = malloc(count * 4);
  if (!buf) return fail(CTL_EXIT_USAGE, msg, msglen, "Out of memory.");
  for (;;) {
    char *end = NULL;
    uint32_t bits;
    errno = 0;
    if (is_float) {
      float f = strtof(p, &end);
      memcpy(&bits, &f, 4);
    } else {
      long long v = strtoll(p, &end, 10);
      if (v < INT32_MIN || v > INT32_MAX) errno = ERANGE;
      bits = (uint32_t)(int32_t)v;
    }
    if (end == p || errno == ERANGE || (*end != ',' && *end != '\0')) {
      int n = (int)strcspn(p, ",");
      free(buf);
      return fail(CTL_EXIT_USAGE, msg, msglen, "'%.*s' in '%s:%s' is not %s.", n, p, form, list,
                  is_float ? "a float" : "a 32-bit integer");
    }
    /* Little-endian on the wire, whatever the host. */
    buf[4 * i] = (uint8_t)bits;
    buf[4 * i + 1] = (uint8_t)(bits >> 8);
    buf[4 * i + 2] = (uint8_t)(bits >> 16);
    buf[4 * i + 3] = (uint8_t)(bits >> 24);
    i++;
    if (*end == '\0') break;
    p = end + 1;
  }
  ret->ptr = buf;
  ret->len = count * 4;
  return 0;
}

static int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static int parse_hex(const char *hex, ctl_data_t *ret, char *msg, size_t msglen) {
  size_t n = strlen(hex);
  uint8_t *buf;
  if (n % 2) return fail(CTL_EXIT_USAGE, msg, msglen, "'hex:%s' has an odd number of digits.", hex);
  buf = malloc(n / 2 ? n / 2 : 1);
  if (!buf) return fail(CTL_EXIT_USAGE, msg, msglen, "Out of memory.");
  for (size_t i = 0; i < n; i += 2) {
    int hi = hex_digit(hex[i]), lo = hex_digit(hex[i + 1]);
    if (hi < 0 || lo < 0) {
      free(buf);
      return fail(CTL_EXIT_USAGE, msg, msglen, "'hex:%s' has a character that is not a hex digit.",
                  hex);
    }
    buf[i / 2] = (uint8_t)(hi << 4 | lo);
  }
  ret->ptr = buf;
  ret->len = n / 2;
  return 0;
}

int ctl_parse_data(const char *text, ctl_data_t *ret, char *msg, size_t msglen) {
  ret->ptr = NULL;
  ret->len = 0;
  if (text[0] == '@') {
    if (!text[1]) return fail(CTL_EXIT_USAGE, msg, msglen, "'@' needs a file name after it.");
    return read_file(text + 1, ret, msg, msglen);
  }
  if (strncmp(text, "f32:", 4) == 0) return parse_list("f32", text + 4, true, ret, msg, msglen);
  if (strncmp(text, "i32:", 4) == 0) return parse_list("i32", text + 4, false, ret, msg, msglen);
  if (strncmp(text, "hex:", 4) == 0) return parse_hex(text + 4, ret, msg, msglen);
  return 1;
}

int ctl_parse_size(const char *what, const char *text, uint64_t *ret, char *msg, size_t msglen) {
  int rc = pto_size_parse(text, strlen(text), ret);
  if (rc == 0) return 0;
  return fail(CTL_EXIT_USAGE, msg, msglen,
              "%s '%s' is not a size: use digits with an optional K, M or G suffix (upper "
              "case), e.g. 4096 or 64M%s.",
              what, text, rc == -ERANGE ? "; it is also too large" : "");
}

static bool parse_int(const char *s, int64_t *ret) {
  char *end = NULL;
  long long v;
  if (!*s) return false;
  errno = 0;
  v = strtoll(s, &end, 10);
  if (errno == ERANGE || *end != '\0') return false;
  *ret = v;
  return true;
}

static bool parse_float(const char *s, double *ret) {
  char *end = NULL;
  double v;
  if (!*s) return false;
  errno = 0;
  v = strtod(s, &end);
  if (errno == ERANGE || *end != '\0') return false;
  *ret = v;
  return true;
}

/* buf:NAME or buf:NAME:OFFSET:BYTES (w starts with "buf:") into a[0]; a
 * slice's name is its own copy, in d. */
static int parse_buffer_arg(const char *w, pto_dispatch_arg_t *a, ctl_data_t *d, char *msg,
                            size_t msglen) {
  const char *name = w + 4, *c1 = strchr(name, ':'), *c2;
  char off[64];
  uint64_t o, n;
  int rc;
  if (!c1) {
    if (!*name) return fail(CTL_EXIT_USAGE, msg, msglen, "'buf:' needs a buffer name.");
    *a = pto_arg_buffer(name);
    return 0;
  }
  c2 = strchr(c1 + 1, ':');
  if (!c2 || c1 == name || (size_t)(c2 - c1 - 1) >= sizeof(off))
    return fail(CTL_EXIT_USAGE, msg, msglen, "'%s' must be buf:NAME or buf:NAME:OFFSET:BYTES.", w);
  snprintf(off, sizeof(off), "%.*s", (int)(c2 - c1 - 1), c1 + 1);
  rc = ctl_parse_size("The offset", off, &o, msg, msglen);
  if (rc == 0) rc = ctl_parse_size("The byte count", c2 + 1, &n, msg, msglen);
  if (rc < 0) return rc;
  if (n == 0)
    return fail(CTL_EXIT_USAGE, msg, msglen, "The slice '%s' must have at least one byte.", w);
  /* The name is the word up to the first ':'; keep it NUL-terminated. */
  d->ptr = (uint8_t *)strndup(name, (size_t)(c1 - name));
  if (!d->ptr) return fail(CTL_EXIT_USAGE, msg, msglen, "Out of memory.");
  *a = pto_arg_slice((const char *)d->ptr, o, n);
  return 0;
}

/* One argument word into a[0] (and its owned bytes into d). */
static int parse_arg(const char *w, pto_dispatch_arg_t *a, ctl_data_t *d, char *msg,
                     size_t msglen) {
  int64_t i;
  double f;
  int rc;
  if (strncmp(w, "buf:", 4) == 0) return parse_buffer_arg(w, a, d, msg, msglen);
  if (strncmp(w, "out:", 4) == 0) {
    uint64_t n;
    rc = ctl_parse_size("The output size", w + 4, &n, msg, msglen);
    if (rc < 0) return rc;
    *a = pto_arg_output(n);
    return 0;
  }
  if (strncmp(w, "int:", 4) == 0) {
    if (!parse_int(w + 4, &i))
      return fail(CTL_EXIT_USAGE, msg, msglen, "'%s' is not a 64-bit integer.", w + 4);
    *a = pto_arg_int(i);
    return 0;
  }
  if (strncmp(w, "float:", 6) == 0) {
    if (!parse_float(w + 6, &f))
      return fail(CTL_EXIT_USAGE, msg, msglen, "'%s' is not a number.", w + 6);
    *a = pto_arg_float(f);
    return 0;
  }
  if (strncmp(w, "inout:", 6) == 0 || strncmp(w, "in:", 3) == 0) {
    bool inout = w[2] == 'o';
    const char *form = w + (inout ? 6 : 3);
    rc = ctl_parse_data(form, d, msg, msglen);
    if (rc == 1)
      return fail(CTL_EXIT_USAGE, msg, msglen,
                  "'%s' must be followed by data: @FILE, f32:LIST, i32:LIST or hex:HEX.",
                  inout ? "inout:" : "in:");
    if (rc < 0) return rc;
    *a = inout ? pto_arg_inout(d->ptr, d->len) : pto_arg_input(d->ptr, d->len);
    return 0;
  }
  rc = ctl_parse_data(w, d, msg, msglen);
  if (rc < 0) return rc;
  if (rc == 0) {
    *a = pto_arg_input(d->ptr, d->len);
    return 0;
  }
  if (parse_int(w, &i)) {
    *a = pto_arg_int(i);
    return 0;
  }
  if (parse_float(w, &f)) {
    *a = pto_arg_float(f);
    return 0;
  }
  return fail(CTL_EXIT_USAGE, msg, msglen,
              "'%s' is not a dispatch argument: use @FILE, f32:LIST, i32:LIST, hex:HEX, "
              "inout:DATA, buf:NAME[:OFFSET:BYTES], out:SIZE, int:N, float:X or a number.",
              w);
}

int ctl_parse_args(char **words, int count, ctl_args_t *ret, char *msg, size_t msglen) {
  memset(ret, 0, sizeof(*ret));
  if (count <= 0) return 0;
  ret->args = calloc((size_t)count, sizeof(*ret->args));
  ret->data = calloc((size_t)count, sizeof(*ret->data));
  if (!ret->args || !ret->data) {
    ctl_args_free(ret);
    return fail(CTL_EXIT_USAGE, msg, msglen, "Out of memory.");
  }
  for (int i = 0; i < count; i++) {
    char inner[400];
    int rc = parse_arg(words[i], &ret->args[i], &ret->data[i], inner, sizeof(inner));
    ret->n = (uint32_t)i + 1;
    if (rc < 0) {
      snprintf(msg, msglen, "Argument %d: %s", i, inner);
      ctl_args_free(ret);
      return rc;
    }
  }
  return 0;
}

void ctl_args_free(ctl_args_t *a) {
  for (uint32_t i = 0; a->data && i < a->n; i++) free(a->data[i].ptr);
  free(a->data);
  free(a->args);
  memset(a, 0, sizeof(*a));
}

int ctl_config_set(pto_config_t *config, const char *assignment, char *msg, size_t msglen) {
  const char *eq = strchr(assignment, '=');
  char key[128];
  const char *v;
  size_t vlen;
  int64_t i;
  double f;
  pto_error_t err;
  int rc;
  if (!eq || eq == assignment || (size_t)(eq - assignment) >= sizeof(key))
    return fail(CTL_EXIT_USAGE, msg, msglen,
                "--config-set '%s' must be KEY=VALUE, e.g. --config-set aicpu_thread_num=4.",
                assignment);
  snprintf(key, sizeof(key), "%.*s", (int)(eq - assignment), assignment);
  v = eq + 1;
  vlen = strlen(v);
  if (strcmp(v, "true") == 0 || strcmp(v, "false") == 0)
    rc = pto_config_set_bool(config, key, v[0] == 't', &err);
  else if (strcmp(v, "nil") == 0 || strcmp(v, "null") == 0)
    rc = pto_config_set_nil(config, key, &err);
  else if (parse_int(v, &i))
    rc = pto_config_set_int(config, key, i, &err);
  else if (parse_float(v, &f))
    rc = pto_config_set_float(config, key, f, &err);
  else if (vlen >= 2 && v[0] == '"' && v[vlen - 1] == '"') {
    char *s = strndup(v + 1, vlen - 2);
    if (!s) return fail(CTL_EXIT_USAGE, msg, msglen, "Out of memory.");
    rc = pto_config_set_string(config, key, s, &err);
    free(s);
  } else
    rc = pto_config_set_string(config, key, v, &err);
  if (rc < 0) {
    if (err.hint[0])
      return fail(CTL_EXIT_USAGE, msg, msglen, "--config-set %s: %s\n%s", assignment, err.message,
                  err.hint);
    return fail(CTL_EXIT_USAGE, msg, msglen, "--config-set %s: %s", assignment, err.message);
  }
  return 0;
}
