/* SPDX-License-Identifier: Apache-2.0 */
/* programs.h — the program loader: bare names to dlopen'ed plugins.
 *
 * A program NAME is the shared object DIR/NAME.so exporting the data symbol
 * `pto_program` (include/pto/program.h).  Names are checked before the
 * file system is touched: 1..64 characters of [A-Za-z0-9_-], so no name
 * can be a path.  A program is loaded once and kept until progs_close;
 * loads that fail are not cached (the file may be fixed and tried again).
 * Thread-safe (one mutex).
 */
#ifndef PTOD_RT_PROGRAMS_H
#define PTOD_RT_PROGRAMS_H

#include <stdbool.h>

#include "rt_internal.h"

#define PROGS_NAME_MAX 64

/* Whether `name` is a valid program name. */
bool progs_name_valid(const char *name);

/* A loader for `dir` (copied; need not exist yet).  -ENOMEM. */
int progs_open(const char *dir, rt_programs_t **ret_progs);
/* dlclose every program.  NULL is accepted. */
void progs_close(rt_programs_t *progs);

/* See rt_program_get in runtime.h for the errors. */
int progs_get(rt_programs_t *progs, const char *name, const pto_program_t **ret_prog,
              pto_error_t *err);

/* The `pto_program_cost` of the loaded program `prog` (pto/program.h), or
 * NULL: it exports none, or is not one of these programs. */
pto_cost_fn progs_cost_fn(rt_programs_t *progs, const pto_program_t *prog);

/* See rt_programs_foreach in runtime.h. */
int progs_foreach(rt_programs_t *progs, rt_program_cb cb, void *data);

#endif
