# SPDX-License-Identifier: Apache-2.0
"""scripts/run (the README's first command) passes its arguments to ptod,
builds without the tests (so it needs, and warns about, nothing that only
the tests use), and runs only after scripts/deps.  It runs here on a copy
of the script with scripts/deps, cmake and the daemon stubbed, so the test
takes no build: the stubs log what they were given."""

import os
import shutil
import subprocess
import tempfile
import unittest

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def stub(path, body):
    with open(path, "w") as f:
        f.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)


class RunScript(unittest.TestCase):
    def test_arguments_reach_ptod(self):
        tmp = tempfile.mkdtemp(prefix="ptod-run-")
        self.addCleanup(shutil.rmtree, tmp, True)
        os.makedirs(os.path.join(tmp, "scripts"))
        os.makedirs(os.path.join(tmp, "bin"))
        shutil.copy(os.path.join(SOURCE, "scripts", "run"), os.path.join(tmp, "scripts", "run"))
        log = os.path.join(tmp, "log")
        stub(os.path.join(tmp, "scripts", "deps"), 'echo "deps $*" >>%s\n' % log)
        # cmake: log, and "build" a ptod that logs its argv
        stub(os.path.join(tmp, "bin", "cmake"),
             'echo "cmake $*" >>%s\nmkdir -p build/run/daemon\n'
             'printf \'#!/bin/sh\\nfor a; do echo "ptod [$a]"; done >>%s\\n\' >build/run/daemon/ptod\n'
             'chmod +x build/run/daemon/ptod\n' % (log, log))
        env = dict(os.environ, PATH=os.path.join(tmp, "bin") + os.pathsep + os.environ["PATH"])
        out = subprocess.run([os.path.join(tmp, "scripts", "run"), "--config", "/etc/my conf"],
                             env=env, capture_output=True, text=True, timeout=60)
        self.assertEqual(out.returncode, 0, out.stderr)
        with open(log) as f:
            lines = f.read().splitlines()
        self.assertEqual(lines[0], "deps ")               # run-only deps: no --test
        self.assertIn("-DPTOD_TESTS=OFF", lines[1])       # no test-only warnings
        self.assertTrue(lines[1].startswith("cmake -S . -B build/run"), lines[1])
        self.assertTrue(lines[2].startswith("cmake --build build/run"), lines[2])
        self.assertEqual(lines[3:], ["ptod [--config]", "ptod [/etc/my conf]"])  # one word each


if __name__ == "__main__":
    unittest.main()
