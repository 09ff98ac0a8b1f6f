/* SPDX-License-Identifier: Apache-2.0 */
/* Shared-memory regions (pto/client.h "shared-memory regions"): a sealed
 * memfd mapped here, registered on one connection with its fd passed as
 * SCM_RIGHTS, and the shm forms of dispatch args and buffer.write/read.
 *
 * The fd is closed as soon as the daemon has its own (after shm.register
 * answered, or failed): the mapping keeps the memory, and a process with
 * many regions does not run out of fds. */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "client_internal.h"

/* The protocol's largest region (proto's BYTES_MAX). */
#define SHM_BYTES_MAX (1ull << 40)
/* How long pto_shm_free waits for shm.unregister's answer. */
#define SHM_FREE_TIMEOUT_MS 5000

struct pto_shm {
  pto_client_t *client; /* NULL once the client is closed */
  struct pto_shm *next; /* in the client's list */
  void *data;
  uint64_t bytes;
  char name[48];
};

static atomic_uint_fast64_t shm_counter;

void *pto_shm_data(const pto_shm_t *r) {
  return r ? r->data : NULL;
}

uint64_t pto_shm_size(const pto_shm_t *r) {
  return r ? r->bytes : 0;
}

const char *pto_shm_name(const pto_shm_t *r) {
  return r ? r->name : "";
}

pto_dispatch_arg_t pto_arg_shm(const pto_shm_t *r, uint64_t offset, uint64_t bytes,
                               pto_arg_kind_t kind) {
  pto_dispatch_arg_t a = {kind, r ? r->name : NULL, offset, bytes, NULL, 0, 0, 0.0};
  if (!r || (kind != PTO_ARG_INPUT && kind != PTO_ARG_OUTPUT && kind != PTO_ARG_INOUT))
    a.kind = PTO_ARG_SHM_INVALID_;
  return a;
}

/* Send params and wait for the answer, both by deadline. */
static int call_proto(pto_client_t *c, proto_method_t method, const proto_params_t *params,
                      proto_method_t decode, int pass_fd, int64_t deadline, void **ret_result,
                      pto_error_t *err) {
  uint32_t msgid = 0;
  int rc = client_send_proto_until(c, method, params, 0, decode, pass_fd, deadline, &msgid, err);
  if (rc < 0) return rc;
  rc = client_wait_until(c, msgid, deadline, ret_result, err);
  if (rc == -PTO_E_TIMEOUT) pto_client_discard(c, msgid);
  return rc;
}

/* Whether the daemon speaks shm: its ping, asked once per connection. */
static int check_feature(pto_client_t *c, int timeout_ms, pto_error_t *err) {
  client_shm_state_t *st = client_shm_state(c);
  pto_ping_t *ping = NULL;
  int rc;
  if (st->feature < 0) {
    rc = pto_client_ping(c, timeout_ms, &ping, err);
    if (rc < 0) return rc;
    st->feature = pto_ping_has_feature(ping, "shm");
    if (!st->feature) {
      client_error(err, PTO_E_UNSUPPORTED,
                   "ptod %s at '%s' does not support shared-memory arguments: its ping lists "
                   "no \"shm\" feature.",
                   ping->version, pto_client_socket_path(c));
      if (err)
        snprintf(err->hint, sizeof(err->hint),
                 "Upgrade the daemon, or send the data inline (pto_arg_input).");
    }
    pto_result_free(ping);
    if (!st->feature) return -PTO_E_UNSUPPORTED;
  } else if (st->feature == 0) {
    return client_error(err, PTO_E_UNSUPPORTED,
                        "ptod at '%s' does not support shared-memory arguments: its ping lists "
                        "no \"shm\" feature; upgrade the daemon or send the data inline.",
                        pto_client_socket_path(c));
  }
  return 0;
}

/* A memfd of `bytes` bytes, its pages reserved, sealed against any change
 * of size; its fd in *ret_fd. */
static int make_memfd(uint64_t bytes, int *ret_fd, pto_error_t *err) {
  int fd = memfd_create("ptoclient-shm", MFD_CLOEXEC | MFD_ALLOW_SEALING), e;
  const char *what;
  if (fd < 0)
    return client_error(err, errno == EMFILE || errno == ENFILE ? PTO_E_NO_MEMORY
                                                                : PTO_E_INVALID_ARGUMENT,
                        "Cannot create a shared-memory region: memfd_create failed: %s.",
                        strerror(errno));
  what = "ftruncate";
  if (ftruncate(fd, (off_t)bytes) < 0) goto fail;
  /* Reserve the pages now: a machine short of memory fails here, not with
   * SIGBUS on a later access (ours or the daemon's). */
  what = "fallocate";
  e = posix_fallocate(fd, 0, (off_t)bytes);
  if (e != 0) {
    errno = e;
    goto fail;
  }
  what = "sealing";
  if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0) goto fail;
  *ret_fd = fd;
  return 0;
fail:
  e = errno;
  close(fd);
  return client_error(err, e == ENOSPC || e == ENOMEM ? PTO_E_NO_MEMORY : PTO_E_INVALID_ARGUMENT,
                      "Cannot create a %llu-byte shared-memory region: %s failed: %s.",
                      (unsigned long long)bytes, what, strerror(e));
}

int pto_shm_create(pto_client_t *c, uint64_t bytes, int timeout_ms, pto_shm_t **ret_region,
                   pto_error_t *ret_err) {
  int64_t deadline;
  proto_params_t p;
  pto_shm_t *r;
  void *info = NULL;
  int fd = -1, rc;

  if (!c || !ret_region)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "pto_shm_create needs a client and somewhere to return the region.");
  if (bytes == 0 || bytes > SHM_BYTES_MAX)
    return client_error(ret_err, PTO_E_INVALID_ARGUMENT,
                        "A shared-memory region must be 1 to %llu bytes, got %llu.",
                        (unsigned long long)SHM_BYTES_MAX, (unsigned long long)bytes);
  deadline = client_deadline(timeout_ms);
  rc = check_feature(c, timeout_ms, ret_err);
  if (rc < 0) return rc;
  r = calloc(1, sizeof(*r));
  if (!r) return client_error(ret_err, PTO_E_NO_MEMORY, NULL);
  snprintf(r->name, sizeof(r->name), "ptoclient-%ld-%llu", (long)getpid(),
           (unsigned long long)atomic_fetch_add(&shm_counter, 1) + 1);
  rc = make_memfd(bytes, &fd, ret_err);
  if (rc < 0) goto fail;
  r->data = mmap(NULL, (size_t)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (r->data == MAP_FAILED) {
    r->data = NULL;
    rc = client_error(ret_err, PTO_E_NO_MEMORY,
                      "Cannot map a %llu-byte shared-memory region: %s.",
                      (unsigned long long)bytes, strerror(errno));
    goto fail;
  }
  r->bytes = bytes;
  memset(&p, 0, sizeof(p));
  p.shm_register.name = r->name;
  p.shm_register.bytes = bytes;
  rc = call_proto(c, PROTO_M_SHM_REGISTER, &p, PROTO_M_SHM_REGISTER, fd,
                  deadline, &info, ret_err);
  if (rc < 0) goto fail;
  pto_result_free(info);
  close(fd);
  r->client = c;
  r->next = client_shm_state(c)->regions;
  client_shm_state(c)->regions = r;
  *ret_region = r;
  return 0;
fail:
  if (r->data) munmap(r->data, (size_t)bytes);
  if (fd >= 0) close(fd);
  free(r);
  return rc;
}

static void unlink_region(pto_shm_t *r) {
  pto_shm_t **pp = &client_shm_state(r->client)->regions;
  while (*pp && *pp != r) pp = &(*pp)->next;
  if (*pp) *pp = r->next;
  r->client = NULL;
}

void client_shm_detach_all(pto_client_t *c) {
  client_shm_state_t *st = client_shm_state(c);
  while (st->regions) {
    pto_shm_t *r = st->regions;
    st->regions = r->next;
    r->client = NULL;
    r->next = NULL;
  }
}

void pto_shm_free(pto_shm_t *r) {
  if (!r) return;
  if (r->client) {
    pto_client_t *c = r->client;
    unlink_region(r);
    if (pto_client_alive(c)) {
      proto_params_t p;
      memset(&p, 0, sizeof(p));
      p.shm_unregister.name = r->name;
      /* A failure leaves the daemon's mapping until the connection closes:
       * nothing here can do better, and the memory is ours to drop. */
      (void)call_proto(c, PROTO_M_SHM_UNREGISTER, &p, PROTO_M_SHM_UNREGISTER, -1,
                       client_deadline(SHM_FREE_TIMEOUT_MS), NULL, NULL);
    }
  }
  munmap(r->data, (size_t)r->bytes);
  free(r);
}

/* The checks buffer.write/read from or into a region share. */
static int check_region(pto_client_t *c, const char *method, const char *name,
                        const pto_shm_t *r, uint64_t bytes, pto_error_t *err) {
  if (!c || !name || !r)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "A '%s' through shared memory needs a client, a buffer name and a region.",
                        method);
  if (r->client != c)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "The shared-memory region '%s' is not registered on the connection to "
                        "'%s': a region belongs to the connection it was created on%s.",
                        r->name, pto_client_socket_path(c),
                        r->client ? "" : " (its connection is closed)");
  if (bytes == 0)
    return client_error(err, PTO_E_INVALID_ARGUMENT,
                        "A '%s' through shared memory needs bytes >= 1, got 0.", method);
  return 0;
}

/* buffer.write from the region (into_region false) or buffer.read into it. */
static int buffer_copy_shm(pto_client_t *c, bool into_region, const char *name, uint64_t offset,
                           const pto_shm_t *r, uint64_t shm_offset, uint64_t bytes,
                           int timeout_ms, uint64_t *ret_bytes, pto_error_t *err) {
  proto_method_t m = into_region ? PROTO_M_BUFFER_READ : PROTO_M_BUFFER_WRITE;
  proto_params_t p;
  void *res = NULL;
  int rc = check_region(c, proto_method_name(m), name, r, bytes, err);
  if (rc < 0) return rc;
  memset(&p, 0, sizeof(p));
  if (into_region)
    p.buffer_read = (proto_buffer_read_params_t){.name = name, .offset = offset, .bytes = bytes,
                                                 .shm = r->name, .shm_offset = shm_offset};
  else
    p.buffer_write = (proto_buffer_write_params_t){.name = name, .offset = offset, .shm = r->name,
                                                   .shm_offset = shm_offset, .bytes = bytes};
  /* Either way the answer is {bytes}: buffer.write's shape. */
  rc = call_proto(c, m, &p, PROTO_M_BUFFER_WRITE, -1, client_deadline(timeout_ms), &res, err);
  if (rc == 0 && ret_bytes) *ret_bytes = ((const pto_byte_count_t *)res)->bytes;
  pto_result_free(res);
  return rc;
}

int pto_client_buffer_write_shm(pto_client_t *c, const char *name, uint64_t offset,
                                const pto_shm_t *r, uint64_t shm_offset, uint64_t bytes,
                                int timeout_ms, uint64_t *ret_bytes, pto_error_t *ret_err) {
  return buffer_copy_shm(c, false, name, offset, r, shm_offset, bytes, timeout_ms, ret_bytes,
                         ret_err);
}

int pto_client_buffer_read_shm(pto_client_t *c, const char *name, uint64_t offset,
                               const pto_shm_t *r, uint64_t shm_offset, uint64_t bytes,
                               int timeout_ms, uint64_t *ret_bytes, pto_error_t *ret_err) {
  return buffer_copy_shm(c, true, name, offset, r, shm_offset, bytes, timeout_ms, ret_bytes,
                         ret_err);
}
