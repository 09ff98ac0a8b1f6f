# SPDX-License-Identifier: Apache-2.0
"""Who may use the daemon and what a client can make it touch.

- The socket is never world-writable: under every socket_mode (whatever
  the daemon's umask), a world-writable mode refused at start-up, and a
  socket systemd passed keeps the mode systemd gave it.
- The peer-credential allow-list: a peer of another uid that the list does
  not admit gets PERMISSION_DENIED and changes nothing (buffers, their
  bytes, the arena, the memory account, the counters); one of its
  supplementary groups in allowed_gids admits it.
- Programs load only from [device] programs: names with '/', '.', '..',
  absolute paths, NUL bytes, very long names are refused, and no file
  outside the directory is opened (checked on /proc/PID/maps and, where
  strace is installed, on the daemon's file system calls).
- Buffer names are table keys, never paths.
- Diagnostic files land only under [daemon] diagnostics_dir, under names
  the daemon makes; a symbolic or hard link planted there is never written
  through.
"""

import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from harness import metric, noop, parse_prometheus, unf32, vector_add, wait_until  # noqa: E402

NOBODY = 65534
ROOT = os.geteuid() == 0


class SocketMode(harness.DaemonTest):
    UMASK_0 = ["sh", "-c", 'umask 000; exec "$@"', "sh"]

    def test_every_allowed_mode_is_what_was_asked_and_never_o_w(self):
        # With umask 000 the daemon's own umask protects nothing: the mode
        # on the socket is what the daemon sets.
        for mode in (None, "0660", "0600", "0640", "0620", "0700", "0770", "0664", "0604", "0000"):
            with self.subTest(mode=mode):
                config = {"daemon": {"socket_mode": mode}} if mode else None
                d = self.daemon(config=config, prefix=self.UMASK_0)
                st = os.stat(d.socket)
                self.assertTrue(stat.S_ISSOCK(st.st_mode))
                self.assertEqual(stat.S_IMODE(st.st_mode), int(mode or "0660", 8))
                self.assertEqual(st.st_mode & 0o002, 0)
                d.stop()
                self.assertFalse(os.path.exists(d.socket))

    def test_world_writable_modes_are_refused(self):
        for mode in ("0666", "0662", "0602", "0777", "0002", "0776"):
            with self.subTest(mode=mode):
                d = self.daemon(config={"daemon": {"socket_mode": mode}}, ready=False,
                                prefix=self.UMASK_0)
                d.expected_exit = 78
                self.assertEqual(d.wait(), 78)
                self.assertIn("world-writable", d.read_log())
                self.assertFalse(os.path.exists(d.socket))

    @unittest.skipUnless(shutil.which("systemd-socket-activate"),
                         "systemd-socket-activate is not installed (Debian package systemd)")
    def test_socket_from_systemd_keeps_its_mode(self):
        holder = tempfile.mkdtemp(prefix="ptod-act-")
        self.addCleanup(shutil.rmtree, holder, True)
        path = os.path.join(holder, "activated.sock")
        env = [n for n in os.environ if n.startswith(("ASAN_", "UBSAN_", "LSAN_", "TSAN_"))]
        prefix = [shutil.which("systemd-socket-activate"), "-l", path]
        for name in ["NOTIFY_SOCKET"] + env:
            prefix += ["-E", name]
        d = self.daemon(ready=False, prefix=prefix,
                        config={"daemon": {"socket_mode": "0660", "socket_group": str(os.getgid())}})
        wait_until(lambda: ("Listening on %s as 3." % path) in d.read_log() or d.proc.poll() is not None,
                   what="systemd-socket-activate to listen")
        os.chmod(path, 0o600)  # what the unit's SocketMode= would have set
        with harness.Client(path) as c:
            self.assertEqual(c.call("ping")["state"], "ready")
        d.wait_ready()
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)
        self.assertFalse(os.path.exists(d.socket))
        d.signal(signal.SIGTERM)
        self.assertEqual(d.wait(), 0)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)


# A peer of another uid: drops to uid/gid NOBODY (with the supplementary
# groups in argv[2]), connects, sends every request of argv[3] (JSON) at
# once, prints what comes back as JSON.
AS_ANOTHER_USER = r"""
import json, os, socket, sys, msgpack
groups = [int(g) for g in sys.argv[2].split(",") if g]
os.setgroups(groups); os.setgid(%d); os.setuid(%d)
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])
reqs = json.loads(sys.argv[3])
data = b"".join(msgpack.packb([0, i + 1, m, [p] if p is not None else []], use_bin_type=True)
                for i, (m, p) in enumerate(reqs))
try:
    s.sendall(data)
except OSError:
    pass
u = msgpack.Unpacker(raw=False)
out = []
while True:
    try:
        b = s.recv(65536)
    except ConnectionResetError:
        break
    if not b:
        break
    u.feed(b)
    for m in u:
        out.append(m)
    if len([m for m in out if m[0] == 1]) == len(reqs):
        break
print(json.dumps(out))
""" % (NOBODY, NOBODY)


@unittest.skipUnless(ROOT, "needs root to connect as another user")
class AllowList(harness.DaemonTest):
    def as_nobody(self, d, requests, groups=()):
        os.chmod(d.dir, 0o755)  # let the other user reach the socket
        out = subprocess.run([sys.executable, "-c", AS_ANOTHER_USER, d.socket,
                              ",".join(str(g) for g in groups), json.dumps(requests)],
                             capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        return json.loads(out.stdout)

    def state(self, c):
        s = c.call("status")
        samples, _ = parse_prometheus(c.call("metrics"))
        return {"buffers": c.call("buffer.list"),
                "kv": c.call("buffer.read", {"name": "kv"}),
                "arena": s["arena"], "memory": s["memory"], "dispatches": s["dispatches"],
                "requests": metric(samples, "ptod_requests_total")}

    def test_disallowed_uid_is_refused_and_changes_nothing(self):
        d = self.daemon(config={"daemon": {"allowed_uids": "0", "socket_group": str(NOBODY)}})
        attempts = [
            ["buffer.alloc", {"name": "sneaky", "bytes": 4096}],
            ["buffer.write", {"name": "kv", "data": "x" * 16}],
            ["dispatch", {"program": "noop", "args": [{"scalar": 1}, {"scalar": 0}, {"scalar": 0}],
                          "config": {"ring_task_window": 64}}],
            ["prewarm", {"config": {"ring_dep_pool": 2048}}],
            ["buffer.free", {"name": "kv"}],
            ["ping", None],
        ]
        with d.client() as c:
            c.call("buffer.alloc", {"name": "kv", "bytes": 16, "init": b"0123456789abcdef"})
            before = self.state(c)
            msgs = self.as_nobody(d, attempts)
            self.assertEqual(len(msgs), 1, msgs)
            self.assertEqual(msgs[0][:2], [2, "error"])
            self.assertError(msgs[0][2][0], "PERMISSION_DENIED",
                             contains=["uid %d" % NOBODY, "allowed_uids"])
            after = self.state(c)
            # Our own two calls (status and metrics) are all that was counted.
            self.assertEqual(after["requests"], before["requests"] + 2 + 2)
            before.pop("requests")
            after.pop("requests")
            self.assertEqual(after, before)
            samples, _ = parse_prometheus(c.call("metrics"))
            self.assertEqual(metric(samples, "ptod_errors_total", name="PERMISSION_DENIED"), 1)
        self.assertIn("Refused client", d.read_log())
        self.assertNotIn("sneaky", d.read_log())

    def test_supplementary_group_admits(self):
        group = 4242
        d = self.daemon(config={"daemon": {"allowed_uids": "0", "allowed_gids": str(group),
                                           "socket_group": str(NOBODY)}})
        msgs = self.as_nobody(d, [["buffer.alloc", {"name": "theirs", "bytes": 8}], ["ping", None]],
                              groups=[group])
        self.assertEqual(sorted(m[:3] for m in msgs), [[1, 1, None], [1, 2, None]], msgs)
        self.assertEqual(d.call("buffer.list"), [{"name": "theirs", "bytes": 8}])
        # Without that group the same user is refused.
        msgs = self.as_nobody(d, [["buffer.free", {"name": "theirs"}]], groups=[])
        self.assertEqual(len(msgs), 1, msgs)
        self.assertError(msgs[0][2][0], "PERMISSION_DENIED", contains=["uid %d" % NOBODY])
        self.assertEqual(d.call("buffer.list"), [{"name": "theirs", "bytes": 8}])


class Programs(harness.DaemonTest):
    TRICKS = [
        "../outside/matmul", "..", ".", "./vector_add", "/", "%(outside)s/matmul",
        "%(outside)s/matmul.so", "outside/matmul", "vector_add/", "vector_add.so", "vector_add\0",
        "\0", "vector_add\0../outside/matmul", "..%2foutside%2fmatmul", "~/matmul", "~",
        "vector_add\n", "vector_add ", " vector_add", "\\..\\outside\\matmul", "vеctor_add",
        "a" * 65, "a" * 100000, "", ".hidden", "-", "matmul", "MATMUL", "vector_add.", "*", "?",
        "vector_add;matmul", "$(matmul)", "%s", "%n%n%n%n",
    ]

    def setUp(self):
        root = tempfile.mkdtemp(prefix="ptod-progs-")
        self.addCleanup(shutil.rmtree, root, True)
        self.programs = os.path.join(root, "programs")
        self.outside = os.path.join(root, "outside")
        os.mkdir(self.programs)
        os.mkdir(self.outside)
        shutil.copy(os.path.join(harness.PROGRAMS, "vector_add.so"), self.programs)
        # A valid program, one directory away: no name may reach it.
        shutil.copy(os.path.join(harness.PROGRAMS, "matmul.so"), self.outside)

    def start_strace(self, d):
        """strace on the daemon's file system calls, once it is seen to
        trace them (`programs` lists the directory); None where strace is
        missing or may not attach (a container without ptrace)."""
        if not shutil.which("strace"):
            return None
        path = os.path.join(d.dir, "strace.log")
        trace = subprocess.Popen(["strace", "-f", "-qq", "-e", "trace=%file", "-o", path,
                                  "-p", str(d.pid)], stderr=subprocess.DEVNULL)
        trace.path = path
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and trace.poll() is None:
            d.call("programs")
            try:
                with open(path) as f:
                    if self.programs in f.read():
                        return trace
            except FileNotFoundError:
                pass
            time.sleep(0.05)
        if trace.poll() is None:
            trace.kill()
        trace.wait()
        return None

    def test_program_names_cannot_leave_the_directory(self):
        d = self.daemon(config={"device": {"programs": self.programs}})
        trace = self.start_strace(d)
        with d.client() as c:
            for trick in self.TRICKS:
                name = trick % {"outside": self.outside} if "%(" in trick else trick
                with self.subTest(name=name[:80]):
                    err = c.call_err("dispatch", {"program": name, "args": []})
                    self.assertIn(err["name"], ("INVALID_REQUEST", "UNKNOWN_PROGRAM"), err)
                    if self.outside not in name:  # the daemon never resolves a name
                        self.assertNotIn(self.outside, err["message"])
            # The one program of the directory still runs.
            r = c.call("dispatch", vector_add([1], [2]))
            self.assertEqual(unf32(r["outputs"][2]), [3])
            self.assertEqual([p["name"] for p in c.call("programs")], ["vector_add"])
        if trace:
            trace.send_signal(signal.SIGINT)
            trace.wait(30)
            with open(trace.path) as f:
                calls = f.read()
            self.assertNotIn(self.outside, calls)
        with open("/proc/%d/maps" % d.pid) as f:
            maps = f.read()
        self.assertNotIn(self.outside, maps)
        self.assertNotIn(self.outside, d.read_log())

    def test_buffer_names_are_not_paths(self):
        victim = os.path.join(self.outside, "victim")
        with open(victim, "wb") as f:
            f.write(b"untouched")
        d = self.daemon()
        with d.client() as c:
            for name in ("../outside/victim", victim, "a/b", "/", "..", ".", ".hidden", "x\0y",
                         "", "a" * 65, "victim\n", "~"):
                with self.subTest(name=name):
                    err = c.call_err("buffer.alloc", {"name": name, "bytes": 8})
                    self.assertError(err, "INVALID_REQUEST", contains=["name"])
            # Dots inside a name are fine: it is a key in a table, nothing more.
            c.call("buffer.alloc", {"name": "outside..victim", "bytes": 9, "init": b"overwrite"})
            self.assertEqual(c.call("buffer.read", {"name": "outside..victim"}), b"overwrite")
            self.assertEqual(c.call("buffer.list"), [{"name": "outside..victim", "bytes": 9}])
        with open(victim, "rb") as f:
            self.assertEqual(f.read(), b"untouched")
        # The daemon holds no file of that name open, anywhere.
        for fd in os.listdir("/proc/%d/fd" % d.pid):
            try:
                target = os.readlink("/proc/%d/fd/%s" % (d.pid, fd))
            except OSError:
                continue
            self.assertNotIn("victim", target)


class Diagnostics(harness.DaemonTest):
    NAME = re.compile(r"^scope_stats-[0-9]+-[0-9]+\.jsonl$")

    def setUp(self):
        root = tempfile.mkdtemp(prefix="ptod-diag-")
        self.addCleanup(shutil.rmtree, root, True)
        self.diag = os.path.join(root, "diag")
        os.mkdir(self.diag, 0o750)
        self.outside = os.path.join(root, "outside")
        os.mkdir(self.outside)

    def test_files_only_under_diagnostics_dir_with_daemon_made_names(self):
        d = self.daemon(config={"daemon": {"diagnostics_dir": self.diag}})
        stats = {"enable_scope_stats": True}
        with d.client() as c:
            c.call("dispatch", noop(tasks=2, depth=1, config=stats))
            c.call("dispatch", vector_add([1, 2], [3, 4], config=dict(stats, ring_task_window=64)))
            # Keys a client might hope name a file are refused, not ignored.
            for key in ("path", "file", "diagnostics_dir", "scope_stats_path", "output"):
                err = c.call_err("dispatch", noop(config=dict(stats, **{key: "/tmp/x"})))
                self.assertError(err, "INVALID_REQUEST", contains=[key])
        files = sorted(os.listdir(self.diag))
        self.assertEqual(len(files), 2, files)
        for name in files:
            self.assertRegex(name, self.NAME)
            self.assertTrue(name.startswith("scope_stats-%d-" % d.pid), name)
            with open(os.path.join(self.diag, name)) as f:
                lines = [json.loads(line) for line in f]
            # The sizing, then one line per scope (noop at depth 1: two).
            self.assertEqual(len(lines), 3 if lines[0]["program"] == "noop" else 2)
            self.assertIn(lines[0]["program"], ("noop", "vector_add"))
            self.assertEqual(stat.S_IMODE(os.stat(os.path.join(self.diag, name)).st_mode) & 0o007, 0)
        self.assertEqual(os.listdir(self.outside), [])

    def test_links_planted_in_diagnostics_dir_are_not_written_through(self):
        d = self.daemon(config={"daemon": {"diagnostics_dir": self.diag}})
        victims = []
        # Whatever comes next, for the next eight dispatches: a symbolic
        # link, a hard link, and a plain file that is someone else's.
        for seq in range(1, 9):
            name = os.path.join(self.diag, "scope_stats-%d-%d.jsonl" % (d.pid, seq))
            victim = os.path.join(self.outside, "victim-%d" % seq)
            with open(victim, "w") as f:
                f.write("precious %d\n" % seq)
            victims.append(victim)
            if seq % 3 == 0:
                os.symlink(victim, name)
            elif seq % 3 == 1:
                os.link(victim, name)
            else:
                with open(name, "w") as f:
                    f.write("precious %d\n" % seq)
        with d.client() as c:
            for _ in range(8):
                r = c.call("dispatch", noop(tasks=1, config={"enable_scope_stats": True}))
                self.assertEqual(r["tasks"], 1)  # the dispatch itself is not failed for it
            self.assertEqual(c.call("ping")["state"], "ready")
        for seq, victim in enumerate(victims, 1):
            with open(victim) as f:
                self.assertEqual(f.read(), "precious %d\n" % seq)
            with open(os.path.join(self.diag, "scope_stats-%d-%d.jsonl" % (d.pid, seq))) as f:
                self.assertEqual(f.read(), "precious %d\n" % seq)
        self.assertEqual(d.read_log().count("Failed to write the DFX artefacts"), 8)
        self.assertEqual(len(os.listdir(self.outside)), 8)


if __name__ == "__main__":
    harness.main()
