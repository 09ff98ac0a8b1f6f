/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz one connection's shared-memory table (daemon/shm.c) with sequences
 * of register, unregister, acquire (a request naming a range), release
 * (the request done) and, at the end, the connection closing while
 * requests still hold regions — against a model of what the table must
 * hold.
 *
 * Input: a list of steps, each [op] then its operands:
 *   op % 5 == 0 register   [name] [kind] [bytes u16] [size u16] [limit u32]
 *            1 unregister [name]
 *            2 acquire    [name] [offset u16] [bytes u16] [fill]
 *            3 release    [which]
 *            4 release the oldest hold (what a finished dispatch does)
 *   name: 6 short names and, from a byte >= 0xf0, a 64-byte one.
 *   kind: the fd passed: a memfd sealed against shrinking (of `size` bytes;
 *   sealed also against growing or not), one not sealed, one without
 *   sealing at all, a pipe, /dev/null, a socket, a directory.
 *
 * Checked after every step, against the model:
 *   - register succeeds exactly when the name is free, the fd is a memfd
 *     sealed against shrinking, at least `bytes` long, bytes > 0 and the
 *     table's mapped bytes stay within limit; otherwise the documented
 *     code (ALREADY_EXISTS, INVALID_ARGS, OUT_OF_MEMORY) with a message;
 *     the fd is closed either way;
 *   - unregister and acquire find exactly the registered names; acquire
 *     accepts exactly the ranges inside the region, and the pointer it
 *     gives is that range of the client's memfd (bytes written through it
 *     are read back from the memfd, even after unregister, while held);
 *   - shm_count, shm_entry (in registration order) and shm_mapped say
 *     what the model says;
 *   - closing the table with holds outstanding leaks nothing (LSan) and
 *     each hold stays usable until released.
 */
#define _GNU_SOURCE 1 /* memfd_create, F_ADD_SEALS */
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "methods.h"
#include "shm.h"

#define MAX_REGIONS 16
#define MAX_HOLDS 16

typedef struct model_region {
  char name[PROTO_NAME_MAX + 1];
  uint64_t bytes;
  int memfd; /* the client's own fd of it, to check what the mapping shows */
} model_region_t;

typedef struct hold {
  shm_region_t *region;
  uint8_t *ptr;
  uint64_t bytes;
  int memfd; /* a dup of the client's fd, read back through */
  uint64_t offset;
} hold_t;

static struct {
  model_region_t regions[MAX_REGIONS];
  int n;
  hold_t holds[MAX_HOLDS];
  int nholds;
  uint64_t mapped;
} m;

static void name_of(uint8_t b, char *ret) {
  static const char *const names[] = {"kv", "w", "kv2", "a.b", "x_y-z", "q"};
  if (b >= 0xf0) {
    memset(ret, 'n', PROTO_NAME_MAX);
    ret[PROTO_NAME_MAX - 1] = (char)('0' + b % 10);
    ret[PROTO_NAME_MAX] = '\0';
    return;
  }
  snprintf(ret, PROTO_NAME_MAX + 1, "%s", names[b % 6]);
}

static int model_find(const char *name) {
  for (int i = 0; i < m.n; i++)
    if (strcmp(m.regions[i].name, name) == 0) return i;
  return -1;
}

/* The fd of `kind`; *ret_client is the client's own copy of a memfd (else
 * -1); *ret_valid whether the contract accepts it for `bytes`. */
static int make_fd(uint8_t kind, uint64_t size, uint64_t bytes, int *ret_client, bool *ret_valid) {
  int fd = -1, sv[2];
  *ret_client = -1;
  *ret_valid = false;
  switch (kind % 7) {
    case 0:
    case 1:
    case 2:
      fd = memfd_create("fuzz", MFD_CLOEXEC | (kind % 7 == 2 ? 0 : MFD_ALLOW_SEALING));
      FUZZ_CHECK(fd >= 0 && ftruncate(fd, (off_t)size) == 0, "memfd: %s", strerror(errno));
      if (kind % 7 == 0)
        FUZZ_CHECK(fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | ((kind & 8) ? F_SEAL_GROW : 0)) == 0,
                   "seal: %s", strerror(errno));
      /* Pages allocated (kind & 16) or left as holes, which shm refuses;
       * a memfd of size 0 has none to allocate. */
      if ((kind & 16) && size > 0)
        FUZZ_CHECK(posix_fallocate(fd, 0, (off_t)size) == 0, "fallocate failed");
      *ret_valid = kind % 7 == 0 && size >= bytes && ((kind & 16) || size == 0);
      *ret_client = dup(fd);
      return fd;
    case 3:
      FUZZ_CHECK(pipe2(sv, O_CLOEXEC) == 0, "pipe: %s", strerror(errno));
      close(sv[1]);
      return sv[0];
    case 4: return open("/dev/null", O_RDWR | O_CLOEXEC);
    case 5:
      FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
      close(sv[1]);
      return sv[0];
    default: return open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
}

static void step_register(shm_table_t *t, fuzz_in_t *in) {
  char name[PROTO_NAME_MAX + 1];
  uint8_t kind;
  uint64_t bytes, size, limit;
  /* Counts and totals far above the model's room: bytes per connection
   * is the bound the model checks. */
  shm_limits_t limits = {.regions = UINT32_MAX, .bytes_total = UINT64_MAX,
                         .regions_total = UINT32_MAX};
  pto_error_t err;
  int fd, client, rc, expect = 0;
  bool valid;
  name_of(fuzz_u8(in), name);
  kind = fuzz_u8(in);
  bytes = fuzz_u16(in);
  size = fuzz_u16(in);
  limit = fuzz_u32(in) % (1u << 20);
  fd = make_fd(kind, size, bytes, &client, &valid);
  FUZZ_CHECK(fd >= 0, "no fd of kind %u: %s", kind % 7, strerror(errno));
  if (model_find(name) >= 0)
    expect = -PTO_E_ALREADY_EXISTS;
  else if (!valid)
    expect = -PTO_E_INVALID_ARGS;
  else if (bytes > 0 && m.mapped + bytes > limit)
    expect = -PTO_E_OUT_OF_MEMORY;
  else if (bytes == 0 || m.n == MAX_REGIONS)
    expect = 1; /* mmap of 0 bytes fails; past the model's room: not checked */
  limits.bytes = limit;
  rc = shm_register(t, name, bytes, fd, &limits, &err);
  FUZZ_CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF, "shm_register left fd %d open (rc %d)", fd,
             rc);
  if (expect == 1) {
    FUZZ_CHECK(rc <= 0, "shm_register returned %d", rc);
    if (rc == 0 && m.n == MAX_REGIONS) {
      uint64_t gone;
      FUZZ_CHECK(shm_unregister(t, name, &gone, &err) == 0, "unregister of a fresh region failed");
    } else if (rc == 0) {
      FUZZ_CHECK(bytes == 0, "mapped 0 bytes");
    }
    if (rc < 0) fuzz_check_error(rc, &err, "shm_register");
    if (client >= 0) close(client);
    return;
  }
  FUZZ_CHECK(rc == expect, "shm_register('%s', %llu bytes, kind %u, size %llu, limit %llu) "
             "returned %d, expected %d (%s)", name, (unsigned long long)bytes, kind % 7,
             (unsigned long long)size, (unsigned long long)limit, rc, expect,
             rc < 0 ? err.message : "");
  if (rc < 0) {
    fuzz_check_error(rc, &err, "shm_register");
    if (client >= 0) close(client);
    return;
  }
  snprintf(m.regions[m.n].name, sizeof m.regions[m.n].name, "%s", name);
  m.regions[m.n].bytes = bytes;
  m.regions[m.n].memfd = client;
  m.n++;
  m.mapped += bytes;
}

static void step_unregister(shm_table_t *t, fuzz_in_t *in) {
  char name[PROTO_NAME_MAX + 1];
  uint64_t bytes = 0;
  pto_error_t err;
  int i, rc;
  name_of(fuzz_u8(in), name);
  i = model_find(name);
  rc = shm_unregister(t, name, &bytes, &err);
  if (i < 0) {
    FUZZ_CHECK(rc == -PTO_E_NOT_FOUND, "unregister of unknown '%s' returned %d", name, rc);
    fuzz_check_error(rc, &err, "shm_unregister");
    return;
  }
  FUZZ_CHECK(rc == 0 && bytes == m.regions[i].bytes, "unregister '%s': rc %d, %llu bytes", name,
             rc, (unsigned long long)bytes);
  m.mapped -= bytes;
  close(m.regions[i].memfd);
  memmove(&m.regions[i], &m.regions[i + 1], (size_t)(m.n - i - 1) * sizeof m.regions[0]);
  m.n--;
}

static void step_acquire(shm_table_t *t, fuzz_in_t *in) {
  char name[PROTO_NAME_MAX + 1];
  uint64_t offset, bytes;
  shm_region_t *r = NULL;
  uint8_t *ptr = NULL, fill;
  pto_error_t err;
  int i, rc;
  name_of(fuzz_u8(in), name);
  offset = fuzz_u16(in);
  bytes = fuzz_u16(in);
  fill = fuzz_u8(in);
  i = model_find(name);
  rc = shm_acquire(t, name, offset, bytes, "args[0]", &r, &ptr, &err);
  if (i < 0 || offset + bytes > m.regions[i].bytes) {
    FUZZ_CHECK(rc == (i < 0 ? -PTO_E_NOT_FOUND : -PTO_E_INVALID_ARGS),
               "acquire '%s' [%llu, +%llu) returned %d", name, (unsigned long long)offset,
               (unsigned long long)bytes, rc);
    fuzz_check_error(rc, &err, "shm_acquire");
    return;
  }
  FUZZ_CHECK(rc == 0 && r && ptr, "acquire '%s' [%llu, +%llu) of %llu bytes failed: %s", name,
             (unsigned long long)offset, (unsigned long long)bytes,
             (unsigned long long)m.regions[i].bytes, err.message);
  memset(ptr, fill, bytes); /* what a dispatch's output copy does */
  if (bytes > 0) {
    uint8_t got = (uint8_t)~fill;
    FUZZ_CHECK(pread(m.regions[i].memfd, &got, 1, (off_t)(offset + bytes - 1)) == 1 && got == fill,
               "a byte written at region '%s' offset %llu is not in the memfd", name,
               (unsigned long long)(offset + bytes - 1));
  }
  if (m.nholds == MAX_HOLDS) {
    shm_release(r);
    return;
  }
  m.holds[m.nholds++] = (hold_t){r, ptr, bytes, dup(m.regions[i].memfd), offset};
}

/* The request is done: its range is still mapped and still the memfd's
 * until it lets go. */
static void release_hold(int which) {
  hold_t *h = &m.holds[which];
  uint8_t got;
  if (h->bytes > 0) {
    h->ptr[0] ^= 0x5a;
    FUZZ_CHECK(pread(h->memfd, &got, 1, (off_t)h->offset) == 1 && got == h->ptr[0],
               "a held range is no longer the client's memory");
  }
  close(h->memfd);
  shm_release(h->region);
  memmove(h, h + 1, (size_t)(m.nholds - which - 1) * sizeof *h);
  m.nholds--;
}

/* shm_foreach's callback: entry *data (in registration order) against the
 * model's. */
static void check_entry(void *data, const char *name, uint64_t bytes) {
  int *i = data;
  FUZZ_CHECK(*i < m.n, "shm_foreach gave more regions than the model's %d", m.n);
  FUZZ_CHECK(strcmp(name, m.regions[*i].name) == 0 && bytes == m.regions[*i].bytes,
             "entry %d is '%s' (%llu bytes), model '%s' (%llu)", *i, name,
             (unsigned long long)bytes, m.regions[*i].name,
             (unsigned long long)m.regions[*i].bytes);
  (*i)++;
}

static void check_table(const shm_table_t *t) {
  FUZZ_CHECK(shm_count(t) == (uint32_t)m.n, "shm_count %u, model %d", shm_count(t), m.n);
  FUZZ_CHECK(shm_mapped(t) == m.mapped, "shm_mapped %llu, model %llu",
             (unsigned long long)shm_mapped(t), (unsigned long long)m.mapped);
  int i = 0;
  shm_foreach(t, check_entry, &i);
  FUZZ_CHECK(i == m.n, "shm_foreach gave %d regions, model %d", i, m.n);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_in_t in = {data, size};
  shm_totals_t totals = {0};
  shm_table_t *t = shm_table_new(&totals);
  FUZZ_CHECK(t, "shm_table_new failed");
  memset(&m, 0, sizeof m);
  for (int steps = 0; in.left > 0 && steps < 64; steps++) {
    switch (fuzz_u8(&in) % 5) {
      case 0: step_register(t, &in); break;
      case 1: step_unregister(t, &in); break;
      case 2: step_acquire(t, &in); break;
      case 3:
        if (m.nholds) release_hold(fuzz_u8(&in) % m.nholds);
        break;
      default:
        if (m.nholds) release_hold(0);
        break;
    }
    check_table(t);
  }
  shm_table_close(t); /* the connection goes; requests may still hold regions */
  while (m.nholds) release_hold(m.nholds - 1);
  for (int i = 0; i < m.n; i++) close(m.regions[i].memfd);
  return 0;
}
