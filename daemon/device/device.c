/* SPDX-License-Identifier: Apache-2.0 */
/* device.c — backend selection and the memory counter shared by backends. */
#include "device.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "sim/sim.h"

struct dev_device {
  const dev_ops_t *ops;
  void *impl;
  _Atomic uint64_t committed;
};

static const dev_ops_t *const dev_backends[] = {&dev_sim_ops};
#define DEV_NBACKENDS (sizeof dev_backends / sizeof dev_backends[0])

int dev_open(const char *platform, const dev_options_t *opts, dev_device_t **ret_dev,
             pto_error_t *err) {
  const dev_ops_t *ops = NULL;
  dev_options_t defaults = {0};
  dev_device_t *dev;
  int rc;

  for (size_t i = 0; i < DEV_NBACKENDS; i++)
    if (platform && strcmp(platform, dev_backends[i]->name) == 0) ops = dev_backends[i];
  if (!ops)
    return pto_error_set(err, PTO_E_INVALID_CONFIG,
                         "Platform '%s' is not built into this ptod; the only platform is 'sim'.",
                         platform ? platform : "");
  dev = calloc(1, sizeof *dev);
  if (!dev) return pto_error_set(err, PTO_E_INTERNAL, "Out of host memory opening the device.");
  dev->ops = ops;
  rc = ops->open(opts ? opts : &defaults, &dev->impl, err);
  if (rc < 0) {
    free(dev);
    return rc;
  }
  *ret_dev = dev;
  return 0;
}

void dev_close(dev_device_t *dev) {
  if (!dev) return;
  dev->ops->close(dev->impl);
  free(dev);
}

const char *dev_name(const dev_device_t *dev) { return dev->ops->name; }

uint32_t dev_core_count(const dev_device_t *dev) { return dev->ops->core_count(dev->impl); }

uint64_t dev_mem_round(const dev_device_t *dev, uint64_t bytes) {
  return dev->ops->mem_round(dev->impl, bytes);
}

int dev_mem_commit(dev_device_t *dev, uint64_t bytes, void **ret_ptr) {
  int rc;
  if (bytes == 0) return -EINVAL;
  rc = dev->ops->mem_commit(dev->impl, bytes, ret_ptr);
  if (rc == 0) atomic_fetch_add(&dev->committed, dev->ops->mem_round(dev->impl, bytes));
  return rc;
}

void dev_mem_release(dev_device_t *dev, void *ptr, uint64_t bytes) {
  if (!ptr) return;
  dev->ops->mem_release(dev->impl, ptr, bytes);
  atomic_fetch_sub(&dev->committed, dev->ops->mem_round(dev->impl, bytes));
}

uint64_t dev_mem_committed(const dev_device_t *dev) {
  return atomic_load(&((dev_device_t *)dev)->committed);
}

int dev_copy_to_device(dev_device_t *dev, void *dst, const void *src, uint64_t bytes) {
  return dev->ops->copy_to_device(dev->impl, dst, src, bytes);
}

int dev_copy_from_device(dev_device_t *dev, void *dst, const void *src, uint64_t bytes) {
  return dev->ops->copy_from_device(dev->impl, dst, src, bytes);
}
