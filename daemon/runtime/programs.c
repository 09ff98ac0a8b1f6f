/* SPDX-License-Identifier: Apache-2.0 */
/* programs.c — dlopen-based program loading. */
#include "programs.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

typedef struct progs_loaded {
  char name[PROGS_NAME_MAX + 1];
  void *handle;
  const pto_program_t *prog;
  pto_cost_fn cost; /* its optional pto_program_cost, or NULL */
} progs_loaded_t;

struct rt_programs {
  char *dir;
  pthread_mutex_t lock;
  progs_loaded_t *v;
  size_t n, cap;
};

bool progs_name_valid(const char *name) {
  size_t n = 0;
  if (!name) return false;
  for (; name[n]; n++) {
    char c = name[n];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-';
    if (!ok || n >= PROGS_NAME_MAX) return false;
  }
  return n > 0;
}

/* The name as it may be quoted in a message: at most 64 characters,
 * anything unprintable as '?'. */
static void progs_quote(const char *name, char out[PROGS_NAME_MAX + 4]) {
  size_t i = 0;
  for (; name && name[i] && i < PROGS_NAME_MAX; i++)
    out[i] = (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
  if (name && name[i]) {
    memcpy(out + i, "...", 3);
    i += 3;
  }
  out[i] = '\0';
}

int progs_open(const char *dir, rt_programs_t **ret_progs) {
  rt_programs_t *p = calloc(1, sizeof *p);
  if (!p) return -ENOMEM;
  p->dir = strdup(dir);
  if (!p->dir) {
    free(p);
    return -ENOMEM;
  }
  pthread_mutex_init(&p->lock, NULL);
  *ret_progs = p;
  return 0;
}

void progs_close(rt_programs_t *p) {
  if (!p) return;
  for (size_t i = 0; i < p->n; i++) dlclose(p->v[i].handle);
  free(p->v);
  pthread_mutex_destroy(&p->lock);
  free(p->dir);
  free(p);
}

/* Load DIR/NAME.so and check it; the lock is held. */
static int progs_load(rt_programs_t *p, const char *name, const pto_program_t **ret_prog,
                      pto_error_t *err) {
  char path[PATH_MAX];
  struct stat st;
  void *h;
  const pto_program_t *prog;
  uint32_t abi;
  progs_loaded_t *nv;

  if (snprintf(path, sizeof path, "%s/%s.so", p->dir, name) >= (int)sizeof path)
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "The path of program '%s' in '%s' is too long; use a shorter programs "
                         "directory.",
                         name, p->dir);
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "No program '%s': there is no file '%s'; the programs method lists the "
                         "programs this ptod has.",
                         name, path);
  dlerror();
  h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char *why = dlerror();
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "Program '%s' could not be loaded from '%s': %s; rebuild it against "
                         "pto/program.h.",
                         name, path, why ? why : "unknown dlopen error");
  }
  prog = dlsym(h, PTO_PROGRAM_SYMBOL);
  if (!prog) {
    dlclose(h);
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "Program '%s' ('%s') does not export the symbol '%s'; declare it with "
                         "PTO_PROGRAM_EXPORT.",
                         name, path, PTO_PROGRAM_SYMBOL);
  }
  /* Only the first field is common to every ABI version. */
  memcpy(&abi, prog, sizeof abi);
  if (abi != PTO_PROGRAM_ABI_VERSION) {
    dlclose(h);
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "program '%s' was built for program ABI %u; this ptod speaks ABI %u "
                         "(rebuild it against this ptod's pto/program.h).",
                         name, abi, PTO_PROGRAM_ABI_VERSION);
  }
  if (!prog->name || strcmp(prog->name, name) != 0) {
    char shown[PROGS_NAME_MAX + 4];
    progs_quote(prog->name, shown);
    dlclose(h);
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "Program file '%s' names itself '%s'; the name field must equal the "
                         "file name without '.so' ('%s').",
                         path, shown, name);
  }
  if (!prog->orchestrate || (prog->nargs && !prog->args)) {
    dlclose(h);
    return pto_error_set(err, PTO_E_UNKNOWN_PROGRAM,
                         "Program '%s' ('%s') has no %s; fill every field of pto_program.", name,
                         path, prog->orchestrate ? "argument list" : "orchestration function");
  }
  if (p->n == p->cap) {
    size_t cap = p->cap ? p->cap * 2 : 8;
    nv = realloc(p->v, cap * sizeof *nv);
    if (!nv) {
      dlclose(h);
      return pto_error_set(err, PTO_E_INTERNAL, "Out of host memory loading program '%s'.", name);
    }
    p->v = nv;
    p->cap = cap;
  }
  snprintf(p->v[p->n].name, sizeof p->v[p->n].name, "%s", name);
  p->v[p->n].handle = h;
  p->v[p->n].prog = prog;
  /* A function pointer from dlsym's object pointer (POSIX allows it). */
  *(void **)&p->v[p->n].cost = dlsym(h, PTO_PROGRAM_COST_SYMBOL);
  p->n++;
  *ret_prog = prog;
  return 0;
}

int progs_get(rt_programs_t *p, const char *name, const pto_program_t **ret_prog,
              pto_error_t *err) {
  int rc;
  if (!progs_name_valid(name)) {
    char shown[PROGS_NAME_MAX + 4];
    progs_quote(name, shown);
    return pto_error_set(err, PTO_E_INVALID_REQUEST,
                         "Program name '%s' is not valid: a program name is 1 to %d characters "
                         "from A-Z, a-z, 0-9, '_' and '-', never a path.",
                         shown, PROGS_NAME_MAX);
  }
  pthread_mutex_lock(&p->lock);
  for (size_t i = 0; i < p->n; i++)
    if (strcmp(p->v[i].name, name) == 0) {
      *ret_prog = p->v[i].prog;
      pthread_mutex_unlock(&p->lock);
      return 0;
    }
  rc = progs_load(p, name, ret_prog, err);
  pthread_mutex_unlock(&p->lock);
  return rc;
}

pto_cost_fn progs_cost_fn(rt_programs_t *p, const pto_program_t *prog) {
  pto_cost_fn cost = NULL;
  pthread_mutex_lock(&p->lock);
  for (size_t i = 0; i < p->n; i++)
    if (p->v[i].prog == prog) {
      cost = p->v[i].cost;
      break;
    }
  pthread_mutex_unlock(&p->lock);
  return cost;
}

static int progs_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int progs_foreach(rt_programs_t *p, rt_program_cb cb, void *data) {
  DIR *d = opendir(p->dir);
  struct dirent *de;
  char **names = NULL;
  size_t n = 0, cap = 0;
  int rc = 0;

  if (!d) return -errno;
  while ((de = readdir(d)) != NULL) {
    size_t len = strlen(de->d_name);
    char *name;
    if (len <= 3 || strcmp(de->d_name + len - 3, ".so") != 0) continue;
    name = strndup(de->d_name, len - 3);
    if (!name) {
      rc = -ENOMEM;
      break;
    }
    if (!progs_name_valid(name)) {
      free(name);
      continue;
    }
    if (n == cap) {
      char **nn = realloc(names, (cap ? cap * 2 : 16) * sizeof *nn);
      if (!nn) {
        free(name);
        rc = -ENOMEM;
        break;
      }
      names = nn;
      cap = cap ? cap * 2 : 16;
    }
    names[n++] = name;
  }
  closedir(d);
  if (rc == 0) {
    if (n > 1) qsort(names, n, sizeof *names, progs_cmp); /* names is NULL when n is 0 */
    for (size_t i = 0; i < n; i++) {
      const pto_program_t *prog = NULL;
      pto_error_t e;
      pto_error_clear(&e);
      if (progs_get(p, names[i], &prog, &e) < 0) prog = NULL;
      cb(data, names[i], prog, prog ? NULL : &e);
    }
  }
  for (size_t i = 0; i < n; i++) free(names[i]);
  free(names);
  return rc;
}
