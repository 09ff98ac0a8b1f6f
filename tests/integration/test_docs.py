# SPDX-License-Identifier: Apache-2.0
"""The docs that describe what this build ships: docs/runtime.md's argument
reference of every shipped program equals what the daemon's `programs`
method says of it (issue 12, item 8), the docs name the programs
directory where an install really puts it, and ptoctl(1) describes every
command of ptoctl's command table (its --help lists them from the table)."""

import os
import re
import subprocess
import sys
import unittest

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


def ptoctl_help_commands():
    """The commands `ptoctl --help` lists: its first line of commands, then
    each command's own lines (those indented by two spaces)."""
    help_text = subprocess.run([os.path.join(harness.BINARY_DIR, "client", "ptoctl"), "--help"],
                               capture_output=True, text=True, check=True).stdout
    start = help_text.index("Commands:\n")
    lines = help_text[start:help_text.index("\n\n", start)].splitlines()[1:]
    names = [n.strip() for n in lines[0].split(" | ")]
    names += [line.split()[0] for line in lines[1:] if re.match(r"^  [a-z]", line)]
    return set(names)


def man_section(text, name):
    part = text[text.index("\n.SH %s\n" % name):]
    return part[:part.index("\n.SH ", 1)]


class PtoctlCommands(unittest.TestCase):
    def test_man_page_describes_every_command(self):
        commands = ptoctl_help_commands()
        self.assertIn("dispatch", commands)
        self.assertIn("cdi", commands)
        page = read(os.path.join("man", "ptoctl.1"))
        # COMMANDS: an item (.TP, .TQ) per command, its first word the name.
        items = re.findall(r"^\.T[PQ]\n\.B[IR]? \"?([a-z]+)", man_section(page, "COMMANDS"), re.M)
        self.assertEqual(set(items), commands)
        # SYNOPSIS: every command named in bold.
        synopsis = set(re.findall(r"^\.B (?:ptoctl )?([a-z]+)", man_section(page, "SYNOPSIS"),
                                  re.M))
        self.assertEqual(synopsis - {"ptoctl"}, commands)


if __name__ == "__main__":
    harness.main()
