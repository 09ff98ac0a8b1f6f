#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""Write the seed corpus of the libFuzzer harnesses: tests/fuzz/corpus/<harness>/.

    /usr/bin/python3 tests/fuzz/make_corpus.py          (needs python3-msgpack)

Seeds are real messages of docs/protocol.md (a request of every method, a
response of every method, error replies), the classic broken inputs (a
reserved byte, a 5-byte header claiming 4 GiB, nesting past the limit,
truncation, trailing bytes), config files (systemd/ptod.conf among them)
and sizing values in every form; for the harnesses of daemon code, short
scripts of what clients and the service do.  Each harness's input layout is described
at the top of its .c file; the selector bytes written here follow it.

The output is deterministic: running the script again rewrites the same
files (named after their content), and removes seeds it no longer makes.
"""
import hashlib
import os
import struct
import sys

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")

METHODS = ["ping", "status", "metrics", "programs", "dispatch", "buffer.alloc", "buffer.write",
           "buffer.read", "buffer.free", "buffer.list", "prewarm", "advise"]
M = {name: i for i, name in enumerate(METHODS)}


def pack(obj):
    return msgpack.packb(obj, use_bin_type=True)


def request(msgid, method, params=None):
    return pack([0, msgid, method, [] if params is None else [params]])


def response(msgid, result, error=None):
    return pack([1, msgid, error, None if error is not None else result])


# ---- params of every method, valid and not --------------------------------

SIZING = {"ring_task_window": [16384] * 4, "ring_heap": [256 << 20] * 4,
          "ring_dep_pool": [16384] * 4}

PARAMS = {
    "dispatch": [
        {"program": "attention_prefill",
         "args": [{"data": b"\x00" * 16}, {"data": b"\x01" * 16}, {"data": b"\x02" * 16},
                  {"buffer": "kv"}, {"out": 16}, {"scalar": 2}, {"scalar": 1}, {"scalar": 2}],
         "config": {"ring_heap": [512 << 20, 0, 0, 0], "ring_task_window": 1024,
                    "aicpu_thread_num": 4, "enable_swimlane": 1, "enable_scope_stats": True,
                    "enable_dep_gen": False},
         "deadline_ms": 5000},
        {"program": "vector_add",
         "args": [{"buffer": "a", "offset": 0, "bytes": 64}, {"data": b"xy", "dir": "inout"},
                  {"data": b"", "dir": "in"}, {"scalar": -1.5}, {"scalar": -7}],
         "config": {"ring_dep_pool": None, "ring_heap": None}},
        {"program": "noop", "args": []},
        {"program": "noop", "args": [], "config": {"ring_heap": 1000}},
        {"program": "noop", "args": [], "config": {"ring_heapp": 1 << 20}},
        {"program": "noop", "args": [], "config": {"ring_task_window": [4, 8, 16]}},
        {"program": "noop", "args": [], "config": {"ring_dep_pool": True}},
        {"program": "../etc/passwd", "args": []},
        {"program": "noop", "args": [{"buffer": "kv", "data": b"1"}]},
        {"program": "noop", "args": [{}], "deadline_ms": -1},
    ],
    "buffer.alloc": [
        {"name": "kv", "bytes": 1 << 20},
        {"name": "w", "bytes": 4, "init": b"abcd"},
        {"name": "w", "bytes": 5, "init": b"abcd"},
        {"name": "kv", "bytes": "12"},
        {"name": ".hidden", "bytes": 0},
    ],
    "buffer.write": [
        {"name": "kv", "offset": 8, "data": b"hello"},
        {"name": "kv", "data": b""},
        {"name": "kv", "offset": (1 << 40) + 1, "data": b"x"},
    ],
    "buffer.read": [
        {"name": "kv", "offset": 0, "bytes": 16},
        {"name": "kv"},
        {"name": "kv", "bytes": 0, "offset": None},
    ],
    "buffer.free": [{"name": "kv"}, {"name": "kv", "name2": 1}],
    "prewarm": [
        {"config": {"ring_heap": [512 << 20, 0, 0, 0]}},
        {"config": {}},
        {"config": {"ring_task_window": 0}},
    ],
    "ping": [{"unexpected": 1}],
}

# ---- results of every method ----------------------------------------------

KEY = "ef9b6111db51b6a5"
ARENA = {"sizing": SIZING, "key": KEY, "bytes": 3 << 30, "build_us": 1520, "builds": 1,
         "hits": 10, "misses": 1,
         "prewarm": {"sizing": SIZING, "key": KEY, "first_dispatch_hit": True}}

RESULTS = {
    "ping": [{"version": "0.1.0", "device": 0, "state": "ready"}],
    "status": [{"device": 0, "platform": "sim", "version": "0.1.0", "uptime_s": 12,
                "state": "warming", "queue": {"depth": 0, "capacity": 64, "running": 0},
                "arena": dict(ARENA, prewarm=dict(ARENA["prewarm"], first_dispatch_hit=None)),
                "memory": {"limit": 4 << 30, "arena": 3 << 30, "buffers": 1 << 20,
                           "free": (1 << 30) - (1 << 20)},
                "dispatches": {"ok": 3, "failed": 1, "rejected": 0}, "clients": 2,
                "future_key": [1, 2]}],
    "metrics": ["# HELP ptod_dispatches_total Dispatches.\n"
                "# TYPE ptod_dispatches_total counter\nptod_dispatches_total{result=\"ok\"} 3\n"],
    "programs": [[{"name": "noop", "description": "Does nothing.", "args": []},
                  {"name": "vector_add", "description": "c = a + b.",
                   "args": [{"name": "a", "kind": "in", "optional": False, "doc": "f32[N]"},
                            {"name": "n", "kind": "int", "optional": True, "doc": "int"}]}]],
    "dispatch": [{"outputs": [None, b"\x00" * 8, None],
                  "arena": {"hit": False, "build_us": 900, "key": KEY},
                  "sizing": dict(SIZING, source={
                      "ring_task_window": ["request", "env", "config", "default"],
                      "ring_heap": ["default"] * 4, "ring_dep_pool": ["config"] * 4}),
                  "peaks": {"task_window": [3, 0, 0, 0], "heap": [4096, 0, 0, 0],
                            "dep_pool": [2, 0, 0, 0]},
                  "timing_us": {"queue": 1, "arena": 900, "run": 40, "total": 950},
                  "tasks": 3}],
    "buffer.alloc": [{"name": "kv", "bytes": 1 << 20}],
    "buffer.write": [{"bytes": 5}],
    "buffer.read": [b"hello"],
    "buffer.free": [{"bytes": 1 << 20}],
    "buffer.list": [[{"name": "kv", "bytes": 1 << 20}, {"name": "w", "bytes": 4}]],
    "prewarm": [ARENA],
    "advise": [{"observed": {"task_window": [3, 0, 0, 0], "heap": [4096, 0, 0, 0],
                             "dep_pool": [2, 0, 0, 0]},
                "recommended": dict(SIZING, ring_heap=[1024, 1024, 1024, 1024]),
                "config": "[ring]\nheap = 1K\n"}],
}

ERRORS = [
    {"code": 1001, "name": "INVALID_CONFIG",
     "message": "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000",
     "key": "ring_heap", "hint": "Use 1024 or a larger power of 2."},
    {"code": 2, "name": "HEAP_RING_DEADLOCK", "message": "Ring 0 ran out of heap.", "ring": 0,
     "requested": 4096, "capacity": 1024, "hint": "Raise ring_heap[0]."},
    {"name": "BUSY"},
    {"code": 77, "message": "A code this client does not know."},
    {"message": "no code"},
]


def seeds_reader():
    reqs = [request(1, "ping"), request(2, "status"),
            request(3, "dispatch", PARAMS["dispatch"][0]),
            request(4, "buffer.write", PARAMS["buffer.write"][0]),
            pack([2, "cancel", []])]
    stream = b"".join(reqs)
    huge = b"\xdd\xff\xff\xff\xff"
    deep = b"\x91" * 33 + b"\x90"
    kinds = pack([0, 0xffffffff, "x", [{
        "s8": "a" * 40, "s16": "b" * 300, "b8": b"c" * 10, "b16": b"d" * 300,
        "i": [-1, -33, -200, -40000, -(1 << 40), 200, 40000, 1 << 40, 1 << 63],
        "f": [1.5], "a16": list(range(20)), "m16": {str(i): i for i in range(20)},
        "n": [None, True, False]}]])
    ext = (b"\x94\x00\x05\xa1x\x91\x86" + b"\xa1a\xd4\x01\x02" + b"\xa1b\xd8\x01" + b"\x00" * 16 +
           b"\xa1c\xc7\x03\x01abc" + b"\xa1d\xc8\x00\x02\x01ab" + b"\xa1e\xca\x3f\xc0\x00\x00" +
           b"\xa1f\xc9\x00\x00\x00\x01\x05z")
    return {
        "stream-bytewise": bytes([0, 255]) + stream,
        "stream-random": bytes([7, 255]) + stream,
        "stream-small-limit": bytes([3, 1]) + stream,
        "reserved-c1": bytes([5, 255]) + request(1, "ping")[:3] + b"\xc1",
        "huge-claim": bytes([2, 255]) + huge,
        "huge-claim-limited": bytes([2, 10]) + huge,
        "deep": bytes([9, 255]) + deep,
        "truncated": bytes([4, 255]) + reqs[2][:-3],
        "all-kinds": bytes([6, 255]) + kinds,
        "ext-and-float": bytes([8, 255]) + ext,
        "array32-map32": bytes([1, 255]) + b"\xdd\x00\x00\x00\x02\xdf\x00\x00\x00\x01\x00\x01\xc0",
    }


def seeds_envelope():
    out = {}
    for i, m in enumerate(METHODS):
        params = PARAMS[m][0] if m in PARAMS and m != "ping" else None
        out["request-" + m] = request(100 + i, m, params)
        out["response-" + m] = response(100 + i, RESULTS[m][0])
    out["response-error"] = response(5, None, ERRORS[1])
    out["notification-error"] = pack([2, "error", [ERRORS[0]]])
    out["bad-count"] = pack([0, 1, "ping"])
    out["bad-msgid"] = pack([0, 1 << 32, "ping", []])
    out["bad-method"] = pack([0, 1, 7, []])
    out["bad-params"] = pack([0, 1, "ping", [1]])
    out["bad-type"] = pack([3, 1, "ping", []])
    out["not-array"] = pack({"method": "ping"})
    out["trailing"] = request(1, "ping") + b"\x00"
    out["error-not-map"] = pack([1, 1, "oops", None])
    return out


def seeds_params():
    out = {}
    for m, plist in PARAMS.items():
        for j, p in enumerate(plist):
            out["%s-%d" % (m, j)] = bytes([M[m]]) + pack(p)
    out["ping-empty"] = bytes([M["ping"]]) + pack({})
    for m in ("dispatch", "buffer.alloc", "prewarm"):
        out["raw-" + m] = b"\x80" + request(11, m, PARAMS[m][0])
    out["raw-unknown-method"] = b"\x80" + request(12, "shutdown")
    out["raw-no-params"] = b"\x80" + request(13, "buffer.list")
    return out


def seeds_results():
    out = {}
    for m, rlist in RESULTS.items():
        for j, r in enumerate(rlist):
            out["%s-%d" % (m, j)] = bytes([M[m]]) + pack(r)
    out["status-missing-key"] = bytes([M["status"]]) + pack({"device": 0})
    out["dispatch-bad-source"] = bytes([M["dispatch"]]) + pack(
        dict(RESULTS["dispatch"][0], sizing=dict(SIZING, source={
            "ring_task_window": ["request"] * 4, "ring_heap": ["nowhere"] * 4,
            "ring_dep_pool": ["env"] * 4})))
    out["ping-bad-key"] = bytes([M["ping"]]) + pack(dict(RESULTS["ping"][0], device=-1))
    for j, e in enumerate(ERRORS):
        out["raw-error-%d" % j] = bytes([0x80 | M["dispatch"]]) + response(3, None, e)
    out["raw-ok"] = bytes([0x80 | M["ping"]]) + response(3, RESULTS["ping"][0])
    return out


CONFIG_FULL = """; every key, set
[daemon]
socket = /run/ptod/ptod0.sock
socket_mode = 0660
socket_group = 0
allowed_uids = 0, root
allowed_gids = 0
max_clients = 256
max_message = 64M
max_pending = 1024
queue_depth = 64
drain_timeout = 30s
client_timeout = 1500ms
output_limit = 256M
diagnostics_dir = /var/lib/ptod/diagnostics
log_level = debug

[device]
id = 3
platform = sim
memory = 4G
cores = 4
aicpu_thread_num = 4
programs = /usr/lib/ptod/programs
run_timeout = 10
deadlock_timeout = 500ms

[ring]
task_window = 16384
heap = 512M,0,0,0 ; ring 0 only
dep_pool = 0,0,0,0

[prewarm]
task_window = 1024
heap = 1G
dep_pool = 4, 8, 16, 32
"""


def seeds_config():
    with open(os.path.join(ROOT, "systemd", "ptod.conf"), "rb") as f:
        shipped = f.read()
    return {
        "ptod.conf": shipped,
        "full": CONFIG_FULL.encode(),
        "crlf-bom": b"\xef\xbb\xbf[ring]\r\n  heap = 1K\r\n",
        "empty": b"",
        "comments-only": b"# nothing\n; nothing\n\n",
        "unknown-key": b"[daemon]\nmax_clientz = 4\n",
        "unknown-section": b"[daemons]\n",
        "duplicate": b"[device]\ncores = 4\ncores = 8\n",
        "outside-section": b"cores = 4\n",
        "bad-ring": b"[ring]\nheap = 1000\n",
        "world-writable": b"[daemon]\nsocket_mode = 0666\n",
        "syntax": b"[device]\njust words\n",
        "long-line": b"[daemon]\nsocket = /" + b"a" * 250 + b"\n",
        "nul": b"[daemon]\nlog_level = info\x00\n",
        "no-user": b"[daemon]\nallowed_uids = no-such-user-ptod\n",
        "relative-dir": b"[device]\nprograms = lib/programs\n",
        "group-names": b"[daemon]\nsocket_group = root\nallowed_gids = root, 4294967295\n",
        "too-many-ids": (b"[daemon]\nallowed_uids = " +
                         b",".join(b"%d" % i for i in range(65)) + b"\n"),
    }


def seeds_sizing():
    # selector = field << 2 | mode; mode 0 env text, 1 config text, 2 msgpack, 3 size
    TW, HEAP, DEP = 0, 1, 2
    out = {}

    def add(name, field, mode, body):
        out[name] = bytes([field << 2 | mode]) + body

    add("env-scalar", TW, 0, b"16384")
    add("env-list", HEAP, 0, b"1024, 2048 ,0,\t4096")
    add("env-zero", DEP, 0, b"0")
    add("env-zeros", DEP, 0, b"0,0,0,0")
    add("env-junk", TW, 0, b"12x")
    add("env-empty", HEAP, 0, b"")
    add("env-three", DEP, 0, b"1,2,3")
    add("env-negative", DEP, 0, b"-5")
    add("env-overflow", HEAP, 0, b"18446744073709551616")
    add("config-suffix", HEAP, 1, b"256M,0,0,0")
    add("config-scalar", HEAP, 1, b"1G")
    add("config-lower", HEAP, 1, b"512m")
    add("config-window-max", TW, 1, b"1073741824")
    add("config-window-over", TW, 1, b"2G")
    add("msgpack-nil", HEAP, 2, pack(None))
    add("msgpack-scalar", HEAP, 2, pack(1024))
    add("msgpack-list", TW, 2, pack([0, 0, 1024, 0]))
    add("msgpack-bool", DEP, 2, pack(True))
    add("msgpack-float", DEP, 2, pack(1.5))
    add("msgpack-str", HEAP, 2, pack("1M"))
    add("msgpack-short", TW, 2, pack([4, 8, 16]))
    add("msgpack-negative", DEP, 2, pack(-4))
    add("msgpack-entry-bad", HEAP, 2, pack([1024, "x", 0, 0]))
    add("size-plain", 0, 3, b"1000")
    add("size-suffix", 0, 3, b"64M")
    add("size-max", 0, 3, b"18446744073709551615")
    add("size-over", 0, 3, b"17179869184G")
    add("size-junk", 0, 3, b"1.5K")
    return out


# ---- the daemon's own code: inputs are scripts (see each harness's header) ----

def u16(v):
    return struct.pack("<H", v)


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def seeds_server():
    # header: max_message - 16, max_objects/64, max_pending, input_limit/4,
    # output_limit/4, clients_memory/8, max_clients (see start())
    roomy = u16(65535) + bytes([255, 7]) + u16(16000) + u16(16000) + u16(60000) + bytes([3])
    tight = u16(512) + bytes([4, 1]) + u16(256) + u16(256) + u16(512) + bytes([1])
    ping = request(1, "ping")
    connect, run = b"\x00", b"\x0c\x03"

    def write(c, data):
        return b"\x01" + bytes([c]) + u16(len(data)) + data

    def send_fds(c, nfds, kind, data):
        return b"\x02" + bytes([c, nfds - 1, kind, len(data) - 1]) + data

    def answer(b, n):  # b: which held message and how (see service_step)
        return b"\x04" + bytes([b]) + u16(n)

    def read(c):
        return b"\x09" + bytes([c]) + u16(65535)

    out = {}
    out["pings"] = roomy + connect + write(0, ping * 3) + run + answer(0x10, 10) * 3 + run + read(0)
    out["two-clients-split"] = (roomy + connect + connect + write(0, ping[:5]) + write(1, ping)
                                + run + write(0, ping[5:]) + run + answer(0x20, 100) * 2
                                + run + read(0) + read(1))
    out["fd-then-take"] = (roomy + connect + send_fds(0, 1, 0, ping) + run + b"\x06\x00\x00\x00"
                           + answer(0x10, 4) + run + read(0))
    out["fds-two-kinds"] = roomy + connect + send_fds(0, 2, 0x81, ping) + send_fds(0, 3, 2, ping) + run
    out["too-many-fds"] = roomy + connect + send_fds(0, 1, 0, ping) * 9 + run + answer(0, 0) * 9 + run
    out["truncated-fds"] = roomy + connect + send_fds(0, 12, 1, ping) + run + answer(0, 0) + run
    out["garbage"] = roomy + connect + write(0, ping + b"\xc1") + run + answer(0x10, 3) + run + read(0)
    out["big-message"] = roomy + connect + b"\x03\x00" + u32(65530) + run * 4 + answer(0x10, 8) + run
    out["too-big"] = roomy + connect + b"\x03\x00" + u32(150000) + run * 4 + answer(0x10, 8) + run
    out["unread-answers"] = (tight + connect + write(0, ping * 8) + (run + answer(0x10, 20000)) * 8
                             + read(0))
    out["half-close"] = roomy + connect + write(0, ping) + b"\x0a\x00" + run + answer(0x20, 64) + run + read(0)
    out["max-clients"] = tight + connect + connect + write(1, ping) + run + read(1)
    out["reload-fail-close"] = (roomy + connect + connect + write(0, ping * 2) + run
                                + b"\x08\x03" + u16(16) + b"\x07\x00" + u16(0) + b"\x07\x81" + u16(0)
                                + run + answer(0, 0) + answer(0, 0) + run)
    # max_clients byte 0xff: the server is closed after the input, and made again.
    out["teardown"] = roomy[:-1] + b"\xff" + connect + write(0, ping) + run + answer(0x10, 4) + run + read(0)
    out["corked"] = roomy + connect + write(0, ping * 4) + run + answer(0xd0, 30) * 2 + run + read(0)
    return out


def seeds_shm():
    def register(name, kind, nbytes, size, limit=1 << 20):
        return b"\x00" + bytes([name, kind]) + u16(nbytes) + u16(size) + u32(limit)

    def acquire(name, offset, nbytes, fill=0x5a):
        return b"\x02" + bytes([name]) + u16(offset) + u16(nbytes) + bytes([fill])

    out = {}
    out["register-use-unregister"] = (register(0, 0, 4096, 4096) + acquire(0, 0, 4096)
                                      + acquire(0, 100, 10) + b"\x01\x00" + b"\x04" + b"\x03\x00")
    out["every-fd-kind"] = b"".join(register(k, k, 64, 64) for k in range(7)) + register(7, 14, 64, 128)
    out["duplicate-name"] = register(1, 0, 64, 64) + register(1, 0, 64, 64)
    out["too-short"] = register(2, 0, 8192, 4096)
    out["over-limit"] = register(0, 0, 4096, 4096, 6000) + register(1, 0, 4096, 4096, 6000)
    out["bad-range"] = register(0, 0, 100, 100) + acquire(0, 90, 20) + acquire(0, 101, 0)
    out["long-name"] = register(0xf3, 0, 16, 16) + acquire(0xf3, 0, 16) + b"\x01\xf3"
    out["close-while-held"] = register(0, 0, 512, 512) + acquire(0, 0, 512) + acquire(0, 256, 1)
    return out


def seeds_http():
    def conn(req, flags=0):
        return bytes([flags]) + u16(len(req)) + req

    get = b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n"
    out = {}
    out["get"] = conn(get)
    out["head"] = conn(b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    out["http10"] = conn(b"GET /metrics HTTP/1.0\r\n\r\n")
    out["post"] = conn(b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
    out["not-found"] = conn(b"GET /other?x=1 HTTP/1.1\r\nHost: x\r\n\r\n")
    out["pipelined"] = conn(get + b"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\n" + get)
    out["chunked"] = conn(b"PUT /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                          b"5\r\nhello\r\n0\r\n\r\n")
    out["garbage"] = conn(b"\x00\xff GET / \r\n\r\n")
    out["cut-short"] = conn(get[:20]) + conn(get, 1) + conn(get)
    out["long-header"] = conn(b"GET /metrics HTTP/1.1\r\nHost: x\r\nX: " + b"a" * 9000 + b"\r\n\r\n")
    return out


def seeds_dfx():
    def record(swimlane, stats, dep, failure=b"\x00", dropped=0, name=b"matmul", limit=1 << 24):
        head = bytes([swimlane, stats, dep]) + u32(0) + bytes([4, 2]) + u64(1000) + u64(90000)
        sizing = b"".join(u64(v) for v in [64, 64, 64, 64, 1 << 20, 1 << 20, 0, 0, 256, 256, 256, 256])
        return (head + sizing + failure + bytes([dropped]) + u32(4096) + u32(limit)
                + bytes([len(name)]) + name)

    def scope(parent):
        return b"\x00" + bytes([parent, 1]) + u32(1000) + b"\x01" + u32(5000) + u16(3)

    def task(core, scope_, ndeps, deps=b"", kernel=3):
        return (b"\x02" + bytes([core, scope_, ndeps, kernel, 1]) + u32(2000) + u16(10) + u16(10)
                + b"\x01" + u16(100) + u64(4096) + u16(2) + u64(8192) + u16(1) + deps)

    def phase(lane, ring):
        return b"\x01" + bytes([lane, ring, 0]) + u32(1500) + u32(700)

    body = scope(0xff) + scope(0) + task(0, 0, 0) + task(1, 1, 1, b"\x00") + task(0xff, 0xff, 2, b"\x00\x01", 0)
    failure = b"\x07" + bytes([1, 0, 1]) + u64(3000) + u64(1 << 21) + u64(1 << 20) + u64(5) + u64(1 << 20) + u64(4)
    out = {}
    out["all-level1"] = record(1, 1, 1) + body
    out["level2-phases"] = record(2, 0, 0) + body + phase(4, 0xff) + phase(5, 1) + phase(6, 0)
    out["failure"] = record(3, 1, 1, failure) + body
    out["dropped"] = record(1, 1, 1, dropped=1) + body
    out["quote-name"] = record(1, 1, 1, name=b'a"b\\c\n\x7f\xc3') + body
    out["over-limit"] = record(4, 1, 1, limit=100) + body
    out["no-run"] = bytes([1, 1, 1]) + u32(0) + bytes([1, 0]) + u64(0)
    return out


def seeds_requests():
    def piece(data, fd_pages=0):
        return u16(len(data)) + data + bytes([(fd_pages - 1) * 2 + 1 if fd_pages else 0])

    out = {}
    out["loop-methods"] = b"\x04" + piece(b"".join(request(i + 1, m) for i, m in enumerate(
        ["ping", "status", "metrics", "programs", "buffer.list", "shm.list"])))
    out["buffers"] = b"\x08" + piece(
        request(1, "buffer.alloc", {"name": "kv", "bytes": 4096})
        + request(2, "buffer.write", {"name": "kv", "offset": 8, "data": b"x" * 100})
        + request(3, "buffer.read", {"name": "kv", "offset": 0, "bytes": 200})
        + request(4, "buffer.free", {"name": "kv"}) + request(5, "buffer.free", {"name": "kv"}))
    out["shm"] = b"\x02" + piece(request(1, "shm.register", {"name": "r", "bytes": 8192}), 2) + piece(
        request(2, "buffer.alloc", {"name": "b", "bytes": 8192})
        + request(3, "buffer.write", {"name": "b", "shm": "r", "offset": 0, "bytes": 4096})
        + request(4, "shm.unregister", {"name": "r"}) + request(5, "shm.register", {"name": "q", "bytes": 1}))
    out["dispatch-unknown"] = b"\x01" + piece(request(1, "dispatch", {"program": "noop", "args": []}))
    out["prewarm-advise"] = b"\x01" + piece(request(1, "prewarm", ARENA) + request(2, "advise", {}))
    out["bad-then-stop"] = b"\x10" + piece(request(1, "ping") + request(2, "nosuch") + b"\xc1"
                                           + request(3, "ping"))
    out["split"] = b"\x01" + piece(request(7, "ping")[:3]) + piece(request(7, "ping")[3:])
    # A buffer left behind: the harness frees it before the next input.
    out["buffer-left"] = b"\x01" + piece(request(1, "buffer.alloc", {"name": "kept", "bytes": 4096})
                                         + request(2, "ping"))
    out["not-requests"] = b"\x04" + piece(pack([2, "ping", []]) + pack([1, 9, None, None])
                                          + pack([0, -1, "ping", []]))
    return out


HARNESSES = {
    "fuzz_reader": seeds_reader,
    "fuzz_envelope": seeds_envelope,
    "fuzz_params": seeds_params,
    "fuzz_results": seeds_results,
    "fuzz_config": seeds_config,
    "fuzz_sizing": seeds_sizing,
    "fuzz_server": seeds_server,
    "fuzz_shm": seeds_shm,
    "fuzz_http": seeds_http,
    "fuzz_dfx": seeds_dfx,
    "fuzz_requests": seeds_requests,
}


def main():
    total = 0
    for harness, make in HARNESSES.items():
        d = os.path.join(CORPUS, harness)
        os.makedirs(d, exist_ok=True)
        want = {}
        for name, data in make().items():
            digest = hashlib.sha1(data).hexdigest()[:12]
            want["%s-%s" % (name, digest)] = data
        for old in os.listdir(d):
            if old not in want:
                os.remove(os.path.join(d, old))
        for name, data in want.items():
            with open(os.path.join(d, name), "wb") as f:
                f.write(data)
        total += len(want)
        print("%-14s %3d seeds, %6d bytes" % (harness, len(want), sum(map(len, want.values()))))
    print("total %d seeds" % total)
    return 0


if __name__ == "__main__":
    sys.exit(main())
