#!/usr/bin/python3
"""Checks the Kubernetes manifests in deploy/kubernetes without a cluster.

    kubernetes_test.py --bin-dir DIR    DIR holds the built colltestd and colltest

Every YAML file must parse, and every object carry apiVersion, kind and metadata.name with the
apiVersion of its kind. Each kustomization (base, overlays/*, npd) is rendered (kustomize_render.py;
also with `kubectl kustomize` when kubectl is installed, and the two must agree), and in each
rendering:

  - the DaemonSet's args use only flags `colltestd --help` lists; its config file's keys (the
    commented-out ones too) are colltestd flags, and none repeats an arg; $(VAR)s are in env;
    --hostname is the node's name ($(NODE_NAME), from the downward API's spec.nodeName), not the
    pod's; no --allow-fault-injection (docs/security.md)
  - --listen, --http and --health-listen use the container's grpc, http and health ports, and
    the startup, readiness and liveness probes are gRPC probes of the --health-listen port for
    service ""
  - the Services select the DaemonSet's pods (and not the fleet check's), their targetPorts name
    container ports, and the fleet check's --targets and the NPD plugin's --server name them
  - the NetworkPolicy selects the DaemonSet's pods, opens its gRPC and HTTP ports only to listed
    peers (the fleet check among them) and the health port to all, and admits Prometheus (pods
    app.kubernetes.io/name=prometheus of the namespace named PROMETHEUS_NAMESPACE) to the HTTP
    port and to no other
  - a Service carries prometheus.io/scrape "true", prometheus.io/port the HTTP container port (that
    --http listens on) and prometheus.io/path /metrics, and has a port that leads there
  - monitoring/'s ServiceMonitor selects, in the DaemonSet's namespace, Services of every rendering
    that all have its endpoints' port names, and those ports lead to the --http container port;
    path /metrics; Basic auth from a Secret the operator creates (colltestd has a token file, so
    /metrics asks for one); Prometheus may reach that port through the NetworkPolicy
  - the CronJobs and NPD rules run /usr/bin/colltest with flags `colltest --help` and
    `colltest health --help` list; each CronJob forbids overlap and has a deadline that covers
    its level's per-node deadline with the retries; a CronJob that is not suspended checks
    pairs (--level standard or long: colltest_link_health), and one runs --level long (the link
    bandwidth of ColltestLinkBelowExpected)
  - every mounted volume exists and every volume is mounted; ConfigMaps and Secrets exist or are
    the operator-created ones docs/kubernetes.md describes; the paths the flags name are mounted
  - the pods run as non-root uid 10001 with seccomp RuntimeDefault; the containers drop all
    capabilities, have a read-only root filesystem, and a privileged one allows escalation (the
    API refuses privileged without it); /dev/shm and /tmp are emptyDirs
  - every image is the one the overlay's `images` sets
  - the NPD plugin config is the JSON node-problem-detector expects: plugin custom, conditions
    CollectiveHang and CollectiveWrong, permanent rules whose conditions are declared, each rule
    asking `--npd` for its own condition, timeouts within the interval

and deploy/kubernetes/colltest-cuda.yaml and colltest-rocm.yaml equal fresh renderings of
overlays/cuda and overlays/rocm.
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "pylib"))
import kustomize_render  # noqa: E402
from check_failures import Failures  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
K8S = os.path.join(ROOT, "deploy", "kubernetes")
DOC = os.path.join(ROOT, "docs", "kubernetes.md")

API_VERSIONS = {
    "DaemonSet": "apps/v1",
    "CronJob": "batch/v1",
    "NetworkPolicy": "networking.k8s.io/v1",
    "Service": "v1",
    "ConfigMap": "v1",
    "ServiceAccount": "v1",
    "Namespace": "v1",
    "Kustomization": "kustomize.config.k8s.io/v1beta1",
    "ServiceMonitor": "monitoring.coreos.com/v1",
}
# Secrets the operator creates (docs/kubernetes.md says how); the manifests only reference them.
USER_CREATED_SECRETS = {"colltest-tokens", "colltest-tls", "colltest-client-token",
                        "colltest-metrics-auth"}
# Committed renderings: file -> kustomization directory (relative to deploy/kubernetes).
PLAIN_FILES = {"colltest-cuda.yaml": "overlays/cuda", "colltest-rocm.yaml": "overlays/rocm"}
KUSTOMIZATIONS = ["base", "overlays/cuda", "overlays/rocm", "overlays/cuda-device-plugin",
                  "overlays/rocm-device-plugin", "npd", "monitoring"]
# Kustomizations that add to a deployment of the base instead of being one.
ADD_ONS = {"npd", "monitoring"}
# Where Prometheus runs: the NetworkPolicy admits its pods from this namespace (docs/kubernetes.md).
PROMETHEUS_NAMESPACE = "monitoring"
PROMETHEUS_POD_LABELS = {"app.kubernetes.io/name": "prometheus"}
METRICS_PATH = "/metrics"
IMAGE_UID = 10001
CLIENT = "/usr/bin/colltest"
# A fleet check's deadline per node and attempt, by --level: HealthDeadline in
# client/commands/commands.cc at the default case timeout (5 s), and its default --retries.
LEVEL_DEADLINE_S = {"quick": 120, "standard": 600, "long": 2000}
FLEET_RETRIES = 2
# The DaemonSet reports the node's name as its host name (docs/kubernetes.md).
NODE_NAME_ENV = "NODE_NAME"
NPD_CONDITIONS = {"CollectiveHang", "CollectiveWrong"}

POD_SPEC_KEYS = {
    "affinity", "automountServiceAccountToken", "containers", "dnsPolicy", "enableServiceLinks",
    "hostIPC", "hostNetwork", "hostPID", "imagePullSecrets", "initContainers", "nodeSelector",
    "priorityClassName", "restartPolicy", "runtimeClassName", "securityContext",
    "serviceAccountName", "terminationGracePeriodSeconds", "tolerations", "volumes",
}
CONTAINER_KEYS = {
    "name", "image", "imagePullPolicy", "command", "args", "env", "envFrom", "ports", "resources",
    "securityContext", "volumeMounts", "volumeDevices", "startupProbe", "readinessProbe",
    "livenessProbe", "workingDir", "lifecycle",
}
PROBES = ("startupProbe", "readinessProbe", "livenessProbe")


# --- the binaries' flags ---------------------------------------------------------------------

HELP_LINE = re.compile(r"^\s*(?:-\w,)?(--[A-Za-z0-9][\w-]*)( [A-Z][^\s]*)?")


def help_flags(command):
    """{flag: takes_value} of a CLI11 --help text."""
    out = subprocess.run(command + ["--help"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} --help: exit {out.returncode}: {out.stderr}")
    flags = {}
    for line in out.stdout.splitlines():
        m = HELP_LINE.match(line)
        if m:
            flags[m.group(1)] = m.group(2) is not None
    if not flags:
        raise RuntimeError(f"{' '.join(command)} --help lists no flags")
    return flags


def parse_client_args(args, global_flags, health_flags):
    """Splits `colltest` args into (global {flag: value}, subcommand, {flag: value}, unknown)."""
    scope, flags, values = "global", global_flags, ({}, {})
    unknown, subcommand = [], None
    i = 0
    while i < len(args):
        token = str(args[i])
        i += 1
        if token.startswith("--"):
            name, eq, value = token.partition("=")
            if name not in flags:
                unknown.append(f"{scope} {name}")
                continue
            if not eq and flags[name]:
                value = str(args[i]) if i < len(args) else None
                i += 1
            values[0 if scope == "global" else 1][name] = value if (eq or flags[name]) else True
        elif scope == "global":
            subcommand, scope, flags = token, token, health_flags
            if token != "health":
                unknown.append(f"subcommand {token} (only health is checked here)")
        else:
            unknown.append(f"positional {token}")
    return values[0], subcommand, values[1], unknown


def flag_value(args, flag):
    """The value of --flag=VALUE (or --flag VALUE) in a list of args; None when absent."""
    for i, a in enumerate(args):
        a = str(a)
        if a.startswith(flag + "="):
            return a[len(flag) + 1:]
        if a == flag and i + 1 < len(args):
            return str(args[i + 1])
    return None


def port_of(address):
    return int(address.rsplit(":", 1)[1])


# --- helpers over rendered objects -----------------------------------------------------------

def objects_of(objects, kind):
    return [o for o in objects if o.get("kind") == kind]


def name_of(obj):
    return (obj.get("metadata") or {}).get("name")


def pod_spec(obj):
    if obj["kind"] == "CronJob":
        return obj["spec"]["jobTemplate"]["spec"]["template"]["spec"]
    return obj["spec"]["template"]["spec"]


def pod_labels(obj):
    if obj["kind"] == "CronJob":
        template = obj["spec"]["jobTemplate"]["spec"]["template"]
    else:
        template = obj["spec"]["template"]
    return (template.get("metadata") or {}).get("labels") or {}


def selects(selector, labels):
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def container_ports(container):
    return {p.get("name"): p["containerPort"] for p in container.get("ports", [])}


def mount_for(container, path):
    """The volumeMount whose mountPath holds `path`, the longest one."""
    best = None
    for m in container.get("volumeMounts", []):
        mp = m["mountPath"].rstrip("/")
        if path == mp or path.startswith(mp + "/"):
            if best is None or len(mp) > len(best["mountPath"]):
                best = m
    return best


def volume_named(spec, name):
    return next((v for v in spec.get("volumes", []) if v.get("name") == name), None)


def go_duration_seconds(text):
    parts = re.findall(r"(\d+(?:\.\d+)?)(h|ms|m|s)", text)
    if not parts or "".join(n + u for n, u in parts) != text:
        raise ValueError(f"not a duration: {text}")
    scale = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}
    return sum(float(n) * scale[u] for n, u in parts)


# --- the checks ------------------------------------------------------------------------------

def check_files(f):
    """Every YAML file parses; every object names its apiVersion, kind and name."""
    for dirpath, _, files in os.walk(K8S):
        for file in sorted(files):
            path = os.path.join(dirpath, file)
            rel = os.path.relpath(path, ROOT)
            if file.endswith(".md"):
                continue
            if not file.endswith((".yaml", ".yml")):
                f.check(False, rel, "only YAML (and Markdown) files belong here")
                continue
            try:
                with open(path, encoding="utf-8") as stream:
                    docs = [d for d in yaml.safe_load_all(stream) if d is not None]
            except yaml.YAMLError as e:
                f.check(False, rel, f"does not parse: {e}")
                continue
            f.check(docs, rel, "holds no object")
            for doc in docs:
                where = f"{rel} {doc.get('kind')}/{name_of(doc)}" if isinstance(doc, dict) else rel
                if not f.check(isinstance(doc, dict), where, "a document is not a map"):
                    continue
                kind = doc.get("kind")
                f.check(kind in API_VERSIONS, where, f"unexpected kind {kind!r}")
                f.check(doc.get("apiVersion") == API_VERSIONS.get(kind), where,
                        f"apiVersion {doc.get('apiVersion')!r}, want {API_VERSIONS.get(kind)!r}")
                if kind == "Kustomization":
                    f.check(file == "kustomization.yaml", where, "a Kustomization's file name")
                else:
                    f.check(isinstance(name_of(doc), str) and name_of(doc), where,
                            "no metadata.name")


def expected_image(directory):
    """newName:newTag of the image `colltest` after this kustomization; 'colltest' if unset."""
    with open(os.path.join(directory, "kustomization.yaml"), encoding="utf-8") as stream:
        k = yaml.safe_load(stream)
    for entry in k.get("images", []):
        if entry.get("name") == "colltest":
            return f"{entry.get('newName', 'colltest')}:{entry['newTag']}"
    for resource in k.get("resources", []):
        sub = os.path.normpath(os.path.join(directory, resource))
        if os.path.isdir(sub):
            image = expected_image(sub)
            if image != "colltest":
                return image
    return "colltest"


def check_pod_security(f, where, spec, privileged_allowed):
    sc = spec.get("securityContext") or {}
    f.check(sc.get("runAsNonRoot") is True, where, "pod securityContext.runAsNonRoot is not true")
    f.check(sc.get("runAsUser") == IMAGE_UID, where, f"pod runAsUser is not {IMAGE_UID}")
    f.check((sc.get("seccompProfile") or {}).get("type") == "RuntimeDefault", where,
            "pod seccompProfile is not RuntimeDefault")
    f.check(not spec.get("hostNetwork") and not spec.get("hostPID"), where,
            "hostNetwork / hostPID: the NetworkPolicy and the node-local Service assume neither")
    for key in spec:
        f.check(key in POD_SPEC_KEYS, where, f"pod spec field {key!r} is not one this test knows")
    for c in spec.get("containers", []):
        cw = f"{where} container {c.get('name')}"
        for key in c:
            f.check(key in CONTAINER_KEYS, cw, f"container field {key!r} is not one this test knows")
        csc = c.get("securityContext") or {}
        f.check(csc.get("runAsNonRoot", True) is True and csc.get("runAsUser", IMAGE_UID) != 0,
                cw, "runs as root")
        f.check(csc.get("readOnlyRootFilesystem") is True, cw, "root filesystem is writable")
        f.check("ALL" in (csc.get("capabilities") or {}).get("drop", []), cw,
                "does not drop ALL capabilities")
        f.check(not (csc.get("capabilities") or {}).get("add"), cw, "adds capabilities")
        if csc.get("privileged"):
            f.check(privileged_allowed, cw, "privileged outside the rocm overlay")
            f.check(csc.get("allowPrivilegeEscalation") is True, cw,
                    "privileged with allowPrivilegeEscalation other than true: the API refuses it")
        else:
            f.check(csc.get("allowPrivilegeEscalation") is False, cw,
                    "allowPrivilegeEscalation is not false")
    for c in spec.get("initContainers", []):
        cw = f"{where} init container {c.get('name')}"
        csc = c.get("securityContext") or {}
        f.check(csc.get("readOnlyRootFilesystem") is True, cw, "root filesystem is writable")
        f.check(csc.get("allowPrivilegeEscalation") is False and not csc.get("privileged"), cw,
                "may escalate privileges")
        caps = csc.get("capabilities") or {}
        f.check("ALL" in caps.get("drop", []), cw, "does not drop ALL capabilities")
        f.check(set(caps.get("add", [])) <= {"CHOWN"}, cw, "adds capabilities beyond CHOWN")


def check_volumes(f, where, spec, objects, namespace):
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    f.check(len(volumes) == len(spec.get("volumes", [])), where, "two volumes share a name")
    mounted = set()
    for c in spec.get("containers", []) + spec.get("initContainers", []):
        for m in c.get("volumeMounts", []):
            mounted.add(m["name"])
            f.check(m["name"] in volumes, f"{where} container {c['name']}",
                    f"mounts volume {m['name']!r}, which the pod does not define")
    for name, v in volumes.items():
        f.check(name in mounted, where, f"volume {name!r} is mounted by no container")
        if "configMap" in v:
            cm = v["configMap"]["name"]
            found = [o for o in objects_of(objects, "ConfigMap") if name_of(o) == cm
                     and o["metadata"].get("namespace") == namespace]
            f.check(found, where, f"ConfigMap {cm!r} is not in the rendering")
        if "secret" in v:
            secret = v["secret"]["secretName"]
            f.check(secret in USER_CREATED_SECRETS or any(
                name_of(o) == secret for o in objects if o.get("kind") == "Secret"), where,
                f"Secret {secret!r} is neither rendered nor one the operator creates")


def check_env_refs(f, where, container):
    defined = {e["name"] for e in container.get("env", [])}
    for arg in container.get("command", []) + container.get("args", []):
        for ref in re.findall(r"\$\((\w+)\)", str(arg)):
            f.check(ref in defined, f"{where} container {container['name']}",
                    f"$({ref}) in its args is not in its env")


def service_for_host(f, where, address, objects, want_local):
    """The rendered Service an in-cluster DNS name (NAME.NS.svc.cluster.local:PORT) names."""
    host, _, port = address.rpartition(":")
    m = re.fullmatch(r"([a-z0-9-]+)\.([a-z0-9-]+)\.svc\.cluster\.local", host)
    if not f.check(m, where, f"{address}: not a Service's cluster DNS name"):
        return None
    svc = next((s for s in objects_of(objects, "Service") if name_of(s) == m.group(1)
                and s["metadata"].get("namespace") == m.group(2)), None)
    if not f.check(svc, where, f"{address}: no Service {m.group(2)}/{m.group(1)}"):
        return None
    f.check(int(port) in [p["port"] for p in svc["spec"]["ports"]], where,
            f"{address}: Service {name_of(svc)} has no port {port}")
    if want_local:
        f.check(svc["spec"].get("internalTrafficPolicy") == "Local", where,
                f"{address}: Service {name_of(svc)} is not internalTrafficPolicy: Local, so it "
                "may reach another node's colltestd")
    else:
        f.check(svc["spec"].get("clusterIP") == "None", where,
                f"{address}: Service {name_of(svc)} is not headless, so its name resolves to "
                "one address instead of every node's pod")
    return svc


def check_client_args(f, where, args, flags, want_local, objects):
    glob, sub, health, unknown = parse_client_args(args, flags["colltest"], flags["health"])
    f.check(not unknown, where, f"not flags of colltest / colltest health: {unknown}")
    f.check(sub == "health", where, f"subcommand {sub!r}, want health")
    token = glob.get("--token-file")
    f.check(token, where, "no --token-file: colltestd requires a token")
    if want_local:
        server = glob.get("--server")
        if f.check(server, where, "no --server"):
            service_for_host(f, where, server, objects, want_local=True)
    else:
        targets = health.get("--targets")
        if f.check(targets, where, "no --targets"):
            for target in targets.split(","):
                service_for_host(f, where, target, objects, want_local=False)
    if "--level" in health:
        f.check(health["--level"] in ("quick", "standard", "long"), where, "bad --level")
    if "--format" in health:
        f.check(health["--format"] in ("table", "json", "csv", "junit"), where, "bad --format")
    return glob, health


def check_colltestd(f, where, objects, flags, namespace, expect_image, privileged_allowed):
    daemonsets = objects_of(objects, "DaemonSet")
    if not f.check(len(daemonsets) == 1, where, "not exactly one DaemonSet"):
        return
    ds = daemonsets[0]
    dw = f"{where} DaemonSet/{name_of(ds)}"
    spec = pod_spec(ds)
    labels = pod_labels(ds)
    f.check(selects(ds["spec"]["selector"]["matchLabels"], labels), dw,
            "selector does not match the pod template's labels")
    f.check(ds["spec"].get("updateStrategy", {}).get("type") == "RollingUpdate", dw,
            "updateStrategy is not RollingUpdate")
    check_pod_security(f, dw, spec, privileged_allowed)
    check_volumes(f, dw, spec, objects, namespace)
    containers = {c["name"]: c for c in spec["containers"]}
    if not f.check("colltestd" in containers, dw, "no container colltestd"):
        return
    c = containers["colltestd"]
    cw = f"{dw} container colltestd"
    check_env_refs(f, dw, c)
    for x in spec["containers"] + spec.get("initContainers", []):
        f.check(x.get("image") == expect_image, f"{dw} container {x['name']}",
                f"image {x.get('image')!r}, want {expect_image!r}")

    args = [str(a) for a in c.get("args", [])]
    f.check("command" not in c, cw, "overrides the image's entrypoint (colltestd)")
    # The host name is the node's: the pod's changes whenever the pod is replaced, and it is the
    # metrics' Hostname label and part of the machine key the history is kept under.
    f.check(flag_value(args, "--hostname") == f"$({NODE_NAME_ENV})", cw,
            f"--hostname is {flag_value(args, '--hostname')!r}, want $({NODE_NAME_ENV})")
    node_env = next((e for e in c.get("env", []) if e.get("name") == NODE_NAME_ENV), {})
    f.check(node_env.get("valueFrom") == {"fieldRef": {"fieldPath": "spec.nodeName"}}
            and "value" not in node_env, cw,
            f"env {NODE_NAME_ENV} is not the downward API's spec.nodeName: {node_env}")
    f.check(not any(a.partition("=")[0] == "--allow-fault-injection" for a in args), cw,
            "--allow-fault-injection on nodes that jobs share (docs/security.md)")
    for a in args:
        f.check(a.startswith("--") and a.partition("=")[0] in flags["colltestd"], cw,
                f"arg {a!r} is not --FLAG=VALUE with a flag `colltestd --help` lists")
    ports = container_ports(c)
    for flag, port_name in (("--listen", "grpc"), ("--http", "http"), ("--health-listen", "health")):
        value = flag_value(args, flag)
        if f.check(value, cw, f"no {flag}") and f.check(port_name in ports, cw,
                                                       f"no container port {port_name}"):
            f.check(port_of(value) == ports[port_name], cw,
                    f"{flag}={value} but container port {port_name} is {ports[port_name]}")
    health_port = ports.get("health")
    for probe in PROBES:
        p = c.get(probe)
        if not f.check(p, cw, f"no {probe}"):
            continue
        grpc = p.get("grpc")
        if f.check(grpc, cw, f"{probe} is not a gRPC probe"):
            f.check(grpc.get("port") == health_port and grpc["port"] in ports.values(), cw,
                    f"{probe} port {grpc.get('port')} is not the --health-listen container port "
                    f"{health_port}")
            f.check(grpc.get("service", "") == "", cw,
                    f"{probe} asks service {grpc.get('service')!r}, want \"\" (process up)")

    # Paths the flags name are mounted from the right kind of volume.
    def volume_for(path):
        m = mount_for(c, path)
        return volume_named(spec, m["name"]) if m else None

    state = flag_value(args, "--state-dir")
    v = volume_for(state) if state else None
    f.check(v and "hostPath" in v, cw, f"--state-dir {state} is not on a hostPath volume")
    token = flag_value(args, "--token-file")
    v = volume_for(token) if token else None
    f.check(v and "secret" in v, cw, f"--token-file {token} is not on a Secret volume")
    for path, medium in (("/dev/shm", "Memory"), ("/tmp", None)):
        v = volume_for(path + "/x")
        f.check(v and "emptyDir" in v and v["emptyDir"].get("medium") == medium, cw,
                f"{path} is not an emptyDir" + (f" of medium {medium}" if medium else ""))

    config = flag_value(args, "--config")
    if f.check(config, cw, "no --config"):
        m = mount_for(c, config)
        v = volume_named(spec, m["name"]) if m else None
        if f.check(v and "configMap" in v, cw, f"--config {config} is not on a ConfigMap volume"):
            cm = next((o for o in objects_of(objects, "ConfigMap")
                       if name_of(o) == v["configMap"]["name"]), None)
            key = os.path.relpath(config, m["mountPath"])
            if f.check(cm and key in (cm.get("data") or {}), cw,
                       f"ConfigMap {v['configMap']['name']} has no key {key}"):
                check_toml(f, f"{where} ConfigMap/{name_of(cm)} {key}", cm["data"][key], args,
                           flags, c)

    # Services.
    for svc in objects_of(objects, "Service"):
        sw = f"{where} Service/{name_of(svc)}"
        f.check(selects(svc["spec"].get("selector"), labels), sw,
                "selector does not match the DaemonSet's pods")
        for cj in objects_of(objects, "CronJob"):
            f.check(not selects(svc["spec"].get("selector"), pod_labels(cj)), sw,
                    f"selector also matches CronJob/{name_of(cj)}'s pods")
        for p in svc["spec"]["ports"]:
            target = p.get("targetPort", p["port"])
            ok = target in ports if isinstance(target, str) else target in ports.values()
            f.check(ok, sw, f"port {p.get('name')}: targetPort {target!r} is no container port")
            f.check(p.get("name") in ports, sw, f"port name {p.get('name')!r} is no container "
                    "port's name")
    headless = [s for s in objects_of(objects, "Service") if s["spec"].get("clusterIP") == "None"]
    f.check(headless, where, "no headless Service for the fleet check")
    for s in headless:
        f.check({p.get("name") for p in s["spec"]["ports"]} == {"grpc", "http"}, where,
                f"headless Service {name_of(s)} ports are not grpc and http")

    # NetworkPolicy.
    policies = objects_of(objects, "NetworkPolicy")
    f.check(policies, where, "no NetworkPolicy")
    for np in policies:
        nw = f"{where} NetworkPolicy/{name_of(np)}"
        f.check(selects(np["spec"]["podSelector"].get("matchLabels"), labels), nw,
                "podSelector does not select the DaemonSet's pods")
        f.check("Ingress" in np["spec"].get("policyTypes", []), nw, "no Ingress policy type")
        rules = np["spec"].get("ingress", [])
        for rule in rules:
            for p in rule.get("ports", []):
                f.check(p.get("port") in ports.values(), nw, f"port {p.get('port')} is no "
                        "container port")
        for name in ("grpc", "http"):
            covering = [r for r in rules if ports.get(name) in [p.get("port") for p in
                                                                 r.get("ports", [])]]
            f.check(covering, nw, f"no rule admits the {name} port")
            f.check(all(r.get("from") for r in covering), nw,
                    f"the {name} port is open to every source")
            for cj in objects_of(objects, "CronJob"):
                f.check(any(selects((peer.get("podSelector") or {}).get("matchLabels"),
                                    pod_labels(cj)) and "namespaceSelector" not in peer
                            for r in covering for peer in r.get("from", [])), nw,
                        f"CronJob/{name_of(cj)}'s pods may not reach the {name} port")
        f.check(any(not r.get("from") and health_port in [p.get("port") for p in
                                                         r.get("ports", [])] for r in rules), nw,
                "the health port is not open to all (the kubelet's probes)")
        check_prometheus_ingress(f, nw, rules, ports)

    check_scrape_annotations(f, where, objects, ports)

    # The fleet checks.
    cronjobs = objects_of(objects, "CronJob")
    f.check(cronjobs, where, "no CronJob (the fleet check)")
    levels = {}  # CronJob name -> (--level, suspended)
    for cj in cronjobs:
        jw = f"{where} CronJob/{name_of(cj)}"
        f.check(cj["spec"].get("concurrencyPolicy") == "Forbid", jw, "concurrencyPolicy not Forbid")
        deadline = cj["spec"]["jobTemplate"]["spec"].get("activeDeadlineSeconds")
        f.check(deadline, jw, "no activeDeadlineSeconds")
        cspec = pod_spec(cj)
        f.check(cspec.get("restartPolicy") in ("Never", "OnFailure"), jw, "bad restartPolicy")
        check_pod_security(f, jw, cspec, privileged_allowed=False)
        check_volumes(f, jw, cspec, objects, namespace)
        for x in cspec["containers"]:
            xw = f"{jw} container {x['name']}"
            f.check(x.get("image") == expect_image, xw,
                    f"image {x.get('image')!r}, want {expect_image!r}")
            f.check(x.get("command") == [CLIENT], xw, f"command is not [{CLIENT}]")
            check_env_refs(f, jw, x)
            glob, health = check_client_args(f, xw, x.get("args", []), flags, False, objects)
            token = glob.get("--token-file")
            m = mount_for(x, token) if token else None
            v = volume_named(cspec, m["name"]) if m else None
            f.check(v and "secret" in v, xw, f"--token-file {token} is not on a Secret volume")
            level = health.get("--level", "quick")
            levels[name_of(cj)] = (level, bool(cj["spec"].get("suspend")))
            f.check("--node-timeout" not in health and "--retries" not in health
                    and "--timeout" not in health, xw,
                    "--node-timeout, --retries or --timeout: the deadline check below assumes "
                    "the defaults")
            want = (1 + FLEET_RETRIES) * LEVEL_DEADLINE_S.get(level, 0)
            f.check(isinstance(deadline, int) and deadline >= want, xw,
                    f"activeDeadlineSeconds {deadline} is below {want} s, (1 + {FLEET_RETRIES} "
                    f"retries) x the {level} check's deadline per node")
    f.check(any(level in ("standard", "long") and not suspended
                for level, suspended in levels.values()), where,
            f"no scheduled CronJob checks pairs (--level standard or long): {levels}; "
            "colltest_link_health and ColltestLinkUnhealthy would never be fed")
    f.check(any(level == "long" for level, _ in levels.values()), where,
            f"no CronJob runs --level long: {levels}; the link bandwidth series and "
            "ColltestLinkBelowExpected would never be fed")


def is_prometheus_peer(peer):
    """A NetworkPolicy peer that is Prometheus' pods in PROMETHEUS_NAMESPACE (and nothing wider)."""
    ns = (peer.get("namespaceSelector") or {}).get("matchLabels") or {}
    pods = (peer.get("podSelector") or {}).get("matchLabels") or {}
    return (ns == {"kubernetes.io/metadata.name": PROMETHEUS_NAMESPACE}
            and pods == PROMETHEUS_POD_LABELS)


def check_prometheus_ingress(f, where, rules, ports):
    """Prometheus reaches the HTTP port (its /metrics) and no other port."""
    admitted = set()
    for rule in rules:
        if any(is_prometheus_peer(peer) for peer in rule.get("from", [])):
            rule_ports = [p.get("port") for p in rule.get("ports", [])]
            f.check(rule_ports, where, "a rule admits Prometheus to every port")
            admitted.update(rule_ports)
    f.check(admitted == {ports.get("http")}, where,
            f"Prometheus ({PROMETHEUS_POD_LABELS} in namespace {PROMETHEUS_NAMESPACE}) is admitted "
            f"to ports {sorted(admitted, key=str)}, want the http port {ports.get('http')} alone")


def service_port_target(port, container_ports):
    """The container port number a Service port (a dict) leads to; None if none."""
    target = port.get("targetPort", port["port"])
    return container_ports.get(target) if isinstance(target, str) else target


def check_scrape_annotations(f, where, objects, ports):
    """prometheus.io/* on a Service: scrape "true", the --http container port, /metrics."""
    annotated = [s for s in objects_of(objects, "Service")
                 if ((s["metadata"].get("annotations") or {}).get("prometheus.io/scrape")) == "true"]
    if not f.check(annotated, where, "no Service annotated prometheus.io/scrape: \"true\""):
        return
    for svc in annotated:
        sw = f"{where} Service/{name_of(svc)}"
        ann = svc["metadata"]["annotations"]
        f.check(ann.get("prometheus.io/port") == str(ports.get("http")), sw,
                f"prometheus.io/port {ann.get('prometheus.io/port')!r} is not the http container "
                f"port {ports.get('http')}")
        f.check(ann.get("prometheus.io/path") == METRICS_PATH, sw,
                f"prometheus.io/path {ann.get('prometheus.io/path')!r}, want {METRICS_PATH}")
        f.check(ann.get("prometheus.io/scheme", "http") == "http", sw,
                "prometheus.io/scheme is not http (TLS is off until colltestd.toml turns it on)")
        f.check(any(p["port"] == ports.get("http") and
                    service_port_target(p, ports) == ports.get("http")
                    for p in svc["spec"]["ports"]), sw,
                "no Service port on the annotated port that leads to the http container port")


def check_monitoring(f, where, monitors, rel, objects):
    """monitoring/'s ServiceMonitor against one rendering of the base (rel, objects)."""
    sms = objects_of(monitors, "ServiceMonitor")
    if not f.check(len(sms) == 1, where, "not exactly one ServiceMonitor"):
        return
    sm = sms[0]
    sw = f"{where} ServiceMonitor/{name_of(sm)} against {rel}"
    ds = objects_of(objects, "DaemonSet")
    if len(ds) != 1:
        return  # check_colltestd reports it
    spec = pod_spec(ds[0])
    c = next((c for c in spec["containers"] if c["name"] == "colltestd"), None)
    if c is None:
        return
    ports = container_ports(c)
    args = [str(a) for a in c.get("args", [])]
    http = flag_value(args, "--http")
    http_port = port_of(http) if http else None
    namespace = ds[0]["metadata"].get("namespace")
    f.check(sm["metadata"].get("namespace") == namespace, sw,
            f"namespace {sm['metadata'].get('namespace')!r}: the basicAuth Secret must be in "
            f"{namespace!r} with it")
    wanted = (sm["spec"].get("namespaceSelector") or {}).get("matchNames") or [
        sm["metadata"].get("namespace")]
    f.check(namespace in wanted, sw, f"namespaceSelector does not include {namespace}")
    selector = (sm["spec"].get("selector") or {}).get("matchLabels")
    f.check(not (sm["spec"].get("selector") or {}).get("matchExpressions"), sw,
            "matchExpressions are not checked here: select by matchLabels")
    selected = [s for s in objects_of(objects, "Service")
                if selects(selector, s["metadata"].get("labels") or {})
                and s["metadata"].get("namespace") in wanted]
    if not f.check(selected, sw, f"selector {selector} matches no Service's labels"):
        return
    endpoints = sm["spec"].get("endpoints") or []
    f.check(endpoints, sw, "no endpoints")
    policies = objects_of(objects, "NetworkPolicy")
    for ep in endpoints:
        ew = f"{sw} endpoint {ep.get('port')}"
        f.check(ep.get("path") == METRICS_PATH, ew, f"path {ep.get('path')!r}, want {METRICS_PATH}")
        f.check(ep.get("scheme", "http") == "http", ew, "scheme is not http")
        for svc in selected:
            sp = next((p for p in svc["spec"]["ports"] if p.get("name") == ep.get("port")), None)
            if f.check(sp, ew, f"Service {name_of(svc)} has no port named {ep.get('port')!r}"):
                f.check(service_port_target(sp, ports) == http_port == ports.get("http"),
                        ew, f"Service {name_of(svc)} port {ep.get('port')} does not lead to the "
                        f"--http container port {http_port}")
        if flag_value(args, "--token-file"):
            auth = ep.get("basicAuth") or {}
            for key in ("username", "password"):
                ref = auth.get(key) or {}
                f.check(ref.get("name") in USER_CREATED_SECRETS and ref.get("key") == key, ew,
                        f"basicAuth.{key} is not key {key} of a Secret docs/kubernetes.md "
                        f"describes ({ref}): colltestd has --token-file, so /metrics asks for "
                        "Basic auth")
        for np in policies:
            f.check(any(any(is_prometheus_peer(peer) for peer in r.get("from", []))
                        and http_port in [p.get("port") for p in r.get("ports", [])]
                        for r in np["spec"].get("ingress", [])), ew,
                    f"NetworkPolicy/{name_of(np)} does not admit Prometheus to port {http_port}")


def check_toml(f, where, text, args, flags, container):
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        f.check(False, where, f"not TOML: {e}")
        return
    commented = re.findall(r"(?m)^#\s*([a-z][\w-]*\s*=.*)$", text)
    try:
        data_commented = tomllib.loads("\n".join(commented))
    except tomllib.TOMLDecodeError as e:
        f.check(False, where, f"a commented-out setting is not TOML: {e}")
        data_commented = {}
    in_args = {a.partition("=")[0] for a in args}
    for key, value in list(data.items()) + list(data_commented.items()):
        f.check(f"--{key}" in flags["colltestd"], where,
                f"{key!r} is not a colltestd flag (colltestd would ignore it)")
        f.check(f"--{key}" not in in_args, where, f"{key!r} is also in the DaemonSet's args")
        if isinstance(value, str) and value.startswith("/"):
            f.check(mount_for(container, value), where, f"{key} = {value}: not on a mounted volume")


def check_npd(f, where, objects, flags, colltest_objects):
    maps = objects_of(objects, "ConfigMap")
    if not f.check(len(maps) == 1, where, "not exactly one ConfigMap"):
        return
    cm = maps[0]
    data = cm.get("data") or {}
    f.check(len(data) == 1, where, "the NPD ConfigMap should hold one monitor config")
    for key, text in data.items():
        kw = f"{where} ConfigMap/{name_of(cm)} {key}"
        try:
            config = json.loads(text)
        except json.JSONDecodeError as e:
            f.check(False, kw, f"not JSON: {e}")
            continue
        f.check(config.get("plugin") == "custom", kw, "plugin is not custom")
        f.check(config.get("source") == "colltest-health", kw, "source is not colltest-health")
        pc = config.get("pluginConfig") or {}
        try:
            interval = go_duration_seconds(pc.get("invoke_interval", ""))
            timeout = go_duration_seconds(pc.get("timeout", ""))
        except ValueError as e:
            f.check(False, kw, f"pluginConfig: {e}")
            interval = timeout = 0
        f.check(0 < timeout < interval, kw, "timeout not below invoke_interval")
        f.check(pc.get("concurrency") == 1, kw, "concurrency is not 1")
        f.check(isinstance(pc.get("max_output_length"), int), kw, "no max_output_length")
        f.check(pc.get("enable_message_change_based_condition_update") is False, kw,
                "enable_message_change_based_condition_update is not false")
        conditions = {c.get("type"): c for c in config.get("conditions", [])}
        f.check(set(conditions) == NPD_CONDITIONS, kw,
                f"conditions {sorted(conditions)}, want {sorted(NPD_CONDITIONS)}")
        for c in conditions.values():
            f.check(c.get("reason") and c.get("message"), kw,
                    f"condition {c.get('type')} has no default reason and message")
        rules = config.get("rules", [])
        f.check({r.get("condition") for r in rules} == NPD_CONDITIONS, kw,
                "not one rule per condition")
        for r in rules:
            rw = f"{kw} rule {r.get('condition')}"
            f.check(r.get("type") == "permanent", rw, "type is not permanent")
            f.check(r.get("condition") in conditions, rw, "condition is not declared")
            f.check(r.get("reason") and r.get("reason") != conditions.get(
                r.get("condition"), {}).get("reason"), rw,
                "reason is empty or the condition's default (False) reason")
            f.check(r.get("path") == CLIENT, rw, f"path is not {CLIENT}")
            try:
                f.check(go_duration_seconds(r.get("timeout", pc.get("timeout", ""))) <= timeout,
                        rw, "timeout above the global timeout (NPD refuses the config)")
            except ValueError as e:
                f.check(False, rw, str(e))
            _, health = check_client_args(f, rw, r.get("args", []), flags, True, colltest_objects)
            f.check(health.get("--npd") == r.get("condition"), rw,
                    f"--npd {health.get('--npd')!r} is not the rule's condition")
            f.check("--max-verdict-age" in health, rw, "no --max-verdict-age")


def check_docs(f):
    if not f.check(os.path.isfile(DOC), "docs/kubernetes.md", "missing"):
        return
    with open(DOC, encoding="utf-8") as stream:
        text = stream.read()
    for secret in sorted(USER_CREATED_SECRETS):
        f.check(secret in text, "docs/kubernetes.md", f"does not say how to create {secret}")
    for needle in ["overlays/cuda", "overlays/rocm", "create job --from=cronjob/colltest-fleet-health",
                   "create job --from=cronjob/colltest-fleet-health-long", "--allow-fault-injection",
                   "--hostname=$(NODE_NAME)",
                   "colltest-npd-plugin", "colltest-access=true", "deploy/kubernetes/monitoring",
                   f"kubernetes.io/metadata.name={PROMETHEUS_NAMESPACE}"]:
        f.check(needle in text, "docs/kubernetes.md", f"does not mention {needle}")


def compare_with_kubectl(f, rel, ours, use_kubectl):
    kubectl = shutil.which("kubectl") if use_kubectl else None
    if not kubectl:
        return False
    out = subprocess.run([kubectl, "kustomize", os.path.join(K8S, rel)], capture_output=True,
                         text=True, timeout=120)
    if not f.check(out.returncode == 0, rel, f"kubectl kustomize fails: {out.stderr.strip()}"):
        return True
    theirs = [d for d in yaml.safe_load_all(out.stdout) if d is not None]
    f.check(theirs == ours, rel, "kustomize_render.py and kubectl kustomize disagree")
    return True


def main():
    parser = argparse.ArgumentParser(description="Checks deploy/kubernetes.")
    parser.add_argument("--bin-dir", required=True, help="holds the built colltestd and colltest")
    parser.add_argument("--no-kubectl", action="store_true",
                        help="do not compare with `kubectl kustomize` even when it is installed")
    args = parser.parse_args()

    flags = {
        "colltestd": help_flags([os.path.join(args.bin_dir, "colltestd")]),
        "colltest": help_flags([os.path.join(args.bin_dir, "colltest")]),
        "health": help_flags([os.path.join(args.bin_dir, "colltest"), "health"]),
    }
    f = Failures()
    check_files(f)
    check_docs(f)

    renderings, kubectl_used = {}, False
    for rel in KUSTOMIZATIONS:
        try:
            renderings[rel] = kustomize_render.render(os.path.join(K8S, rel))
        except (kustomize_render.RenderError, OSError, yaml.YAMLError) as e:
            f.check(False, rel, f"does not render: {e}")
            continue
        kubectl_used |= compare_with_kubectl(f, rel, renderings[rel], not args.no_kubectl)

    for rel, objects in renderings.items():
        if rel in ADD_ONS:
            continue
        namespace = next((name_of(o) for o in objects_of(objects, "Namespace")), None)
        f.check(namespace and all(o["metadata"].get("namespace") == namespace for o in objects
                                  if o["kind"] != "Namespace"), rel,
                "objects are not all in the rendering's Namespace")
        check_colltestd(f, rel, objects, flags, namespace, expected_image(os.path.join(K8S, rel)),
                        privileged_allowed=rel == "overlays/rocm")
    if "npd" in renderings and "base" in renderings:
        check_npd(f, "npd", renderings["npd"], flags, renderings["base"])
    if "monitoring" in renderings:
        for rel, objects in renderings.items():
            if rel not in ADD_ONS:
                check_monitoring(f, "monitoring", renderings["monitoring"], rel, objects)

    for file, rel in PLAIN_FILES.items():
        path = os.path.join(K8S, file)
        if not f.check(os.path.isfile(path), file, f"missing (render {rel})"):
            continue
        with open(path, encoding="utf-8") as stream:
            committed = stream.read()
        want = kustomize_render.committed_text(os.path.join(K8S, rel), rel, file)
        f.check(committed == want, f"deploy/kubernetes/{file}",
                f"differs from the rendering of {rel}; run: tests/deploy/kustomize_render.py "
                f"deploy/kubernetes/{rel} -o deploy/kubernetes/{file}")
        images = {c.get("image") for o in yaml.safe_load_all(committed) if o
                  if o.get("kind") in ("DaemonSet", "CronJob")
                  for c in pod_spec(o)["containers"] + pod_spec(o).get("initContainers", [])}
        f.check(images == {f"colltest:{rel.split('/')[-1]}"}, file, f"images {sorted(images)}")

    for item in f.items:
        print(f"FAIL {item}")
    note = "" if kubectl_used else " (kubectl not used)"
    print(f"{f.checks - len(f.items)}/{f.checks} checks passed{note}")
    return 1 if f.items else 0


if __name__ == "__main__":
    sys.exit(main())
