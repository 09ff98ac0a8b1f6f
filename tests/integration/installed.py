# SPDX-License-Identifier: Apache-2.0
"""Run an installed ptod tree (cmake --install --prefix, DESTDIR, or a
package unpacked with dpkg-deb -x) the way its user would: its own
bin/ptod with no [device] programs (so it must find its programs relative
to itself) and its own ptoctl, reached through PTOD_SOCKET.

The config names only the socket: as root the built-in one is the system's
/run/ptod/ptod0.sock, which a test must not take.  Small rings come from
PTO2_RING_* in the daemon's environment, so the prewarm takes milliseconds.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

SMALL_ENV = {"PTO2_RING_TASK_WINDOW": "256", "PTO2_RING_HEAP": "1048576",
             "PTO2_RING_DEP_POOL": "1024"}


def run(argv, check=True, **kw):
    """subprocess.run with text output; on failure (check) an AssertionError
    that shows what it printed."""
    kw.setdefault("timeout", 300)
    out = subprocess.run(argv, capture_output=True, text=True, **kw)
    if check and out.returncode != 0:
        raise AssertionError("%s exited %d:\n%s\n%s" % (" ".join(argv), out.returncode,
                                                        out.stdout, out.stderr))
    return out


class TreeDaemon:
    """bin/ptod of an installed tree on a temporary socket."""

    def __init__(self, ptod, extra_config=""):
        self.dir = tempfile.mkdtemp(prefix="ptod-tree-")
        self.socket = os.path.join(self.dir, "ptod.sock")
        self.config = os.path.join(self.dir, "ptod.conf")
        with open(self.config, "w") as f:
            f.write("[daemon]\nsocket = %s\n%s" % (self.socket, extra_config))
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("PTO2_RING_", "NOTIFY_SOCKET", "LISTEN_"))}
        env.update(SMALL_ENV)
        self.log_path = os.path.join(self.dir, "ptod.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen([ptod, "--config", self.config], env=env, stdout=self.log,
                                     stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 60
        while "Listening on" not in self.read_log():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise AssertionError("%s did not start:\n%s" % (ptod, self.read_log()))
            time.sleep(0.01)

    def read_log(self):
        with open(self.log_path) as f:
            return f.read()

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rc = self.proc.wait(60)
        self.log.close()
        log = self.read_log()
        shutil.rmtree(self.dir, True)
        if rc != 0:
            raise AssertionError("ptod exited %d:\n%s" % (rc, log))
        return log


def ptoctl_dispatch(ptoctl, socket, *args):
    """`PTOD_SOCKET=socket ptoctl --json dispatch ARGS...` -> the result map."""
    env = dict(os.environ, PTOD_SOCKET=socket)
    env = {k: v for k, v in env.items() if not k.startswith("PTO2_RING_")}
    return json.loads(run([ptoctl, "--json", "dispatch"] + list(args), env=env).stdout)


def vector_add_sums(ptoctl, socket):
    r = ptoctl_dispatch(ptoctl, socket, "vector_add", "f32:1,2,3", "f32:10,20,30", "out:12")
    return r["outputs"][2]["f32"]
