# SPDX-License-Identifier: Apache-2.0
"""scripts/test runs every stage it is given even when one fails, says which
stage it is in, and exits non-zero at the end naming the failed stages.
cmake and ctest are stubs here (first on PATH, each logging its argv), so
nothing is built: the stub cmake fails to configure the asan build."""

import os
import shutil
import subprocess
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))

STUB = """#!/bin/sh
echo "$(basename "$0") $*" >>"%(log)s"
case " $* " in
*" -B build/asan "*) echo "stub cmake: cannot configure" >&2; exit 1 ;;
esac
exit 0
"""


class ScriptsTest(unittest.TestCase):
    def run_test_script(self, *stages, env=None):
        shim = tempfile.mkdtemp(prefix="ptod-scripts-test-")
        self.addCleanup(shutil.rmtree, shim, True)
        log = os.path.join(shim, "log")
        for tool in ("cmake", "ctest"):
            path = os.path.join(shim, tool)
            with open(path, "w") as f:
                f.write(STUB % {"log": log})
            os.chmod(path, 0o755)
        run_env = {k: v for k, v in os.environ.items() if not k.startswith("PTOD_TEST_")}
        run_env.update(PATH=shim + ":" + os.environ["PATH"], PTOD_TEST_JOBS="2", **(env or {}))
        out = subprocess.run([os.path.join(ROOT, "scripts", "test")] + list(stages),
                             env=run_env, capture_output=True, text=True, timeout=300)
        if not os.path.exists(log):
            return out, []
        with open(log) as f:
            return out, f.read().splitlines()

    def test_every_stage_runs_and_the_failed_ones_are_named(self):
        out, calls = self.run_test_script("plain", "asan", "tsan")
        self.assertEqual(out.returncode, 1, out.stderr)
        self.assertEqual(out.stderr.splitlines()[-1],
                         "scripts/test: failed stages: asan (of plain asan tsan)")
        # plain and tsan were configured, built and tested; asan stopped at
        # its configure step
        tested = [c.split()[2] for c in calls if c.startswith("ctest --test-dir")]
        self.assertEqual(tested, ["build/test", "build/tsan"])
        self.assertEqual(len([c for c in calls if "-B build/asan" in c]), 1)
        self.assertNotIn("cmake --build build/asan", " | ".join(calls))
        for line in ("=== scripts/test: stage plain passed", "=== scripts/test: stage asan FAILED",
                     "=== scripts/test: stage tsan passed", "scripts/test: building build/tsan",
                     "stub cmake: cannot configure"):
            self.assertIn(line, out.stderr.splitlines())

    def test_all_passed(self):
        out, calls = self.run_test_script("plain", "tsan")
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual(out.stderr.splitlines()[-1],
                         "scripts/test: every stage passed: plain tsan")
        # PTOD_TEST_OFFLINE=1 leaves out the registry tests, nothing else
        self.assertNotIn("-LE registry", " ".join(calls))
        out, calls = self.run_test_script("plain", env={"PTOD_TEST_OFFLINE": "1"})
        self.assertEqual(out.returncode, 0, out.stderr)
        self.assertEqual([c for c in calls if c.startswith("ctest")],
                         ["ctest --test-dir build/test -j 2 --output-on-failure --no-tests=error "
                          "-LE registry"])

    def test_unknown_stage_runs_nothing(self):
        shim_out, calls = self.run_test_script("plain", "asna")
        self.assertEqual(shim_out.returncode, 2)
        self.assertIn("scripts/test: unknown stage 'asna' (plain, asan, tsan, fuzz)",
                      shim_out.stderr)
        self.assertEqual(calls, [])


if __name__ == "__main__":
    unittest.main()
