/* SPDX-License-Identifier: Apache-2.0 */
/* A program built for another program ABI: only the first field (the
 * version) is common to every ABI, so that is all the loader may read. */
#include <stdint.h>

__attribute__((visibility("default"))) const struct {
  uint32_t abi_version;
  const char *name;
} pto_program = {2, "rtplug_abi_two"};
