/* SPDX-License-Identifier: Apache-2.0 */
/* dfx_render.h — the renderers behind dfx.h (internal to dfx*.c). */
#ifndef PTOD_DFX_RENDER_H
#define PTOD_DFX_RENDER_H

#include <stdint.h>

#include "dfx.h"
#include "textbuf.h"
#include "trace.h"

/* Kernel names by function pointer, looked up once per distinct kernel. */
typedef struct dfx_names {
  struct {
    pto_kernel_fn fn;
    char name[96];
  } known[32];
  uint32_t n;
  char scratch[96];
} dfx_names_t;

const char *dfx_kernel_name(dfx_names_t *names, pto_kernel_fn fn);

/* The sizing map as JSON: {"ring_task_window": [...], "ring_heap": [...], ...}. */
void dfx_put_sizing(tb_t *t, const pto_sizing_resolved_t *s);

/* Chrome trace-event JSON of the record at swimlane `level`. */
void dfx_render_swimlane(tb_t *t, const rt_trace_t *tr, uint32_t level, const dfx_subject_t *who,
                         dfx_names_t *names);

#endif
