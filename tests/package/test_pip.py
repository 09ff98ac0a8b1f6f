# SPDX-License-Identifier: Apache-2.0
"""The Python client installs like a Python package, offline, on Debian:
`pip install --no-build-isolation --no-index client/python` into a
`python3 -m venv --system-site-packages` venv (Debian's python3-msgpack and
setuptools come from the system), and the installed copy, imported from
outside the checkout, reaches a daemon through PTOD_SOCKET."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402

VERSION = os.environ.get("PTOD_VERSION", "")
SNIPPET = """
import os, ptoclient
from ptoclient import Client, Data, Out, f32, from_f32
print(os.path.dirname(ptoclient.__file__))
print(ptoclient.__version__)
with Client() as c:
    r = c.dispatch("vector_add", [Data(f32([1, 2])), Data(f32([10, 20])), Out(8)])
print(list(from_f32(r["outputs"][2])))
"""


class Pip(unittest.TestCase):
    def run_ok(self, argv, **kw):
        out = subprocess.run(argv, capture_output=True, text=True, timeout=240, **kw)
        self.assertEqual(out.returncode, 0, "%s:\n%s\n%s" % (argv, out.stdout, out.stderr))
        return out

    def test_install_into_venv_offline(self):
        tmp = tempfile.mkdtemp(prefix="ptod-pip-")
        self.addCleanup(shutil.rmtree, tmp, True)
        # a copy, so the build's egg-info and build/ never land in the checkout
        src = os.path.join(tmp, "src")
        shutil.copytree(os.path.join(ROOT, "client", "python"), src,
                        ignore=shutil.ignore_patterns("__pycache__", "build", "*.egg-info"))
        venv = os.path.join(tmp, "venv")
        self.run_ok(["/usr/bin/python3", "-m", "venv", "--system-site-packages", venv])
        py = os.path.join(venv, "bin", "python")
        env = {k: v for k, v in os.environ.items()
               if k not in ("PYTHONPATH", "PIP_INDEX_URL", "PIP_FIND_LINKS")
               and not k.startswith("PTO2_RING_")}
        env["PIP_NO_INDEX"] = "1"
        env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
        self.run_ok([py, "-m", "pip", "install", "--no-build-isolation", "--no-index", src],
                    env=env)
        show = self.run_ok([py, "-m", "pip", "show", "ptoclient"], env=env).stdout
        self.assertIn("Name: ptoclient", show)
        self.assertIn("Version: %s" % VERSION, show)
        self.assertIn("Requires: msgpack", show)
        self.assertIn("License: Apache-2.0", show)

        d = harness.Daemon()
        self.addCleanup(d.stop)
        env["PTOD_SOCKET"] = d.socket
        out = self.run_ok([py, "-c", SNIPPET], env=env, cwd=tmp).stdout.splitlines()
        self.assertTrue(out[0].startswith(os.path.join(venv, "lib")), out[0])
        self.assertTrue(os.path.exists(os.path.join(out[0], "py.typed")))
        self.assertEqual(out[1], VERSION)
        self.assertEqual(out[2], "[11.0, 22.0]")


if __name__ == "__main__":
    unittest.main()
