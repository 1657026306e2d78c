#!/usr/bin/env python3
"""Stopping a running GPU case on the box, against a running colltestd (docs/cancel.md).

For eager and graph mode: starts a lamport case of 100,000 calls at W = 2 (a client that would
wait for minutes), cancels it once it runs, and times Cancel -> CANCELLED; then checks that the
next case on the same devices is OK, and how long the group took to serve again. Then starts the
same case with a client that gives up after 3 s and times client gone -> CANCELLED. Writes
cancel_box.json and prints a short table; exits 1 when a run was not CANCELLED or the next case
not OK. The daemon's SIGTERM time is measured by run_on_box.sh. COLLTEST_BOX_DEVICES=0,1: the
cases run on those devices (two slots of one GPU under colltestd --ranks-per-gpu).
"""
import json
import os
import subprocess
import sys
import time

colltest, addr, out = sys.argv[1:4]
box_devices = os.environ.get("COLLTEST_BOX_DEVICES", "")
dev = ["--devices", box_devices] if box_devices else []


def cli(*args, timeout=120):
    """Exit code and stdout (JSON when asked for); stderr may carry a warning line."""
    p = subprocess.run([colltest, "--server", addr, *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout


def endless(mode, label, client_timeout=None):
    # 32 MiB per rank and call: 100,000 calls take about 15 s on 2 x H200 (m = 64: about 1 s).
    args = [colltest, "--server", addr, "run", "--world", "2", *dev, "--m", "1024", "--n", "16384",
            "--variants", "lamport", "--modes", mode, "--iters", "100000", "--timeout", "2s",
            "--label", label, "--format", "json"]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def run_id(label, state="RUNNING", limit=30):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        rc, text = cli("runs", "--format", "json")
        try:
            runs = json.loads(text).get("runs", [])
        except ValueError:
            runs = []
        for r in runs:
            if r.get("label") == label and r.get("state") == state:
                return r["run_id"]
        time.sleep(0.02)
    return None


def wait_final(rid, limit=60):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        rc, text = cli("get", rid, "--format", "json")
        try:
            run = json.loads(text)
        except ValueError:
            run = {}
        if run.get("state") not in (None, "RUNNING", "QUEUED"):
            return run, time.monotonic() - t0
        time.sleep(0.01)
    return {}, time.monotonic() - t0


def next_case(mode):
    rc, text = cli("run", "--world", "2", *dev, "--m", "64", "--n", "7168", "--variants", "lamport",
                   "--modes", mode, "--format", "json")
    try:
        return rc, json.loads(text)["cases"][0]["status"]
    except (ValueError, KeyError, IndexError):
        return rc, text[-300:]


rows = {}
for mode in ("eager", "graph"):
    label = f"cancel-{mode}"
    proc = endless(mode, label)
    rid = run_id(label)
    time.sleep(0.5)
    t0 = time.monotonic()
    rc, said = cli("cancel", rid or "none")
    run, _ = wait_final(rid) if rid else ({}, 0)
    took = time.monotonic() - t0
    proc.wait(timeout=120)
    rows[label] = {"run_id": rid, "cancel_said": said.strip()[-200:], "state": run.get("state"),
                   "message": run.get("message"), "cancel_to_final_s": round(took, 3),
                   "client_exit": proc.returncode, "next": next_case(mode)}

label = "client-gone-graph"
proc = endless("graph", label)
rid = run_id(label)
time.sleep(3)
proc.kill()
proc.wait()
t0 = time.monotonic()
run, _ = wait_final(rid) if rid else ({}, 0)
rows[label] = {"run_id": rid, "state": run.get("state"), "message": run.get("message"),
               "gone_to_final_s": round(time.monotonic() - t0, 3), "next": next_case("graph")}
rc, text = cli("devices", "--format", "json")
try:
    rows["groups"] = json.loads(text).get("groups", [])
except ValueError:
    rows["groups"] = text[-300:]
json.dump(rows, open(f"{out}/cancel_box.json", "w"), indent=1)

print("\ncancel on the box (W=2, lamport m=1024 n=16384, 100000 calls, timeout 2 s):")
for name in ("cancel-eager", "cancel-graph"):
    r = rows[name]
    print(f"  {name:18s} Cancel -> {r['state']} in {r['cancel_to_final_s']:.2f} s; next case "
          f"{r['next']}; {r['message']}")
r = rows["client-gone-graph"]
print(f"  {'client gone':18s} -> {r['state']} in {r['gone_to_final_s']:.2f} s; next case "
      f"{r['next']}; {r['message']}")

failed = [name for name in ("cancel-eager", "cancel-graph", "client-gone-graph")
          if rows[name]["state"] != "CANCELLED" or rows[name]["next"][1] != "OK"]
print(f"cancel checks: {3 - len(failed)}/3 CANCELLED with the next case OK"
      + (f"; failed: {', '.join(failed)}" if failed else ""))
sys.exit(1 if failed else 0)
