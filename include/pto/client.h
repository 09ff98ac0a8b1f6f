/* SPDX-License-Identifier: Apache-2.0 */
/* pto/client.h — libptoclient: talk to ptod, the per-device worker daemon.
 *
 * One pto_client_t is one connection to one daemon (one device).  Every
 * method of the protocol (docs/protocol.md) has a blocking helper here
 * (pto_client_ping ... pto_client_advise); the same requests can also be
 * pipelined: pto_client_send() many, then collect the answers by msgid with
 * pto_client_wait() in any order, or as they come with pto_client_wait_any().
 * pto_client_dispatch_multi() sends one dispatch to several daemons at once.
 *
 *     pto_client_t *c;
 *     pto_config_t *cfg;
 *     pto_dispatch_result_t *res;
 *     pto_error_t err;
 *     float a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40};
 *     pto_dispatch_arg_t args[] = {pto_arg_input(a, sizeof a), pto_arg_input(b, sizeof b),
 *                                  pto_arg_output(sizeof a)};
 *     pto_client_connect_default(5000, &c, &err);   // $PTOD_SOCKET, else device 0
 *     pto_config_new(&cfg);
 *     pto_config_parse_ring(cfg, PTO_FIELD_HEAP, "512M", &err);      // every ring
 *     pto_dispatch_req_t req = {.program = "vector_add", .args = args, .nargs = 3,
 *                               .config = cfg};
 *     if (pto_client_dispatch(c, &req, -1, &res, &err) < 0)
 *       fprintf(stderr, "%s: %s\n", pto_client_error_name(err.code), err.message);
 *     ... res->outputs[2].ptr holds 4 floats ...
 *     pto_result_free(res);
 *     pto_config_free(cfg);
 *     pto_client_close(c);
 *
 * Conventions
 *   - Functions that can fail return 0 or -code, where code is a daemon
 *     error (pto/errors.h, < 2000) or one of the client errors below
 *     (>= 2000); never an errno value.  They fill *ret_err (which may be
 *     NULL) with the code, a full-sentence message and, for daemon errors,
 *     the detail the daemon sent (ring, requested, capacity, key, hint).
 *     Output parameters are ret_* and written only on success.
 *   - Timeouts are in milliseconds: < 0 waits without limit, 0 only takes
 *     what is already there.  A daemon that exits or closes the connection
 *     fails every call waiting on it with PTO_E_CONNECTION_LOST at once; no
 *     call ever waits for a dead daemon.
 *   - An error notification from the daemon (`[2, "error", [map]]`, sent
 *     before it closes a connection: PERMISSION_DENIED, BUSY at accept time,
 *     MESSAGE_TOO_LARGE, an unparsable message) becomes the error of every
 *     call pending on that connection, and of every later call on it.
 *
 * Ownership
 *   - Every result returned through a ret_* pointer of a result type
 *     (pto_ping_t, pto_status_t, pto_dispatch_result_t, ...) is ONE
 *     allocation owned by the caller: release it with pto_result_free(),
 *     on any thread, before or after pto_client_close().  Every string,
 *     array and byte range inside it (outputs, buffer contents, names)
 *     lives exactly until then; copy what must outlive it.  The bytes of a
 *     large answer are not copied: the result holds the connection's
 *     receive buffer, and freeing it hands that buffer back, so the next
 *     large answer lands in memory already faulted in.  A result kept past
 *     the next call is fine; that call's answer then gets a new buffer.
 *   - Pointers passed in (args, data, names, a config) are only read during
 *     the call that takes them and never kept.
 *   - pto_client_t and pto_config_t are created by their *_new / connect
 *     function and released by pto_client_close() / pto_config_free().
 *
 * Thread safety
 *   A pto_client_t has no lock: use one connection per thread, or serialise
 *   every call on a shared one with your own mutex.  Different connections
 *   are independent.  A pto_config_t is only read by calls that take it, so
 *   one config may be used by several threads at once once it is built (not
 *   while it is being changed).  Results may be read from any thread.
 *   The library never installs signal handlers; it sends with MSG_NOSIGNAL,
 *   so a closed socket never raises SIGPIPE.  Nothing here logs.
 */
#ifndef PTO_CLIENT_H
#define PTO_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pto/errors.h>
#include <pto/program.h>
#include <pto/protocol.h>
#include <pto/sizing.h>

#ifdef __cplusplus
extern "C" {
#endif

/* --- errors -------------------------------------------------------------- */

/* The error codes, the daemon's (< 2000) and this library's own (>= 2000),
 * are the one table of pto/errors.h. */

/* "HEAP_RING_DEADLOCK", "CONNECTION_LOST", ...: the name of a daemon or a
 * client error code; "OK" for 0; "UNKNOWN" for anything else.  Accepts the
 * code or its negation (a return value). */
const char *pto_client_error_name(int code);

/* Whether code (or -code) is a client-side error rather than the daemon's. */
bool pto_client_error_is_local(int code);

/* --- connections --------------------------------------------------------- */

typedef struct pto_client pto_client_t;

/* Connect to the daemon listening on socket_path.  timeout_ms bounds the
 * wait for a daemon whose listen backlog is full; a socket that does not
 * exist or that nobody listens on fails at once (PTO_E_CONNECT_FAILED, the
 * message names the path and the reason, hint says what to check).
 * The connection is close-on-exec.  Free it with pto_client_close(). */
int pto_client_connect(const char *socket_path, int timeout_ms, pto_client_t **ret_client,
                       pto_error_t *ret_err);

/* Connect to device `device` (0..255): at $PTOD_SOCKET_<device> when that
 * is set and not empty (pto_client_env_device_socket; not checked: the
 * user's own choice), else at the built-in socket path ptod uses when its
 * config names none: /run/ptod/ptod<N>.sock for root,
 * $XDG_RUNTIME_DIR/ptod/ptod<N>.sock or /tmp/ptod-<uid>/ptod<N>.sock for
 * anyone else, else the system daemon's /run/ptod/ptod<N>.sock
 * (docs/configuration.md).  A built-in path is taken only when nobody but
 * the daemon meant could have put the socket there (its directory and the
 * socket are the caller's, or root's / the user ptod's for /run/ptod, and
 * nobody else can write the directory); one that cannot be trusted is
 * skipped and pto_client_path_warning() says why, or, when the connect
 * fails, the error message does.  With no path left to trust it fails
 * with PTO_E_CONNECT_FAILED.  A user the system socket refuses is told
 * which group to join. */
int pto_client_connect_device(int device, int timeout_ms, pto_client_t **ret_client,
                              pto_error_t *ret_err);

/* "" or, for a connection made to a built-in path, one sentence per
 * built-in socket skipped because it could not be trusted (another user
 * may have planted it).  The library does not log: show it as a warning.
 * Valid until pto_client_close(); "" for NULL. */
const char *pto_client_path_warning(const pto_client_t *c);

/* The environment variable that names the socket of the daemon a client
 * talks to when nothing else does, like DOCKER_HOST: ptoctl without -s or
 * -d, the Python client's Client() and pto_client_connect_default() use it
 * before the built-in path.  An explicit socket or device always wins. */
#define PTO_SOCKET_ENV "PTOD_SOCKET"

/* $PTOD_SOCKET when it is set and not empty, else NULL.  The string is the
 * environment's (valid until the environment changes). */
const char *pto_client_env_socket(void);

/* The prefix of the per-device variables: PTOD_SOCKET_<N> (N in decimal,
 * 0..255, no leading zeros) names device N's socket.  A container given
 * several devices through CDI (`ptoctl cdi generate`) gets one such variable
 * per device, so no device's variable overwrites another's.  Order of a
 * lookup: an explicit socket > PTOD_SOCKET_<N> for the device asked >
 * PTOD_SOCKET (only when no device is asked) > the built-in path. */
#define PTO_SOCKET_DEVICE_ENV_PREFIX "PTOD_SOCKET_"

/* $PTOD_SOCKET_<device> when it is set and not empty, else NULL (also for a
 * device outside 0..255).  The string is the environment's. */
const char *pto_client_env_device_socket(int device);

/* Connect to the default daemon: $PTOD_SOCKET when set, else device 0
 * (pto_client_connect_device(0, ...): $PTOD_SOCKET_0, else its built-in
 * socket).  Errors as those. */
int pto_client_connect_default(int timeout_ms, pto_client_t **ret_client, pto_error_t *ret_err);

/* Ring sizing from the environment (PTO2_RING_*) is the daemon's, not the
 * client's: a serving process that exports PTO2_RING_HEAP and the like for
 * itself changes nothing.  This writes one note into buf (cut to len),
 * naming each PTO2_RING_* variable set in this process's environment and
 * the two ways to make it take effect (the dispatch's config, or the
 * daemon's environment), for the caller to show once.  Returns how many
 * such variables are set; 0 leaves buf empty.  buf may be NULL with len 0
 * to count only. */
int pto_client_env_sizing_note(char *buf, size_t len);

/* Close the connection and free it.  Calls still pending are abandoned
 * (results not yet collected are freed).  NULL is fine. */
void pto_client_close(pto_client_t *client);

/* The socket path this client connected to (valid until close). */
const char *pto_client_socket_path(const pto_client_t *client);

/* The device number: the one given to pto_client_connect_device(), else the
 * one the daemon reported in a ping or status answer; -1 until known. */
int pto_client_device(const pto_client_t *client);

/* Whether the connection still works (no close, no fatal error seen yet). */
bool pto_client_alive(const pto_client_t *client);

/* --- the per-dispatch config (RunConfig) --------------------------------- */

/* The `config` map of dispatch and prewarm: the three ring fields, each
 * scalar (all four rings) or per ring, and any other key.
 *
 * Values are validated when they are set, with exactly the daemon's code
 * and messages (pto/sizing.h for the ring fields, the daemon's decoder for
 * the other keys it knows), so a bad value fails at the call site with
 * PTO_E_INVALID_CONFIG, e.g.
 *   ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000
 * A key this library does not know is kept as given and sent untouched
 * (pass-through): a newer daemon may know it; an older one answers
 * INVALID_REQUEST naming it — a knob is never dropped silently.
 * Setting a key again replaces its value.  The same config may be passed to
 * any number of calls and connections; it is never changed by them. */
typedef struct pto_config pto_config_t;

int pto_config_new(pto_config_t **ret_config);
void pto_config_free(pto_config_t *config);
/* A deep copy. */
int pto_config_copy(const pto_config_t *config, pto_config_t **ret_copy);

/* One ring field for all four rings (value must be valid, so never 0). */
int pto_config_set_ring(pto_config_t *config, pto_ring_field_t field, uint64_t value,
                        pto_error_t *ret_err);
/* One ring field per ring, ring 0 first; a 0 entry leaves that ring to the
 * daemon's lower-precedence levels (environment, config file, default). */
int pto_config_set_rings(pto_config_t *config, pto_ring_field_t field,
                         const uint64_t values[PTO_RING_COUNT], pto_error_t *ret_err);
/* One ring field from text in the config-file form: "512M" (all rings) or
 * "512M,0,0,0" (per ring), numbers with an optional K, M or G suffix. */
int pto_config_parse_ring(pto_config_t *config, pto_ring_field_t field, const char *text,
                          pto_error_t *ret_err);
/* The ring field's four entries as set (0 = not set here). */
void pto_config_get_rings(const pto_config_t *config, pto_ring_field_t field,
                          uint64_t ret_values[PTO_RING_COUNT]);

/* Any key, by its wire name ("ring_heap", "aicpu_thread_num",
 * "enable_swimlane", or one this library does not know).  A ring key takes
 * the integer forms above; a nil value unsets a known key. */
int pto_config_set_int(pto_config_t *config, const char *key, int64_t value, pto_error_t *ret_err);
int pto_config_set_float(pto_config_t *config, const char *key, double value, pto_error_t *ret_err);
int pto_config_set_bool(pto_config_t *config, const char *key, bool value, pto_error_t *ret_err);
int pto_config_set_string(pto_config_t *config, const char *key, const char *value,
                          pto_error_t *ret_err);
int pto_config_set_nil(pto_config_t *config, const char *key, pto_error_t *ret_err);
/* The general form: value is exactly one msgpack-encoded object (a list, a
 * map, ...), copied. */
int pto_config_set_msgpack(pto_config_t *config, const char *key, const void *value, size_t len,
                           pto_error_t *ret_err);
/* Remove a key (nothing is sent for it).  Returns 0, or -PTO_E_INVALID_ARGUMENT
 * when it was not set. */
int pto_config_unset(pto_config_t *config, const char *key);
/* Whether nothing is set: the request then carries no config at all. */
bool pto_config_empty(const pto_config_t *config);

/* --- requests -------------------------------------------------------------- */

/* One dispatch argument; build it with the constructors below.  kind is the
 * pto/program.h kind:
 *   PTO_ARG_BUFFER  a device-resident buffer by name; bytes != 0: the slice
 *                   [offset, offset + bytes)
 *   PTO_ARG_INPUT   data[0..len) copied to the device
 *   PTO_ARG_INOUT   data[0..len) copied in, and back out in the outputs
 *   PTO_ARG_OUTPUT  `bytes` bytes of output, returned in the outputs
 *   PTO_ARG_INPUT, PTO_ARG_INOUT, PTO_ARG_OUTPUT with `buffer` set (only
 *                   pto_arg_shm() makes these): the bytes [offset, offset +
 *                   bytes) of the shared-memory region named `buffer`,
 *                   read from it and/or written into it; no bytes travel in
 *                   the messages and the output is NULL in the result
 *   PTO_ARG_INT     the scalar i
 *   PTO_ARG_FLOAT   the scalar f */
typedef struct pto_dispatch_arg {
  pto_arg_kind_t kind;
  const char *buffer;
  uint64_t offset;
  uint64_t bytes;
  const void *data;
  size_t len;
  int64_t i;
  double f;
} pto_dispatch_arg_t;

static inline pto_dispatch_arg_t pto_arg_buffer(const char *name) {
  pto_dispatch_arg_t a = {PTO_ARG_BUFFER, name, 0, 0, NULL, 0, 0, 0.0};
  return a;
}
static inline pto_dispatch_arg_t pto_arg_slice(const char *name, uint64_t offset, uint64_t bytes) {
  pto_dispatch_arg_t a = {PTO_ARG_BUFFER, name, offset, bytes, NULL, 0, 0, 0.0};
  return a;
}
static inline pto_dispatch_arg_t pto_arg_input(const void *data, size_t len) {
  pto_dispatch_arg_t a = {PTO_ARG_INPUT, NULL, 0, 0, data, len, 0, 0.0};
  return a;
}
static inline pto_dispatch_arg_t pto_arg_inout(const void *data, size_t len) {
  pto_dispatch_arg_t a = {PTO_ARG_INOUT, NULL, 0, 0, data, len, 0, 0.0};
  return a;
}
static inline pto_dispatch_arg_t pto_arg_output(uint64_t bytes) {
  pto_dispatch_arg_t a = {PTO_ARG_OUTPUT, NULL, 0, bytes, NULL, 0, 0, 0.0};
  return a;
}
static inline pto_dispatch_arg_t pto_arg_int(int64_t i) {
  pto_dispatch_arg_t a = {PTO_ARG_INT, NULL, 0, 0, NULL, 0, i, 0.0};
  return a;
}
static inline pto_dispatch_arg_t pto_arg_float(double f) {
  pto_dispatch_arg_t a = {PTO_ARG_FLOAT, NULL, 0, 0, NULL, 0, 0, f};
  return a;
}

typedef struct pto_dispatch_req {
  const char *program;
  const pto_dispatch_arg_t *args;
  uint32_t nargs;
  const pto_config_t *config; /* NULL: none (the daemon's baseline sizing) */
  /* > 0: the daemon gives up with DEADLINE_EXCEEDED if the dispatch has not
   * started this many ms after it arrived; 0: no such deadline.  (This is
   * the daemon's queueing deadline; the call's own timeout is separate.) */
  int64_t deadline_ms;
} pto_dispatch_req_t;

/* "ping", "buffer.alloc", ...: the wire name of a pto_method_t
 * (pto/protocol.h); NULL out of range. */
const char *pto_method_name(pto_method_t method);

/* One request: the method and its parameters (the member named after the
 * method; methods without parameters use none). */
typedef struct pto_request {
  pto_method_t method;
  union {
    pto_dispatch_req_t dispatch;
    struct {
      const char *name;
      uint64_t bytes;
      const void *init; /* NULL, or exactly `bytes` bytes of initial contents */
    } buffer_alloc;
    struct {
      const char *name;
      uint64_t offset;
      const void *data;
      size_t len;
    } buffer_write;
    struct {
      const char *name;
      uint64_t offset;
      uint64_t bytes; /* 0: to the end of the buffer */
    } buffer_read;
    struct {
      const char *name;
    } buffer_free;
    struct {
      const pto_config_t *config; /* NULL: the daemon's baseline */
    } prewarm;
  } u;
} pto_request_t;

/* --- results ---------------------------------------------------------------- */

/* The result structs (pto_ping_t ... pto_advise_t) are pto/protocol.h's. */

/* Whether ping lists feature (e.g. "shm"). */
bool pto_ping_has_feature(const pto_ping_t *ping, const char *feature);

/* The DFX artefacts of the last dispatch on this connection that failed
 * with some (a HEAP_RING_DEADLOCK traced with enable_swimlane, ...), or
 * NULL: a failed call fills only its pto_error_t.  Valid until the next
 * such failure on the connection or pto_client_close. */
const pto_dfx_t *pto_client_error_dfx(const pto_client_t *client);

/* Free any result returned by this library (NULL is fine).  Passing
 * anything else is undefined. */
void pto_result_free(const void *result);

/* The result exactly as the daemon sent it: one msgpack object (the last
 * element of the response), including keys a newer daemon added that the
 * typed structs do not show.  Valid until pto_result_free(result). */
void pto_result_msgpack(const void *result, const void **ret_data, size_t *ret_len);

/* --- blocking calls ----------------------------------------------------------- */

/* Each sends one request and waits for its answer for at most timeout_ms
 * (the whole call).  On PTO_E_TIMEOUT the request stays sent; its answer is
 * dropped when it comes, and the connection stays usable. */
int pto_client_ping(pto_client_t *client, int timeout_ms, pto_ping_t **ret_ping,
                    pto_error_t *ret_err);
int pto_client_status(pto_client_t *client, int timeout_ms, pto_status_t **ret_status,
                      pto_error_t *ret_err);
int pto_client_metrics(pto_client_t *client, int timeout_ms, pto_text_t **ret_text,
                       pto_error_t *ret_err);
int pto_client_programs(pto_client_t *client, int timeout_ms, pto_programs_t **ret_programs,
                        pto_error_t *ret_err);
int pto_client_dispatch(pto_client_t *client, const pto_dispatch_req_t *req, int timeout_ms,
                        pto_dispatch_result_t **ret_result, pto_error_t *ret_err);
/* init: NULL, or exactly `bytes` bytes. */
int pto_client_buffer_alloc(pto_client_t *client, const char *name, uint64_t bytes,
                            const void *init, int timeout_ms, pto_buffer_info_t **ret_info,
                            pto_error_t *ret_err);
/* ret_bytes (may be NULL): the bytes written. */
int pto_client_buffer_write(pto_client_t *client, const char *name, uint64_t offset,
                            const void *data, size_t len, int timeout_ms, uint64_t *ret_bytes,
                            pto_error_t *ret_err);
/* bytes 0: from offset to the end of the buffer. */
int pto_client_buffer_read(pto_client_t *client, const char *name, uint64_t offset, uint64_t bytes,
                           int timeout_ms, pto_bytes_t **ret_data, pto_error_t *ret_err);
/* ret_bytes (may be NULL): the bytes released. */
int pto_client_buffer_free(pto_client_t *client, const char *name, int timeout_ms,
                           uint64_t *ret_bytes, pto_error_t *ret_err);
int pto_client_buffer_list(pto_client_t *client, int timeout_ms, pto_buffer_list_t **ret_list,
                           pto_error_t *ret_err);
/* config: NULL prewarms the daemon's baseline sizing. */
int pto_client_prewarm(pto_client_t *client, const pto_config_t *config, int timeout_ms,
                       pto_arena_info_t **ret_arena, pto_error_t *ret_err);
int pto_client_advise(pto_client_t *client, int timeout_ms, pto_advise_t **ret_advise,
                      pto_error_t *ret_err);

/* --- pipelining ----------------------------------------------------------------- */

/* Send one request without waiting for its answer; ret_msgid identifies it
 * (never 0).  timeout_ms bounds the write when the socket is full; if it
 * expires after part of the message was written, the connection cannot be
 * used any more (PTO_E_TIMEOUT now, PTO_E_CONNECTION_LOST later).  Answers
 * that arrive while sending are kept for pto_client_wait().  The request is
 * on the wire when this returns, with one exception: a small one (no inline
 * data of 64 KiB or more) sent while answers already received wait to be
 * collected is held, and goes with the next request written, or before
 * pto_client_wait/_wait_any (or a blocking call) waits on this connection,
 * before pto_client_cancel, at pto_client_close, or once 64 KiB are held;
 * always in the order sent.  So a loop that collects answers and sends as it
 * goes writes each batch with one system call.  Nothing is held while no
 * answer waits: a request sent after collecting every answer (to overlap the
 * device with the caller's own work) reaches the daemon at once.
 * shm.register and shm.unregister are pto_shm_create() and pto_shm_free()'s
 * (the fd travels with the request): here they are PTO_E_INVALID_ARGUMENT. */
int pto_client_send(pto_client_t *client, const pto_request_t *req, int timeout_ms,
                    uint32_t *ret_msgid, pto_error_t *ret_err);

/* Wait for the answer to msgid, in any order.  On success *ret_result is
 * the result of the request's method (may be NULL to drop it):
 *   ping pto_ping_t, status pto_status_t, metrics pto_text_t, programs
 *   pto_programs_t, dispatch pto_dispatch_result_t, buffer.alloc
 *   pto_buffer_info_t, buffer.write and buffer.free pto_byte_count_t,
 *   buffer.read pto_bytes_t, buffer.list and shm.list pto_buffer_list_t,
 *   prewarm pto_arena_info_t, advise pto_advise_t
 * to be freed with pto_result_free().  The daemon's error, or the
 * connection's, is returned as -code with ret_err filled.  Either way the
 * request is then done.  On PTO_E_TIMEOUT it is still pending: wait again,
 * or pto_client_discard() it.  An unknown msgid is PTO_E_INVALID_ARGUMENT. */
int pto_client_wait(pto_client_t *client, uint32_t msgid, int timeout_ms, void **ret_result,
                    pto_error_t *ret_err);

/* Wait for whichever pending request is answered first (answers already
 * received first, oldest request first).  *ret_msgid says which; it is 0
 * when the wait itself failed (PTO_E_TIMEOUT, or PTO_E_INVALID_ARGUMENT
 * when nothing is pending). */
int pto_client_wait_any(pto_client_t *client, int timeout_ms, uint32_t *ret_msgid,
                        void **ret_result, pto_error_t *ret_err);

/* --- protocol 1.2: priority, request ids, cancel ------------------------------- */

/* What device requests (dispatch, buffer.alloc/write/read/free/list,
 * prewarm) may carry besides their parameters.  Start from PTO_CALL_OPTS_INIT: size
 * says how much of the struct the caller was compiled with, so members
 * added later read as their defaults from an older caller.
 *   priority    [PTO_PRIORITY_MIN, PTO_PRIORITY_MAX]: lower runs sooner; 0
 *               (the default) is not sent.  A daemon that does not speak it
 *               (no "priority" in ping's features) refuses a non-zero one.
 *   request_id  NULL, or 1 to 64 bytes of printable ASCII: the caller's own
 *               id for the work, echoed in the result (pto_dispatch_result_t
 *               .request_id; the other results in pto_result_msgpack()),
 *               the error, the daemon's log lines and its DFX artefacts. */
#define PTO_PRIORITY_MIN (-8)
#define PTO_PRIORITY_MAX 7
typedef struct pto_call_opts {
  size_t size;
  int priority;
  const char *request_id;
} pto_call_opts_t;
#define PTO_CALL_OPTS_INIT {sizeof(pto_call_opts_t), 0, NULL}

/* pto_client_send with opts (NULL: none).  A priority out of range, a bad
 * request_id, or either on a method that is not a device request is
 * PTO_E_INVALID_ARGUMENT before anything is sent. */
int pto_client_send_opts(pto_client_t *client, const pto_request_t *req,
                         const pto_call_opts_t *opts, int timeout_ms, uint32_t *ret_msgid,
                         pto_error_t *ret_err);

/* Any request, blocking, with opts: pto_client_send_opts then
 * pto_client_wait (*ret_result as pto_client_wait gives it), within
 * timeout_ms for both. */
int pto_client_call(pto_client_t *client, const pto_request_t *req, const pto_call_opts_t *opts,
                    int timeout_ms, void **ret_result, pto_error_t *ret_err);

/* Ask the daemon to drop the pipelined request msgid (sent with
 * pto_client_send or _send_opts and not yet collected): sends protocol
 * 1.2's `cancel` notification.  The request still gets exactly one answer,
 * collected with pto_client_wait as usual: CANCELLED (code 1012) when it
 * was still queued, else its own result or error (a running request is
 * never stopped).  An answer already received makes this a no-op.  A msgid
 * not pending here is PTO_E_INVALID_ARGUMENT; a daemon without "cancel" in
 * ping's features ignores the notification. */
int pto_client_cancel(pto_client_t *client, uint32_t msgid, pto_error_t *ret_err);

/* Requests sent and not yet collected. */
size_t pto_client_pending(const pto_client_t *client);

/* Forget a pending request: its answer is dropped (freed) when it comes. */
void pto_client_discard(pto_client_t *client, uint32_t msgid);

/* --- shared-memory regions ---------------------------------------------------------- */

/* A region is memory shared with the daemon (docs/protocol.md "Shared-memory
 * arguments"): a sealed memfd mapped here and in ptod, registered on one
 * connection.  Dispatch arguments (pto_arg_shm) and buffer writes and reads
 * (pto_client_buffer_write_shm / _read_shm) then name byte ranges of it,
 * and the bytes never travel in a message: fill pto_shm_data(), dispatch,
 * read the outputs from pto_shm_data().
 *
 *     pto_shm_t *r;
 *     pto_shm_create(c, 3 * 12, 5000, &r, &err);
 *     float *f = pto_shm_data(r);   // a[3] at 0, b[3] at 12, the sum at 24
 *     ... fill f[0..5] ...
 *     pto_dispatch_arg_t args[] = {pto_arg_shm(r, 0, 12, PTO_ARG_INPUT),
 *                                  pto_arg_shm(r, 12, 12, PTO_ARG_INPUT),
 *                                  pto_arg_shm(r, 24, 12, PTO_ARG_OUTPUT)};
 *     ... pto_client_dispatch(c, &req, -1, &res, &err): f[6..8] hold the sums ...
 *     pto_shm_free(r);
 *
 * A region belongs to the connection it was created on: names are per
 * connection, and the daemon unmaps every region of a connection when it
 * closes.  Do not change bytes a request reads, nor read bytes it writes,
 * until its answer has come.  A region is used by one thread at a time, as
 * its connection is. */
typedef struct pto_shm pto_shm_t;

/* Create a region of `bytes` bytes (1..2^40), zero-filled, and register it
 * on client under a name unique in this process (pto_shm_name).  The memory
 * is reserved here first (fallocate), so a machine short of memory fails
 * this call with PTO_E_NO_MEMORY rather than a later access with SIGBUS.
 * A daemon whose ping does not list "shm" fails with PTO_E_UNSUPPORTED
 * (checked once per connection); the daemon's refusals come back as they
 * are (OUT_OF_MEMORY over its shm_limit, ...).  Nothing is left behind on
 * failure.  Free the region with pto_shm_free(). */
int pto_shm_create(pto_client_t *client, uint64_t bytes, int timeout_ms, pto_shm_t **ret_region,
                   pto_error_t *ret_err);

/* The region's memory (pto_shm_size bytes, writable), its size, its name
 * on the wire.  Valid until pto_shm_free. */
void *pto_shm_data(const pto_shm_t *region);
uint64_t pto_shm_size(const pto_shm_t *region);
const char *pto_shm_name(const pto_shm_t *region);

/* Unregister the region (when its connection still works: one call,
 * waited for at most 5 s), unmap it and free it.  After
 * pto_client_close() it only unmaps: the daemon dropped the region when
 * the connection closed.  NULL is fine. */
void pto_shm_free(pto_shm_t *region);

/* A dispatch argument naming [offset, offset + bytes) of region; kind is
 * PTO_ARG_INPUT (read from the region), PTO_ARG_OUTPUT (written into it)
 * or PTO_ARG_INOUT (both).  The argument holds the region's name: use it
 * only while the region lives, on the region's connection.  A range
 * outside the region is the daemon's INVALID_ARGS naming the argument; a
 * NULL region or another kind makes the dispatch fail with
 * PTO_E_INVALID_ARGUMENT. */
pto_dispatch_arg_t pto_arg_shm(const pto_shm_t *region, uint64_t offset, uint64_t bytes,
                               pto_arg_kind_t kind);

/* buffer.write of `bytes` bytes (>= 1) from region at shm_offset into the
 * buffer `name` at offset; buffer.read of `bytes` bytes (>= 1) from the
 * buffer at offset into region at shm_offset.  ret_bytes (may be NULL): the
 * bytes copied.  The region must be one of client's
 * (PTO_E_INVALID_ARGUMENT otherwise). */
int pto_client_buffer_write_shm(pto_client_t *client, const char *name, uint64_t offset,
                                const pto_shm_t *region, uint64_t shm_offset, uint64_t bytes,
                                int timeout_ms, uint64_t *ret_bytes, pto_error_t *ret_err);
int pto_client_buffer_read_shm(pto_client_t *client, const char *name, uint64_t offset,
                               const pto_shm_t *region, uint64_t shm_offset, uint64_t bytes,
                               int timeout_ms, uint64_t *ret_bytes, pto_error_t *ret_err);

/* The regions the daemon holds for this connection, {name, bytes} each. */
int pto_client_shm_list(pto_client_t *client, int timeout_ms, pto_buffer_list_t **ret_list,
                        pto_error_t *ret_err);

/* --- multi-device dispatch -------------------------------------------------------- */

/* One device of a multi-device dispatch: its connection and arguments in,
 * its outcome out. */
typedef struct pto_device_dispatch {
  pto_client_t *client;           /* in: the connection to that device's daemon */
  const pto_dispatch_arg_t *args; /* in: this device's arguments; NULL: the shared ones */
  uint32_t nargs;                 /* in */
  int rc;                         /* out: 0 or -code */
  pto_error_t err;                /* out, when rc < 0: the message names the device */
  pto_dispatch_result_t *result;  /* out, when rc == 0: free with pto_result_free() */
} pto_device_dispatch_t;

/* Dispatch req->program with req->config and req->deadline_ms on every
 * device at once: all requests are sent before any answer is awaited, so
 * the devices run in parallel; then every answer is collected within
 * timeout_ms (for the whole call).  The same config object goes to every
 * device.  A device whose args is NULL gets req->args / req->nargs.
 * Every device's outcome is in its entry.  Returns 0 when all succeeded,
 * else the first failed device's -code with *ret_err a copy of its error,
 * whose message starts with the device ("device 2: ..." or, when the
 * device number is not known, "socket '/path': ...").  Results of the
 * devices that succeeded are returned (and must be freed) either way. */
int pto_client_dispatch_multi(const pto_dispatch_req_t *req, pto_device_dispatch_t *devices,
                              size_t ndevices, int timeout_ms, pto_error_t *ret_err);

#ifdef __cplusplus
}
#endif
#endif
