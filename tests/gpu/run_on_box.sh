#!/usr/bin/env bash
# Runs on the GPU box from the repo root with out/gpu-bundle carried: the gpu test suite, then the
# benchmark sweep (W = 2, n = 7168, bf16, graph and eager, every variant), JSON under $OUT, and a
# short table printed last. STAGE=test|bench|all (default all).
set -uo pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bundle="${BUNDLE:-out/gpu-bundle}"
bin="$(cd "$bundle/bin" && pwd)"
out="${OUT:-/tmp/colltest-out}"
stage="${STAGE:-all}"
mkdir -p "$out"
export COLLTEST_BIN_DIR="$bin"
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv,noheader;
  nvidia-smi topo -m; uname -a; date -u; } >"$out/box.txt" 2>&1
"$bin/colltest-worker" --probe --backend auto | tee "$out/probe.json"

start_daemon() {
  log="$out/colltestd_$1.log"
  "$bin/colltestd" --listen 127.0.0.1:0 --backend cuda --max-case-bytes 64MiB >"$log" 2>&1 &
  daemon=$!
  for _ in $(seq 1 240); do
    grep -q 'listening on' "$log" && break
    sleep 0.25
  done
  addr=$(sed -n 's/^colltestd listening on \([^ ]*\).*/\1/p' "$log" | head -1)
}
stop_daemon() {
  kill "$daemon"
  wait "$daemon"
}

# A first look that takes seconds: every variant at three shapes, both modes.
start_daemon smoke
timeout 120 "$bin/colltest" --server "$addr" run --world 2 --n 7168 --dtype bf16 --m 1,64,256 \
  --variants one_stage,two_kernel,lamport,lamport_tb,nccl --modes eager,graph --timeout 2s \
  --pattern integers --format table 2>&1 | tee "$out/smoke.txt" | tail -40
stop_daemon

rc_test=0
if [ "$stage" != "bench" ]; then
  timeout "${TEST_TIMEOUT:-240}" "$bin/gpu_test" --gtest_output="json:$out/gpu_test.json" \
    ${GTEST_FILTER:+--gtest_filter="$GTEST_FILTER"} >"$out/gpu_test.log" 2>&1
  rc_test=$?
  grep -E '^\[ +(OK|FAILED|PASSED) +\]|Failure|Value of|Which is|Expected' "$out/gpu_test.log" |
    head -60
fi

if [ "$stage" != "test" ]; then
  start_daemon bench
  for mode in graph eager; do
    timeout 200 "$bin/colltest" --server "$addr" sweep --world 2 --n 7168 --dtype bf16 \
      --m 1,8,16,32,64,128,256,1024 --variants one_stage,two_kernel,lamport,lamport_tb,nccl \
      --modes "$mode" --warmup 20 --iters 200 --format json --out "$out/bench_$mode.json" \
      2>"$out/bench_$mode.err"
    echo "bench $mode rc=$?"
  done
  stop_daemon
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
    vs = ["one_stage", "two_kernel", "lamport", "lamport_tb"]
    print(f"\n{mode}: median us/call, W=2 n=7168 bf16")
    print("m".rjust(6), *[v.rjust(11) for v in vs])
    for m in sorted(table):
        print(str(m).rjust(6), *[str(table[m].get(v, "-")).rjust(11) for v in vs])
PY
fi
exit $rc_test
