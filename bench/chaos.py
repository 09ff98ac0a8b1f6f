#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""bench/chaos: honest clients and hostile ones on one daemon, for a while.

    bench/chaos.py [--seconds 60] [--honest 8] [--hostile 4] [--build DIR]
                   [--seed N]

Starts ptod from DIR (default build/asan: the point is a sanitizer's
verdict) and, for --seconds, runs side by side:

  honest   tests/load/ptod_load with --honest clients, run after run: every
           request (ping, status, dispatches of vector_add, matmul and noop on
           three sizings, dispatches into resident buffers, buffer
           alloc/write/read/free/list) must get exactly one response, and the
           one it must get (sums, products, a buffer's bytes given every
           write before the read); plus one client pinging on its own
           connection, whose round trips give the honest p99.
  hostile  --hostile threads, each doing one attack after another, chosen
           by a seeded random generator: pipelined pings and dispatches
           never read, a header announcing a 64 MiB message then a stall,
           garbage bytes, a pipe and an unsealed memfd passed with a ping, a
           request cut in the middle by a close, shm regions registered past
           the per-connection bound, a connection flood up to max_clients.

Then checks that the daemon is still up and answers, stops it, and looks for
any sanitizer report in its log.  Prints a MACHINE line, one
`FIGURES chaos: key=value ...` line (honest_requests, lost, duplicated,
wrong, errors, honest_p99_ms, hostile_attacks, sanitizer_reports,
rss_peak_mib) and exits 0 only when nothing was lost, duplicated or wrong and
no sanitizer spoke.  Not a test (it takes a minute and a machine of its
own); docs/reliability.md quotes its figures.
"""

import argparse
import fcntl
import json
import os
import random
import socket
import struct
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--seconds", type=float, default=60)
    p.add_argument("--honest", type=int, default=8)
    p.add_argument("--hostile", type=int, default=4)
    p.add_argument("--build", default=os.path.join(ROOT, "build", "asan"))
    p.add_argument("--seed", type=int, default=1)
    return p.parse_args()


ARGS = parse_args()
os.environ["PTOD_BINARY_DIR"] = os.path.abspath(ARGS.build)
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
import harness  # noqa: E402
import msgpack  # noqa: E402

LOAD = os.path.join(harness.BINARY_DIR, "tests", "load", "ptod_load")
WINDOW = 16
MAX_CLIENTS = 128


def machine_line():
    model = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    commit = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True).stdout.strip() or "?"
    with open("/proc/loadavg") as f:
        load = " ".join(f.read().split()[:3])
    return 'MACHINE cpus=%d model="%s" commit=%s build=%s load="%s"' % (
        os.cpu_count(), model, commit, harness.sanitizer() or "plain", load)


def request(msgid, method, params=None):
    return msgpack.packb([0, msgid, method, [] if params is None else [params]])


def connect(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(path)
    return s


def drain(s):
    """Read until the daemon closes or stops answering."""
    try:
        while s.recv(65536):
            pass
    except OSError:
        pass


# ---- the attacks: each takes the socket path and a random generator ----------

def unread_pings(path, rng):
    with connect(path) as s:
        s.sendall(b"".join(request(i, "ping") for i in range(rng.randint(100, 3000))))


def unread_dispatches(path, rng):
    with connect(path) as s:
        s.sendall(b"".join(request(i, "dispatch", harness.noop(tasks=rng.randint(1, 64)))
                           for i in range(rng.randint(10, 300))))


def huge_header(path, rng):
    with connect(path) as s:
        # buffer.write whose bin announces 64 MiB: the header and 1 KiB of it.
        head = b"\x94\x00\x01\xacbuffer.write\x91\x82\xa4name\xa1x\xa4data\xc6" + \
            struct.pack(">I", 64 << 20)
        s.sendall(head + bytes(1024))
        time.sleep(rng.uniform(0.05, 0.5))


def garbage(path, rng):
    with connect(path) as s:
        s.sendall(bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 4096))))
        drain(s)


def passed_fds(path, rng):
    r, w = os.pipe()
    m = os.memfd_create("chaos", os.MFD_CLOEXEC)
    try:
        with connect(path) as s:
            s.sendmsg([request(1, "ping")],
                      [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("ii", r, m))])
            s.recv(65536)
    finally:
        for fd in (r, w, m):
            os.close(fd)


def cut_request(path, rng):
    data = request(1, "dispatch", harness.vector_add([1.0] * 256, [2.0] * 256))
    with connect(path) as s:
        s.sendall(data[:rng.randint(1, len(data) - 1)])


def shm_flood(path, rng):
    fds = []
    try:
        with connect(path) as s:
            for i in range(rng.randint(4, 80)):
                m = os.memfd_create("chaos", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
                fds.append(m)
                os.write(m, bytes(4096))
                fcntl.fcntl(m, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK)
                msg = request(i, "shm.register", {"name": "chaos-%d" % i, "bytes": 4096})
                s.sendmsg([msg], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack("i", m))])
            time.sleep(rng.uniform(0, 0.2))
    finally:
        for fd in fds:
            os.close(fd)


def connection_flood(path, rng):
    socks = []
    try:
        for _ in range(rng.randint(8, MAX_CLIENTS // 4)):
            socks.append(connect(path))
        time.sleep(rng.uniform(0, 0.3))
    except OSError:
        pass
    finally:
        for s in socks:
            s.close()


ATTACKS = [unread_pings, unread_dispatches, huge_header, garbage, passed_fds, cut_request,
           shm_flood, connection_flood]


class Hostile(threading.Thread):
    def __init__(self, path, seed, deadline):
        super().__init__(daemon=True)
        self.path, self.rng, self.deadline = path, random.Random(seed), deadline
        self.counts = {a.__name__: 0 for a in ATTACKS}

    def run(self):
        while time.monotonic() < self.deadline:
            attack = self.rng.choice(ATTACKS)
            try:
                attack(self.path, self.rng)
            except OSError:
                pass  # refused or cut: what the daemon may do to an attacker
            self.counts[attack.__name__] += 1


def honest_runs(path, deadline):
    """ptod_load run after run until the deadline: the summed figures."""
    total = {"requests": 0, "responses": 0, "lost": 0, "unknown_or_duplicate": 0,
             "mismatches": 0, "errors": 0, "runs": 0}
    failures = []
    while time.monotonic() < deadline:
        out = subprocess.run([LOAD, "--socket", path, "--clients", str(ARGS.honest),
                              "--requests", "500", "--window", str(WINDOW), "--timeout-s", "120",
                              "--seed", str(ARGS.seed * 1000 + total["runs"])],
                             capture_output=True, text=True, timeout=180)
        # What a run left resident is its clients' (load-N); the next run's
        # clients start from nothing.
        with harness.Client(path, timeout=60) as c:
            for b in c.call("buffer.list"):
                c.call("buffer.free", {"name": b["name"]})
        try:
            fig = json.loads(out.stdout)
        except ValueError:
            failures.append("ptod_load exit %d: %s" % (out.returncode, out.stderr[-2000:]))
            break
        for key in total:
            if key != "runs":
                total[key] += fig[key]
        total["runs"] += 1
        if out.returncode != 0:
            failures.append(out.stderr[-2000:])
    return total, failures


def main():
    print(machine_line(), flush=True)
    config = {"daemon": {"max_clients": str(MAX_CLIENTS), "queue_depth": "4096",
                         "max_pending": str(WINDOW * 4), "output_limit": "4M",
                         "input_limit": "16M", "clients_memory": "256M",
                         "shm_regions": "16", "client_timeout": "5s", "log_level": "notice"}}
    d = harness.Daemon(config=config, env=harness.rss_env())
    ok = True
    try:
        deadline = time.monotonic() + ARGS.seconds
        sampler = harness.RssSampler(d.pid).start()
        pinger_lat, pinger_err = [], []

        def pinger():
            try:
                with harness.Client(d.socket, timeout=60) as c:
                    while time.monotonic() < deadline:
                        t0 = time.monotonic()
                        c.call("ping")
                        pinger_lat.append(time.monotonic() - t0)
                        time.sleep(0.005)
            except Exception as e:  # noqa: BLE001  (any failure is the finding)
                pinger_err.append(repr(e))

        threads = [threading.Thread(target=pinger, daemon=True)]
        hostiles = [Hostile(d.socket, ARGS.seed * 1000 + i, deadline) for i in range(ARGS.hostile)]
        for t in threads + hostiles:
            t.start()
        total, failures = honest_runs(d.socket, deadline)
        for t in threads + hostiles:
            t.join(120)
        sampler.stop()
        alive = d.proc.poll() is None
        if alive:
            with d.client() as c:
                c.call("ping")
        status = d.stop()
        report = d.sanitizer_report()
        attacks = {}
        for h in hostiles:
            for k, v in h.counts.items():
                attacks[k] = attacks.get(k, 0) + v
        lat = sorted(pinger_lat)
        p99 = lat[int(0.99 * (len(lat) - 1))] * 1000 if lat else float("nan")
        print("FIGURES chaos: seconds=%g honest_clients=%d hostile_threads=%d honest_runs=%d "
              "honest_requests=%d responses=%d lost=%d duplicated=%d wrong=%d errors=%d "
              "honest_pings=%d honest_ping_errors=%d honest_p99_ms=%.1f hostile_attacks=%d "
              "daemon_exit=%s sanitizer_reports=%d rss_peak_mib=%.1f" % (
                  ARGS.seconds, ARGS.honest, ARGS.hostile, total["runs"], total["requests"],
                  total["responses"], total["lost"], total["unknown_or_duplicate"],
                  total["mismatches"], total["errors"], len(lat), len(pinger_err), p99,
                  sum(attacks.values()), status, 1 if report else 0,
                  sampler.peak / 1024))
        print("FIGURES chaos_attacks: " + " ".join("%s=%d" % kv for kv in sorted(attacks.items())))
        for f in failures[:3]:
            print("honest failure:", f, file=sys.stderr)
        for e in pinger_err[:3]:
            print("honest pinger:", e, file=sys.stderr)
        if report:
            print(report[-8000:], file=sys.stderr)
        ok = (alive and status == 0 and not report and not failures and not pinger_err and
              total["lost"] == total["unknown_or_duplicate"] == total["mismatches"] == 0)
    finally:
        d.stop()
        d.cleanup()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
