/* SPDX-License-Identifier: Apache-2.0 */
/* ctl_cdi.h — ptoctl cdi generate: a Container Device Interface spec that
 * names one CDI device per ptod instance (see ctl_cdi.c, ptoctl(1) and
 * docs/operations.md, "Running on a cluster"). */
#ifndef PTOCTL_CDI_H
#define PTOCTL_CDI_H

/* The default CDI kind (vendor/class) of ptod's devices. */
#define CTL_CDI_KIND "ptod.internal/device"

/* `ptoctl cdi ARGS...`: argv[0] is "cdi".  Parses its own options, writes
 * the spec (stdout or --output FILE, replaced atomically) and returns
 * ptoctl's exit status (CTL_EXIT_*), having said why on stderr.  The
 * command table's `cdi` row (ptoctl.c) runs it when `cdi` comes first. */
int ctl_cdi_main(int argc, char **argv);

#endif
