/* SPDX-License-Identifier: Apache-2.0 */
/* Fuzz the daemon's server (daemon/server.c, conn.c, conn_output.c) in
 * process: a libuv loop, the real listener on a socket in a temporary
 * directory, up to four clients on connected Unix sockets, and handlers
 * standing in for the service that hold each message until the input says
 * to answer it.  The input is a script of what the clients and the
 * service do: bytes (whole, partial, garbage), file descriptors of every
 * kind passed with them, half-closes and closes, answers (copied or by
 * reference, corked or not), fds taken, limits changed live, connections
 * failed or closed by the service, the loop run in between.
 *
 * Input: [max_message u16] [max_objects] [max_pending] [input_limit u16]
 * [output_limit u16] [clients_memory u16] [max_clients] (each scaled, see
 * start()), then steps [op % 14] [operands]:
 *   0 connect                1 [client] [len u16] bytes   2 [client] [nfds]
 *   [kind] [len] bytes, with fds   3 [client] [n u32]: a message of n bytes
 *   (n % 160 KiB)
 *   9 [client] [max u16]: read   10 [client]: shutdown   11 [client]: close
 *   12 [n]: run the loop        4..8, 13 [b] [n u16]: the service answers,
 *   notifies, takes an fd, fails or closes a connection, reloads, drains.
 *
 * Checked:
 *   - each message handed on is exactly the next bytes its client wrote
 *     (none lost, reordered, duplicated or invented) and one whole msgpack
 *     object; a connection never has more than max_pending handed on;
 *   - on_fatal comes once, after every message handed on is done;
 *   - what a client reads is exactly the answers sent to it, in order (a
 *     prefix: a connection that is cut loses the rest);
 *   - each fd taken is the oldest one its client passed and not yet taken,
 *     and `together` is how many came on that sendmsg;
 *   - every srv_owner_t's done runs exactly once;
 *   - once the clients are gone and every message is done, the server holds
 *     no input or output bytes and no parked fd, no fd of the input is left
 *     open, the loop has the handles it had before the input, and after
 *     srv_close every loop handle is closed (uv_loop_close).
 *
 * One loop and one server serve every input of the process.  An input
 * sets its limits as a reload does, makes the server accept again if the
 * last one drained it, and leaves it as it found it (every connection
 * closed, nothing held).  A max_clients byte of 0xff also closes server
 * and loop after the input (srv_close), so their closing is fuzzed too.
 */
#define _GNU_SOURCE 1 /* memfd_create */
#include <fcntl.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <uv.h>

#include "fuzz_common.h"
#include "fuzz_loop.h"
#include "log.h"
#include "server.h"

#define MAX_CLIENTS 4
#define MAX_CONNECTS 6
#define MAX_HELD 64
#define STREAM_CAP (256u * 1024)
#define MAX_PASSED 64

typedef struct client {
  int fd;                 /* our end; -1 once closed */
  srv_conn_t *conn;       /* the server's end, once seen; NULL after on_close */
  bool closed_by_server;  /* on_close came */
  int fatals;
  uint8_t *written;       /* what we wrote, in order */
  size_t nwritten, ndelivered;
  uint8_t *answers;       /* what the service sent it, in order */
  size_t nanswers, nread;
  /* fds passed and not taken, oldest first: the inode, which sendmsg, the
   * offset of its first byte (the server has them once it read past it) */
  struct { ino_t ino; unsigned send; size_t at; bool memfd; } passed[MAX_PASSED];
  unsigned npassed, sends;
  bool fds_unchecked;     /* more than SRV_MAX_FDS queued at once: the server drops some */
} client_t;

typedef struct held {
  srv_conn_t *conn;
  srv_msg_t *msg;
  int client;
} held_t;

typedef struct owner {
  srv_owner_t base;
  char *bytes;
} owner_t;

static struct {
  uv_loop_t loop;
  srv_t *srv;
  srv_options_t opts;
  char dir[64], path[128];
  client_t clients[MAX_CONNECTS];
  int nconnects;
  held_t held[MAX_HELD];
  int nheld;
  int owners; /* srv_owner_t given and not done */
  unsigned delivered; /* messages handed on in this input */
  uint32_t seq;
  uint64_t id_base; /* connections of earlier inputs: this input's first is id_base + 1 */
  bool teardown;    /* close the server after this input (max_clients byte 0xff) */
} s;

/* ---- the service's side ------------------------------------------------------- */

static client_t *client_of(srv_conn_t *conn) {
  uint64_t id = srv_conn_id(conn) - s.id_base;
  FUZZ_CHECK(id >= 1 && id <= (uint64_t)s.nconnects, "connection id %llu of %d connects",
             (unsigned long long)id, s.nconnects);
  return &s.clients[id - 1];
}

static void on_message(srv_conn_t *conn, srv_msg_t *msg, void *data) {
  client_t *c = client_of(conn);
  proto_reader_t r;
  size_t n = 0;
  (void)data;
  c->conn = conn;
  FUZZ_CHECK(c->ndelivered + msg->len <= c->nwritten &&
                 memcmp(c->written + c->ndelivered, msg->data, msg->len) == 0,
             "message of %zu bytes at %zu is not what client %d wrote (%zu bytes)", msg->len,
             c->ndelivered, (int)(c - s.clients), c->nwritten);
  c->ndelivered += msg->len;
  proto_reader_init(&r, msg->len ? msg->len : 1);
  FUZZ_CHECK(msg->len > 0 && proto_reader_feed(&r, msg->data, msg->len, &n, NULL) == 1 &&
                 n == msg->len,
             "a message of %zu bytes is not one msgpack object", msg->len);
  FUZZ_CHECK(srv_conn_pending(conn) <= s.opts.max_pending, "%u pending, max_pending %u",
             srv_conn_pending(conn), s.opts.max_pending);
  FUZZ_CHECK(s.nheld < MAX_HELD, "more than %d messages held", MAX_HELD);
  s.held[s.nheld++] = (held_t){conn, msg, (int)(c - s.clients)};
  /* 64 KiB of 1-byte messages would take seconds to answer one by one
   * under ASan: a service may close a flooding client. */
  if (++s.delivered % 4096 == 0) srv_conn_close(conn);
}

static void on_close(srv_conn_t *conn, void *data) {
  client_t *c = client_of(conn);
  (void)data;
  c->conn = NULL;
  c->closed_by_server = true;
}

/* Each answer is n bytes of a value of its own (a byte loop would cost
 * more than the server under coverage instrumentation). */
static void fill(char *bytes, size_t n) { memset(bytes, (int)(s.seq++ * 7u + 1u), n); }

/* Queue n answer bytes for c by copy. */
static void answer(srv_conn_t *conn, client_t *c, size_t n) {
  char *bytes;
  if (n > STREAM_CAP - c->nanswers) n = STREAM_CAP - c->nanswers;
  bytes = malloc(n ? n : 1);
  FUZZ_CHECK(bytes, "no memory");
  fill(bytes, n);
  memcpy(c->answers + c->nanswers, bytes, n);
  c->nanswers += n;
  srv_conn_send(conn, bytes, n);
}

static void on_fatal(srv_conn_t *conn, const pto_error_t *err, const uint32_t *msgid, void *data) {
  client_t *c = client_of(conn);
  (void)data;
  (void)msgid;
  c->conn = conn;
  FUZZ_CHECK(err->code > 0 && err->message[0], "on_fatal without a reason");
  FUZZ_CHECK(srv_conn_pending(conn) == 0, "on_fatal with %u messages pending",
             srv_conn_pending(conn));
  FUZZ_CHECK(++c->fatals == 1, "on_fatal came %d times", c->fatals);
  answer(conn, c, 5);
}

static void owner_done(srv_owner_t *base) {
  owner_t *o = (owner_t *)base;
  free(o->bytes);
  free(o);
  FUZZ_CHECK(--s.owners >= 0, "an owner's done ran twice");
}

/* Queue n answer bytes for c by reference, in up to three parts. */
static void answer_parts(srv_conn_t *conn, client_t *c, size_t n) {
  owner_t *o = calloc(1, sizeof *o);
  struct iovec parts[3];
  if (n > STREAM_CAP - c->nanswers) n = STREAM_CAP - c->nanswers;
  FUZZ_CHECK(o && (o->bytes = malloc(n ? n : 1)), "no memory");
  fill(o->bytes, n);
  memcpy(c->answers + c->nanswers, o->bytes, n);
  c->nanswers += n;
  parts[0] = (struct iovec){o->bytes, n / 3};
  parts[1] = (struct iovec){o->bytes + n / 3, 0};
  parts[2] = (struct iovec){o->bytes + n / 3, n - n / 3};
  o->base.done = owner_done;
  s.owners++;
  srv_conn_send_parts(conn, parts, 3, &o->base, n ? n : 1);
}

static void done_held(int k, int how, size_t n) {
  held_t h = s.held[k];
  client_t *c = &s.clients[h.client];
  memmove(&s.held[k], &s.held[k + 1], (size_t)(s.nheld - k - 1) * sizeof s.held[0]);
  s.nheld--;
  if (how == 1) answer(h.conn, c, n);
  if (how == 2) answer_parts(h.conn, c, n);
  srv_msg_done(h.conn, h.msg);
}

/* ---- the clients' side -------------------------------------------------------- */

static void client_connect(void) {
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  client_t *c = &s.clients[s.nconnects];
  int open = 0;
  for (int i = 0; i < s.nconnects; i++) open += s.clients[i].fd >= 0;
  if (s.nconnects == MAX_CONNECTS || open == MAX_CLIENTS) return;
  snprintf(addr.sun_path, sizeof addr.sun_path, "%s", s.path);
  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  FUZZ_CHECK(c->fd >= 0 && connect(c->fd, (struct sockaddr *)&addr, sizeof addr) == 0,
             "connect: %s", strerror(errno));
  s.nconnects++;
}

/* How much of len bytes a client may still write (the record is bounded). */
static size_t room(const client_t *c, size_t len) {
  return len < STREAM_CAP - c->nwritten ? len : STREAM_CAP - c->nwritten;
}

static void record_written(client_t *c, const void *p, ssize_t n) {
  if (n <= 0) return;
  memcpy(c->written + c->nwritten, p, (size_t)n);
  c->nwritten += (size_t)n;
}

/* An fd of kind k to pass, and the inode that identifies it. */
static int passable_fd(uint8_t k) {
  int fds[2], fd;
  switch (k % 4) {
    case 0: fd = memfd_create("fuzz", MFD_CLOEXEC | MFD_ALLOW_SEALING); break;
    case 1: fd = eventfd(0, EFD_CLOEXEC); break;
    case 2:
      FUZZ_CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe");
      close(fds[1]);
      fd = fds[0];
      break;
    default:
      FUZZ_CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds) == 0, "socketpair");
      close(fds[1]);
      fd = fds[0];
  }
  FUZZ_CHECK(fd >= 0, "fd of kind %u: %s", k % 4, strerror(errno));
  return fd;
}

/* sendmsg of bytes with nfds fds (the same one twice when dup is set). */
static void client_send_fds(client_t *c, const uint8_t *p, size_t len, unsigned nfds, uint8_t kind) {
  union {
    char buf[CMSG_SPACE(sizeof(int) * 12)];
    struct cmsghdr align;
  } control;
  struct iovec iov = {(void *)(uintptr_t)p, len};
  struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
  int fds[12];
  struct cmsghdr *cm;
  ssize_t n;
  memset(&control, 0, sizeof control);
  for (unsigned i = 0; i < nfds; i++)
    fds[i] = (kind & 0x80) && i > 0 ? fds[0] : passable_fd((uint8_t)(kind + i));
  mh.msg_control = control.buf;
  mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
  cm = CMSG_FIRSTHDR(&mh);
  cm->cmsg_level = SOL_SOCKET;
  cm->cmsg_type = SCM_RIGHTS;
  cm->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
  memcpy(CMSG_DATA(cm), fds, sizeof(int) * nfds);
  n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
  if (n > 0) {
    c->sends++;
    for (unsigned i = 0; i < nfds; i++) {
      struct stat st;
      FUZZ_CHECK(fstat(fds[i], &st) == 0, "fstat");
      if (c->npassed == SRV_MAX_FDS) {
        c->fds_unchecked = true;
        break;
      }
      c->passed[c->npassed].ino = st.st_ino;
      c->passed[c->npassed].at = c->nwritten;
      c->passed[c->npassed].memfd = fcntl(fds[i], F_GET_SEALS) >= 0; /* the one kind kept */
      c->passed[c->npassed++].send = c->sends;
    }
  }
  record_written(c, p, n);
  for (unsigned i = 0; i < nfds; i++)
    if (!((kind & 0x80) && i > 0)) close(fds[i]);
}

static void client_take_fd(client_t *c) {
  unsigned together = 0, popped = 1;
  struct stat st;
  int fd;
  if (!c->conn) return;
  fd = srv_conn_take_fd(c->conn, &together);
  if (c->fds_unchecked) {
    if (fd >= 0) close(fd);
    return;
  }
  if (fd == -1) {
    FUZZ_CHECK(together == 0 && (c->npassed == 0 || c->passed[0].at >= c->ndelivered),
               "no fd to take, but %u were passed before byte %zu, which was handed on",
               c->npassed, c->ndelivered);
    return;
  }
  if (fd == SRV_FD_REFUSED) {
    FUZZ_CHECK(c->npassed > 0 && !c->passed[0].memfd,
               "the oldest fd passed (%d queued) is a memfd, but it was refused", c->npassed);
  } else {
    FUZZ_CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_ino == c->passed[0].ino,
               "took fd %d, not the oldest passed (%d queued)", fd, c->npassed);
    FUZZ_CHECK(c->passed[0].memfd, "took fd %d, which is not a memfd", fd);
    close(fd);
  }
  while (popped < c->npassed && c->passed[popped].send == c->passed[0].send) popped++;
  FUZZ_CHECK(together == popped, "together %u, but %u came on that sendmsg", together, popped);
  c->npassed -= popped;
  memmove(c->passed, c->passed + popped, c->npassed * sizeof c->passed[0]);
}

static void client_read(client_t *c, size_t max) {
  uint8_t buf[8192];
  ssize_t n;
  if (c->fd < 0) return;
  n = recv(c->fd, buf, max < sizeof buf ? max : sizeof buf, MSG_DONTWAIT);
  if (n <= 0) return;
  FUZZ_CHECK(c->nread + (size_t)n <= c->nanswers &&
                 memcmp(c->answers + c->nread, buf, (size_t)n) == 0,
             "client %d read %zd bytes at %zu that are not the answers sent (%zu)",
             (int)(c - s.clients), n, c->nread, c->nanswers);
  c->nread += (size_t)n;
}

static void client_close(client_t *c) {
  if (c->fd < 0) return;
  for (size_t before = c->nread + 1; before != c->nread;) {
    before = c->nread;
    client_read(c, SIZE_MAX);
  }
  close(c->fd);
  c->fd = -1;
}

/* [0, id, "ping", [bin of n bytes]]: a message of any size, made here. */
static void client_send_big(client_t *c, uint32_t n) {
  /* One zeroed buffer, its header written each time: a calloc of up to
   * 160 KiB per message was a fifth of the harness's time under ASan. */
  static uint8_t m[14 + 160u * 1024];
  size_t len = 14 + (size_t)n;
  ssize_t w;
  FUZZ_CHECK(len <= sizeof m, "a message of %zu bytes", len);
  memcpy(m, "\x94\x00\x01\xa4ping\x91\xc6", 10);
  m[10] = (uint8_t)(n >> 24), m[11] = (uint8_t)(n >> 16), m[12] = (uint8_t)(n >> 8);
  m[13] = (uint8_t)n;
  w = room(c, len) ? send(c->fd, m, room(c, len), MSG_NOSIGNAL) : 0;
  record_written(c, m, w);
}

/* ---- the script ---------------------------------------------------------------- */

static client_t *pick_client(fuzz_in_t *in) {
  if (s.nconnects == 0) return NULL;
  client_t *c = &s.clients[fuzz_u8(in) % s.nconnects];
  return c->fd >= 0 ? c : NULL;
}

static void service_step(uint8_t op, fuzz_in_t *in) {
  uint8_t b = fuzz_u8(in);
  size_t n = fuzz_u16(in) % 20000;
  client_t *c = s.nconnects ? &s.clients[b % s.nconnects] : NULL;
  pto_error_t err;
  switch (op) {
    case 4: /* answer (copied, by reference, not at all) and done; corked or not */
      if (!s.nheld) return;
      if (b & 0x80) srv_cork(s.srv);
      done_held(b % s.nheld, (b >> 4) % 3, n);
      if (s.nheld && (b & 0x40)) done_held(0, 1, n / 2);
      if (b & 0x80) srv_uncork(s.srv);
      return;
    case 5: /* a notification to a connection, with no message */
      if (c && c->conn) answer(c->conn, c, n);
      return;
    case 6:
      if (c) client_take_fd(c);
      return;
    case 7: /* the service gives up on a connection */
      if (!c || !c->conn) return;
      if (b & 0x80) {
        srv_conn_close(c->conn);
        return;
      }
      pto_error_set(&err, PTO_E_INVALID_REQUEST, "The service failed the connection.");
      srv_conn_fail(c->conn, &err);
      return;
    case 8: /* a reload with other limits */
      s.opts.max_message = 16 + n * 3;
      s.opts.max_pending = 1 + b % 8;
      srv_update_options(s.srv, &s.opts);
      return;
    default: /* stop accepting, as a drain does */
      if (b == 0xff) srv_stop_accepting(s.srv);
  }
}

static void client_step(uint8_t op, fuzz_in_t *in) {
  client_t *c;
  size_t len;
  const uint8_t *p;
  if (op == 0) {
    client_connect();
    return;
  }
  c = pick_client(in);
  if (!c) return;
  switch (op) {
    case 1:
      p = fuzz_bytes(in, fuzz_u16(in) % 4096, &len);
      len = room(c, len);
      if (len) record_written(c, p, send(c->fd, p, len, MSG_NOSIGNAL));
      return;
    case 2: {
      uint8_t nfds = fuzz_u8(in), kind = fuzz_u8(in);
      p = fuzz_bytes(in, fuzz_u8(in) % 64 + 1, &len);
      len = room(c, len);
      if (len) client_send_fds(c, p, len, nfds % 12 + 1, kind);
      return;
    }
    case 3:
      client_send_big(c, fuzz_u32(in) % (160u * 1024));
      return;
    case 9:
      client_read(c, fuzz_u16(in) + 1u);
      return;
    case 10:
      shutdown(c->fd, SHUT_WR);
      return;
    default:
      client_close(c);
  }
}

static void step(fuzz_in_t *in) {
  uint8_t op = fuzz_u8(in) % 14;
  if (op == 0 || op == 1 || op == 2 || op == 3 || op == 9 || op == 10 || op == 11)
    client_step(op, in);
  else if (op == 12)
    for (unsigned i = fuzz_u8(in) % 4 + 1; i > 0; i--) uv_run(&s.loop, UV_RUN_NOWAIT);
  else
    service_step(op == 13 ? 9 : op, in);
}

/* ---- one input ----------------------------------------------------------------- */

/* The loop and the server every input shares, made with the options of
 * the last start() (or none: each input sets its own). */
static void open_server(void) {
  srv_handlers_t h = {on_message, on_close, on_fatal, NULL};
  pto_error_t err;
  s.opts.socket_path = s.path;
  s.opts.socket_mode = 0600;
  s.opts.socket_gid = (gid_t)-1;
  FUZZ_CHECK(uv_loop_init(&s.loop) == 0, "uv_loop_init");
  FUZZ_CHECK(srv_create(&s.loop, &s.opts, &h, &s.srv, &err) == 0, "the server did not start: %s",
             err.message);
}

/* The input's limits, set as a reload sets them, and the server accepting
 * (again, if the last input drained it). */
static void start(fuzz_in_t *in) {
  pto_error_t err;
  srv_options_t *o = &s.opts;
  uint8_t clients;
  /* Up to 64 KiB: a read buffer holds at most max_message + 64 KiB, which
   * bounds the messages finish() drains one by one. */
  o->max_message = 16 + fuzz_u16(in);
  o->max_objects = 1 + fuzz_u8(in) * 64u;
  o->max_pending = 1 + fuzz_u8(in) % 8;
  o->input_limit = 1024 + fuzz_u16(in) * 4u;
  o->output_limit = 1024 + fuzz_u16(in) * 4u;
  o->clients_memory = 4096 + fuzz_u16(in) * 8u;
  clients = fuzz_u8(in);
  o->max_clients = 1 + clients % MAX_CLIENTS;
  s.teardown = clients == 0xff;
  o->client_timeout_ms = 600000; /* no timer may fire: the run must not depend on time */
  srv_update_options(s.srv, o);
  FUZZ_CHECK(srv_listen(s.srv, &err) == 0, "the server did not listen: %s", err.message);
}

/* The input's outcome (fuzz_outcomes): messages handed on; per connection
 * bytes handed on, answered, read, and fatals.  Not bytes written: into a
 * failed connection they go until the closer's thread closes its end. */
static void record_outcome(void) {
  FILE *f = fuzz_outcomes();
  if (!f) return;
  fprintf(f, "delivered %u:", s.delivered);
  for (const client_t *c = s.clients; c < s.clients + s.nconnects; c++)
    fprintf(f, " %zu/%zu/%zu/%d", c->ndelivered, c->nanswers, c->nread, c->fatals);
  fprintf(f, "\n");
  fflush(f);
}

static bool all_closed(void) { /* every connection of the input accepted and closed */
  for (int i = 0; i < s.nconnects; i++)
    if (!s.clients[i].closed_by_server) return false;
  return true;
}

/* Every client gone, every message done: the server must let go of all
 * the input gave it, and be as it was before the input (handles open). */
static void finish(unsigned handles_before) {
  srv_memory_t mem;
  srv_fds_t fds;
  int rounds = 0;
  for (int i = 0; i < s.nconnects; i++) client_close(&s.clients[i]);
  while (s.nheld) done_held(s.nheld - 1, 0, 0);
  /* Once at least: a connection still in the listener's backlog is
   * accepted (and sees its peer gone) before the next input. */
  do {
    FUZZ_CHECK(++rounds < 1000, "%u connections stay open after their clients left",
               srv_client_count(s.srv));
    uv_run(&s.loop, UV_RUN_NOWAIT);
    while (s.nheld) done_held(s.nheld - 1, 0, 0);
  } while (srv_client_count(s.srv) > 0 || s.nheld || !all_closed());
  fuzz_loop_settle(&s.loop, handles_before);
  srv_memory(s.srv, &mem);
  FUZZ_CHECK(mem.input == 0 && mem.output == 0, "the server still holds %llu bytes of input and "
             "%llu of output for no client", (unsigned long long)mem.input,
             (unsigned long long)mem.output);
  srv_fds(s.srv, &fds);
  FUZZ_CHECK(fds.parked == 0, "%llu passed fds parked for no client",
             (unsigned long long)fds.parked);
  FUZZ_CHECK(s.owners == 0, "%d owners were never done", s.owners);
  s.id_base += (uint64_t)s.nconnects;
}

/* Close the server and the loop; the next input makes them again. */
static void teardown(void) {
  srv_close(s.srv);
  s.srv = NULL;
  uv_run(&s.loop, UV_RUN_DEFAULT);
  FUZZ_CHECK(uv_loop_close(&s.loop) == 0, "a loop handle is still open after srv_close");
  s.id_base = 0;
}

static void reset(uint8_t *buffers) {
  memset(s.clients, 0, sizeof s.clients);
  for (int i = 0; i < MAX_CONNECTS; i++) {
    s.clients[i].fd = -1;
    s.clients[i].written = buffers + 2u * STREAM_CAP * (size_t)i;
    s.clients[i].answers = s.clients[i].written + STREAM_CAP;
  }
  s.nconnects = s.nheld = s.owners = 0;
  s.delivered = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uint8_t *buffers;
  fuzz_in_t in = {data, size};
  bool before[FUZZ_FD_SCAN];
  unsigned handles;
  if (!buffers) {
    log_set_level(LOG_ERR); /* the clients' lines would drown libFuzzer's */
    (void)fuzz_outcomes(); /* its fd is the process's, not an input's */
    signal(SIGPIPE, SIG_IGN); /* as ptod.c: a peer gone is an error return, not a signal */
    snprintf(s.dir, sizeof s.dir, "/tmp/fuzz_server-XXXXXX");
    FUZZ_CHECK(mkdtemp(s.dir), "mkdtemp: %s", strerror(errno));
    snprintf(s.path, sizeof s.path, "%s/s.sock", s.dir);
    buffers = malloc(2u * STREAM_CAP * MAX_CONNECTS);
    FUZZ_CHECK(buffers, "no memory");
    open_server();
    reset(buffers); /* one empty run first: what libuv opens once per process stays */
    start(&(fuzz_in_t){NULL, 0});
    finish(fuzz_loop_handles(&s.loop));
    fuzz_closer_drain();
  }
  if (!s.srv) open_server(); /* after a teardown */
  reset(buffers);
  fuzz_fds_open(before);
  handles = fuzz_loop_handles(&s.loop);
  start(&in);
  for (int steps = 0; in.left > 0 && steps < 256; steps++) step(&in);
  finish(handles);
  record_outcome();
  /* Passed fds and closed connections' sockets are closed on the closer's
   * thread (closer.h): every one of them, before the fd table is checked. */
  fuzz_closer_drain();
  fuzz_fds_check(before);
  if (s.teardown) teardown();
  return 0;
}
