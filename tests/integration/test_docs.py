# SPDX-License-Identifier: Apache-2.0
"""The docs that describe what this build ships: docs/runtime.md's argument
reference of every shipped program equals what the daemon's `programs`
method says of it (issue 12, item 8), and the docs name the programs
directory where an install really puts it."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

DOCS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs")


def read(name):
    with open(os.path.join(DOCS, name)) as f:
        return f.read()


class Docs(harness.DaemonTest):
    def test_program_reference_matches_the_daemon(self):
        text = read("runtime.md")
        section = text[text.index("## 8. The shipped programs"):]
        programs = self.daemon().call("programs")
        names = [p["name"] for p in programs]
        self.assertEqual(sorted(re.findall(r"^### `(\w+)`$", section, re.M)), sorted(names))
        for p in programs:
            part = section[section.index("### `%s`" % p["name"]):]
            nxt = part.find("\n### ", 1)
            part = part if nxt < 0 else part[:nxt]
            self.assertIn("\n%s\n" % p["description"], part, p["name"])
            rows = re.findall(r"^\| `(\w+)` \| (\w+) \| (yes|no) \| (.*) \|$", part, re.M)
            want = [(a["name"], a["kind"], "yes" if a["optional"] else "no",
                     a["doc"].replace("|", "\\|")) for a in p["args"]]
            self.assertEqual(rows, want, p["name"])

    def test_programs_directory_is_named_as_installed(self):
        for name in ("configuration.md", os.path.join("man", "ptod.8"), "operations.md"):
            text = read(name)
            self.assertTrue("x86_64-linux-gnu/ptod/programs" in text.replace("\\-", "-"),
                            "%s does not name the installed programs directory" % name)
            self.assertNotRegex(text, r"(?<![\w/])lib/ptod/programs(?!\w)(?! for)", name)


if __name__ == "__main__":
    harness.main()
