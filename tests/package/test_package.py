"""scripts/package, end to end: it builds the four .deb files, lintian finds
no error in them (and every warning it gives is listed, with its reason, in
docs/operations.md), their metadata and contents are what a Debian system
needs, the maintainer scripts start nothing, and the packages unpacked into
a scratch root with dpkg-deb -x serve: the root's ptod finds its programs
relative to itself, the root's ptoctl and the root's Python client dispatch
through PTOD_SOCKET."""

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
        self.assertIn("libptoclient0 (= %s)" % VERSION, field("ptod-dev", "Depends"))
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
                     lib + "/ptod/programs/vector_add.so"):
            self.assertIn(path, files)
        self.assertEqual(control_file("ptod", "conffiles").split(), ["/etc/ptod/ptod0.conf"])
        self.assertIn(lib + "/libptoclient.so.0", contents("libptoclient0"))
        dev = contents("ptod-dev")
        for path in ("/usr/include/pto/client.h", "/usr/include/pto/program.h",
                     lib + "/libptoclient.a", lib + "/libptoclient.so",
                     lib + "/pkgconfig/ptoclient.pc", lib + "/pkgconfig/ptoprogram.pc",
                     lib + "/cmake/ptoclient/ptoclientConfig.cmake",
                     lib + "/cmake/ptod/ptodConfig.cmake"):
            self.assertIn(path, dev)
        self.assertIn("/usr/lib/python3/dist-packages/ptoclient/client.py",
                      contents("python3-ptoclient"))
        for name in PACKAGES:
            self.assertIn("/usr/share/doc/%s/copyright" % name, contents(name))

    def test_maintainer_scripts_start_nothing(self):
        postinst = control_file("ptod", "postinst")
        self.assertIn("systemd-sysusers ptod.conf", postinst)
        self.assertIn("adduser --system", postinst)
        self.assertIn("daemon-reload", postinst)
        for script in ("postinst", "postrm", "prerm", "preinst"):
            text = control_file("ptod", script) or ""
            code = "\n".join(line for line in text.splitlines()
                             if not line.lstrip().startswith("#"))
            self.assertNotRegex(code, r"\b(start|enable|restart|try-restart)\b", script)

    def run_postinst(self, tools):
        """ptod's postinst configure with PATH holding only stubs of tools
        (each logs its argv); returns the log lines."""
        shim = tempfile.mkdtemp(prefix="ptod-postinst-")
        self.addCleanup(shutil.rmtree, shim, True)
        script = os.path.join(shim, "postinst")
        with open(script, "w") as f:
            f.write(control_file("ptod", "postinst"))
        log = os.path.join(shim, "log")
        for tool in tools:
            with open(os.path.join(shim, tool), "w") as f:
                # getent: "no such user", so adduser is needed
                f.write("#!/bin/sh\necho %s \"$@\" >>%s\n%s" % (tool, log,
                        "exit 2\n" if tool == "getent" else ""))
            os.chmod(os.path.join(shim, tool), 0o755)
        run(["/bin/sh", script, "configure", ""], env={"PATH": shim})
        if not os.path.exists(log):
            return []
        with open(log) as f:
            return f.read().splitlines()

    def test_postinst_creates_the_user_and_starts_nothing(self):
        everything = ["systemd-sysusers", "adduser", "getent", "systemctl", "systemd-tmpfiles",
                      "deb-systemd-invoke", "deb-systemd-helper", "invoke-rc.d"]
        calls = self.run_postinst(everything)
        self.assertIn("systemd-sysusers ptod.conf", calls)
        self.assertNotIn("adduser", " ".join(calls))
        # without systemd (a container): adduser makes the same user
        calls = self.run_postinst([t for t in everything if t != "systemd-sysusers"])
        self.assertIn("getent passwd ptod", calls)
        self.assertIn("adduser --system --group --no-create-home --home /nonexistent --gecos "
                      "ptod per-device worker daemon ptod", calls)
        for line in calls:
            self.assertNotRegex(line, r"\b(start|enable|restart)\b")
            self.assertFalse(line.startswith(("deb-systemd-invoke", "invoke-rc.d")), line)

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
