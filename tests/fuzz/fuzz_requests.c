/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz the request path (daemon/request.c, service.c, the shm and buffer
 * methods) behind the real server, in process: a daemon of the sim device
 * (its runtime, device thread and buffers; a programs directory with no
 * program, so a dispatch stops at admission) on a libuv loop, and one
 * client per input that sends the input's bytes, in pieces, some with a
 * sealed memfd attached, then shuts down its side and reads every answer
 * until the daemon closes.
 *
 * One daemon serves every input of the process (building one per input
 * cost 13 ms: a device thread, its memory, a socket).  What an input
 * leaves in it is taken away through the daemon's own paths before the
 * next: the connection closes (its shm regions, parked fds and answers go
 * with it), the resident buffers it made are freed by `buffer.free`
 * requests, and max_pending is set per input as a reload sets it.  What is
 * left must then be what a fresh daemon holds (no buffer, arena, staging
 * area, prewarmed sizing, shm region, loop handle or fd of the input);
 * when it is not (a `prewarm` built an arena), the daemon is built afresh.
 * So each input meets the daemon as a fresh one, and a finding replays
 * from its input alone.  Only counters (metrics, ids) go on.
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
 *     handle the input opened closed, no fd of the input left open.
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
#include "fuzz_loop.h"
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
  int codes[MAX_IDS]; /* answered[i]'s error code, 0 for a result */
  int err_code;       /* next_message's, for a response */
  size_t nasked, nanswered, extra;
} s;

static void setup_once(void) {
  log_set_level(LOG_ERR);
  (void)fuzz_outcomes(); /* its fd is the process's, not an input's */
  signal(SIGPIPE, SIG_IGN); /* as ptod.c */
  snprintf(s.dir, sizeof s.dir, "/tmp/fuzz_requests-XXXXXX");
  FUZZ_CHECK(mkdtemp(s.dir), "mkdtemp: %s", strerror(errno));
  snprintf(s.path, sizeof s.path, "%s/s.sock", s.dir);
  snprintf(s.programs, sizeof s.programs, "%s/programs", s.dir);
  FUZZ_CHECK(mkdir(s.programs, 0700) == 0, "mkdir: %s", strerror(errno));
}

static void start(void) {
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
  cfg.daemon.max_pending = 1; /* each input sets its own: set_max_pending */
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

/* max_pending for the next client, as a reload sets it (ptod.c's
 * apply_server): the running configuration, then the server's options. */
static void set_max_pending(uint32_t max_pending) {
  srv_options_t so;
  s.d->loop.cfg.daemon.max_pending = max_pending;
  ptod_server_options(&s.d->loop.cfg, &so);
  srv_update_options(s.d->loop.srv, &so);
}

/* Nothing of the input's client held: no input or output bytes, no shm
 * region, no loop handle or fd more than before it. */
static void check_released(unsigned handles_before) {
  srv_memory_t mem;
  fuzz_loop_settle(&s.loop, handles_before);
  srv_memory(s.d->loop.srv, &mem);
  FUZZ_CHECK(mem.input == 0 && mem.output == 0, "%llu bytes of input and %llu of output held "
             "after the client left", (unsigned long long)mem.input,
             (unsigned long long)mem.output);
  FUZZ_CHECK(s.d->loop.shm_totals.regions == 0 && s.d->loop.shm_totals.bytes == 0,
             "%llu shm regions (%llu bytes) left after the client left",
             (unsigned long long)s.d->loop.shm_totals.regions,
             (unsigned long long)s.d->loop.shm_totals.bytes);
}

static void stop(void) {
  ptod_destroy(s.d);
  s.d = NULL;
  FUZZ_CHECK(uv_loop_close(&s.loop) == 0, "a loop handle is still open");
}

/* What a daemon holds between clients that changes how it serves the next
 * one: the device account (resident buffers, arena, staging area) and the
 * prewarmed sizing. */
typedef struct kept {
  uint64_t arena, buffers, staging, prewarm_key;
} kept_t;

static kept_t kept_now(void) {
  buf_memory_t m;
  kept_t k;
  buf_memory(s.d->device.buffers, &m);
  k = (kept_t){m.arena, m.buffers, m.staging, 0};
  pthread_mutex_lock(&s.d->device.prewarm.lock);
  k.prewarm_key = s.d->device.prewarm.key;
  pthread_mutex_unlock(&s.d->device.prewarm.lock);
  return k;
}

static bool kept_same(const kept_t *a, const kept_t *b) {
  return a->arena == b->arena && a->buffers == b->buffers && a->staging == b->staging &&
         a->prewarm_key == b->prewarm_key;
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
  if (*ret_rc == 0 && env->type == PROTO_MSG_RESPONSE && env->error) {
    proto_error_decode(env->error, &err);
    s.err_code = err.code;
  } else {
    s.err_code = 0;
  }
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
      s.codes[s.nanswered] = s.err_code;
      s.answered[s.nanswered++] = env.msgid;
    }
  }
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

/* The input's outcome (fuzz_outcomes): the bytes it sent and the
 * responses it got, msgid:code (0: a result) in msgid order. */
static void record_outcome(size_t sent) {
  static uint64_t pairs[MAX_IDS];
  FILE *f = fuzz_outcomes();
  if (!f) return;
  for (size_t i = 0; i < s.nanswered; i++)
    pairs[i] = (uint64_t)s.answered[i] << 32 | (uint32_t)s.codes[i];
  qsort(pairs, s.nanswered, sizeof pairs[0], cmp_u64);
  fprintf(f, "sent %zu:", sent);
  for (size_t i = 0; i < s.nanswered; i++)
    fprintf(f, " %u:%d", (unsigned)(pairs[i] >> 32), (int)(uint32_t)pairs[i]);
  fprintf(f, "\n");
  fflush(f);
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

/* Free every resident buffer the input left, as a client would: one
 * `buffer.free` request for each, on a connection of its own. */
static void free_buffers(void) {
  buf_info_t *infos;
  size_t n;
  msgpack_sbuffer sb;
  msgpack_packer pk;
  bytes_t sent = {0}, got = {0};
  piece_t all;
  FUZZ_CHECK(buf_list(s.d->device.buffers, &infos, &n) == 0, "buf_list: no memory");
  msgpack_sbuffer_init(&sb);
  msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(infos[i].name);
    msgpack_pack_array(&pk, 4);
    msgpack_pack_uint32(&pk, 0);
    msgpack_pack_uint32(&pk, (uint32_t)i);
    msgpack_pack_str_with_body(&pk, "buffer.free", strlen("buffer.free"));
    msgpack_pack_array(&pk, 1);
    msgpack_pack_map(&pk, 1);
    msgpack_pack_str_with_body(&pk, "name", 4);
    msgpack_pack_str_with_body(&pk, infos[i].name, len);
  }
  free(infos);
  all = (piece_t){(const uint8_t *)sb.data, sb.size, 0, 0};
  if (n) converse(&all, 1, &sent, &got);
  msgpack_sbuffer_destroy(&sb);
  free(sent.p);
  free(got.p);
}

/* Take away what the input left (see the top of this file): its buffers
 * freed; the daemon built afresh when it still differs from a fresh one. */
static void reset(const kept_t *fresh) {
  kept_t now;
  free_buffers();
  now = kept_now();
  if (kept_same(&now, fresh)) return;
  stop();
  start();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static piece_t pieces[256];
  static kept_t fresh;
  bool before[FUZZ_FD_SCAN];
  fuzz_in_t in = {data, size};
  bytes_t sent = {0}, got = {0};
  size_t npieces = 0, nfds = 0;
  unsigned handles;
  if (!s.d) {
    setup_once();
    start();
    /* one empty client first: what is opened once per process stays */
    converse(pieces, 0, &sent, &got);
    fuzz_closer_drain();
    fresh = kept_now();
  }
  fuzz_fds_open(before);
  handles = fuzz_loop_handles(&s.loop);
  set_max_pending(1 + fuzz_u8(&in) % 64u);
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
  converse(pieces, npieces, &sent, &got);
  expect(sent.p, sent.len);
  answers(got.p, got.len);
  record_outcome(sent.len);
  check_answers();
  free(sent.p);
  free(got.p);
  check_released(handles);
  fuzz_closer_drain();
  fuzz_fds_check(before);
  reset(&fresh);
  return 0;
}
