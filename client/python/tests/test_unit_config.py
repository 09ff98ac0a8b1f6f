# SPDX-License-Identifier: Apache-2.0
"""RunConfig: every validation rule with its exact message, to_wire, extra."""

import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from ptoclient import INT32_MAX, RunConfig, as_config  # noqa: E402

TW = "ring_task_window must be a power of 2 >= 4, got "
HEAP = "ring_heap must be a power of 2 >= 1024 (bytes per ring), got "
DEP = "ring_dep_pool must be in [4, INT32_MAX], got "
TW_ENTRY = "ring_task_window entries must be a power of 2 >= 4 (or 0 to keep default), got "
HEAP_ENTRY = "ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), got "
DEP_ENTRY = "ring_dep_pool entries must be in [4, INT32_MAX] (or 0 to keep default), got "


class RingRules(unittest.TestCase):
    def reject(self, message, **kw):
        with self.assertRaises(ValueError) as cm:
            RunConfig(**kw)
        self.assertEqual(str(cm.exception), message)

    def test_documented_examples(self):
        self.reject("ring_task_window must be a power of 2 >= 4, got 3", ring_task_window=3)
        self.reject("ring_heap must be a power of 2 >= 1024 (bytes per ring), got 1000",
                    ring_heap=1000)
        self.reject("ring_dep_pool must be in [4, INT32_MAX], got 2", ring_dep_pool=2)
        self.reject("ring_heap must have exactly 4 entries (one per scope-depth ring), got 3",
                    ring_heap=[1024, 1024, 1024])
        self.reject("ring_heap entries must be a power of 2 >= 1024 (or 0 to keep default), "
                    "got 1000", ring_heap=[1024, 1000, 0, 0])
        self.reject("ring_task_window entries must be a power of 2 >= 4 (or 0 to keep default), "
                    "got 3", ring_task_window=[3, 0, 0, 0])
        self.reject("ring_dep_pool entries must be in [4, INT32_MAX] (or 0 to keep default), "
                    "got 2", ring_dep_pool=[2, 0, 0, 0])

    def test_scalar_bounds(self):
        for ok in (4, 8, 1 << 30):
            self.assertEqual(RunConfig(ring_task_window=ok).ring_task_window, ok)
        for ok in (1024, 1 << 40, 1 << 63):  # the heap has no upper cap below 2^64
            self.assertEqual(RunConfig(ring_heap=ok).ring_heap, ok)
        for ok in (4, 5, 1000, INT32_MAX):  # dep_pool needs no power of 2
            self.assertEqual(RunConfig(ring_dep_pool=ok).ring_dep_pool, ok)
        for bad in (2, 3, 6, 1 << 31, (1 << 30) + 1):
            self.reject(TW + str(bad), ring_task_window=bad)
        for bad in (512, 1000, 1536, 1 << 64):
            self.reject(HEAP + str(bad), ring_heap=bad)
        for bad in (3, INT32_MAX + 1, (1 << 64) - 1):
            self.reject(DEP + str(bad), ring_dep_pool=bad)

    def test_scalar_zero_rejected_none_unset(self):
        self.reject(TW + "0", ring_task_window=0)
        self.reject(HEAP + "0", ring_heap=0)
        self.reject(DEP + "0", ring_dep_pool=0)
        cfg = RunConfig(ring_task_window=None, ring_heap=None, ring_dep_pool=None)
        self.assertEqual(cfg.to_wire(), {})

    def test_wrong_types_rendered_as_the_daemon_does(self):
        self.reject(HEAP + "true", ring_heap=True)
        self.reject(HEAP + "false", ring_heap=False)
        self.reject(TW + "true", ring_task_window=True)
        self.reject(DEP + "false", ring_dep_pool=False)
        self.reject(HEAP + "1.5", ring_heap=1.5)
        self.reject(HEAP + "2048.0", ring_heap=2048.0)
        self.reject(TW + "0.1", ring_task_window=0.1)
        self.reject(HEAP + "1e+16", ring_heap=1e16)
        self.reject(HEAP + "inf", ring_heap=float("inf"))
        self.reject(HEAP + '"1M"', ring_heap="1M")
        self.reject(DEP + '"16384"', ring_dep_pool="16384")
        self.reject(HEAP + "-5", ring_heap=-5)
        self.reject(DEP + "a map of 0", ring_dep_pool={})
        self.reject(DEP + "a bin of 1 bytes", ring_dep_pool=b"\x10")

    def test_strings_are_quoted_escaped_and_cut(self):
        self.reject(HEAP + '"a\\"\\x0a1"', ring_heap='a"\n1')
        with self.assertRaises(ValueError) as cm:
            RunConfig(ring_heap="x" * 250)
        text = str(cm.exception)
        self.assertTrue(text.startswith(HEAP + '"xxxx'), text)
        self.assertTrue(text.endswith('..."'), text)
        self.assertLess(len(text), 200)

    def test_list_per_ring(self):
        cfg = RunConfig(ring_task_window=[256, 128, 64, 4], ring_heap=[536870912, 0, 0, 0],
                        ring_dep_pool=[0, 7, 0, INT32_MAX])
        self.assertEqual(cfg.to_wire(), {"ring_task_window": [256, 128, 64, 4],
                                         "ring_heap": [536870912, 0, 0, 0],
                                         "ring_dep_pool": [0, 7, 0, INT32_MAX]})
        # all zeros: valid, sets nothing at this level, and is still sent as given
        self.assertEqual(RunConfig(ring_heap=[0, 0, 0, 0]).to_wire(), {"ring_heap": [0, 0, 0, 0]})

    def test_tuples_become_lists(self):
        cfg = RunConfig(ring_heap=(1024, 0, 0, 2048))
        self.assertIsInstance(cfg.ring_heap, list)
        self.assertEqual(cfg.to_wire()["ring_heap"], [1024, 0, 0, 2048])

    def test_list_copied_from_caller(self):
        mine = [1024, 0, 0, 0]
        cfg = RunConfig(ring_heap=mine)
        mine[0] = 1000
        self.assertEqual(cfg.to_wire()["ring_heap"], [1024, 0, 0, 0])

    def test_list_length(self):
        for n in (0, 1, 2, 3, 5):
            self.reject("ring_heap must have exactly 4 entries (one per scope-depth ring), got %d"
                        % n, ring_heap=[1024] * n)
        self.reject("ring_task_window must have exactly 4 entries (one per scope-depth ring), "
                    "got 0", ring_task_window=())

    def test_list_bad_entries(self):
        self.reject(HEAP_ENTRY + "1000", ring_heap=[1024, 1000, 0, 0])
        self.reject(TW_ENTRY + "2147483648", ring_task_window=[0, 0, 0, 1 << 31])
        self.reject(DEP_ENTRY + "2147483648", ring_dep_pool=[0, 1 << 31, 0, 0])
        # False must not pose as 0, nor True as 1
        self.reject(HEAP_ENTRY + "false", ring_heap=[False, 0, 0, 0])
        self.reject(HEAP_ENTRY + "true", ring_heap=[1024, True, 0, 0])
        self.reject(HEAP_ENTRY + "1024.0", ring_heap=[0, 0, 1024.0, 0])
        self.reject(HEAP_ENTRY + '"1M"', ring_heap=[0, 0, 0, "1M"])
        self.reject(HEAP_ENTRY + "-1024", ring_heap=[-1024, 0, 0, 0])
        self.reject(HEAP_ENTRY + "nil", ring_heap=[None, 0, 0, 0])
        self.reject(HEAP_ENTRY + "an array of 1", ring_heap=[[1024], 0, 0, 0])

    def test_fields_validated_in_order(self):
        # like PyPTO: ring_task_window first
        self.reject(TW + "3", ring_task_window=3, ring_heap=1000, ring_dep_pool=2)
        self.reject(HEAP + "1000", ring_heap=1000, ring_dep_pool=2)

    def test_assignment_validates(self):
        cfg = RunConfig()
        with self.assertRaises(ValueError) as cm:
            cfg.ring_heap = 1000
        self.assertEqual(str(cm.exception), HEAP + "1000")
        self.assertIsNone(cfg.ring_heap)
        cfg.ring_heap = (2048, 0, 0, 0)
        self.assertEqual(cfg.ring_heap, [2048, 0, 0, 0])

    def test_in_place_change_caught_before_sending(self):
        cfg = RunConfig(ring_heap=[1024, 0, 0, 0])
        cfg.ring_heap[1] = 1000
        with self.assertRaises(ValueError) as cm:
            cfg.to_wire()
        self.assertEqual(str(cm.exception), HEAP_ENTRY + "1000")

    def test_no_unknown_keyword(self):
        with self.assertRaises(TypeError):
            RunConfig(ring_heapp=1024)  # a typo must not pass silently


class OtherFields(unittest.TestCase):
    def test_aicpu_thread_num(self):
        self.assertEqual(RunConfig(aicpu_thread_num=4).to_wire(), {"aicpu_thread_num": 4})
        self.assertEqual(RunConfig(aicpu_thread_num=0).to_wire(), {})
        for bad, shown in ((1, "1"), (17, "17"), (True, "true"), (2.5, "2.5"), ("4", '"4"')):
            with self.assertRaises(ValueError) as cm:
                RunConfig(aicpu_thread_num=bad)
            self.assertEqual(str(cm.exception),
                             "aicpu_thread_num must be an integer in [2, 16] (0 or nil to leave "
                             "it unset), got %s." % shown)

    def test_enable_swimlane(self):
        for level in range(5):
            self.assertEqual(RunConfig(enable_swimlane=level).to_wire(), {"enable_swimlane": level})
        # PyPTO reads a bool as a level
        self.assertEqual(RunConfig(enable_swimlane=True).enable_swimlane, 4)
        self.assertEqual(RunConfig(enable_swimlane=False).enable_swimlane, 0)
        for bad, shown in ((5, "5"), (-1, "-1"), (1.0, "1.0")):
            with self.assertRaises(ValueError) as cm:
                RunConfig(enable_swimlane=bad)
            self.assertEqual(str(cm.exception),
                             "enable_swimlane must be an integer in [0, 4], got %s." % shown)

    def test_bool_flags(self):
        cfg = RunConfig(enable_scope_stats=True, enable_dep_gen=False)
        self.assertEqual(cfg.to_wire(), {"enable_scope_stats": True, "enable_dep_gen": False})
        for field in ("enable_scope_stats", "enable_dep_gen"):
            with self.assertRaises(ValueError) as cm:
                RunConfig(**{field: 1})
            self.assertEqual(str(cm.exception), "%s must be a boolean, got 1." % field)


class Wire(unittest.TestCase):
    def test_only_set_fields(self):
        self.assertEqual(RunConfig().to_wire(), {})
        self.assertTrue(RunConfig().is_empty())
        cfg = RunConfig(ring_heap=512 << 20, enable_dep_gen=True)
        self.assertEqual(cfg.to_wire(), {"ring_heap": 512 << 20, "enable_dep_gen": True})
        self.assertFalse(cfg.is_empty())

    def test_full(self):
        cfg = RunConfig(ring_task_window=[256, 128, 64, 0], ring_heap=1 << 20, ring_dep_pool=1024,
                        aicpu_thread_num=4, enable_swimlane=2, enable_scope_stats=False,
                        enable_dep_gen=True)
        self.assertEqual(cfg.to_wire(), {
            "ring_task_window": [256, 128, 64, 0], "ring_heap": 1 << 20, "ring_dep_pool": 1024,
            "aicpu_thread_num": 4, "enable_swimlane": 2, "enable_scope_stats": False,
            "enable_dep_gen": True})

    def test_extra_passes_through_unchanged(self):
        cfg = RunConfig(ring_heap=1024, extra={"future_knob": "new", "nested": {"a": [1, 2]},
                                               "blob": b"\x00\x01"})
        wire = cfg.to_wire()
        self.assertEqual(wire, {"ring_heap": 1024, "future_knob": "new",
                                "nested": {"a": [1, 2]}, "blob": b"\x00\x01"})
        # known keys first, then extra in the order given
        self.assertEqual(list(wire), ["ring_heap", "future_knob", "nested", "blob"])

    def test_extra_rules(self):
        with self.assertRaises(ValueError) as cm:
            RunConfig(extra={"ring_heap": 1000})
        self.assertEqual(str(cm.exception), "extra key 'ring_heap' is a RunConfig field; pass it "
                         "as RunConfig(ring_heap=...) so that it is validated.")
        with self.assertRaises(ValueError) as cm:
            RunConfig(extra={"knob": object()})
        self.assertIn("extra['knob'] cannot be sent as msgpack", str(cm.exception))
        with self.assertRaises(ValueError):
            RunConfig(extra={1: 2})
        with self.assertRaises(ValueError):
            RunConfig(extra=[("a", 1)])

    def test_from_dict_splits_known_and_unknown(self):
        cfg = RunConfig.from_dict({"ring_heap": (2048, 0, 0, 0), "future_knob": 7,
                                   "enable_dep_gen": True})
        self.assertEqual(cfg.ring_heap, [2048, 0, 0, 0])
        self.assertEqual(cfg.extra, {"future_knob": 7})
        self.assertEqual(cfg.to_wire(), {"ring_heap": [2048, 0, 0, 0], "enable_dep_gen": True,
                                         "future_knob": 7})
        with self.assertRaises(ValueError) as cm:
            RunConfig.from_dict({"ring_heap": 1000})
        self.assertEqual(str(cm.exception), HEAP + "1000")
        self.assertIs(as_config(cfg), cfg)
        self.assertIsNone(as_config(None))
        self.assertEqual(as_config({"ring_dep_pool": 8}).to_wire(), {"ring_dep_pool": 8})

    def test_replace_and_equality(self):
        base = RunConfig(ring_task_window=64, extra={"k": 1})
        other = base.replace(ring_heap=[0, 2048, 0, 0])
        self.assertEqual(other.to_wire(), {"ring_task_window": 64, "ring_heap": [0, 2048, 0, 0],
                                           "k": 1})
        self.assertEqual(base.to_wire(), {"ring_task_window": 64, "k": 1})
        self.assertEqual(base, RunConfig(ring_task_window=64, extra={"k": 1}))
        self.assertNotEqual(base, other)
        with self.assertRaises(ValueError):
            base.replace(ring_task_window=3)

    def test_repr(self):
        self.assertEqual(repr(RunConfig(ring_heap=[1024, 0, 0, 0], extra={"k": 1})),
                         "RunConfig(ring_heap=[1024, 0, 0, 0], extra={'k': 1})")


if __name__ == "__main__":
    unittest.main(verbosity=2)
