# SPDX-License-Identifier: Apache-2.0
"""scripts/package, end to end: it builds the four .deb files, lintian finds
no error in them (and every warning it gives is listed, with its reason, in
docs/operations.md), their metadata and contents are what a Debian system
needs, the maintainer scripts start nothing, and the packages unpacked into
a scratch root with dpkg-deb -x serve: the root's ptod finds its programs
relative to itself, the root's ptoctl and the root's Python client dispatch
through PTOD_SOCKET.  The maintainer scripts start nothing on a first
install, restart the running instances on upgrade, stop them on remove
(shown on a running daemon) and remove their enable links on purge; they
run here with stubs of systemctl and deb-systemd-invoke, as no systemd is
booted."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from installed import TreeDaemon, run, vector_add_sums  # noqa: E402

WORK = os.environ.get("PTOD_PACKAGE_DIR") or tempfile.mkdtemp(prefix="ptod-package-")
VERSION = os.environ["PTOD_VERSION"]
ARCH = run(["dpkg", "--print-architecture"]).stdout.strip()
MULTIARCH = run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).stdout.strip()
PACKAGES = {"ptod": ARCH, "libptoclient0": ARCH, "ptod-dev": ARCH, "python3-ptoclient": "all"}


def deb(name):
    return os.path.join(WORK, "out", "%s_%s_%s.deb" % (name, VERSION, PACKAGES[name]))


def field(name, key):
    return run(["dpkg-deb", "-f", deb(name), key]).stdout.strip()


def contents(name):
    listing = run(["dpkg-deb", "-c", deb(name)]).stdout
    return {line.split()[5].lstrip(".") for line in listing.splitlines()}


def control_file(name, member):
    out = run(["dpkg-deb", "-I", deb(name), member], check=False)
    return out.stdout if out.returncode == 0 else None


class Package(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.built = run([os.path.join(ROOT, "scripts", "package"),
                         "--build-dir", os.path.join(WORK, "build"),
                         "--out", os.path.join(WORK, "out"), "--lintian"],
                        check=False, timeout=600)

    def test_builds_and_lintian_finds_no_error(self):
        out = self.built
        self.assertEqual(out.returncode, 0, out.stdout + out.stderr)
        for name in PACKAGES:
            self.assertIn(deb(name), [os.path.abspath(p) for p in out.stdout.split()])
        tags = re.findall(r"^([EWIPXO]): (\S+): (\S+)", out.stdout + out.stderr, re.M)
        self.assertEqual([t for t in tags if t[0] == "E"], [])
        with open(os.path.join(ROOT, "docs", "operations.md")) as f:
            ops = f.read()
        for severity, pkg, tag in tags:
            if severity == "W":
                self.assertIn("`%s`" % tag, ops, "lintian warns %s on %s; docs/operations.md "
                              "must say why" % (tag, pkg))

    def test_metadata(self):
        for name, arch in PACKAGES.items():
            self.assertEqual(field(name, "Package"), name)
            self.assertEqual(field(name, "Version"), VERSION)
            self.assertEqual(field(name, "Architecture"), arch)
            self.assertTrue(field(name, "Maintainer"))
            self.assertTrue(field(name, "Description"))
        # Depends: from dpkg-shlibdeps, on the libraries the binaries link
        depends = field("ptod", "Depends")
        for lib in ("libc6", "libuv1", "libmsgpackc2", "libinih1", "adduser"):
            self.assertRegex(depends, r"(^|, )%s( \(|,|$)" % lib, depends)
        self.assertRegex(field("libptoclient0", "Depends"), r"libmsgpackc2 \(>= ")
        # the headers use no msgpack type: nothing but the library (not
        # libmsgpack-dev, which pulls libmsgpack-cxx-dev and Boost)
        self.assertEqual(field("ptod-dev", "Depends"), "libptoclient0 (= %s)" % VERSION)
        self.assertRegex(field("ptod-dev", "Suggests"), r"(^|, )libmsgpack-dev\b")
        self.assertEqual(field("python3-ptoclient", "Depends"), "python3, python3-msgpack")
        self.assertEqual(control_file("libptoclient0", "shlibs").strip(),
                         "libptoclient 0 libptoclient0 (>= %s)" % VERSION)
        self.assertIn("activate-noawait ldconfig", control_file("libptoclient0", "triggers"))

    def test_contents(self):
        files = contents("ptod")
        lib = "/usr/lib/%s" % MULTIARCH
        for path in ("/usr/bin/ptod", "/usr/bin/ptoctl", "/lib/systemd/system/ptod@.service",
                     "/lib/systemd/system/ptod@.socket", "/usr/lib/sysusers.d/ptod.conf",
                     "/usr/lib/tmpfiles.d/ptod.conf", "/etc/ptod/ptod0.conf",
                     "/usr/share/man/man8/ptod.8.gz", "/usr/share/man/man1/ptoctl.1.gz",
                     "/usr/share/doc/ptod/copyright", "/usr/share/doc/ptod/changelog.gz",
                     "/usr/share/doc/ptod/ptod.conf.example",
                     "/usr/share/doc/ptod/img/ring-occupancy-prefill.png",
                     lib + "/ptod/programs/vector_add.so"):
            self.assertIn(path, files)
        self.assertEqual(control_file("ptod", "conffiles").split(), ["/etc/ptod/ptod0.conf"])
        self.assertIn(lib + "/libptoclient.so.0", contents("libptoclient0"))
        dev = contents("ptod-dev")
        for path in ("/usr/include/pto/client.h", "/usr/include/pto/protocol.h",
                     "/usr/include/pto/program.h",
                     lib + "/libptoclient.a", lib + "/libptoclient.so",
                     lib + "/pkgconfig/ptoclient.pc", lib + "/pkgconfig/ptoprogram.pc",
                     lib + "/cmake/ptoclient/ptoclientConfig.cmake",
                     lib + "/cmake/ptod/ptodConfig.cmake"):
            self.assertIn(path, dev)
        self.assertIn("/usr/lib/python3/dist-packages/ptoclient/client.py",
                      contents("python3-ptoclient"))
        for name in PACKAGES:
            self.assertIn("/usr/share/doc/%s/copyright" % name, contents(name))
        # every document the man pages name is installed where they say
        for page in ("ptod.8", "ptoctl.1"):
            with open(os.path.join(ROOT, "docs", "man", page)) as f:
                named = set(re.findall(r"(/usr/share/doc/ptod/[\w.]+)", f.read()))
            self.assertTrue(named, page)
            for path in named:
                self.assertIn(path, files, page)

    def test_copyright_names_apache_2(self):
        root = tempfile.mkdtemp(prefix="ptod-copyright-")
        self.addCleanup(shutil.rmtree, root, True)
        for name in PACKAGES:
            run(["dpkg-deb", "-x", deb(name), root])
            with open(os.path.join(root, "usr", "share", "doc", name, "copyright")) as f:
                text = f.read()
            self.assertTrue(text.startswith("Format: https://www.debian.org/doc/packaging-manuals/"
                                            "copyright-format/1.0/\n"), name)
            self.assertIn("\nFiles: *\n", text)
            self.assertIn("\nLicense: Apache-2.0\n", text)
            self.assertIn("/usr/share/common-licenses/Apache-2.0", text)
        with open(os.path.join(ROOT, "LICENSE")) as f, \
                open("/usr/share/common-licenses/Apache-2.0") as debian:
            self.assertEqual(f.read(), debian.read())

    def test_dev_package_builds_a_client_without_msgpack_dev(self):
        root = tempfile.mkdtemp(prefix="ptod-dev-")
        self.addCleanup(shutil.rmtree, root, True)
        for name in ("ptod-dev", "libptoclient0"):
            run(["dpkg-deb", "-x", deb(name), root])
        lib = os.path.join(root, "usr", "lib", MULTIARCH)
        # only the unpacked .pc files: msgpack.pc (libmsgpack-dev) is not seen
        env = dict(os.environ, PKG_CONFIG_LIBDIR=os.path.join(lib, "pkgconfig"),
                   PKG_CONFIG_SYSROOT_DIR=root)
        env.pop("PKG_CONFIG_PATH", None)
        flags = run(["pkg-config", "--cflags", "--libs", "ptoclient"], env=env).stdout.split()
        self.assertIn("-lptoclient", flags)
        self.assertNotIn("-lmsgpackc", flags)
        static = run(["pkg-config", "--static", "--libs", "ptoclient"], env=env).stdout.split()
        self.assertIn("-lmsgpackc", static)
        exe = os.path.join(root, "hello")
        run(["cc", os.path.join(ROOT, "examples", "client", "hello.c")] + flags +
            ["-Wl,-rpath-link," + lib, "-o", exe], env=env)
        self.assertTrue(os.access(exe, os.X_OK))

    def test_maintainer_scripts_use_debians_helpers(self):
        postinst = control_file("ptod", "postinst")
        self.assertIn("systemd-sysusers ptod.conf", postinst)
        self.assertIn("adduser --system", postinst)
        self.assertIn("daemon-reload", postinst)
        for script in ("postinst", "postrm", "prerm", "preinst"):
            text = control_file("ptod", script) or ""
            code = "\n".join(line for line in text.splitlines()
                             if not line.lstrip().startswith("#"))
            # starting, stopping and enabling go through deb-systemd-invoke
            # (policy-rc.d respected), never systemctl itself
            self.assertNotRegex(code, r"systemctl[^\n]*\b(start|stop|restart|enable)\b", script)
            self.assertNotRegex(code, r"deb-systemd-invoke\s+(start|enable)", script)

    def run_script(self, name, *args, tools=(), systemd=False, units="", env=None):
        """ptod's maintainer script name with PATH holding only stubs of
        tools (each logs its argv) and the few Essential tools the scripts
        use.  systemd: whether systemd runs (the script's /run/systemd/system
        test is pointed at a directory that exists or not).  units: what the
        stub systemctl's list-units prints, "UNIT PID" a line: a unit is
        listed while its process lives, and the stub's `stop` sends it
        SIGTERM, as systemctl stop does.  Returns the log lines."""
        shim = tempfile.mkdtemp(prefix="ptod-maint-")
        self.addCleanup(shutil.rmtree, shim, True)
        booted = os.path.join(shim, "booted" if systemd else "not-booted")
        os.makedirs(os.path.join(shim, "booted"))
        script = os.path.join(shim, name)
        with open(script, "w") as f:
            f.write(control_file("ptod", name).replace("/run/systemd/system", booted))
        log = os.path.join(shim, "log")
        units_file = os.path.join(shim, "units")
        with open(units_file, "w") as f:
            f.write(units)
        for tool in ("cut", "rm"):
            os.symlink(shutil.which(tool), os.path.join(shim, tool))
        stubs = {
            # getent: "no such user", so adduser is needed
            "getent": "exit 2\n",
            # deb-systemd-invoke stop: systemctl stop, as the real one does
            # for system units
            "deb-systemd-invoke": 'exec "${0%/*}/systemctl" "$@"\n',
            "systemctl": """case "$1" in
list-units)
    while read -r unit pid; do
        case "$* $unit" in *"--type=service "*.socket) continue ;; esac
        kill -0 "$pid" 2>/dev/null && echo "$unit loaded active running ptod"
    done <%(units)s ;;
stop)
    shift
    for unit; do
        while read -r u pid; do [ "$u" = "$unit" ] && kill -TERM "$pid"; done <%(units)s
    done ;;
esac
exit 0
""" % {"units": units_file},
        }
        for tool in tools:
            with open(os.path.join(shim, tool), "w") as f:
                f.write("#!/bin/sh\necho %s \"$@\" >>%s\n%s" % (tool, log, stubs.get(tool, "")))
            os.chmod(os.path.join(shim, tool), 0o755)
        run(["/bin/sh", script] + list(args), env=dict(env or {}, PATH=shim))
        if not os.path.exists(log):
            return []
        with open(log) as f:
            return f.read().splitlines()

    EVERYTHING = ["systemd-sysusers", "adduser", "getent", "systemctl", "systemd-tmpfiles",
                  "deb-systemd-invoke", "deb-systemd-helper", "invoke-rc.d"]

    def test_postinst_creates_the_user_and_starts_nothing(self):
        running = "ptod@0.service %d\nptod@0.socket %d\n" % (os.getpid(), os.getpid())
        calls = self.run_script("postinst", "configure", "", tools=self.EVERYTHING,
                                systemd=True, units=running)
        self.assertIn("systemd-sysusers ptod.conf", calls)
        self.assertIn("systemctl --system daemon-reload", calls)
        self.assertNotIn("adduser", " ".join(calls))
        # without systemd (a container): adduser makes the same user
        calls = self.run_script("postinst", "configure", "",
                                tools=[t for t in self.EVERYTHING if t != "systemd-sysusers"])
        self.assertIn("getent passwd ptod", calls)
        self.assertIn("adduser --system --group --no-create-home --home /nonexistent --gecos "
                      "ptod per-device worker daemon ptod", calls)
        for line in calls:
            self.assertNotRegex(line, r"\b(start|enable|restart)\b")
            self.assertFalse(line.startswith(("deb-systemd-invoke", "invoke-rc.d")), line)

    def test_upgrade_restarts_the_running_services_only(self):
        gone = subprocess.Popen(["true"])
        gone.wait()
        units = "ptod@0.socket %d\nptod@0.service %d\nptod@1.service %d\n" % (
            os.getpid(), os.getpid(), gone.pid)
        calls = self.run_script("postinst", "configure", "0.0.9", tools=self.EVERYTHING,
                                systemd=True, units=units)
        invoked = [c for c in calls if c.startswith("deb-systemd-invoke")]
        self.assertEqual(invoked, ["deb-systemd-invoke restart ptod@0.service"])
        self.assertLess(calls.index("systemctl --system daemon-reload"),
                        calls.index("deb-systemd-invoke restart ptod@0.service"))
        # nothing runs: nothing to restart; no systemd: no systemctl at all
        calls = self.run_script("postinst", "configure", "0.0.9", tools=self.EVERYTHING,
                                systemd=True, units="ptod@1.service %d\n" % gone.pid)
        self.assertEqual([c for c in calls if c.startswith("deb-systemd-invoke")], [])
        calls = self.run_script("postinst", "configure", "0.0.9", tools=self.EVERYTHING,
                                units=units)
        self.assertEqual([c for c in calls if c.startswith(("systemctl", "deb-systemd"))], [])

    def test_remove_stops_a_running_instance(self):
        root = tempfile.mkdtemp(prefix="ptod-root-")
        self.addCleanup(shutil.rmtree, root, True)
        run(["dpkg-deb", "-x", deb("ptod"), root])
        d = TreeDaemon(os.path.join(root, "usr", "bin", "ptod"))
        # the socket unit's stand-in: a process of its own
        socket_unit = subprocess.Popen(["sleep", "600"])
        self.addCleanup(lambda: socket_unit.poll() is not None or socket_unit.kill()
                        or socket_unit.wait())
        try:
            units = "ptod@0.socket %d\nptod@0.service %d\n" % (socket_unit.pid, d.proc.pid)
            # an upgrade keeps it running
            calls = self.run_script("prerm", "upgrade", "0.2.0", tools=self.EVERYTHING,
                                    systemd=True, units=units)
            self.assertEqual(calls, [])
            self.assertIsNone(d.proc.poll())
            # dpkg -r / apt-get remove: prerm remove stops it, through
            # deb-systemd-invoke
            calls = self.run_script("prerm", "remove", tools=self.EVERYTHING, systemd=True,
                                    units=units)
            self.assertIn("deb-systemd-invoke stop ptod@0.socket ptod@0.service", calls)
            self.assertEqual(d.proc.wait(60), 0)  # drained and exited
            self.assertEqual(socket_unit.wait(60), -15)
        finally:
            log = d.stop()
        self.assertIn("Received Terminated: draining", log)
        self.assertIn("Drained; exiting.", log)

    def test_purge_removes_the_enable_links(self):
        root = tempfile.mkdtemp(prefix="ptod-dpkgroot-")
        self.addCleanup(shutil.rmtree, root, True)
        etc = os.path.join(root, "etc", "systemd", "system")
        links = {"sockets.target.wants/ptod@0.socket": "/lib/systemd/system/ptod@.socket",
                 "multi-user.target.wants/ptod@1.service": "/lib/systemd/system/ptod@.service",
                 "sockets.target.wants/other.socket": "/lib/systemd/system/other.socket"}
        for link, target in links.items():
            os.makedirs(os.path.dirname(os.path.join(etc, link)), exist_ok=True)
            os.symlink(target, os.path.join(etc, link))
        self.run_script("postrm", "remove", tools=self.EVERYTHING, env={"DPKG_ROOT": root})
        for link in links:  # remove keeps them, for a reinstall
            self.assertTrue(os.path.islink(os.path.join(etc, link)), link)
        self.run_script("postrm", "purge", tools=self.EVERYTHING, env={"DPKG_ROOT": root})
        self.assertFalse(os.path.lexists(os.path.join(etc, "sockets.target.wants/ptod@0.socket")))
        self.assertFalse(os.path.lexists(
            os.path.join(etc, "multi-user.target.wants/ptod@1.service")))
        self.assertTrue(os.path.islink(os.path.join(etc, "sockets.target.wants/other.socket")))

    def test_unpacked_root_serves(self):
        root = tempfile.mkdtemp(prefix="ptod-root-")
        self.addCleanup(shutil.rmtree, root, True)
        for name in PACKAGES:
            run(["dpkg-deb", "-x", deb(name), root])
        d = TreeDaemon(os.path.join(root, "usr", "bin", "ptod"))
        try:
            self.assertEqual(vector_add_sums(os.path.join(root, "usr", "bin", "ptoctl"),
                                             d.socket), [11.0, 22.0, 33.0])
            snippet = ("from ptoclient import Client, Data, Out, f32, from_f32\n"
                       "import ptoclient\nprint(ptoclient.__file__)\n"
                       "with Client() as c:\n"
                       "    r = c.dispatch('vector_add', [Data(f32([1])), Data(f32([2])), Out(4)])\n"
                       "print(list(from_f32(r['outputs'][2])))\n")
            env = {k: v for k, v in os.environ.items() if not k.startswith("PTO2_RING_")}
            env.update(PTOD_SOCKET=d.socket,
                       PYTHONPATH=os.path.join(root, "usr", "lib", "python3", "dist-packages"))
            out = run(["/usr/bin/python3", "-B", "-c", snippet], env=env, cwd=root).stdout
            self.assertEqual(out.splitlines()[1], "[3.0]")
            self.assertTrue(out.startswith(root), out)
        finally:
            d.stop()
        # the unit names the package's daemon; with that path pointed at
        # the unpacked one it verifies
        with open(os.path.join(root, "lib", "systemd", "system", "ptod@.service")) as f:
            unit = f.read()
        self.assertIn("\nExecStart=/usr/bin/ptod --config /etc/ptod/ptod%i.conf\n", unit)
        units = tempfile.mkdtemp(prefix="ptod-units-")
        self.addCleanup(shutil.rmtree, units, True)
        for name in ("ptod@.service", "ptod@.socket"):
            with open(os.path.join(root, "lib", "systemd", "system", name)) as f:
                text = f.read().replace("/usr/bin/ptod", os.path.join(root, "usr", "bin", "ptod"))
            with open(os.path.join(units, name), "w") as f:
                f.write(text)
        out = run(["systemd-analyze", "verify", "--man=no", os.path.join(units, "ptod@.service"),
                   os.path.join(units, "ptod@.socket")], check=False, cwd=units)
        self.assertEqual((out.returncode, out.stderr.strip()), (0, ""), out.stdout + out.stderr)


if __name__ == "__main__":
    unittest.main()
