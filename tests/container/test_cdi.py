# SPDX-License-Identifier: Apache-2.0
"""`ptoctl cdi generate`: the spec it writes, field by field, against the
rules of CDI 0.5.0 (what Debian 12's podman 4.3 reads), and its errors.

The rules checked are the spec's (container-device-interface, SPEC.md and
its specs-go version checks at 0.5.0): the top level holds cdiVersion, kind,
devices and optionally containerEdits; a device holds name and
containerEdits (annotations are 0.6.0); containerEdits holds env,
deviceNodes, hooks and mounts (additionalGIDs and intelRdt are 0.7.0); a
mount holds hostPath, containerPath, options and type; the kind is
VENDOR/CLASS, each of letters, digits, '_', '-', '.', starting with a
letter and ending with a letter or digit, the class without '.' (0.6.0);
a device name is letters, digits, '_', '-', '.', ':' starting and ending
with a letter or digit; device names are unique in a spec; env entries are
VAR=VALUE.
"""

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile
import unittest

BINARY_DIR = os.environ.get("PTOD_BINARY_DIR") or sys.exit("PTOD_BINARY_DIR is not set")
PTOCTL = os.path.join(BINARY_DIR, "client", "ptoctl")

NAME = r"[A-Za-z](?:[A-Za-z0-9_.-]*[A-Za-z0-9])?"
KIND_050 = re.compile(r"^%s/[A-Za-z](?:[A-Za-z0-9_-]*[A-Za-z0-9])?$" % NAME)
DEVICE_NAME = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9_.:-]*[A-Za-z0-9])?$")
ENV_ENTRY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=.*$")
SPEC_KEYS = {"cdiVersion", "kind", "devices", "containerEdits"}
DEVICE_KEYS = {"name", "containerEdits"}
EDITS_KEYS = {"env", "deviceNodes", "hooks", "mounts"}
MOUNT_KEYS = {"hostPath", "containerPath", "options", "type"}


def ptoctl(*args):
    return subprocess.run([PTOCTL, "cdi"] + list(args), capture_output=True, text=True,
                          timeout=60)


def check_050(test, spec):
    """Every rule of the module docstring, on a parsed spec."""
    test.assertEqual(spec["cdiVersion"], "0.5.0")
    test.assertLessEqual(set(spec), SPEC_KEYS)
    test.assertRegex(spec["kind"], KIND_050)
    test.assertIsInstance(spec["devices"], list)
    test.assertGreater(len(spec["devices"]), 0)
    names = [d["name"] for d in spec["devices"]]
    test.assertEqual(len(names), len(set(names)), "device names must be unique")
    for dev in spec["devices"]:
        test.assertLessEqual(set(dev), DEVICE_KEYS)
        test.assertRegex(dev["name"], DEVICE_NAME)
        edits = dev["containerEdits"]
        test.assertLessEqual(set(edits), EDITS_KEYS)
        for entry in edits.get("env", []):
            test.assertRegex(entry, ENV_ENTRY)
        for m in edits.get("mounts", []):
            test.assertLessEqual(set(m), MOUNT_KEYS)
            test.assertTrue(m["hostPath"].startswith("/") and m["containerPath"].startswith("/"))
            test.assertIsInstance(m.get("options", []), list)
            test.assertTrue(all(isinstance(o, str) for o in m.get("options", [])))


class Generate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="ptod-cdi-")
        self.addCleanup(shutil.rmtree, self.dir, True)
        self.run_dir = os.path.join(self.dir, "run")
        os.mkdir(self.run_dir)

    def generate(self, *args):
        r = ptoctl("generate", *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stderr, "")
        spec = json.loads(r.stdout)
        check_050(self, spec)
        return spec

    def test_one_device_per_instance_a_directory_and_its_own_variable(self):
        spec = self.generate("--device", "1", "--device", "0", "--device", "1")
        self.assertEqual(spec["kind"], "ptod.internal/device")
        self.assertEqual([d["name"] for d in spec["devices"]], ["0", "1"])
        self.assertNotIn("containerEdits", spec)  # nothing shared that one device could override
        for dev in spec["devices"]:
            n = dev["name"]
            edits = dev["containerEdits"]
            self.assertEqual(set(edits), {"env", "mounts"})
            self.assertEqual(edits["env"], ["PTOD_SOCKET_%s=/run/ptod/%s/ptod%s.sock" % (n, n, n)])
            self.assertEqual(edits["mounts"], [{
                "hostPath": "/run/ptod/%s" % n, "containerPath": "/run/ptod/%s" % n,
                "type": "bind", "options": ["bind", "nosuid", "nodev", "noexec"]}])
            # the socket the variable names is inside the mounted directory
            sock = edits["env"][0].split("=", 1)[1]
            self.assertEqual(os.path.dirname(sock), edits["mounts"][0]["containerPath"])
        variables = [d["containerEdits"]["env"][0].split("=")[0] for d in spec["devices"]]
        self.assertEqual(len(variables), len(set(variables)))

    def test_devices_found_under_the_host_directory(self):
        for name in ("0", "3", "07", "256", "x"):
            os.mkdir(os.path.join(self.run_dir, name))
        open(os.path.join(self.run_dir, "5"), "w").close()  # a file, not a directory
        spec = self.generate("--host-dir", self.run_dir + "/", "--container-dir", "/srv/ptod")
        self.assertEqual([d["name"] for d in spec["devices"]], ["0", "3"])
        m = spec["devices"][1]["containerEdits"]["mounts"][0]
        self.assertEqual((m["hostPath"], m["containerPath"]),
                         (self.run_dir + "/3", "/srv/ptod/3"))
        self.assertEqual(spec["devices"][1]["containerEdits"]["env"],
                         ["PTOD_SOCKET_3=/srv/ptod/3/ptod3.sock"])

    def test_kind_is_checked_against_050(self):
        self.assertEqual(self.generate("-d", "0", "--kind", "example.com/accel")["kind"],
                         "example.com/accel")
        for bad in ("ptod", "/device", "ptod.internal/", "1ptod/device", "ptod-/device",
                    "pto d/device", "ptod/dev/ice"):
            r = ptoctl("generate", "-d", "0", "--kind", bad)
            self.assertEqual(r.returncode, 2, bad)
            self.assertIn("--kind '%s' must be VENDOR/CLASS" % bad, r.stderr)
            self.assertEqual(r.stdout, "")
        r = ptoctl("generate", "-d", "0", "--kind", "ptod.internal/device.v1")
        self.assertEqual(r.returncode, 2)
        self.assertIn("a class with '.' needs cdiVersion 0.6.0", r.stderr)

    def test_output_file_replaced_whole(self):
        out = os.path.join(self.dir, "ptod.json")
        with open(out, "w") as f:
            f.write("old")
        os.chmod(out, 0o600)
        r = ptoctl("generate", "-d", "2", "--output", out)
        self.assertEqual((r.returncode, r.stdout, r.stderr), (0, "", ""))
        with open(out) as f:
            spec = json.load(f)
        check_050(self, spec)
        self.assertEqual([d["name"] for d in spec["devices"]], ["2"])
        self.assertEqual(stat.S_IMODE(os.stat(out).st_mode), 0o644)  # the engine may not be root
        self.assertEqual(sorted(os.listdir(self.dir)), ["ptod.json", "run"])  # no temp left

    def test_errors_say_what_to_change_and_write_nothing(self):
        out = os.path.join(self.dir, "ptod.json")
        cases = [
            (("generate", "-d", "256"), 2, "--device '256' must be a number in 0..255."),
            (("generate", "-d", "01"), 2, "--device '01' must be a number in 0..255."),
            (("generate", "--host-dir", "run"), 2, "--host-dir 'run' must be an absolute path."),
            (("generate", "-d", "0", "--container-dir", "/a:b"), 2, "must not contain"),
            (("generate", "-d", "0", "--container-dir", "/" + "c" * 100), 2,
             "is longer than a Unix socket path can be (107 bytes)"),
            (("generate", "--host-dir", self.run_dir), 5, "No device directory under '%s'"
             % self.run_dir),
            (("generate", "--host-dir", self.dir + "/none"), 5, "Cannot list '%s/none'"
             % self.dir),
            (("generate", "-d", "0", "-o", self.dir + "/none/ptod.json"), 5,
             "Cannot create a file beside"),
            (("generate", "extra"), 2, "'generate' takes no arguments, got 'extra'."),
            (("make",), 2, "Unknown subcommand 'make' (generate)."),
            ((), 2, "No subcommand given (generate)."),
            (("generate", "--socket", "/x"), 2, "Unknown option '--socket'."),
        ]
        for args, code, text in cases:
            r = ptoctl(*args, "--output", out) if code == 5 and "-o" not in args else ptoctl(*args)
            self.assertEqual(r.returncode, code, (args, r.stderr))
            self.assertIn(text, r.stderr, args)
            self.assertTrue(r.stderr.startswith("ptoctl cdi: "), r.stderr)
            self.assertEqual(r.stdout, "")
            self.assertFalse(os.path.exists(out), args)

    def test_ptoctl_options_before_cdi_are_refused(self):
        r = subprocess.run([PTOCTL, "--json", "cdi", "generate", "-d", "0"], capture_output=True,
                           text=True, timeout=60)
        self.assertEqual(r.returncode, 2)
        self.assertIn("'cdi' must come first and takes its own options", r.stderr)
        self.assertEqual(r.stdout, "")

    def test_help(self):
        r = ptoctl("--help")
        self.assertEqual(r.returncode, 0)
        self.assertIn("Usage: ptoctl cdi generate [OPTION]...", r.stdout)


if __name__ == "__main__":
    unittest.main(verbosity=2)
