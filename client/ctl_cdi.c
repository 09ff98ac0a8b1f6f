/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl cdi generate — a Container Device Interface (CDI) spec for ptod.
 *
 * One CDI device per ptod instance, named by its device number: requesting
 * `ptod.internal/device=N` bind-mounts the host directory HOST_DIR/N, which
 * holds only device N's socket (ptodN.sock), at CONTAINER_DIR/N, and sets
 * PTOD_SOCKET_N to the socket's path in the container.  A directory, not
 * the socket file: a restarted daemon's socket is a new inode, which a file
 * mount would not follow.  One variable per device, so a container given
 * several devices reaches each by its number and no device's edits
 * overwrite another's.
 *
 * cdiVersion 0.5.0 (what Debian 12's podman 4.3 and its CDI library read):
 * only its fields (no annotations, no additionalGIDs), device names that
 * start with a digit (allowed since 0.5.0), mount type (since 0.4.0), and a
 * class without dots (dots need 0.6.0).  JSON, which the engines read as
 * .json files in /etc/cdi or /var/run/cdi.
 */
#include "ctl_cdi.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl.h"
#include "ctl_args.h"
#include "ctl_json.h"
#include "paths.h"

#define CDI_VERSION "0.5.0"
#define CDI_DEFAULT_DIR "/run/ptod"
#define CDI_MAX_DEVICES 256

typedef struct cdi_opts {
  bool device[CDI_MAX_DEVICES]; /* the devices the spec names */
  int ndevices;
  char host_dir[PATH_MAX], container_dir[PATH_MAX]; /* no trailing '/' ("" is /) */
  const char *kind, *output;
} cdi_opts_t;

static void cdi_usage(FILE *f) {
  fprintf(f,
          "Usage: ptoctl cdi generate [OPTION]...\n"
          "\n"
          "Write a CDI spec (cdiVersion " CDI_VERSION ") naming one device per ptod instance:\n"
          "requesting KIND=N (podman run --device " CTL_CDI_KIND "=N) bind-mounts the host\n"
          "directory HOST_DIR/N, which holds device N's socket ptodN.sock, at\n"
          "CONTAINER_DIR/N and sets PTOD_SOCKET_N to the socket's path there.\n"
          "\n"
          "Options:\n"
          "  -d, --device N          a device to name (repeatable); default: every\n"
          "                          HOST_DIR/N directory there is now\n"
          "      --host-dir DIR      the host's socket directories (default " CDI_DEFAULT_DIR ")\n"
          "      --container-dir DIR where they appear in a container (default " CDI_DEFAULT_DIR
          ")\n"
          "      --kind VENDOR/CLASS the CDI kind (default " CTL_CDI_KIND ")\n"
          "  -o, --output FILE       write FILE (replaced atomically, mode 0644), e.g.\n"
          "                          /etc/cdi/ptod.json; default: stdout\n"
          "  -h, --help\n"
          "See ptoctl(1) and docs/operations.md, \"Running on a cluster\".\n");
}

/* Says fmt on stderr; returns -code (code: CTL_EXIT_*), as every function
 * here that can fail returns 0 or -CTL_EXIT_*. */
static int cdi_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int cdi_error(int code, const char *fmt, ...) {
  va_list ap;
  fputs("ptoctl cdi: ", stderr);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
  if (code == CTL_EXIT_USAGE) fputs("Try 'ptoctl cdi --help'.\n", stderr);
  return -code;
}

/* CDI's rule for a vendor or class name: ASCII letters, digits, '_', '-'
 * and '.', starting with a letter and ending with a letter or digit. */
static bool cdi_name_ok(const char *s, size_t len) {
  if (len == 0 || !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z'))) return false;
  for (size_t i = 0; i < len; i++) {
    char c = s[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && (i == len - 1 || (c != '_' && c != '-' && c != '.'))) return false;
  }
  return true;
}

static int check_kind(const char *kind) {
  const char *slash = strchr(kind, '/');
  if (!slash || !cdi_name_ok(kind, (size_t)(slash - kind)) ||
      !cdi_name_ok(slash + 1, strlen(slash + 1)))
    return cdi_error(CTL_EXIT_USAGE,
                     "--kind '%s' must be VENDOR/CLASS, each of letters, digits, '_', '-' and "
                     "'.', starting with a letter and ending with a letter or digit.",
                     kind);
  if (strchr(slash + 1, '.'))
    return cdi_error(CTL_EXIT_USAGE,
                     "--kind '%s': a class with '.' needs cdiVersion 0.6.0; this spec is "
                     CDI_VERSION ", which Debian 12's podman reads. Use a class without dots.",
                     kind);
  return 0;
}

/* An absolute directory into dst without trailing slashes. */
static int set_dir(const char *opt, const char *dir, char *dst, size_t len) {
  size_t n = strlen(dir);
  if (dir[0] != '/')
    return cdi_error(CTL_EXIT_USAGE, "--%s '%s' must be an absolute path.", opt, dir);
  if (strchr(dir, ',') || strchr(dir, ':'))
    return cdi_error(CTL_EXIT_USAGE, "--%s '%s' must not contain ',' or ':' (mount syntax).", opt,
                     dir);
  while (n > 0 && dir[n - 1] == '/') n--;
  if (n >= len) return cdi_error(CTL_EXIT_USAGE, "--%s '%s' is too long.", opt, dir);
  memcpy(dst, dir, n);
  dst[n] = '\0';
  return 0;
}

/* A device number as CDI names it and ptod numbers it: 0..255, decimal,
 * no sign, no leading zeros.  -1 otherwise. */
static int device_number(const char *s) {
  char *end = NULL;
  long v;
  if (s[0] < '0' || s[0] > '9' || (s[0] == '0' && s[1])) return -1;
  errno = 0;
  v = strtol(s, &end, 10);
  return errno || *end || v > 255 ? -1 : (int)v;
}

static void add_device(cdi_opts_t *o, int n) {
  if (!o->device[n]) o->ndevices++;
  o->device[n] = true;
}

/* Every HOST_DIR/N directory there is. */
static int find_devices(cdi_opts_t *o) {
  const char *dir = o->host_dir[0] ? o->host_dir : "/";
  DIR *d = opendir(dir);
  struct dirent *e;
  if (!d)
    return cdi_error(CTL_EXIT_FILE, "Cannot list '%s': %s; name the devices with --device N.",
                     dir, strerror(errno));
  while ((e = readdir(d)) != NULL) {
    char path[PATH_MAX + 264];
    struct stat st;
    int n = device_number(e->d_name);
    if (n < 0) continue;
    snprintf(path, sizeof(path), "%s/%s", o->host_dir, e->d_name);
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) add_device(o, n);
  }
  closedir(d);
  if (o->ndevices == 0)
    return cdi_error(CTL_EXIT_FILE,
                     "No device directory under '%s' (device N's socket directory is %s/N): "
                     "start ptod with that layout (docs/operations.md, \"Running on a "
                     "cluster\"), or name the devices with --device N.",
                     dir, o->host_dir);
  return 0;
}

/* Every device's socket path in the container must fit a Unix address. */
static int check_socket_paths(const cdi_opts_t *o) {
  for (int n = 0; n < CDI_MAX_DEVICES; n++) {
    char path[PATH_MAX + 32];
    if (!o->device[n]) continue;
    snprintf(path, sizeof(path), "%s/%d/ptod%d.sock", o->container_dir, n, n);
    if (strlen(path) >= PTO_SOCKET_PATH_MAX)
      return cdi_error(CTL_EXIT_USAGE,
                       "Device %d's socket in the container, '%s', is longer than a Unix socket "
                       "path can be (%d bytes); use a shorter --container-dir.",
                       n, path, PTO_SOCKET_PATH_MAX - 1);
  }
  return 0;
}

static void write_device(json_t *j, const cdi_opts_t *o, int n) {
  char name[8], buf[PATH_MAX + 64];
  snprintf(name, sizeof(name), "%d", n);
  json_begin_object(j);
  json_key(j, "name");
  json_cstr(j, name);
  json_key(j, "containerEdits");
  json_begin_object(j);
  json_key(j, "env");
  json_begin_array(j);
  snprintf(buf, sizeof(buf), "PTOD_SOCKET_%d=%s/%d/ptod%d.sock", n, o->container_dir, n, n);
  json_cstr(j, buf);
  json_end_array(j);
  json_key(j, "mounts");
  json_begin_array(j);
  json_begin_object(j);
  json_key(j, "hostPath");
  snprintf(buf, sizeof(buf), "%s/%d", o->host_dir, n);
  json_cstr(j, buf);
  json_key(j, "containerPath");
  snprintf(buf, sizeof(buf), "%s/%d", o->container_dir, n);
  json_cstr(j, buf);
  json_key(j, "type");
  json_cstr(j, "bind");
  json_key(j, "options");
  json_begin_array(j);
  json_cstr(j, "bind");
  json_cstr(j, "nosuid");
  json_cstr(j, "nodev");
  json_cstr(j, "noexec");
  json_end_array(j);
  json_end_object(j);
  json_end_array(j);
  json_end_object(j);
  json_end_object(j);
}

static void write_spec(const cdi_opts_t *o, FILE *f) {
  json_t j;
  json_init(&j, f);
  json_begin_object(&j);
  json_key(&j, "cdiVersion");
  json_cstr(&j, CDI_VERSION);
  json_key(&j, "kind");
  json_cstr(&j, o->kind);
  json_key(&j, "devices");
  json_begin_array(&j);
  for (int n = 0; n < CDI_MAX_DEVICES; n++)
    if (o->device[n]) write_device(&j, o, n);
  json_end_array(&j);
  json_end_object(&j);
  json_finish(&j);
}

/* The spec into o->output through a temporary file in its directory, so an
 * engine reading the file sees the old spec or the new one, whole. */
static int write_output(const cdi_opts_t *o) {
  char tmp[PATH_MAX];
  FILE *f;
  int fd, ok;
  if (snprintf(tmp, sizeof(tmp), "%s.XXXXXX", o->output) >= (int)sizeof(tmp))
    return cdi_error(CTL_EXIT_USAGE, "--output '%s' is too long.", o->output);
  fd = mkostemp(tmp, O_CLOEXEC);
  if (fd < 0)
    return cdi_error(CTL_EXIT_FILE, "Cannot create a file beside '%s': %s.", o->output,
                     strerror(errno));
  f = fdopen(fd, "w");
  if (!f) {
    close(fd);
    unlink(tmp);
    return cdi_error(CTL_EXIT_FILE, "Cannot write '%s': %s.", tmp, strerror(errno));
  }
  write_spec(o, f);
  ok = fchmod(fd, 0644) == 0 && fflush(f) == 0 && fsync(fd) == 0;
  ok = (fclose(f) == 0) && ok;
  if (!ok || rename(tmp, o->output) < 0) {
    int e = errno;
    unlink(tmp);
    return cdi_error(CTL_EXIT_FILE, "Cannot write '%s': %s.", o->output, strerror(e));
  }
  return 0;
}

/* Options into o; the words left must be exactly "generate".  1: --help
 * was shown. */
static int parse(int argc, char **argv, cdi_opts_t *o) {
  enum { OPT_HOST_DIR = 256, OPT_CONTAINER_DIR, OPT_KIND };
  static const struct option options[] = {
      {"device", required_argument, NULL, 'd'},
      {"host-dir", required_argument, NULL, OPT_HOST_DIR},
      {"container-dir", required_argument, NULL, OPT_CONTAINER_DIR},
      {"kind", required_argument, NULL, OPT_KIND},
      {"output", required_argument, NULL, 'o'},
      {"help", no_argument, NULL, 'h'},
      {NULL, 0, NULL, 0},
  };
  int opt, n, rc = 0;
  opterr = 0;
  while (rc == 0 && (opt = getopt_long(argc, argv, ":d:o:h", options, NULL)) != -1) {
    switch (opt) {
      case 'd':
        n = device_number(optarg);
        if (n < 0)
          return cdi_error(CTL_EXIT_USAGE, "--device '%s' must be a number in 0..255.", optarg);
        add_device(o, n);
        break;
      case OPT_HOST_DIR: rc = set_dir("host-dir", optarg, o->host_dir, sizeof(o->host_dir)); break;
      case OPT_CONTAINER_DIR:
        rc = set_dir("container-dir", optarg, o->container_dir, sizeof(o->container_dir));
        break;
      case OPT_KIND: o->kind = optarg; break;
      case 'o': o->output = optarg; break;
      case 'h': cdi_usage(stdout); return 1;
      case ':': return cdi_error(CTL_EXIT_USAGE, "Option '%s' needs a value.", argv[optind - 1]);
      default: return cdi_error(CTL_EXIT_USAGE, "Unknown option '%s'.", argv[optind - 1]);
    }
  }
  if (rc) return rc;
  if (optind >= argc) return cdi_error(CTL_EXIT_USAGE, "No subcommand given (generate).");
  if (strcmp(argv[optind], "generate") != 0)
    return cdi_error(CTL_EXIT_USAGE, "Unknown subcommand '%s' (generate).", argv[optind]);
  if (optind + 1 < argc)
    return cdi_error(CTL_EXIT_USAGE, "'generate' takes no arguments, got '%s'.",
                     argv[optind + 1]);
  return 0;
}

int ctl_cdi_main(int argc, char **argv) {
  static cdi_opts_t o;
  int rc;
  memset(&o, 0, sizeof(o));
  o.kind = CTL_CDI_KIND;
  snprintf(o.host_dir, sizeof(o.host_dir), "%s", CDI_DEFAULT_DIR);
  snprintf(o.container_dir, sizeof(o.container_dir), "%s", CDI_DEFAULT_DIR);
  rc = parse(argc, argv, &o);
  if (rc > 0) return CTL_EXIT_OK;
  if (rc == 0) rc = check_kind(o.kind);
  if (rc == 0 && o.ndevices == 0) rc = find_devices(&o);
  if (rc == 0) rc = check_socket_paths(&o);
  if (rc == 0 && !o.output) {
    write_spec(&o, stdout);
    if (fflush(stdout) != 0) rc = cdi_error(CTL_EXIT_FILE, "Cannot write the spec to stdout.");
  } else if (rc == 0) {
    rc = write_output(&o);
  }
  return -rc;
}

/* `cdi` after options or other words: it reads options of its own. */
int ctl_cdi_misplaced(ctl_t *c) {
  (void)c;
  return ctl_usage_error("'cdi' must come first and takes its own options: ptoctl cdi generate "
                         "[OPTION]... (ptoctl cdi --help).");
}
