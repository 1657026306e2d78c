#!/usr/bin/env python3
"""Short tables and verdicts of the shared stage (tests/gpu/shared_stage.sh), from its JSON only.

Usage: shared_tables.py smoke SMOKE.json | bench DIR | ab DIR | faults FAULT_MATRIX.json
       | gtest GTEST.json | quant DIR | plugins DIR
Each prints a short table (or one line) and exits 1 when what it read failed its check (or is
missing), so that the stage's PASS/FAIL comes from the same reading as the table.
"""
import json
import os
import re
import statistics
import sys

FUSED = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot"]
# The case message names the first rank that refused, as every merged failure does
# (server/workers/verdict.cc GroupFailureSummary): "rank 0: nccl: NCCL refuses two ranks on one GPU, ...".
NCCL_REFUSAL = re.compile(r"^(rank \d+: )?nccl: NCCL refuses two ranks on one GPU")
BENCH_LABEL = "kernel overhead with ranks sharing one GPU (not a link figure)"


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{os.path.basename(path)}: unreadable ({e})")
        return None


def smoke_problems(cases):
    """What makes the smoke run fail: a fused variant never OK or any case failed, and an nccl case
    that is not UNSUPPORTED with NCCL's refusal."""
    bad = []
    for c in cases:
        what = f'{c["variant"]} {c["mode"]} m={c["m"]}'
        if c["variant"] == "nccl":
            if c["status"] != "UNSUPPORTED" or not NCCL_REFUSAL.match(c.get("message", "")):
                bad.append(f'{what}: {c["status"]} "{c.get("message", "")[:80]}"')
        elif c["status"] == "UNSUPPORTED" and not c.get("message"):
            bad.append(f"{what}: UNSUPPORTED without a reason")
        elif c["status"] not in ("OK", "UNSUPPORTED"):
            bad.append(f'{what}: {c["status"]} {c.get("message", "")[:100]}')
    for v in FUSED:
        if not any(c["variant"] == v and c["status"] == "OK" for c in cases):
            bad.append(f"{v}: no OK case")
    return bad


def smoke(path):
    run = load(path)
    if run is None:
        return 1
    cases = run.get("cases", [])
    ms = sorted({c["m"] for c in cases})
    print(f"\nsmoke, W=2 on slots 0,1 of one GPU (ranks_per_gpu {run.get('ranks_per_gpu', '?')}),"
          " n=7168 bf16 integers: status or median us per call (kernel overhead, not a link)")
    print("variant".ljust(18) + "mode".ljust(7) + "".join(f"m={m}".rjust(13) for m in ms))
    by = {(c["variant"], c["mode"], c["m"]): c for c in cases}
    for v in FUSED + ["nccl"]:
        for mode in ("eager", "graph"):
            cells = []
            for m in ms:
                c = by.get((v, mode, m))
                cells.append("-" if c is None else f'{c["median_us"]:.2f}' if c["status"] == "OK"
                             else c["status"])
            print(v.ljust(18) + mode.ljust(7) + "".join(x.rjust(13) for x in cells))
    nccl = [c.get("message", "") for c in cases if c["variant"] == "nccl"]
    if nccl:
        print(f"nccl says: {nccl[0][:150]}")
    bad = smoke_problems(cases)
    for b in bad[:10]:
        print("  NOT AS EXPECTED:", b)
    print(f"smoke: {len(cases)} cases, {len(bad)} not as expected")
    return 1 if bad or not cases else 0


def bench_medians(path):
    run = load(path)
    if run is None:
        return None, None
    return run, {(c["variant"], c["m"]): c for c in run.get("cases", [])}


def bench_cell(a, b):
    """Both medians, whether a run broke (missing, or neither OK nor UNSUPPORTED) and whether they
    agree within 3% (of the smaller)."""
    if a is None or b is None:
        return "missing", True, False
    if a["status"] != "OK" or b["status"] != "OK":
        broken = {a["status"], b["status"]} - {"OK", "UNSUPPORTED"}
        return f'{a["status"]}/{b["status"]}', bool(broken), False
    x, y = a["median_us"], b["median_us"]
    agree = abs(x - y) <= 0.03 * min(x, y)
    return f'{x:.2f}/{y:.2f} {"ok" if agree else "DIFF"}', False, agree


def bench(d):
    (run1, one), (run2, two) = (bench_medians(os.path.join(d, f"shared_bench_graph_{i}.json"))
                                for i in (1, 2))
    if one is None or two is None:
        print("shared bench: a sweep is missing")
        return 1
    ms = sorted({m for _, m in one} | {m for _, m in two})
    print(f"\n{BENCH_LABEL}: graph, W=2 on slots 0,1 (ranks_per_gpu "
          f"{run1.get('ranks_per_gpu', '?')}), n=7168 bf16; median us per call of two sweeps in a "
          "row, ok = within 3%; never compared with the 2-GPU targets or anchors")
    print("m".rjust(6) + "".join(v.rjust(20) for v in FUSED))
    agree = failed = cells = 0
    for m in ms:
        row = [bench_cell(one.get((v, m)), two.get((v, m))) for v in FUSED]
        cells += len(row)
        failed += sum(broken for _, broken, _ in row)
        agree += sum(same for _, _, same in row)
        print(str(m).rjust(6) + "".join(text.rjust(20) for text, _, _ in row))
    print(f"shared bench: {cells} cells, {agree} agree within 3%, {failed} broken (missing, ERROR, "
          "HANG or WRONG)")
    return 1 if failed else 0


def ab(directory):
    """Each worker's median us per cell (the median of its rounds) and its ratio to head."""
    runs = {}
    for name in sorted(os.listdir(directory)):
        m = re.fullmatch(r"ab_(.+)_(\d+)\.json", name)
        if m:
            runs.setdefault(m.group(1), []).append(os.path.join(directory, name))
    if "head" not in runs:
        print("ab: no sweep of head")
        return 1
    medians, broken = {}, 0
    for worker, paths in runs.items():
        cells = {}
        for path in paths:
            _, cases = bench_medians(path)
            for key, c in (cases or {}).items():
                if c.get("status") != "OK":
                    broken += 1
                    continue
                cells.setdefault(key, []).append(c["median_us"])
        medians[worker] = {k: statistics.median(v) for k, v in cells.items()}
    others = [w for w in sorted(runs) if w != "head"]
    rounds = max(len(p) for p in runs.values())
    print(f"\nab: graph, W=2 on slots of one GPU, n=7168 bf16; median us per call (median of "
          f"{rounds} rounds, workers in turn); worker/head in brackets; kernel overhead only")
    print("variant".ljust(18) + "m".rjust(6) + "head".rjust(10) + "".join(w.rjust(22) for w in others))
    head = medians["head"]
    for v, m in sorted(head, key=lambda k: (FUSED.index(k[0]) if k[0] in FUSED else 99, k[1])):
        row = v.ljust(18) + str(m).rjust(6) + f"{head[(v, m)]:10.2f}"
        for w in others:
            us = medians[w].get((v, m))
            row += (f"{us:.2f} ({us / head[(v, m)]:.3f})" if us else "missing").rjust(22)
        print(row)
    print(f"ab: {len(runs)} workers, {rounds} rounds, {broken} cells not OK")
    return 1 if broken else 0


def fault_groups(rows):
    """Rows grouped by fault kind and culprit rank (both modes), in the order they first ran."""
    groups = {}
    for r in rows:
        groups.setdefault((r["fault"].split(":")[0], r.get("culprit")), []).append(r)
    return groups


def row_bad(r):
    return r["status"] != r["expected"] or r.get("culprit_named") is False or not r["next_ok"]


def faults(path):
    matrix = load(path)
    if matrix is None:
        return 1
    rows = matrix.get("rows", [])
    world = matrix.get("world", "?")
    print(f"\nfault matrix W={world}{' (ranks sharing one GPU)' if matrix.get('shared_gpu') else ''}"
          f", timeout {matrix.get('timeout_ms')} ms, eager+graph: named = the verdict names the "
          "culprit (or the phase); next = the following case")
    head = ["fault", "rank", "rows", "expected", "named", "max detect ms", "next ok", "max next ms"]
    w = [19, 5, 5, 9, 7, 14, 8, 11]
    print("".join(h.ljust(wi) for h, wi in zip(head, w)).rstrip())
    for (kind, culprit), rs in fault_groups(rows).items():
        named = [r.get("culprit_named") for r in rs if r.get("culprit_named") is not None]
        cells = [kind, "-" if culprit is None else str(culprit), str(len(rs)),
                 f"{sum(not row_bad(r) for r in rs)}/{len(rs)}",
                 f"{sum(named)}/{len(named)}" if named else "-",
                 f'{max(r["detect_ms"] for r in rs):.0f}', f'{sum(r["next_ok"] for r in rs)}/{len(rs)}',
                 f'{max(r["next_case_ms"] for r in rs):.0f}']
        print("".join(c.ljust(wi) for c, wi in zip(cells, w)).rstrip())
    bad = [r for r in rows if row_bad(r)]
    for r in bad[:12]:
        print(f'  NOT AS EXPECTED: {r["fault"]} {r["variant"]} {r["mode"]}: {r["status"]} '
              f'(expected {r["expected"]}), named {r.get("culprit_named")}, next '
              f'{"ok" if r["next_ok"] else "FAIL"}: {r.get("message", "")[:120]}')
    print(f"fault matrix W={world}: {len(rows)} rows, {len(bad)} not as expected")
    return 1 if bad or not rows else 0


def gtest(path):
    report = load(path)
    if report is None:
        return 1
    failed = [f'{s["name"]}.{t["name"]}' for s in report.get("testsuites", [])
              for t in s.get("testsuite", []) if t.get("failures")]
    print(f'{report.get("tests")} tests, {len(failed)} failed, {report.get("time")}'
          + (": " + ", ".join(failed)[:300] if failed else ""))
    return 1 if failed else 0


# The rule each planted quantisation bug must be named by (tests/unit/worker/
# cpu_quant_breaks_test.cc holds the same on the cpu backend); None: WRONG is enough.
QUANT_BREAK_RULES = {
    "quant_amax_before_last_rank": "scale",
    "quant_truncate": "rounding",
    "quant_no_saturation": "saturation",
    "quant_swap_format": "format",
    "quant_block_offset": None,
}


# The runs of part_quant beyond its dtype and world runs (W = 2, bf16): each pattern aimed at the
# epilogues, strict, then quant_ties under the ulp tolerance. Each must be there.
QUANT_PATTERN_RUNS = [
    "quant_w2_bf16_amax_last_rank",
    "quant_w2_bf16_quant_ties",
    "quant_w2_bf16_quant_saturate",
    "quant_w2_bf16_zero_rows",
    "quant_w2_bf16_ulp",
]


def quant_run_problems(name, cases):
    """Every case of a quantising run must be OK with every code and scale compared and within its
    tolerance (exact in strict)."""
    bad = []
    if not cases:
        bad.append(f"{name}: no cases")
    for c in cases:
        q = c.get("quant", {})
        what = f'{name} {c["variant"]} {c["mode"]} m={c["m"]} {c.get("epilogue")}'
        if c["status"] != "OK":
            bad.append(f'{what}: {c["status"]} "{c.get("message", "")[:100]}"')
        elif q.get("checked_codes", 0) == 0 or q.get("code_mismatches") or q.get("scale_mismatches"):
            bad.append(f"{what}: quant {q}")
    return bad


def quant_break_problems(fault, cases):
    """Every case of a planted bug must be WRONG, naming its rule where the rule is told."""
    want = QUANT_BREAK_RULES[fault]
    bad = [] if cases else [f"{fault}: no cases"]
    for c in cases:
        rule = c.get("quant", {}).get("rule")
        what = f'{fault} {c["variant"]} {c.get("epilogue")}'
        if c["status"] != "WRONG" or (want is not None and rule != want):
            bad.append(f'{what}: {c["status"]}, rule {rule} (want WRONG, {want or "any rule"})')
    return bad


def quant(directory):
    runs = sorted(f for f in os.listdir(directory) if re.match(r"quant_w\d+_.*\.json$", f))
    breaks = sorted(f for f in os.listdir(directory) if re.match(r"quant_break_.*\.json$", f))
    bad, total = [], 0
    print("\nquantising epilogues, ranks on slots of one GPU (strict; _ulp: --quant-tolerance ulp):"
          " run, OK of cases, codes tolerated")
    for f in runs:
        run = load(os.path.join(directory, f))
        cases = [] if run is None else run.get("cases", [])
        problems = quant_run_problems(f[:-5], cases)
        total += len(cases)
        tolerated = sum(c.get("quant", {}).get("tolerated", 0) for c in cases)
        print(f"  {f[:-5]:<30} {len(cases) - len(problems):>4} of {len(cases)} OK, {tolerated}")
        bad += problems
    bad += [f"{name}: missing" for name in QUANT_PATTERN_RUNS if f"{name}.json" not in runs]
    print("planted bugs: fault, cases WRONG, rules named")
    for fault in QUANT_BREAK_RULES:
        f = f"quant_break_{fault}.json"
        run = load(os.path.join(directory, f)) if f in breaks else None
        cases = [] if run is None else run.get("cases", [])
        problems = quant_break_problems(fault, cases)
        rules = sorted({c.get("quant", {}).get("rule", "?") for c in cases})
        print(f"  {fault:<28} {sum(c['status'] == 'WRONG' for c in cases)} of {len(cases)} WRONG,"
              f" rules {','.join(rules)}")
        bad += problems
    for b in bad[:12]:
        print(f"  NOT AS EXPECTED: {b}")
    print(f"quant: {total} cases in {len(runs)} runs, {len(breaks)} planted bugs, "
          f"{len(bad)} not as expected")
    return 1 if bad or not runs else 0


def plugin_problems(name, cases):
    """What the plugin part expects of each of its runs (tests/gpu/shared_stage.sh part_plugins)."""
    if not cases:
        return [f"{name}: no cases"]
    bad = []
    for c in cases:
        what = f'{name} {c["variant"]} {c["mode"]} m={c["m"]}'
        msg = c.get("message", "")
        if name.startswith("plugin_hang_w"):
            w = c["world"]
            others = ", ".join(str(r) for r in range(1, w))
            also = f"(also rank{'s' if w > 2 else ''} {others})"
            if c["status"] != "HANG" or "plugin:never_finishes" not in msg or also not in msg:
                bad.append(f'{what}: {c["status"]} "{msg[:120]}" (want HANG naming every rank)')
        elif name == "plugin_missing_w4":
            if c["status"] != "HANG" or "rank 1 never launched plugin:oneshot_norm" not in msg:
                bad.append(f'{what}: {c["status"]} "{msg[:120]}" (want HANG naming rank 1)')
        elif c["status"] != "OK":
            bad.append(f'{what}: {c["status"]} "{msg[:120]}"')
        elif c["variant"].startswith("plugin:") and len(c.get("plugin", {}).get("sha256", "")) != 64:
            bad.append(f"{what}: no sha256 of the plugin")
    return bad


PLUGIN_RUNS = ["plugin_w2_bf16", "plugin_w2_fp32_stress", "plugin_hang_w2", "plugin_after_hang_w2",
               "plugin_w4_bf16", "plugin_w4_fp32_stress", "plugin_hang_w4", "plugin_after_hang_w4",
               "plugin_missing_w4"]


def plugins(directory):
    bad, total = [], 0
    print("\nkernel plugins through colltestd, ranks on slots of one GPU: run, status of each case"
          " (median us per call: kernel overhead, not a link figure)")
    for name in PLUGIN_RUNS:
        run = load(os.path.join(directory, name + ".json"))
        cases = [] if run is None else run.get("cases", [])
        total += len(cases)
        cells = [f'{c["variant"]} {c["mode"]} m={c["m"]}: ' +
                 (f'{c["median_us"]:.1f}' if c["status"] == "OK" and c["median_us"] > 0
                  else c["status"])
                 for c in cases]
        print(f"  {name:<22} " + "; ".join(cells)[:300])
        hung = [c for c in cases if c["status"] == "HANG"]
        if hung:
            print(f'    {hung[0].get("message", "")[:200]}')
        bad += plugin_problems(name, cases)
    for b in bad[:12]:
        print(f"  NOT AS EXPECTED: {b}")
    print(f"plugins: {total} cases in {len(PLUGIN_RUNS)} runs, {len(bad)} not as expected")
    return 1 if bad else 0


if __name__ == "__main__":
    commands = {"smoke": smoke, "bench": bench, "ab": ab, "faults": faults, "gtest": gtest,
                "quant": quant, "plugins": plugins}
    if len(sys.argv) != 3 or sys.argv[1] not in commands:
        sys.exit(__doc__)
    sys.exit(commands[sys.argv[1]](sys.argv[2]))
