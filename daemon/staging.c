#include "staging.h"

#include <string.h>

void staging_init(staging_t *st, dev_device_t *dev, buf_table_t *buffers) {
  memset(st, 0, sizeof(*st));
  st->dev = dev;
  st->buffers = buffers;
}

void staging_release(staging_t *st) {
  if (st->mem) dev_mem_release(st->dev, st->mem, st->bytes);
  st->mem = NULL;
  st->bytes = 0;
  if (st->buffers) buf_set_staging_bytes(st->buffers, 0);
}

int staging_reserve(staging_t *st, uint64_t need, pto_error_t *err) {
  uint64_t size, room;
  void *mem;
  int rc;
  if (need <= st->bytes) return 0;
  size = st->bytes ? st->bytes : 64u * 1024u;
  while (size < need) size *= 2;
  room = buf_room_for_staging(st->buffers);
  if (size > room) size = need; /* no headroom to spare: take exactly what is asked */
  if (dev_mem_round(st->dev, size) > room) {
    int code = pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                             "The dispatch's host arguments need %llu bytes of device memory but "
                             "only %llu are free; free resident buffers or raise [device] memory.",
                             (unsigned long long)need, (unsigned long long)room);
    err->requested = need;
    err->capacity = room;
    return code;
  }
  staging_release(st);
  rc = dev_mem_commit(st->dev, size, &mem);
  if (rc < 0)
    return pto_error_set(err, PTO_E_OUT_OF_MEMORY,
                         "The device could not commit %llu bytes for host arguments: %s.",
                         (unsigned long long)size, strerror(-rc));
  st->mem = mem;
  st->bytes = size;
  buf_set_staging_bytes(st->buffers, dev_mem_round(st->dev, size));
  return 0;
}
