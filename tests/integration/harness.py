# SPDX-License-Identifier: Apache-2.0
"""Integration test harness: start the real ptod binary on a temporary socket
and talk msgpack-RPC to it over that socket.

Run with Debian's /usr/bin/python3 (python3-msgpack).  ctest sets
PTOD_BINARY_DIR to the build tree.  The msgpack here is python3-msgpack, an
implementation independent of ours, so every test also checks that the wire
format is the standard one.

Every daemon a test starts is stopped when the test ends (SIGTERM), and the
test fails if that daemon did not exit 0 or if its log (its stderr) holds a
sanitizer report: under -DPTOD_SANITIZE=address,undefined a leak at exit or
any memory error fails the test that caused it.
"""

import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
import unittest

import msgpack

BINARY_DIR = os.environ.get("PTOD_BINARY_DIR", os.path.join(os.path.dirname(__file__), "../../build"))
PTOD = os.path.join(BINARY_DIR, "daemon", "ptod")
PROGRAMS = os.path.join(BINARY_DIR, "programs")

# Small rings so every daemon prewarms in milliseconds and tests can run in
# parallel on two cores.
SMALL_RING = {"task_window": "256", "heap": "1M", "dep_pool": "1024"}
SMALL_SIZING = {
    "ring_task_window": [256] * 4,
    "ring_heap": [1 << 20] * 4,
    "ring_dep_pool": [1024] * 4,
}

# What a sanitizer writes when it finds something (ASan, LSan, UBSan, TSan).
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer", "ERROR: ThreadSanitizer")

# Error codes of docs/protocol.md, "The error map".
CODES = {
    "SCOPE_DEADLOCK": 1, "HEAP_RING_DEADLOCK": 2, "FLOW_CONTROL_DEADLOCK": 3,
    "DEP_POOL_OVERFLOW": 4, "INVALID_ARGS": 5, "EXPLICIT_ORCH_FATAL": 9,
    "TENSORMAP_OVERFLOW": 11, "SCHEDULER_TIMEOUT": 100,
    "INVALID_REQUEST": 1000, "INVALID_CONFIG": 1001, "UNKNOWN_METHOD": 1002,
    "UNKNOWN_PROGRAM": 1003, "BUSY": 1004, "DEADLINE_EXCEEDED": 1005,
    "SHUTTING_DOWN": 1006, "OUT_OF_MEMORY": 1007, "NOT_FOUND": 1008,
    "ALREADY_EXISTS": 1009, "PERMISSION_DENIED": 1010, "MESSAGE_TOO_LARGE": 1011, "CANCELLED": 1012,
    "INTERNAL": 1099,
}


def sanitizer():
    """The build's PTOD_SANITIZE ("address,undefined", "thread" or "")."""
    try:
        with open(os.path.join(BINARY_DIR, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith("PTOD_SANITIZE:"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def rss_env():
    """Extra daemon environment for tests that measure its RSS: under ASan
    a small quarantine, so that freed memory is reused as it is in a plain
    build instead of being held for 256 MiB."""
    if "address" not in sanitizer():
        return {}
    options = os.environ.get("ASAN_OPTIONS", "")
    return {"ASAN_OPTIONS": (options + ":" if options else "") + "quarantine_size_mb=16"}


def vmrss_kib(pid):
    """The resident set of process pid, in KiB (/proc/PID/status VmRSS)."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS for pid %d" % pid)


class RssSampler:
    """Samples a process's VmRSS every `interval` seconds in a thread, from
    start() to stop(); `peak` and `samples` (KiB) hold what it saw."""

    def __init__(self, pid, interval=0.02):
        self.pid = pid
        self.interval = interval
        self.samples = []
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self.stopping.is_set():
            try:
                self.samples.append(vmrss_kib(self.pid))
            except (OSError, AssertionError):
                return
            self.stopping.wait(self.interval)

    def start(self):
        self.thread.start()
        return self

    def stop(self):
        self.stopping.set()
        self.thread.join()
        self.samples.append(vmrss_kib(self.pid))
        return self

    @property
    def peak(self):
        return max(self.samples)


def figures(test, **values):
    """Print one line of figures for docs/reliability.md, from the test run
    that produced them: `FIGURES <test>: key=value ...`."""
    print("FIGURES %s: %s" % (test, " ".join("%s=%s" % kv for kv in values.items())), flush=True)


class RpcError(Exception):
    """An error map returned by the daemon."""

    def __init__(self, err):
        super().__init__("%s (%s): %s" % (err.get("name"), err.get("code"), err.get("message")))
        self.err = err
        self.code = err.get("code")
        self.name = err.get("name")
        self.message = err.get("message")


def write_config(path, sections):
    """sections: {"daemon": {"socket": ...}, "ring": {...}} -> an INI file."""
    with open(path, "w") as f:
        for section, keys in sections.items():
            f.write("[%s]\n" % section)
            for key, value in keys.items():
                f.write("%s = %s\n" % (key, value))
            f.write("\n")


def wait_until(predicate, timeout=240, interval=0.005, what="the condition"):
    """Poll predicate() until it returns a true value (which is returned).
    The timeout only bounds a test that fails anyway: it is long enough for
    a sanitizer build on a loaded machine (a module's ctest TIMEOUT is 300 s,
    so this failure still names what was awaited)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(interval)


class NotifyListener:
    """A test NOTIFY_SOCKET: collects the daemon's sd_notify datagrams."""

    def __init__(self, path):
        self.path = path
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.messages = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self):
        while True:
            try:
                data = self.sock.recv(4096)
            except OSError:
                return
            if not data:
                return
            with self.cond:
                self.messages.append(data.decode())
                self.cond.notify_all()

    def snapshot(self):
        with self.cond:
            return list(self.messages)

    def find(self, text, start=0):
        """Index of the first datagram (from `start` on) with a line equal to
        `text` (or starting with it, for "KEY="), else None."""
        with self.cond:
            for i in range(start, len(self.messages)):
                lines = self.messages[i].split("\n")
                if any(l == text or (text.endswith("=") and l.startswith(text)) for l in lines):
                    return i
        return None

    def wait_for(self, text, timeout=30, start=0):
        """Wait until a datagram (from index `start` on) has a line equal to
        `text` (or starting with it, for "KEY=").  Returns its index."""
        deadline = time.monotonic() + timeout
        with self.cond:
            while True:
                for i in range(start, len(self.messages)):
                    lines = self.messages[i].split("\n")
                    if any(l == text or (text.endswith("=") and l.startswith(text)) for l in lines):
                        return i
                left = deadline - time.monotonic()
                if left <= 0:
                    raise AssertionError("no %r notification; got %r" % (text, self.messages))
                self.cond.wait(left)

    def close(self):
        self.sock.close()


class Daemon:
    """A ptod process on a temporary socket, with its own config file.

    config: extra sections/keys merged over the test defaults; a section
        given as None is left out, a key given as None is left out.
    env: extra environment variables (e.g. PTO2_RING_HEAP).
    ready: wait for READY=1 before returning.
    socket: the socket path (default: a new temporary directory's ptod.sock).
    prefix: argv put before ptod's (e.g. systemd-socket-activate ...).
    """

    def __init__(self, config=None, env=None, ready=True, args=None, socket_path=None,
                 prefix=None):
        self.dir = tempfile.mkdtemp(prefix="ptod-test-")
        self.socket = socket_path or os.path.join(self.dir, "ptod.sock")
        self.config_path = os.path.join(self.dir, "ptod.conf")
        sections = {
            "daemon": {"socket": self.socket, "log_level": "debug"},
            "device": {"programs": PROGRAMS, "memory": "1G", "cores": "2"},
            "ring": dict(SMALL_RING),
        }
        for section, keys in (config or {}).items():
            if keys is None:
                sections.pop(section, None)
                continue
            target = sections.setdefault(section, {})
            for key, value in keys.items():
                if value is None:
                    target.pop(key, None)
                else:
                    target[key] = value
        self.sections = sections
        write_config(self.config_path, sections)
        self.notify = NotifyListener(os.path.join(self.dir, "notify.sock"))
        self.log_path = os.path.join(self.dir, "ptod.log")
        full_env = {k: v for k, v in os.environ.items()
                    if not k.startswith("PTO2_RING_") and not k.startswith("LISTEN_")
                    and not k.startswith("WATCHDOG_")}
        full_env["NOTIFY_SOCKET"] = self.notify.path
        full_env.update(env or {})
        self.env = full_env
        self.log = open(self.log_path, "w")
        self.cmd = (prefix or []) + [PTOD, "--config", self.config_path] + (args or [])
        self.proc = subprocess.Popen(self.cmd, env=full_env, stdout=self.log, stderr=subprocess.STDOUT)
        # What stop() expects: the exit status after SIGTERM (None: anything).
        self.expected_exit = 0
        self.stopped = False
        if ready:
            self.wait_ready()

    @property
    def pid(self):
        return self.proc.pid

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while True:
            if self.proc.poll() is not None:
                raise AssertionError("ptod exited with %s before it was ready:\n%s" % (self.proc.returncode, self.read_log()))
            if self.notify.find("READY=1") is not None:
                return
            if time.monotonic() > deadline:
                raise AssertionError("ptod not ready after %ss:\n%s" % (timeout, self.read_log()))
            time.sleep(0.01)

    def read_log(self):
        if not self.log.closed:
            self.log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def sanitizer_report(self):
        """The log if it holds a sanitizer report, else None."""
        text = self.read_log()
        if any(marker in text for marker in SANITIZER_MARKERS):
            return text
        return None

    def rewrite_config(self, sections):
        write_config(self.config_path, sections)
        self.sections = sections

    def signal(self, sig):
        self.proc.send_signal(sig)

    def reload(self, sections):
        """Rewrite the config file, SIGHUP, and wait for the READY=1 that
        follows the RELOADING=1."""
        start = len(self.notify.snapshot())
        self.rewrite_config(sections)
        self.signal(signal.SIGHUP)
        i = self.notify.wait_for("RELOADING=1", start=start)
        self.notify.wait_for("READY=1", start=i + 1)

    def wait(self, timeout=60):
        return self.proc.wait(timeout)

    def client(self, **kw):
        return Client(self.socket, **kw)

    def call(self, method, params=None):
        """One call on a connection of its own."""
        with self.client() as c:
            return c.call(method, params)

    def status(self):
        return self.call("status")

    def stop(self):
        """SIGTERM (if still running), wait, release everything.  Returns the
        exit status."""
        if self.stopped:
            return self.proc.returncode
        self.stopped = True
        try:
            if self.proc.poll() is None:
                self.proc.send_signal(signal.SIGTERM)
                try:
                    self.proc.wait(60)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
        finally:
            self.log.close()
            self.notify.close()
        return self.proc.returncode

    def cleanup(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        self.cleanup()


def connect_unix(path, timeout):
    """A stream socket connected to path, with `timeout`.  connect() blocks
    (for at most timeout) while the daemon's listen backlog is full, as
    under a flood of connections; a socket that has its timeout set first
    is non-blocking underneath and fails with EAGAIN instead."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDTIMEO, struct.pack("ll", int(timeout), 0))
    try:
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    sock.settimeout(timeout)
    return sock


class Client:
    """A plain msgpack-RPC client over the Unix socket."""

    def __init__(self, path, timeout=240):
        # The timeout only bounds a test that hangs: 256 MiB through a
        # sanitizer build on a loaded machine takes minutes.
        self.sock = connect_unix(path, timeout)
        self.unpacker = msgpack.Unpacker(raw=False, max_buffer_size=1 << 30)
        self.next_id = 1
        self.backlog = {}
        self.notifications = []

    def close(self):
        self.sock.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def send_raw(self, data):
        self.sock.sendall(data)

    def send(self, method, params=None, msgid=None):
        """Send a request; returns its msgid.  params: a dict, or None for []."""
        if msgid is None:
            msgid = self.next_id
            self.next_id += 1
        body = [] if params is None else [params]
        self.sock.sendall(msgpack.packb([0, msgid, method, body], use_bin_type=True))
        return msgid

    def read_message(self):
        """The next message off the socket, or None at EOF."""
        while True:
            for msg in self.unpacker:
                return msg
            try:
                data = self.sock.recv(1 << 20)
            except ConnectionResetError:
                return None
            if not data:
                return None
            self.unpacker.feed(data)

    def recv(self, msgid):
        """The response (error, result) to msgid (others are kept)."""
        while msgid not in self.backlog:
            msg = self.read_message()
            if msg is None:
                raise ConnectionError("daemon closed the connection; notifications: %r" % self.notifications)
            if msg[0] == 2:
                self.notifications.append(msg)
                continue
            assert msg[0] == 1 and len(msg) == 4, msg
            assert msg[1] not in self.backlog, "duplicate response %r" % msg[1]
            self.backlog[msg[1]] = (msg[2], msg[3])
        return self.backlog.pop(msgid)

    def result(self, msgid):
        """The result of msgid; RpcError on an error response."""
        err, result = self.recv(msgid)
        if err is not None:
            raise RpcError(err)
        return result

    def error(self, msgid):
        """The error map of msgid (asserting that it failed)."""
        err, result = self.recv(msgid)
        if err is None:
            raise AssertionError("request %d succeeded unexpectedly: %r" % (msgid, result))
        assert result is None, result
        return err

    def call(self, method, params=None):
        """Call and return the result; raise RpcError on an error response."""
        return self.result(self.send(method, params))

    def call_err(self, method, params=None):
        """Call and return the error map (asserting that it failed)."""
        return self.error(self.send(method, params))

    def read_until_eof(self):
        """Every message until the daemon closes the connection."""
        messages = []
        while True:
            msg = self.read_message()
            if msg is None:
                return messages
            messages.append(msg)


def f32(values):
    return struct.pack("<%df" % len(values), *values)


def unf32(data):
    return list(struct.unpack("<%df" % (len(data) // 4), data))


def noop(tasks=1, depth=0, task_us=0, **extra):
    """Dispatch params for the noop program."""
    params = {"program": "noop", "args": [{"scalar": tasks}, {"scalar": depth}, {"scalar": task_us}]}
    params.update(extra)
    return params


def vector_add(a, b, out=None, **extra):
    """Dispatch params for vector_add: out defaults to a host output."""
    params = {"program": "vector_add",
              "args": [{"data": f32(a)}, {"data": f32(b)}, out or {"out": 4 * len(a)}]}
    params.update(extra)
    return params


# A dispatch that keeps the device busy long enough for a test to line
# requests up behind it.  Tests never assert on how long it takes: they wait
# until status says it runs, and check what the daemon did with the rest.
HOLD_US = 2000000


# noop's longest task (programs/noop.c).
NOOP_MAX_TASK_US = 10000000


def hold_params(daemon, task_us):
    """The params of a noop that holds the device for task_us at least: a
    hold longer than one noop task is several rounds of tasks, one for each
    thread that runs tasks in each round (every core, and the orchestrating
    thread, which runs tasks while it waits)."""
    rounds = -(-int(task_us) // NOOP_MAX_TASK_US)
    workers = int(daemon.sections["device"].get("cores", "1")) + 1
    return noop(tasks=rounds * workers if rounds > 1 else 1, task_us=int(task_us) // rounds)


def hold_device(daemon, client, task_us=HOLD_US):
    """Send a long noop on client and wait until the device runs it.
    Returns its msgid.  The hold lasts at least task_us (hold_params)."""
    msgid = client.send("dispatch", hold_params(daemon, task_us))
    wait_until(lambda: daemon.status()["queue"]["running"] == 1, what="the hold to run")
    return msgid


class Hold:
    """A long noop on its own connection that holds the device while a test
    lines requests up behind it (holds())."""

    def __init__(self, daemon, task_us):
        self.daemon = daemon
        self.client = daemon.client()
        self.ran = daemon.status()["dispatches"]["ok"]
        self.msgid = hold_device(daemon, self.client, task_us=task_us)

    def lasted(self):
        """Whether the hold still runs and no dispatch has finished since it
        began: everything the test did so far happened behind it."""
        s = self.daemon.status()
        return s["queue"]["running"] == 1 and s["dispatches"]["ok"] == self.ran

    def end(self):
        """Wait for the hold's answer and close its connection."""
        result = self.client.result(self.msgid)
        self.client.close()
        return result


def holds(daemon, task_us=HOLD_US):
    """Holds, each four times longer than the last: a test does its work
    behind one, checks hold.lasted() once everything it needed queued is
    queued, reads its answers, calls hold.end(), and stops when it lasted.
    The hold is a time (the device has no other gate), so on a loaded
    machine a test is run again rather than measured after the hold."""
    while True:
        yield Hold(daemon, task_us)
        task_us *= 4


def parse_prometheus(text):
    """Parse Prometheus text exposition (version 0.0.4) strictly enough to
    catch a malformed line.  Returns {(name, frozenset(labels.items())): value}
    and {family: type}."""
    samples, types, helps = {}, {}, {}
    name_re = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
    sample_re = re.compile(r"^(%s)(\{(.*)\})? (\S+)$" % name_re)
    label_re = re.compile(r'\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)')
    assert text.endswith("\n"), "exposition must end with a newline"
    for line in text.split("\n")[:-1]:
        if line.startswith("# HELP "):
            name, _, help_text = line[7:].partition(" ")
            assert re.fullmatch(name_re, name), line
            assert name not in helps, "second HELP for %s" % name
            helps[name] = help_text
            continue
        if line.startswith("# TYPE "):
            name, _, kind = line[7:].partition(" ")
            assert kind in ("counter", "gauge", "histogram", "summary", "untyped"), line
            assert name not in types, "second TYPE for %s" % name
            types[name] = kind
            continue
        assert not line.startswith("#") and line.strip() == line and line, "bad line %r" % line
        m = sample_re.match(line)
        assert m, "bad sample line %r" % line
        name, labels_text, value = m.group(1), m.group(3), m.group(4)
        labels = {}
        pos = 0
        while labels_text and pos < len(labels_text):
            lm = label_re.match(labels_text, pos)
            assert lm, "bad labels in %r" % line
            labels[lm.group(1)] = lm.group(2)
            pos = lm.end()
        v = float(value)  # also "+Inf", "NaN"
        family = name
        for suffix in ("_bucket", "_sum", "_count"):
            if name.endswith(suffix) and types.get(name[: -len(suffix)]) == "histogram":
                family = name[: -len(suffix)]
        assert family in types, "sample %s before its TYPE line" % name
        key = (name, frozenset(labels.items()))
        assert key not in samples, "duplicate sample %r" % line
        samples[key] = v
    return samples, types


def metric(samples, metric_name, **labels):
    """The value of one sample: metric(samples, "ptod_errors_total", name="BUSY")."""
    return samples[(metric_name, frozenset(labels.items()))]


class DaemonTest(unittest.TestCase):
    """Base class: self.daemon(...) starts a daemon that is stopped at test
    end; the test fails if it did not exit as expected (0 after SIGTERM,
    unless the test set d.expected_exit) or if its log holds a sanitizer
    report."""

    def daemon(self, **kw):
        d = Daemon(**kw)
        self.addCleanup(self._finish_daemon, d)
        return d

    def _finish_daemon(self, d):
        try:
            code = d.stop()
            report = d.sanitizer_report()
            if report is not None:
                self.fail("sanitizer report in the daemon's log:\n%s" % report)
            if d.expected_exit is not None and code != d.expected_exit:
                self.fail("ptod exited with %r, expected %r:\n%s" % (code, d.expected_exit, d.read_log()))
        finally:
            d.cleanup()

    def assertError(self, err, name, message=None, contains=None):
        """err is the error map `name`; its message equals `message` or
        contains every string of `contains`."""
        self.assertEqual(err["name"], name, err)
        self.assertEqual(err["code"], CODES[name], err)
        self.assertIsInstance(err["message"], str)
        self.assertTrue(err["message"], err)
        if message is not None:
            self.assertEqual(err["message"], message)
        for part in ([contains] if isinstance(contains, str) else contains or []):
            self.assertIn(part, err["message"])


def main():
    unittest.main(verbosity=2)
