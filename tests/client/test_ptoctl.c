/* SPDX-License-Identifier: Apache-2.0 */
/* ptoctl end to end against real daemons: every command, human output and
 * --json parsed back by Python's json module, exit codes, the ring options
 * and --config-set reaching the daemon, bench, several daemons at once. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <pto/client.h>
#include <pto/version.h>

#include "check_main.h"
#include "fixture.h"
#include "paths.h"

#define PTOCTL PTOD_BINARY_DIR "/client/ptoctl"
#define PYTHON "/usr/bin/python3"

static tdaemon_t d0;
static char tmp[64];
static char *out, *err;

static void setup(void) {
  tdaemon_start(&d0, NULL);
  tmkdtemp(tmp, sizeof(tmp));
  out = err = NULL;
}

static void teardown(void) {
  free(out);
  free(err);
  out = err = NULL;
  tdaemon_stop(&d0);
  trmtree(tmp);
}

/* Run ptoctl with the words given (NULL-terminated), -s <d0's socket>
 * first unless no_socket; out/err hold its output. */
static int ctl_run(bool with_socket, const char *const *words) {
  const char *argv[64];
  int n = 0;
  free(out);
  free(err);
  argv[n++] = PTOCTL;
  if (with_socket) {
    argv[n++] = "-s";
    argv[n++] = d0.socket;
  }
  for (int i = 0; words[i]; i++) argv[n++] = words[i];
  argv[n] = NULL;
  return trun(argv, NULL, &out, &err);
}

#define CTL(...) ctl_run(true, (const char *const[]){__VA_ARGS__, NULL})
#define CTL_NOSOCK(...) ctl_run(false, (const char *const[]){__VA_ARGS__, NULL})

/* Check the JSON text with Python: `code` runs with d = json.loads(text)
 * and must not raise.  The JSON parser is Python's, not ours. */
static void check_json(const char *text, const char *code) {
  char path[128], script[4096], *pout = NULL, *perr = NULL;
  int rc;
  const char *argv[] = {PYTHON, "-c", script, path, NULL};
  snprintf(path, sizeof(path), "%s/out.json", tmp);
  twrite_file(path, text, strlen(text));
  snprintf(script, sizeof(script),
           "import json, sys\n"
           "d = json.load(open(sys.argv[1]))\n"
           "%s\n",
           code);
  rc = trun(argv, NULL, &pout, &perr);
  ck_assert_msg(rc == 0, "JSON check failed:\n%s\non:\n%s", perr, text);
  free(pout);
  free(perr);
}

START_TEST(test_version_and_usage) {
  char want[64];
  snprintf(want, sizeof(want), "ptoctl %s (protocol 1)\n", PTO_VERSION);
  ck_assert_int_eq(CTL_NOSOCK("--version"), 0);
  ck_assert_str_eq(out, want);
  ck_assert_int_eq(CTL_NOSOCK("--help"), 0);
  ck_assert_ptr_nonnull(strstr(out, "Exit status: 0 ok, 1 the daemon answered an error"));
  ck_assert_int_eq(CTL_NOSOCK("-s", "/tmp/x.sock"), 2);
  ck_assert_ptr_nonnull(strstr(err, "No command given."));
  ck_assert_int_eq(CTL_NOSOCK("frobnicate"), 2);
  ck_assert_ptr_nonnull(strstr(err, "Unknown command 'frobnicate'."));
  ck_assert_int_eq(CTL_NOSOCK("--nope", "ping"), 2);
  ck_assert_ptr_nonnull(strstr(err, "Unknown option '--nope'."));
  ck_assert_int_eq(CTL_NOSOCK("--device", "300", "ping"), 2);
  ck_assert_ptr_nonnull(strstr(err, "--device '300' must be a number in 0..255."));
  ck_assert_int_eq(CTL_NOSOCK("ping", "extra"), 2);
  ck_assert_int_eq(CTL_NOSOCK("dispatch", "noop", "-1"), 2);
  ck_assert_ptr_nonnull(strstr(err, "write int:-1"));
  ck_assert_int_eq(CTL_NOSOCK("--ring-heap", "1000", "dispatch", "noop", "1"), 2);
  ck_assert_ptr_nonnull(
      strstr(err,
             "--ring-heap 1000: ring_heap must be a power of 2 >= 1024 (bytes per ring), got "
             "1000\nptoctl: Use 1024 or a larger power of 2.\n"));
  ck_assert_int_eq(CTL_NOSOCK("--ring-task-window", "512,0,0", "prewarm"), 2);
  ck_assert_ptr_nonnull(strstr(err, "exactly 4 entries"));
  ck_assert_int_eq(CTL_NOSOCK("--config-set", "aicpu_thread_num=1", "dispatch", "noop", "1"), 2);
  ck_assert_ptr_nonnull(strstr(err, "aicpu_thread_num must be an integer in [2, 16]"));
  ck_assert_int_eq(CTL_NOSOCK("dispatch", "vector_add", "bogus:1"), 2);
  ck_assert_ptr_nonnull(strstr(err, "Argument 0: 'bogus:1' is not a dispatch argument"));
  ck_assert_int_eq(CTL_NOSOCK("dispatch", "vector_add", "@/nonexistent/file"), 5);
  ck_assert_ptr_nonnull(strstr(err, "Cannot read '/nonexistent/file'"));
}
END_TEST

START_TEST(test_cannot_connect) {
  char path[PTO_SOCKET_PATH_MAX], want[200];
  ck_assert_int_eq(CTL_NOSOCK("-s", "/tmp/ptoc-none/ptod.sock", "ping"), 3);
  ck_assert_ptr_nonnull(strstr(err,
                               "ptoctl: CONNECT_FAILED: Cannot connect to ptod at "
                               "'/tmp/ptoc-none/ptod.sock': No such file or directory."));
  ck_assert_int_eq(CTL_NOSOCK("-j", "-s", "/tmp/ptoc-none/ptod.sock", "status"), 3);
  check_json(out,
             "assert d['error']['name'] == 'CONNECT_FAILED', d\n"
             "assert d['error']['code'] == 2001, d\n"
             "assert 'ptod is running' in d['error']['hint'], d");
  /* --device N uses the built-in path ptod uses. */
  ck_assert_int_eq(pto_default_socket_path(213, path, sizeof(path)), 0);
  if (access(path, F_OK) == 0) return;
  snprintf(want, sizeof(want), "Cannot connect to ptod at '%s'", path);
  ck_assert_int_eq(CTL_NOSOCK("--device", "213", "ping"), 3);
  ck_assert_ptr_nonnull(strstr(err, want));
}
END_TEST

START_TEST(test_read_commands) {
  ck_assert_int_eq(CTL("ping"), 0);
  ck_assert_ptr_nonnull(strstr(out, "device 0: ready (ptod " PTO_VERSION ")"));
  ck_assert_int_eq(CTL("--json", "ping"), 0);
  check_json(out, "assert d == {'version': '" PTO_VERSION "', 'device': 0, 'state': 'ready', 'features': ['dfx', 'cancel', 'priority', 'request_id', 'shm']}, d");

  ck_assert_int_eq(CTL("status"), 0);
  ck_assert_ptr_nonnull(strstr(out, "queue      0 waiting of 64, 0 running"));
  ck_assert_ptr_nonnull(strstr(out, "heap [1 MiB, 1 MiB, 1 MiB, 1 MiB]"));
  ck_assert_int_eq(CTL("status", "--json"), 0);
  check_json(out,
             "assert d['queue']['capacity'] == 64, d\n"
             "assert d['arena']['sizing']['ring_heap'] == [1048576] * 4, d\n"
             "assert d['arena']['prewarm']['first_dispatch_hit'] is None, d\n"
             "assert d['memory']['limit'] == 1 << 30, d");

  ck_assert_int_eq(CTL("programs"), 0);
  ck_assert_ptr_nonnull(strstr(out, "vector_add\n  vector_add(a, b, out)"));
  ck_assert_int_eq(CTL("-j", "programs"), 0);
  check_json(out,
             "names = [p['name'] for p in d]\n"
             "assert 'vector_add' in names and 'noop' in names, names\n"
             "va = d[names.index('vector_add')]\n"
             "assert [a['kind'] for a in va['args']] == ['in', 'in', 'out'], va");

  ck_assert_int_eq(CTL("metrics"), 0);
  ck_assert_ptr_nonnull(strstr(out, "# TYPE ptod_info gauge\n"));
  ck_assert_int_eq(CTL("-j", "metrics"), 0);
  check_json(out, "assert isinstance(d, str) and 'ptod_dispatches_total' in d, d");
}
END_TEST

START_TEST(test_dispatch) {
  char a[128], b[128], dir[128], file[160];
  const float fa[3] = {1, 2, 3}, fb[3] = {10, 20, 30};
  size_t len;
  char *data;
  ck_assert_int_eq(CTL("dispatch", "vector_add", "f32:1,2,3", "f32:10,20,30", "out:12"), 0);
  ck_assert_ptr_nonnull(strstr(out, "output 2   12 bytes: f32 [11, 22, 33]"));
  ck_assert_ptr_nonnull(strstr(out, "arena      hit"));

  ck_assert_int_eq(CTL("--json", "--ring-heap", "2K,0,0,0", "--ring-task-window", "512", "dispatch",
                       "vector_add", "f32:1,2,3", "f32:10,20,30", "out:12"),
                   0);
  check_json(
      out,
      "o = d['outputs']\n"
      "assert o[0] is None and o[1] is None, o\n"
      "assert o[2]['f32'] == [11.0, 22.0, 33.0], o\n"
      "assert o[2]['bytes'] == 12 and o[2]['hex'] == '00003041' + '0000b041' + '00000442', o\n"
      "s = d['sizing']\n"
      "assert s['ring_heap'] == [2048, 1048576, 1048576, 1048576], s\n"
      "assert s['source']['ring_heap'] == ['request', 'config', 'config', 'config'], s\n"
      "assert s['ring_task_window'] == [512] * 4, s\n"
      "assert s['source']['ring_task_window'] == ['request'] * 4, s\n"
      "assert d['arena']['hit'] is False and d['tasks'] == 1, d");

  /* Files in, files out. */
  snprintf(a, sizeof(a), "@%s/a.bin", tmp);
  snprintf(b, sizeof(b), "@%s/b.bin", tmp);
  twrite_file(a + 1, fa, sizeof(fa));
  twrite_file(b + 1, fb, sizeof(fb));
  snprintf(dir, sizeof(dir), "%s/outs", tmp);
  ck_assert_int_eq(CTL("-j", "dispatch", "vector_add", a, b, "out:12", "--out-dir", dir), 0);
  snprintf(file, sizeof(file), "%s/out2.bin", dir);
  data = tread_file(file, &len);
  ck_assert_uint_eq(len, 12);
  {
    const float want[3] = {11, 22, 33};
    ck_assert_mem_eq(data, want, 12);
  }
  free(data);
  {
    char code[512];
    snprintf(code, sizeof(code), "assert d['outputs'][2] == {'bytes': 12, 'file': '%s'}, d", file);
    check_json(out, code);
  }

  /* A resident buffer, whole and in slices. */
  ck_assert_int_eq(CTL("buffer", "alloc", "ab", "f32:1,2,3,4,5,6,7,8"), 0);
  ck_assert_int_eq(CTL("-j", "dispatch", "vector_add", "buf:ab:0:16", "buf:ab:16:16", "out:16"), 0);
  check_json(out, "assert d['outputs'][2]['f32'] == [6.0, 8.0, 10.0, 12.0], d");
  ck_assert_int_eq(CTL("-j", "dispatch", "vector_add", "buf:ab", "buf:ab", "out:32"), 0);
  check_json(out, "assert d['outputs'][2]['f32'] == [2.0 * i for i in range(1, 9)], d");

  /* The daemon's errors: exit 1, the message on stderr, JSON on stdout. */
  ck_assert_int_eq(CTL("dispatch", "vector_add", "f32:1,2", "f32:1", "out:8"), 1);
  ck_assert_ptr_nonnull(strstr(err, "ptoctl: INVALID_ARGS: vector_add: argument 'b' has 4 bytes"));
  ck_assert_int_eq(CTL("-j", "dispatch", "no_such_program"), 1);
  check_json(out, "assert d['error']['name'] == 'UNKNOWN_PROGRAM', d");
}
END_TEST

START_TEST(test_config_set_passthrough) {
  /* A key ptoctl does not know goes to the daemon untouched: this one
   * rejects it by name, which proves it was sent. */
  ck_assert_int_eq(CTL("--config-set", "frobnicate=1", "dispatch", "noop", "1"), 1);
  ck_assert_ptr_nonnull(
      strstr(err, "INVALID_REQUEST: unknown key 'frobnicate' in dispatch config"));
  ck_assert_int_eq(CTL("-j", "--config-set", "future_mode=\"fast\"", "dispatch", "noop", "1"), 1);
  check_json(out,
             "assert d['error']['key'] == 'future_mode', d\n"
             "assert d['error']['code'] == 1000, d");
  ck_assert_int_eq(CTL("--config-set", "frobnicate=1", "prewarm"), 1);
  ck_assert_ptr_nonnull(strstr(err, "'frobnicate'"));
  /* Keys the daemon knows are checked here first, with its messages. */
  ck_assert_int_eq(CTL("--config-set", "enable_swimlane=9", "dispatch", "noop", "1"), 2);
  ck_assert_ptr_nonnull(strstr(err, "--config-set enable_swimlane=9: enable_swimlane must be"));
  ck_assert_int_eq(CTL("--config-set", "ring_heap=1000", "dispatch", "noop", "1"), 2);
  ck_assert_ptr_nonnull(
      strstr(err, "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000"));
  ck_assert_int_eq(CTL("-j", "--config-set", "aicpu_thread_num=3", "--config-set",
                       "ring_dep_pool=2048", "dispatch", "noop", "1"),
                   0);
  check_json(out, "assert d['sizing']['ring_dep_pool'] == [2048] * 4, d");
}
END_TEST

START_TEST(test_deadline_and_timeout) {
  pto_client_t *c = NULL;
  pto_error_t e;
  pto_request_t req = {.method = PTO_METHOD_DISPATCH};
  pto_dispatch_arg_t args[3] = {pto_arg_int(1), pto_arg_int(0), pto_arg_int(500000)};
  uint32_t id = 0;
  req.u.dispatch = (pto_dispatch_req_t){.program = "noop", .args = args, .nargs = 3};
  ck_assert_int_eq(pto_client_connect(d0.socket, WAIT_MS, &c, &e), 0);
  ck_assert_int_eq(pto_client_send(c, &req, WAIT_MS, &id, &e), 0);
  for (int i = 0;; i++) {
    pto_status_t *st = NULL;
    bool running;
    ck_assert_int_lt(i, 20000);
    ck_assert_int_eq(pto_client_status(c, WAIT_MS, &st, &e), 0);
    running = st->queue.running > 0;
    pto_result_free(st);
    if (running) break;
    nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  ck_assert_int_eq(CTL("--deadline", "1", "dispatch", "noop", "1"), 1);
  ck_assert_ptr_nonnull(strstr(err, "ptoctl: DEADLINE_EXCEEDED: "));
  ck_assert_int_eq(CTL("--timeout", "1", "-j", "dispatch", "noop", "1", "0", "200000"), 4);
  check_json(out, "assert d['error']['name'] == 'TIMEOUT', d");
  ck_assert_int_eq(pto_client_wait(c, id, -1, NULL, &e), 0);
  pto_client_close(c);
}
END_TEST

/* Protocol 1.2's --request-id and --priority go with the device commands
 * (and are ignored by the others); bad values are refused before sending. */
START_TEST(test_priority_and_request_id) {
  bool priority;
  ck_assert_int_eq(CTL("--json", "--request-id", "rid-1", "dispatch", "noop", "1"), 0);
  check_json(out, "assert d['request_id'] == 'rid-1', d");
  ck_assert_int_eq(CTL("--json", "--request-id", "rid-2", "buffer", "alloc", "kv", "8"), 0);
  check_json(out, "assert d['request_id'] == 'rid-2', d");
  ck_assert_int_eq(CTL("--json", "--request-id", "rid-3", "prewarm"), 0);
  check_json(out, "assert d['request_id'] == 'rid-3', d");
  ck_assert_int_eq(CTL("--request-id", "rid-4", "-n", "2", "-w", "0", "bench", "noop", "1"), 0);
  ck_assert_int_eq(CTL("--request-id", "rid-5", "--priority", "3", "status"), 0); /* ignored */
  ck_assert_int_eq(CTL("--priority", "8", "dispatch", "noop", "1"), 2);
  ck_assert_ptr_nonnull(strstr(err, "--priority '8' must be a number in -8..7"));
  ck_assert_int_eq(CTL("--request-id", "", "dispatch", "noop", "1"), 2);
  ck_assert_ptr_nonnull(strstr(err, "request_id must be 1 to 64 bytes of printable ASCII"));
  ck_assert_int_eq(CTL("--request-id", "r", "--shm", "buffer", "write", "kv", "hex:00"), 2);
  ck_assert_int_eq(CTL("--json", "ping"), 0);
  priority = strstr(out, "\"priority\"") != NULL;
  if (priority) {
    ck_assert_int_eq(CTL("--priority", "-1", "dispatch", "noop", "1"), 0);
  } else { /* sent, and refused by name by a daemon that predates it */
    ck_assert_int_eq(CTL("--priority", "-1", "dispatch", "noop", "1"), 1);
    ck_assert_ptr_nonnull(strstr(err, "'priority'"));
  }
}
END_TEST

START_TEST(test_buffers) {
  char file[128], in[128];
  size_t len;
  char *data;
  snprintf(in, sizeof(in), "@%s/in.bin", tmp);
  twrite_file(in + 1, "hello world!1234", 16);
  ck_assert_int_eq(CTL("buffer", "alloc", "b1", in), 0);
  ck_assert_str_eq(out, "allocated 'b1': 16 bytes\n");
  ck_assert_int_eq(CTL("-j", "buffer", "alloc", "b2", "4K"), 0);
  check_json(out, "assert d == {'name': 'b2', 'bytes': 4096}, d");
  ck_assert_int_eq(CTL("buffer", "alloc", "b2", "4K"), 1);
  ck_assert_ptr_nonnull(strstr(err, "ALREADY_EXISTS"));
  ck_assert_int_eq(CTL("buffer", "write", "b1", "hex:4142", "--offset", "2"), 0);
  ck_assert_str_eq(out, "wrote 2 bytes to 'b1' at offset 2\n");
  ck_assert_int_eq(CTL("buffer", "read", "b1"), 0);
  ck_assert_ptr_nonnull(strstr(out, "16 bytes\n00000000  68 65 41 42 6f"));
  ck_assert_ptr_nonnull(strstr(out, "|heABo world!1234|"));
  ck_assert_int_eq(CTL("-j", "buffer", "read", "b1", "--offset", "2", "--bytes", "3"), 0);
  check_json(out, "assert d == {'bytes': 3, 'hex': '41426f'}, d");
  snprintf(file, sizeof(file), "%s/read.bin", tmp);
  ck_assert_int_eq(CTL("buffer", "read", "b1", "-o", file), 0);
  data = tread_file(file, &len);
  ck_assert_uint_eq(len, 16);
  ck_assert_mem_eq(data, "heABo world!1234", 16);
  free(data);
  ck_assert_int_eq(CTL("-j", "buffer", "list"), 0);
  check_json(out,
             "assert sorted((b['name'], b['bytes']) for b in d) == [('b1', 16), ('b2', 4096)], d");
  ck_assert_int_eq(CTL("buffer", "list"), 0);
  ck_assert_ptr_nonnull(strstr(out, "b2"));
  ck_assert_int_eq(CTL("buffer", "free", "b1"), 0);
  ck_assert_str_eq(out, "freed 'b1': 16 bytes\n");
  ck_assert_int_eq(CTL("buffer", "read", "b1"), 1);
  ck_assert_ptr_nonnull(strstr(err, "NOT_FOUND"));
  ck_assert_int_eq(CTL("buffer", "frob"), 2);
  ck_assert_int_eq(CTL("buffer", "write", "b2", "notdata"), 2);
}
END_TEST

/* out without its lines that differ from run to run (timing). */
static char *steady(const char *text) {
  char *copy = strdup(text), *line = copy, *w = copy;
  ck_assert_ptr_nonnull(copy);
  while (*line) {
    char *end = strchr(line, '\n');
    size_t n = end ? (size_t)(end - line) + 1 : strlen(line);
    if (strncmp(line, "timing", 6) != 0) {
      memmove(w, line, n);
      w += n;
    }
    line += n;
  }
  *w = '\0';
  return copy;
}

/* The same words with and without --shm print the same (steady) output
 * and exit status. */
static void same_with_shm(int want_rc, const char *const *words) {
  const char *with[32] = {"--shm"};
  char *inline_out, *inline_err;
  int n = 1, rc;
  rc = ctl_run(true, words);
  ck_assert_msg(rc == want_rc, "%s exited %d: %s", words[0], rc, err);
  inline_out = steady(out);
  inline_err = strdup(err);
  for (int i = 0; words[i]; i++) with[n++] = words[i];
  with[n] = NULL;
  rc = ctl_run(true, with);
  ck_assert_msg(rc == want_rc, "--shm %s exited %d: %s", words[0], rc, err);
  {
    char *shm_out = steady(out);
    ck_assert_str_eq(shm_out, inline_out);
    ck_assert_str_eq(err, inline_err);
    free(shm_out);
  }
  free(inline_out);
  free(inline_err);
}

START_TEST(test_shm_prints_the_same) {
  char path[128], script[1024], *pout = NULL, *perr = NULL;
  const char *py[] = {PYTHON, "-c", script, NULL};
  same_with_shm(0, (const char *const[]){"dispatch", "vector_add", "f32:1,2,3", "f32:10,20,30",
                                         "out:12", NULL});
  ck_assert_ptr_nonnull(strstr(out, "output 2   12 bytes: f32 [11, 22, 33]"));
  same_with_shm(0, (const char *const[]){"dispatch", "vector_add", "f32:1,2,3",
                                         "inout:f32:10,20,30", "out:12", NULL});
  ck_assert_int_eq(CTL("buffer", "alloc", "sb", "64"), 0);
  same_with_shm(0, (const char *const[]){"buffer", "write", "sb", "f32:1,2,3", "--offset", "4",
                                         NULL});
  same_with_shm(0, (const char *const[]){"buffer", "read", "sb", "--offset", "4", "--bytes",
                                         "12", NULL});
  same_with_shm(0, (const char *const[]){"buffer", "read", "sb", NULL});
  same_with_shm(0, (const char *const[]){"-j", "buffer", "read", "sb", "--bytes", "8", NULL});
  same_with_shm(0, (const char *const[]){"buffer", "read", "sb", "--offset", "64", NULL});
  same_with_shm(1, (const char *const[]){"buffer", "read", "nope", NULL});
  ck_assert_ptr_nonnull(strstr(err, "NOT_FOUND"));

  /* JSON: the same document but for the timings. */
  snprintf(path, sizeof(path), "%s/inline.json", tmp);
  ck_assert_int_eq(CTL("-j", "dispatch", "vector_add", "f32:1,2,3", "inout:f32:10,20,30",
                       "out:12"),
                   0);
  twrite_file(path, out, strlen(out));
  ck_assert_int_eq(CTL("--shm", "-j", "dispatch", "vector_add", "f32:1,2,3",
                       "inout:f32:10,20,30", "out:12"),
                   0);
  snprintf(path, sizeof(path), "%s/shm.json", tmp);
  twrite_file(path, out, strlen(out));
  snprintf(script, sizeof(script),
           "import json\n"
           "a, b = json.load(open('%s/inline.json')), json.load(open('%s/shm.json'))\n"
           "for d in (a, b): d.pop('timing_us'); d['arena'].pop('build_us')\n"
           "assert a == b, (a, b)\n"
           "assert b['outputs'][2]['f32'] == [11.0, 22.0, 33.0], b\n",
           tmp, tmp);
  ck_assert_msg(trun(py, NULL, &pout, &perr) == 0, "%s", perr);
  free(pout);
  free(perr);
}
END_TEST

START_TEST(test_shm_bench_and_errors) {
  tdaemon_t small;
  const char *ov[] = {"daemon.shm_limit=1M", NULL};
  ck_assert_int_eq(CTL("--shm", "bench", "vector_add", "f32:1,2,3", "inout:f32:10,20,30",
                       "out:12", "-n", "5", "-w", "1"),
                   0);
  ck_assert_ptr_nonnull(strstr(out, "bench vector_add: 5 dispatches after 1 warm-up"));
  ck_assert_ptr_nonnull(strstr(out, "5 hits, 0 misses"));
  /* The daemon's refusal of the region, as it said it. */
  tdaemon_start(&small, ov);
  ck_assert_int_eq(CTL_NOSOCK("-s", small.socket, "--shm", "dispatch", "vector_add", "f32:1",
                              "f32:2", "out:2M"),
                   1);
  ck_assert_msg(strstr(err, "OUT_OF_MEMORY") && strstr(err, "shm_limit"), "%s", err);
  tdaemon_stop(&small);
}
END_TEST

START_TEST(test_prewarm_and_advise) {
  ck_assert_int_eq(CTL("-j", "prewarm", "--ring-task-window", "512", "--ring-heap", "64K,0,0,0"),
                   0);
  check_json(out,
             "s = d['sizing']\n"
             "assert s['ring_task_window'] == [512] * 4, s\n"
             "assert s['ring_heap'] == [65536, 1048576, 1048576, 1048576], s\n"
             "assert d['prewarm']['sizing'] == s, d");
  ck_assert_int_eq(
      CTL("dispatch", "noop", "3", "--ring-task-window", "512", "--ring-heap", "64K,0,0,0"), 0);
  ck_assert_ptr_nonnull(strstr(out, "arena      hit"));
  ck_assert_int_eq(CTL("prewarm"), 0);
  ck_assert_ptr_nonnull(strstr(out, "task_window [256, 256, 256, 256]"));
  ck_assert_int_eq(CTL("advise"), 0);
  ck_assert_ptr_nonnull(strstr(out, "config lines:\n[ring]\n"));
  ck_assert_int_eq(CTL("-j", "advise"), 0);
  check_json(out,
             "assert d['observed']['task_window'][0] == 3, d\n"
             "assert d['config'].startswith('[ring]'), d");
}
END_TEST

START_TEST(test_bench_same_config_everywhere) {
  ck_assert_int_eq(CTL("-j", "bench", "vector_add", "f32:1,2", "f32:3,4", "out:8", "-n", "5",
                       "--warmup", "2", "--ring-heap", "4K"),
                   0);
  /* The warm-up built the 4 KiB-heap arena, so every measured run hit it:
   * the warm-up carried the same config as the measured runs. */
  check_json(out,
             "assert d['count'] == 5 and d['warmup'] == 2, d\n"
             "assert d['arena'] == {'hits': 5, 'misses': 0}, d\n"
             "l = d['latency_us']\n"
             "assert l['min'] <= l['median'] <= l['p99'] <= l['max'], l\n"
             "assert d['sizing']['ring_heap'] == [4096] * 4, d\n"
             "assert d['sizing']['source']['ring_heap'] == ['request'] * 4, d");
  ck_assert_int_eq(CTL("-j", "status"), 0);
  check_json(out, "assert d['dispatches']['ok'] == 7, d");
  ck_assert_int_eq(CTL("bench", "noop", "1", "-n", "3", "-w", "0"), 0);
  ck_assert_ptr_nonnull(strstr(out, "bench noop: 3 dispatches after 0 warm-up\n"));
  ck_assert_ptr_nonnull(strstr(out, "latency (client round trip)  min "));
  ck_assert_int_eq(CTL("bench", "vector_add", "f32:1", "-n", "3"), 1);
  ck_assert_ptr_nonnull(strstr(err, "INVALID_ARGS"));
  ck_assert_int_eq(CTL("-s", d0.socket, "bench", "noop", "1"), 2);
}
END_TEST

START_TEST(test_several_daemons) {
  tdaemon_t more[2];
  char dir[128], file[200];
  size_t len;
  char *data;
  const char *ov1[] = {"device.id=1", NULL}, *ov2[] = {"device.id=2", NULL};
  tdaemon_start(&more[0], ov1);
  tdaemon_start(&more[1], ov2);
  snprintf(dir, sizeof(dir), "%s/multi", tmp);
  ck_assert_int_eq(
      CTL("-s", more[0].socket, "-s", more[1].socket, "--json", "--ring-heap", "2K,0,0,0",
          "dispatch", "vector_add", "f32:1,2", "f32:3,4", "out:8", "--out-dir", dir),
      0);
  check_json(out,
             "ds = d['devices']\n"
             "assert len(ds) == 3 and all(x['ok'] for x in ds), ds\n"
             "for x in ds:\n"
             "    s = x['result']['sizing']\n"
             "    assert s['ring_heap'][0] == 2048, s\n"
             "    assert s['source']['ring_heap'][0] == 'request', s\n"
             "    assert x['result']['outputs'][2]['bytes'] == 8, x");
  snprintf(file, sizeof(file), "%s/target2/out2.bin", dir);
  data = tread_file(file, &len);
  {
    const float want[2] = {4, 6};
    ck_assert_uint_eq(len, 8);
    ck_assert_mem_eq(data, want, 8);
  }
  free(data);
  ck_assert_int_eq(CTL("-s", more[0].socket, "ping"), 0);
  /* Each daemon's section is named by the device number it reported. */
  ck_assert_ptr_nonnull(strstr(out, "== device 0 ("));
  ck_assert_ptr_nonnull(strstr(out, "== device 1 ("));
  ck_assert_ptr_nonnull(strstr(out, "device 1: ready"));

  /* One daemon gone: its entry says so, the others still ran. */
  tdaemon_stop(&more[0]);
  ck_assert_int_eq(CTL("-s", more[0].socket, "-s", more[1].socket, "-j", "dispatch", "vector_add",
                       "f32:1,2", "f32:3,4", "out:8"),
                   3);
  check_json(out,
             "ds = d['devices']\n"
             "assert [x['ok'] for x in ds] == [True, False, True], ds\n"
             "assert ds[1]['error']['name'] == 'CONNECT_FAILED', ds[1]\n"
             "assert ds[2]['result']['outputs'][2]['f32'] == [4.0, 6.0], ds[2]");
  ck_assert_ptr_nonnull(strstr(err, "CONNECT_FAILED"));
  ck_assert_int_eq(CTL("-s", more[1].socket, "status"), 0);
  ck_assert_ptr_nonnull(strstr(out, "device     2 (sim)"));
  tdaemon_stop(&more[1]);
}
END_TEST

static Suite *ptoctl_suite(void) {
  Suite *s = suite_create("ptoctl");
  TCase *tc = tcase_create("ptoctl");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_version_and_usage);
  tcase_add_test(tc, test_cannot_connect);
  tcase_add_test(tc, test_read_commands);
  tcase_add_test(tc, test_dispatch);
  tcase_add_test(tc, test_config_set_passthrough);
  tcase_add_test(tc, test_deadline_and_timeout);
  tcase_add_test(tc, test_buffers);
  tcase_add_test(tc, test_shm_prints_the_same);
  tcase_add_test(tc, test_shm_bench_and_errors);
  tcase_add_test(tc, test_prewarm_and_advise);
  tcase_add_test(tc, test_bench_same_config_everywhere);
  tcase_add_test(tc, test_several_daemons);
  tcase_add_test(tc, test_priority_and_request_id);
  suite_add_tcase(s, tc);
  return s;
}

PTO_CHECK_MAIN(ptoctl_suite)
