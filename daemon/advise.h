/* SPDX-License-Identifier: Apache-2.0 */
/* advise.h — from what the dispatches so far used, the smallest valid ring
 * sizing that serves all of them, overall and per program, the config lines
 * that set it, and the warnings an operator needs (the `advise` method);
 * plus the two one-time log lines of a daemon whose sizing costs it arena
 * builds.
 *
 * The rule, per ring (docs/runtime.md "Sizing the rings"):
 *   heap        the smallest power of 2 >= 1024 at or above the peak bytes
 *               live (a peak of exactly 4 KiB gives 4K: a run that needs
 *               4096 bytes passes with 4096)
 *   task_window the smallest power of 2 >= 4 at or above peak tasks + 1 (a
 *               window of W holds W - 1 tasks)
 *   dep_pool    the peak entries, at least 4
 * A ring no dispatch used gets the smallest valid values.
 *
 * Thread-safe: the device thread records, the loop reads (under the lock;
 * the device thread, the only writer, reads without it).
 */
#ifndef PTOD_ADVISE_H
#define PTOD_ADVISE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/sizing.h>

#include "methods.h"

typedef struct advise advise_t;

/* Programs and distinct sizings kept apart; beyond, they are folded into
 * the overall figures only. */
#define ADVISE_MAX_PROGRAMS 32
#define ADVISE_MAX_SIZINGS 16

int advise_create(advise_t **ret);
void advise_free(advise_t *a);

/* Fold one successful dispatch of `program` in: its peaks
 * (value[field][ring]) and the sizing it ran with. */
void advise_record(advise_t *a, const char *program, const pto_sizing_t *peaks,
                   const pto_sizing_resolved_t *sizing);

/* A dispatch reached the arena (device thread): logs once, with the config
 * lines that would fix it, when the first dispatch missed the prewarmed
 * arena, and when dispatches start alternating between sizings. */
void advise_note_arena(advise_t *a, const char *program, const pto_sizing_resolved_t *sizing,
                       bool first, bool hit, uint64_t build_us);

/* The peaks seen (max per ring and field), and how many dispatches. */
uint64_t advise_observed(advise_t *a, pto_sizing_t *ret_observed);

/* The recommendation for `observed` (the rule above). */
void advise_recommend(const pto_sizing_t *observed, pto_sizing_t *ret_sizing);

/* The config-file lines that set `s` for both [ring] and [prewarm]
 * ("[ring]\ntask_window = 64,16,4,4\n...\n\n[prewarm]\n..."), into buf. */
void advise_config_lines(const pto_sizing_t *s, char *buf, size_t len);

/* One program's figures, for the `advise` result. */
typedef struct advise_program {
  char name[65];
  uint64_t dispatches;
  pto_sizing_t observed, recommended;
} advise_program_t;

/* A snapshot for the `advise` method: programs (malloc'ed, the caller
 * frees *ret_programs), the distinct sizings dispatches ran with (up to
 * ADVISE_MAX_SIZINGS into sizings), and the warnings (each a sentence, up
 * to 4 into warnings[i], each `wlen` bytes).  Returns 0 or -ENOMEM. */
int advise_snapshot(advise_t *a, advise_program_t **ret_programs, uint32_t *ret_nprograms,
                    pto_sizing_t *sizings, uint32_t *ret_nsizings, char (*warnings)[768],
                    uint32_t *ret_nwarnings);

/* The `advise` result as of now into *ret, pointing into *mem (free it
 * with advise_result_free once the result is encoded).  0 or -ENOMEM. */
typedef struct advise_result_mem {
  advise_program_t *programs;
  proto_advise_program_t *wire_programs;
  pto_sizing_t sizings[ADVISE_MAX_SIZINGS];
  char warnings[4][768];
  const char *warning_ptrs[4];
  char config[1024];
} advise_result_mem_t;
int advise_result(advise_t *a, proto_advise_result_t *ret, advise_result_mem_t *mem);
void advise_result_free(advise_result_mem_t *mem);

#endif
