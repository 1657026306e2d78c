#!/usr/bin/env bash
# Runs on the GPU box from the repo root with out/gpu-bundle carried: the gpu test suite, then the
# benchmark sweep (W = 2, n = 7168, bf16, graph and eager, every variant), then the anchors of the
# same box measured with torch (tests/gpu/anchors.py -> anchors.json), then the health check,
# recovery and metrics (tests/gpu/health_on_box.py), stopping running cases and SIGTERM
# (tests/gpu/cancel_on_box.py), JSON under $OUT, and tables printed last
# (graph mode: each variant against the anchors; the fault matrix).
# STAGE=test|bench|all|tune|cancel|neighbour|kernels|shared (default: shared on a box with one GPU,
# else all; cancel: only tests/gpu/cancel_on_box.py and the SIGTERM check; neighbour: only
# tests/gpu/neighbour_on_box.py; kernels: only tests/gpu/one_device_group_test.cc, one GPU enough;
# shared: the 2-GPU checks with ranks sharing one GPU under MPS, tests/gpu/shared_stage.sh says
# what runs). BENCH_M (rows), BENCH_MODES ("graph eager"), ANCHORS=0 (skip the anchors) narrow a
# run. The test stage also writes the fault matrix (fault_matrix.json), printed as a table at the
# very end.
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bundle="${BUNDLE:-out/gpu-bundle}"
bin="$(cd "$bundle/bin" && pwd)"
out="${OUT:-/tmp/colltest-out}"
gpus=$(nvidia-smi -L 2>/dev/null | wc -l)
# One GPU cannot run the 2-GPU stages; its slots (colltestd --ranks-per-gpu) can run their checks.
stage="${STAGE:-$([ "$gpus" = 1 ] && echo shared || echo all)}"
bench_m="${BENCH_M:-1,8,16,32,64,128,256,512,1024}"
mkdir -p "$out"
export COLLTEST_BIN_DIR="$bin"
# The terminal, for what must be seen even while a part's output goes to its log (shared stage).
exec 3>&1
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader;
  nvidia-smi topo -m; uname -a; date -u; } >"$out/box.txt" 2>&1
"$bin/colltest-worker" --probe --backend auto | tee "$out/probe.json"

# start_daemon NAME [colltestd flags...]: sets $daemon, $addr and $http (the metrics address). A
# colltestd that exits, or prints no listening line within 60 s, stops the script with its log:
# every later step would only report empty results.
start_daemon() {
  log="$out/colltestd_$1.log"
  shift
  # One history database for the whole script (its daemons run one after the other).
  # Without fd 3: a daemon must not hold the terminal of the script open.
  "$bin/colltestd" --listen 127.0.0.1:0 --backend cuda --max-case-bytes 64MiB \
    --state-dir "$out/state" "$@" >"$log" 2>&1 3>&- &
  daemon=$!
  for _ in $(seq 1 240); do
    grep -q 'listening on' "$log" && break
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.25
  done
  addr=$(sed -n 's/^colltestd listening on \([^ ]*\).*/\1/p' "$log" | head -1)
  http=$(sed -n 's/^colltestd listening on .* http=\([^ ]*\).*/\1/p' "$log" | head -1)
  [ -n "$addr" ] || daemon_failed "$log"
}
daemon_failed() {
  local why="printed no listening line within 60 s"
  kill -0 "$daemon" 2>/dev/null || why="exited"
  {
    echo "colltestd $why ($1), stopping the script; the end of its log:"
    tail -n 40 "$1"
  } >&3
  kill -KILL "$daemon" 2>/dev/null
  wait "$daemon" 2>/dev/null
  daemon=
  exit 1
}
# SIGTERM, then SIGKILL after 20 s: a colltestd that does not stop must not hold the script. Polled
# every 50 ms, which is the resolution of the SIGTERM time below.
stop_daemon() {
  [ -n "${daemon:-}" ] || return 0
  kill "$daemon" 2>/dev/null
  for _ in $(seq 1 400); do
    kill -0 "$daemon" 2>/dev/null || break
    sleep 0.05
  done
  kill -0 "$daemon" 2>/dev/null && echo "colltestd $daemon ignored SIGTERM for 20 s: SIGKILL" &&
    kill -KILL "$daemon"
  wait "$daemon"
  daemon=
}

# SIGTERM with a 100,000-call case running on the daemon of $daemon: it must exit within 10 s
# (the return status says whether it did). COLLTEST_BOX_DEVICES: the devices of the case.
sigterm_check() {
  "$bin/colltest" --server "$addr" run --world 2 ${COLLTEST_BOX_DEVICES:+--devices "$COLLTEST_BOX_DEVICES"} \
    --m 1024 --n 16384 --variants lamport --modes graph --iters 100000 --timeout 2s --format json \
    >"$out/sigterm_run.json" 2>&1 &
  sigterm_client=$!
  sleep 3
  t0=$(date +%s.%N)
  stop_daemon
  t1=$(date +%s.%N)
  wait "$sigterm_client"
  took=$(python3 -c "print(round($t1 - $t0, 3))")
  echo "SIGTERM with a running case: colltestd exited in $took s" | tee "$out/sigterm.txt"
  python3 -c "import sys; sys.exit(0 if $took <= 10 else 1)"
}

# The kernels with every rank of a group on one GPU (tests/gpu/one_device_group_test.cc): W = 2, 4
# and 8 on any box, one GPU enough. STAGE=kernels runs only this.
kernels_check() {
  timeout "${KERNELS_TIMEOUT:-400}" "$bin/one_device_group_test" \
    --gtest_output="json:$out/one_device_group_test.json" >"$out/one_device_group_test.log" 2>&1
  echo "one_device_group_test rc=$?"
  grep -E '^\[ +(OK|FAILED|PASSED|SKIPPED) +\]|Failure|Value of|Which is|Expected' \
    "$out/one_device_group_test.log" | head -60
}
if [ "$stage" = "kernels" ]; then
  kernels_check
  exit 0
fi

if [ "$stage" = "cancel" ]; then
  # Only the cancel and SIGTERM checks below (STAGE=cancel).
  start_daemon health --allow-fault-injection --http 127.0.0.1:0
  timeout 300 python3 tests/gpu/cancel_on_box.py "$bin/colltest" "$addr" "$out"
  echo "cancel stage rc=$?"
  sigterm_check
  exit 0
fi

# colltestd next to jobs and the device identity (tests/gpu/neighbour_on_box.py): the idle
# timeout, BUSY, health priority and levels (two or more GPUs), the probe and --users (any).
neighbour_check() {
  world=$(nvidia-smi -L | wc -l)
  timeout 500 python3 tests/gpu/neighbour_on_box.py "$bin" "$out" "$world"
  echo "neighbour stage rc=$?"
}
if [ "$stage" = "neighbour" ]; then
  neighbour_check
  exit 0
fi

if [ "$stage" = "shared" ]; then
  # shellcheck source=tests/gpu/shared_stage.sh
  source tests/gpu/shared_stage.sh
  shared_stage
  exit $?  # through shared_stage's EXIT trap, which quits MPS
fi
# Reached only when a shell error aborted the block above: never fall through to the 2-GPU stages.
[ "$stage" = "shared" ] && exit 1

# A first look that takes seconds: every variant at three shapes, both modes.
start_daemon smoke
timeout 120 "$bin/colltest" --server "$addr" run --world 2 --n 7168 --dtype bf16 --m 1,64,256 \
  --variants one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot,nccl --modes eager,graph --timeout 2s \
  --pattern integers --format table 2>&1 | tee "$out/smoke.txt" | tail -40
stop_daemon

rc_test=0
if [ "$stage" != "bench" ]; then
  kernels_check
  rm -f "$out/fault_matrix.json"  # the table at the end is this run's or none
  COLLTEST_FAULT_MATRIX_OUT="$out/fault_matrix.json" \
    timeout "${TEST_TIMEOUT:-240}" "$bin/gpu_test" --gtest_output="json:$out/gpu_test.json" \
    ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} >"$out/gpu_test.log" 2>&1
  rc_test=$?
  grep -E '^\[ +(OK|FAILED|PASSED) +\]|Failure|Value of|Which is|Expected' "$out/gpu_test.log" |
    head -60
fi

if [ "$stage" != "test" ]; then
  start_daemon bench --http 127.0.0.1:0
  # The machine identity every run records, through the HTTP API (devices, UUIDs, bus ids,
  # versions, links).
  python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' \
    "http://$http/api/v1/devices" >"$out/devices_http.json" 2>&1
  echo "devices over HTTP rc=$?"
  for mode in ${BENCH_MODES:-graph eager}; do
    timeout 200 "$bin/colltest" --server "$addr" sweep --world 2 --n 7168 --dtype bf16 \
      --m "$bench_m" --variants one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot,nccl \
      --modes "$mode" --warmup 20 --iters 200 --format json --out "$out/bench_$mode.json" \
      2>"$out/bench_$mode.err"
    echo "bench $mode rc=$?"
  done
  "$bin/colltest" --server "$addr" history --limit 20 >"$out/history.txt" 2>&1
  stop_daemon
  if [ "${ANCHORS:-1}" != 0 ]; then
    # Same box, same run: torch's NCCL all-reduce (+ rms_norm) and symmetric-memory all-reduces.
    PYTHONUNBUFFERED=1 timeout "${ANCHORS_TIMEOUT:-300}" python3 tests/gpu/anchors.py \
      --out "$out/anchors.json" --m "$bench_m" >"$out/anchors.log" 2>&1
    echo "anchors rc=$?"
    grep -E '^anchors m=' "$out/anchors.log"
  fi
  python3 - "$out" <<'PY'
import json, sys, os
out = sys.argv[1]
for mode in ("graph", "eager"):
    p = os.path.join(out, f"bench_{mode}.json")
    if not os.path.exists(p):
        print(mode, "missing"); continue
    cases = json.load(open(p)).get("cases", [])
    table = {}
    for c in cases:
        v = c.get("variant"); m = c.get("m")
        s = c.get("status")
        table.setdefault(m, {})[v] = f'{c.get("median_us", 0):.2f}' if s == "OK" else s
    vs = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot", "nccl"]
    print(f"\n{mode}: median us/call, W=2 n=7168 bf16")
    print("m".rjust(6), *[v.rjust(11) for v in vs])
    for m in sorted(table):
        print(str(m).rjust(6), *[str(table[m].get(v, "-")).rjust(11) for v in vs])

# Graph mode against the anchors: each variant's us, the anchors' us, and each variant's ratio to
# the fastest anchor that includes the norm (b: NCCL AR + rms_norm) and to the fastest
# all-reduce-only anchor (min of NCCL AR and the symm-mem one-/two-shot). < 1 means faster.
bench = os.path.join(out, "bench_graph.json")
anchors = os.path.join(out, "anchors.json")
if os.path.exists(bench) and os.path.exists(anchors):
    vs = ["one_stage", "two_kernel", "lamport", "lamport_tb", "lamport_two_shot", "nccl"]
    us = {}
    for c in json.load(open(bench)).get("cases", []):
        if c.get("status") == "OK" and c.get("mode") == "graph":
            us.setdefault(c["m"], {})[c["variant"]] = c["median_us"]
    arows = {r["m"]: r for r in json.load(open(anchors)).get("rows", [])}
    acols = [("nccl_ar_us", "A:nccl_ar"), ("nccl_ar_norm_us", "A:ar+norm"),
             ("symm_one_shot_us", "A:symm_1sh"), ("symm_two_shot_us", "A:symm_2sh")]
    fmt = lambda v: "-" if v is None else f"{v:.2f}"
    print("\ngraph vs anchors (same run): us/call; ratio = variant / fastest anchor "
          "(/b: NCCL AR + rms_norm; /ar: fastest all-reduce only, a or c)")
    short = {"one_stage": "1stg", "two_kernel": "2krn", "lamport": "lamp", "lamport_tb": "ltb", "lamport_two_shot": "l2sh",
             "nccl": "nccl"}
    head = ["m"] + vs + [h for _, h in acols] + [f"{short[v]}/b" for v in vs] + \
           [f"{short[v]}/ar" for v in vs]
    w = [6] + [11] * len(vs) + [11] * len(acols) + [8] * (2 * len(vs))
    print("".join(h.rjust(wi) for h, wi in zip(head, w)))
    for m in sorted(set(us) | set(arows)):
        a = arows.get(m, {})
        norm_best = a.get("nccl_ar_norm_us")
        ar_only = [a.get(k) for k in ("nccl_ar_us", "symm_one_shot_us", "symm_two_shot_us")]
        ar_only = [v for v in ar_only if v]
        ar_best = min(ar_only) if ar_only else None
        vals = [us.get(m, {}).get(v) for v in vs]
        cells = [str(m)] + [fmt(v) for v in vals] + [fmt(a.get(k)) for k, _ in acols]
        cells += [fmt(v / norm_best) if v and norm_best else "-" for v in vals]
        cells += [fmt(v / ar_best) if v and ar_best else "-" for v in vals]
        print("".join(c.rjust(wi) for c, wi in zip(cells, w)))
    notes = json.load(open(anchors)).get("notes", [])
    for n in notes[:8]:
        print("anchor note:", n)
elif not os.path.exists(anchors):
    print("\nanchors.json missing: no anchor table (see anchors.log)")
PY
fi

if [ "$stage" = "all" ] || [ "$stage" = "tune" ]; then
  # The crossover table for `auto` at this box's world size, then `auto` dispatching from it.
  start_daemon tune
  world=$(nvidia-smi -L | wc -l)
  table="$out/tune_cuda_h200_w${world}_bf16_graph_n7168.json"
  timeout 300 "$bin/colltest" --server "$addr" tune --world "$world" --n 7168 --dtype bf16 \
    --m 1,8,16,32,64,128,256,512,1024,2048 --modes graph --warmup 20 --iters 200 \
    --out "$table" 2>"$out/tune.err" | tee "$out/tune.txt"
  echo "tune rc=$?"
  stop_daemon
  mkdir -p "$out/tune_dir" && cp "$table" "$out/tune_dir/"
  start_daemon auto --tune-dir "$out/tune_dir"
  # `auto` against every fixed variant in the same sweep, at rows of the table and at m between
  # them (AUTO_M): within 3% of the best everywhere.
  timeout 240 "$bin/colltest" --server "$addr" sweep --world "$world" --n 7168 --dtype bf16 \
    --m "${AUTO_M:-1,3,8,24,64,96,256,384,700,1024,1500}" \
    --variants auto,one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot --modes graph --pattern integers \
    --warmup 20 --iters 200 --format json --out "$out/auto.json" 2>/dev/null
  echo "auto rc=$?"
  python3 - "$out/auto.json" <<'PY'
import json, sys
by_m = {}
for c in json.load(open(sys.argv[1]))["cases"]:
    by_m.setdefault(c["m"], []).append(c)
print("\nauto against the best fixed variant (graph, same sweep); ratio = auto / best")
for m in sorted(by_m):
    fixed = [c for c in by_m[m] if c["variant"] != "auto" and c["status"] == "OK"]
    auto = [c for c in by_m[m] if c["variant"] == "auto"]
    if not fixed or not auto or auto[0]["status"] != "OK":
        print(f"auto m={m}: {auto[0]['status'] if auto else 'missing'}"); continue
    best = min(fixed, key=lambda c: c["median_us"])
    a = auto[0]
    ratio = a["median_us"] / best["median_us"]
    print(f'auto m={m}: -> {a["resolved_variant"]} {a["median_us"]:.2f} us; best '
          f'{best["variant"]} {best["median_us"]:.2f} us; ratio {ratio:.3f} '
          f'{"OK" if ratio <= 1.03 else "OVER 3%"}')
PY
  stop_daemon
fi

if [ "$stage" != "bench" ]; then
  # Health check, recovery and metrics on a daemon that allows fault injection.
  start_daemon health --allow-fault-injection --http 127.0.0.1:0
  timeout 400 python3 tests/gpu/health_on_box.py "$bin/colltest" "$addr" "$http" "$out"
  echo "health stage rc=$?"
  # Stopping running cases (docs/cancel.md): Cancel and a client that goes away, eager and graph.
  timeout 300 python3 tests/gpu/cancel_on_box.py "$bin/colltest" "$addr" "$out"
  echo "cancel stage rc=$?"
  sigterm_check
  neighbour_check
fi

if [ -f "$out/fault_matrix.json" ]; then
  python3 - "$out/fault_matrix.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
rows = m.get("rows", [])
print(f"\nfault matrix: W=2 n=7168 bf16, timeout {m.get('timeout_ms')} ms; "
      "detect = the faulty case's RPC, next = the following case without fault")
# named: the culprit rank (or, for faults of every rank, the phase or the tolerance verdict).
head = ["fault", "variant", "mode", "expected", "status", "named", "detect_ms", "next",
        "next_ms"]
w = [22, 11, 6, 9, 12, 8, 10, 5, 8]
print("".join(h.ljust(wi) for h, wi in zip(head, w)))
bad = 0
for r in rows:
    named = r.get("culprit_named")
    culprit = "-" if named is None else ("yes" if named else "NO")
    status = r["status"] if r["status"] == r["expected"] else r["status"] + "!"
    bad += status.endswith("!") or named is False or not r["next_ok"]
    cells = [r["fault"], r["variant"], r["mode"], r["expected"], status, culprit,
             f'{r["detect_ms"]:.0f}', "ok" if r["next_ok"] else "FAIL", f'{r["next_case_ms"]:.0f}']
    print("".join(c.ljust(wi) for c, wi in zip(cells, w)))
print(f"{len(rows)} rows, {bad} not as expected")
PY
fi
# Every table as Markdown, the targets table printed (bench/NOTES.md), and the plot of us per call
# against m where the box has matplotlib (else: render_results.py DIR --plot=FILE after the run).
python3 bench/render_results.py "$out" --plot="$out/us_per_call.png" >"$out/tables.md" 2>"$out/render.err" ||
  python3 bench/render_results.py "$out" >"$out/tables.md" 2>/dev/null || true
sed -n '/^### Targets/,/^$/p; /^| m | best variant/,/^$/p' "$out/tables.md" | uniq
exit $rc_test
