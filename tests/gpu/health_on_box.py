#!/usr/bin/env python3
"""The health check, recovery and metrics on the GPU box, against a running colltestd.

Times `colltest health` on warm workers (with and without --pairs), checks that an injected
missing rank exits 2 naming it, measures the time from a failed case (typed hang, then a crashed
worker) back to SERVING, scrapes /metrics, writes health_box.json and prints a short table.
"""
import json
import subprocess
import sys
import time
import urllib.request

colltest, addr, http, out = sys.argv[1:5]


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
        if g.get("devices") == [0, 1]:
            return g
    return None


def time_to_serving(fault):
    """Runs one case with `fault`, then polls until the group is SERVING again."""
    rc, text, case_s = cli("run", "--world", "2", "--m", "16", "--n", "7168", "--variants",
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
rows["warmup"] = cli("run", "--world", "2", "--m", "1", "--n", "7168", "--variants", "lamport",
                     "--modes", "graph")[0]
for name, args in (("health", []), ("health_pairs", ["--pairs"])):
    rc, text, wall = cli("health", *args, "--format", "json")
    verdict = json.loads(text) if text.strip().startswith("{") else {"message": text[-400:]}
    rows[name] = {"exit": rc, "wall_s": round(wall, 3), "message": verdict.get("message"),
                  "server_wall_ms": verdict.get("wall_ms"), "cases": len(verdict.get("cases", []))}
rc, text, wall = cli("health", "--fault", "missing_rank:1", "--timeout", "1s", "--format", "json")
verdict = json.loads(text) if text.strip().startswith("{") else {"message": text[-400:]}
rows["health_missing_rank_1"] = {"exit": rc, "wall_s": round(wall, 3),
                                 "message": verdict.get("message"),
                                 "names_rank_1": "rank 1 never arrived" in (verdict.get("message") or "")}
rows["recovery_hang"] = time_to_serving("missing_rank:1")
rows["recovery_crash"] = time_to_serving("crash_rank:1")
rows["after"] = cli("run", "--world", "2", "--m", "1,64", "--n", "7168", "--variants", "all",
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
