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

typedef struct ptod ptod_t;

/* Open d->cfg's device, its runtime, the buffer table, the advisor and the
 * staging area (start-up step 2; tests drive the daemon's modules on what
 * this opens).  Returns 0 or a negative error with the sentence in err;
 * ptod_close_device releases what was opened, either way. */
int ptod_open_device(ptod_t *d, pto_error_t *err);
void ptod_close_device(ptod_t *d);

#endif
