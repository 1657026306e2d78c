#!/usr/bin/env python3
"""colltestd's fleet metrics on the GPU box, against a running colltestd (--http, fault injection).

What the cpu backend cannot show: the per-GPU series carry the GPU's own DCGM-exporter labels
(a UUID "GPU-...", the PCI bus id, the model, the host) and, with colltestd --ranks-per-gpu, the
slots of one GPU fold into that GPU's single label set. Runs a graph sweep at W=2 (m = 1 and 64:
two size classes), a hang with a culprit, and health checks (standard: pairs and the self test),
scrapes /metrics after each, and checks the series docs/metrics.md promises; then that every
metric name the Grafana dashboards and the alert rules use is in the GPU scrape. Writes
metrics_box.json and metrics_box.txt (the last scrape); exits 1 when a check failed.
"""
import glob
import json
import os
import re
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "metrics"))
import grafana_test  # noqa: E402
import promql_refs  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")


class Box:
    """The running colltestd: the CLI, its gRPC and HTTP addresses, where results go."""
    colltest = addr = http = out = ""
    devices = "0,1"


def cli(*args, timeout=240):
    p = subprocess.run([Box.colltest, "--server", Box.addr, *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr


def scrape():
    text = urllib.request.urlopen(f"http://{Box.http}/metrics", timeout=10).read().decode()
    return text, promql_refs.Scrape(text)


def series(text, name):
    """[(labels dict, value)] of every sample of `name`."""
    rows = []
    for line in text.splitlines():
        m = re.match(r"^" + re.escape(name) + r"\{(.*)\} (\S+)$", line)
        if m:
            rows.append((dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', m.group(1))),
                         float(m.group(2))))
    return rows


def one_hot(text, name, key_labels, value_label):
    """{"gpu" or "gpu-peer_gpu": [label values at 1]} of a one-hot family."""
    hot = {}
    for labels, value in series(text, name):
        key = "-".join(labels.get(k, "?") for k in key_labels)
        hot.setdefault(key, [])
        if value == 1:
            hot[key].append(labels[value_label])
    return hot


def dashboard_and_alert_names():
    names = set()
    for path in sorted(glob.glob(os.path.join(ROOT, "deploy", "grafana", "*.json"))):
        d = json.load(open(path))
        for p in grafana_test.all_panels(d):
            for t in p.get("targets", []):
                if t.get("expr"):
                    names |= promql_refs.references(grafana_test.substitute(t["expr"])).names
        for v in d.get("templating", {}).get("list", []):
            q = grafana_test.variable_query(v)
            m = grafana_test.LABEL_VALUES.match(q or "")
            if m and m.group(1):
                names |= promql_refs.references(grafana_test.substitute(m.group(1))).names
    for expr in rule_exprs(os.path.join(ROOT, "deploy", "prometheus", "colltest-alerts.yml")):
        names |= promql_refs.references(expr).names
    return names - {"up"}  # Prometheus' own series of a target


def rule_exprs(path):
    """Every `expr:` of a rule file, a folded or literal block (`expr: >`) included: the box's
    python3 may lack PyYAML, and the rules' layout is ours."""
    exprs, block, indent = [], None, 0
    for line in open(path).read().splitlines():
        if block is not None:
            if line.strip() and len(line) - len(line.lstrip()) > indent:
                block.append(line.strip())
                continue
            exprs.append(" ".join(block))
            block = None
        m = re.match(r"^(\s*)expr:\s*(.*)$", line)
        if not m:
            continue
        if m.group(2) in (">", "|", ">-", "|-"):
            block, indent = [], len(m.group(1))
        else:
            exprs.append(m.group(2).strip().strip("'\""))
    if block:
        exprs.append(" ".join(block))
    return exprs


# Names a box with one GPU cannot show: the long level measures bandwidth between two GPUs, and
# two slots of one GPU have no link figure (docs/metrics.md). The cpu test (metrics.grafana_live)
# sees them.
ONE_GPU_CANNOT_SHOW = {"colltest_link_busbw_bytes_per_second",
                       "colltest_link_expected_busbw_bytes_per_second"}


def check_labels(checks, rows):
    """Before any run: one GPU's DCGM labels, its slots folded into it."""
    text, _ = scrape()
    info = series(text, "colltest_device_info")
    rows["device_info"] = [l for l, _ in info]
    uuid_ok = all(re.fullmatch(r"GPU-[0-9a-f-]{36}", l.get("UUID", "")) for l, _ in info)
    bus_ok = all(re.fullmatch(r"[0-9a-fA-F]{4,8}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]",
                              l.get("pci_bus_id", "")) for l, _ in info)
    checks["one device_info per GPU, not per slot"] = len(info) == 1
    checks["UUID GPU-..., PCI bus id, model and host on device_info"] = (
        bool(info) and uuid_ok and bus_ok
        and all(l.get("modelName") and l.get("Hostname") for l, _ in info))
    checks["the GPU's own link (two slots) is a health series"] = any(
        l.get("gpu") == l.get("peer_gpu") for l, _ in series(text, "colltest_link_health"))


def check_cases(checks, rows):
    """A graph sweep of two size classes, then a hang whose culprit is a slot of the GPU."""
    rc, _ = cli("run", "--world", "2", "--devices", Box.devices, "--m", "1,64", "--n", "7168",
                "--variants", "one_stage,lamport", "--modes", "graph", "--format", "json")
    text, _ = scrape()
    busbw = series(text, "colltest_case_busbw_bytes_per_second")
    rows["sweep_exit"] = rc
    rows["busbw"] = [[l["variant"], l["mode"], l["world"], l["dtype"], l["size_class"], v]
                     for l, v in busbw]
    checks["sweep exits 0"] = rc == 0
    checks["busbw gauges of both size classes, world 2, bf16, graph, > 0"] = (
        {l["size_class"] for l, v in busbw if l["world"] == "2" and l["dtype"] == "bf16"
         and l["mode"] == "graph" and v > 0} == {"le_64KiB", "le_1MiB"})
    rc, _ = cli("run", "--world", "2", "--devices", Box.devices, "--m", "1", "--n", "7168",
                "--variants", "lamport", "--modes", "graph", "--timeout", "1s", "--fault",
                "hang_end_sync:1", "--format", "json")
    text, _ = scrape()
    hangs = [(l, v) for l, v in series(text, "colltest_hangs_total") if v > 0]
    rows["hang_exit"] = rc
    rows["hangs"] = [[l, v] for l, v in hangs]
    checks["a slot's hang is counted under its GPU's UUID"] = (
        len(hangs) == 1 and hangs[0][0].get("UUID", "").startswith("GPU-")
        and hangs[0][0].get("rank") == "1")


def health_check(*args):
    """One `colltest health` and the health series after it."""
    t0 = time.monotonic()
    rc, report = cli("health", "--devices", Box.devices, *args, "--format", "json")
    text, _ = scrape()
    return {
        "exit": rc, "wall_s": round(time.monotonic() - t0, 2),
        "device_health": one_hot(text, "colltest_device_health", ["gpu"], "status"),
        "link_health": one_hot(text, "colltest_link_health", ["gpu", "peer_gpu"], "status"),
        "self_test": [l["result"] for l, v in series(text, "colltest_health_self_test") if v == 1],
        "message": (json.loads(report).get("message") if report.startswith("{")
                    else report[-300:])}


def check_health(checks, rows):
    """Level standard (pairs and the self test), then a planted hang that must move nothing."""
    st = health_check("--level", "standard")
    hang = health_check("--pairs", "--fault", "hang_end_sync:1", "--timeout", "1s")
    rows["health"] = {"standard": st, "hang": hang}
    checks["standard: one status per GPU and link, device ok, self test passed"] = (
        st["exit"] == 0 and all(len(v) == 1 for v in st["device_health"].values())
        and all(len(v) == 1 for v in st["link_health"].values())
        and list(st["device_health"].values()) == [["ok"]] and st["self_test"] == ["passed"])
    # A planted fault tests colltest, not the machine: the health series keep the standard verdict.
    checks["planted hang: exit 2, the GPU and its links keep the machine's verdict"] = (
        hang["exit"] == 2 and hang["device_health"] == st["device_health"]
        and hang["link_health"] == st["link_health"])


def check_dashboard_names(checks, rows):
    """Every metric the Grafana dashboards and the alert rules use, in the GPU's scrape."""
    final, parsed = scrape()
    wanted = dashboard_and_alert_names()
    missing = sorted(n for n in wanted - ONE_GPU_CANNOT_SHOW if not parsed.has(n))
    rows["dashboard_names"] = len(wanted)
    rows["dashboard_names_missing"] = missing
    checks[f"every metric of the dashboards and alerts in the GPU scrape ({len(wanted)})"] = (
        not missing)
    open(f"{Box.out}/metrics_box.txt", "w").write(final)


def report(checks, rows):
    print("\nfleet metrics on the box (W=2 on slots of one GPU):")
    for l in rows["device_info"]:
        print("  device_info " + ", ".join(f"{k}={v}" for k, v in sorted(l.items())))
    for r in rows["busbw"]:
        print(f"  busbw {r[0]} {r[1]} world={r[2]} {r[3]} {r[4]}: {r[5] / 1e9:.3f} GB/s")
    for name, h in rows["health"].items():
        print(f"  health {name}: exit {h['exit']} in {h['wall_s']} s; devices "
              f"{h['device_health']}; links {h['link_health']}; self test {h['self_test']}")
    if rows["dashboard_names_missing"]:
        print("  missing from the scrape: " + ", ".join(rows["dashboard_names_missing"]))
    failed = [name for name, ok in checks.items() if not ok]
    print(f"metrics checks: {len(checks) - len(failed)}/{len(checks)} passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


def main():
    Box.colltest, Box.addr, Box.http, Box.out = sys.argv[1:5]
    Box.devices = os.environ.get("COLLTEST_BOX_DEVICES", Box.devices)
    checks, rows = {}, {}
    for phase in (check_labels, check_cases, check_health, check_dashboard_names):
        phase(checks, rows)
    rows["checks"] = checks
    json.dump(rows, open(f"{Box.out}/metrics_box.json", "w"), indent=1)
    return report(checks, rows)


if __name__ == "__main__":
    sys.exit(main())
