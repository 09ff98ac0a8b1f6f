# SPDX-License-Identifier: Apache-2.0
"""Every fenced block of README.md, run as written against a real daemon, so
that what a newcomer pastes keeps working and keeps printing what the README
says it prints.

The blocks run from a scratch directory laid out like the checkout after
`scripts/run` (client/ and examples/ from the source tree, build/run as this
build tree), with PTOD_SOCKET naming the test daemon's socket: the README's
own way to reach a private socket.  A block that cannot run here (it builds
or installs the whole tree) is named in NOT_RUN with the reason; any other
block that the test does not know fails it, so a new block gets a test.
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import harness  # noqa: E402

SOURCE = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
README = os.path.join(SOURCE, "README.md")

# First line of a block -> why the test does not run it.
NOT_RUN = {
    "scripts/run     # install what is missing, build, start ptod on its defaults (sim device 0)":
        "the quick start: it builds and serves in the foreground; CI runs scripts/test itself",
    "scripts/deps --test                # what building and testing need, if missing":
        "builds and installs into /usr/local; test_install.py installs this build with --prefix",
}


def blocks(text):
    """[(section, lang, body)] of every fenced block."""
    out, section = [], ""
    lines = text.splitlines(keepends=True)
    i = 0
    while i < len(lines):
        if lines[i].startswith("## "):
            section = lines[i][3:].strip()
        m = re.match(r"^```(\w*)\n$", lines[i])
        if m:
            j = i + 1
            while not lines[j].startswith("```"):
                j += 1
            out.append((section, m.group(1), "".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


class Readme(harness.DaemonTest):
    def setUp(self):
        with open(README) as f:
            self.text = f.read()
        self.blocks = blocks(self.text)
        self.work = tempfile.mkdtemp(prefix="ptod-readme-")
        self.addCleanup(shutil.rmtree, self.work, True)
        for name in ("client", "examples"):
            os.symlink(os.path.join(SOURCE, name), os.path.join(self.work, name))
        os.makedirs(os.path.join(self.work, "build"))
        os.symlink(os.path.abspath(harness.BINARY_DIR), os.path.join(self.work, "build", "run"))
        self.env = {k: v for k, v in os.environ.items()
                    if not k.startswith("PTO2_RING_") and k not in ("PYTHONPATH", "PTOD_SOCKET")}
        san = harness.sanitizer()
        if san:
            # This build's libptoclient is instrumented: whatever links it must be too.
            shim = os.path.join(self.work, "shim")
            os.makedirs(shim)
            with open(os.path.join(shim, "cc"), "w") as f:
                f.write('#!/bin/sh\nexec %s -fsanitize=%s "$@"\n' % (shutil.which("cc"), san))
            os.chmod(os.path.join(shim, "cc"), 0o755)
            self.env["PATH"] = shim + os.pathsep + self.env["PATH"]

    def serve(self, **kw):
        d = self.daemon(**kw)
        self.env["PTOD_SOCKET"] = d.socket
        return d

    def sh(self, script):
        out = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=self.work,
                             env=self.env, capture_output=True, text=True, timeout=180)
        self.assertEqual(out.returncode, 0, "%s\n--- stdout\n%s--- stderr\n%s"
                         % (script, out.stdout, out.stderr))
        return out.stdout

    def block(self, section, first_line):
        for sec, lang, body in self.blocks:
            if sec == section and body.startswith(first_line):
                return lang, body
        self.fail("README.md's '%s' has no block starting %r" % (section, first_line))

    def test_every_block_is_run_or_excused(self):
        known = ["/usr/bin/python3 - <<'EOF'", "out       (11.0", "build/run/client/ptoctl ",
                 "PYTHONPATH=client/python /usr/bin/python3", "pto_client_t *c;",
                 "cc examples/client/hello.c"]
        for sec, lang, body in self.blocks:
            first = body.splitlines()[0]
            self.assertTrue(first in NOT_RUN or any(first.startswith(k) for k in known),
                            "README.md block in '%s' is not tested: %r" % (sec, first))

    def test_first_dispatch(self):
        _, body = self.block("Your first dispatch", "/usr/bin/python3 - <<'EOF'")
        printed = re.search(r"^It prints\n\n```\n(.*?)```", self.text, re.S | re.M)
        self.assertIsNotNone(printed, "no 'It prints' block")
        self.serve(config={"ring": {"heap": "2M"}})
        got = self.sh(body).splitlines()
        want = printed.group(1).splitlines()
        self.assertEqual(len(got), len(want), got)
        self.assertEqual(got[0], want[0])
        # The README shows the built-in defaults; this daemon runs a small
        # [ring] (source "config") whose heap is not the request's, so the
        # dispatch misses the prewarmed arena as it does there.
        self.assertRegex(want[1], r"^ring_heap \[\d+, 1048576, \d+, \d+\] "
                         r"\['default', 'request', 'default', 'default'\]$")
        self.assertRegex(got[1], r"^ring_heap \[2097152, 1048576, 2097152, 2097152\] "
                         r"\['config', 'request', 'config', 'config'\]$")
        self.assertTrue(got[2].startswith("arena     {'hit': False, 'build_us': "), got[2])

    def test_ptoctl(self):
        _, body = self.block("Per-dispatch ring sizing from each client", "build/run/client/ptoctl ")
        self.serve()
        out = self.sh(body)
        self.assertRegex(out, r"(?m)^  0 .* 2 MiB \(request\)")   # dispatch: ring 0's heap
        self.assertIn("output 2   12 bytes: f32 [11, 22, 33]", out)
        self.assertRegex(out, r"arena +100 hits, 0 misses")          # bench: one config, all hits
        self.assertIn('"state": "ready"', out)                       # status --json

    def test_python(self):
        _, body = self.block("Per-dispatch ring sizing from each client",
                             "PYTHONPATH=client/python /usr/bin/python3")
        self.serve()
        out = self.sh(body).strip()
        said = re.search(r"^It prints `(\[11\.0.*?\])`$", self.text, re.M)
        self.assertIsNotNone(said, "the README no longer says what the Python example prints")
        # this daemon's [ring] sizes rings 1 to 3: 'config' where the README's shows 'default'
        self.assertEqual(out, said.group(1).replace("'default'", "'config'"))

    def test_python_asyncio(self):
        _, body = self.block("Per-dispatch ring sizing from each client",
                             "PYTHONPATH=client/python /usr/bin/python3 - <<'EOF'  # the asyncio")
        self.assertIn("ptoclient.aio.connect()", body)
        self.serve()
        out = self.sh(body).strip()
        said = re.search(r"^It prints `(\[11\.0.*?\])`$", self.text, re.M)
        self.assertIsNotNone(said)
        self.assertIn("It prints the same as the blocking client.", self.text)
        self.assertEqual(out, said.group(1).replace("'default'", "'config'"))

    def run_c_fragment(self, section, headers):
        """The section's C block as the body of a main() that includes
        headers, built against this build tree and run; its output."""
        _, body = self.block(section, "pto_client_t *c;")
        with open(os.path.join(self.work, "fragment.c"), "w") as f:
            f.write("".join("#include <%s>\n" % h for h in headers)
                    + "\nint main(void) {\n%s  return 0;\n}\n" % body)
        self.serve()
        return self.sh("cc -Wall -Werror fragment.c $(PKG_CONFIG_PATH=build/run/client pkg-config "
                       "--cflags --libs ptoclient) -o fragment && ./fragment 2>&1")

    def test_c_fragment(self):
        out = self.run_c_fragment("Per-dispatch ring sizing from each client",
                                  ["stdio.h", "pto/client.h"])
        self.assertEqual(out, "")  # no error printed: the dispatch succeeded

    def test_shm_ptoctl(self):
        _, body = self.block("Moving tensors through shared memory", "build/run/client/ptoctl ")
        self.assertIn("--shm", body)
        self.serve()
        self.assertIn("output 2   12 bytes: f32 [11, 22, 33]", self.sh(body))

    def test_shm_python(self):
        _, body = self.block("Moving tensors through shared memory",
                             "PYTHONPATH=client/python /usr/bin/python3")
        self.serve()
        said = re.search(r"^It prints `(\[11\.0, 22\.0, 33\.0\] \[None.*?\])`", self.text,
                         re.M)
        self.assertIsNotNone(said, "the README no longer says what the shm example prints")
        self.assertEqual(self.sh(body).strip(), said.group(1))

    def test_shm_c_fragment(self):
        out = self.run_c_fragment("Moving tensors through shared memory",
                                  ["stdio.h", "string.h", "pto/client.h"])
        self.assertEqual(out, "11 22 33\n")  # the sums, read from the region

    def test_hello_from_the_build_tree(self):
        _, body = self.block("Per-dispatch ring sizing from each client", "cc examples/client/hello.c")
        self.assertIn("PKG_CONFIG_PATH=build/run/client", body)
        self.serve()
        out = self.sh(body)
        self.assertEqual(out, "ptod 0.1.0 on device 0 is ready\n"
                              "vector_add: 11 22 33 44 (ring_heap[0] = 8192 from the request)\n")
        said = re.search(r"It prints `(ptod .*? is ready)` and `(vector_add: .*?)`\.",
                         self.text.replace("\n", " "))
        self.assertIsNotNone(said)
        self.assertEqual(out.splitlines(), [said.group(1), said.group(2)])


if __name__ == "__main__":
    harness.main()
