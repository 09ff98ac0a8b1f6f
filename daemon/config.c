/* SPDX-License-Identifier: Apache-2.0 */
/* The configuration of config.h: the key rows, and what walks them (the
 * defaults, --check-config's print, a reload's diff, merge and appliers).
 * Reading the file is config_file.c's; the value types are config_value.c's. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config_value.h"

#ifndef PTOD_DEFAULT_PROGRAMS_DIR
#error "PTOD_DEFAULT_PROGRAMS_DIR must name the installed programs directory"
#endif
/* PTOD_DEFAULT_PROGRAMS_DIR is absolute, or relative to the directory of the
 * ptod executable (../lib/<multiarch>/ptod/programs from bin/): then the
 * row's default does not parse and default_programs_dir() fills it in. */
#define PROGRAMS_DIR_IS_RELATIVE (PTOD_DEFAULT_PROGRAMS_DIR[0] != '/')

/* ---- the key rows ---------------------------------------------------------- */

#define MEMBER_SIZE(m) sizeof(((cfg_t *)0)->m)
#define KEY(sec, nm, type, member, min, max, apply, def, doc) \
  { sec, nm, type, offsetof(cfg_t, member), MEMBER_SIZE(member), min, max, -1, apply, def, doc }
#define RING_KEY(sec, nm, member, f, doc)                                                         \
  {                                                                                               \
    sec, nm, CFG_T_RING, offsetof(cfg_t, member.value[f]), MEMBER_SIZE(member.value[f]), 0, 0, f, \
        CFG_APPLY_WHERE_USED, "0,0,0,0", doc                                                      \
  }

#define KIB(n) ((uint64_t)(n) << 10)
#define MIB(n) ((uint64_t)(n) << 20)
#define GIB(n) ((uint64_t)(n) << 30)
#define SECONDS(n) ((uint64_t)(n)*1000)
#define DAY SECONDS(86400)

static const cfg_key_t key_table[] = {
    KEY("daemon", "socket", CFG_T_SOCKET, daemon.socket, 0, 0, CFG_APPLY_RESTART, "",
        "Unix socket to listen on (unset: /run/ptod/ptod<id>.sock for root, else under "
        "$XDG_RUNTIME_DIR or /tmp/ptod-<uid>); ignored when systemd passes the socket."),
    KEY("daemon", "socket_mode", CFG_T_MODE, daemon.socket_mode, 0, 0777, CFG_APPLY_RESTART, "0660",
        "Permission bits of the socket; never world-writable. Use 0600 to admit only the "
        "daemon's user."),
    KEY("daemon", "socket_group", CFG_T_GROUP, daemon.socket_group, 0, 0, CFG_APPLY_RESTART, "",
        "Group (name or number) that owns the socket; unset: the daemon's primary group. Put "
        "the serving processes' users in it."),
    KEY("daemon", "allowed_uids", CFG_T_UIDS, daemon.allowed_uids, 0, 0, CFG_APPLY_SERVER, "",
        "Comma list of users (names or numbers) allowed to connect; empty: any peer that can "
        "open the socket."),
    KEY("daemon", "allowed_gids", CFG_T_GIDS, daemon.allowed_gids, 0, 0, CFG_APPLY_SERVER, "",
        "Comma list of groups (names or numbers) whose members may connect; empty: any peer "
        "that can open the socket."),
    KEY("daemon", "max_clients", CFG_T_UINT, daemon.max_clients, 1, 65536, CFG_APPLY_SERVER, "256",
        "Connections served at once; raise it for many serving processes (mind the open-files "
        "limit)."),
    KEY("daemon", "max_message", CFG_T_SIZE, daemon.max_message, KIB(1), GIB(4), CFG_APPLY_SERVER,
        "64M", "Largest request accepted; raise it to send bigger host inputs in one dispatch."),
    KEY("daemon", "max_pending", CFG_T_UINT, daemon.max_pending, 1, 65536, CFG_APPLY_SERVER, "1024",
        "Requests one connection may have in flight; raise it for clients that pipeline "
        "deeply."),
    KEY("daemon", "queue_depth", CFG_T_UINT, daemon.queue_depth, 1, 65536, CFG_APPLY_QUEUE, "64",
        "Device requests waiting for the device, all connections together; what happens "
        "beyond it is queue_full's choice."),
    KEY("daemon", "queue_full", CFG_T_QUEUE_FULL, daemon.queue_full, 0, 0, CFG_APPLY_QUEUE, "wait",
        "wait: requests beyond queue_depth wait in their connection (reading pauses at "
        "max_pending); busy: they are answered BUSY at once (fail fast)."),
    KEY("daemon", "input_limit", CFG_T_SIZE, daemon.input_limit, KIB(64), GIB(64), CFG_APPLY_SERVER,
        "256M",
        "Bytes one connection's unread input and decoded requests may hold before the daemon "
        "stops reading it (until answers go out); a lone request may always be read."),
    KEY("daemon", "clients_memory", CFG_T_SIZE, daemon.clients_memory, MIB(1), GIB(1024),
        CFG_APPLY_SERVER, "2G",
        "Bytes held for all clients together (input, decoded requests, unsent answers): over "
        "it each connection is read only up to 64 KiB (and one to finish its message), and "
        "unsent answers over it close the client holding the most."),
    KEY("daemon", "shm_limit", CFG_T_SIZE, daemon.shm_limit, 0, GIB(1024), CFG_APPLY_WHERE_USED,
        "16G",
        "Bytes of shared memory (shm.register) one connection may have mapped; 0 turns the "
        "shm path off."),
    KEY("daemon", "shm_regions", CFG_T_UINT, daemon.shm_regions, 1, 65536, CFG_APPLY_WHERE_USED,
        "1024", "Shared-memory regions one connection may have registered (each is a mapping)."),
    KEY("daemon", "shm_regions_total", CFG_T_UINT, daemon.shm_regions_total, 1, 1048576,
        CFG_APPLY_WHERE_USED, "16384",
        "Shared-memory regions of all connections together; keep it well below the kernel's "
        "vm.max_map_count (65530 by default), which the daemon's own mappings share."),
    KEY("daemon", "shm_limit_total", CFG_T_SIZE, daemon.shm_limit_total, MIB(1), GIB(65536),
        CFG_APPLY_WHERE_USED, "64G",
        "Bytes of shared memory of all connections together; each mapping costs the daemon "
        "address space and page tables, whoever's memory it is."),
    KEY("daemon", "max_objects", CFG_T_UINT, daemon.max_objects, 16, UINT32_MAX, CFG_APPLY_SERVER,
        "1048576",
        "msgpack objects in one message (each takes 24 bytes once decoded); a message with more "
        "gets MESSAGE_TOO_LARGE."),
    KEY("daemon", "spin_us", CFG_T_UINT, daemon.spin_us, 0, 10000, CFG_APPLY_SPIN, "50",
        "Microseconds the device thread and the loop stay awake for each other after a "
        "dispatch; 0 leaves the CPU to the serving process at once (each dispatch then pays "
        "a wake-up)."),
    KEY("daemon", "priority_aging", CFG_T_DURATION, daemon.priority_aging_ms, 0, DAY,
        CFG_APPLY_QUEUE, "0",
        "A device request that has waited this long runs as if it had priority -8, so a low "
        "priority is never starved for ever; 0: off (priorities are strict)."),
    KEY("daemon", "drain_timeout", CFG_T_DURATION, daemon.drain_timeout_ms, 0, DAY,
        CFG_APPLY_WHERE_USED, "30s",
        "On SIGTERM, how long the running dispatch may take to finish; keep it below systemd's "
        "TimeoutStopSec."),
    KEY("daemon", "client_timeout", CFG_T_DURATION, daemon.client_timeout_ms, 1, DAY,
        CFG_APPLY_SERVER, "30s",
        "Longest time from a message's first byte to its last; a client slower than that is "
        "disconnected."),
    KEY("daemon", "idle_timeout", CFG_T_DURATION, daemon.idle_timeout_ms, 0, DAY, CFG_APPLY_SERVER,
        "0", "Close connections with nothing pending, read or unsent for this long; 0: never."),
    KEY("daemon", "output_limit", CFG_T_SIZE, daemon.output_limit, KIB(1), UINT64_MAX,
        CFG_APPLY_SERVER, "256M",
        "Bytes of unsent responses a client may hold before it is disconnected; raise it for "
        "large buffer reads by slow readers."),
    KEY("daemon", "diagnostics_dir", CFG_T_DIR, daemon.diagnostics_dir, 0, 1, CFG_APPLY_WHERE_USED,
        "", "Directory for the diagnostic files the daemon may write; empty: none are written."),
    KEY("daemon", "diagnostics_max_bytes", CFG_T_SIZE, daemon.diagnostics_max_bytes, MIB(1),
        GIB(1024), CFG_APPLY_WHERE_USED, "256M",
        "Bytes of DFX files ptod keeps in diagnostics_dir; the oldest are removed to make room, "
        "and a dispatch whose files alone are larger writes none."),
    KEY("daemon", "diagnostics_max_files", CFG_T_UINT, daemon.diagnostics_max_files, 3, 1000000,
        CFG_APPLY_WHERE_USED, "1000",
        "DFX files ptod keeps in diagnostics_dir; the oldest are removed to make room."),
    KEY("daemon", "log_level", CFG_T_LOGLEVEL, daemon.log_level, 0, 0, CFG_APPLY_LOG_LEVEL, "info",
        "One of err, warning, notice, info, debug; debug logs every request."),
    KEY("device", "id", CFG_T_UINT, device.id, 0, 255, CFG_APPLY_RESTART, "0",
        "The device this daemon owns (0..255); one daemon per device."),
    KEY("device", "platform", CFG_T_PLATFORM, device.platform, 0, 0, CFG_APPLY_RESTART, "sim",
        "Device backend; sim (the CPU simulation) is the only one so far."),
    KEY("device", "memory", CFG_T_SIZE, device.memory, MIB(1), GIB(1024), CFG_APPLY_RESTART, "4G",
        "Device memory the arena and resident buffers may use together; set it to what the "
        "device has to spare."),
    KEY("device", "cores", CFG_T_UINT, device.cores, 1, 256, CFG_APPLY_RESTART, "4",
        "Cores that run kernels (threads on sim); match the device, or the host's spare CPUs "
        "on sim."),
    KEY("device", "aicpu_thread_num", CFG_T_UINT, device.aicpu_thread_num, 2, 16, CFG_APPLY_RESTART,
        "4", "Orchestrator plus scheduler threads per dispatch (RunConfig's aicpu_thread_num)."),
    KEY("device", "programs", CFG_T_DIR, device.programs, 1, 1, CFG_APPLY_RESTART,
        PTOD_DEFAULT_PROGRAMS_DIR,
        "Directory of the device program plugins (NAME.so); change it to serve your own "
        "programs."),
    KEY("device", "run_timeout", CFG_T_DURATION, device.run_timeout_ms, 1, DAY,
        CFG_APPLY_WHERE_USED, "10s",
        "A run that makes no progress this long fails with SCHEDULER_TIMEOUT; raise it for "
        "very long kernels."),
    KEY("device", "deadlock_timeout", CFG_T_DURATION, device.deadlock_timeout_ms, 1, SECONDS(3600),
        CFG_APPLY_WHERE_USED, "500ms",
        "How long a submit may wait for ring space with no reclamation before it reports a "
        "deadlock."),
    KEY("metrics", "listen", CFG_T_LISTEN, metrics.listen, 0, 0, CFG_APPLY_RESTART, "",
        "Serve Prometheus metrics over HTTP at /metrics: HOST:PORT (127.0.0.1:9464) or an "
        "absolute Unix socket path; empty: no HTTP endpoint."),
    KEY("metrics", "textfile", CFG_T_FILE, metrics.textfile, 0, 0, CFG_APPLY_RESTART, "",
        "Write the metrics to this file for node_exporter's textfile collector (a NAME.prom in "
        "its directory), atomically; empty: none."),
    KEY("metrics", "textfile_interval", CFG_T_DURATION, metrics.textfile_interval_ms, 1000,
        SECONDS(3600), CFG_APPLY_RESTART, "15s",
        "How often the textfile is rewritten; match the scrape "
        "interval."),
    RING_KEY("ring", "task_window", ring, PTO_FIELD_TASK_WINDOW,
             "Task slots per ring, a power of 2 from 4 to 2^30 (0: PTO2_RING_TASK_WINDOW or the "
             "built-in 16384)."),
    RING_KEY("ring", "heap", ring, PTO_FIELD_HEAP,
             "Output heap bytes per ring, a power of 2 >= 1K (0: PTO2_RING_HEAP or the built-in "
             "256M); raise it on HEAP_RING_DEADLOCK."),
    RING_KEY("ring", "dep_pool", ring, PTO_FIELD_DEP_POOL,
             "Dependency entries per ring, 4 to 2^31-1 (0: PTO2_RING_DEP_POOL or the built-in "
             "16384); raise it on DEP_POOL_OVERFLOW."),
    RING_KEY("prewarm", "task_window", prewarm, PTO_FIELD_TASK_WINDOW,
             "Task window of the arena built at start-up (0: the baseline's); set it to what "
             "the first dispatch asks for."),
    RING_KEY("prewarm", "heap", prewarm, PTO_FIELD_HEAP,
             "Heap of the arena built at start-up (0: the baseline's); set it to what the first "
             "dispatch asks for."),
    RING_KEY("prewarm", "dep_pool", prewarm, PTO_FIELD_DEP_POOL,
             "Dependency pool of the arena built at start-up (0: the baseline's); set it to "
             "what the first dispatch asks for."),
};
#define KEY_COUNT (sizeof(key_table) / sizeof(key_table[0]))
_Static_assert(KEY_COUNT <= CFG_KEYS_MAX, "raise CFG_KEYS_MAX");

const cfg_key_t *cfg_key_table(size_t *ret_count) {
  if (ret_count) *ret_count = KEY_COUNT;
  return key_table;
}

const cfg_key_t *cfg_key_find(const char *section, const char *name) {
  if (!section || !name) return NULL;
  for (size_t i = 0; i < KEY_COUNT; i++)
    if (strcmp(key_table[i].section, section) == 0 && strcmp(key_table[i].name, name) == 0)
      return &key_table[i];
  return NULL;
}

/* Room for any key's value as config text. */
#define VALUE_TEXT_MAX (PATH_MAX + 32)

static const void *value_at(const cfg_t *cfg, const cfg_key_t *k) {
  return (const char *)cfg + k->offset;
}

/* ---- defaults ------------------------------------------------------------ */

/* The programs directory of the install this executable belongs to, found as
 * git's RUNTIME_PREFIX finds its prefix: /proc/self/exe's directory joined
 * with the relative PTOD_DEFAULT_PROGRAMS_DIR, resolved when it exists.
 * Without /proc the relative path is kept, and loading the programs then
 * fails naming it. */
static void default_programs_dir(char *buf, size_t len) {
  char exe[PATH_MAX], real[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  char *slash = n > 0 ? memrchr(exe, '/', (size_t)n) : NULL;
  if (!slash) {
    snprintf(buf, len, "%s", PTOD_DEFAULT_PROGRAMS_DIR);
    return;
  }
  *slash = '\0';
  int w = snprintf(buf, len, "%s/%s", exe, PTOD_DEFAULT_PROGRAMS_DIR);
  if (w > 0 && (size_t)w < len && realpath(buf, real))
    snprintf(buf, len, "%.*s", (int)len - 1, real);
}

void cfg_defaults(cfg_t *ret_cfg) {
  cfg_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  for (size_t i = 0; i < KEY_COUNT; i++) {
    cfg_why_t why;
    /* The rows' defaults are tested to parse; nothing here can fail. */
    (void)cfg_parse_value(&key_table[i], key_table[i].def, (char *)&cfg + key_table[i].offset,
                          &why);
  }
  (void)pto_default_socket_path((int)cfg.device.id, cfg.daemon.socket, sizeof(cfg.daemon.socket));
  if (PROGRAMS_DIR_IS_RELATIVE)
    default_programs_dir(cfg.device.programs, sizeof(cfg.device.programs));
  *ret_cfg = cfg;
}

/* ---- sizings, print, diff ------------------------------------------------ */

void cfg_resolve_sizings(const cfg_t *cfg, const pto_sizing_t *env,
                         pto_sizing_resolved_t *ret_baseline, pto_sizing_resolved_t *ret_prewarm) {
  if (ret_baseline) pto_sizing_resolve(NULL, env, &cfg->ring, ret_baseline);
  if (ret_prewarm) pto_sizing_resolve(&cfg->prewarm, env, &cfg->ring, ret_prewarm);
}

static void print_sizing(FILE *out, const char *title, const pto_sizing_resolved_t *s,
                         const pto_sizing_t *overlay) {
  char hex[17];
  pto_sizing_key_hex(pto_sizing_key(s), hex);
  fprintf(out, "# %s (key %s):\n", title, hex);
  for (int f = 0; f < PTO_FIELD_COUNT; f++) {
    fprintf(out, "#   %s = [", pto_sizing_field_name((pto_ring_field_t)f));
    for (int r = 0; r < PTO_RING_COUNT; r++) {
      char v[32];
      if (f == PTO_FIELD_HEAP)
        pto_size_format(s->value[f][r], v, sizeof(v));
      else
        snprintf(v, sizeof(v), "%" PRIu64, s->value[f][r]);
      const char *src = overlay && overlay->value[f][r]
                            ? "prewarm"
                            : pto_sizing_source_name((pto_sizing_source_t)s->source[f][r]);
      fprintf(out, "%s%s (%s)", r ? ", " : "", v, src);
    }
    fprintf(out, "]\n");
  }
}

void cfg_print(const cfg_t *cfg, const pto_sizing_t *env, const char *source_name, FILE *out) {
  fprintf(out, "# ptod effective configuration (%s)\n",
          source_name ? source_name : "built-in defaults");
  const char *section = "";
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    if (strcmp(section, k->section) != 0) {
      section = k->section;
      fprintf(out, "\n[%s]\n", section);
    }
    char value[VALUE_TEXT_MAX], note[CFG_NAME_MAX];
    cfg_format_value(cfg, k, value, sizeof(value));
    const char *n = cfg_value_note(cfg, k, note, sizeof(note));
    if (n[0])
      fprintf(out, "%s = %s%s; %s\n", k->name, value, value[0] ? " " : "", n);
    else
      fprintf(out, "%s = %s\n", k->name, value);
  }
  pto_sizing_resolved_t baseline, prewarm;
  cfg_resolve_sizings(cfg, env, &baseline, &prewarm);
  fprintf(out,
          "\n# Resolved sizings, per ring 0..3 (request > PTO2_RING_* environment > [ring] > "
          "built-in default):\n");
  print_sizing(out, "baseline", &baseline, NULL);
  print_sizing(out, pto_sizing_equal(&baseline, &prewarm) ? "prewarm, the baseline" : "prewarm",
               &prewarm, &cfg->prewarm);
}

/* Whether k's value differs between a and b, with both values as text in
 * ta and tb.  Names resolve to the same ids, paths and values print the
 * same: what prints the same is the same setting. */
static bool key_changed(const cfg_key_t *k, const cfg_t *a, const cfg_t *b, char *ta, char *tb,
                        size_t len) {
  if (memcmp(value_at(a, k), value_at(b, k), k->size) == 0) return false;
  cfg_format_value(a, k, ta, len);
  cfg_format_value(b, k, tb, len);
  return strcmp(ta, tb) != 0;
}

unsigned cfg_diff(const cfg_t *old_cfg, const cfg_t *new_cfg, char *report, size_t len) {
  unsigned changed = 0;
  size_t pos = 0;
  if (report && len) report[0] = '\0';
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    char a[VALUE_TEXT_MAX], b[VALUE_TEXT_MAX];
    if (!key_changed(k, old_cfg, new_cfg, a, b, sizeof(a))) continue;
    bool live = cfg_key_live(k);
    changed |= live ? CFG_CHANGED_LIVE : CFG_CHANGED_RESTART;
    cfg_append(report, len, &pos, "[%s] %s: %s -> %s%s\n", k->section, k->name, a[0] ? a : "\"\"",
               b[0] ? b : "\"\"", live ? "" : " (needs a restart)");
  }
  return changed;
}

unsigned cfg_live_changes(const cfg_t *old_cfg, const cfg_t *new_cfg) {
  unsigned classes = 0;
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    char a[VALUE_TEXT_MAX], b[VALUE_TEXT_MAX];
    if (cfg_key_live(k) && key_changed(k, old_cfg, new_cfg, a, b, sizeof(a)))
      classes |= 1u << k->apply;
  }
  return classes;
}

void cfg_merge_live(const cfg_t *running, const cfg_t *loaded, cfg_t *ret_cfg) {
  cfg_t out = *loaded;
  for (size_t i = 0; i < KEY_COUNT; i++) {
    const cfg_key_t *k = &key_table[i];
    if (!cfg_key_live(k)) memcpy((char *)&out + k->offset, value_at(running, k), k->size);
  }
  *ret_cfg = out;
}
