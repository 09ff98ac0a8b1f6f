#!/bin/bash
# SPDX-License-Identifier: Apache-2.0
# replay_check.sh FUZZER INPUT...: show that a harness which keeps one
# daemon (or server) across inputs resets it between them, so that a
# finding replays from its input alone, as libFuzzer replays it.
#
# Runs each input in a process of its own, then all of them twice in one
# process, with PTOD_FUZZ_OUTCOMES set (fuzz_loop.h: the harness writes a
# line per input saying what it got), and fails unless the three sequences
# of lines are the same.  -detect_leaks=0: libFuzzer runs an input again
# when its mallocs and frees differ, which would double lines (the fuzz
# ctests check leaks).
set -euo pipefail
fuzzer=$1
shift
[[ $# -gt 0 ]] || { echo "replay_check.sh: no inputs" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for input in "$@"; do
  PTOD_FUZZ_OUTCOMES=$work/alone "$fuzzer" -detect_leaks=0 "$input" >"$work/log" 2>&1 ||
    { cat "$work/log" >&2; echo "replay_check.sh: $input failed alone" >&2; exit 1; }
done
PTOD_FUZZ_OUTCOMES=$work/together "$fuzzer" -detect_leaks=0 "$@" "$@" >"$work/log" 2>&1 ||
  { cat "$work/log" >&2; echo "replay_check.sh: the inputs failed run together" >&2; exit 1; }

cat "$work/alone" "$work/alone" >"$work/expected"
if ! diff "$work/expected" "$work/together" >"$work/diff"; then
  echo "replay_check.sh: $# inputs: what an input got alone differs from what it got after" \
    "others in one process (expected: each alone, twice; got: together, twice):" >&2
  head -40 "$work/diff" >&2
  exit 1
fi
echo "replay_check.sh: $# inputs, alone and twice in one process: the same outcomes"
