/* SPDX-License-Identifier: Apache-2.0 */
/* sim.h — the CPU simulation backend ("sim").
 *
 * Device memory is anonymous memory of this process, committed at once: a
 * commit of 2 MiB or more is 2 MiB aligned and rounded, smaller ones are
 * page-rounded.  Every page is 4 KiB (MADV_NOHUGEPAGE) and populated by the
 * kernel (MADV_POPULATE_WRITE), by up to `cores` threads (at most the CPUs
 * online, each part at least 64 MiB) committing disjoint parts in
 * parallel: measured cold on these VMs, that is the fastest way to commit
 * the arena, and huge pages are the slowest (docs/runtime.md, "Committing
 * the arena").  Copies are memcpy.  Cores are host threads that the
 * runtime starts; the backend only says how many.
 */
#ifndef PTOD_DEVICE_SIM_H
#define PTOD_DEVICE_SIM_H

#include "../device.h"

#define DEV_SIM_DEFAULT_CORES 4u
#define DEV_SIM_MAX_CORES 256u

extern const dev_ops_t dev_sim_ops;

#endif
