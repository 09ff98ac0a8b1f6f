"""The README's first dispatch, run as written against a real daemon, so the
example a newcomer pastes keeps working and keeps printing what the README
says it prints."""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "README.md")


def first_dispatch_section():
    with open(README) as f:
        text = f.read()
    m = re.search(r"^## Your first dispatch\n(.*?)^## ", text, re.S | re.M)
    assert m, "README.md has no 'Your first dispatch' section"
    return m.group(1)


class Readme(harness.DaemonTest):
    def test_first_dispatch(self):
        section = first_dispatch_section()
        script = re.search(r"^```sh\n/usr/bin/python3 - <<'EOF'\n(.*?)^EOF\n```", section, re.S | re.M)
        self.assertIsNotNone(script, "no python heredoc in the section")
        printed = re.search(r"^It prints\n\n```\n(.*?)```", section, re.S | re.M)
        self.assertIsNotNone(printed, "no 'It prints' block in the section")

        # The snippet finds the daemon on the built-in path: as a user
        # other than root that is $XDG_RUNTIME_DIR/ptod/ptod0.sock.
        xdg = tempfile.mkdtemp(prefix="ptod-xdg-")
        self.addCleanup(shutil.rmtree, xdg, True)
        os.makedirs(os.path.join(xdg, "ptod"))
        self.daemon(socket_path=os.path.join(xdg, "ptod", "ptod0.sock"),
                     config={"ring": {"heap": "2M"}})
        prelude = "import os\nos.geteuid = lambda: 4242\n"
        env = dict(os.environ, XDG_RUNTIME_DIR=xdg)
        out = subprocess.run([sys.executable, "-c", prelude + script.group(1)], env=env,
                             capture_output=True, text=True, timeout=120)
        self.assertEqual(out.returncode, 0, out.stderr)
        got = out.stdout.splitlines()
        want = printed.group(1).splitlines()
        self.assertEqual(len(got), len(want), out.stdout)
        self.assertEqual(got[0], want[0])
        # The sizing line: the README shows the built-in defaults; this
        # daemon runs a small [ring] (source "config") whose heap is not the
        # request's, so the dispatch misses the prewarmed arena as it does there.
        self.assertRegex(want[1], r"^ring_heap \[\d+, 1048576, \d+, \d+\] \['default', 'request', 'default', 'default'\]$")
        self.assertRegex(got[1], r"^ring_heap \[2097152, 1048576, 2097152, 2097152\] \['config', 'request', 'config', 'config'\]$")
        self.assertTrue(got[2].startswith("arena     {'hit': False, 'build_us': "), got[2])


if __name__ == "__main__":
    harness.main()
