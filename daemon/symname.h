/* SPDX-License-Identifier: Apache-2.0 */
/* symname.h — the name of a function in a loaded shared object, for the
 * DFX artefacts (a kernel is a function pointer; programs export only
 * their `pto_program` symbol, so the dynamic symbol table does not name
 * kernels: the object's full symbol table does, unless it was stripped).
 */
#ifndef PTOD_SYMNAME_H
#define PTOD_SYMNAME_H

#include <stddef.h>

/* Write the name of the function at `addr` into buf: its symbol
 * ("matmul_kernel"), or, from a stripped object, "matmul.so+0x1130".
 * Always NUL-terminates buf; returns buf. */
const char *symname_of(const void *addr, char *buf, size_t len);

#endif
