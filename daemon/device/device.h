/* SPDX-License-Identifier: Apache-2.0 */
/* device.h — the device backend interface.
 *
 * A device gives the runtime and the daemon three things: memory (committed,
 * never merely reserved), copies between host and device memory, and a
 * number of cores.  Each platform is one backend, an ops table; dev_open
 * picks it by name.  Only the CPU simulation ("sim", daemon/device/sim/) is
 * built today: there device memory is the daemon's own memory and a core is
 * a host thread of the runtime.  A real accelerator adds an ops table here.
 *
 * Thread safety: every function may be called from any thread; the memory
 * counters are atomic.  Nothing here logs.
 */
#ifndef PTOD_DEVICE_H
#define PTOD_DEVICE_H

#include <stdint.h>

#include <pto/errors.h>

typedef struct dev_device dev_device_t;

typedef struct dev_options {
  uint32_t cores; /* simulated cores; 0: the backend's default (sim: 4) */
} dev_options_t;

/* A backend.  Every function receives the backend's own state (`impl`). */
typedef struct dev_ops {
  const char *name; /* the platform name: "sim" */
  /* Open the device; on failure fill err and return -PTO_E_*. */
  int (*open)(const dev_options_t *opts, void **ret_impl, pto_error_t *err);
  void (*close)(void *impl);
  uint32_t (*core_count)(void *impl);
  /* Bytes a commit of `bytes` really takes (its granule rounding). */
  uint64_t (*mem_round)(void *impl, uint64_t bytes);
  /* Commit `bytes` of zeroed device memory, pages present.  -ENOMEM. */
  int (*mem_commit)(void *impl, uint64_t bytes, void **ret_ptr);
  void (*mem_release)(void *impl, void *ptr, uint64_t bytes);
  int (*copy_to_device)(void *impl, void *dst, const void *src, uint64_t bytes);
  int (*copy_from_device)(void *impl, void *dst, const void *src, uint64_t bytes);
} dev_ops_t;

/* Open the backend named `platform` ("sim").  An unknown name fails with
 * PTO_E_INVALID_CONFIG and a message listing the known platforms.  opts may
 * be NULL (defaults).  Free with dev_close. */
int dev_open(const char *platform, const dev_options_t *opts, dev_device_t **ret_dev,
             pto_error_t *err);
/* Close the device.  All memory committed through it must have been
 * released.  NULL is accepted. */
void dev_close(dev_device_t *dev);

/* "sim". */
const char *dev_name(const dev_device_t *dev);
uint32_t dev_core_count(const dev_device_t *dev);

/* The bytes a commit of `bytes` takes once rounded to the backend's granule
 * (what memory accounting must count). */
uint64_t dev_mem_round(const dev_device_t *dev, uint64_t bytes);

/* Commit `bytes` (> 0) of zeroed device memory with every page present, for
 * the arena and for resident buffers.  Returns 0 or -ENOMEM; the caller
 * releases it with dev_mem_release(dev, ptr, the same bytes). */
int dev_mem_commit(dev_device_t *dev, uint64_t bytes, void **ret_ptr);
void dev_mem_release(dev_device_t *dev, void *ptr, uint64_t bytes);

/* Bytes committed now (rounded), over every commit not yet released. */
uint64_t dev_mem_committed(const dev_device_t *dev);

/* Copies between host memory and device memory committed above.  0 or
 * -errno. */
int dev_copy_to_device(dev_device_t *dev, void *dst, const void *src, uint64_t bytes);
int dev_copy_from_device(dev_device_t *dev, void *dst, const void *src, uint64_t bytes);

#endif
