#!/usr/bin/env python3
"""colltestd's /metrics as Prometheus sees it (docs/metrics.md).

Starts a real colltestd on the cpu backend, scrapes /metrics before any run and after a sweep, a
hang and a wrong result, and after a health check of every pair and a comparison, and pipes each
scrape into `promtool check metrics`, which must pass without a single lint problem. Between the
scrapes it checks that the series an alert needs exist at zero from the start and that the events
moved them.
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "pylib"))
from colltestd_process import Colltestd, ColltestdError  # noqa: E402

START_TIMEOUT_S = 30
RUN_TIMEOUT_S = 120

STATUSES = ("ok", "wrong", "hang", "error", "unsupported")
VARIANTS = ("one_stage", "two_kernel", "lamport", "lamport_tb", "nccl", "auto")
MODES = ("eager", "graph")
CPU_RANKS = 4

SERIES_LINE = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*(?:\{[^}]*\})?) (\S+)$")
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
HEALTH_STATUSES = ("ok", "warn", "wrong", "hang", "error", "unsupported")
# The labels DCGM-exporter gives a GPU, which colltestd's per-GPU series carry too.
GPU_LABELS = ("gpu", "UUID", "pci_bus_id", "modelName", "Hostname")


class Failures:
    def __init__(self):
        self.items = []

    def add(self, what):
        self.items.append(what)
        print(f"FAIL: {what}", file=sys.stderr)


def parse(text):
    """A scrape as {series: value}, the series as the text shows it (labels sorted by name)."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = SERIES_LINE.match(line)
        if match is None:
            raise ValueError(f"unparsable scrape line: {line!r}")
        series[match.group(1)] = float(match.group(2))
    return series


def labels(name, **values):
    """`name{a="x",b="y"}` with the labels sorted, as prometheus-cpp writes them."""
    inner = ",".join(f'{k}="{values[k]}"' for k in sorted(values))
    return f"{name}{{{inner}}}"


def family(series, name):
    """Every series of family `name` as [(labels as a dict, value)]."""
    found = []
    for key, value in series.items():
        if key.startswith(name + "{"):
            found.append((dict(LABEL.findall(key[len(name):])), value))
    return found


def gpus(series):
    """The GPUs colltest_device_info names, each as its DCGM label set, by `gpu`."""
    return {info["gpu"]: info for info, _ in family(series, "colltest_device_info")}


def start_colltestd(colltestd, state_dir):
    """A colltestd with an HTTP port, its log in state_dir; fails when it serves no /metrics."""
    daemon = Colltestd(colltestd,
                       ["--backend", "cpu", "--cpu-ranks", str(CPU_RANKS), "--listen",
                        "127.0.0.1:0", "--http", "127.0.0.1:0", "--allow-fault-injection"],
                       state_dir=state_dir, log_path=os.path.join(state_dir, "colltestd.log"),
                       start_timeout_s=START_TIMEOUT_S)
    if daemon.http_address is None:
        daemon.stop(check=False)
        raise ColltestdError("colltestd printed no listening line with an http address")
    return daemon


def scrape(http):
    with urllib.request.urlopen(f"http://{http}/metrics", timeout=10) as reply:
        return reply.read().decode()


def lintable(text):
    """The scrape with DCGM-exporter's label name `modelName` written `model_name`: promtool's lint
    wants snake_case label names, and colltestd keeps DCGM's name so that its series join DCGM's
    (docs/metrics.md). Every other name is linted as colltestd writes it."""
    return re.sub(r"([{,])modelName=", r"\1model_name=", text)


def promtool_check(promtool, text, when, failures):
    """`promtool check metrics` must exit 0 and report nothing (a lint problem is a failure)."""
    result = subprocess.run([promtool, "check", "metrics"], input=lintable(text),
                            capture_output=True, text=True, timeout=60)
    said = (result.stdout + result.stderr).strip()
    if result.returncode != 0 or said:
        failures.add(f"promtool check metrics {when}: exit {result.returncode}: {said}")


def colltest(cli, server, *args):
    return subprocess.run([cli, "--server", server, *args], capture_output=True, text=True,
                          timeout=RUN_TIMEOUT_S)


def expect(series, name, want, failures, when):
    got = series.get(name)
    if got != want:
        failures.add(f"{when}: {name} is {got}, expected {want}")


def check_fresh(series, version, failures):
    """Before any run: build info, and every series whose labels are known, at zero."""
    when = "before any run"
    info = [s for s in series if s.startswith("colltest_build_info{")]
    want_info = re.compile(r'colltest_build_info\{backend="cpu",commit="[^"]+",version="'
                           + re.escape(version) + r'"\}')
    if len(info) != 1 or not want_info.fullmatch(info[0]) or series[info[0]] != 1:
        failures.add(f"{when}: colltest_build_info for backend cpu, version {version}: {info}")
    for status in STATUSES:
        expect(series, labels("colltest_health_checks_total", status=status), 0, failures, when)
        expect(series, labels("colltest_health_status", status=status), 0, failures, when)
        for variant in VARIANTS:
            for mode in MODES:
                expect(series, labels("colltest_cases_total", status=status, variant=variant,
                                      mode=mode), 0, failures, when)
    # The per-case latency histograms and gauges appear with the first case of their label set.
    if family(series, "colltest_case_latency_seconds_count"):
        failures.add(f"{when}: colltest_case_latency_seconds has series before any case")
    check_fresh_gpus(series, failures, when)
    for verdict in ("same", "regression", "improvement", "only_a", "only_b"):
        expect(series, labels("colltest_compare_cases_total", verdict=verdict), 0, failures, when)
    for result in ("passed", "failed", "not_run"):
        expect(series, labels("colltest_health_self_test", result=result), 0, failures, when)
    for reason in ("cap", "handshake_timeout", "bad_preface", "accept_error", "peer_limit",
                   "first_call_timeout", "evicted"):
        expect(series, labels("colltest_connections_refused_total", reason=reason), 0, failures,
               when)
    for name in ("colltest_worker_restarts_total", "colltest_case_wall_seconds_count",
                 "colltest_health_last_check_timestamp_seconds"):
        expect(series, name, 0, failures, when)
    if not series.get("colltest_start_time_seconds", 0) > 1.6e9:
        failures.add(f"{when}: colltest_start_time_seconds is not a Unix time")
    if any(s.startswith("colltest_case_latency_us") for s in series):
        failures.add(f"{when}: the old colltest_case_latency_us is still exported")


def check_fresh_gpus(series, failures, when):
    """The node and its GPUs in DCGM's labels; hangs and per-GPU and per-link health at 0."""
    nodes = family(series, "colltest_node_info")
    if len(nodes) != 1 or nodes[0][0].get("backend") != "cpu" or not nodes[0][0].get("Hostname"):
        failures.add(f"{when}: colltest_node_info: {nodes}")
    found = gpus(series)
    if sorted(found) != [str(g) for g in range(CPU_RANKS)] or \
            any(not g["UUID"] or not g["Hostname"] or set(g) != set(GPU_LABELS)
                for g in found.values()):
        failures.add(f"{when}: colltest_device_info per GPU: {found}")
    for gpu in found.values():
        for rank in range(CPU_RANKS):
            expect(series, labels("colltest_hangs_total", rank=rank, **gpu), 0, failures, when)
        for status in HEALTH_STATUSES:
            expect(series, labels("colltest_device_health", status=status, **gpu), 0, failures,
                   when)
        expect(series, labels("colltest_device_health_last_check_timestamp_seconds", **gpu), 0,
               failures, when)
    hangs = family(series, "colltest_hangs_total")
    if len(hangs) != CPU_RANKS * CPU_RANKS:
        failures.add(f"{when}: {len(hangs)} colltest_hangs_total series, expected "
                     f"{CPU_RANKS * CPU_RANKS}")
    links = family(series, "colltest_link_health")
    if len(links) != len(HEALTH_STATUSES) * CPU_RANKS * (CPU_RANKS - 1) // 2 or \
            any(value != 0 for _, value in links):
        failures.add(f"{when}: colltest_link_health is not every pair of GPUs at 0: {links}")


def run_steps(cli, server, steps, failures):
    for what, args, want_rc in steps:
        result = colltest(cli, server, *args)
        if want_rc is not None and result.returncode != want_rc:
            failures.add(f"{what}: colltest exit {result.returncode}: {result.stdout}"
                         f"{result.stderr}")


def run_cases(cli, server, failures):
    """A clean sweep (4 OK cases), a hang with a culprit and a wrong result; the sweep's run id."""
    sweep = colltest(cli, server, "run", "--world", "2", "--m", "1,8", "--n", "1024",
                     "--variants", "lamport,one_stage", "--modes", "eager", "--format", "json")
    run_id = None
    if sweep.returncode != 0:
        failures.add(f"sweep: colltest exit {sweep.returncode}: {sweep.stdout}{sweep.stderr}")
    else:
        run_id = json.loads(sweep.stdout)["run_id"]
    run_steps(cli, server, [
        ("hang", ("run", "--world", "2", "--m", "1", "--n", "1024", "--variants", "lamport",
                  "--modes", "eager", "--fault", "hang_end_sync:1", "--timeout", "1s"), None),
        # Stale staging races with the peers' fresh stores, so a few timed calls can miss it;
        # every stress call is checked, which makes the WRONG certain.
        ("wrong", ("run", "--world", "2", "--m", "1", "--n", "1024", "--variants", "lamport",
                   "--modes", "eager", "--fault", "skip_rearm", "--stress", "20", "--timeout",
                   "2s"), None),
    ], failures)
    return run_id


def check_moved(series, failures):
    when = "after the runs"
    lamport = dict(variant="lamport", mode="eager")
    # Every case had world 2 and at most 8 x 1024 bf16 elements (16 KiB) per rank.
    timed = dict(world=2, size_class="le_64KiB")
    expect(series, labels("colltest_cases_total", status="ok", **lamport), 2, failures, when)
    expect(series, labels("colltest_cases_total", status="ok", variant="one_stage", mode="eager"),
           2, failures, when)
    expect(series, labels("colltest_cases_total", status="hang", **lamport), 1, failures, when)
    expect(series, labels("colltest_cases_total", status="wrong", **lamport), 1, failures, when)
    # The culprit of hang_end_sync:1 is rank 1, on device 1 of the group 0,1: GPU 1's labels.
    expect(series, labels("colltest_hangs_total", rank=1, **gpus(series).get("1", {})), 1,
           failures, when)
    hangs = sum(v for s, v in series.items() if s.startswith("colltest_hangs_total{"))
    if hangs != 1:
        failures.add(f"{when}: colltest_hangs_total sums to {hangs}, expected 1")
    # Timed are the cases that ran: 2 OK lamport and the WRONG one; latencies are in seconds, so
    # three medians of a 2 KiB all-reduce stay far below a second.
    expect(series, labels("colltest_case_latency_seconds_count", **lamport, **timed), 3, failures,
           when)
    latency_sum = series.get(labels("colltest_case_latency_seconds_sum", **lamport, **timed), -1)
    if not 0 < latency_sum < 1:
        failures.add(f"{when}: colltest_case_latency_seconds_sum is {latency_sum}, not seconds")
    expect(series, "colltest_case_wall_seconds_count", 5, failures, when)
    for variant in ("lamport", "one_stage"):
        case = dict(variant=variant, mode="eager", dtype="bf16", **timed)
        for name, most in (("colltest_case_busbw_bytes_per_second", 1e13),
                           ("colltest_case_algbw_bytes_per_second", 1e13),
                           ("colltest_case_median_latency_seconds", 1)):
            value = series.get(labels(name, **case))
            if value is None or not 0 < value < most:
                failures.add(f"{when}: {labels(name, **case)} is {value}")


def check_health(series, failures):
    """After one health check (whose own cases count as cases too): the verdict and its time."""
    when = "after a health check"
    expect(series, labels("colltest_health_status", status="ok"), 1, failures, when)
    expect(series, labels("colltest_health_status", status="hang"), 0, failures, when)
    expect(series, labels("colltest_health_checks_total", status="ok"), 1, failures, when)
    checked_at = series.get("colltest_health_last_check_timestamp_seconds", 0)
    if not checked_at >= series.get("colltest_start_time_seconds", float("inf")):
        failures.add(f"{when}: colltest_health_last_check_timestamp_seconds not set")
    # Level quick runs no self test.
    expect(series, labels("colltest_health_self_test", result="not_run"), 1, failures, when)
    check_one_hot(series, "colltest_device_health", "gpu", CPU_RANKS, checked_at, failures)
    check_one_hot(series, "colltest_link_health", "peer_gpu", CPU_RANKS * (CPU_RANKS - 1) // 2,
                  checked_at, failures)


def check_one_hot(series, name, key_label, want, checked_at, failures):
    """Exactly one status at 1 for each of the `want` GPUs (or links) of family `name`, whose
    check time is that of the health check; a slow one (a WARN on a busy machine) is fine."""
    when = "after a health check"
    ones = {}
    for found, value in family(series, name):
        key = tuple(sorted((k, v) for k, v in found.items() if k != "status"))
        ones.setdefault(key, 0)
        ones[key] += value
        if found["status"] not in HEALTH_STATUSES or value not in (0, 1):
            failures.add(f"{when}: {name} {found} is {value}")
    if len(ones) != want or any(total != 1 for total in ones.values()):
        failures.add(f"{when}: {name}: expected one 1 for each of {want}: {ones}")
    for key in ones:
        if key_label not in dict(key):
            failures.add(f"{when}: {name} {key} has no {key_label}")
        stamp = series.get(labels(f"{name}_last_check_timestamp_seconds", **dict(key)))
        if stamp != checked_at:
            failures.add(f"{when}: {name} {key} last checked at {stamp}, not {checked_at}")


def check_compared(series, failures):
    """The sweep compared with itself: its 4 cases, each the same."""
    when = "after a comparison"
    expect(series, labels("colltest_compare_cases_total", verdict="same"), 4, failures, when)
    expect(series, labels("colltest_compare_cases_total", verdict="regression"), 0, failures, when)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--promtool", required=True)
    parser.add_argument("--colltestd", required=True)
    parser.add_argument("--colltest", required=True)
    args = parser.parse_args()
    if not os.access(args.promtool, os.X_OK):
        print(f"FAIL: promtool not found ({args.promtool}); scripts/setup.sh installs it",
              file=sys.stderr)
        return 1
    # "colltestd 0.1.0 (commit ..., Release)": the release is the second word.
    version = subprocess.run([args.colltestd, "--version"], capture_output=True, text=True,
                             check=True).stdout.split()[1]
    failures = Failures()
    with tempfile.TemporaryDirectory(prefix="colltest-metrics-") as state_dir:
        with start_colltestd(args.colltestd, state_dir) as daemon:
            server, http = daemon.address, daemon.http_address
            fresh = scrape(http)
            promtool_check(args.promtool, fresh, "before any run", failures)
            check_fresh(parse(fresh), version, failures)
            run_id = run_cases(args.colltest, server, failures)
            moved = scrape(http)
            promtool_check(args.promtool, moved, "after the runs", failures)
            check_moved(parse(moved), failures)
            # The planted fault's HANG (exit 2) tests colltest, not the machine: check_health
            # finds the machine's verdict of the check before it, still ok.
            steps = [("health", ("health", "--pairs"), 0),
                     ("health with a planted hang", ("health", "--fault", "hang_end_sync:1",
                                                     "--timeout", "1s"), 2)]
            if run_id is not None:
                steps.append(("compare", ("compare", run_id, run_id), 0))
            run_steps(args.colltest, server, steps, failures)
            checked = scrape(http)
            promtool_check(args.promtool, checked, "after a health check", failures)
            check_health(parse(checked), failures)
            check_compared(parse(checked), failures)
    if failures.items:
        print(f"{len(failures.items)} failure(s)", file=sys.stderr)
        return 1
    print("metrics scrape: OK")
    return 0


if __name__ == "__main__":
    sys.exit(main())
