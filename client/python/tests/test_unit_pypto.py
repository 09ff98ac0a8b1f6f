# SPDX-License-Identifier: Apache-2.0
"""PyPTO habits and the client's environment, offline: RunConfig's platform
and device_id, a PyPTO RunConfig object taken duck-typed, PTOD_SOCKET for
Client(), and the PTO2_RING_* warning."""

import os
import sys
import unittest
import warnings
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)

import ptoclient  # noqa: E402
from ptoclient import Client, RunConfig, as_config  # noqa: E402
from ptoclient import env as ptoenv  # noqa: E402
from fake_server import FakeServer  # noqa: E402


class PyptoRunConfig:
    """What PyPTO's RunConfig dataclass carries (pypto-api.md section 1),
    with its defaults; none of ptoclient's types."""

    def __init__(self, **kw):
        self.platform = "a2a3sim"
        self.device_id = 0
        self.rtol = self.atol = 1e-5
        self.strategy = "Default"
        self.backend_type = "Ascend910B"
        self.dump_passes = False
        self.save_kernels = False
        self.save_kernels_dir = None
        self.codegen_only = False
        self.enable_chip_swimlane = 0
        self.enable_dump_args = 0
        self.enable_pmu = 0
        self.enable_dep_gen = False
        self.enable_scope_stats = False
        self.compile_profiling = False
        self.golden_data_dir = None
        self.aicpu_thread_num = None
        self.ring_task_window = self.ring_heap = self.ring_dep_pool = None
        self.distributed_config = None
        for k, v in kw.items():
            setattr(self, k, v)


class Platform(unittest.TestCase):
    def test_seed_example(self):
        # The seed's own line: ValueError on the ring, not TypeError on platform.
        with self.assertRaises(ValueError) as cm:
            RunConfig(platform="a2a3", ring_heap=1000)
        self.assertEqual(str(cm.exception),
                         "ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000")

    def test_platform_and_device_id_are_not_sent(self):
        rc = RunConfig(platform="a2a3", device_id=3, ring_heap=1 << 20)
        self.assertEqual(rc.to_wire(), {"ring_heap": 1 << 20})
        self.assertEqual((rc.platform, rc.device_id), ("a2a3", 3))
        self.assertEqual(repr(rc), "RunConfig(platform='a2a3', device_id=3, ring_heap=1048576)")
        self.assertEqual(rc.replace(ring_heap=None).platform, "a2a3")

    def test_bad_values(self):
        with self.assertRaises(ValueError) as cm:
            RunConfig(platform="a3")
        self.assertEqual(str(cm.exception), "Invalid platform 'a3'. Expected 'a2a3sim', 'a2a3', "
                         "'a5sim', 'a5' or ptod's 'sim'.")
        for bad in (-1, 256, True, "0"):
            with self.assertRaises(ValueError):
                RunConfig(device_id=bad)


class Pypto(unittest.TestCase):
    def test_consumed_and_ignored(self):
        p = PyptoRunConfig(ring_task_window=[256, 128, 64, 0], ring_heap=8 << 20,
                           enable_chip_swimlane=True, enable_scope_stats=True,
                           aicpu_thread_num=4, device_id=1, platform="a5sim",
                           strategy="Aggressive", codegen_only=True, rtol=0.5)
        rc = as_config(p)
        self.assertIsInstance(rc, RunConfig)
        self.assertEqual(rc.to_wire(), {"ring_task_window": [256, 128, 64, 0],
                                        "ring_heap": 8 << 20, "aicpu_thread_num": 4,
                                        "enable_swimlane": 4, "enable_scope_stats": True})
        self.assertEqual((rc.platform, rc.device_id), ("a5sim", 1))

    def test_defaults_send_nothing(self):
        self.assertEqual(as_config(PyptoRunConfig()).to_wire(), {})

    def test_dfx_ptod_lacks_is_sent_not_dropped(self):
        rc = as_config(PyptoRunConfig(enable_pmu=2))
        self.assertEqual(rc.to_wire(), {"enable_pmu": 2})

    def test_its_validation_is_ours(self):
        with self.assertRaises(ValueError) as cm:
            as_config(PyptoRunConfig(ring_heap=1000))
        self.assertIn("ring_heap must be a power of 2 >= 1024", str(cm.exception))

    def test_dispatch_takes_it(self):
        s = FakeServer()
        self.addCleanup(s.close)
        with Client(s.path, timeout=10) as c:
            r = c.dispatch("noop", [1], config=PyptoRunConfig(ring_heap=1 << 20, platform=None,
                                                              device_id=None))
        self.assertEqual(r["echo"]["config"], {"ring_heap": 1 << 20})


class Socket(unittest.TestCase):
    def test_ptod_socket_n_names_device_n(self):
        s = FakeServer()
        self.addCleanup(s.close)
        env = {"PTOD_SOCKET_1": s.path, "PTOD_SOCKET_0": "/nonexistent/zero.sock",
               "PTOD_SOCKET": ""}
        with mock.patch.dict(os.environ, env):
            with Client(device=1, timeout=10) as c:
                self.assertEqual(c.socket_path, s.path)
                self.assertEqual(c.ping()["state"], "ready")
            # device 0, asked or by default, is PTOD_SOCKET_0's, never device 1's
            for kwargs in ({"device": 0}, {}):
                with self.assertRaises(ptoclient.ConnectFailed) as cm:
                    Client(timeout=10, **kwargs)
                self.assertIn("/nonexistent/zero.sock", str(cm.exception))
            # an explicit path wins; PTOD_SOCKET wins when no device is asked
            with Client(s.path, device=0, timeout=10) as c:
                self.assertEqual(c.socket_path, s.path)
            with mock.patch.dict(os.environ, {"PTOD_SOCKET": s.path}):
                with Client(timeout=10) as c:
                    self.assertEqual(c.socket_path, s.path)
            # a device without its variable takes its built-in path, not another's
            with mock.patch.object(ptoclient.calls, "default_socket_path",
                                   return_value="/nonexistent/dev2.sock") as dsp:
                with self.assertRaises(ptoclient.ConnectFailed):
                    Client(device=2, timeout=10)
                dsp.assert_called_with(2)

    def test_ptod_socket_names_the_default(self):
        s = FakeServer()
        self.addCleanup(s.close)
        with mock.patch.dict(os.environ, {"PTOD_SOCKET": s.path}):
            with Client(timeout=10) as c:
                self.assertEqual(c.socket_path, s.path)
                self.assertEqual(c.ping()["state"], "ready")
            # an explicit device or path wins
            with mock.patch.object(ptoclient.calls, "default_socket_path",
                                   return_value="/nonexistent/dev1.sock") as dsp:
                with self.assertRaises(ptoclient.ConnectFailed) as cm:
                    Client(device=1, timeout=10)
                dsp.assert_called_with(1)
            self.assertIn("/nonexistent/dev1.sock", str(cm.exception))
        with mock.patch.dict(os.environ, {"PTOD_SOCKET": ""}):
            with mock.patch.object(ptoclient.calls, "default_socket_path",
                                   return_value="/nonexistent/dev0.sock") as dsp:
                with self.assertRaises(ptoclient.ConnectFailed):
                    Client(timeout=10)
                dsp.assert_called_with(0)


class SizingEnv(unittest.TestCase):
    ENV = {"PTO2_RING_HEAP": "536870912", "PTO2_RING_TASK_WINDOW": "131072",
           "PTO2_RING_DEP_POOL": "131072"}

    def test_note_matches_libptoclient(self):
        # the same text as tests/client/test_env.c checks for the C client
        self.assertIsNone(ptoenv.sizing_env_note({}))
        self.assertEqual(
            ptoenv.sizing_env_note({"PTO2_RING_HEAP": "536870912", "PTO2_RING_DEP_POOL": "131072"}),
            "PTO2_RING_HEAP, PTO2_RING_DEP_POOL are set in this client's environment, but ring "
            "sizing from the environment is the daemon's: this client's dispatches do not use "
            "them. To make them take effect, put them in the dispatch's config "
            "(ring_heap=536870912, ring_dep_pool=131072), or in the daemon's environment "
            "(systemctl edit ptod@0: [Service] Environment=PTO2_RING_HEAP=536870912 "
            "PTO2_RING_DEP_POOL=131072).")

    def test_warned_once(self):
        s = FakeServer()
        self.addCleanup(s.close)
        with mock.patch.object(ptoenv, "_warned_env", False), \
                mock.patch.dict(os.environ, self.ENV):
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                Client(s.path, timeout=10).close()
                Client(s.path, timeout=10).close()
            self.assertEqual(len(got), 1, [str(w.message) for w in got])
            self.assertIs(got[0].category, ptoclient.SizingEnvWarning)
            text = str(got[0].message)
            for var in self.ENV:
                self.assertIn(var, text)
            self.assertIn("the dispatch's config", text)
            self.assertIn("the daemon's environment", text)
            self.assertEqual(got[0].filename, __file__)  # points at the caller

    def test_silent_without(self):
        s = FakeServer()
        self.addCleanup(s.close)
        clean = {k: v for k, v in os.environ.items() if not k.startswith("PTO2_RING_")}
        with mock.patch.object(ptoenv, "_warned_env", False), \
                mock.patch.dict(os.environ, clean, clear=True):
            with warnings.catch_warnings(record=True) as got:
                warnings.simplefilter("always")
                Client(s.path, timeout=10).close()
            self.assertEqual(got, [])


if __name__ == "__main__":
    unittest.main()
