/* SPDX-License-Identifier: Apache-2.0 */
/* A connection's receive buffer (client_internal.h, recv_buffer.c).
 *
 * The buffer is a block with its capacity in front of the bytes, so that a
 * block can travel through one atomic pointer: the dock's `spare`, where a
 * lent block comes back from pto_result_free() on whatever thread frees the
 * result, for the connection to take at its next large answer.  The dock is
 * counted (the connection, plus one per block out on loan) so that a result
 * freed after pto_client_close() still finds it; the last one out frees it.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

struct rxbuf_block {
  size_t cap;
  uint8_t data[];
};

struct rxbuf_dock {
  atomic_size_t refs;
  _Atomic(rxbuf_block_t *) spare;
};

static void dock_unref(rxbuf_dock_t *dock) {
  if (atomic_fetch_sub(&dock->refs, 1) != 1) return;
  free(atomic_load(&dock->spare));
  free(dock);
}

/* Keep the most recently returned block; the one it replaces is freed. */
static void dock_put(rxbuf_dock_t *dock, rxbuf_block_t *b) {
  if (b->cap <= CLIENT_KEEP_MAX) b = atomic_exchange(&dock->spare, b);
  free(b);
}

int rxbuf_init(rxbuf_t *rx) {
  memset(rx, 0, sizeof(*rx));
  rx->dock = calloc(1, sizeof(*rx->dock));
  if (!rx->dock) return -PTO_E_NO_MEMORY;
  atomic_init(&rx->dock->refs, 1);
  atomic_init(&rx->dock->spare, NULL);
  return 0;
}

void rxbuf_destroy(rxbuf_t *rx) {
  if (!rx->dock) return;
  free(rx->blk);
  free(atomic_exchange(&rx->dock->spare, NULL)); /* results still out free their own */
  dock_unref(rx->dock);
  memset(rx, 0, sizeof(*rx));
}

uint8_t *rxbuf_data(const rxbuf_t *rx) { return rx->blk ? rx->blk->data : NULL; }

size_t rxbuf_room(const rxbuf_t *rx) { return rx->blk ? rx->blk->cap - rx->end : 0; }

/* Make blk the buffer, with the unread bytes moved into it. */
static void adopt(rxbuf_t *rx, rxbuf_block_t *blk) {
  size_t used = rx->end - rx->start;
  if (used) memcpy(blk->data, rx->blk->data + rx->start, used);
  free(rx->blk);
  rx->blk = blk;
  rx->start = 0;
  rx->end = used;
}

int rxbuf_reserve(rxbuf_t *rx, size_t want) {
  size_t used = rx->end - rx->start, need;
  rxbuf_block_t *spare, *grown;
  if (rxbuf_room(rx) >= want) return 0;
  if (rx->start > 0) { /* the reader allows the bytes to move */
    memmove(rx->blk->data, rx->blk->data + rx->start, used);
    rx->start = 0;
    rx->end = used;
    if (rxbuf_room(rx) >= want) return 0;
  }
  /* A block given back has its pages faulted in already: take it when it
   * is larger than this one, and grow from there if it is still short. */
  spare = atomic_exchange(&rx->dock->spare, NULL);
  if (spare && (!rx->blk || spare->cap > rx->blk->cap))
    adopt(rx, spare);
  else
    free(spare);
  if (rxbuf_room(rx) >= want) return 0;
  /* The reader says how much the message still needs: grow to that at
   * once, in whole chunks, not by doubling (which would map twice that). */
  need = used + want;
  if (need < used) return -PTO_E_NO_MEMORY;
  need = (need + RXBUF_CHUNK - 1) / RXBUF_CHUNK * RXBUF_CHUNK;
  grown = realloc(rx->blk, sizeof(*grown) + need);
  if (!grown) return -PTO_E_NO_MEMORY;
  grown->cap = need;
  rx->blk = grown;
  return 0;
}

/* A large message alone at the front: lend the block to it and start a new
 * one (the spare, or a fresh chunk) for the bytes that follow it. */
static int lend(rxbuf_t *rx, size_t len, rxbuf_msg_t *ret) {
  rxbuf_block_t *lent = rx->blk;
  size_t rest = rx->end - len;
  rx->blk = NULL;
  rx->start = rx->end = 0;
  if (rest && rxbuf_reserve(rx, rest) < 0) {
    rx->blk = lent; /* nothing changed: the caller fails the connection */
    rx->end = len + rest;
    return -PTO_E_NO_MEMORY;
  }
  if (rest) memcpy(rx->blk->data, lent->data + len, rest);
  rx->end = rest;
  atomic_fetch_add(&rx->dock->refs, 1);
  *ret = (rxbuf_msg_t){.bytes = lent->data, .len = len, .dock = rx->dock};
  return 0;
}

void rxbuf_take_into(rxbuf_t *rx, size_t len, uint8_t *dst) {
  memcpy(dst, rx->blk->data + rx->start, len);
  rx->start += len;
  if (rx->start == rx->end) rx->start = rx->end = 0;
}

int rxbuf_take(rxbuf_t *rx, size_t len, rxbuf_msg_t *ret) {
  uint8_t *copy;
  if (rx->start == 0 && len >= RXBUF_CHUNK) return lend(rx, len, ret);
  copy = malloc(len ? len : 1);
  if (!copy) return -PTO_E_NO_MEMORY;
  rxbuf_take_into(rx, len, copy);
  *ret = (rxbuf_msg_t){.bytes = copy, .len = len, .dock = NULL};
  return 0;
}

void rxbuf_msg_release(rxbuf_msg_t *msg) {
  if (msg->dock) {
    dock_put(msg->dock, (rxbuf_block_t *)(void *)(msg->bytes - offsetof(rxbuf_block_t, data)));
    dock_unref(msg->dock);
  } else {
    free(msg->bytes);
  }
  memset(msg, 0, sizeof(*msg));
}
