/* staging.h — device memory for a dispatch's host arguments.
 *
 * Inline `data` args are copied here from the message, `out` args are
 * zeroed here, and the program runs on these bytes.  One area, grow-only
 * (steady-state dispatches commit nothing), owned by the device thread
 * alone and accounted with the resident buffers (buf_set_staging_bytes).
 */
#ifndef PTOD_STAGING_H
#define PTOD_STAGING_H

#include <stdint.h>

#include <pto/errors.h>

#include "buffers.h"
#include "device.h"

typedef struct staging {
  dev_device_t *dev;
  buf_table_t *buffers;
  void *mem;
  uint64_t bytes;
} staging_t;

void staging_init(staging_t *st, dev_device_t *dev, buf_table_t *buffers);

/* Have at least `need` bytes at st->mem: 0, or -PTO_E_OUT_OF_MEMORY with the
 * sentence in err (the device's memory left is not enough). */
int staging_reserve(staging_t *st, uint64_t need, pto_error_t *err);

/* Give the area back to the device (shut-down). */
void staging_release(staging_t *st);

#endif
