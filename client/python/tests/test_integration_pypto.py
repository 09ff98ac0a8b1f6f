# SPDX-License-Identifier: Apache-2.0
"""PyPTO habits against the real ptod: the seed's L2 and L3 usage ported to
ptod (examples/pypto_habits.py) run as shipped, RunConfig's platform and
device_id checked against the daemon, and Client() on PTOD_SOCKET."""

import os
import subprocess
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

import harness  # noqa: E402
from ptoclient import Client, Data, Out, RunConfig, f32, from_f32  # noqa: E402

EXAMPLE = os.path.join(os.path.dirname(HERE), "examples", "pypto_habits.py")
T = 240  # per-call limit: only reached when something hangs


class Habits(unittest.TestCase):
    def setUp(self):
        self.d = harness.Daemon()
        self.addCleanup(self.d.stop)

    def run_example(self, *args):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PTO2_RING_")}
        env["PTOD_SOCKET"] = self.d.socket
        return subprocess.run([sys.executable, "-B", EXAMPLE] + list(args), env=env,
                              capture_output=True, text=True, timeout=T)

    def test_seed_usage_runs(self):
        out = self.run_example()
        self.assertEqual(out.returncode, 0, out.stderr)
        lines = out.stdout.splitlines()
        self.assertEqual(lines[0], "L2 out [11.0, 22.0, 33.0, 44.0] ring_task_window "
                         "[128, 128, 128, 128] ['request', 'request', 'request', 'request']")
        # prepare(prefill_cfg) prewarmed the prefill sizing: its dispatch hits,
        # the decode sizing rebuilds once (the single-slot cache)
        self.assertEqual(lines[1], "L3 prefill hit True window [256, 256, 256, 256]")
        self.assertEqual(lines[2], "L3 decode hit False window [64, 64, 64, 64]")

    def test_hardware_platform_on_sim_is_refused(self):
        out = self.run_example("--platform", "a2a3")
        self.assertNotEqual(out.returncode, 0)
        self.assertIn("ValueError: RunConfig(platform='a2a3') cannot run on the daemon at %s: "
                      "it runs platform 'sim'." % self.d.socket, out.stderr)

    def test_device_id(self):
        with Client(self.d.socket, timeout=T) as c:
            args = [Data(f32([1])), Data(f32([2])), Out(4)]
            r = c.dispatch("vector_add", args, config=RunConfig(device_id=0, platform="sim"))
            self.assertEqual(list(from_f32(r["outputs"][2])), [3.0])
            with self.assertRaises(ValueError) as cm:
                c.dispatch("vector_add", args, config=RunConfig(device_id=1))
            self.assertIn("RunConfig(device_id=1) cannot run on the daemon at %s: it owns "
                          "device 0." % self.d.socket, str(cm.exception))
            # nothing was sent for the refused one: the connection still works
            self.assertEqual(c.ping()["state"], "ready")


if __name__ == "__main__":
    unittest.main()
