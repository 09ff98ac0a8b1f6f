/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz the request path (daemon/request.c, service.c, the shm and buffer
 * methods) behind the real server, in process: a daemon of the sim device
 * (its runtime, device thread and buffers; a programs directory with no
 * program, so a dispatch stops at admission) on a libuv loop, and one
 * client that sends the input's bytes, in pieces, some with a sealed memfd
 * attached, then shuts down its side and reads every answer until the
 * daemon closes.
 *
 * Input: [max_pending] then steps [len u16] bytes [fd]: a piece of the
 * stream (sent with one memfd of fd * 4 KiB when fd is odd).
 *
 * Checked ("every request gets exactly one response", docs/reliability.md):
 *   - what the client reads is whole msgpack-RPC responses and
 *     notifications, each one proto_decode accepts;
 *   - every answerable request the client sent (split and decoded as the
 *     daemon does, up to the first message that makes the connection fail)
 *     gets exactly one response with its msgid, whatever it asked; at most
 *     one response more (the fatal error's) comes;
 *   - after the client left: no input or output bytes held, every loop
 *     handle closed, no fd of the input left open.
 */
#define _GNU_SOURCE 1 /* memfd_create, F_ADD_SEALS */
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "fuzz_common.h"
#include "log.h"
#include "ptod.h"
#include "request.h"
#include "rpc.h"

#define MAX_MESSAGE (1u << 20)
#define MAX_OBJECTS 4096u
#define MAX_IDS 16384

static struct {
  char dir[64], path[128], programs[128];
  uv_loop_t loop;
  ptod_t *d;
  uint32_t asked[MAX_IDS], answered[MAX_IDS];
  size_t nasked, nanswered, extra;
} s;

static void setup_once(void) {
  log_set_level(LOG_ERR);
  signal(SIGPIPE, SIG_IGN); /* as ptod.c */
  snprintf(s.dir, sizeof s.dir, "/tmp/fuzz_requests-XXXXXX");
  FUZZ_CHECK(mkdtemp(s.dir), "mkdtemp: %s", strerror(errno));
  snprintf(s.path, sizeof s.path, "%s/s.sock", s.dir);
  snprintf(s.programs, sizeof s.programs, "%s/programs", s.dir);
  FUZZ_CHECK(mkdir(s.programs, 0700) == 0, "mkdir: %s", strerror(errno));
}

static void start(uint32_t max_pending) {
  pto_error_t err;
  pto_sizing_t env;
  cfg_t cfg;
  cfg_defaults(&cfg);
  memset(&env, 0, sizeof env);
  snprintf(cfg.device.programs, sizeof cfg.device.programs, "%s", s.programs);
  cfg.device.memory = 8u << 20;
  cfg.device.cores = 2;
  for (int r = 0; r < PTO_RING_COUNT; r++) {
    cfg.ring.value[PTO_FIELD_TASK_WINDOW][r] = 64;
    cfg.ring.value[PTO_FIELD_HEAP][r] = 1u << 16;
    cfg.ring.value[PTO_FIELD_DEP_POOL][r] = 256;
  }
  snprintf(cfg.daemon.socket, sizeof cfg.daemon.socket, "%s", s.path);
  cfg.daemon.socket_mode = 0600;
  cfg.daemon.max_clients = 4;
  cfg.daemon.max_message = MAX_MESSAGE;
  cfg.daemon.max_objects = MAX_OBJECTS;
  cfg.daemon.max_pending = max_pending;
  cfg.daemon.input_limit = 4u << 20;
  cfg.daemon.clients_memory = 64u << 20;
  cfg.daemon.output_limit = 64u << 20; /* an 8 MiB buffer.read fits: nothing is cut unanswered */
  cfg.daemon.client_timeout_ms = 600000;
  FUZZ_CHECK(uv_loop_init(&s.loop) == 0, "uv_loop_init");
  FUZZ_CHECK(ptod_create(&cfg, &env, &s.loop, req_handlers, &s.d, &err) == 0,
             "the daemon did not start: %s", err.message);
  FUZZ_CHECK(srv_listen(s.d->loop.srv, &err) == 0, "the server did not start: %s", err.message);
  atomic_store(&s.d->state, PTOD_READY);
}

static void stop(void) {
  ptod_t *d = s.d;
  srv_memory_t mem;
  srv_memory(d->loop.srv, &mem);
  FUZZ_CHECK(mem.input == 0 && mem.output == 0, "%llu bytes of input and %llu of output held "
             "after the client left", (unsigned long long)mem.input,
             (unsigned long long)mem.output);
  ptod_destroy(d);
  FUZZ_CHECK(uv_loop_close(&s.loop) == 0, "a loop handle is still open");
}

/* The message at the front of [p, p + len) as a reader limited to
 * max_message bytes and max_objects objects reads it: 1 with *ret_n its length, *env
 * its envelope (scalars only) and *ret_rc what proto_decode returned; 0
 * when no whole message is there (or the reader refuses it). */
static int next_message(const uint8_t *p, size_t len, uint64_t max_message, uint64_t max_objects,
                        size_t *ret_n, proto_envelope_t *env, int *ret_rc) {
  proto_reader_t r;
  msgpack_unpacked up;
  pto_error_t err;
  proto_reader_init(&r, max_message);
  proto_reader_set_limits(&r, max_message, max_objects);
  if (proto_reader_feed(&r, p, len, ret_n, &err) != 1) return 0;
  msgpack_unpacked_init(&up);
  *ret_rc = proto_decode((const char *)p, *ret_n, &up, env, &err);
  msgpack_unpacked_destroy(&up);
  return 1;
}

/* The requests in the stream the client sent, as the daemon splits and
 * decodes them, up to the first message that fails the connection. */
static void expect(const uint8_t *stream, size_t len) {
  proto_envelope_t env;
  size_t n;
  int rc;
  for (size_t at = 0; at < len; at += n) {
    if (!next_message(stream + at, len - at, MAX_MESSAGE, MAX_OBJECTS, &n, &env, &rc)) return;
    if (rc < 0 && !env.answerable) return; /* the connection fails here */
    if ((rc < 0 || env.type == PROTO_MSG_REQUEST) && s.nasked < MAX_IDS)
      s.asked[s.nasked++] = env.msgid;
  }
}

/* The answers the client read: each one a response or a notification. */
static void answers(const uint8_t *data, size_t len) {
  proto_envelope_t env;
  size_t n;
  int rc;
  for (size_t at = 0; at < len; at += n) {
    FUZZ_CHECK(next_message(data + at, len - at, len - at, len - at, &n, &env, &rc),
               "the daemon sent %zu bytes that are not whole messages", len - at);
    FUZZ_CHECK(rc == 0, "the daemon sent a message proto_decode refuses");
    FUZZ_CHECK(env.type != PROTO_MSG_REQUEST, "the daemon sent a request");
    if (env.type == PROTO_MSG_RESPONSE) {
      FUZZ_CHECK(s.nanswered < MAX_IDS, "too many responses");
      s.answered[s.nanswered++] = env.msgid;
    }
  }
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

/* Every request answered once; at most one response more. */
static void check_answers(void) {
  size_t i = 0, j = 0, extra = 0;
  qsort(s.asked, s.nasked, sizeof s.asked[0], cmp_u32);
  qsort(s.answered, s.nanswered, sizeof s.answered[0], cmp_u32);
  while (i < s.nasked) {
    FUZZ_CHECK(j < s.nanswered && s.answered[j] <= s.asked[i],
               "request %u got no response (%zu requests, %zu responses)", s.asked[i], s.nasked,
               s.nanswered);
    if (s.answered[j] == s.asked[i])
      i++;
    else
      extra++;
    j++;
  }
  extra += s.nanswered - j;
  FUZZ_CHECK(extra <= 1, "%zu responses to no request (%zu requests, %zu responses)", extra,
             s.nasked, s.nanswered);
}

/* ---- the client ------------------------------------------------------------------ */

typedef struct piece {
  const uint8_t *p;
  size_t len, sent;
  uint8_t fd_pages; /* a memfd of this many 4 KiB pages goes with its first byte; 0: none */
} piece_t;

typedef struct bytes {
  uint8_t *p;
  size_t len, cap;
} bytes_t;

static void append(bytes_t *b, const void *p, size_t n) {
  if (b->len + n > b->cap) {
    b->cap = (b->len + n) * 2;
    b->p = realloc(b->p, b->cap);
    FUZZ_CHECK(b->p, "no memory");
  }
  memcpy(b->p + b->len, p, n);
  b->len += n;
}

/* Send what is left of piece k as far as the socket takes it. */
static ssize_t send_piece(int fd, piece_t *k) {
  union {
    char buf[CMSG_SPACE(sizeof(int))];
    struct cmsghdr align;
  } control;
  struct iovec iov = {(void *)(uintptr_t)(k->p + k->sent), k->len - k->sent};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  int mfd = -1;
  ssize_t n;
  if (k->sent == 0 && k->fd_pages) {
    struct cmsghdr *c;
    mfd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING);
    FUZZ_CHECK(mfd >= 0 && ftruncate(mfd, (off_t)k->fd_pages * 4096) == 0 &&
                   fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW) == 0,
               "memfd: %s", strerror(errno));
    memset(&control, 0, sizeof control);
    mh.msg_control = control.buf;
    mh.msg_controllen = sizeof control.buf;
    c = CMSG_FIRSTHDR(&mh);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &mfd, sizeof(int));
  }
  n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (mfd >= 0) close(mfd);
  if (n > 0) k->sent += (size_t)n;
  return n;
}

/* Send every piece, shut down, read until the daemon closes; the loop
 * (and through it the device thread's completions) runs meanwhile. */
static void converse(piece_t *pieces, size_t npieces, bytes_t *sent, bytes_t *got) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  size_t k = 0;
  bool shut = false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", s.path);
  FUZZ_CHECK(fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0, "connect: %s",
             strerror(errno));
  for (;;) {
    uint8_t buf[65536];
    struct pollfd p[2] = {{fd, POLLIN, 0}, {uv_backend_fd(&s.loop), POLLIN, 0}};
    ssize_t n;
    uv_run(&s.loop, UV_RUN_NOWAIT);
    while (k < npieces) {
      size_t before = pieces[k].sent;
      n = send_piece(fd, &pieces[k]);
      if (n > 0) append(sent, pieces[k].p + before, (size_t)n);
      if (n < 0 && errno != EAGAIN) k = npieces; /* the daemon closed: nothing more goes */
      if (n <= 0) break;
      if (pieces[k].sent == pieces[k].len) k++;
    }
    if (k == npieces && !shut) {
      shutdown(fd, SHUT_WR);
      shut = true;
    }
    n = recv(fd, buf, sizeof buf, 0);
    if (n == 0 || (n < 0 && errno == ECONNRESET)) break;
    if (n > 0) {
      append(got, buf, (size_t)n);
      continue;
    }
    FUZZ_CHECK(errno == EAGAIN, "recv: %s", strerror(errno));
    if (k < npieces) p[0].events |= POLLOUT;
    if (poll(p, 2, uv_backend_timeout(&s.loop)) < 0)
      FUZZ_CHECK(errno == EINTR, "poll: %s", strerror(errno)); /* EINTR: libFuzzer's timer */
  }
  close(fd);
  while (srv_client_count(s.d->loop.srv) > 0) uv_run(&s.loop, UV_RUN_ONCE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static piece_t pieces[256];
  static bool once;
  bool before[FUZZ_FD_SCAN];
  fuzz_in_t in = {data, size};
  bytes_t sent = {0}, got = {0};
  size_t npieces = 0, nfds = 0;
  uint32_t max_pending;
  if (!once) {
    setup_once();
    once = true;
    start(1); /* one empty run first: what is opened once per process stays */
    converse(pieces, 0, &sent, &got);
    stop();
  }
  fuzz_fds_open(before);
  max_pending = 1 + fuzz_u8(&in) % 64;
  while (in.left > 0 && npieces < 256) {
    piece_t *k = &pieces[npieces++];
    uint8_t pages;
    k->p = fuzz_bytes(&in, fuzz_u16(&in), &k->len);
    k->sent = 0;
    pages = fuzz_u8(&in);
    /* At most SRV_MAX_FDS in all: past that an unclaimed fd fails the
     * connection whatever the requests say. */
    k->fd_pages = (pages & 1) && nfds < SRV_MAX_FDS ? (uint8_t)(pages >> 1) + 1 : 0;
    nfds += k->fd_pages != 0;
    if (!k->len) npieces--;
  }
  s.nasked = s.nanswered = 0;
  start(max_pending);
  converse(pieces, npieces, &sent, &got);
  expect(sent.p, sent.len);
  answers(got.p, got.len);
  check_answers();
  stop();
  free(sent.p);
  free(got.p);
  fuzz_fds_check(before);
  return 0;
}
