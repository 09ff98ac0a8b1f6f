/* SPDX-License-Identifier: Apache-2.0 */
/* dfx_files.c — a dispatch's DFX artefacts as files in diagnostics_dir,
 * within its quota: see dfx_save in dfx.h. */
#include "dfx.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"

static const char *const file_names[3][2] = {
    {"swimlane", "json"}, {"scope_stats", "jsonl"}, {"dep_graph", "dot"}};

/* An artefact file found in the directory. */
typedef struct found {
  char name[NAME_MAX + 1];
  struct timespec mtime;
  uint64_t bytes;
} found_t;

typedef struct found_list {
  found_t *v;
  size_t n, cap;
  uint64_t bytes;
} found_list_t;

/* Whether name is one ptod gives an artefact: <kind>-<pid>-<seq>.<ext>. */
static bool is_artefact(const char *name) {
  for (int w = 0; w < 3; w++) {
    size_t k = strlen(file_names[w][0]);
    const char *s = name + k, *dot;
    if (strncmp(name, file_names[w][0], k) != 0 || *s != '-') continue;
    dot = strrchr(s, '.');
    if (!dot || strcmp(dot + 1, file_names[w][1]) != 0) continue;
    for (s++; s < dot && (*s == '-' || (*s >= '0' && *s <= '9')); s++) {
    }
    if (s == dot) return true;
  }
  return false;
}

static bool found_add(found_list_t *l, const char *name, const struct stat *st) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 64;
    found_t *grown = realloc(l->v, cap * sizeof *grown);
    if (!grown) return false;
    l->v = grown;
    l->cap = cap;
  }
  snprintf(l->v[l->n].name, sizeof l->v[0].name, "%s", name);
  l->v[l->n].mtime = st->st_mtim;
  l->v[l->n].bytes = (uint64_t)st->st_size;
  l->bytes += (uint64_t)st->st_size;
  l->n++;
  return true;
}

static int by_age(const void *pa, const void *pb) {
  const found_t *a = pa, *b = pb;
  if (a->mtime.tv_sec != b->mtime.tv_sec) return a->mtime.tv_sec < b->mtime.tv_sec ? -1 : 1;
  if (a->mtime.tv_nsec != b->mtime.tv_nsec) return a->mtime.tv_nsec < b->mtime.tv_nsec ? -1 : 1;
  return strcmp(a->name, b->name);
}

/* The artefact files (regular, ours) in the directory open as dfd. */
static int list_artefacts(int dfd, found_list_t *l) {
  int fd = dup(dfd);
  DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
  struct dirent *e;
  if (!d) {
    if (fd >= 0) close(fd);
    return -errno;
  }
  while ((e = readdir(d))) {
    struct stat st;
    if (!is_artefact(e->d_name) || fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
        !S_ISREG(st.st_mode) || st.st_uid != geteuid())
      continue;
    if (!found_add(l, e->d_name, &st)) {
      closedir(d);
      return -ENOMEM;
    }
  }
  closedir(d);
  if (l->n) qsort(l->v, l->n, sizeof *l->v, by_age);
  return 0;
}

/* Remove the oldest artefacts until `bytes` more in `files` more files fit
 * the quota.  Returns how many were removed, or -errno. */
static int make_room(int dfd, const dfx_dir_t *dir, uint64_t bytes, uint32_t files) {
  found_list_t l = {0};
  size_t i = 0;
  int rc = list_artefacts(dfd, &l);
  for (; rc == 0 && i < l.n; i++) {
    if (l.n - i + files <= dir->max_files && l.bytes + bytes <= dir->max_bytes) break;
    if (unlinkat(dfd, l.v[i].name, 0) < 0 && errno != ENOENT) rc = -errno;
    l.bytes -= l.v[i].bytes;
  }
  free(l.v);
  return rc < 0 ? rc : (int)i;
}

/* Write one artefact as a new file (O_EXCL | O_NOFOLLOW: never a link
 * planted there).  0 or -errno. */
static int write_one(int dfd, const char *name, const char *text, size_t len) {
  size_t off = 0;
  int rc = 0, fd = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) return -errno;
  while (off < len) {
    ssize_t n = write(fd, text + off, len - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      rc = n < 0 ? -errno : -EIO;
      break;
    }
    off += (size_t)n;
  }
  if (close(fd) < 0 && !rc) rc = -errno;
  return rc;
}

/* The name comes from the daemon alone: its pid (a restarted daemon never
 * reuses one) and the dispatch's number. */
static int write_all(int dfd, const dfx_artefacts_t *a, uint64_t seq) {
  char name[NAME_MAX + 1];
  int rc = 0;
  for (int w = 0; w < 3; w++) {
    int one;
    if (!a->text[w]) continue;
    snprintf(name, sizeof name, "%s-%ld-%" PRIu64 ".%s", file_names[w][0], (long)getpid(), seq,
             file_names[w][1]);
    one = write_one(dfd, name, a->text[w], a->len[w]);
    rc = rc ? rc : one;
  }
  return rc;
}

void dfx_save(const dfx_artefacts_t *a, const dfx_dir_t *dir, uint64_t seq,
              const dfx_subject_t *who, char *ret_where, size_t len) {
  const char *tag = who->tag ? who->tag : "", *paren = who->tag ? " (" : "",
             *end = who->tag ? ")" : "";
  uint64_t bytes = 0;
  uint32_t files = 0;
  int dfd, removed = 0, rc;
  ret_where[0] = '\0';
  for (int w = 0; w < 3; w++)
    if (a->text[w]) bytes += a->len[w], files++;
  if (bytes > dir->max_bytes || files > dir->max_files) {
    log_client(LOG_WARNING,
               "The DFX artefacts of dispatch %" PRIu64 "%s%s%s (%" PRIu64 " bytes) do not fit in "
               "diagnostics_max_bytes = %" PRIu64 "; not written to '%s'.",
               seq, paren, tag, end, bytes, dir->max_bytes, dir->path);
    return;
  }
  dfd = open(dir->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  rc = dfd < 0 ? -errno : make_room(dfd, dir, bytes, files);
  if (rc >= 0) {
    removed = rc;
    rc = write_all(dfd, a, seq);
  }
  if (dfd >= 0) close(dfd);
  snprintf(ret_where, len, "%s/*-%ld-%" PRIu64 ".*", dir->path, (long)getpid(), seq);
  if (rc < 0) {
    log_client(LOG_WARNING, "Failed to write the DFX artefacts of dispatch %" PRIu64 "%s%s%s to "
               "'%s': %s, ignoring.", seq, paren, tag, end, ret_where, strerror(-rc));
    ret_where[0] = '\0';
    return;
  }
  log_client(LOG_INFO, "Wrote the DFX artefacts of dispatch %" PRIu64 "%s%s%s to '%s'%s.", seq,
             paren, tag, end, ret_where,
             removed ? " (removed the oldest to stay within the diagnostics quota)" : "");
}
