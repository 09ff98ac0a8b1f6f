/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_advise.c — ptoctl advise --apply FILE: put the advised [ring] and
 * [prewarm] lines into a ptod config file, show the change as a unified
 * diff, keep the previous file as FILE.orig.
 *
 * Only the keys task_window, heap and dep_pool of those two sections are
 * touched: an active line is replaced in place; a missing one goes after
 * its commented-out default ("# heap = ...") or else after the section's
 * last line; a missing section is appended.  Every other line (comments,
 * other sections, their order) stays as it was.
 *
 * The file is replaced as an editor that cares would: the new text goes
 * to a new FILE.advised beside the file (created with O_EXCL|O_NOFOLLOW,
 * so never through a link planted there), given the file's mode and
 * owner, synced, then renamed over it.  A FILE that is a symbolic link
 * stays one: its target is what is replaced, and .advised / .orig sit
 * beside the target.
 */
#include "ctl_advise.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ctl_args.h"

extern char **environ;

#define MAX_LINES 100000

typedef struct lines {
  char **v;
  size_t n, cap;
} lines_t;

static int lines_insert(lines_t *l, size_t at, const char *text) {
  char *copy = strdup(text);
  if (!copy) return -1;
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    char **grown = realloc(l->v, cap * sizeof *grown);
    if (!grown) {
      free(copy);
      return -1;
    }
    l->v = grown;
    l->cap = cap;
  }
  memmove(&l->v[at + 1], &l->v[at], (l->n - at) * sizeof *l->v);
  l->v[at] = copy;
  l->n++;
  return 0;
}

static void lines_free(lines_t *l) {
  for (size_t i = 0; i < l->n; i++) free(l->v[i]);
  free(l->v);
}

static const char *skip_space(const char *s) {
  while (*s == ' ' || *s == '\t') s++;
  return s;
}

/* Whether line is "[name]" (spaces allowed around). */
static bool is_header(const char *line, const char *name) {
  const char *s = skip_space(line);
  size_t n = strlen(name);
  return s[0] == '[' && strncmp(s + 1, name, n) == 0 && s[1 + n] == ']';
}

static bool is_any_header(const char *line) { return skip_space(line)[0] == '['; }

/* Whether line sets key ("key = ..."), or with commented, "# key = ...". */
static bool sets_key(const char *line, const char *key, bool commented) {
  const char *s = skip_space(line);
  size_t n = strlen(key);
  if (commented) {
    if (*s != '#' && *s != ';') return false;
    s = skip_space(s + 1);
  }
  if (strncmp(s, key, n) != 0) return false;
  s = skip_space(s + n);
  return *s == '=';
}

/* Set key = value in [section]. */
static int set_key(lines_t *l, const char *section, const char *key, const char *value) {
  char line[512];
  size_t head = SIZE_MAX, end, after_comment = SIZE_MAX, last = SIZE_MAX;
  snprintf(line, sizeof line, "%s = %s", key, value);
  for (size_t i = 0; i < l->n && head == SIZE_MAX; i++)
    if (is_header(l->v[i], section)) head = i;
  if (head == SIZE_MAX) {
    char header[64];
    snprintf(header, sizeof header, "[%s]", section);
    if ((l->n && l->v[l->n - 1][0] && lines_insert(l, l->n, "") < 0) ||
        lines_insert(l, l->n, header) < 0)
      return -1;
    return lines_insert(l, l->n, line);
  }
  for (end = head + 1; end < l->n && !is_any_header(l->v[end]); end++) {
    if (sets_key(l->v[end], key, false)) {
      char *copy = strdup(line);
      if (!copy) return -1;
      free(l->v[end]);
      l->v[end] = copy;
      return 0;
    }
    if (sets_key(l->v[end], key, true)) after_comment = end + 1;
    if (skip_space(l->v[end])[0]) last = end;
  }
  /* After its commented-out default, else after the section's last line. */
  return lines_insert(l, after_comment != SIZE_MAX ? after_comment : last != SIZE_MAX ? last + 1 : head + 1,
                      line);
}

static int read_lines(const char *path, lines_t *l, char *msg, size_t len) {
  FILE *f = fopen(path, "r");
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  memset(l, 0, sizeof *l);
  if (!f) {
    snprintf(msg, len, "Cannot read '%s': %s.", path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  while ((n = getline(&line, &cap, f)) >= 0) {
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    if (l->n >= MAX_LINES || lines_insert(l, l->n, line) < 0) {
      snprintf(msg, len, "'%s' is too large for ptoctl to edit.", path);
      free(line);
      fclose(f);
      return -CTL_EXIT_FILE;
    }
  }
  free(line);
  fclose(f);
  return 0;
}

/* Write the lines to a new file at path: created (never opened through a
 * link, never an existing file), given like's mode and owner, synced. */
static int write_lines(const char *path, const lines_t *l, const struct stat *like, char *msg,
                       size_t len) {
  FILE *f;
  int fd, rc = 0;
  if (unlink(path) < 0 && errno != ENOENT) {
    snprintf(msg, len, "Cannot remove the old '%s': %s.", path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0 || !(f = fdopen(fd, "w"))) {
    snprintf(msg, len, "Cannot create '%s': %s.", path, strerror(errno));
    if (fd >= 0) close(fd);
    return -CTL_EXIT_FILE;
  }
  /* Owner first: chown clears set-id bits, fchmod then sets the mode. */
  if ((like->st_uid != geteuid() || like->st_gid != getegid()) &&
      fchown(fd, like->st_uid, like->st_gid) < 0)
    rc = errno;
  if (!rc && fchmod(fd, like->st_mode & 07777) < 0) rc = errno;
  for (size_t i = 0; i < l->n && !rc; i++)
    if (fprintf(f, "%s\n", l->v[i]) < 0) rc = errno ? errno : EIO;
  if (!rc && (fflush(f) != 0 || fsync(fd) != 0)) rc = errno;
  if (fclose(f) != 0 && !rc) rc = errno;
  if (rc) {
    snprintf(msg, len, "Cannot write '%s' with the mode and owner of the file it replaces: %s.",
             path, strerror(rc));
    unlink(path);
    return -CTL_EXIT_FILE;
  }
  return 0;
}

/* diff -u OLD NEW on stdout; returns diff's status (0 same, 1 differ). */
static int show_diff(const char *old_path, const char *new_path, const char *label) {
  char old_label[4200], new_label[4200];
  char *argv[] = {"diff", "-u", "--label", old_label, "--label", new_label,
                  (char *)old_path, (char *)new_path, NULL};
  pid_t pid;
  int status;
  snprintf(old_label, sizeof old_label, "%s (before)", label);
  snprintf(new_label, sizeof new_label, "%s (advised)", label);
  fflush(stdout);
  if (posix_spawnp(&pid, "diff", NULL, NULL, argv, environ) != 0) return -1;
  if (waitpid(pid, &status, 0) < 0 || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

/* The advised sizing of a (config-file text: "[ring]\ntask_window = ...")
 * set into file's lines.  0, or -1 out of memory. */
static int apply_advice(const pto_advise_t *a, lines_t *file) {
  static const char *const keys[] = {"task_window", "heap", "dep_pool"};
  const char *section = NULL;
  for (const char *p = a->config; p && *p;) {
    const char *nl = strchr(p, '\n');
    size_t n = nl ? (size_t)(nl - p) : strlen(p);
    char line[512], name[32], value[256];
    snprintf(line, sizeof line, "%.*s", (int)n, p);
    p += n + (nl ? 1 : 0);
    if (sscanf(line, "[%31[a-z]]", name) == 1) {
      section = strcmp(name, "ring") == 0 ? "ring" : strcmp(name, "prewarm") == 0 ? "prewarm" : NULL;
      continue;
    }
    if (!section || sscanf(line, "%31[a-z_] = %255s", name, value) != 2) continue;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
      if (strcmp(name, keys[k]) == 0 && set_key(file, section, name, value) < 0) return -1;
  }
  return 0;
}

/* The file path names, links followed (a symlinked config stays a link:
 * its target is what gets replaced), and its mode and owner. */
static int resolve(const char *path, char *target, struct stat *st, char *msg, size_t len) {
  if (!realpath(path, target) || stat(target, st) < 0) {
    snprintf(msg, len, "Cannot read '%s': %s.", path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  if (!S_ISREG(st->st_mode)) {
    snprintf(msg, len, "'%s' is not a regular file.", path);
    return -CTL_EXIT_FILE;
  }
  return 0;
}

int ctl_advise_apply(const pto_advise_t *a, const char *path, char *msg, size_t len) {
  lines_t file;
  char target[PATH_MAX], tmp[PATH_MAX + 16], orig[PATH_MAX + 16];
  struct stat st;
  int rc, changed;

  rc = resolve(path, target, &st, msg, len);
  if (rc < 0) return rc;
  rc = read_lines(target, &file, msg, len);
  if (rc < 0) return rc;
  if (apply_advice(a, &file) < 0) {
    lines_free(&file);
    snprintf(msg, len, "Out of memory.");
    return -CTL_EXIT_PROTOCOL;
  }
  /* Beside the target, so that rename() replaces it in one step. */
  snprintf(tmp, sizeof tmp, "%s.advised", target);
  rc = write_lines(tmp, &file, &st, msg, len);
  lines_free(&file);
  if (rc < 0) return rc;
  changed = show_diff(target, tmp, path);
  if (changed == 0) {
    unlink(tmp);
    fprintf(stderr, "ptoctl: '%s' already sets the advised sizing; nothing changed.\n", path);
    return 0;
  }
  snprintf(orig, sizeof orig, "%s.orig", target);
  if (link(target, orig) < 0 &&
      (errno != EEXIST || (unlink(orig) < 0 || link(target, orig) < 0))) {
    snprintf(msg, len, "Cannot keep the previous '%s' as '%s': %s; the advised file is '%s'.",
             path, orig, strerror(errno), tmp);
    return -CTL_EXIT_FILE;
  }
  if (rename(tmp, target) < 0) {
    snprintf(msg, len, "Cannot replace '%s': %s; the advised file is '%s'.", target,
             strerror(errno), tmp);
    return -CTL_EXIT_FILE;
  }
  fprintf(stderr,
          "ptoctl: updated '%s' (the previous version is '%s'). Review the diff above, then "
          "reload ptod (systemctl reload ptod@N): it rebuilds the prewarmed arena.\n",
          path, orig);
  return 0;
}
