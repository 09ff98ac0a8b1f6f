# SPDX-License-Identifier: Apache-2.0
"""deploy/: the Kubernetes manifests and the systemd drop-in for CDI hosts,
checked with what Debian ships.

kubectl's client-side dry run needs a cluster (it asks the API server for
its resource types even with --dry-run=client), so instead of it: yamllint
in strict mode, then every manifest parsed with python3-yaml and held to
what the API server and the deployment need: kinds and apiVersions,
selectors that match their templates, volumes for every mount, the
DaemonSet's one-owner-per-device rollout (maxSurge 0), each ptod
container's config present in the ConfigMap and accepted by this build's
`ptod --check-config`, probes that ping that container's own socket, the
init container's CDI spec naming exactly the devices served, and the
serving Deployment's CDI annotation naming one of them, in the kind
`ptoctl cdi generate` writes.  The drop-in is checked with
`systemd-analyze verify`.
"""

import configparser
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
BINARY_DIR = os.environ.get("PTOD_BINARY_DIR") or sys.exit("PTOD_BINARY_DIR is not set")
PTOD = os.path.join(BINARY_DIR, "daemon", "ptod")
PTOCTL = os.path.join(BINARY_DIR, "client", "ptoctl")
KUBE = os.path.join(ROOT, "deploy", "kubernetes")
DROPIN = os.path.join(ROOT, "deploy", "systemd", "ptod@.socket.d", "cdi.conf")
API = {"Namespace": "v1", "ConfigMap": "v1", "DaemonSet": "apps/v1", "Deployment": "apps/v1"}


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, **kw)


def load_all():
    docs = []
    for name in sorted(os.listdir(KUBE)):
        if name.endswith(".yaml"):
            with open(os.path.join(KUBE, name)) as f:
                docs += [(name, d) for d in yaml.safe_load_all(f) if d is not None]
    return docs


def one(docs, kind):
    found = [d for _, d in docs if d["kind"] == kind]
    assert len(found) == 1, "expected one %s, found %d" % (kind, len(found))
    return found[0]


def conf(text):
    p = configparser.ConfigParser()
    p.read_string(text)
    return p


def device_of(container):
    m = re.fullmatch(r"ptod-(\d+)", container["name"])
    return int(m.group(1)) if m else None


class Manifests(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.docs = load_all()
        cls.ds = one(cls.docs, "DaemonSet")
        cls.cm = one(cls.docs, "ConfigMap")
        cls.deploy = one(cls.docs, "Deployment")
        cls.pod = cls.ds["spec"]["template"]["spec"]
        cls.devices = [device_of(c) for c in cls.pod["containers"]]

    def test_yamllint_strict(self):
        if not shutil.which("yamllint"):
            self.skipTest("yamllint is not installed (scripts/deps --test)")
        r = run(["yamllint", "-s", "-c", os.path.join(KUBE, ".yamllint"), KUBE])
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)

    def test_objects_are_well_formed(self):
        namespaces = {d["metadata"]["name"] for _, d in self.docs if d["kind"] == "Namespace"}
        for name, d in self.docs:
            self.assertEqual(d["apiVersion"], API[d["kind"]], name)
            self.assertRegex(d["metadata"]["name"], r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
            if d["kind"] != "Namespace":
                ns = d["metadata"]["namespace"]
                self.assertTrue(ns == "default" or ns in namespaces, (name, ns))
            if d["kind"] in ("DaemonSet", "Deployment"):
                template = d["spec"]["template"]
                labels = template["metadata"]["labels"]
                for k, v in d["spec"]["selector"]["matchLabels"].items():
                    self.assertEqual(labels.get(k), v, name)
                spec = template["spec"]
                volumes = {v["name"] for v in spec.get("volumes", [])}
                for c in spec.get("initContainers", []) + spec["containers"]:
                    for m in c.get("volumeMounts", []):
                        self.assertIn(m["name"], volumes, (name, c["name"]))

    def test_daemonset_never_runs_two_pods_on_one_device(self):
        self.assertEqual(self.ds["metadata"]["namespace"], self.cm["metadata"]["namespace"])
        strategy = self.ds["spec"]["updateStrategy"]
        self.assertEqual(strategy["type"], "RollingUpdate")
        self.assertEqual(strategy["rollingUpdate"]["maxSurge"], 0)
        self.assertGreaterEqual(strategy["rollingUpdate"]["maxUnavailable"], 1)
        self.assertNotIn(None, self.devices)
        self.assertEqual(len(self.devices), len(set(self.devices)))

    def test_each_daemon_has_its_config_its_socket_and_probes(self):
        grace = self.pod["terminationGracePeriodSeconds"]
        mounts_of = {}
        for c in self.pod["containers"]:
            n = device_of(c)
            self.assertEqual(c["command"], ["ptod", "--config", "/etc/ptod/ptod%d.conf" % n])
            text = self.cm["data"]["ptod%d.conf" % n]
            cfg = conf(text)
            sock = "/run/ptod/%d/ptod%d.sock" % (n, n)
            self.assertEqual(cfg["daemon"]["socket"], sock)
            self.assertEqual(int(cfg["device"]["id"]), n)
            drain = int(cfg["daemon"]["drain_timeout"].rstrip("s"))
            self.assertGreater(grace, drain)
            with tempfile.NamedTemporaryFile("w", suffix=".conf") as f:
                f.write(text)
                f.flush()
                r = run([PTOD, "--check-config", f.name])
                self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                self.assertEqual(c[probe]["exec"]["command"], ["ptoctl", "-s", sock, "ping"])
            startup = c["startupProbe"]
            self.assertGreaterEqual(startup["periodSeconds"] * startup["failureThreshold"], 300)
            mounts_of[c["name"]] = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        for mounts in mounts_of.values():
            self.assertEqual(volumes[mounts["/etc/ptod"]]["configMap"]["name"],
                             self.cm["metadata"]["name"])
            self.assertEqual(volumes[mounts["/run/ptod"]]["hostPath"]["path"], "/run/ptod")

    def test_init_container_writes_the_cdi_spec_for_exactly_these_devices(self):
        init = self.pod["initContainers"][0]
        script = init["command"][-1]
        served = sorted(self.devices)
        spec_cmd = re.search(r"ptoctl cdi generate ([^&|;]*)", script).group(1).split()
        self.assertEqual(sorted(int(spec_cmd[i + 1]) for i, w in enumerate(spec_cmd)
                                if w == "-d"), served)
        out = spec_cmd[spec_cmd.index("-o") + 1]
        volumes = {v["name"]: v for v in self.pod["volumes"]}
        mounts = {m["mountPath"]: m["name"] for m in init["volumeMounts"]}
        self.assertEqual(volumes[mounts[os.path.dirname(out)]]["hostPath"]["path"], "/etc/cdi")
        self.assertEqual(volumes[mounts["/run/ptod"]]["hostPath"]["path"], "/run/ptod")
        groups = {conf(self.cm["data"]["ptod%d.conf" % n])["daemon"]["socket_group"]
                  for n in served}
        self.assertEqual(len(groups), 1)
        made = re.search(r"install -d -m 0750 -o 0 -g (\d+) ([^&]*)&&", script)
        self.assertEqual(made.group(1), groups.pop())
        self.assertEqual(made.group(2).split(), ["/run/ptod/%d" % n for n in served])

    def test_serving_deployment_gets_a_served_device_through_cdi(self):
        template = self.deploy["spec"]["template"]
        wanted = [v for k, v in template["metadata"]["annotations"].items()
                  if k.startswith("cdi.k8s.io/")]
        self.assertEqual(len(wanted), 1)
        kind, device = wanted[0].split("=")
        r = run([PTOCTL, "cdi", "generate", "-d", device])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn('"kind": "%s"' % kind, r.stdout)  # the kind the spec on the node has
        self.assertIn(int(device), self.devices)
        spec = template["spec"]
        self.assertEqual(spec["nodeSelector"], self.pod["nodeSelector"])
        group = int(conf(self.cm["data"]["ptod%s.conf" % device])["daemon"]["socket_group"])
        self.assertIn(group, spec["securityContext"]["supplementalGroups"])
        self.assertTrue(spec["securityContext"]["runAsNonRoot"])
        self.assertEqual(spec["containers"][0]["readinessProbe"]["exec"]["command"],
                         ["ptoctl", "-s", "/run/ptod/%s/ptod%s.sock" % (device, device), "ping"])


class SocketDropIn(unittest.TestCase):
    def verify(self, extra=""):
        """systemd-analyze verify ptod@0.socket with the drop-in (plus
        extra lines) over the build tree's units; its stderr."""
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.skipTest("systemd-analyze is not installed (Debian package systemd)")
        units = tempfile.mkdtemp(prefix="ptod-units-")
        self.addCleanup(shutil.rmtree, units, True)
        verify_dir = os.path.join(BINARY_DIR, "systemd", "verify")
        for u in ("ptod@.service", "ptod@.socket"):
            shutil.copy(os.path.join(verify_dir, u), units)
        os.mkdir(os.path.join(units, "ptod@.socket.d"))
        with open(DROPIN) as f, open(os.path.join(units, "ptod@.socket.d", "cdi.conf"),
                                     "w") as out:
            out.write(f.read() + extra)
        env = dict(os.environ, SYSTEMD_UNIT_PATH=units + ":")
        r = run([tool, "verify", "--man=no", "ptod@0.socket"], cwd=units, env=env)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        return r.stderr

    def test_drop_in_verifies(self):
        self.assertEqual(self.verify(), "")
        # and it is the drop-in that was read: a bad key in it is reported
        self.assertIn("Unknown key 'NoSuchKey'", self.verify("NoSuchKey=1\n"))

    def test_drop_in_links_the_socket_into_its_directory(self):
        with open(DROPIN) as f:
            lines = [l.strip() for l in f if l.strip() and not l.startswith("#")]
        self.assertIn("ExecStartPost=/bin/ln -f /run/ptod/ptod%i.sock /run/ptod/%i/ptod%i.sock",
                      lines)
        self.assertIn("ExecStopPost=/bin/rm -f /run/ptod/%i/ptod%i.sock", lines)
        with open(os.path.join(ROOT, "systemd", "ptod@.socket")) as f:
            self.assertIn("ListenStream=/run/ptod/ptod%i.sock", f.read())


if __name__ == "__main__":
    unittest.main(verbosity=2)
