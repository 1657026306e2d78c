#!/usr/bin/env python3
"""Renders the tables of one GPU results folder (what tests/gpu/run_on_box.sh wrote under $OUT)
as Markdown, from its JSON only: the benchmark against the anchors, the health check and recovery,
and the fault matrix; with --plot=FILE.png also the plot of us per call against m (needs
matplotlib: Debian's python3-matplotlib). Usage: render_results.py DIR [--plot=FILE] > DIR/tables.md
"""
import json
import os
import sys

d = sys.argv[1]


def load(name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


VARIANTS = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot", "nccl"]

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

# The fused kernels against their targets (bench/NOTES.md): the best variant per m in graph mode,
# the fastest all-reduce-only anchor (NCCL, symmetric-memory one-shot and two-shot) over it (at
# least 1.4 for m <= 128, 1.15 above), and the best eager time within 3.5 us of the best graph one.
TARGET_US = {1: 4.0, 8: 4.3, 16: 4.5, 32: 5.0, 64: 6.2, 128: 8.5, 256: 14.0, 512: 25.0, 1024: 46.0}
FUSED = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot"]


def best_of(name):
    out = {}
    for c in (load(name) or {}).get("cases", []):
        if c["status"] == "OK" and c["variant"] in FUSED:
            if c["m"] not in out or c["median_us"] < out[c["m"]][1]:
                out[c["m"]] = (c["variant"], c["median_us"])
    return out


graph_best, eager_best = best_of("bench_graph.json"), best_of("bench_eager.json")
anchor_rows = {r["m"]: r for r in (load("anchors.json") or {}).get("rows", [])}
if graph_best:
    print("\n### Targets: best fused variant (graph) against the target and the all-reduce-only "
          "anchors\n")
    print("| m | best variant | us | target us | fastest AR-only anchor us | anchor / best | needed "
          "| eager best us | eager - graph us | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in sorted(graph_best):
        v, us = graph_best[m]
        a = anchor_rows.get(m, {})
        ar = [a.get(k) for k in ("nccl_ar_us", "symm_one_shot_us", "symm_two_shot_us") if a.get(k)]
        ratio = min(ar) / us if ar else None
        need = 1.4 if m <= 128 else 1.15
        e = eager_best.get(m)
        gap = e[1] - us if e else None
        ok = [us <= TARGET_US[m]] if m in TARGET_US else []
        ok += [ratio >= need] if ratio is not None else []
        ok += [gap <= 3.5] if gap is not None else []
        verdict = "met" if ok and all(ok) else ("missed" if ok else "-")
        fmt = lambda x, f="{:.2f}": "-" if x is None else f.format(x)
        print(f"| {m} | {v} | {us:.2f} | {fmt(TARGET_US.get(m), '{:.1f}')} | "
              f"{fmt(min(ar) if ar else None)} | {fmt(ratio)} | {need} | "
              f"{fmt(e[1] if e else None)} | {fmt(gap)} | {verdict} |")

if len(sys.argv) > 2 and sys.argv[2].startswith("--plot="):
    # us per call against m, every variant and anchor (graph mode), log-log.
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    series = {}
    for c in (load("bench_graph.json") or {}).get("cases", []):
        if c["status"] == "OK":
            series.setdefault(c["variant"], []).append((c["m"], c["median_us"]))
    for key, label in (("nccl_ar_us", "anchor: NCCL all-reduce"),
                       ("nccl_ar_norm_us", "anchor: NCCL all-reduce + rms_norm"),
                       ("symm_one_shot_us", "anchor: symm-mem one-shot"),
                       ("symm_two_shot_us", "anchor: symm-mem two-shot")):
        pts = [(m, r[key]) for m, r in anchor_rows.items() if r.get(key)]
        if pts:
            series[label] = pts
    fig, ax = plt.subplots(figsize=(9, 6))
    for name, pts in sorted(series.items()):
        pts.sort()
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o",
                linestyle="--" if name.startswith("anchor") else "-", label=name)
    ax.plot(list(TARGET_US), list(TARGET_US.values()), "k:", label="target")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("m (rows), n = 7168, bf16, W = 2")
    ax.set_ylabel("us per call (graph, median, max over ranks)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[2][len("--plot="):], dpi=110)

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
