#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""scripts/bench-report writes BENCHMARKS.md from one run's figures only:
every figure of the run lands in a table, a target whose figure is not in
the run reads "missing" (never a number of another run), and the verdicts
follow the targets' limits."""

import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
REPORT = os.path.join(ROOT, "scripts", "bench-report")
SAMPLE = os.path.join(HERE, "figures_sample.txt")


def run_report(path):
    return subprocess.run([sys.executable, REPORT, path], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True)


def table_rows(text, heading):
    """The rows (lists of cells) of the table under `## heading`."""
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(heading), text, re.M | re.S)
    assert m, "no section %r" % heading
    rows = []
    for line in m.group(1).splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)[1:-1]]
            rows.append(cells)
    return rows[1:]  # without the header row


def target_row(text, key):
    for row in table_rows(text, "Targets"):
        if row[2] == "`%s`" % key:
            return row
    raise AssertionError("no target row for %s" % key)


class BenchReport(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        p = run_report(SAMPLE)
        assert p.returncode == 0, p.stderr
        cls.text = p.stdout
        with open(SAMPLE) as f:
            cls.sample = f.read()

    def test_header_names_the_run(self):
        self.assertIn("- commit: `0123456789abcdef0123456789abcdef01234567 (dirty: uncommitted "
                      "changes to tracked files)`", self.text)
        self.assertIn("- date: 2026-12-01 23:50 UTC", self.text)
        self.assertIn("- command: `scripts/bench --reps 1 latency instructions isolation`",
                      self.text)
        self.assertIn("- note: sample figures for the generator's test", self.text)
        # the first MACHINE line of the run, whole
        self.assertIn('- machine: `cpus=4 model="Sample CPU" hypervisor=none '
                      'load="0.50 0.40 0.30"`', self.text)
        self.assertIn("latency 0.50 0.40 0.30; instructions 0.60 0.40 0.30; "
                      "isolation 0.70 0.40 0.30", self.text)

    def test_every_figure_lands_in_its_benchmarks_table(self):
        sections = {"latency": "RPC latency (bench_latency)",
                    "instructions": "Instructions per dispatch (bench_instructions)",
                    "isolation": "Isolation (bench/isolation.py)",
                    "newbench": "newbench"}
        figures = [l.split() for l in self.sample.splitlines() if l.startswith("FIGURE ")]
        self.assertEqual(len(figures), 9)
        for _, key, value, unit, *_ in figures:
            rows = table_rows(self.text, sections[key.split(".")[0]])
            match = [r for r in rows if r[0] == "`%s`" % key]
            self.assertEqual(len(match), 1, key)
            self.assertEqual(match[0][1:3], [value, unit], key)
        # the figure's own text, with its "|" kept inside the cell
        rows = table_rows(self.text, sections["latency"])
        self.assertIn(["`latency.pingpong_spin.p50`", "4.12", "us",
                       "spinning ping-pong \\| both ends"], rows)

    def test_a_benchmark_without_figures_says_it_did_not_run(self):
        m = re.search(r"^## Throughput \(bench_throughput\)\n(.*?)(?=^## )", self.text, re.M | re.S)
        self.assertIn("_Not run: no figures of this benchmark in this run._", m.group(1))
        self.assertNotRegex(self.text, r"(?m)^\| `throughput\.")

    def test_a_missing_target_figure_reads_missing(self):
        row = target_row(self.text, "throughput.client_vs_raw.c4")
        self.assertEqual(row[3], "missing")
        self.assertEqual(row[5], "missing")
        row = target_row(self.text, "datapath.65536K.python_vs_client")
        self.assertEqual((row[3], row[5]), ("missing", "missing"))

    def test_verdicts_follow_the_limits(self):
        self.assertEqual(target_row(self.text, "latency.spin50.idle20_vs_block.p50")[3:],
                         ["2", "<= 2", "met", ""])  # on the limit
        self.assertEqual(target_row(self.text, "latency.spin50.client_vs_spin.p50")[3:6],
                         ["3.5", "<= 3", "missed"])
        self.assertEqual(target_row(self.text, "instructions.noop.per_dispatch")[3:],
                         ["14999.5", "<= 15000", "met", ""])
        self.assertEqual(target_row(self.text, "latency.spin50.client_vs_zmq_b2b.p50")[3:6],
                         ["nan", "<= 0.2", "missed"])

    def test_a_missed_target_shows_the_floor_under_it(self):
        # The same run's figures that measure what no change of ptod can
        # go below; "missing" where the run has none, never a number.
        self.assertEqual(target_row(self.text, "latency.spin50.client_vs_spin.p50")[6],
                         "`latency.pingpong_block_vs_spin.p50` 2.8; "
                         "`latency.spin50.client_vs_block.p50` missing")

    def test_isolation_targets_come_with_their_limits(self):
        self.assertEqual(target_row(self.text, "isolation.pipelined_pings.rss")[3:],
                         ["40960 KiB", "<= 32768 KiB", "missed", ""])
        self.assertEqual(target_row(self.text, "isolation.pipelined_pings.honest_p99")[3:],
                         ["3.2 ms", "<= 20 ms", "met", ""])

    def test_a_run_without_isolation_shows_its_targets_missing(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            f.write("".join(l + "\n" for l in self.sample.splitlines()
                            if not l.startswith("FIGURE isolation.")))
            f.flush()
            p = run_report(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(target_row(p.stdout, "isolation.*")[3:], ["missing", "", "missing", ""])

    def test_an_empty_run_has_every_target_missing(self):
        with tempfile.NamedTemporaryFile("w", suffix=".txt") as f:
            p = run_report(f.name)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("- commit: `unknown`", p.stdout)
        rows = table_rows(p.stdout, "Targets")
        self.assertGreaterEqual(len(rows), 10)
        self.assertEqual({r[5] for r in rows}, {"missing"})
        self.assertNotRegex(p.stdout, r"^\| `[a-z]", "no figure row in an empty run")

    def test_an_unreadable_file_is_an_error(self):
        p = run_report(os.path.join(HERE, "no-such-figures.txt"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no-such-figures.txt", p.stderr)


if __name__ == "__main__":
    unittest.main()
