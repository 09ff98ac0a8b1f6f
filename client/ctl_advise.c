/* ctl_advise.c — ptoctl advise --apply FILE: put the advised [ring] and
 * [prewarm] lines into a ptod config file, show the change as a unified
 * diff, keep the previous file as FILE.orig.
 *
 * Only the keys task_window, heap and dep_pool of those two sections are
 * touched: an active line is replaced in place; a missing one goes after
 * its commented-out default ("# heap = ...") or else after the section's
 * last line; a missing section is appended.  Every other line (comments,
 * other sections, their order) stays as it was.
 */
#include "ctl_advise.h"

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

static int write_lines(const char *path, const lines_t *l, char *msg, size_t len) {
  FILE *f = fopen(path, "w");
  if (!f) {
    snprintf(msg, len, "Cannot write '%s': %s.", path, strerror(errno));
    return -CTL_EXIT_FILE;
  }
  for (size_t i = 0; i < l->n; i++) fprintf(f, "%s\n", l->v[i]);
  if (fclose(f) != 0) {
    snprintf(msg, len, "Cannot write '%s': %s.", path, strerror(errno));
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

int ctl_advise_apply(const pto_advise_t *a, const char *path, char *msg, size_t len) {
  static const char *const keys[] = {"task_window", "heap", "dep_pool"};
  const char *section = NULL;
  lines_t file, advice;
  char tmp[4200], orig[4200];
  int rc, changed;

  rc = read_lines(path, &file, msg, len);
  if (rc < 0) return rc;
  /* The advice is config-file text itself: "[ring]\ntask_window = ...". */
  memset(&advice, 0, sizeof advice);
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
      if (strcmp(name, keys[k]) == 0 && set_key(&file, section, name, value) < 0) {
        lines_free(&file);
        snprintf(msg, len, "Out of memory.");
        return -CTL_EXIT_PROTOCOL;
      }
  }
  snprintf(tmp, sizeof tmp, "%s.advised", path);
  rc = write_lines(tmp, &file, msg, len);
  lines_free(&file);
  if (rc < 0) return rc;
  changed = show_diff(path, tmp, path);
  if (changed == 0) {
    unlink(tmp);
    fprintf(stderr, "ptoctl: '%s' already sets the advised sizing; nothing changed.\n", path);
    return 0;
  }
  snprintf(orig, sizeof orig, "%s.orig", path);
  if (link(path, orig) < 0 && (errno != EEXIST || (unlink(orig) < 0 || link(path, orig) < 0))) {
    snprintf(msg, len, "Cannot keep the previous '%s' as '%s': %s; the advised file is '%s'.",
             path, orig, strerror(errno), tmp);
    return -CTL_EXIT_FILE;
  }
  if (rename(tmp, path) < 0) {
    snprintf(msg, len, "Cannot replace '%s': %s; the advised file is '%s'.", path,
             strerror(errno), tmp);
    return -CTL_EXIT_FILE;
  }
  fprintf(stderr,
          "ptoctl: updated '%s' (the previous version is '%s'). Review the diff above, then "
          "reload ptod (systemctl reload ptod@N): it rebuilds the prewarmed arena.\n",
          path, orig);
  return 0;
}
