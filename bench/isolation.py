#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench/isolation: issue 18's targets, attack by attack, from one run.

    bench/isolation.py [--scale N] [--build DIR] [MODULE.py ...]

Runs every tests/adversarial/test_*.py (or the modules named) against the
plain build in DIR (default build/bench, which scripts/bench builds) with
PTOD_ADVERSARY_SCALE=N (default 8; the tests themselves run at 1), collects
the `FIGURES <test>: attack=NAME key=value ...` lines each attack prints
(tests/adversarial/adversary.py, report()), and prints, per attack, each
target the figures speak to with "met" or "missed":

  rss         daemon RSS growth <= 1.25 x the bytes counted for the attacker
              + 16 MiB                      (rss_growth_kib, counted_kib)
  all clients daemon RSS growth <= 1.25 x clients_memory + 64 MiB
                                            (rss_growth_kib, clients_memory_kib)
  rss after   RSS 5 s after the attacker left within 32 MiB of its rest
                                            (rss_after_kib, rss_rest_kib)
  honest      an honest client's pings answered, p99 <= 20 ms
                                            (honest_errors, honest_p99_ms)
  cpu         daemon CPU <= 5 % (fd exhaustion)               (cpu_pct)
  log         <= 1 log line per second per cause  (log_lines_per_s)
  log burst   client-caused lines (all clients, one budget) <= the
              limiter's burst per window started during the flood
              (log_lines, log_windows, log_burst: 50 per 10 s, as
              journald's RateLimitBurst/RateLimitIntervalSec do it)

A target whose figures an attack does not report is left out of its table;
an attack that reports none of them is listed as such.  A module that fails
at this scale is reported with its exit status and last lines (its figures,
if any, still count).  Also prints a MACHINE line first and one FIGURE line
per target (`FIGURE isolation.ATTACK.TARGET value unit | limit L unit;
met`) and one per module (`isolation.MODULE.exit_status`: a module that
fails at the scale misses its target), which scripts/bench files with the
other benchmarks' figures and scripts/bench-report puts in its targets
table.  Never run by the
tests: the modules themselves are the tests (at scale 1).
"""

import argparse
import glob
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MIB = 1024  # in KiB

FIGURES = re.compile(r"^FIGURES (\S+): (.*)$")


def parse_figures(text):
    """[(test, {key: value})] from a module's output; values are floats
    where they read as numbers."""
    rows = []
    for line in text.splitlines():
        m = FIGURES.match(line.strip())
        if not m:
            continue
        values = {}
        for kv in m.group(2).split():
            key, _, value = kv.partition("=")
            try:
                values[key] = float(value)
            except ValueError:
                values[key] = value
        rows.append((m.group(1), values))
    return rows


def targets(f):
    """[(target, figure, unit, limit, met)] for the figures f of one attack."""
    out = []

    def has(*keys):
        return all(isinstance(f.get(k), float) for k in keys)

    if has("rss_growth_kib", "counted_kib"):
        limit = 1.25 * f["counted_kib"] + 16 * MIB
        out.append(("rss", f["rss_growth_kib"], "KiB", limit, f["rss_growth_kib"] <= limit))
    if has("rss_growth_kib", "clients_memory_kib"):
        limit = 1.25 * f["clients_memory_kib"] + 64 * MIB
        out.append(("all_clients", f["rss_growth_kib"], "KiB", limit, f["rss_growth_kib"] <= limit))
    if has("rss_after_kib", "rss_rest_kib"):
        above = f["rss_after_kib"] - f["rss_rest_kib"]
        out.append(("rss_after", above, "KiB", 32 * MIB, above <= 32 * MIB))
    if has("honest_errors"):
        out.append(("honest_answered", f["honest_errors"], "errors", 0, f["honest_errors"] == 0))
    if has("honest_p99_ms"):
        p99 = f["honest_p99_ms"]
        out.append(("honest_p99", p99, "ms", 20, p99 == p99 and p99 <= 20))  # NaN: none answered
    if has("cpu_pct"):
        out.append(("cpu", f["cpu_pct"], "%", 5, f["cpu_pct"] <= 5))
    if has("log_lines_per_s"):
        out.append(("log", f["log_lines_per_s"], "lines/s", 1, f["log_lines_per_s"] <= 1))
    if has("log_lines", "log_windows", "log_burst"):
        limit = f["log_burst"] * f["log_windows"]
        out.append(("log_burst", f["log_lines"], "lines", limit, f["log_lines"] <= limit))
    return out


def run_module(path, build, scale):
    """(exit status, stdout, stderr) of one adversarial module at `scale`:
    the FIGURES lines are on stdout, unittest's report on stderr."""
    env = dict(os.environ, PTOD_BINARY_DIR=build, PTOD_ADVERSARY_SCALE=str(scale),
               PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.run(["/usr/bin/python3", "-B", path], env=env, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, errors="replace")
    return p.returncode, p.stdout, p.stderr


def print_attack(test, f):
    attack = f.get("attack", test)
    rows = targets(f)
    print("\n%s  (%s)" % (attack, test))
    if not rows:
        print("  reports none of the targets' figures: %s" %
              " ".join("%s=%s" % kv for kv in f.items() if kv[0] != "attack"))
        return 0
    print("  %-16s %14s %14s  %s" % ("target", "figure", "limit", "result"))
    missed = 0
    for name, value, unit, limit, met in rows:
        print("  %-16s %14s %14s  %s" % (name, "%.6g %s" % (value, unit), "%.6g %s" % (limit, unit),
                                         "met" if met else "missed"))
        missed += not met
    for name, value, unit, limit, met in rows:
        print("FIGURE isolation.%s.%s %.6g %s | limit %.6g %s; %s" % (
            attack, name, value, unit, limit, unit, "met" if met else "missed"))
    return missed


def machine_line(build):
    """The MACHINE line every benchmark prints (bench/isolation_machine.c)."""
    exe = os.path.join(build, "bench", "isolation_machine")
    if not os.path.exists(exe):
        return "MACHINE unknown (build %s with -DPTOD_BENCH=ON for it)" % build
    return subprocess.run([exe], stdout=subprocess.PIPE, text=True).stdout.rstrip()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--scale", type=int, default=int(os.environ.get("PTOD_ADVERSARY_SCALE", "8")))
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "bench"))
    ap.add_argument("modules", nargs="*")
    args = ap.parse_args()
    build = os.path.abspath(args.build)
    if not os.path.exists(os.path.join(build, "daemon", "ptod")):
        sys.exit("bench/isolation: no daemon at %s/daemon/ptod; build it first "
                 "(scripts/bench isolation does)." % build)
    modules = args.modules or sorted(glob.glob(os.path.join(ROOT, "tests", "adversarial", "test_*.py")))
    print(machine_line(build))
    print("%d adversarial modules at PTOD_ADVERSARY_SCALE=%d against %s"
          % (len(modules), args.scale, build), flush=True)
    attacks = missed = failed = 0
    for path in modules:
        rc, out, err = run_module(path, build, args.scale)
        rows = parse_figures(out)
        name = os.path.basename(path)
        print("\n=== %s: exit %d, %d attacks" % (name, rc, len(rows)), flush=True)
        if rc != 0:
            failed += 1
            print("  the module failed at this scale; its last lines:")
            for line in err.rstrip().splitlines()[-8:]:
                print("  | " + line)
        for test, f in rows:
            attacks += 1
            missed += print_attack(test, f)
        # A module that fails has attacks without figures: the report shows it.
        print("FIGURE isolation.%s.exit_status %d status | limit 0 status; %s"
              % (name[:-3], rc, "met" if rc == 0 else "missed"))
        sys.stdout.flush()
    print("\n== %d attacks, %d targets missed, %d modules failed" % (attacks, missed, failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
