/* SPDX-License-Identifier: Apache-2.0 */
/* ptod_load — the load generator of the reliability tests (test_load.py).
 *
 * N client threads, each on a connection of its own, pipeline M mixed
 * requests with at most W in flight: ping, status, dispatch of vector_add,
 * matmul and noop (mostly on the daemon's baseline sizing, a few percent on
 * two other sizings), dispatches that write into the client's own resident
 * buffer, and buffer.alloc/write/read/free/list on that buffer.  Every
 * response is checked against its request: it must answer a request in
 * flight on that connection (else it is counted as unknown or duplicate),
 * and its result must be the one that request must get (vector_add's sums,
 * matmul's product, noop's task count, the bytes a buffer read must return
 * given every write before it).  After its last request each client sends a
 * ping and checks that its answer is the next message: nothing arrives late.
 *
 * It speaks msgpack-RPC itself instead of through libptoclient: the library
 * drops, by design, an answer it cannot match to a request (client.c), and a
 * load test must count those.
 *
 * Output: one JSON line of figures on stdout; details of the first failures
 * on stderr.  Exit 0 only when every request got exactly one correct
 * response; 1 otherwise; 2 on bad usage.
 */
#include <errno.h>
#include <stdarg.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <msgpack.h>

#define MAX_WINDOW 256
#define MAX_FAILURES_SHOWN 10
#define BUF_MIN 1024u
#define BUF_SPAN 3072u
#define ALT_TASK_WINDOW 128u
#define ALT_DEP_POOL 512u

typedef enum kind {
  K_PING,
  K_STATUS,
  K_ADD,      /* vector_add, host output */
  K_ADD_BUF,  /* vector_add into a slice of the client's buffer */
  K_MATMUL,
  K_NOOP,
  K_ALLOC,
  K_WRITE,
  K_READ,
  K_FREE,
  K_LIST,
  K_COUNT
} kind_t;

static const char *const kind_names[K_COUNT] = {
    "ping", "status", "vector_add", "vector_add_to_buffer", "matmul", "noop",
    "buffer_alloc", "buffer_write", "buffer_read", "buffer_free", "buffer_list"};

typedef struct inflight {
  bool used;
  uint32_t msgid;
  kind_t kind;
  int sizing;        /* 0 baseline, 1 ring_task_window, 2 ring_dep_pool */
  uint8_t *expect;   /* bytes the result must hold (owned) */
  size_t expect_len;
  uint64_t number;   /* noop: tasks; alloc, write, free: bytes */
  bool final;        /* the closing ping, not one of the M */
} inflight_t;

typedef struct options {
  const char *socket_path;
  unsigned clients, requests, window, other_sizing_percent, timeout_s;
  uint64_t seed;
} options_t;

typedef struct client {
  const options_t *opt;
  unsigned id;
  int fd;
  uint64_t rng;
  uint32_t next_msgid;
  inflight_t slots[MAX_WINDOW];
  unsigned n_inflight;
  char name[32];
  bool allocated;
  uint8_t *shadow; /* what the buffer holds once every request sent so far has run */
  size_t buf_bytes;
  msgpack_unpacker up;
  msgpack_sbuffer sb;
  /* figures */
  uint64_t sent, answered, unknown, mismatches, errors, lost;
  uint64_t by_kind[K_COUNT], arena_hits, arena_misses;
  bool failed;
} client_t;

static atomic_uint failures_shown;
static uint64_t deadline_ns;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t next_rand(uint64_t *s) { /* splitmix64 */
  uint64_t z = (*s += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

static unsigned below(client_t *c, unsigned n) { return (unsigned)(next_rand(&c->rng) % n); }

static void failure(client_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void failure(client_t *c, const char *fmt, ...) {
  va_list ap;
  c->failed = true;
  if (atomic_fetch_add(&failures_shown, 1) >= MAX_FAILURES_SHOWN) return;
  fprintf(stderr, "ptod_load: client %u: ", c->id);
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  va_end(ap);
  fputc('\n', stderr);
}

/* ---- msgpack helpers ------------------------------------------------------ */

static void pack_str(msgpack_packer *pk, const char *s) {
  size_t n = strlen(s);
  msgpack_pack_str(pk, n);
  msgpack_pack_str_body(pk, s, n);
}

static void pack_bin(msgpack_packer *pk, const void *p, size_t n) {
  msgpack_pack_bin(pk, n);
  msgpack_pack_bin_body(pk, p, n);
}

static const msgpack_object *map_get(const msgpack_object *o, const char *key) {
  size_t n = strlen(key);
  if (!o || o->type != MSGPACK_OBJECT_MAP) return NULL;
  for (uint32_t i = 0; i < o->via.map.size; i++) {
    const msgpack_object *k = &o->via.map.ptr[i].key;
    if (k->type == MSGPACK_OBJECT_STR && k->via.str.size == n && memcmp(k->via.str.ptr, key, n) == 0)
      return &o->via.map.ptr[i].val;
  }
  return NULL;
}

static bool is_uint(const msgpack_object *o, uint64_t v) {
  return o && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 == v;
}

static bool is_str(const msgpack_object *o, const char *s) {
  return o && o->type == MSGPACK_OBJECT_STR && o->via.str.size == strlen(s) &&
         memcmp(o->via.str.ptr, s, o->via.str.size) == 0;
}

static bool is_bin(const msgpack_object *o, const uint8_t *p, size_t n) {
  return o && o->type == MSGPACK_OBJECT_BIN && o->via.bin.size == n &&
         (n == 0 || memcmp(o->via.bin.ptr, p, n) == 0);
}

/* Four equal entries v. */
static bool is_quad(const msgpack_object *o, uint64_t v) {
  if (!o || o->type != MSGPACK_OBJECT_ARRAY || o->via.array.size != 4) return false;
  for (int r = 0; r < 4; r++)
    if (!is_uint(&o->via.array.ptr[r], v)) return false;
  return true;
}

/* ---- requests --------------------------------------------------------------- */

static int send_all(client_t *c, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static inflight_t *slot_new(client_t *c) {
  for (unsigned i = 0; i < c->opt->window; i++)
    if (!c->slots[i].used) {
      memset(&c->slots[i], 0, sizeof(c->slots[i]));
      c->slots[i].used = true;
      c->n_inflight++;
      return &c->slots[i];
    }
  return NULL;
}

static void slot_done(client_t *c, inflight_t *s) {
  free(s->expect);
  s->expect = NULL;
  s->used = false;
  c->n_inflight--;
}

static void pack_config(msgpack_packer *pk, int sizing) {
  pack_str(pk, "config");
  msgpack_pack_map(pk, 1);
  if (sizing == 1) {
    pack_str(pk, "ring_task_window");
    msgpack_pack_uint32(pk, ALT_TASK_WINDOW);
  } else {
    pack_str(pk, "ring_dep_pool");
    msgpack_pack_uint32(pk, ALT_DEP_POOL);
  }
}

static int pick_sizing(client_t *c) {
  if (below(c, 100) >= c->opt->other_sizing_percent) return 0;
  return 1 + (int)below(c, 2);
}

/* Small integers: every sum and product below is exact in float. */
static void fill_floats(client_t *c, float *v, unsigned n) {
  for (unsigned i = 0; i < n; i++) v[i] = (float)((int)below(c, 2001) - 1000);
}

static void pack_vector_add(client_t *c, msgpack_packer *pk, inflight_t *s, bool to_buffer) {
  unsigned n = 1 + below(c, 64);
  float a[64], b[64], sum[64];
  uint64_t offset = 0;
  fill_floats(c, a, n);
  fill_floats(c, b, n);
  for (unsigned i = 0; i < n; i++) sum[i] = a[i] + b[i];
  s->sizing = pick_sizing(c);
  msgpack_pack_map(pk, s->sizing ? 3 : 2);
  pack_str(pk, "program");
  pack_str(pk, "vector_add");
  pack_str(pk, "args");
  msgpack_pack_array(pk, 3);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "data");
  pack_bin(pk, a, 4 * n);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "data");
  pack_bin(pk, b, 4 * n);
  if (to_buffer) {
    offset = 4u * below(c, (unsigned)((c->buf_bytes - 4 * n) / 4 + 1)); /* f32-aligned */
    msgpack_pack_map(pk, 3);
    pack_str(pk, "buffer");
    pack_str(pk, c->name);
    pack_str(pk, "offset");
    msgpack_pack_uint64(pk, offset);
    pack_str(pk, "bytes");
    msgpack_pack_uint64(pk, 4 * n);
    memcpy(c->shadow + offset, sum, 4 * n);
  } else {
    msgpack_pack_map(pk, 1);
    pack_str(pk, "out");
    msgpack_pack_uint32(pk, 4 * n);
    s->expect = malloc(4 * n);
    memcpy(s->expect, sum, 4 * n);
    s->expect_len = 4 * n;
  }
  if (s->sizing) pack_config(pk, s->sizing);
}

static void pack_matmul(client_t *c, msgpack_packer *pk, inflight_t *s) {
  unsigned m = 1 + below(c, 6), n = 1 + below(c, 6), k = 1 + below(c, 6);
  float a[36], b[36], prod[36];
  for (unsigned i = 0; i < m * k; i++) a[i] = (float)((int)below(c, 9) - 4);
  for (unsigned i = 0; i < k * n; i++) b[i] = (float)((int)below(c, 9) - 4);
  for (unsigned i = 0; i < m; i++)
    for (unsigned j = 0; j < n; j++) {
      float acc = 0;
      for (unsigned x = 0; x < k; x++) acc += a[i * k + x] * b[x * n + j];
      prod[i * n + j] = acc;
    }
  s->sizing = pick_sizing(c);
  msgpack_pack_map(pk, s->sizing ? 3 : 2);
  pack_str(pk, "program");
  pack_str(pk, "matmul");
  pack_str(pk, "args");
  msgpack_pack_array(pk, 6);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "data");
  pack_bin(pk, a, 4 * m * k);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "data");
  pack_bin(pk, b, 4 * k * n);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "out");
  msgpack_pack_uint32(pk, 4 * m * n);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "scalar");
  msgpack_pack_uint32(pk, m);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "scalar");
  msgpack_pack_uint32(pk, n);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "scalar");
  msgpack_pack_uint32(pk, k);
  if (s->sizing) pack_config(pk, s->sizing);
  s->expect = malloc(4 * m * n);
  memcpy(s->expect, prod, 4 * m * n);
  s->expect_len = 4 * m * n;
}

static void pack_noop(client_t *c, msgpack_packer *pk, inflight_t *s) {
  unsigned tasks = 1 + below(c, 8), depth = below(c, 3);
  s->sizing = pick_sizing(c);
  s->number = tasks;
  msgpack_pack_map(pk, s->sizing ? 3 : 2);
  pack_str(pk, "program");
  pack_str(pk, "noop");
  pack_str(pk, "args");
  msgpack_pack_array(pk, 3);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "scalar");
  msgpack_pack_uint32(pk, tasks);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "scalar");
  msgpack_pack_uint32(pk, depth);
  msgpack_pack_map(pk, 1);
  pack_str(pk, "scalar");
  msgpack_pack_uint32(pk, 0);
  if (s->sizing) pack_config(pk, s->sizing);
}

/* Which buffer operation comes next: the buffer must exist first. */
static kind_t choose_buffer_op(client_t *c) {
  unsigned r = below(c, 10);
  if (!c->allocated) return K_ALLOC;
  return r < 4 ? K_WRITE : r < 8 ? K_READ : r < 9 ? K_FREE : K_LIST;
}

/* A buffer operation's params; the shadow follows what the daemon will
 * have done once it has run everything sent so far (device methods of a
 * connection run in the order they were sent). */
static void pack_buffer_op(client_t *c, msgpack_packer *pk, inflight_t *s, kind_t kind) {
  size_t off, len;
  bool init;
  switch (kind) {
  case K_ALLOC:
    init = below(c, 2) == 0;
    c->buf_bytes = BUF_MIN + below(c, BUF_SPAN);
    c->shadow = calloc(1, c->buf_bytes);
    if (init)
      for (size_t i = 0; i < c->buf_bytes; i++) c->shadow[i] = (uint8_t)next_rand(&c->rng);
    c->allocated = true;
    s->number = c->buf_bytes;
    msgpack_pack_map(pk, init ? 3 : 2);
    pack_str(pk, "name");
    pack_str(pk, c->name);
    pack_str(pk, "bytes");
    msgpack_pack_uint64(pk, c->buf_bytes);
    if (init) {
      pack_str(pk, "init");
      pack_bin(pk, c->shadow, c->buf_bytes);
    }
    break;
  case K_WRITE:
    off = below(c, (unsigned)c->buf_bytes);
    len = 1 + below(c, 512);
    if (len > c->buf_bytes - off) len = c->buf_bytes - off;
    for (size_t i = 0; i < len; i++) c->shadow[off + i] = (uint8_t)next_rand(&c->rng);
    s->number = len;
    msgpack_pack_map(pk, 3);
    pack_str(pk, "name");
    pack_str(pk, c->name);
    pack_str(pk, "offset");
    msgpack_pack_uint64(pk, off);
    pack_str(pk, "data");
    pack_bin(pk, c->shadow + off, len);
    break;
  case K_READ:
    off = below(c, (unsigned)c->buf_bytes);
    len = 1 + below(c, 1024);
    if (len > c->buf_bytes - off) len = c->buf_bytes - off;
    s->expect = malloc(len);
    memcpy(s->expect, c->shadow + off, len);
    s->expect_len = len;
    msgpack_pack_map(pk, 3);
    pack_str(pk, "name");
    pack_str(pk, c->name);
    pack_str(pk, "offset");
    msgpack_pack_uint64(pk, off);
    pack_str(pk, "bytes");
    msgpack_pack_uint64(pk, len);
    break;
  case K_FREE:
    s->number = c->buf_bytes;
    free(c->shadow);
    c->shadow = NULL;
    c->allocated = false;
    msgpack_pack_map(pk, 1);
    pack_str(pk, "name");
    pack_str(pk, c->name);
    break;
  default: break;
  }
}

static const char *method_of(kind_t kind) {
  switch (kind) {
  case K_PING: return "ping";
  case K_STATUS: return "status";
  case K_ADD:
  case K_ADD_BUF:
  case K_MATMUL:
  case K_NOOP: return "dispatch";
  case K_ALLOC: return "buffer.alloc";
  case K_WRITE: return "buffer.write";
  case K_READ: return "buffer.read";
  case K_FREE: return "buffer.free";
  default: return "buffer.list";
  }
}

/* [0, msgid, method, params] of one request of the mix, sent. */
static int send_request(client_t *c, inflight_t *s, kind_t kind) {
  msgpack_packer pk;
  int rc;

  msgpack_sbuffer_clear(&c->sb);
  msgpack_packer_init(&pk, &c->sb, msgpack_sbuffer_write);
  s->kind = kind;
  s->msgid = c->next_msgid++;
  msgpack_pack_array(&pk, 4);
  msgpack_pack_uint32(&pk, 0);
  msgpack_pack_uint32(&pk, s->msgid);
  pack_str(&pk, method_of(kind));
  if (kind == K_PING || kind == K_STATUS || kind == K_LIST) {
    msgpack_pack_array(&pk, 0);
  } else {
    msgpack_pack_array(&pk, 1);
    if (kind == K_ADD || kind == K_ADD_BUF)
      pack_vector_add(c, &pk, s, kind == K_ADD_BUF);
    else if (kind == K_MATMUL)
      pack_matmul(c, &pk, s);
    else if (kind == K_NOOP)
      pack_noop(c, &pk, s);
    else
      pack_buffer_op(c, &pk, s, kind);
  }
  rc = send_all(c, c->sb.data, c->sb.size);
  if (rc < 0) {
    failure(c, "sending request %u (%s) failed: %s", s->msgid, kind_names[kind], strerror(-rc));
    return rc;
  }
  return 0;
}

/* The next request of the mix. */
static int send_next(client_t *c) {
  unsigned r = below(c, 100);
  kind_t kind;
  int rc;
  if (r < 15)
    kind = K_PING;
  else if (r < 20)
    kind = K_STATUS;
  else if (r < 55)
    kind = c->allocated && c->buf_bytes >= 256 && below(c, 8) == 0 ? K_ADD_BUF : K_ADD;
  else if (r < 62)
    kind = K_MATMUL;
  else if (r < 70)
    kind = K_NOOP;
  else
    kind = choose_buffer_op(c);
  rc = send_request(c, slot_new(c), kind);
  if (rc == 0) {
    c->sent++;
    c->by_kind[kind]++;
  }
  return rc;
}

/* ---- responses ---------------------------------------------------------------- */

static bool check_result(client_t *c, inflight_t *s, const msgpack_object *res) {
  const msgpack_object *outs, *arena, *sizing;
  switch (s->kind) {
  case K_PING: return is_str(map_get(res, "state"), "ready");
  case K_STATUS:
    return map_get(res, "queue") && map_get(map_get(res, "queue"), "capacity") &&
           is_str(map_get(res, "state"), "ready");
  case K_ADD:
  case K_ADD_BUF:
  case K_MATMUL:
  case K_NOOP:
    arena = map_get(map_get(res, "arena"), "hit");
    if (arena && arena->type == MSGPACK_OBJECT_BOOLEAN) {
      if (arena->via.boolean)
        c->arena_hits++;
      else
        c->arena_misses++;
    }
    sizing = map_get(res, "sizing");
    if (s->sizing == 1 && !is_quad(map_get(sizing, "ring_task_window"), ALT_TASK_WINDOW)) return false;
    if (s->sizing == 2 && !is_quad(map_get(sizing, "ring_dep_pool"), ALT_DEP_POOL)) return false;
    if (s->kind == K_NOOP) return is_uint(map_get(res, "tasks"), s->number);
    outs = map_get(res, "outputs");
    if (!outs || outs->type != MSGPACK_OBJECT_ARRAY) return false;
    if (s->kind == K_MATMUL)
      return outs->via.array.size == 6 && is_bin(&outs->via.array.ptr[2], s->expect, s->expect_len);
    if (outs->via.array.size != 3) return false;
    if (s->kind == K_ADD_BUF) return outs->via.array.ptr[2].type == MSGPACK_OBJECT_NIL;
    return is_bin(&outs->via.array.ptr[2], s->expect, s->expect_len);
  case K_ALLOC:
    return is_str(map_get(res, "name"), c->name) && is_uint(map_get(res, "bytes"), s->number);
  case K_WRITE:
  case K_FREE: return is_uint(map_get(res, "bytes"), s->number);
  case K_READ: return is_bin(res, s->expect, s->expect_len);
  case K_LIST: return res->type == MSGPACK_OBJECT_ARRAY;
  default: return false;
  }
}

static void handle_message(client_t *c, const msgpack_object *msg) {
  const msgpack_object *a;
  uint32_t msgid;
  inflight_t *s = NULL;

  if (msg->type != MSGPACK_OBJECT_ARRAY || msg->via.array.size != 4 ||
      !is_uint(&msg->via.array.ptr[0], 1) ||
      msg->via.array.ptr[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER) {
    c->unknown++;
    failure(c, "a message that is not a response (a notification?) arrived");
    return;
  }
  a = msg->via.array.ptr;
  msgid = (uint32_t)a[1].via.u64;
  for (unsigned i = 0; i < c->opt->window; i++)
    if (c->slots[i].used && c->slots[i].msgid == msgid) s = &c->slots[i];
  if (!s) {
    c->unknown++;
    failure(c, "response to msgid %u, which is not in flight (duplicate or unknown)", msgid);
    return;
  }
  if (!s->final) c->answered++;
  if (a[2].type != MSGPACK_OBJECT_NIL) {
    const msgpack_object *m = map_get(&a[2], "message");
    c->errors++;
    failure(c, "request %u (%s) failed: %.*s", msgid, kind_names[s->kind],
            m && m->type == MSGPACK_OBJECT_STR ? (int)m->via.str.size : 0,
            m && m->type == MSGPACK_OBJECT_STR ? m->via.str.ptr : "");
  } else if (!check_result(c, s, &a[3])) {
    c->mismatches++;
    failure(c, "request %u (%s): the result is not the one it must get", msgid,
            kind_names[s->kind]);
  }
  slot_done(c, s);
}

/* Read what is there (waiting for it), and handle every whole message. */
static int receive(client_t *c) {
  msgpack_unpacked res;
  struct pollfd p = {.fd = c->fd, .events = POLLIN};
  ssize_t n;
  int left_ms;
  uint64_t now = now_ns();

  left_ms = now >= deadline_ns ? 0 : (int)((deadline_ns - now) / 1000000u) + 1;
  if (poll(&p, 1, left_ms) == 0) return -ETIMEDOUT;
  if (!msgpack_unpacker_reserve_buffer(&c->up, 64 * 1024)) return -ENOMEM;
  n = recv(c->fd, msgpack_unpacker_buffer(&c->up), msgpack_unpacker_buffer_capacity(&c->up), 0);
  if (n < 0) return errno == EINTR ? 0 : -errno;
  if (n == 0) return -ECONNRESET;
  msgpack_unpacker_buffer_consumed(&c->up, (size_t)n);
  msgpack_unpacked_init(&res);
  for (;;) {
    msgpack_unpack_return ur = msgpack_unpacker_next(&c->up, &res);
    if (ur == MSGPACK_UNPACK_CONTINUE) break;
    if (ur != MSGPACK_UNPACK_SUCCESS) {
      msgpack_unpacked_destroy(&res);
      failure(c, "the daemon's stream cannot be parsed");
      return -EPROTO;
    }
    handle_message(c, &res.data);
  }
  msgpack_unpacked_destroy(&res);
  return 0;
}

static void *client_main(void *arg) {
  client_t *c = arg;
  const options_t *o = c->opt;
  struct sockaddr_un addr = {.sun_family = AF_UNIX};
  int rc = 0;

  c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  memcpy(addr.sun_path, o->socket_path, strlen(o->socket_path) + 1);
  if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&addr, sizeof(addr)) < 0) {
    failure(c, "cannot connect to '%s': %s", o->socket_path, strerror(errno));
    c->lost = o->requests;
    return NULL;
  }
  for (unsigned i = 0; i < o->requests && rc == 0; i++) {
    while (rc == 0 && c->n_inflight >= o->window) rc = receive(c);
    if (rc == 0) rc = send_next(c);
  }
  while (rc == 0 && c->n_inflight > 0) rc = receive(c);
  if (rc == 0) {
    /* The last word: a ping whose answer must be the next message. */
    inflight_t *s = slot_new(c);
    s->final = true;
    rc = send_request(c, s, K_PING);
    while (rc == 0 && c->n_inflight > 0) rc = receive(c);
  }
  if (rc < 0) {
    c->lost += c->n_inflight;
    failure(c, "gave up with %u requests unanswered: %s", c->n_inflight,
            rc == -ETIMEDOUT ? "the time limit passed" : strerror(-rc));
  }
  close(c->fd);
  return NULL;
}

/* ---- main ----------------------------------------------------------------------- */

static int parse_uint(const char *text, const char *what, unsigned lo, unsigned hi, unsigned *ret) {
  char *end;
  unsigned long long v;
  errno = 0;
  v = strtoull(text, &end, 10);
  if (errno || end == text || *end || v < lo || v > hi) {
    fprintf(stderr, "ptod_load: %s must be an integer in [%u, %u], got '%s'.\n", what, lo, hi, text);
    return -1;
  }
  *ret = (unsigned)v;
  return 0;
}

static void usage(FILE *f) {
  fprintf(f, "Usage: ptod_load --socket PATH [--clients N] [--requests M] [--window W]\n"
             "                 [--other-sizing-percent P] [--seed S] [--timeout-s T]\n");
}

int main(int argc, char **argv) {
  static const struct option longopts[] = {
      {"socket", required_argument, NULL, 's'},  {"clients", required_argument, NULL, 'c'},
      {"requests", required_argument, NULL, 'n'}, {"window", required_argument, NULL, 'w'},
      {"other-sizing-percent", required_argument, NULL, 'p'},
      {"seed", required_argument, NULL, 'S'},    {"timeout-s", required_argument, NULL, 't'},
      {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
  options_t o = {NULL, 64, 10000, 16, 2, 600, 1};
  client_t *clients;
  pthread_t *threads;
  uint64_t t0, t1, sum[K_COUNT] = {0};
  uint64_t sent = 0, answered = 0, unknown = 0, mismatches = 0, errors = 0, lost = 0;
  uint64_t hits = 0, misses = 0;
  unsigned seed = 1;
  bool failed = false;
  int opt;

  while ((opt = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
    int rc = 0;
    switch (opt) {
    case 's': o.socket_path = optarg; break;
    case 'c': rc = parse_uint(optarg, "--clients", 1, 1024, &o.clients); break;
    case 'n': rc = parse_uint(optarg, "--requests", 1, 100000000, &o.requests); break;
    case 'w': rc = parse_uint(optarg, "--window", 1, MAX_WINDOW, &o.window); break;
    case 'p': rc = parse_uint(optarg, "--other-sizing-percent", 0, 100, &o.other_sizing_percent); break;
    case 'S': rc = parse_uint(optarg, "--seed", 0, UINT32_MAX, &seed); break;
    case 't': rc = parse_uint(optarg, "--timeout-s", 1, 86400, &o.timeout_s); break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
    if (rc < 0) return 2;
  }
  if (!o.socket_path || optind < argc ||
      strlen(o.socket_path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
    usage(stderr);
    return 2;
  }
  o.seed = seed;
  clients = calloc(o.clients, sizeof(*clients));
  threads = calloc(o.clients, sizeof(*threads));
  if (!clients || !threads) return 1;
  t0 = now_ns();
  deadline_ns = t0 + (uint64_t)o.timeout_s * 1000000000u;
  for (unsigned i = 0; i < o.clients; i++) {
    client_t *c = &clients[i];
    c->opt = &o;
    c->id = i;
    c->rng = o.seed * UINT64_C(1000003) + i;
    c->next_msgid = 1;
    snprintf(c->name, sizeof(c->name), "load-%u", i);
    msgpack_unpacker_init(&c->up, 64 * 1024);
    msgpack_sbuffer_init(&c->sb);
    if (pthread_create(&threads[i], NULL, client_main, c) != 0) {
      fprintf(stderr, "ptod_load: cannot start client thread %u.\n", i);
      return 1;
    }
  }
  for (unsigned i = 0; i < o.clients; i++) pthread_join(threads[i], NULL);
  t1 = now_ns();

  for (unsigned i = 0; i < o.clients; i++) {
    client_t *c = &clients[i];
    sent += c->sent;
    answered += c->answered;
    unknown += c->unknown;
    mismatches += c->mismatches;
    errors += c->errors;
    lost += c->lost;
    hits += c->arena_hits;
    misses += c->arena_misses;
    failed |= c->failed;
    for (int k = 0; k < K_COUNT; k++) sum[k] += c->by_kind[k];
    for (unsigned s = 0; s < MAX_WINDOW; s++) free(c->slots[s].expect);
    free(c->shadow);
    msgpack_unpacker_destroy(&c->up);
    msgpack_sbuffer_destroy(&c->sb);
  }
  printf("{\"clients\": %u, \"requests_per_client\": %u, \"window\": %u, \"requests\": %" PRIu64
         ", \"responses\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"unknown_or_duplicate\": %" PRIu64
         ", \"mismatches\": %" PRIu64 ", \"errors\": %" PRIu64 ", \"seconds\": %.3f"
         ", \"arena_hits\": %" PRIu64 ", \"arena_misses\": %" PRIu64 ", \"by_kind\": {",
         o.clients, o.requests, o.window, sent, answered, lost, unknown, mismatches, errors,
         (double)(t1 - t0) / 1e9, hits, misses);
  for (int k = 0; k < K_COUNT; k++)
    printf("%s\"%s\": %" PRIu64, k ? ", " : "", kind_names[k], sum[k]);
  printf("}}\n");
  free(clients);
  free(threads);
  return failed || answered != (uint64_t)o.clients * o.requests ? 1 : 0;
}
