/* advise.h — from the ring peaks of the dispatches seen so far, the
 * smallest valid sizing that fits every one of them, and the config lines
 * that set it (the `advise` method).
 *
 * Per ring: task_window the smallest power of 2 >= 4 above the peak tasks
 * live (a window holds at most window-1), heap the smallest power of 2
 * >= 1024 strictly above the peak bytes live (full and empty must stay
 * apart), dep_pool the peak entries (at least 4).  A ring no dispatch used
 * gets the smallest valid values.
 *
 * Thread-safe: the device thread records, the loop reads.
 */
#ifndef PTOD_ADVISE_H
#define PTOD_ADVISE_H

#include <stddef.h>
#include <stdint.h>

#include <pto/sizing.h>

typedef struct advise advise_t;

int advise_create(advise_t **ret);
void advise_free(advise_t *a);

/* Fold one successful dispatch's peaks in (value[field][ring]). */
void advise_record(advise_t *a, const pto_sizing_t *peaks);

/* The peaks seen (max per ring and field), and how many dispatches. */
uint64_t advise_observed(advise_t *a, pto_sizing_t *ret_observed);

/* The recommendation for `observed`, and its config lines
 * ("[ring]\ntask_window = 64,16,4,4\n..."). */
void advise_recommend(const pto_sizing_t *observed, pto_sizing_t *ret_sizing, char *config,
                      size_t len);

#endif
