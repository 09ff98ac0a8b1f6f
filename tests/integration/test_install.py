# SPDX-License-Identifier: Apache-2.0
"""A relocatable install (docs/operations.md, "Install"): `cmake --install
--prefix P` and DESTDIR each give a tree that lies wholly under P (or the
stage), whose own ptod serves its own programs with no programs key, whose
units pass `systemd-analyze verify` and whose pkg-config files name the
prefix installed to; and a device program built out of tree against that
install alone (examples/program, item 8 of issue 12) is served from a
programs directory named in the config."""

import os
import re
import shutil
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402
from installed import TreeDaemon, ptoctl_dispatch, run, vector_add_sums  # noqa: E402

CMAKE = os.environ.get("PTOD_CMAKE", "cmake")
CC = os.environ.get("PTOD_CC", "cc")
PKG_CONFIG = os.environ.get("PTOD_PKG_CONFIG", "pkg-config")
LIBDIR = os.environ.get("PTOD_INSTALL_LIBDIR", "lib")
SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def installed_paths(output):
    return re.findall(r"^-- (?:Installing|Up-to-date|Keeping): (.*)$", output, re.M)


class Prefix(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="ptod-install-")
        cls.prefix = os.path.join(cls.tmp, "prefix")
        cls.output = run([CMAKE, "--install", harness.BINARY_DIR, "--prefix", cls.prefix]).stdout

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, True)

    def path(self, *parts):
        return os.path.join(self.prefix, *parts)

    def pkg_config(self, *args):
        env = dict(os.environ, PKG_CONFIG_PATH=self.path(LIBDIR, "pkgconfig"))
        env.pop("PKG_CONFIG_SYSROOT_DIR", None)
        return run([PKG_CONFIG] + list(args), env=env).stdout.strip()

    def test_everything_lands_under_the_prefix(self):
        paths = installed_paths(self.output)
        self.assertGreater(len(paths), 20, self.output)
        outside = [p for p in paths if not p.startswith(self.prefix + "/")]
        self.assertEqual(outside, [], self.output)
        self.assertIn(self.path(LIBDIR, "ptod", "programs", "vector_add.so"), paths)

    def test_its_ptod_serves_its_programs(self):
        d = TreeDaemon(self.path("bin", "ptod"))
        try:
            self.assertEqual(vector_add_sums(self.path("bin", "ptoctl"), d.socket),
                             [11.0, 22.0, 33.0])
        finally:
            d.stop()

    def test_units_name_this_prefix_and_verify(self):
        unitdir = self.path("lib", "systemd", "system")
        with open(os.path.join(unitdir, "ptod@.service")) as f:
            text = f.read()
        self.assertIn("\nExecStart=%s --config %s\n" % (
            self.path("bin", "ptod"), self.path("etc", "ptod", "ptod%i.conf")), text)
        self.assertTrue(os.path.isfile(self.path("etc", "ptod", "ptod0.conf")))
        tool = shutil.which("systemd-analyze")
        self.assertIsNotNone(tool, "systemd-analyze is missing (scripts/deps --test)")
        out = run([tool, "verify", "--man=no", os.path.join(unitdir, "ptod@.service"),
                   os.path.join(unitdir, "ptod@.socket")], check=False, cwd=unitdir)
        self.assertEqual((out.returncode, out.stderr.strip()), (0, ""), out.stdout + out.stderr)

    def test_pkg_config_names_this_prefix(self):
        self.assertEqual(self.pkg_config("--variable=prefix", "ptoclient"), self.prefix)
        self.assertEqual(self.pkg_config("--cflags", "ptoprogram"),
                         "-I" + self.path("include"))
        self.assertEqual(self.pkg_config("--variable=programsdir", "ptoprogram"),
                         self.path(LIBDIR, "ptod", "programs"))

    def test_reinstall_keeps_an_edited_config(self):
        conf = self.path("etc", "ptod", "ptod0.conf")
        with open(conf, "a") as f:
            f.write("\n# edited by the operator\n")
        out = run([CMAKE, "--install", harness.BINARY_DIR, "--prefix", self.prefix]).stdout
        self.assertIn("-- Keeping: %s" % conf, out)
        with open(conf) as f:
            self.assertIn("# edited by the operator", f.read())

    def test_out_of_tree_program(self):
        programs = os.path.join(self.tmp, "my-programs")
        os.makedirs(programs, exist_ok=True)
        # find_package(ptod) and its ptod::program target
        build = os.path.join(self.tmp, "build-scale")
        run([CMAKE, "-S", os.path.join(SOURCE, "examples", "program"), "-B", build,
             "-DCMAKE_PREFIX_PATH=" + self.prefix, "-DCMAKE_C_COMPILER=" + CC])
        run([CMAKE, "--build", build])
        shutil.copy(os.path.join(build, "scale.so"), programs)
        # pkg-config ptoprogram, as the example's comment says
        flags = self.pkg_config("--cflags", "ptoprogram").split()
        alt = os.path.join(self.tmp, "scale-pc.so")
        run([CC, "-shared", "-fPIC", "-fvisibility=hidden"] + flags +
            [os.path.join(SOURCE, "examples", "program", "scale.c"), "-o", alt])

        d = TreeDaemon(self.path("bin", "ptod"), "[device]\nprograms = %s\n" % programs)
        try:
            r = ptoctl_dispatch(self.path("bin", "ptoctl"), d.socket, "scale", "f32:1,2,3",
                                "out:12", "float:2.5")
            self.assertEqual(r["outputs"][1]["f32"], [2.5, 5.0, 7.5])
            env = dict(os.environ, PTOD_SOCKET=d.socket)
            listing = run([self.path("bin", "ptoctl"), "programs"], env=env).stdout
            self.assertIn("scale(a, out, factor)", listing)
            bad = run([self.path("bin", "ptoctl"), "dispatch", "scale", "f32:1,2,3", "out:8",
                       "float:2"], env=env, check=False)
            self.assertEqual(bad.returncode, 1)
            self.assertIn("scale: a must be f32[n] and out the same size; got 12 and 8 bytes.",
                          bad.stderr)
        finally:
            d.stop()
        # the pkg-config build is the same plugin: it loads and runs too
        os.replace(alt, os.path.join(programs, "scale.so"))
        d = TreeDaemon(self.path("bin", "ptod"), "[device]\nprograms = %s\n" % programs)
        try:
            r = ptoctl_dispatch(self.path("bin", "ptoctl"), d.socket, "scale", "f32:4",
                                "out:4", "float:0.5")
            self.assertEqual(r["outputs"][1]["f32"], [2.0])
        finally:
            d.stop()


class Destdir(unittest.TestCase):
    def test_staged_usr_tree_runs_where_it_lies(self):
        tmp = tempfile.mkdtemp(prefix="ptod-destdir-")
        self.addCleanup(shutil.rmtree, tmp, True)
        stage = os.path.join(tmp, "stage")
        out = run([CMAKE, "--install", harness.BINARY_DIR, "--prefix", "/usr"],
                  env=dict(os.environ, DESTDIR=stage)).stdout
        outside = [p for p in installed_paths(out) if not p.startswith(stage + "/")]
        self.assertEqual(outside, [], out)
        with open(os.path.join(stage, "usr", "lib", "systemd", "system", "ptod@.service")) as f:
            self.assertIn("\nExecStart=/usr/bin/ptod --config /etc/ptod/ptod%i.conf\n", f.read())
        self.assertTrue(os.path.isfile(os.path.join(stage, "etc", "ptod", "ptod0.conf")))
        with open(os.path.join(stage, "usr", LIBDIR, "pkgconfig", "ptoclient.pc")) as f:
            self.assertIn("prefix=/usr\n", f.read())
        d = TreeDaemon(os.path.join(stage, "usr", "bin", "ptod"))
        try:
            self.assertEqual(vector_add_sums(os.path.join(stage, "usr", "bin", "ptoctl"),
                                             d.socket), [11.0, 22.0, 33.0])
        finally:
            d.stop()


if __name__ == "__main__":
    unittest.main()
