/* SPDX-License-Identifier: Apache-2.0 */
/* program_open.h — open a device program of the build tree (programs/,
 * built into PTOD_BUILD_PROGRAMS_DIR, which pto_test defines) for a Check
 * test: dlopen and its pto_program_t, failing the test when either is
 * missing.  Header-only: the macro is the including test's. */
#ifndef PTOD_TEST_PROGRAM_OPEN_H
#define PTOD_TEST_PROGRAM_OPEN_H

#include <check.h>
#include <dlfcn.h>
#include <stdio.h>

#include <pto/program.h>

/* The program `name`'s handle (dlclose it) and its program table. */
static inline void *program_open(const char *name, const pto_program_t **ret_prog) {
  char path[1024];
  void *handle;
  snprintf(path, sizeof path, "%s/%s.so", PTOD_BUILD_PROGRAMS_DIR, name);
  handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(handle != NULL, "dlopen %s: %s", path, dlerror());
  *ret_prog = dlsym(handle, PTO_PROGRAM_SYMBOL);
  ck_assert_msg(*ret_prog != NULL, "%s exports no %s", path, PTO_PROGRAM_SYMBOL);
  return handle;
}

#endif
