/* SPDX-License-Identifier: Apache-2.0 */
/* ptod_run.h — run the daemon until it is told to stop. */
#ifndef PTOD_PTOD_RUN_H
#define PTOD_PTOD_RUN_H

#include <stdbool.h>

#include <pto/errors.h>

/* sysexits.h's EX_CONFIG: systemd reads it as "configuration error". */
#define PTOD_EXIT_CONFIG 78

/* Load config_path (NULL: built-in defaults), start the device, prewarm,
 * serve, and return the process exit status: 0 after a clean drain, 78
 * (EX_CONFIG) for an invalid configuration, 1 for other start-up
 * failures. */
int ptod_run(const char *config_path);

#endif
