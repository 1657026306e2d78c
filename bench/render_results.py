#!/usr/bin/env python3
"""Renders the tables of one GPU results folder (what tests/gpu/run_on_box.sh wrote under $OUT)
as Markdown, from its JSON only: the benchmark against the anchors, the health check and recovery,
and the fault matrix. Usage: render_results.py DIR > DIR/tables.md
"""
import json
import os
import sys

d = sys.argv[1]


def load(name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


VARIANTS = ["one_stage", "two_kernel", "lamport", "lamport_tb", "nccl"]

for mode in ("graph", "eager"):
    bench = load(f"bench_{mode}.json")
    if not bench:
        continue
    us = {}
    for c in bench.get("cases", []):
        us.setdefault(c["m"], {})[c["variant"]] = (
            f'{c["median_us"]:.2f}' if c["status"] == "OK" else c["status"])
    anchors = {r["m"]: r for r in (load("anchors.json") or {}).get("rows", [])} if mode == "graph" else {}
    cols = VARIANTS + (["A: NCCL AR", "A: NCCL AR + torch rms_norm", "A: symm one-shot",
                        "A: symm two-shot"] if anchors else [])
    print(f"\n### {mode} mode: median us per call (max over ranks), W = 2, n = 7168, bf16\n")
    print("| m | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for m in sorted(us):
        row = [us[m].get(v, "-") for v in VARIANTS]
        if anchors:
            a = anchors.get(m, {})
            row += [f'{a[k]:.2f}' if a.get(k) else "-" for k in
                    ("nccl_ar_us", "nccl_ar_norm_us", "symm_one_shot_us", "symm_two_shot_us")]
        print(f"| {m} | " + " | ".join(row) + " |")

health = load("health_box.json")
if health:
    print("\n### Health check and recovery (warm workers)\n")
    print("| check | exit | wall s | verdict |")
    print("|---|---|---|---|")
    for name in ("health", "health_pairs", "health_missing_rank_1"):
        r = health[name]
        print(f"| {name} | {r['exit']} | {r['wall_s']:.2f} | {r['message']} |")
    print("\n| failure | case status | case wall s | failure -> SERVING ms | recovered by |")
    print("|---|---|---|---|---|")
    for name in ("recovery_hang", "recovery_crash"):
        r = health[name]
        print(f"| {r['fault']} | {r['status']} | {r['case_s']:.2f} | {r['last_recovery_ms']:.1f} | "
              f"{(r.get('state') or {}).get('message', '-')} |")

matrix = load("fault_matrix.json")
if matrix:
    print(f"\n### Fault matrix: W = 2, n = 7168, bf16, case timeout {matrix['timeout_ms']} ms\n")
    print("| fault | variant | mode | expected | status | culprit named | detect ms | next case | next ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in matrix["rows"]:
        named = r.get("culprit_named")
        named = "-" if named is None else ("yes" if named else "NO")
        print(f"| {r['fault']} | {r['variant']} | {r['mode']} | {r['expected']} | {r['status']} | "
              f"{named} | {r['detect_ms']:.0f} | {'OK' if r['next_ok'] else 'FAIL'} | "
              f"{r['next_case_ms']:.0f} |")
