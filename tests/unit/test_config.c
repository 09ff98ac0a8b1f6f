/* SPDX-License-Identifier: Apache-2.0 */
/* The daemon's configuration file (daemon/config.h), the built-in socket
 * path (proto/paths.h), the shipped example file and the docs against the
 * key table, and, run as `test_config --e2e`, `ptod --check-config`. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <syslog.h>
#include <unistd.h>

#include "check_main.h"
#include "config.h"
#include "paths.h"

/* ---- fixture: a private directory for the files of one test ------------- */

static char dir[64];
static char conf_path[128];

static void setup(void) {
  snprintf(dir, sizeof(dir), "/tmp/ptod-cfg-test-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(conf_path, sizeof(conf_path), "%s/ptod.conf", dir);
}

static void teardown(void) {
  static const char *const names[] = {"ptod.conf", "printed.conf", "out", "err", "big.conf"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char p[160];
    snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
    unlink(p);
  }
  rmdir(dir);
}

static void write_bytes(const char *path, const char *data, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(data, 1, len, f), len);
  ck_assert_int_eq(fclose(f), 0);
}

static void write_text(const char *path, const char *text) {
  write_bytes(path, text, strlen(text));
}

static int load_text(const char *text, cfg_t *cfg, pto_error_t *err) {
  write_text(conf_path, text);
  pto_error_clear(err);
  return cfg_load(conf_path, cfg, err);
}

static void load_ok(const char *text, cfg_t *cfg) {
  pto_error_t err;
  int rc = load_text(text, cfg, &err);
  ck_assert_msg(rc == 0, "load failed: %s", err.message);
}

/* The file is rejected with exactly "PATH:LINE: tail". */
static void expect_error(const char *text, int line, const char *tail) {
  cfg_t cfg;
  pto_error_t err;
  memset(&cfg, 0x5a, sizeof(cfg));
  int rc = load_text(text, &cfg, &err);
  char want[1024];
  snprintf(want, sizeof(want), "%s:%d: %s", conf_path, line, tail);
  ck_assert_msg(rc == -PTO_E_INVALID_CONFIG, "accepted: %s", text);
  ck_assert_int_eq(err.code, PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(err.message, want);
  cfg_t untouched;
  memset(&untouched, 0x5a, sizeof(untouched));
  ck_assert_msg(memcmp(&cfg, &untouched, sizeof(cfg)) == 0, "cfg written on failure");
}

static cfg_t defaults(void) {
  cfg_t cfg;
  pto_error_t err;
  ck_assert_int_eq(cfg_load(NULL, &cfg, &err), 0);
  return cfg;
}

/* ---- the table ------------------------------------------------------------ */

START_TEST(table_is_sound) {
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  ck_assert_uint_ge(n, 28);
  for (size_t i = 0; i < n; i++) {
    const cfg_key_t *k = &keys[i];
    ck_assert_ptr_eq(cfg_key_find(k->section, k->name), k);
    ck_assert_msg(k->doc && strlen(k->doc) > 20, "%s has no doc", k->name);
    ck_assert_msg(k->doc[strlen(k->doc) - 1] == '.', "%s: doc is not a sentence", k->name);
    ck_assert_ptr_nonnull(k->def);
    ck_assert_uint_le(k->offset + k->size, sizeof(cfg_t));
  }
  ck_assert_ptr_null(cfg_key_find("daemon", "nope"));
  ck_assert_ptr_null(cfg_key_find("nope", "socket"));
  ck_assert_ptr_null(cfg_key_find(NULL, "socket"));
}
END_TEST

START_TEST(restart_keys) {
  static const char *const restart[] = {
      "daemon.socket",   "daemon.socket_mode", "daemon.socket_group", "device.id",
      "device.platform", "device.memory",      "device.cores",        "device.aicpu_thread_num",
      "device.programs", "metrics.listen",   "metrics.textfile",   "metrics.textfile_interval"};
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++) {
    char id[64];
    snprintf(id, sizeof(id), "%s.%s", keys[i].section, keys[i].name);
    bool needs_restart = false;
    for (size_t j = 0; j < sizeof(restart) / sizeof(restart[0]); j++)
      if (strcmp(id, restart[j]) == 0) needs_restart = true;
    ck_assert_msg(cfg_key_live(&keys[i]) == !needs_restart, "%s: live is %d", id,
                  cfg_key_live(&keys[i]));
  }
}
END_TEST

/* ---- defaults --------------------------------------------------------------- */

START_TEST(builtin_defaults) {
  cfg_t cfg = defaults();
  char sock[PTO_SOCKET_PATH_MAX];
  ck_assert_int_eq(pto_default_socket_path(0, sock, sizeof(sock)), 0);
  ck_assert_str_eq(cfg.daemon.socket, sock);
  ck_assert_uint_eq(cfg.daemon.socket_mode, 0660);
  ck_assert_uint_eq(cfg.daemon.socket_group.gid, CFG_NO_GID);
  ck_assert_uint_eq(cfg.daemon.allowed_uids.count, 0);
  ck_assert_uint_eq(cfg.daemon.allowed_gids.count, 0);
  ck_assert_uint_eq(cfg.daemon.max_clients, 256);
  ck_assert_uint_eq(cfg.daemon.max_message, UINT64_C(64) << 20);
  ck_assert_uint_eq(cfg.daemon.max_pending, 1024);
  ck_assert_uint_eq(cfg.daemon.queue_depth, 64);
  ck_assert_uint_eq(cfg.daemon.drain_timeout_ms, 30000);
  ck_assert_uint_eq(cfg.daemon.client_timeout_ms, 30000);
  ck_assert_uint_eq(cfg.daemon.output_limit, UINT64_C(256) << 20);
  ck_assert_str_eq(cfg.daemon.diagnostics_dir, "");
  ck_assert_int_eq(cfg.daemon.log_level, LOG_INFO);
  ck_assert_uint_eq(cfg.device.id, 0);
  ck_assert_str_eq(cfg.device.platform, "sim");
  ck_assert_uint_eq(cfg.device.memory, UINT64_C(4) << 30);
  ck_assert_uint_eq(cfg.device.cores, 4);
  ck_assert_uint_eq(cfg.device.aicpu_thread_num, 4);
  ck_assert_str_eq(cfg.device.programs, PTOD_DEFAULT_PROGRAMS_DIR);
  ck_assert_uint_eq(cfg.device.run_timeout_ms, 10000);
  ck_assert_uint_eq(cfg.device.deadlock_timeout_ms, 500);
  for (int f = 0; f < PTO_FIELD_COUNT; f++)
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      ck_assert_uint_eq(cfg.ring.value[f][r], 0);
      ck_assert_uint_eq(cfg.prewarm.value[f][r], 0);
    }

  cfg_t d;
  cfg_defaults(&d);
  ck_assert_uint_eq(cfg_diff(&cfg, &d, NULL, 0), 0);

  /* an empty file is the defaults */
  cfg_t e;
  load_ok("", &e);
  ck_assert_uint_eq(cfg_diff(&cfg, &e, NULL, 0), 0);
  load_ok("# nothing\n\n; at all\n[daemon]\n[prewarm]\n", &e);
  ck_assert_uint_eq(cfg_diff(&cfg, &e, NULL, 0), 0);
}
END_TEST

START_TEST(defaults_are_their_own_text) {
  /* Writing every key at its documented default changes nothing. */
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  char text[8192];
  size_t pos = 0;
  const char *section = "";
  for (size_t i = 0; i < n; i++) {
    if (strcmp(section, keys[i].section) != 0) {
      section = keys[i].section;
      pos += (size_t)snprintf(text + pos, sizeof(text) - pos, "[%s]\n", section);
    }
    pos += (size_t)snprintf(text + pos, sizeof(text) - pos, "%s = %s\n", keys[i].name, keys[i].def);
  }
  cfg_t cfg, def = defaults();
  load_ok(text, &cfg);
  char report[1024];
  ck_assert_msg(cfg_diff(&def, &cfg, report, sizeof(report)) == 0, "%s", report);
}
END_TEST

/* ---- every key ------------------------------------------------------------- */

static const char every_key[] =
    "; every key, none at its default\n"
    "[daemon]\n"
    "socket = /tmp/ptod-test/x.sock\n"
    "socket_mode = 0600\n"
    "socket_group = root\n"
    "allowed_uids = root, 1000\n"
    "allowed_gids = 0,5 , 7\n"
    "max_clients = 512\n"
    "max_message = 1G\n"
    "max_pending = 8\n"
    "queue_depth = 2\n"
    "drain_timeout = 1500ms\n"
    "client_timeout = 2\n"
    "output_limit = 1K\n"
    "diagnostics_dir = /var/tmp/ptod\n"
    "log_level = warning\n"
    "[device]\n"
    "id = 7\n"
    "platform = sim\n"
    "memory = 512M\n"
    "cores = 16\n"
    "aicpu_thread_num = 2\n"
    "programs = /opt/ptod/programs\n"
    "run_timeout = 1s\n"
    "deadlock_timeout = 2s\n"
    "[ring]\n"
    "task_window = 64,0,0,0\n"
    "heap = 1G\n"
    "dep_pool = 4, 8, 16, 32\n"
    "[prewarm]\n"
    "task_window = 128\n"
    "heap = 0,0,0,2G\n"
    "dep_pool = 1024\n";

START_TEST(every_key_parsed) {
  cfg_t cfg;
  load_ok(every_key, &cfg);
  ck_assert_str_eq(cfg.daemon.socket, "/tmp/ptod-test/x.sock");
  ck_assert_uint_eq(cfg.daemon.socket_mode, 0600);
  ck_assert_uint_eq(cfg.daemon.socket_group.gid, 0);
  ck_assert_str_eq(cfg.daemon.socket_group.name, "root");
  ck_assert_uint_eq(cfg.daemon.allowed_uids.count, 2);
  ck_assert_uint_eq(cfg.daemon.allowed_uids.id[0], 0);
  ck_assert_uint_eq(cfg.daemon.allowed_uids.id[1], 1000);
  ck_assert_uint_eq(cfg.daemon.allowed_gids.count, 3);
  ck_assert_uint_eq(cfg.daemon.allowed_gids.id[0], 0);
  ck_assert_uint_eq(cfg.daemon.allowed_gids.id[1], 5);
  ck_assert_uint_eq(cfg.daemon.allowed_gids.id[2], 7);
  ck_assert_uint_eq(cfg.daemon.max_clients, 512);
  ck_assert_uint_eq(cfg.daemon.max_message, UINT64_C(1) << 30);
  ck_assert_uint_eq(cfg.daemon.max_pending, 8);
  ck_assert_uint_eq(cfg.daemon.queue_depth, 2);
  ck_assert_uint_eq(cfg.daemon.drain_timeout_ms, 1500);
  ck_assert_uint_eq(cfg.daemon.client_timeout_ms, 2000);
  ck_assert_uint_eq(cfg.daemon.output_limit, 1024);
  ck_assert_str_eq(cfg.daemon.diagnostics_dir, "/var/tmp/ptod");
  ck_assert_int_eq(cfg.daemon.log_level, LOG_WARNING);
  ck_assert_uint_eq(cfg.device.id, 7);
  ck_assert_str_eq(cfg.device.platform, "sim");
  ck_assert_uint_eq(cfg.device.memory, UINT64_C(512) << 20);
  ck_assert_uint_eq(cfg.device.cores, 16);
  ck_assert_uint_eq(cfg.device.aicpu_thread_num, 2);
  ck_assert_str_eq(cfg.device.programs, "/opt/ptod/programs");
  ck_assert_uint_eq(cfg.device.run_timeout_ms, 1000);
  ck_assert_uint_eq(cfg.device.deadlock_timeout_ms, 2000);
  const uint64_t G = UINT64_C(1) << 30;
  const uint64_t want_ring[3][4] = {{64, 0, 0, 0}, {G, G, G, G}, {4, 8, 16, 32}};
  const uint64_t want_prewarm[3][4] = {
      {128, 128, 128, 128}, {0, 0, 0, 2 * G}, {1024, 1024, 1024, 1024}};
  for (int f = 0; f < 3; f++)
    for (int r = 0; r < 4; r++) {
      ck_assert_uint_eq(cfg.ring.value[f][r], want_ring[f][r]);
      ck_assert_uint_eq(cfg.prewarm.value[f][r], want_prewarm[f][r]);
    }
}
END_TEST

START_TEST(value_forms) {
  cfg_t cfg;
  load_ok(
      "[daemon]\nsocket_mode = 660\nlog_level = err\ndrain_timeout = 0\n"
      "client_timeout = 86400s\n",
      &cfg);
  ck_assert_uint_eq(cfg.daemon.socket_mode, 0660);
  ck_assert_int_eq(cfg.daemon.log_level, LOG_ERR);
  ck_assert_uint_eq(cfg.daemon.drain_timeout_ms, 0);
  ck_assert_uint_eq(cfg.daemon.client_timeout_ms, UINT64_C(86400000));
  load_ok("[daemon]\nlog_level = notice\nmax_message = 4G\nmax_clients = 65536\n", &cfg);
  ck_assert_int_eq(cfg.daemon.log_level, LOG_NOTICE);
  ck_assert_uint_eq(cfg.daemon.max_message, UINT64_C(4) << 30);
  load_ok("[daemon]\nlog_level = debug\nmax_message = 1024\nallowed_uids =\n", &cfg);
  ck_assert_int_eq(cfg.daemon.log_level, LOG_DEBUG);
  ck_assert_uint_eq(cfg.daemon.max_message, 1024);
  ck_assert_uint_eq(cfg.daemon.allowed_uids.count, 0);
  /* 64 entries is the most */
  char text[512] = "[daemon]\nallowed_uids = ";
  for (int i = 0; i < 63; i++) strncat(text, "1,", sizeof(text) - strlen(text) - 1);
  strncat(text, "1\n", sizeof(text) - strlen(text) - 1);
  load_ok(text, &cfg);
  ck_assert_uint_eq(cfg.daemon.allowed_uids.count, 64);
  /* the socket "" is the built-in path */
  load_ok("[daemon]\nsocket =\n", &cfg);
  cfg_t def = defaults();
  ck_assert_str_eq(cfg.daemon.socket, def.daemon.socket);
}
END_TEST

START_TEST(file_syntax_accepted) {
  cfg_t cfg;
  /* comments, inline comments, indentation, CRLF, a BOM, a section twice */
  load_ok(
      "\xEF\xBB\xBF# ptod\r\n"
      "[ring]\r\n"
      "  heap = 1G ; per ring\r\n"
      "\ttask_window = 64\r\n"
      "; [nope]\r\n"
      "[device]\r\n"
      "cores = 2\r\n"
      "[ring]\r\n"
      "    dep_pool = 0,0,0,8\r\n",
      &cfg);
  ck_assert_uint_eq(cfg.ring.value[PTO_FIELD_HEAP][3], UINT64_C(1) << 30);
  ck_assert_uint_eq(cfg.ring.value[PTO_FIELD_TASK_WINDOW][0], 64);
  ck_assert_uint_eq(cfg.ring.value[PTO_FIELD_DEP_POOL][3], 8);
  ck_assert_uint_eq(cfg.ring.value[PTO_FIELD_DEP_POOL][0], 0);
  ck_assert_uint_eq(cfg.device.cores, 2);
  /* no newline at the end */
  load_ok("[device]\ncores = 3", &cfg);
  ck_assert_uint_eq(cfg.device.cores, 3);
  /* a line of exactly CFG_LINE_MAX characters */
  char line[CFG_LINE_MAX + 16];
  memset(line, '#', CFG_LINE_MAX);
  line[CFG_LINE_MAX] = '\n';
  line[CFG_LINE_MAX + 1] = '\0';
  load_ok(line, &cfg);
}
END_TEST

START_TEST(socket_follows_device_id) {
  cfg_t cfg;
  char want[PTO_SOCKET_PATH_MAX];
  load_ok("[device]\nid = 3\n", &cfg);
  ck_assert_int_eq(pto_default_socket_path(3, want, sizeof(want)), 0);
  ck_assert_str_eq(cfg.daemon.socket, want);
  /* also when the socket section comes first */
  load_ok("[daemon]\nmax_clients = 2\n[device]\nid = 255\n", &cfg);
  ck_assert_int_eq(pto_default_socket_path(255, want, sizeof(want)), 0);
  ck_assert_str_eq(cfg.daemon.socket, want);
  /* an explicit socket stays */
  load_ok("[daemon]\nsocket = /tmp/a.sock\n[device]\nid = 3\n", &cfg);
  ck_assert_str_eq(cfg.daemon.socket, "/tmp/a.sock");
}
END_TEST

/* ---- rejected values ---------------------------------------------------------- */

typedef struct bad {
  const char *section, *key, *value, *why;
} bad_t;

static const bad_t bad_values[] = {
    {"daemon", "socket", "run/ptod.sock", "the socket path must be absolute (start with /)."},
    {"daemon", "socket_mode", "0666",
     "the socket must not be world-writable (o+w): any local user could drive the device. Use "
     "0660 with socket_group, or 0600."},
    {"daemon", "socket_mode", "0602",
     "the socket must not be world-writable (o+w): any local user could drive the device. Use "
     "0660 with socket_group, or 0600."},
    {"daemon", "socket_mode", "777",
     "the socket must not be world-writable (o+w): any local user could drive the device. Use "
     "0660 with socket_group, or 0600."},
    {"daemon", "socket_mode", "1770",
     "expected permission bits only (at most 0777), such as 0660."},
    {"daemon", "socket_mode", "0680", "expected an octal permission mode such as 0660."},
    {"daemon", "socket_mode", "rw", "expected an octal permission mode such as 0660."},
    {"daemon", "socket_mode", "00660", "expected an octal permission mode such as 0660."},
    {"daemon", "socket_mode", "", "expected an octal permission mode such as 0660."},
    {"daemon", "socket_group", "no-such-group-ptod",
     "there is no group named \"no-such-group-ptod\"; create it, or give a numeric group id."},
    {"daemon", "socket_group", "4294967295",
     "group id 4294967295 is out of range; ids are below 4294967295."},
    {"daemon", "allowed_uids", "0,,1",
     "expected user names or ids separated by commas, got an empty entry."},
    {"daemon", "allowed_uids", "0,",
     "expected user names or ids separated by commas, got an empty entry."},
    {"daemon", "allowed_uids", "no-such-user-ptod",
     "there is no user named \"no-such-user-ptod\"; create it, or give a numeric user id."},
    {"daemon", "allowed_gids", "root, no-such-group-ptod",
     "there is no group named \"no-such-group-ptod\"; create it, or give a numeric group id."},
    {"daemon", "allowed_gids", "99999999999",
     "group id 99999999999 is out of range; ids are below 4294967295."},
    {"daemon", "max_clients", "0", "expected an integer from 1 to 65536."},
    {"daemon", "max_clients", "65537", "expected an integer from 1 to 65536."},
    {"daemon", "max_clients", "-1", "expected an integer from 1 to 65536."},
    {"daemon", "max_clients", "1e3", "expected an integer from 1 to 65536."},
    {"daemon", "max_clients", "", "expected an integer from 1 to 65536."},
    {"daemon", "max_clients", "18446744073709551617", "expected an integer from 1 to 65536."},
    {"daemon", "max_message", "1023",
     "expected a size from 1K to 4G: a number of bytes, or a number ending in K, M or G (upper "
     "case)."},
    {"daemon", "max_message", "5G",
     "expected a size from 1K to 4G: a number of bytes, or a number ending in K, M or G (upper "
     "case)."},
    {"daemon", "max_message", "64m",
     "expected a size from 1K to 4G: a number of bytes, or a number ending in K, M or G (upper "
     "case)."},
    {"daemon", "max_message", "1.5M",
     "expected a size from 1K to 4G: a number of bytes, or a number ending in K, M or G (upper "
     "case)."},
    {"daemon", "max_pending", "0", "expected an integer from 1 to 65536."},
    {"daemon", "queue_depth", "65537", "expected an integer from 1 to 65536."},
    {"daemon", "drain_timeout", "1h",
     "expected a duration from 0s to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"daemon", "drain_timeout", "1.5s",
     "expected a duration from 0s to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"daemon", "drain_timeout", "86401",
     "expected a duration from 0s to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"daemon", "drain_timeout", "30 s",
     "expected a duration from 0s to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"daemon", "client_timeout", "0",
     "expected a duration from 1ms to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"daemon", "client_timeout", "ms",
     "expected a duration from 1ms to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"daemon", "output_limit", "512",
     "expected a size of at least 1K: a number of bytes, or a number ending in K, M or G (upper "
     "case)."},
    {"daemon", "diagnostics_dir", "var/ptod",
     "the directory must be an absolute path (start with /)."},
    {"daemon", "log_level", "verbose", "expected one of err, warning, notice, info, debug."},
    {"daemon", "log_level", "INFO", "expected one of err, warning, notice, info, debug."},
    {"device", "id", "256", "expected an integer from 0 to 255."},
    {"device", "id", "-1", "expected an integer from 0 to 255."},
    {"device", "platform", "a2a3", "unknown platform; the known platforms are: sim."},
    {"device", "platform", "", "unknown platform; the known platforms are: sim."},
    {"device", "memory", "512K",
     "expected a size from 1M to 1024G: a number of bytes, or a number ending in K, M or G "
     "(upper case)."},
    {"device", "cores", "0", "expected an integer from 1 to 256."},
    {"device", "cores", "257", "expected an integer from 1 to 256."},
    {"device", "aicpu_thread_num", "1", "expected an integer from 2 to 16."},
    {"device", "aicpu_thread_num", "17", "expected an integer from 2 to 16."},
    {"device", "programs", "", "expected a directory, got an empty value."},
    {"device", "programs", "programs", "the directory must be an absolute path (start with /)."},
    {"device", "run_timeout", "0",
     "expected a duration from 1ms to 86400s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"device", "deadlock_timeout", "3601s",
     "expected a duration from 1ms to 3600s: a number ending in ms or s (a bare number is "
     "seconds)."},
    {"ring", "heap", "1000", "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000"},
    {"ring", "heap", "512m",
     "ring_heap must be a power of 2 >= 1024 (bytes per ring), got \"512m\""},
    {"ring", "heap", "", "ring_heap must be a power of 2 >= 1024 (bytes per ring), got \"\""},
    {"ring", "heap", "1G,1G,1G",
     "ring_heap must have exactly 4 entries (one per scope-depth ring), got 3"},
    {"ring", "heap", "1G,1000,0,0",
     "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got 1000"},
    {"ring", "task_window", "3", "ring_task_window must be a power of 2 >= 4, got 3"},
    {"ring", "task_window", "0", "ring_task_window must be a power of 2 >= 4, got 0"},
    {"ring", "dep_pool", "2147483648", "ring_dep_pool must be in [4, INT32_MAX], got 2147483648"},
    {"ring", "dep_pool", "2G", "ring_dep_pool must be in [4, INT32_MAX], got 2147483648"},
    {"prewarm", "heap", "1000",
     "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000"},
    {"prewarm", "task_window", "4,4,4,4,4",
     "ring_task_window must have exactly 4 entries (one per scope-depth ring), got 5"},
};

START_TEST(bad_values_rejected) {
  for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
    const bad_t *b = &bad_values[i];
    char text[512], tail[768];
    /* two comment lines first, so the line number is not a lucky 2 */
    snprintf(text, sizeof(text), "# a\n[%s]\n; b\n%s = %s\n", b->section, b->key, b->value);
    snprintf(tail, sizeof(tail), "[%s] %s = %s: %s", b->section, b->key, b->value, b->why);
    expect_error(text, 4, tail);
    /* the key names what was wrong */
    cfg_t cfg;
    pto_error_t err;
    ck_assert_int_eq(load_text(text, &cfg, &err), -PTO_E_INVALID_CONFIG);
    char key[64];
    snprintf(key, sizeof(key), "%s.%s", b->section, b->key);
    ck_assert_str_eq(err.key, key);
  }
}
END_TEST

START_TEST(ring_error_has_hint) {
  cfg_t cfg;
  pto_error_t err;
  /* the example of the docs, verbatim, at line 12 */
  ck_assert_int_eq(
      load_text("#1\n#2\n#3\n#4\n#5\n#6\n#7\n#8\n#9\n#10\n[ring]\nheap = 1000\n", &cfg, &err),
      -PTO_E_INVALID_CONFIG);
  char want[512];
  snprintf(want, sizeof(want),
           "%s:12: [ring] heap = 1000: ring_heap must be a power of 2 >= 1024 (bytes per ring), "
           "got 1000",
           conf_path);
  ck_assert_str_eq(err.message, want);
  ck_assert_str_eq(err.key, "ring.heap");
  ck_assert_str_eq(err.hint, "Use 1024 or a larger power of 2.");
}
END_TEST

START_TEST(too_many_ids) {
  char text[512] = "[daemon]\nallowed_uids = ";
  for (int i = 0; i < 64; i++) strncat(text, "1,", sizeof(text) - strlen(text) - 1);
  strncat(text, "1\n", sizeof(text) - strlen(text) - 1);
  char tail[512];
  snprintf(tail, sizeof(tail),
           "[daemon] allowed_uids = %.*s: more than 64 entries; allow a group "
           "instead of many users.",
           (int)(strlen(text) - strlen("[daemon]\nallowed_uids = ") - 1),
           text + strlen("[daemon]\nallowed_uids = "));
  expect_error(text, 2, tail);
}
END_TEST

START_TEST(socket_path_too_long) {
  char path[140];
  path[0] = '/';
  memset(path + 1, 'a', 120);
  path[121] = '\0';
  char text[256], tail[512];
  snprintf(text, sizeof(text), "[daemon]\nsocket = %s\n", path);
  snprintf(tail, sizeof(tail),
           "[daemon] socket = %s: the socket path is 121 bytes long; a Unix socket path holds at "
           "most 107.",
           path);
  expect_error(text, 2, tail);
}
END_TEST

/* ---- rejected structure ------------------------------------------------------- */

START_TEST(unknown_sections_and_keys) {
  expect_error("# x\n[foo]\n", 2,
               "unknown section [foo]; the sections are [daemon], [device], [metrics], "
               "[ring] and [prewarm].");
  expect_error("[daemon]\nmax_clients = 5\n[Device]\nid = 1\n", 3,
               "unknown section [Device]; the sections are [daemon], [device], [metrics], "
               "[ring] and [prewarm].");
  expect_error("[ring.0]\nheap = 1G\n", 1,
               "unknown section [ring.0]; the sections are [daemon], [device], [metrics], "
               "[ring] and [prewarm].");
  expect_error("[daemon]\nsockett = /x\n", 2,
               "[daemon] sockett = /x: unknown key; the keys of [daemon] are socket, "
               "socket_mode, socket_group, allowed_uids, allowed_gids, max_clients, "
               "max_message, max_pending, queue_depth, queue_full, input_limit, "
               "clients_memory, shm_limit, shm_regions, shm_regions_total, shm_limit_total, max_objects, spin_us, priority_aging, drain_timeout, client_timeout, "
               "idle_timeout, "
               "output_limit, diagnostics_dir, diagnostics_max_bytes, diagnostics_max_files, "
               "log_level.");
  expect_error("[ring]\nwindow = 64\n", 2,
               "[ring] window = 64: unknown key; the keys of [ring] are task_window, heap, "
               "dep_pool.");
  expect_error("[prewarm]\nring_heap = 1G\n", 2,
               "[prewarm] ring_heap = 1G: unknown key; the keys of [prewarm] are task_window, "
               "heap, dep_pool.");
  expect_error("max_clients = 5\n", 1,
               "max_clients = 5: a key outside any section; put it under [daemon], [device], "
               "[metrics], [ring] or [prewarm].");
}
END_TEST

START_TEST(duplicates_rejected) {
  expect_error("[ring]\nheap = 1G\n\n# c\nheap = 2G\n", 5,
               "[ring] heap = 2G: already set on line 2; keep one of the two.");
  expect_error("[ring]\nheap=1G\n[device]\ncores=2\n[ring]\nheap=2G\n", 6,
               "[ring] heap = 2G: already set on line 2; keep one of the two.");
  /* the same name in two sections is two keys */
  cfg_t cfg;
  load_ok("[ring]\nheap = 1G\n[prewarm]\nheap = 2G\n", &cfg);
}
END_TEST

START_TEST(syntax_errors) {
  expect_error("[daemon]\nmax_clients\n", 2,
               "expected a [section] header, a key = value line or a comment, got "
               "\"max_clients\".");
  expect_error("[daemon\nmax_clients = 1\n", 1,
               "expected a [section] header, a key = value line or a comment, got \"[daemon\".");
  /* the first error wins, whichever kind */
  expect_error("[daemon]\n  garbage\nmax_clients = 0\n", 2,
               "expected a [section] header, a key = value line or a comment, got \"garbage\".");
  expect_error("[daemon]\nmax_clients = 0\ngarbage\nmax_pending = 0\n", 2,
               "[daemon] max_clients = 0: expected an integer from 1 to 65536.");

  char text[400] = "[daemon]\n# ";
  size_t n = strlen(text);
  memset(text + n, 'x', 300);
  text[n + 300] = '\n';
  text[n + 301] = '\0';
  expect_error(text, 2, "the line is 302 characters long; lines are at most 196.");

  cfg_t cfg;
  pto_error_t err;
  write_bytes(conf_path, "[daemon]\nmax_clients = 1\0\n", 26);
  ck_assert_int_eq(cfg_load(conf_path, &cfg, &err), -PTO_E_INVALID_CONFIG);
  char want[256];
  snprintf(want, sizeof(want), "%s:2: the line holds a NUL byte; the file must be text.",
           conf_path);
  ck_assert_str_eq(err.message, want);
}
END_TEST

/* What cfg_load_report passed to its report, one message a problem. */
typedef struct reported {
  unsigned n;
  char messages[CFG_PROBLEMS_SHOWN + 1][sizeof(((pto_error_t *)0)->message)];
  char hints[4][sizeof(((pto_error_t *)0)->hint)];
} reported_t;

static void collect(const pto_error_t *problem, void *user) {
  reported_t *r = user;
  ck_assert_uint_le(r->n, CFG_PROBLEMS_SHOWN);
  snprintf(r->messages[r->n], sizeof(r->messages[0]), "%s", problem->message);
  if (r->n < 4) snprintf(r->hints[r->n], sizeof(r->hints[0]), "%s", problem->hint);
  r->n++;
}

START_TEST(report_every_problem) {
  static reported_t r;
  memset(&r, 0, sizeof(r));
  char text[600] = "[daemon]\n"
                   "max_clients = 0\n"    /* 2: a bad value */
                   "bogus = 1\n"          /* 3: an unknown key */
                   "[ring]\n"
                   "heap = 1000\n"        /* 5: a bad value, with a hint */
                   "heap = 2048\n"        /* 6: set twice */
                   "junk\n"               /* 7: no key = value */
                   "[nosuch]\n"           /* 8: an unknown section... */
                   "x = 1\n"              /* ...whose keys are not reported again */
                   "[device]\n"
                   "# ";                  /* 11: too long */
  size_t n = strlen(text);
  memset(text + n, 'x', 300);
  snprintf(text + n + 300, sizeof(text) - n - 300, "\ncores = 0\n"); /* 12: a bad value */
  write_text(conf_path, text);
  cfg_t cfg;
  memset(&cfg, 0x5a, sizeof(cfg));
  cfg_t untouched = cfg;
  pto_error_t err;
  ck_assert_int_eq(cfg_load_report(conf_path, &cfg, &err, collect, &r), -PTO_E_INVALID_CONFIG);
  ck_assert_uint_eq(r.n, 8);
  const int lines[] = {2, 3, 5, 6, 7, 8, 11, 12};
  const char *const whats[] = {
      "[daemon] max_clients = 0: expected an integer from 1 to 65536.",
      "[daemon] bogus = 1: unknown key; the keys of [daemon] are socket,",
      "[ring] heap = 1000: ring_heap must be a power of 2 >= 1024",
      "[ring] heap = 2048: already set on line 5; keep one of the two.",
      "expected a [section] header, a key = value line or a comment, got \"junk\".",
      "unknown section [nosuch]; the sections are",
      "the line is 302 characters long; lines are at most 196.",
      "[device] cores = 0: ",
  };
  for (unsigned i = 0; i < r.n; i++) {
    char want[512];
    snprintf(want, sizeof(want), "%s:%d: %s", conf_path, lines[i], whats[i]);
    ck_assert_msg(strncmp(r.messages[i], want, strlen(want)) == 0, "problem %u: %s", i,
                  r.messages[i]);
  }
  ck_assert_str_eq(r.hints[2], "Use 1024 or a larger power of 2.");
  /* cfg_load's error is the first; the configuration is not written */
  ck_assert_str_eq(err.message, r.messages[0]);
  ck_assert_str_eq(err.key, "daemon.max_clients");
  ck_assert_mem_eq(&cfg, &untouched, sizeof(cfg));
  pto_error_t first;
  ck_assert_int_eq(load_text(text, &cfg, &first), -PTO_E_INVALID_CONFIG);
  ck_assert_str_eq(first.message, err.message);

  /* a good file reports nothing */
  memset(&r, 0, sizeof(r));
  write_text(conf_path, "[daemon]\nmax_clients = 8\n");
  ck_assert_int_eq(cfg_load_report(conf_path, &cfg, &err, collect, &r), 0);
  ck_assert_uint_eq(r.n, 0);
  ck_assert_uint_eq(cfg.daemon.max_clients, 8);
}
END_TEST

/* A file of garbage is reported up to CFG_PROBLEMS_SHOWN, then counted. */
START_TEST(report_counts_past_the_cap) {
  static reported_t r;
  static char text[CFG_PROBLEMS_SHOWN * 2 * 8];
  memset(&r, 0, sizeof(r));
  size_t pos = 0;
  for (unsigned i = 0; i < CFG_PROBLEMS_SHOWN + 50; i++)
    pos += (size_t)snprintf(text + pos, sizeof(text) - pos, "junk\n");
  write_text(conf_path, text);
  cfg_t cfg;
  pto_error_t err;
  ck_assert_int_eq(cfg_load_report(conf_path, &cfg, &err, collect, &r), -PTO_E_INVALID_CONFIG);
  ck_assert_uint_eq(r.n, CFG_PROBLEMS_SHOWN + 1);
  char want[256];
  snprintf(want, sizeof(want), "%s:%d: expected", conf_path, CFG_PROBLEMS_SHOWN);
  ck_assert_msg(strncmp(r.messages[CFG_PROBLEMS_SHOWN - 1], want, strlen(want)) == 0, "%s",
                r.messages[CFG_PROBLEMS_SHOWN - 1]);
  snprintf(want, sizeof(want), "%s: 50 more problems not shown.", conf_path);
  ck_assert_str_eq(r.messages[CFG_PROBLEMS_SHOWN], want);
}
END_TEST

START_TEST(unreadable_files) {
  cfg_t cfg;
  pto_error_t err;
  char path[160], want[256];
  snprintf(path, sizeof(path), "%s/none.conf", dir);
  ck_assert_int_eq(cfg_load(path, &cfg, &err), -PTO_E_INVALID_CONFIG);
  snprintf(want, sizeof(want), "Cannot open the config file %s: No such file or directory.", path);
  ck_assert_str_eq(err.message, want);

  ck_assert_int_eq(cfg_load(dir, &cfg, &err), -PTO_E_INVALID_CONFIG);
  snprintf(want, sizeof(want),
           "The config file %s is not a regular file (a directory, FIFO, device or socket is "
           "never read); point --config at a file.",
           dir);
  ck_assert_str_eq(err.message, want);

  snprintf(path, sizeof(path), "%s/big.conf", dir);
  size_t size = CFG_FILE_MAX + 2;
  char *big = malloc(size);
  ck_assert_ptr_nonnull(big);
  memset(big, '\n', size);
  write_bytes(path, big, size);
  free(big);
  ck_assert_int_eq(cfg_load(path, &cfg, &err), -PTO_E_INVALID_CONFIG);
  snprintf(want, sizeof(want),
           "The config file %s is larger than %u bytes; it cannot be a ptod configuration.", path,
           CFG_FILE_MAX);
  ck_assert_str_eq(err.message, want);
}
END_TEST

/* ---- sizings ------------------------------------------------------------------- */

START_TEST(prewarm_overlays_baseline) {
  cfg_t cfg;
  pto_sizing_t env;
  pto_error_t err;
  const uint64_t M = UINT64_C(1) << 20, G = UINT64_C(1) << 30;
  memset(&env, 0, sizeof(env));
  ck_assert_int_eq(pto_sizing_parse_env(PTO_FIELD_HEAP, "0,1073741824,0,0", env.value[1], &err), 0);
  load_ok("[ring]\nheap = 512M\n[prewarm]\nheap = 0,0,2G,0\ntask_window = 1024\n", &cfg);
  pto_sizing_resolved_t base, pre;
  cfg_resolve_sizings(&cfg, &env, &base, &pre);
  const uint64_t want_base[4] = {512 * M, G, 512 * M, 512 * M};
  const int src_base[4] = {PTO_SOURCE_CONFIG, PTO_SOURCE_ENV, PTO_SOURCE_CONFIG, PTO_SOURCE_CONFIG};
  const uint64_t want_pre[4] = {512 * M, G, 2 * G, 512 * M};
  const int src_pre[4] = {PTO_SOURCE_CONFIG, PTO_SOURCE_ENV, PTO_SOURCE_REQUEST, PTO_SOURCE_CONFIG};
  for (int r = 0; r < 4; r++) {
    ck_assert_uint_eq(base.value[PTO_FIELD_HEAP][r], want_base[r]);
    ck_assert_int_eq(base.source[PTO_FIELD_HEAP][r], src_base[r]);
    ck_assert_uint_eq(pre.value[PTO_FIELD_HEAP][r], want_pre[r]);
    ck_assert_int_eq(pre.source[PTO_FIELD_HEAP][r], src_pre[r]);
    ck_assert_uint_eq(base.value[PTO_FIELD_TASK_WINDOW][r], 16384);
    ck_assert_uint_eq(pre.value[PTO_FIELD_TASK_WINDOW][r], 1024);
    ck_assert_uint_eq(pre.value[PTO_FIELD_DEP_POOL][r], 16384);
    ck_assert_int_eq(pre.source[PTO_FIELD_DEP_POOL][r], PTO_SOURCE_DEFAULT);
  }
  ck_assert(!pto_sizing_equal(&base, &pre));

  /* no [prewarm]: the prewarm sizing is the resolved baseline */
  load_ok("[ring]\nheap = 512M\n", &cfg);
  cfg_resolve_sizings(&cfg, &env, &base, &pre);
  ck_assert(pto_sizing_equal(&base, &pre));
  ck_assert_uint_eq(pto_sizing_key(&base), pto_sizing_key(&pre));
  ck_assert_int_eq(memcmp(base.source, pre.source, sizeof(base.source)), 0);
  /* NULL env and NULL outputs are fine */
  cfg_resolve_sizings(&cfg, NULL, &base, NULL);
  ck_assert_uint_eq(base.value[PTO_FIELD_HEAP][1], 512 * M);
}
END_TEST

/* ---- print ---------------------------------------------------------------------- */

static char *print_to_string(const cfg_t *cfg, const pto_sizing_t *env, const char *name) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  ck_assert_ptr_nonnull(f);
  cfg_print(cfg, env, name, f);
  ck_assert_int_eq(fclose(f), 0);
  return buf;
}

START_TEST(print_shows_everything) {
  cfg_t cfg;
  pto_sizing_t env;
  pto_error_t err;
  memset(&env, 0, sizeof(env));
  ck_assert_int_eq(pto_sizing_parse_env(PTO_FIELD_HEAP, "0,1073741824,0,0", env.value[1], &err), 0);
  load_ok(
      "[daemon]\nsocket_group = root\n[ring]\nheap = 512M\ntask_window = 1024,0,0,0\n"
      "[prewarm]\nheap = 0,0,2G,0\n",
      &cfg);
  char *out = print_to_string(&cfg, &env, "ptod.conf");
  ck_assert_msg(strncmp(out, "# ptod effective configuration (ptod.conf)\n", 43) == 0, "%s", out);
  static const char *const lines[] = {
      "\n[daemon]\nsocket = ",
      "\nsocket_mode = 0660\n",
      "\nsocket_group = 0 ; root\n",
      "\nallowed_uids = ; any peer that can open the socket\n",
      "\nmax_message = 64M\n",
      "\ndrain_timeout = 30s\n",
      "\ndiagnostics_dir = ; none\n",
      "\nlog_level = info\n",
      "\n[device]\nid = 0\nplatform = sim\nmemory = 4G\n",
      "\ndeadlock_timeout = 500ms\n",
      "\n[ring]\ntask_window = 1024,0,0,0\nheap = 512M\ndep_pool = 0,0,0,0 ; unset\n",
      "\n[prewarm]\ntask_window = 0,0,0,0 ; the baseline\nheap = 0,0,2G,0\n",
      "\n#   task_window = [1024 (config), 16384 (default), 16384 (default), 16384 (default)]\n",
      "\n#   heap = [512 MiB (config), 1 GiB (env), 512 MiB (config), 512 MiB (config)]\n",
      "\n#   heap = [512 MiB (config), 1 GiB (env), 2 GiB (prewarm), 512 MiB (config)]\n",
      "\n#   dep_pool = [16384 (default), 16384 (default), 16384 (default), 16384 (default)]\n",
  };
  for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
    ck_assert_msg(strstr(out, lines[i]) != NULL, "missing %s in:\n%s", lines[i], out);
  pto_sizing_resolved_t base, pre;
  cfg_resolve_sizings(&cfg, &env, &base, &pre);
  char want[80], hex[17];
  pto_sizing_key_hex(pto_sizing_key(&base), hex);
  snprintf(want, sizeof(want), "\n# baseline (key %s):\n", hex);
  ck_assert_msg(strstr(out, want) != NULL, "%s", out);
  pto_sizing_key_hex(pto_sizing_key(&pre), hex);
  snprintf(want, sizeof(want), "\n# prewarm (key %s):\n", hex);
  ck_assert_msg(strstr(out, want) != NULL, "%s", out);
  /* every key of the table, under its section */
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++) {
    char header[32], line[64];
    snprintf(header, sizeof(header), "\n[%s]\n", keys[i].section);
    snprintf(line, sizeof(line), "\n%s = ", keys[i].name);
    const char *sec = strstr(out, header);
    ck_assert_ptr_nonnull(sec);
    ck_assert_msg(strstr(sec, line) != NULL, "%s not printed", keys[i].name);
  }
  free(out);

  /* without [prewarm], it says the prewarm is the baseline */
  load_ok("", &cfg);
  out = print_to_string(&cfg, NULL, NULL);
  ck_assert(strstr(out, "# ptod effective configuration (built-in defaults)\n") == out);
  ck_assert_ptr_nonnull(strstr(out, "\n# prewarm, the baseline (key ef9b6111db51b6a5):\n"));
  ck_assert_ptr_nonnull(strstr(out, "\n# baseline (key ef9b6111db51b6a5):\n"));
  free(out);
}
END_TEST

START_TEST(print_reads_back) {
  /* The printed configuration is itself a config file with the same values. */
  static const char *const texts[] = {"", every_key};
  for (size_t i = 0; i < 2; i++) {
    cfg_t cfg, back;
    load_ok(texts[i], &cfg);
    char *out = print_to_string(&cfg, NULL, conf_path);
    char printed[160];
    snprintf(printed, sizeof(printed), "%s/printed.conf", dir);
    write_text(printed, out);
    free(out);
    pto_error_t err;
    ck_assert_msg(cfg_load(printed, &back, &err) == 0, "%s", err.message);
    char report[2048];
    ck_assert_msg(cfg_diff(&cfg, &back, report, sizeof(report)) == 0, "%s", report);
  }
}
END_TEST

/* ---- diff and reload ---------------------------------------------------------------- */

START_TEST(diff_classifies) {
  cfg_t a = defaults(), b;
  char report[1024];
  ck_assert_uint_eq(cfg_diff(&a, &a, report, sizeof(report)), 0);
  ck_assert_str_eq(report, "");

  load_ok("[daemon]\nmax_clients = 512\n", &b);
  ck_assert_uint_eq(cfg_diff(&a, &b, report, sizeof(report)), CFG_CHANGED_LIVE);
  ck_assert_str_eq(report, "[daemon] max_clients: 256 -> 512\n");

  load_ok("[device]\ncores = 8\n", &b);
  ck_assert_uint_eq(cfg_diff(&a, &b, report, sizeof(report)), CFG_CHANGED_RESTART);
  ck_assert_str_eq(report, "[device] cores: 4 -> 8 (needs a restart)\n");

  load_ok("[device]\ncores = 8\n[ring]\nheap = 1G,0,0,0\n[daemon]\nlog_level = debug\n", &b);
  ck_assert_uint_eq(cfg_diff(&a, &b, report, sizeof(report)),
                    CFG_CHANGED_LIVE | CFG_CHANGED_RESTART);
  ck_assert_str_eq(report,
                   "[daemon] log_level: info -> debug\n"
                   "[device] cores: 4 -> 8 (needs a restart)\n"
                   "[ring] heap: 0,0,0,0 -> 1G,0,0,0\n");

  /* the same setting spelled differently is no change */
  cfg_t c;
  load_ok("[daemon]\nsocket_group = root\n[ring]\nheap = 1G\n", &b);
  load_ok("[daemon]\nsocket_group = 0\n[ring]\nheap = 1G,1G,1G,1073741824\n", &c);
  ck_assert_uint_eq(cfg_diff(&b, &c, report, sizeof(report)), 0);

  /* the report is cut to fit, never overrun */
  char small[10];
  load_ok("[device]\ncores = 8\n", &b);
  ck_assert_uint_eq(cfg_diff(&a, &b, small, sizeof(small)), CFG_CHANGED_RESTART);
  ck_assert_str_eq(small, "[device] ");
  ck_assert_uint_eq(cfg_diff(&a, &b, NULL, 0), CFG_CHANGED_RESTART);
}
END_TEST

/* One value per key, unlike its default. */
static const char *const other_value[][3] = {
    {"daemon", "socket", "/tmp/other.sock"},
    {"daemon", "socket_mode", "0600"},
    {"daemon", "socket_group", "0"},
    {"daemon", "allowed_uids", "0"},
    {"daemon", "allowed_gids", "0"},
    {"daemon", "max_clients", "1"},
    {"daemon", "max_message", "1M"},
    {"daemon", "max_pending", "1"},
    {"daemon", "queue_depth", "1"},
    {"daemon", "spin_us", "0"},
    {"daemon", "priority_aging", "1s"},
    {"daemon", "drain_timeout", "1s"},
    {"daemon", "client_timeout", "1s"},
    {"daemon", "output_limit", "1M"},
    {"daemon", "diagnostics_dir", "/tmp"},
    {"daemon", "diagnostics_max_bytes", "1M"},
    {"daemon", "diagnostics_max_files", "3"},
    {"daemon", "log_level", "err"},
    {"daemon", "queue_full", "busy"},
    {"daemon", "input_limit", "1M"},
    {"daemon", "clients_memory", "1G"},
    {"daemon", "max_objects", "1000"},
    {"daemon", "idle_timeout", "5s"},
    {"daemon", "shm_limit", "1G"},
    {"daemon", "shm_regions", "16"},
    {"daemon", "shm_regions_total", "64"},
    {"daemon", "shm_limit_total", "2G"},
    {"device", "id", "1"},
    {"device", "memory", "1G"},
    {"device", "cores", "1"},
    {"device", "aicpu_thread_num", "3"},
    {"device", "programs", "/tmp"},
    {"device", "run_timeout", "1s"},
    {"device", "deadlock_timeout", "1s"},
    {"metrics", "listen", "127.0.0.1:9464"},
    {"metrics", "textfile", "/var/lib/node_exporter/ptod.prom"},
    {"metrics", "textfile_interval", "60s"},
    {"ring", "task_window", "4"},
    {"ring", "heap", "1K"},
    {"ring", "dep_pool", "4"},
    {"prewarm", "task_window", "4"},
    {"prewarm", "heap", "1K"},
    {"prewarm", "dep_pool", "4"},
};

START_TEST(diff_every_key) {
  cfg_t a = defaults();
  size_t n;
  cfg_key_table(&n);
  size_t covered = 0;
  for (size_t i = 0; i < sizeof(other_value) / sizeof(other_value[0]); i++) {
    const cfg_key_t *k = cfg_key_find(other_value[i][0], other_value[i][1]);
    ck_assert_ptr_nonnull(k);
    cfg_t b;
    char text[256], report[1024], line[128];
    snprintf(text, sizeof(text), "[%s]\n%s = %s\n", k->section, k->name, other_value[i][2]);
    load_ok(text, &b);
    unsigned want = cfg_key_live(k) ? CFG_CHANGED_LIVE : CFG_CHANGED_RESTART;
    ck_assert_msg(cfg_diff(&a, &b, report, sizeof(report)) == want, "%s: %s", k->name, report);
    snprintf(line, sizeof(line), "[%s] %s: ", k->section, k->name);
    ck_assert_msg(strstr(report, line) != NULL, "%s", report);

    /* a reload keeps the running value of a restart key, takes a live one */
    cfg_t merged;
    cfg_merge_live(&a, &b, &merged);
    ck_assert_uint_eq(cfg_diff(cfg_key_live(k) ? &b : &a, &merged, report, sizeof(report)), 0);
    covered++;
  }
  /* every key but platform (it has one value so far) */
  ck_assert_uint_eq(covered, n - 1);
}
END_TEST

START_TEST(merge_live_mixed) {
  cfg_t running = defaults(), loaded, merged;
  load_ok(
      "[daemon]\nmax_clients = 512\nsocket_mode = 0600\n[device]\ncores = 8\nid = 2\n"
      "[ring]\nheap = 1G\n",
      &loaded);
  cfg_merge_live(&running, &loaded, &merged);
  ck_assert_uint_eq(merged.daemon.max_clients, 512);
  ck_assert_uint_eq(merged.ring.value[PTO_FIELD_HEAP][0], UINT64_C(1) << 30);
  ck_assert_uint_eq(merged.daemon.socket_mode, 0660);
  ck_assert_uint_eq(merged.device.cores, 4);
  ck_assert_uint_eq(merged.device.id, 0);
  ck_assert_str_eq(merged.daemon.socket, running.daemon.socket);
}
END_TEST

/* ---- the shipped example and the docs ----------------------------------------------- */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f != NULL, "cannot open %s", path);
  char *buf = NULL;
  size_t len = 0;
  FILE *m = open_memstream(&buf, &len);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) fwrite(chunk, 1, n, m);
  fclose(f);
  fclose(m);
  return buf;
}

/* The text between "[section]" (a line of its own) and the next section. */
static const char *section_text(const char *text, const char *prefix, const char *section,
                                size_t *ret_len) {
  char header[64];
  snprintf(header, sizeof(header), "\n%s[%s]", prefix, section);
  const char *start = strstr(text, header);
  if (!start) return NULL;
  start += strlen(header);
  char next[16];
  snprintf(next, sizeof(next), "\n%s[", prefix);
  const char *end = strstr(start, next);
  *ret_len = end ? (size_t)(end - start) : strlen(start);
  return start;
}

static bool contains(const char *s, size_t len, const char *needle) {
  size_t n = strlen(needle);
  for (size_t i = 0; i + n <= len; i++)
    if (memcmp(s + i, needle, n) == 0) return true;
  return false;
}

START_TEST(example_config_documents_every_key) {
  char *text = slurp(PTOD_SOURCE_DIR "/systemd/ptod.conf");
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++) {
    const cfg_key_t *k = &keys[i];
    size_t len;
    const char *sec = section_text(text, "", k->section, &len);
    ck_assert_msg(sec != NULL, "ptod.conf has no [%s]", k->section);
    char line[256];
    /* the default, commented out; the built-in socket and programs paths
     * depend on the user and the install prefix, so only the key is checked */
    if (k->type == CFG_T_SOCKET || strcmp(k->name, "programs") == 0)
      snprintf(line, sizeof(line), "\n# %s = ", k->name);
    else
      snprintf(line, sizeof(line), "\n# %s =%s%s\n", k->name, k->def[0] ? " " : "", k->def);
    ck_assert_msg(contains(sec, len, line), "ptod.conf [%s] lacks \"%s\"", k->section, line + 1);
  }

  /* as shipped it loads and is the defaults */
  cfg_t cfg, def = defaults();
  pto_error_t err;
  ck_assert_msg(cfg_load(PTOD_SOURCE_DIR "/systemd/ptod.conf", &cfg, &err) == 0, "%s", err.message);
  char report[1024];
  ck_assert_msg(cfg_diff(&def, &cfg, report, sizeof(report)) == 0, "%s", report);

  /* and with every default uncommented, it is still the defaults */
  char *out = NULL;
  size_t outlen = 0;
  FILE *m = open_memstream(&out, &outlen);
  char section[32] = "";
  for (char *p = text, *nl; *p; p = nl + 1) {
    nl = strchr(p, '\n');
    if (!nl) nl = p + strlen(p) - 1;
    size_t l = (size_t)(nl - p) + 1;
    if (p[0] == '[') sscanf(p, "[%31[^]]", section);
    char name[64];
    if (sscanf(p, "# %63[a-z_] = ", name) == 1) {
      const cfg_key_t *k = cfg_key_find(section, name);
      if (k && k->type != CFG_T_SOCKET && strcmp(name, "programs") != 0) {
        p += 2;
        l -= 2;
      }
    }
    fwrite(p, 1, l, m);
    if (!nl[0] || !nl[1]) break;
  }
  fclose(m);
  write_text(conf_path, out);
  free(out);
  ck_assert_msg(cfg_load(conf_path, &cfg, &err) == 0, "%s", err.message);
  ck_assert_msg(cfg_diff(&def, &cfg, report, sizeof(report)) == 0, "%s", report);
  free(text);
}
END_TEST

START_TEST(docs_document_every_key) {
  char *text = slurp(PTOD_SOURCE_DIR "/docs/configuration.md");
  size_t n;
  const cfg_key_t *keys = cfg_key_table(&n);
  for (size_t i = 0; i < n; i++) {
    const cfg_key_t *k = &keys[i];
    size_t len;
    const char *sec = section_text(text, "## ", k->section, &len);
    ck_assert_msg(sec != NULL, "configuration.md has no \"## [%s]\"", k->section);
    char row[128];
    snprintf(row, sizeof(row), "\n| `%s` |", k->name);
    ck_assert_msg(contains(sec, len, row), "configuration.md [%s] lacks a row for %s", k->section,
                  k->name);
    /* the row names the default and whether a reload applies it */
    const char *r = strstr(sec, row) + 1;
    const char *end = strchr(r, '\n');
    size_t rlen = end ? (size_t)(end - r) : strlen(r);
    char def[128];
    snprintf(def, sizeof(def), "`%s`", k->def);
    if (k->def[0] && strcmp(k->name, "programs") != 0)
      ck_assert_msg(contains(r, rlen, def), "%s: default %s missing", k->name, def);
    ck_assert_msg(contains(r, rlen, cfg_key_live(k) ? "| live |" : "| restart |"), "%s: reload",
                  k->name);
  }
  static const char *const musts[] = {"78", "PTO2_RING_TASK_WINDOW", "PTO2_RING_HEAP",
                                      "PTO2_RING_DEP_POOL", "--check-config"};
  for (size_t i = 0; i < sizeof(musts) / sizeof(musts[0]); i++)
    ck_assert_msg(strstr(text, musts[i]) != NULL, "configuration.md lacks %s", musts[i]);
  free(text);
}
END_TEST

/* ---- the built-in socket path ---------------------------------------------------- */

START_TEST(socket_paths) {
  char buf[PTO_SOCKET_PATH_MAX];
  ck_assert_int_eq(pto_socket_path_for(0, NULL, NULL, 0, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/run/ptod/ptod0.sock");
  ck_assert_int_eq(pto_socket_path_for(0, NULL, "/run/user/0", 5, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/run/ptod/ptod5.sock"); /* root ignores XDG_RUNTIME_DIR */
  ck_assert_int_eq(pto_socket_path_for(1000, NULL, "/run/user/1000", 3, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/run/user/1000/ptod/ptod3.sock");
  ck_assert_int_eq(pto_socket_path_for(1000, NULL, "run/user/1000", 1, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/tmp/ptod-1000/ptod1.sock"); /* not absolute: ignored */
  ck_assert_int_eq(pto_socket_path_for(1000, NULL, "", 1, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/tmp/ptod-1000/ptod1.sock");
  ck_assert_int_eq(pto_socket_path_for(4294967294u, NULL, NULL, 255, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/tmp/ptod-4294967294/ptod255.sock");

  /* a systemd service (ptod@.service: User=ptod, RuntimeDirectory=ptod) */
  ck_assert_int_eq(pto_socket_path_for(999, "/run/ptod", "/run/user/999", 2, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/run/ptod/ptod2.sock");
  ck_assert_int_eq(pto_socket_path_for(999, "/run/a:/run/b", NULL, 2, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/tmp/ptod-999/ptod2.sock"); /* a list: not ours to pick from */
  ck_assert_int_eq(pto_socket_path_for(0, "/run/elsewhere", NULL, 2, buf, sizeof(buf)), 0);
  ck_assert_str_eq(buf, "/run/ptod/ptod2.sock"); /* root keeps /run/ptod */

  ck_assert_int_eq(pto_socket_path_for(0, NULL, NULL, 256, buf, sizeof(buf)), -EINVAL);
  ck_assert_int_eq(pto_socket_path_for(0, NULL, NULL, -1, buf, sizeof(buf)), -EINVAL);
  ck_assert_int_eq(pto_socket_path_for(0, NULL, NULL, 0, buf, 10), -ENAMETOOLONG);
  ck_assert_str_eq(buf, "");
  /* fits the buffer but not a socket address */
  char xdg[120], big[256];
  xdg[0] = '/';
  memset(xdg + 1, 'x', 100);
  xdg[101] = '\0';
  ck_assert_int_eq(pto_socket_path_for(1000, NULL, xdg, 0, big, sizeof(big)), -ENAMETOOLONG);
  ck_assert_str_eq(big, "");

  char want[PTO_SOCKET_PATH_MAX];
  ck_assert_int_eq(pto_default_socket_path(2, buf, sizeof(buf)), 0);
  ck_assert_int_eq(pto_socket_path_for(geteuid(), getenv("RUNTIME_DIRECTORY"),
                                       getenv("XDG_RUNTIME_DIR"), 2, want, sizeof(want)),
                   0);
  /* A client finds this user's socket path when nothing listens anywhere. */
  ck_assert_int_eq(pto_socket_path_for(geteuid(), NULL, getenv("XDG_RUNTIME_DIR"), 2, want,
                                       sizeof(want)),
                   0);
  ck_assert_int_eq(pto_find_socket_path(2, buf, sizeof(buf), NULL, 0), 0);
  ck_assert_str_eq(buf, want);
  ck_assert_str_eq(buf, want);
}
END_TEST

/* A Unix socket bound at path (the fd stays open). */
static int bind_socket_at(const char *path) {
  struct sockaddr_un sa = {.sun_family = AF_UNIX};
  int fd = socket(AF_UNIX, SOCK_STREAM, 0);
  ck_assert_int_ge(fd, 0);
  snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  return fd;
}

static void assert_trust(const char *path, const uid_t *owners, size_t n, pto_socket_trust_t want,
                         const char *why_has) {
  char why[256];
  ck_assert_int_eq(pto_socket_trust(path, owners, n, why, sizeof why), want);
  if (why_has) ck_assert_msg(strstr(why, why_has), "'%s' lacks '%s'", why, why_has);
}

/* Who a client trusts at a built-in path: a socket another uid could have
 * put there is refused with a reason (the planted-socket attack of issue
 * 18; the chown cases need root, as the test suite runs). */
START_TEST(socket_trust) {
  char sdir[] = "/tmp/ptod-trust-XXXXXX", sock[64], link[64], file[64];
  uid_t me = geteuid(), other = 54321, both[2] = {0, 54321};
  int fd;
  ck_assert_ptr_nonnull(mkdtemp(sdir));
  snprintf(sock, sizeof sock, "%s/ptod0.sock", sdir);
  snprintf(link, sizeof link, "%s-link/ptod0.sock", sdir);
  snprintf(file, sizeof file, "%s/ptod1.sock", sdir);
  assert_trust(sock, &me, 1, PTO_SOCKET_ABSENT, NULL);
  fd = bind_socket_at(sock);
  assert_trust(sock, &me, 1, PTO_SOCKET_TRUSTED, NULL);
  ck_assert_int_eq(chmod(sdir, 01777), 0); /* sticky does not help */
  assert_trust(sock, &me, 1, PTO_SOCKET_UNTRUSTED, "(mode 1777) is writable by others");
  ck_assert_int_eq(chmod(sdir, 0700), 0);
  {
    char l[64];
    snprintf(l, sizeof l, "%s-link", sdir);
    ck_assert_int_eq(symlink(sdir, l), 0);
    assert_trust(link, &me, 1, PTO_SOCKET_UNTRUSTED, "is not a directory");
    unlink(l);
  }
  close(open(file, O_CREAT | O_WRONLY, 0600));
  assert_trust(file, &me, 1, PTO_SOCKET_UNTRUSTED, "is not a socket");
  if (me == 0) {
    ck_assert_int_eq(chown(sock, other, (gid_t)-1), 0);
    assert_trust(sock, &me, 1, PTO_SOCKET_UNTRUSTED, "the socket belongs to uid 54321");
    ck_assert_int_eq(chown(sdir, other, (gid_t)-1), 0);
    assert_trust(sock, &me, 1, PTO_SOCKET_UNTRUSTED, "belongs to uid 54321");
    assert_trust(sock, both, 2, PTO_SOCKET_TRUSTED, NULL); /* root or the daemon's user */
  }
  close(fd);
  unlink(sock);
  unlink(file);
  ck_assert_int_eq(rmdir(sdir), 0);
}
END_TEST

/* ---- ptod --check-config, end to end ------------------------------------------------ */

#define PTOD PTOD_BINARY_DIR "/daemon/ptod"

typedef struct run {
  int status;
  char *out, *err;
} run_t;

/* Run ptod with args and exactly the environment given (no inherited
 * PTO2_RING_*), its output in files. */
static run_t run_ptod(const char *const argv[], const char *const envp[]) {
  char out_path[160], err_path[160];
  snprintf(out_path, sizeof(out_path), "%s/out", dir);
  snprintf(err_path, sizeof(err_path), "%s/err", dir);
  ck_assert_msg(access(PTOD, X_OK) == 0, "%s is not built", PTOD);
  pid_t pid = fork();
  ck_assert_int_ge(pid, 0);
  if (pid == 0) {
    int o = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    int e = open(err_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0) _exit(127);
    execve(PTOD, (char *const *)argv, (char *const *)envp);
    _exit(127);
  }
  run_t r;
  ck_assert_int_eq(waitpid(pid, &r.status, 0), pid);
  r.out = slurp(out_path);
  r.err = slurp(err_path);
  return r;
}

static void run_free(run_t *r) {
  free(r->out);
  free(r->err);
}

/* `ptod --check-config path` with envp, which must find the configuration
 * bad: exit 78, nothing on stdout.  The caller checks stderr. */
static run_t check_config_fails(const char *path, const char *const envp[]) {
  const char *argv[] = {PTOD, "--check-config", path, NULL};
  run_t r = run_ptod(argv, envp);
  ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 78, "status %d: %s", r.status,
                r.err);
  ck_assert_str_eq(r.out, "");
  return r;
}

START_TEST(check_config_good_file) {
  write_text(conf_path, "[ring]\nheap = 512M\n[prewarm]\ntask_window = 256\n");
  const char *argv[] = {PTOD, "--check-config", conf_path, NULL};
  const char *envp[] = {"PATH=/usr/bin:/bin", "PTO2_RING_DEP_POOL=0,0,0,131072", NULL};
  run_t r = run_ptod(argv, envp);
  ck_assert_msg(WIFEXITED(r.status) && WEXITSTATUS(r.status) == 0, "status %d: %s", r.status,
                r.err);
  ck_assert_str_eq(r.err, "");
  ck_assert_ptr_nonnull(strstr(r.out, "\n[ring]\ntask_window = 0,0,0,0 ; unset\nheap = 512M\n"));
  ck_assert_ptr_nonnull(strstr(
      r.out,
      "#   heap = [512 MiB (config), 512 MiB (config), 512 MiB (config), 512 MiB (config)]"));
  ck_assert_ptr_nonnull(strstr(
      r.out, "#   dep_pool = [16384 (default), 16384 (default), 16384 (default), 131072 (env)]"));
  ck_assert_ptr_nonnull(strstr(
      r.out, "#   task_window = [256 (prewarm), 256 (prewarm), 256 (prewarm), 256 (prewarm)]"));
  run_free(&r);
}
END_TEST

START_TEST(check_config_bad_file) {
  write_text(conf_path, "# ptod\n[ring]\nheap = 1000\n");
  const char *envp[] = {"PATH=/usr/bin:/bin", NULL};
  run_t r = check_config_fails(conf_path, envp);
  char want[512];
  snprintf(want, sizeof(want),
           "ptod: %s:3: [ring] heap = 1000: ring_heap must be a power of 2 >= 1024 (bytes per "
           "ring), got 1000\n",
           conf_path);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "stderr: %s", r.err);
  run_free(&r);

  /* a missing file is a configuration error too */
  char missing[160];
  snprintf(missing, sizeof(missing), "%s/missing.conf", dir);
  r = check_config_fails(missing, envp);
  ck_assert_ptr_nonnull(strstr(r.err, "No such file or directory"));
  run_free(&r);
}
END_TEST

START_TEST(check_config_bad_environment) {
  write_text(conf_path, "[ring]\nheap = 512M\n");
  const char *envp[] = {"PATH=/usr/bin:/bin", "PTO2_RING_HEAP=1000", NULL};
  run_t r = check_config_fails(conf_path, envp);
  const char *want =
      "ptod: PTO2_RING_HEAP: ring_heap must be a power of 2 >= 1024 (bytes per "
      "ring), got 1000\n";
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "stderr: %s", r.err);
  run_free(&r);

  const char *envp2[] = {"PTO2_RING_TASK_WINDOW=64,64,64", NULL};
  r = check_config_fails(conf_path, envp2);
  ck_assert_ptr_nonnull(strstr(r.err,
                               "ptod: PTO2_RING_TASK_WINDOW: ring_task_window must have "
                               "exactly 4 entries (one per scope-depth ring), got 3\n"));
  run_free(&r);
}
END_TEST

/* Every problem of the file, one message each, then the environment's. */
START_TEST(check_config_reports_every_problem) {
  write_text(conf_path, "[daemon]\nmax_clients = 0\nbogus = 1\n[ring]\nheap = 1000\njunk\n");
  const char *envp[] = {"PATH=/usr/bin:/bin", "PTO2_RING_HEAP=1000", NULL};
  run_t r = check_config_fails(conf_path, envp);
  char want[2048];
  snprintf(want, sizeof(want),
           "ptod: %s:2: [daemon] max_clients = 0: expected an integer from 1 to 65536.\n"
           "ptod: %s:3: [daemon] bogus = 1: unknown key; the keys of [daemon] are ",
           conf_path, conf_path);
  ck_assert_msg(strncmp(r.err, want, strlen(want)) == 0, "stderr: %s", r.err);
  snprintf(want, sizeof(want),
           "\nptod: %s:5: [ring] heap = 1000: ring_heap must be a power of 2 >= 1024 (bytes per "
           "ring), got 1000\n"
           "ptod: Use 1024 or a larger power of 2.\n"
           "ptod: %s:6: expected a [section] header, a key = value line or a comment, got "
           "\"junk\".\n"
           "ptod: PTO2_RING_HEAP: ring_heap must be a power of 2 >= 1024 (bytes per ring), got "
           "1000\n",
           conf_path, conf_path);
  ck_assert_msg(strstr(r.err, want) != NULL, "stderr: %s", r.err);
  unsigned lines = 0;
  for (const char *p = r.err; *p; p++) lines += *p == '\n';
  ck_assert_uint_eq(lines, 7); /* with the two hints */
  run_free(&r);
}
END_TEST

/* ---- suites --------------------------------------------------------------------------- */

static Suite *config_suite(void) {
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("load");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, table_is_sound);
  tcase_add_test(tc, restart_keys);
  tcase_add_test(tc, builtin_defaults);
  tcase_add_test(tc, defaults_are_their_own_text);
  tcase_add_test(tc, every_key_parsed);
  tcase_add_test(tc, value_forms);
  tcase_add_test(tc, file_syntax_accepted);
  tcase_add_test(tc, socket_follows_device_id);
  tcase_add_test(tc, bad_values_rejected);
  tcase_add_test(tc, ring_error_has_hint);
  tcase_add_test(tc, too_many_ids);
  tcase_add_test(tc, socket_path_too_long);
  tcase_add_test(tc, unknown_sections_and_keys);
  tcase_add_test(tc, duplicates_rejected);
  tcase_add_test(tc, syntax_errors);
  tcase_add_test(tc, report_every_problem);
  tcase_add_test(tc, report_counts_past_the_cap);
  tcase_add_test(tc, unreadable_files);
  suite_add_tcase(s, tc);

  tc = tcase_create("use");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, prewarm_overlays_baseline);
  tcase_add_test(tc, print_shows_everything);
  tcase_add_test(tc, print_reads_back);
  tcase_add_test(tc, diff_classifies);
  tcase_add_test(tc, diff_every_key);
  tcase_add_test(tc, merge_live_mixed);
  tcase_add_test(tc, example_config_documents_every_key);
  tcase_add_test(tc, docs_document_every_key);
  tcase_add_test(tc, socket_paths);
  tcase_add_test(tc, socket_trust);
  suite_add_tcase(s, tc);
  return s;
}

static Suite *e2e_suite(void) {
  Suite *s = suite_create("check-config");
  TCase *tc = tcase_create("ptod");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, check_config_good_file);
  tcase_add_test(tc, check_config_bad_file);
  tcase_add_test(tc, check_config_bad_environment);
  tcase_add_test(tc, check_config_reports_every_problem);
  suite_add_tcase(s, tc);
  return s;
}

int main(int argc, char **argv) {
  bool e2e = argc > 1 && strcmp(argv[1], "--e2e") == 0;
  return pto_check_run(e2e ? e2e_suite() : config_suite());
}
