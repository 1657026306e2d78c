#!/usr/bin/env python3
"""Renders the tables of one GPU results folder (what tests/gpu/run_on_box.sh wrote under $OUT)
as Markdown, from its JSON only: the benchmark against the anchors, the health check and recovery,
and the fault matrix; with --plot=FILE.png also the plot of us per call against m (needs
matplotlib: Debian's python3-matplotlib). Usage: render_results.py DIR [--plot=FILE] > DIR/tables.md

A folder of the shared stage (STAGE=shared: ranks on slots of one GPU) has no bench_*.json and no
anchors: its sweeps (shared_bench_graph_1.json, _2.json) are rendered as kernel overhead with ranks
sharing a GPU, never against the targets, and its fault matrices (fault_matrix_w2/4/8.json) one
per world size. A section whose JSON is unreadable says so on stderr; the others still render.
"""
import glob
import json
import os
import sys

d = sys.argv[1]


def load(name):
    p = os.path.join(d, name)
    return json.load(open(p)) if os.path.exists(p) else None


def fmt(x, f="{:.2f}"):
    return "-" if x is None else f.format(x)


VARIANTS = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot", "nccl"]


VARIANTS = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot", "nccl"]


def bench_tables():
    for mode in ("graph", "eager"):
        bench = load(f"bench_{mode}.json")
        if not bench:
            continue
        us = {}
        for c in bench.get("cases", []):
            us.setdefault(c["m"], {})[c["variant"]] = (
                f'{c["median_us"]:.2f}' if c["status"] == "OK" else c["status"])
        anchors = ({r["m"]: r for r in (load("anchors.json") or {}).get("rows", [])}
                   if mode == "graph" else {})
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
# Only from bench_graph.json, which only the stages with a GPU per rank write.
TARGET_US = {1: 4.0, 8: 4.3, 16: 4.5, 32: 5.0, 64: 6.2, 128: 8.5, 256: 14.0, 512: 25.0, 1024: 46.0}
FUSED = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot"]


def best_of(name):
    out = {}
    for c in (load(name) or {}).get("cases", []):
        if c["status"] == "OK" and c["variant"] in FUSED:
            if c["m"] not in out or c["median_us"] < out[c["m"]][1]:
                out[c["m"]] = (c["variant"], c["median_us"])
    return out


def anchor_rows():
    return {r["m"]: r for r in (load("anchors.json") or {}).get("rows", [])}


def targets_table():
    graph_best, eager_best = best_of("bench_graph.json"), best_of("bench_eager.json")
    if not graph_best:
        return
    anchors = anchor_rows()
    print("\n### Targets: best fused variant (graph) against the target and the all-reduce-only "
          "anchors\n")
    print("| m | best variant | us | target us | fastest AR-only anchor us | anchor / best | needed "
          "| eager best us | eager - graph us | verdict |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for m in sorted(graph_best):
        v, us = graph_best[m]
        a = anchors.get(m, {})
        ar = [a.get(k) for k in ("nccl_ar_us", "symm_one_shot_us", "symm_two_shot_us") if a.get(k)]
        ratio = min(ar) / us if ar else None
        need = 1.4 if m <= 128 else 1.15
        e = eager_best.get(m)
        gap = e[1] - us if e else None
        ok = [us <= TARGET_US[m]] if m in TARGET_US else []
        ok += [ratio >= need] if ratio is not None else []
        ok += [gap <= 3.5] if gap is not None else []
        verdict = "met" if ok and all(ok) else ("missed" if ok else "-")
        print(f"| {m} | {v} | {us:.2f} | {fmt(TARGET_US.get(m), '{:.1f}')} | "
              f"{fmt(min(ar) if ar else None)} | {fmt(ratio)} | {need} | "
              f"{fmt(e[1] if e else None)} | {fmt(gap)} | {verdict} |")


def plot(path):
    # us per call against m, every variant and anchor (graph mode), log-log. Nothing to plot
    # without bench_graph.json (the shared stage writes none: its figures are no link's).
    if not load("bench_graph.json"):
        print(f"no bench_graph.json in {d}: no plot", file=sys.stderr)
        return
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
        pts = [(m, r[key]) for m, r in anchor_rows().items() if r.get(key)]
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
    fig.savefig(path, dpi=110)


def health_tables():
    health = load("health_box.json")
    if not health:
        return
    print("\n### Health check and recovery (warm workers)\n")
    print("| check | exit | wall s | verdict |")
    print("|---|---|---|---|")
    for name in ("health", "health_pairs", "health_missing_rank_1"):
        r = health.get(name)
        if r:
            print(f"| {name} | {r['exit']} | {fmt(r.get('wall_s'))} | {r.get('message')} |")
    print("\n| failure | case status | case wall s | failure -> SERVING ms | recovered by |")
    print("|---|---|---|---|---|")
    for name in ("recovery_hang", "recovery_crash"):
        r = health.get(name)
        if r:
            print(f"| {r['fault']} | {r['status']} | {fmt(r.get('case_s'))} | "
                  f"{fmt(r.get('last_recovery_ms'), '{:.1f}')} | "
                  f"{(r.get('state') or {}).get('message', '-')} |")


def fault_table(name):
    matrix = load(name)
    if not matrix:
        return
    world = matrix.get("world", 2)
    shared = " (ranks sharing one GPU)" if matrix.get("shared_gpu") else ""
    print(f"\n### Fault matrix: W = {world}{shared}, n = 7168, bf16, case timeout "
          f"{matrix['timeout_ms']} ms\n")
    print("| fault | variant | mode | expected | status | culprit named | detect ms | next case | next ms |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in matrix["rows"]:
        named = r.get("culprit_named")
        named = "-" if named is None else ("yes" if named else "NO")
        print(f"| {r['fault']} | {r['variant']} | {r['mode']} | {r['expected']} | {r['status']} | "
              f"{named} | {r['detect_ms']:.0f} | {'OK' if r['next_ok'] else 'FAIL'} | "
              f"{r['next_case_ms']:.0f} |")


def fault_tables():
    fault_table("fault_matrix.json")
    for path in sorted(glob.glob(os.path.join(d, "fault_matrix_w*.json")),
                       key=lambda p: int("".join(ch for ch in os.path.basename(p) if ch.isdigit())
                                         or 0)):
        fault_table(os.path.basename(path))


# The shared stage's sweeps: every rank on a slot of one GPU, so the figures are the kernels'
# overhead with ranks sharing a GPU (no link is crossed), never set against the 2-GPU targets or
# anchors. Two sweeps in a row; a cell agrees when the medians are within 3% of each other.
SHARED_LABEL = "Kernel overhead with ranks sharing one GPU (not a link figure)"


def shared_bench_table():
    runs = [load(f"shared_bench_graph_{i}.json") for i in (1, 2)]
    if not any(runs):
        return
    cells = [{(c["variant"], c["m"]): c for c in (r or {}).get("cases", [])} for r in runs]
    rpg = next((r.get("ranks_per_gpu") for r in runs if r and r.get("ranks_per_gpu")), "?")
    print(f"\n### {SHARED_LABEL}\n")
    print(f"Graph mode, W = 2 on two slots of one GPU (ranks_per_gpu {rpg}), n = 7168, bf16: "
          "median us per call of two sweeps in a row (first / second; ok = within 3%). Not "
          "comparable with the targets, the anchors or any run with a GPU per rank.\n")
    print("| m | " + " | ".join(FUSED) + " |")
    print("|---" * (len(FUSED) + 1) + "|")
    for m in sorted({m for c in cells for _, m in c}):
        row = []
        for v in FUSED:
            a, b = (c.get((v, m)) for c in cells)
            if not a or not b:
                row.append("missing")
            elif a["status"] != "OK" or b["status"] != "OK":
                row.append(f'{a["status"]} / {b["status"]}')
            else:
                x, y = a["median_us"], b["median_us"]
                same = abs(x - y) <= 0.03 * min(x, y)
                row.append(f'{x:.2f} / {y:.2f} {"ok" if same else "DIFF"}')
        print(f"| {m} | " + " | ".join(row) + " |")


def section(render, *args):
    """One table; a file it cannot read costs that table only."""
    try:
        render(*args)
    except (OSError, ValueError, KeyError, TypeError) as e:
        print(f"render_results.py: {render.__name__} skipped: {e!r}", file=sys.stderr)


section(bench_tables)
section(shared_bench_table)
section(targets_table)
if len(sys.argv) > 2 and sys.argv[2].startswith("--plot="):
    section(plot, sys.argv[2][len("--plot="):])
section(health_tables)
section(fault_tables)
