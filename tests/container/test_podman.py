# SPDX-License-Identifier: Apache-2.0
"""ptod in its OCI image, and serving containers that get their device
through CDI, in podman (runc, cgroupfs, no network); and ptod@0 under
systemd with the CDI drop-in, serving host and CDI clients alike.

scripts/package builds the .debs, scripts/image the image (its base tree
cached under /var/tmp/ptod-image: the first run debootstraps it, ~3 min and
the Debian mirror; later runs take seconds).  Two daemon containers serve
devices 0 and 1 into host directories RUN/0 and RUN/1; `ptoctl cdi
generate` writes their spec into /etc/cdi under a kind of this run's own;
client containers from the same image, given devices with `--device
KIND=N`, use the image's ptoctl through the injected PTOD_SOCKET_N.

Needs root, podman, runc, debootstrap (scripts/deps --test), and / to be
a mount point (a plain chroot's is not, and podman cannot store images
there); skipped, with the reason, without them.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BINARY_DIR = os.environ.get("PTOD_BINARY_DIR") or sys.exit("PTOD_BINARY_DIR is not set")
PTOCTL = os.path.join(BINARY_DIR, "client", "ptoctl")
WORK = os.path.join(BINARY_DIR, "tests", "container", "work")
RUN_ID = "%d" % os.getpid()
KIND = "ptodtest%s.internal/device" % RUN_ID
IMAGE = "localhost/ptod-test:%s" % RUN_ID
SPEC = "/etc/cdi/ptod-test-%s.json" % RUN_ID
PODMAN = ["podman", "--runtime", "runc", "--cgroup-manager", "cgroupfs"]
# Below this machine's hard limits (podman's defaults may exceed them).
LIMITS = ["--ulimit", "nofile=4096:4096", "--ulimit", "nproc=4096:4096", "--network", "none"]
GROUP = 2000  # the socket's group, which a non-root client joins (as in deploy/kubernetes)
CONFIG = """[daemon]
socket = /run/ptod/{n}/ptod{n}.sock
socket_group = 2000
[device]
id = {n}
memory = 256M
cores = 2
[ring]
task_window = 256
heap = 1M
dep_pool = 1024
"""


def root_is_a_mount():
    """Whether / is a mount point of this process's view.  In a plain
    chroot it is not, and podman's storage fails to remount it."""
    with open("/proc/self/mountinfo") as f:
        return any(line.split()[4] == "/" for line in f)


def missing():
    if os.geteuid() != 0:
        return "needs root (chroot, /etc/cdi, rootful podman)"
    for tool in ("podman", "runc", "debootstrap", "dpkg-deb"):
        if not shutil.which(tool):
            return "needs %s (scripts/deps --test)" % tool
    if not root_is_a_mount():
        return ("podman cannot run in a chroot whose / is not a mount point; bind-mount "
                "the tree onto itself before chroot")
    return None


def run(cmd, check=True, timeout=900):
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError("%s exited %d:\n%s\n%s" % (" ".join(cmd), r.returncode, r.stdout,
                                                        r.stderr))
    return r


def podman(*args, check=True):
    return run(PODMAN + list(args), check=check, timeout=300)


def client(devices, *command, check=True, kind=KIND, image=IMAGE, user=()):
    """A client container from the image given these CDI devices (user:
    podman's --user/--group-add flags)."""
    flags = list(user)
    for n in devices:
        flags += ["--device", "%s=%d" % (kind, n)]
    return podman("run", "--rm", *LIMITS, *flags, image, *command, check=check)


def vector_add(devices, n, a, b, **kw):
    """vector_add(a, b) on device n from a client container; the sums."""
    r = client(devices, "ptoctl", "--json", "-d", str(n), "dispatch", "vector_add",
               "f32:" + a, "f32:" + b, "out:12", **kw)
    return json.loads(r.stdout)["outputs"][2]["f32"]


_debs = []


def build_image(tag, *args):
    """scripts/image from this tree's packages (built once per run)."""
    out = os.path.join(WORK, "debs")
    if not _debs:
        os.makedirs(WORK, exist_ok=True)
        run([os.path.join(ROOT, "scripts", "package"), "--build-dir",
             os.path.join(WORK, "build"), "--out", out])
        _debs.append(out)
    run([os.path.join(ROOT, "scripts", "image"), "--debs", out, "--tag", tag] + list(args))


def inode(path):
    """Which file is at path: its inode number and change time, since a
    file system may give a new socket the number of one just removed (ext4
    does, under a container's bind-mounted run directory)."""
    try:
        st = os.stat(path)
        return (st.st_ino, st.st_ctime_ns)
    except FileNotFoundError:
        return None


def wait_for_socket(path, name, old_inode=None):
    """Until ptod in container `name` listens (it binds after prewarm) on a
    socket other than old_inode's."""
    while inode(path) in (None, old_inode):
        state = podman("inspect", "--format", "{{.State.Status}}", name).stdout.strip()
        if state not in ("running", "created", "configured"):
            raise AssertionError("%s is %s:\n%s" % (name, state,
                                                    podman("logs", name, check=False).stderr))
        time.sleep(0.1)


@unittest.skipIf(missing(), missing())
class Podman(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        build_image(IMAGE)
        cls.dir = tempfile.mkdtemp(prefix="ptod-podman-")
        cls.run_dir = os.path.join(cls.dir, "run")
        etc = os.path.join(cls.dir, "etc")
        os.makedirs(cls.run_dir)
        os.makedirs(etc)
        cls.daemons = []
        for n in (0, 1):
            # as deploy/kubernetes's init container makes them: root's, for the group
            sock_dir = os.path.join(cls.run_dir, str(n))
            os.mkdir(sock_dir, 0o750)
            os.chown(sock_dir, 0, GROUP)
            with open(os.path.join(etc, "ptod%d.conf" % n), "w") as f:
                f.write(CONFIG.format(n=n))
            cls.start_daemon(n, etc)
        os.makedirs(os.path.dirname(SPEC), exist_ok=True)
        run([PTOCTL, "cdi", "generate", "--kind", KIND, "--host-dir", cls.run_dir, "-o", SPEC])

    @classmethod
    def start_daemon(cls, n, etc):
        name = "ptod-test-%s-%d" % (RUN_ID, n)
        cls.daemons.append(name)
        podman("run", "-d", "--name", name, *LIMITS, "-v", "%s:/etc/ptod:ro" % etc,
               "-v", "%s:/run/ptod" % cls.run_dir, IMAGE,
               "ptod", "--config", "/etc/ptod/ptod%d.conf" % n)
        wait_for_socket(os.path.join(cls.run_dir, str(n), "ptod%d.sock" % n), name)

    @classmethod
    def tearDownClass(cls):
        for name in getattr(cls, "daemons", []) + ["ptod-test-%s-client" % RUN_ID]:
            podman("rm", "-f", "-t", "5", name, check=False)
        if os.path.exists(SPEC):
            os.unlink(SPEC)
        podman("rmi", "-f", IMAGE, check=False)
        shutil.rmtree(getattr(cls, "dir", "/nonexistent"), True)

    def status_device(self, devices, n):
        r = client(devices, "ptoctl", "--json", "-d", str(n), "status")
        return json.loads(r.stdout)["device"]

    def test_one_device_dispatches_through_the_injected_socket(self):
        self.assertEqual(vector_add([0], 0, "1,2,3", "10,20,30"), [11.0, 22.0, 33.0])
        self.assertEqual(self.status_device([0], 0), 0)
        # what the container got: its variable and only that device's directory
        r = client([0], "sh", "-c", "echo $PTOD_SOCKET_0; ls -A /run/ptod /run/ptod/0")
        self.assertEqual(r.stdout.split(), ["/run/ptod/0/ptod0.sock", "/run/ptod:", "0",
                                            "/run/ptod/0:", "ptod0.sock"])

    def test_a_non_root_client_needs_the_sockets_group(self):
        ping = ("ptoctl", "-d", "0", "ping")
        member = ("--user", "1000:1000", "--group-add", str(GROUP))
        self.assertEqual(client([0], *ping, user=member).returncode, 0)
        r = client([0], *ping, user=("--user", "1000:1000"), check=False)
        self.assertEqual(r.returncode, 3)
        self.assertIn("permission denied; you are not in group '%d'" % GROUP, r.stderr)

    def test_two_devices_each_by_its_number(self):
        self.assertEqual(vector_add([0, 1], 0, "1,2,3", "1,1,1"), [2.0, 3.0, 4.0])
        self.assertEqual(vector_add([0, 1], 1, "5,6,7", "1,1,1"), [6.0, 7.0, 8.0])
        r = client([0, 1], "ptoctl", "--json", "-d", "0", "-d", "1", "status")
        devices = json.loads(r.stdout)["devices"]
        self.assertEqual([d["result"]["device"] for d in devices], [0, 1])

    def test_a_device_not_given_cannot_be_reached(self):
        self.assertEqual(self.status_device([1], 1), 1)
        r = client([1], "ptoctl", "-d", "0", "ping", check=False)
        self.assertEqual(r.returncode, 3, r.stderr)  # cannot connect
        r = client([1], "sh", "-c", "echo ${PTOD_SOCKET_0:-unset}; ls -A /run/ptod; "
                   "find / -xdev -type s 2>/dev/null; find /run -type s")
        self.assertEqual(r.stdout.split(), ["unset", "1", "/run/ptod/1/ptod1.sock"])

    def test_a_daemon_restart_reaches_a_running_container(self):
        # The client is the container's own process: podman 4.3's exec does
        # not pass CDI's env.  It pings, waits for a line, asks for status.
        script = ("ptoctl -d 0 ping >/dev/null && echo first-ok; read line; "
                  "exec ptoctl --json -d 0 status")
        c = subprocess.Popen(PODMAN + ["run", "--rm", "-i", "--name",
                                       "ptod-test-%s-client" % RUN_ID, *LIMITS,
                                       "--device", "%s=0" % KIND, IMAGE, "sh", "-c", script],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        try:
            self.assertEqual(c.stdout.readline(), "first-ok\n")
            sock = os.path.join(self.run_dir, "0", "ptod0.sock")
            before = inode(sock)
            daemon = self.daemons[0]
            podman("stop", "-t", "30", daemon)
            podman("start", daemon)
            wait_for_socket(sock, daemon, before)  # a new socket, a new inode
            out, _ = c.communicate("go\n", timeout=120)
        finally:
            if c.poll() is None:
                c.kill()
                c.wait()
        self.assertEqual(c.returncode, 0)
        self.assertEqual(json.loads(out)["device"], 0)


@unittest.skipIf(missing(), missing())
class HostUnits(unittest.TestCase):
    """The host layout: ptod@0 under systemd 252 as PID 1 (the image with
    systemd added), its socket unit with deploy/'s CDI drop-in, its
    /run/ptod on a host directory.  Host clients keep /run/ptod/ptod0.sock;
    CDI clients get /run/ptod/0, the same socket."""

    IMAGE = "localhost/ptod-test-systemd:%s" % RUN_ID
    KIND = "ptodhost%s.internal/device" % RUN_ID
    SPEC = "/etc/cdi/ptod-host-%s.json" % RUN_ID
    NAME = "ptod-test-%s-systemd" % RUN_ID

    @classmethod
    def setUpClass(cls):
        build_image(cls.IMAGE, "--extra", "systemd,systemd-sysv")
        cls.dir = tempfile.mkdtemp(prefix="ptod-host-")
        cls.run_dir = os.path.join(cls.dir, "run")
        os.makedirs(cls.run_dir)
        conf = os.path.join(cls.dir, "ptod0.conf")
        with open(conf, "w") as f:  # the unit's socket, the test's small rings
            f.write("\n".join(l for l in CONFIG.format(n=0).splitlines()
                              if not l.startswith("socket")) + "\n")
        dropin = os.path.join(ROOT, "deploy", "systemd", "ptod@.socket.d", "cdi.conf")
        podman("run", "-d", "--name", cls.NAME, *LIMITS, "--systemd=always",
               "-v", "%s:/run/ptod" % cls.run_dir, "-v", "%s:/etc/ptod/ptod0.conf:ro" % conf,
               "-v", "%s:/etc/systemd/system/ptod@.socket.d/cdi.conf:ro" % dropin,
               cls.IMAGE, "/lib/systemd/systemd")
        # "running", or "degraded" when a unit unrelated to ptod failed in it
        podman("exec", cls.NAME, "systemctl", "is-system-running", "--wait", check=False)
        cls.systemctl("enable", "--now", "ptod@0.socket")
        os.makedirs(os.path.dirname(cls.SPEC), exist_ok=True)
        run([PTOCTL, "cdi", "generate", "--kind", cls.KIND, "--host-dir", cls.run_dir,
             "-o", cls.SPEC])

    @classmethod
    def tearDownClass(cls):
        podman("rm", "-f", "-t", "5", cls.NAME, check=False)
        if os.path.exists(cls.SPEC):
            os.unlink(cls.SPEC)
        podman("rmi", "-f", cls.IMAGE, check=False)
        shutil.rmtree(getattr(cls, "dir", "/nonexistent"), True)

    @classmethod
    def systemctl(cls, *args):
        r = podman("exec", cls.NAME, "systemctl", *args, check=False)
        if r.returncode != 0:  # what the units said, which systemctl does not print
            log = podman("exec", cls.NAME, "journalctl", "--no-pager", "-n", "60", "-u",
                         "ptod@0.socket", "-u", "ptod@0.service", check=False)
            raise AssertionError("systemctl %s exited %d:\n%s%s\n%s" % (
                " ".join(args), r.returncode, r.stdout, r.stderr, log.stdout))
        return r

    def sockets(self):
        """The inodes of the host path and of the CDI directory's name."""
        return (inode(os.path.join(self.run_dir, "ptod0.sock")),
                inode(os.path.join(self.run_dir, "0", "ptod0.sock")))

    def dispatch_through_cdi(self):
        self.assertEqual(vector_add([0], 0, "1,2,3", "3,2,1", kind=self.KIND, image=self.IMAGE),
                         [4.0, 4.0, 4.0])

    def test_host_path_and_cdi_directory_are_one_socket(self):
        host, link = self.sockets()
        self.assertIsNotNone(host)
        self.assertEqual(host, link)
        # the host flow: the built-in path, in the unit's machine
        r = podman("exec", self.NAME, "ptoctl", "--json", "-d", "0", "status")
        self.assertEqual(json.loads(r.stdout)["device"], 0)
        self.dispatch_through_cdi()
        st = os.stat(os.path.join(self.run_dir, "0"))
        self.assertEqual(oct(st.st_mode & 0o7777), "0o750")

    def test_restarts_keep_the_cdi_directory_serving(self):
        self.dispatch_through_cdi()
        before = self.sockets()
        # ptod restarts, systemd keeps the socket: the same inode serves
        self.systemctl("restart", "ptod@0.service")
        self.assertEqual(self.sockets(), before)
        self.dispatch_through_cdi()
        # the socket unit restarts with its service, as docs/operations.md
        # says: both stopped, then both started (one `systemctl restart` of
        # the two may start the socket while the service still drains, which
        # systemd refuses): a new socket, linked again
        self.systemctl("stop", "ptod@0.service", "ptod@0.socket")
        self.systemctl("start", "ptod@0.socket", "ptod@0.service")
        after = self.sockets()
        self.assertEqual(after[0], after[1])
        self.assertNotEqual(after, before)
        self.dispatch_through_cdi()
        # stopped: no stale name left behind in the directory
        self.systemctl("stop", "ptod@0.service", "ptod@0.socket")
        self.assertEqual(os.listdir(os.path.join(self.run_dir, "0")), [])
        self.systemctl("start", "ptod@0.socket")
        self.dispatch_through_cdi()


if __name__ == "__main__":
    unittest.main(verbosity=2)
