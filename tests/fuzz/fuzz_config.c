/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz cfg_load, the daemon's configuration file parser (daemon/config.h).
 *
 * Input: the bytes of a config file.  cfg_load takes a path, so each run
 * writes the input to a memfd and passes /proc/self/fd/N (no file is left
 * behind, nothing on disk is touched).
 *
 * Checked:
 *   - a failure is INVALID_CONFIG with a message that starts with the file
 *     name, "FILE:LINE: ..." with LINE inside the file, and a key
 *     ("section.key") whenever the message names one ("[ring] heap = ...");
 *   - what is accepted is in range: every integer, size and duration within
 *     its key's [min, max], the socket mode without o+w, paths absolute,
 *     ring and prewarm entries valid sizes or 0;
 *   - cfg_print's output is a config file: loaded again it succeeds and
 *     cfg_diff finds no difference (what the daemon prints with
 *     --check-config reads back to the same configuration).
 */
#include <sys/mman.h>
#include <unistd.h>

#include "config.h"
#include "fuzz_common.h"

static int memfd[2] = {-1, -1};
static char mempath[2][64];

static const char *put(int which, const void *data, size_t len) {
  if (memfd[which] < 0) {
    memfd[which] = memfd_create(which ? "ptod-fuzz-printed.conf" : "ptod-fuzz.conf", MFD_CLOEXEC);
    FUZZ_CHECK(memfd[which] >= 0, "memfd_create failed: %s", strerror(errno));
    snprintf(mempath[which], sizeof(mempath[which]), "/proc/self/fd/%d", memfd[which]);
  }
  FUZZ_CHECK(ftruncate(memfd[which], 0) == 0, "ftruncate: %s", strerror(errno));
  FUZZ_CHECK(len == 0 || pwrite(memfd[which], data, len, 0) == (ssize_t)len, "pwrite: %s",
             strerror(errno));
  return mempath[which];
}

static size_t count_lines(const uint8_t *data, size_t len) {
  size_t n = 1;
  for (size_t i = 0; i < len; i++) n += data[i] == '\n';
  return n;
}

static void check_failure(int rc, const pto_error_t *err, const char *path, const uint8_t *data,
                          size_t len) {
  size_t plen = strlen(path);
  fuzz_check_error(rc, err, "cfg_load");
  FUZZ_CHECK(rc == -PTO_E_INVALID_CONFIG, "cfg_load returned %d", rc);
  if (strncmp(err->message, "Cannot parse ", 13) == 0) return; /* inih's own failure */
  FUZZ_CHECK(strncmp(err->message, path, plen) == 0 && err->message[plen] == ':',
             "the message does not start with the file name: %s", err->message);
  if (err->message[plen + 1] >= '0' && err->message[plen + 1] <= '9') {
    char *rest = NULL;
    unsigned long line = strtoul(err->message + plen + 1, &rest, 10);
    FUZZ_CHECK(line >= 1 && line <= count_lines(data, len), "line %lu of a %zu-line file: %s",
               line, count_lines(data, len), err->message);
    /* "FILE:LINE: [section] key = value: why" names a key */
    if (strncmp(rest, ": [", 3) == 0)
      FUZZ_CHECK(err->key[0] != '\0', "a message naming a key without err.key: %s",
                 err->message);
  }
}

static void check_ranges(const cfg_t *cfg) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++) {
    const cfg_key_t *k = &keys[i];
    const char *p = (const char *)cfg + k->offset;
    uint32_t u32;
    uint64_t u64;
    switch (k->type) {
      case CFG_T_UINT:
        memcpy(&u32, p, sizeof(u32));
        FUZZ_CHECK(u32 >= k->min && u32 <= k->max, "[%s] %s = %u", k->section, k->name, u32);
        break;
      case CFG_T_SIZE:
      case CFG_T_DURATION:
        memcpy(&u64, p, sizeof(u64));
        FUZZ_CHECK(u64 >= k->min && u64 <= k->max, "[%s] %s = %llu", k->section, k->name,
                   (unsigned long long)u64);
        break;
      case CFG_T_MODE:
        memcpy(&u32, p, sizeof(u32));
        FUZZ_CHECK(u32 <= 0777 && !(u32 & 0002), "socket_mode %o", u32);
        break;
      case CFG_T_SOCKET:
        FUZZ_CHECK(p[0] == '/' && memchr(p, '\0', k->size), "socket \"%s\"", p);
        break;
      case CFG_T_DIR:
        FUZZ_CHECK(memchr(p, '\0', k->size) && (p[0] == '/' || (p[0] == '\0' && !k->min)),
                   "[%s] %s = \"%s\"", k->section, k->name, p);
        break;
      case CFG_T_RING:
        for (int r = 0; r < PTO_RING_COUNT; r++) {
          memcpy(&u64, p + (size_t)r * sizeof(u64), sizeof(u64));
          FUZZ_CHECK(u64 == 0 || pto_sizing_value_valid((pto_ring_field_t)k->field, u64),
                     "[%s] %s ring %d = %llu", k->section, k->name, r, (unsigned long long)u64);
        }
        break;
      default: break;
    }
  }
}

/* cfg_print's output, loaded again, is the same configuration. */
static void check_print(const cfg_t *cfg) {
  char *text = NULL, report[1024];
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  cfg_t again;
  pto_error_t err;
  unsigned changed;
  int rc;
  FUZZ_CHECK(out != NULL, "open_memstream failed");
  cfg_print(cfg, NULL, "fuzz", out);
  fclose(out);
  pto_error_clear(&err);
  rc = cfg_load(put(1, text, len), &again, &err);
  if (rc < 0) fprintf(stderr, "printed configuration:\n%s\n", text);
  FUZZ_CHECK(rc == 0, "cfg_print's output does not load: %s", err.message);
  changed = cfg_diff(cfg, &again, report, sizeof(report));
  if (changed) fprintf(stderr, "printed configuration:\n%s\n", text);
  FUZZ_CHECK(changed == 0, "cfg_print's output loads to another configuration:\n%s", report);
  free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  cfg_t cfg;
  pto_error_t err;
  const char *path;
  int rc;

  /* cfg_load refuses more than CFG_FILE_MAX anyway; libFuzzer's -max_len
   * keeps inputs far below it. */
  path = put(0, data, size);
  pto_error_clear(&err);
  rc = cfg_load(path, &cfg, &err);
  if (rc < 0) {
    check_failure(rc, &err, path, data, size);
    return 0;
  }
  FUZZ_CHECK(rc == 0, "cfg_load returned %d", rc);
  check_ranges(&cfg);
  check_print(&cfg);
  return 0;
}
