/* SPDX-License-Identifier: Apache-2.0 */
/* config.h — the daemon's configuration file: INI (libinih) -> cfg_t.
 *
 * One row per key (config.c's key table): section, name, value type with its
 * range and units, where the value is kept in cfg_t, its default, a one-line
 * doc and how a reload applies it (cfg_apply_t).  The value type's row
 * (config_value.c) parses and formats it.  The parser, the defaults,
 * cfg_print (--check-config), cfg_diff, cfg_merge_live and the reload's
 * appliers (cfg_live_changes) all walk those rows, and the tests check
 * systemd/ptod.conf and docs/configuration.md against them.  A new key is
 * its member in cfg_t and its row; the tests then ask for its line in
 * docs/configuration.md and its commented default in systemd/ptod.conf.
 *
 * The file, and why it is strict: a knob is never silently dropped.
 *   - Only the sections [daemon], [device], [ring] and [prewarm], and only the
 *     keys of the table.  Anything else, a key outside a section, or a key
 *     set twice is an error.
 *   - Comments: lines starting with ; or #, and " ; text" after a value.
 *   - Leading blanks are ignored (no multi-line values).  A line is at most
 *     CFG_LINE_MAX characters.  The file is at most CFG_FILE_MAX bytes.
 *   - Sizes: decimal bytes, or a number ending in K, M or G (binary, upper
 *     case).  Durations: a number ending in ms or s; a bare number is
 *     seconds, as systemd reads it.  Integers are checked against the range.
 *   - [ring] task_window, heap, dep_pool: the sizing baseline, one value for
 *     all four rings or four comma-separated (0 = unset for that ring), as
 *     pto_sizing_parse_config reads it.  [prewarm]: the same keys; its
 *     non-zero values overlay the resolved baseline like a request does, and
 *     without them the prewarm sizing is the resolved baseline.
 *   - User and group names are resolved when the file is loaded: a name
 *     that does not exist is an error then, not when a peer connects.
 *   - Directories (programs, diagnostics_dir) must be absolute; whether they
 *     exist is checked by whoever uses them, when the daemon starts.
 * Every error message reads "FILE:LINE: [section] key = value: why", e.g.
 *   ptod.conf:12: [ring] heap = 1000: ring_heap must be a power of 2 >= 1024 (bytes per ring), got
 * 1000 with err->key "section.key" ("ring.heap") and err->hint set where there is more to say.
 *
 * cfg_t is a plain value: fixed-size strings, no pointers, nothing to free.
 * Copy it with =.  Nothing here logs; nothing keeps state between calls.
 */
#ifndef PTOD_CONFIG_H
#define PTOD_CONFIG_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <pto/errors.h>
#include <pto/sizing.h>

#include "paths.h"

#define CFG_LINE_MAX 196        /* characters of one line, without its newline */
#define CFG_FILE_MAX (1u << 20) /* bytes of the whole file */
#define CFG_MAX_IDS 64          /* entries of allowed_uids / allowed_gids */
#define CFG_NAME_MAX 64         /* a user or group name, NUL included */
#define CFG_NO_GID UINT32_MAX   /* socket_group unset: the daemon's primary group */

/* A group given by name or number; gid CFG_NO_GID when unset. */
typedef struct cfg_group {
  uint32_t gid;
  char name[CFG_NAME_MAX]; /* as written when it was a name, else "" */
} cfg_group_t;

/* allowed_uids / allowed_gids: resolved numbers, in the order written. */
typedef struct cfg_ids {
  uint32_t count; /* 0: any peer that can open the socket */
  uint32_t id[CFG_MAX_IDS];
} cfg_ids_t;

typedef struct cfg_daemon {
  char socket[PTO_SOCKET_PATH_MAX]; /* always set after load: the file's, or the built-in path */
  uint32_t socket_mode;             /* permission bits, never o+w */
  cfg_group_t socket_group;
  cfg_ids_t allowed_uids;
  cfg_ids_t allowed_gids;
  uint32_t max_clients;
  uint64_t max_message;           /* bytes */
  uint32_t max_pending;           /* requests in flight per connection */
  uint32_t queue_depth;           /* device requests waiting, all connections */
  uint32_t queue_full;            /* cfg_queue_full_t */
  uint64_t input_limit;           /* bytes of input and decoded requests per connection */
  uint64_t clients_memory;        /* bytes held for all clients together */
  uint32_t max_objects;           /* msgpack objects per message */
  uint64_t shm_limit;             /* bytes of shm regions mapped per connection */
  uint32_t shm_regions;           /* shm regions per connection */
  uint32_t shm_regions_total;     /* shm regions of all connections together */
  uint64_t shm_limit_total;       /* bytes of shm regions of all connections together */
  uint64_t idle_timeout_ms;       /* 0: connections may idle forever */
  uint32_t spin_us;               /* hand-off spin window (dsp_set_spin_us) */
  uint64_t priority_aging_ms;     /* waited this long: runs as priority -8; 0: never */
  uint64_t drain_timeout_ms;      /* SIGTERM: how long the running dispatch may take */
  uint64_t client_timeout_ms;     /* from a message's first byte to its last */
  uint64_t output_limit;          /* bytes of unsent responses per client */
  char diagnostics_dir[PATH_MAX]; /* "" = write no diagnostic files */
  uint64_t diagnostics_max_bytes; /* DFX files kept there: bytes ... */
  uint32_t diagnostics_max_files; /* ... and files, oldest removed first */
  int log_level;                  /* LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO or LOG_DEBUG */
} cfg_daemon_t;

typedef enum cfg_queue_full {
  CFG_QUEUE_WAIT = 0, /* beyond queue_depth, requests wait in their connection */
  CFG_QUEUE_BUSY = 1, /* beyond queue_depth, requests are answered BUSY */
} cfg_queue_full_t;

typedef struct cfg_device {
  uint32_t id; /* 0..255 */
  char platform[16];
  uint64_t memory; /* bytes */
  uint32_t cores;
  uint32_t aicpu_thread_num;
  char programs[PATH_MAX];
  uint64_t run_timeout_ms;
  uint64_t deadlock_timeout_ms;
} cfg_device_t;

/* [metrics]: the ways out besides the `metrics` method (metrics_feed.h). */
typedef struct cfg_metrics {
  char listen[PTO_SOCKET_PATH_MAX]; /* HOST:PORT or a Unix socket path; "" = no HTTP endpoint */
  char textfile[PATH_MAX];          /* node_exporter textfile; "" = none */
  uint64_t textfile_interval_ms;
} cfg_metrics_t;

typedef struct cfg {
  cfg_daemon_t daemon;
  cfg_device_t device;
  cfg_metrics_t metrics;
  pto_sizing_t ring;    /* [ring]: the config level of the precedence chain */
  pto_sizing_t prewarm; /* [prewarm]: overlay on the resolved baseline, 0 = keep */
} cfg_t;

typedef enum cfg_type {
  CFG_T_SOCKET,   /* absolute path that fits a Unix socket address; "" = built-in */
  CFG_T_DIR,      /* absolute path, or "" where the key allows it */
  CFG_T_MODE,     /* octal permission bits */
  CFG_T_GROUP,    /* group name or number, "" = unset */
  CFG_T_UIDS,     /* comma list of user names or numbers */
  CFG_T_GIDS,     /* comma list of group names or numbers */
  CFG_T_UINT,     /* uint32_t in [min, max] */
  CFG_T_SIZE,     /* uint64_t bytes in [min, max] */
  CFG_T_DURATION, /* uint64_t milliseconds in [min, max] */
  CFG_T_LOGLEVEL, /* int, syslog priority */
  CFG_T_QUEUE_FULL, /* uint32_t cfg_queue_full_t: wait or busy */
  CFG_T_PLATFORM, /* char[16], a known platform */
  CFG_T_RING,     /* uint64_t[4], one row of a pto_sizing_t */
  CFG_T_LISTEN,   /* HOST:PORT or an absolute Unix socket path; "" = off */
  CFG_T_FILE,     /* absolute file path; "" = none */
} cfg_type_t;

/* How a reload applies a key (ptod.c runs one applier per class that
 * changed, once). */
typedef enum cfg_apply {
  CFG_APPLY_RESTART = 0, /* not at all: it keeps its running value until a restart */
  CFG_APPLY_SERVER,      /* the server's options (srv_update_options) */
  CFG_APPLY_LOG_LEVEL,   /* log_set_level */
  CFG_APPLY_SPIN,        /* the dispatcher's spin window */
  CFG_APPLY_QUEUE,       /* the dispatcher's queue capacity */
  CFG_APPLY_WHERE_USED,  /* read from the running cfg_t where it is used */
  CFG_APPLY_COUNT
} cfg_apply_t;

typedef struct cfg_key {
  const char *section;
  const char *name;
  cfg_type_t type;
  size_t offset; /* of the value in cfg_t */
  size_t size;   /* of the value */
  uint64_t min, max;
  int field;         /* CFG_T_RING: the pto_ring_field_t */
  cfg_apply_t apply; /* how a reload applies it */
  const char *def;   /* the default as config text; "" for socket means the built-in path */
  const char *doc;   /* one line for ptod.conf and docs/configuration.md */
} cfg_key_t;

/* Whether a reload applies the key (else it needs a restart). */
static inline bool cfg_key_live(const cfg_key_t *k) { return k->apply != CFG_APPLY_RESTART; }

/* The key table, in file order; *ret_count gets its length, at most
 * CFG_KEYS_MAX. */
#define CFG_KEYS_MAX 64
const cfg_key_t *cfg_key_table(size_t *ret_count);
/* One key by section and name; NULL if there is none. */
const cfg_key_t *cfg_key_find(const char *section, const char *name);

/* Built-in defaults: every key at its table default, the socket at the
 * built-in path for device 0 (pto_default_socket_path), and the programs
 * directory of this install: PTOD_DEFAULT_PROGRAMS_DIR, which when relative
 * is taken from the directory of the executable (/proc/self/exe). */
void cfg_defaults(cfg_t *ret_cfg);

/* Read the file at path over the defaults (path NULL: the defaults alone).
 * Returns 0, or -PTO_E_INVALID_CONFIG with the message in ret_err (a file
 * that cannot be read is reported the same way).  *ret_cfg is written only
 * on success. */
int cfg_load(const char *path, cfg_t *ret_cfg, pto_error_t *ret_err);

/* One problem cfg_load_report found: the message ("FILE:LINE: [section]
 * key = value: why"), the key it concerns and a hint, as cfg_load's ret_err
 * has them. */
typedef void cfg_problem_fn(const pto_error_t *problem, void *user);

/* cfg_load that reports every problem of the file, not only the first:
 * each one to report (may be NULL), in file order, on the calling thread,
 * before it returns; past CFG_PROBLEMS_SHOWN of them, one last message
 * counts the rest.  ret_err gets the first, as from cfg_load. */
#define CFG_PROBLEMS_SHOWN 100
int cfg_load_report(const char *path, cfg_t *ret_cfg, pto_error_t *ret_err, cfg_problem_fn *report,
                    void *user);

/* The baseline sizing (env over [ring] over the defaults) and the prewarm
 * sizing ([prewarm] over that, its entries carrying PTO_SOURCE_REQUEST: the
 * prewarm plays the first request).  env is the PTO2_RING_* level
 * (pto_sizing_from_environ), NULL for none.  Either output may be NULL. */
void cfg_resolve_sizings(const cfg_t *cfg, const pto_sizing_t *env,
                         pto_sizing_resolved_t *ret_baseline, pto_sizing_resolved_t *ret_prewarm);

/* The value of one key as config text that reads back to the same value
 * ("64M", "30s", "0660", "512M,0,0,0").  Returns what snprintf returns. */
int cfg_format_value(const cfg_t *cfg, const cfg_key_t *key, char *buf, size_t len);

/* The effective configuration as an INI file (every key, with its value),
 * then the resolved baseline and prewarm sizings with the source of every
 * value, as comments.  source_name says where cfg came from ("built-in
 * defaults" when NULL). */
void cfg_print(const cfg_t *cfg, const pto_sizing_t *env, const char *source_name, FILE *out);

/* cfg_diff's result bits. */
#define CFG_CHANGED_LIVE 1u    /* some changed key applies live */
#define CFG_CHANGED_RESTART 2u /* some changed key needs a restart */

/* Compare two configurations key by key.  Returns 0 (nothing changed) or
 * CFG_CHANGED_* bits.  report (may be NULL) gets one line per changed key,
 * "[device] cores: 4 -> 8 (needs a restart)\n", cut to fit len. */
unsigned cfg_diff(const cfg_t *old_cfg, const cfg_t *new_cfg, char *report, size_t len);

/* The apply classes (bits 1u << CFG_APPLY_*) of the live keys whose value
 * differs between old_cfg and new_cfg, compared as cfg_diff compares them. */
unsigned cfg_live_changes(const cfg_t *old_cfg, const cfg_t *new_cfg);

/* What a reload applies: loaded, except that every key that needs a restart
 * keeps its value from running. */
void cfg_merge_live(const cfg_t *running, const cfg_t *loaded, cfg_t *ret_cfg);

#endif
