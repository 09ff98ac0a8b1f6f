# SPDX-License-Identifier: Apache-2.0
"""Local clients of other uids: a socket planted where a client looks by
default (issue 18, item 7).

A user without XDG_RUNTIME_DIR (a service, cron, a container, ssh without
pam_systemd) has /tmp/ptod-<uid>/ as its default socket directory, and
anyone can create that name in /tmp first.  ptoctl, libptoclient and
ptoclient.Client() must skip a socket there that someone else could have
put there, with a warning that says why, and never send it a request.  The
daemon must refuse a socket directory others can write even when sticky,
where another user could take the name while ptod restarts.
"""

import grp
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import unittest

from adversary import *  # noqa: F401,F403
import harness

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
DEVICE = 231  # a device number no real daemon on this machine serves

# The other uids run ptoctl, libptoclient and the Python client from a
# directory they can read: a checkout under a private home (/root is 0700
# on a fresh Debian) is not theirs to enter.
SHARED = tempfile.mkdtemp(prefix="ptod-squat-")
os.chmod(SHARED, 0o755)
PTOCTL = shutil.copy(os.path.join(harness.BINARY_DIR, "client", "ptoctl"), SHARED)
LIBPTOCLIENT = shutil.copy(os.path.join(harness.BINARY_DIR, "client", "libptoclient.so"), SHARED)
PYTHON_PATH = os.path.join(SHARED, "python")
shutil.copytree(os.path.join(ROOT, "client", "python", "ptoclient"),
                os.path.join(PYTHON_PATH, "ptoclient"),
                ignore=shutil.ignore_patterns("__pycache__"))
for top, dirs, files in os.walk(SHARED):
    for name in dirs + files:
        os.chmod(os.path.join(top, name), 0o755)


def tearDownModule():
    shutil.rmtree(SHARED, True)


def victim_env():
    """The environment of a user without XDG_RUNTIME_DIR or PTOD_SOCKET."""
    return {k: v for k, v in os.environ.items()
            if k not in ("XDG_RUNTIME_DIR", "PTOD_SOCKET") and not k.startswith("PTO2_")}


def sanitizer_preload():
    """What python needs to load a sanitized libptoclient with ctypes: the
    sanitizer's runtime first (LD_PRELOAD), and no leak report for python."""
    kind = harness.sanitizer()
    libs = (["libasan.so", "libubsan.so"] if "address" in kind else
            ["libtsan.so"] if "thread" in kind else [])
    if not libs:
        return {}
    paths = [subprocess.run(["gcc", "-print-file-name=" + lib], capture_output=True, text=True,
                            check=True).stdout.strip() for lib in libs]
    return {"LD_PRELOAD": " ".join(paths), "ASAN_OPTIONS": "detect_leaks=0"}


def run_as(uid, code):
    """Run python `code` as uid (a throwaway uid: no such user needed) and
    return its stdout and stderr."""
    proc = subprocess.run([sys.executable, "-c", code], user=uid, group=uid, extra_groups=[],
                          env=dict(victim_env(), **sanitizer_preload()), capture_output=True,
                          text=True, timeout=120, cwd="/")
    return proc.stdout, proc.stderr


@unittest.skipUnless(os.geteuid() == 0, "needs root to play other users")
class PlantedSocket(DaemonTest):
    def setUp(self):
        base = 61000 + os.getpid() % 2000 * 2
        self.victim, self.attacker = base, base + 1
        self.dir = "/tmp/ptod-%d" % self.victim
        self.path = os.path.join(self.dir, "ptod%d.sock" % DEVICE)
        shutil.rmtree(self.dir, ignore_errors=True)
        # The attacker made the victim's directory first, open to all, and
        # listens there: connect() then succeeds through the backlog.
        os.mkdir(self.dir, 0o755)
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.impostor = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(self.impostor.close)
        self.impostor.bind(self.path)
        self.impostor.listen(16)
        self.impostor.setblocking(False)
        os.chmod(self.path, 0o777)
        os.chown(self.path, self.attacker, self.attacker)
        os.chown(self.dir, self.attacker, self.attacker)

    def assert_impostor_untouched(self):
        with self.assertRaises(BlockingIOError, msg="a client connected to the planted socket"):
            self.impostor.accept()[0].close()

    def assert_warned(self, text):
        self.assertIn("Skipped the socket '%s', which this user cannot trust: its directory "
                      "'%s' belongs to uid %d." % (self.path, self.dir, self.attacker), text)

    def test_ptoctl_skips_it(self):
        proc = subprocess.run([PTOCTL, "-d", str(DEVICE), "--timeout", "2000", "ping"],
                              user=self.victim, group=self.victim, extra_groups=[],
                              env=victim_env(), capture_output=True, text=True, timeout=120)
        self.assert_impostor_untouched()
        self.assertNotEqual(proc.returncode, 0)
        self.assert_warned(proc.stderr)
        report(self, "planted-socket", honest_errors=0)

    def test_libptoclient_skips_it(self):
        out, err = run_as(self.victim, """
import ctypes
lib = ctypes.CDLL(%r)
client, error = ctypes.c_void_p(), ctypes.create_string_buffer(4096)
rc = lib.pto_client_connect_device(%d, 2000, ctypes.byref(client), error)
print(rc)
print(error.raw[88:600].split(b"\\0")[0].decode())
""" % (LIBPTOCLIENT, DEVICE))
        self.assert_impostor_untouched()
        rc, message = out.split("\n", 1)
        self.assertNotEqual(int(rc), 0, err)
        self.assert_warned(message)

    def test_python_client_skips_it(self):
        out, err = run_as(self.victim, """
import sys, warnings
sys.path.insert(0, %r)
warnings.simplefilter("always")
import ptoclient
try:
    ptoclient.Client(device=%d, timeout=2)
    print("connected")
except ptoclient.ConnectFailed as e:
    print("failed:", e)
""" % (PYTHON_PATH, DEVICE))
        self.assert_impostor_untouched()
        self.assertTrue(out.startswith("failed:"), out + err)
        self.assertIn("UntrustedSocketWarning", err)
        self.assert_warned(err)


@unittest.skipUnless(os.geteuid() == 0, "needs root to play other users")
@unittest.skipIf(os.path.exists("/run/ptod"), "/run/ptod exists: not ours to change")
class NotInGroup(DaemonTest):
    def test_system_socket_says_which_group(self):
        """No socket of the user's own, and the system one refuses them:
        the error names the group to join, not a /tmp path that does not
        exist."""
        user = 63000 + os.getpid() % 2000
        try:
            gid = grp.getgrnam("ptod").gr_gid
        except KeyError:
            gid = 64999
        os.mkdir("/run/ptod", 0o750)
        self.addCleanup(shutil.rmtree, "/run/ptod", True)
        os.chown("/run/ptod", 0, gid)
        _, err = run_as(user, "import os; os.stat('/run/ptod')")
        if err:
            # Where /run itself is closed to other users (some CI
            # containers), every user is refused before the group of
            # /run/ptod matters, and the plain error is the right one.
            self.skipTest("user %d cannot reach /run/ptod here: %s" % (user, err.strip()))
        daemon = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.addCleanup(daemon.close)
        daemon.bind("/run/ptod/ptod%d.sock" % DEVICE)
        daemon.listen(1)
        proc = subprocess.run([PTOCTL, "-d", str(DEVICE), "--timeout", "2000", "ping"],
                              user=user, group=user, extra_groups=[], env=victim_env(),
                              capture_output=True, text=True, timeout=120)
        self.assertNotEqual(proc.returncode, 0)
        group = grp.getgrgid(gid).gr_name if gid != 64999 else str(gid)
        self.assertIn("Cannot connect to ptod at '/run/ptod/ptod%d.sock': permission denied; "
                      "you are not in group '%s'." % (DEVICE, group), proc.stderr)
        out, err = run_as(user, """
import sys
sys.path.insert(0, %r)
import ptoclient
try:
    ptoclient.Client(device=%d, timeout=2)
except ptoclient.ConnectFailed as e:
    print(e)
""" % (PYTHON_PATH, DEVICE))
        self.assertIn("Cannot connect to ptod at /run/ptod/ptod%d.sock: permission denied; you "
                      "are not in group '%s'" % (DEVICE, group), out + err)


class StickySocketDirectory(DaemonTest):
    def test_daemon_refuses_a_sticky_world_writable_parent(self):
        base = tempfile.mkdtemp(prefix="ptod-test-")
        self.addCleanup(shutil.rmtree, base, True)
        parent = os.path.join(base, "sticky")
        os.mkdir(parent)
        os.chmod(parent, 0o1777)  # like /tmp: anyone may create a name here
        d = self.daemon(socket_path=os.path.join(parent, "ptod.sock"), ready=False)
        d.expected_exit = 1
        self.assertEqual(d.wait(), 1)
        self.assertIn("Socket directory '%s' (mode 1777) is writable by others" % parent,
                      d.read_log())
        self.assertFalse(os.path.exists(os.path.join(parent, "ptod.sock")))


if __name__ == "__main__":
    main()
