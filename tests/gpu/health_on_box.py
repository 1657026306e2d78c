#!/usr/bin/env python3
"""The health check, recovery and metrics on the GPU box, against a running colltestd.

Times `colltest health` on warm workers (with and without --pairs), checks that an injected
missing rank exits 2 naming it, measures the time from a failed case (typed hang, then a crashed
worker) back to SERVING, scrapes /metrics, writes health_box.json and prints a short table; exits
1 when a check failed. COLLTEST_BOX_DEVICES=0,1 runs every case and check on those devices only:
a colltestd --ranks-per-gpu 8 offers 8 slots of one GPU, and the check is the 2-rank one.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

colltest, addr, http, out = sys.argv[1:5]
box_devices = os.environ.get("COLLTEST_BOX_DEVICES", "")
dev = ["--devices", box_devices] if box_devices else []
pair = [int(d) for d in box_devices.split(",")] if box_devices else [0, 1]


def cli(*args, timeout=300):
    t0 = time.monotonic()
    p = subprocess.run([colltest, "--server", addr, *args], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stdout + p.stderr, time.monotonic() - t0


def group_state():
    rc, text, _ = cli("devices", "--format", "json", timeout=30)
    try:
        groups = json.loads(text).get("groups", [])
    except ValueError:
        return None
    for g in groups:
        if g.get("devices") == pair:
            return g
    return None


def time_to_serving(fault):
    """Runs one case with `fault`, then polls until the group is SERVING again."""
    rc, text, case_s = cli("run", "--world", "2", *dev, "--m", "16", "--n", "7168", "--variants",
                           "lamport", "--modes", "graph", "--timeout", "1s", "--fault", fault,
                           "--format", "json")
    t0 = time.monotonic()
    state = None
    while time.monotonic() - t0 < 30:
        state = group_state()
        if state and state.get("state") == "SERVING":
            break
        time.sleep(0.02)
    polled = time.monotonic() - t0
    status = json.loads(text)["cases"][0]["status"] if text.strip().startswith("{") else "?"
    return {"fault": fault, "exit": rc, "status": status, "case_s": round(case_s, 3),
            "serving_after_poll_s": round(polled, 3),
            "last_recovery_ms": state.get("last_recovery_ms") if state else None,
            "state": state}


rows = {}
# Warm the workers of the pair first (the acceptance is for warm workers).
rows["warmup"] = cli("run", "--world", "2", *dev, "--m", "1", "--n", "7168", "--variants", "lamport",
                     "--modes", "graph")[0]
for name, args in (("health", []), ("health_pairs", ["--pairs"])):
    rc, text, wall = cli("health", *dev, *args, "--format", "json")
    verdict = json.loads(text) if text.strip().startswith("{") else {"message": text[-400:]}
    # Two slots of one GPU may have a check skipped, with its reason in the pair's message.
    rows[name] = {"exit": rc, "wall_s": round(wall, 3), "message": verdict.get("message"),
                  "server_wall_ms": verdict.get("wall_ms"), "cases": len(verdict.get("cases", [])),
                  "pairs": [{k: p.get(k) for k in ("devices", "status", "message")}
                            for p in verdict.get("pairs", [])]}
rc, text, wall = cli("health", *dev, "--fault", "missing_rank:1", "--timeout", "1s", "--format",
                     "json")
verdict = json.loads(text) if text.strip().startswith("{") else {"message": text[-400:]}
rows["health_missing_rank_1"] = {"exit": rc, "wall_s": round(wall, 3),
                                 "message": verdict.get("message"),
                                 "names_rank_1": "rank 1 never arrived" in (verdict.get("message") or "")}
rows["recovery_hang"] = time_to_serving("missing_rank:1")
rows["recovery_crash"] = time_to_serving("crash_rank:1")
rows["after"] = cli("run", "--world", "2", *dev, "--m", "1,64", "--n", "7168", "--variants", "all",
                    "--modes", "graph", "--format", "json")[0]
try:
    metrics = urllib.request.urlopen(f"http://{http}/metrics", timeout=10).read().decode()
except OSError as e:
    metrics = f"scrape failed: {e}"
open(f"{out}/metrics.txt", "w").write(metrics)
rows["metrics_lines"] = [l for l in metrics.splitlines()
                         if l.startswith(("colltest_worker_restarts_total", "colltest_hangs_total",
                                          "colltest_group_state", "colltest_health_checks_total"))]
json.dump(rows, open(f"{out}/health_box.json", "w"), indent=1)

print("\nhealth on the box (W=2, warm workers):")
for name in ("health", "health_pairs", "health_missing_rank_1"):
    r = rows[name]
    print(f"  {name:24s} exit {r['exit']}  {r['wall_s']:.2f} s  {r['message']}")
for name in ("recovery_hang", "recovery_crash"):
    r = rows[name]
    print(f"  {name:24s} {r['fault']}: {r['status']} in {r['case_s']:.2f} s; SERVING "
          f"{r['last_recovery_ms']} ms after the failure (seen {r['serving_after_poll_s']:.2f} s "
          f"after the reply)")
print(f"  next run after the faults: exit {rows['after']}")
for l in rows["metrics_lines"]:
    print("  " + l)
for p in rows["health_pairs"]["pairs"]:
    if p.get("message"):
        print(f"  pair {p['devices']}: {p['status']} {p['message']}")

checks = {
    "health exits 0": rows["health"]["exit"] == 0,
    "health --pairs exits 0": rows["health_pairs"]["exit"] == 0,
    "missing rank 1: exit 2 naming it": rows["health_missing_rank_1"]["exit"] == 2
    and rows["health_missing_rank_1"]["names_rank_1"],
    "hang: HANG, then SERVING": rows["recovery_hang"]["status"] == "HANG"
    and (rows["recovery_hang"]["state"] or {}).get("state") == "SERVING",
    "crash: ERROR, then SERVING": rows["recovery_crash"]["status"] == "ERROR"
    and (rows["recovery_crash"]["state"] or {}).get("state") == "SERVING",
    "next run exits 0": rows["after"] == 0,
}
failed = [name for name, ok in checks.items() if not ok]
print(f"health checks: {len(checks) - len(failed)}/{len(checks)} passed"
      + (f"; failed: {', '.join(failed)}" if failed else ""))
sys.exit(1 if failed else 0)
