/* sim.h — the CPU simulation backend ("sim").
 *
 * Device memory is anonymous memory of this process, committed at once: a
 * commit of 2 MiB or more is 2 MiB aligned, advised for transparent huge
 * pages and populated by the kernel (MADV_POPULATE_WRITE), which on these
 * machines commits about ten times faster than 4 KiB page faults (THP runs
 * in madvise mode); smaller commits are page-rounded and populated the same
 * way.  Copies are memcpy.  Cores are host threads that the runtime starts;
 * the backend only says how many.
 */
#ifndef PTOD_DEVICE_SIM_H
#define PTOD_DEVICE_SIM_H

#include "../device.h"

#define DEV_SIM_DEFAULT_CORES 4u
#define DEV_SIM_MAX_CORES 256u

extern const dev_ops_t dev_sim_ops;

#endif
