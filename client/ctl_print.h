/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_print.h — ptoctl's human-readable output of every result, and the
 * JSON shapes that are not simply the daemon's result (errors, bench). */
#ifndef CTL_PRINT_H
#define CTL_PRINT_H

#include <stdio.h>

#include <pto/client.h>

#include "ctl_json.h"

void ctl_print_ping(FILE *f, const pto_ping_t *p, double ms);
void ctl_print_status(FILE *f, const pto_status_t *s);
void ctl_print_programs(FILE *f, const pto_programs_t *p);
/* files: per output, the file it was written to, or NULL (then a summary:
 * size, the first float32 values, the first bytes in hex). */
void ctl_print_dispatch(FILE *f, const pto_dispatch_result_t *r, char *const *files);
void ctl_print_arena(FILE *f, const pto_arena_info_t *a);
void ctl_print_advise(FILE *f, const pto_advise_t *a);
void ctl_print_buffer_list(FILE *f, const pto_buffer_list_t *l);
/* A hex dump (16 bytes a line, with offsets), at most `max` bytes. */
void ctl_print_hexdump(FILE *f, const uint8_t *p, size_t len, size_t max);
/* "task_window [256, 256, 256, 256]  heap [1 MiB, ...]  dep_pool [...]" */
void ctl_print_sizing(FILE *f, const pto_sizing_t *s);

/* {"code", "name", "message", and the detail that is set}. */
void ctl_json_error(json_t *j, const pto_error_t *err);
/* The sizing map of a dispatch result, with "source". */
void ctl_json_sizing(json_t *j, const pto_sizing_resolved_t *s);

#endif
