/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_advise.h — ptoctl advise --apply FILE (see ctl_advise.c). */
#ifndef PTOCTL_ADVISE_H
#define PTOCTL_ADVISE_H

#include <stddef.h>

#include <pto/client.h>

/* Write a's [ring] and [prewarm] lines into the config file at path,
 * printing the change as a unified diff on stdout; the previous file is
 * kept as PATH.orig.  0, or -CTL_EXIT_FILE with msg. */
int ctl_advise_apply(const pto_advise_t *a, const char *path, char *msg, size_t len);

#endif
