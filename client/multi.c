/* SPDX-License-Identifier: Apache-2.0 */
/* One dispatch on several devices: send to every daemon first, then
 * collect every answer, so the devices run at the same time. */
#include <stdlib.h>
#include <string.h>

#include "client_internal.h"

int pto_client_dispatch_multi(const pto_dispatch_req_t *req, pto_device_dispatch_t *devices,
                              size_t ndevices, int timeout_ms, pto_error_t *ret_err) {
  int64_t deadline = client_deadline(timeout_ms);
  uint32_t *msgids;
  size_t first_failed = ndevices;

  if (!req || !devices || ndevices == 0)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_client_dispatch_multi needs a request and at least one device.");
  for (size_t i = 0; i < ndevices; i++)
    if (!devices[i].client)
      return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                          "Device entry %zu of the multi-device dispatch has no client.", i);
  msgids = calloc(ndevices, sizeof(*msgids));
  if (!msgids) return client_error(ret_err, PTO_E_NO_MEMORY, NULL);

  for (size_t i = 0; i < ndevices; i++) {
    pto_device_dispatch_t *d = &devices[i];
    pto_request_t r = {.method = PTO_METHOD_DISPATCH};
    d->rc = 0;
    d->result = NULL;
    pto_error_clear(&d->err);
    r.u.dispatch = *req; /* the same program, config and deadline for every device */
    if (d->args || d->nargs) {
      r.u.dispatch.args = d->args;
      r.u.dispatch.nargs = d->nargs;
    }
    d->rc = client_send_until(d->client, &r, NULL, deadline, &msgids[i], &d->err);
  }
  for (size_t i = 0; i < ndevices; i++) {
    pto_device_dispatch_t *d = &devices[i];
    void *result = NULL;
    if (d->rc == 0) {
      d->rc = client_wait_until(d->client, msgids[i], deadline, &result, &d->err);
      if (d->rc == 0) d->result = result;
      if (d->rc == -PTO_E_TIMEOUT) pto_client_discard(d->client, msgids[i]);
    }
    if (d->rc < 0) {
      client_error_name_device(&d->err, d->client);
      if (first_failed == ndevices) first_failed = i;
    }
  }
  free(msgids);
  if (first_failed == ndevices) return 0;
  if (ret_err) *ret_err = devices[first_failed].err;
  return devices[first_failed].rc;
}
