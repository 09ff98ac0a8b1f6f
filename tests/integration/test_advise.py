# SPDX-License-Identifier: Apache-2.0
"""Sizing the rings from what ran, through ptoctl as an operator would:
dispatch --dfx-dir and dfx ring-occupancy (the picture of a deadlock),
advise (at or above every peak, per program, warnings for several
sizings and a missed prewarm, each logged once) and advise --apply (a
config the next daemon prewarms and passes with, and that fails with any
used ring's heap halved)."""
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import harness
from harness import f32, noop

PTOCTL = os.path.join(harness.BINARY_DIR, "client", "ptoctl")
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
CHROMIUM = shutil.which("chromium")
SVG = "{http://www.w3.org/2000/svg}"
S, H, D = 32, 4, 4  # ring 0 holds H score tensors of S*S*4 = 4 KiB: 16 KiB


def prefill_words(tmp):
    n = S * H * D
    words = []
    for name in "qkv":
        path = os.path.join(tmp, name + ".bin")
        with open(path, "wb") as f:
            f.write(f32([0.25] * n))
        words.append("@" + path)
    return words + ["buf:kv", "out:%d" % (n * 4), str(S), str(H), str(D)]


class Advise(harness.DaemonTest):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ptod-advise-")
        self.addCleanup(shutil.rmtree, self.tmp, True)

    def ptoctl(self, d, *words, expect=0):
        p = subprocess.run([PTOCTL, "-s", d.socket] + list(words), capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, expect, p.stdout + p.stderr)
        return p

    def test_deadlock_picture_advice_and_apply(self):
        d = self.daemon()
        words = prefill_words(self.tmp)
        self.ptoctl(d, "buffer", "alloc", "kv", str(2 * S * H * D * 4))
        # A prefill too big for ring 0's 8 KiB: the artefacts of the failure.
        fail = os.path.join(self.tmp, "fail")
        p = self.ptoctl(d, "--ring-heap", "8K,0,0,0", "--dfx-dir", fail, "dispatch",
                        "attention_prefill", *words, expect=1)
        self.assertIn("HEAP_RING_DEADLOCK", p.stderr)
        self.assertEqual(sorted(os.listdir(fail)),
                         ["dep_graph.dot", "scope_stats.jsonl", "swimlane.json"])
        svg = os.path.join(self.tmp, "rings.svg")
        self.ptoctl(d, "dfx", "ring-occupancy", os.path.join(fail, "swimlane.json"), "-o", svg)
        root = ET.parse(svg).getroot()
        series = [(e.get("data-ring"), e.get("data-field")) for e in root.iter(SVG + "polyline")
                  if e.get("class") == "series"]
        self.assertEqual(series, [("0", "heap"), ("0", "task_window")])  # one per ring and field
        panels = {(g.get("data-ring"), g.get("data-field")): g for g in root.iter(SVG + "g")}
        heap_text = " ".join(t.text for t in panels[("0", "heap")].iter(SVG + "text"))
        self.assertIn("RAN OUT", heap_text)
        self.assertIn("HEAP_RING_DEADLOCK on ring 0", heap_text)
        self.assertIn("8 KiB in use + 4 KiB asked > 8 KiB", heap_text)
        self.assertEqual(len(list(panels[("0", "heap")].iter(SVG + "circle"))), 1)
        self.assertEqual(len(list(panels[("0", "task_window")].iter(SVG + "circle"))), 0)
        # A level-1 trace has no counters; a file that is not JSON is not a trace.
        lvl1 = os.path.join(self.tmp, "lvl1")
        self.ptoctl(d, "--config-set", "enable_swimlane=1", "--dfx-dir", lvl1, "dispatch", "noop",
                    "int:2")
        p = self.ptoctl(d, "dfx", "ring-occupancy", os.path.join(lvl1, "swimlane.json"), "-o",
                        svg + ".x", expect=2)
        self.assertIn("no ring counters; dispatch with enable_swimlane = 2", p.stderr)
        p = self.ptoctl(d, "dfx", "ring-occupancy", os.path.join(fail, "dep_graph.dot"), "-o",
                        svg + ".x", expect=2)
        self.assertIn("is not valid JSON: expected a JSON value at byte 0.", p.stderr)
        if CHROMIUM:  # it renders (the picture itself is checked by eye, see docs/operations.md)
            png = os.path.join(self.tmp, "rings.png")
            subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                            "--screenshot=" + png, "--window-size=960,400", "file://" + svg],
                           capture_output=True, timeout=120)
            with open(png, "rb") as f:
                self.assertEqual(f.read(8), b"\x89PNG\r\n\x1a\n")

        # The same prefill with the default 1 MiB: the advisor's sizing.
        self.ptoctl(d, "dispatch", "attention_prefill", *words)
        self.ptoctl(d, "dispatch", "noop", "int:5", "int:2")
        with d.client() as c:
            a = c.call("advise")
        self.assertEqual(a["observed"]["heap"][0], 16384)
        self.assertEqual(a["recommended"]["ring_heap"], [16384, 1024, 1024, 1024])  # at, not above
        self.assertEqual(a["recommended"]["ring_task_window"][0], 16)  # 3H+2 = 14 live: window 16
        self.assertEqual(a["recommended"]["ring_task_window"][2], 8)   # 5 live: window 8
        progs = {p["program"]: p for p in a["programs"]}
        self.assertEqual(progs["attention_prefill"]["dispatches"], 1)
        self.assertEqual(progs["attention_prefill"]["recommended"]["ring_heap"][0], 16384)
        self.assertEqual(progs["noop"]["recommended"]["ring_task_window"], [4, 4, 8, 4])
        self.assertEqual(len(a["sizings"]), 1)

        conf = os.path.join(self.tmp, "ptod.conf")
        shutil.copy(os.path.join(ROOT, "systemd", "ptod.conf"), conf)
        p = self.ptoctl(d, "advise", "--apply", conf)
        self.assertIn("+heap = 16K,1K,1K,1K", p.stdout)     # the diff, twice: [ring] and [prewarm]
        self.assertEqual(p.stdout.count("+task_window = 16,4,8,4"), 2)
        self.assertTrue(os.path.exists(conf + ".orig"))
        self.assertIn("Review the diff above", p.stderr)
        # Applying it again changes nothing.
        p = self.ptoctl(d, "advise", "--apply", conf)
        self.assertIn("nothing changed", p.stderr)

        # A daemon on the applied file: prewarmed right, the prefill passes.
        with open(conf) as f:
            applied = [line for line in f if not line.startswith("#")]
        ring = [line.split("=")[1].strip() for line in applied if "=" in line][:3]
        d2 = self.daemon(config={"ring": {"task_window": ring[0], "heap": ring[1],
                                          "dep_pool": ring[2]},
                                 "prewarm": {"task_window": ring[0], "heap": ring[1],
                                             "dep_pool": ring[2]}})
        self.ptoctl(d2, "buffer", "alloc", "kv", str(2 * S * H * D * 4))
        p = self.ptoctl(d2, "--json", "dispatch", "attention_prefill", *words)
        self.assertIn('"hit": true', p.stdout)
        self.ptoctl(d2, "dispatch", "noop", "int:5", "int:2")
        # Halve the heap of the ring the prefill uses: it no longer fits.
        p = self.ptoctl(d2, "--ring-heap", "8K,0,0,0", "dispatch", "attention_prefill", *words,
                        expect=1)
        self.assertIn("HEAP_RING_DEADLOCK", p.stderr)

    def test_several_sizings_are_warned_once_with_the_fix(self):
        d = self.daemon()
        with d.client() as c:
            for _ in range(3):
                c.call("dispatch", noop(tasks=3))
                c.call("dispatch", noop(tasks=3, config={"ring_task_window": [8, 0, 0, 0]}))
            a = c.call("advise")
        self.assertEqual(len(a["sizings"]), 2)
        self.assertEqual(len(a["warnings"]), 1)
        self.assertIn("2 different ring sizings", a["warnings"][0])
        self.assertIn("5 switches so far", a["warnings"][0])
        self.assertIn("[ring] task_window = 4,4,4,4", a["warnings"][0])
        log = d.read_log()
        self.assertEqual(log.count("Dispatches alternate between 2 ring sizings"), 1, log)
        self.assertIn("set [ring] task_window = 4,4,4,4, heap = 1K,1K,1K,1K, dep_pool = 4,4,4,4",
                      log)

    def test_first_dispatch_missing_the_prewarm_is_logged_once(self):
        d = self.daemon()
        with d.client() as c:
            c.call("dispatch", noop(config={"ring_heap": [0, 65536, 0, 0]}))
            c.call("dispatch", noop(config={"ring_heap": [0, 32768, 0, 0]}))
            a = c.call("advise")
        log = d.read_log()
        self.assertEqual(log.count("missed the prewarmed arena"), 1, log)
        self.assertIn("set [prewarm] task_window = 256,256,256,256, heap = 1M,64K,1M,1M, "
                      "dep_pool = 1024,1024,1024,1024.", log)
        self.assertTrue(any("missed the prewarmed arena" in w for w in a["warnings"]))


if __name__ == "__main__":
    harness.main()
