# shellcheck shell=bash
# shellcheck disable=SC2154  # out, bin, addr, http and daemon come from run_on_box.sh
# The shared stage of tests/gpu/run_on_box.sh (STAGE=shared; the default on a box with one GPU),
# sourced by it after its helpers (start_daemon, stop_daemon, sigterm_check). What the 2-GPU run
# checks, with every rank on a slot of one GPU: colltestd --ranks-per-gpu 8 offers each GPU as 8
# devices, interleaved, so on one GPU devices 0..7 are all its slots. Ranks on one GPU need their
# processes' kernels concurrent, so this stage starts MPS itself (pipe directory under /tmp, log
# under $out/mps-log, exported so that colltestd and its workers inherit it) and quits it on exit,
# whatever happened (EXIT trap).
#
# Parts, in this order (each part's output in $out/part_NAME.log):
#   smoke       W=2: every variant, eager and graph, m = 1, 64, 256; nccl must be UNSUPPORTED with
#               NCCL's refusal of two ranks on one GPU
#   gpu_w2      gpu_test at W=2, whole (or SHARED_W2_FILTER): matrix, nccl, stress, the fault
#               matrix (fault_matrix_w2.json)
#   health      tests/gpu/health_on_box.py at W=2 (devices 0,1)
#   metrics     tests/gpu/metrics_on_box.py at W=2 (devices 0,1): the fleet metrics' DCGM labels
#               of the real GPU, slots folded into it, busbw gauges per size class, health per
#               GPU and link with a planted hang, and every metric of deploy/grafana and the
#               alert rules in the GPU's scrape (docs/metrics.md)
#   cancel      tests/gpu/cancel_on_box.py at W=2
#   sigterm     SIGTERM with a running case: colltestd must exit within 10 s
#   bench       graph sweep W=2 n=7168 bf16 m=1,64,256,1024, the five fused variants, twice in a
#               row: kernel overhead with ranks sharing one GPU, never a link figure, never against
#               the 2-GPU targets or anchors (none of anchors, targets or tune run here)
#   ab          (only when named in SHARED_PARTS) the sweep of part bench with other worker
#               binaries beside this bundle's ("head"), in the same run: AB_WORKERS="NAME=PATH
#               ...", AB_ROUNDS rounds (default 3) of every worker in turn, so that a drift of the
#               box shows in each alike; the table gives each worker's median us per call and its
#               ratio to head (shared_tables.py ab). Kernel overhead, as bench.
#   gpu_w4      gpu_test at W=4, the subset (COLLTEST_GPU_SUBSET=1 and $shared_subset_filter)
#   gpu_w8      the same at W=8
#   plugins     kernel plugins built against the installed SDK (scripts/bundle_gpu.sh): the example
#               oneshot_norm at W=2 and 4, eager and graph, bf16 and fp32, strict, must be OK;
#               never_finishes must be HANG naming every rank, and the group then runs one_stage;
#               oneshot_norm with missing_rank:1 at W=4 must name rank 1 (docs/plugins.md)
#   neighbour   tests/gpu/neighbour_on_box.py at W=2; health level long only when the budget
#               leaves 150 s for the part (or NEIGHBOUR_LEVELS says so): long is the slowest check
#               and the bandwidth it measures is skipped for two slots of one GPU
# SHARED_BUDGET_S (default 480) bounds the stage, from the script's start: each part's timeout is
# the smaller of its own cap and what the budget has left, and a part left less than its minimum
# is SKIPPED. Short tables and a PASS/FAIL/SKIPPED line per part (with its seconds) come last; the
# exit status is non-zero when any part did not pass.

shared_rpg="${SHARED_RANKS_PER_GPU:-8}"
shared_budget_s="${SHARED_BUDGET_S:-480}"
# Seconds kept for the tables and quitting MPS after the last part.
shared_deadline=$((shared_budget_s - 20))
shared_subset_filter="${SHARED_SUBSET_FILTER:-Matrix/GpuMatrixTest.*/DTYPE_BF16_PATTERN_INTEGERS:\
Nccl/GpuNcclTest.*/DTYPE_BF16_PATTERN_INTEGERS:Lamport/GpuStressTest.*:GpuFaultTest.*}"
shared_parts="$out/shared_parts.txt"
# The parts to run, in order (SHARED_PARTS); each within what is left of the budget.
shared_part_list="${SHARED_PARTS:-smoke gpu_w2 health metrics cancel sigterm bench gpu_w4 gpu_w8 neighbour quant plugins}"
shared_part=
shared_reported=0

mps_start() {
  # A socket path must stay under 108 bytes: the pipe directory lives in /tmp, not under $out.
  export CUDA_MPS_PIPE_DIRECTORY="/tmp/colltest-mps-$$" CUDA_MPS_LOG_DIRECTORY="$out/mps-log"
  mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
  nvidia-cuda-mps-control -d 3>&-
}

# quit returns at once and the control daemon leaves once its server's clients have: wait for it
# (its pid file, where the driver writes one), then SIGTERM it by that pid.
mps_stop() {
  [ -n "${CUDA_MPS_PIPE_DIRECTORY:-}" ] || return 0
  local pidfile="$CUDA_MPS_PIPE_DIRECTORY/nvidia-cuda-mps-control.pid" pid=
  [ -f "$pidfile" ] && pid=$(cat "$pidfile")
  echo quit | timeout 10 nvidia-cuda-mps-control
  for _ in $(seq 1 100); do
    if [ -z "$pid" ] || ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.2
  done
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    echo "MPS control daemon $pid still up 20 s after quit: SIGTERM"
    kill "$pid"
  fi
  echo "MPS quit (control daemon pid ${pid:-unknown}; logs in $CUDA_MPS_LOG_DIRECTORY)"
  rm -rf "$CUDA_MPS_PIPE_DIRECTORY"
  unset CUDA_MPS_PIPE_DIRECTORY
}

shared_record() {  # NAME PASS|FAIL|SKIPPED SECONDS NOTE
  printf '%-10s %-8s %4s s  %s\n' "$1" "$2" "$3" "$4" | tee -a "$shared_parts"
}

# run_part NAME CAP_S MIN_S COMMAND...: COMMAND with $part_timeout set, its output to its log.
run_part() {
  # Names of their own: the helpers of run_on_box.sh set globals (t0, rc) that bash's dynamic
  # scoping would let them overwrite here.
  local part_name=$1 cap=$2 min=$3 left part_t0 part_rc
  shift 3
  left=$((shared_deadline - SECONDS))
  part_timeout=$((cap < left ? cap : left))
  part_note=
  if [ "$part_timeout" -lt "$min" ]; then
    shared_record "$part_name" SKIPPED 0 "budget: ${left} s left, the part needs ${min} s"
    return
  fi
  shared_part=$part_name
  part_t0=$SECONDS
  "$@" >"$out/part_$part_name.log" 2>&1
  part_rc=$?
  shared_part=
  shared_record "$part_name" "$([ "$part_rc" = 0 ] && echo PASS || echo FAIL)" \
    $((SECONDS - part_t0)) "${part_note:-rc=$part_rc} (timeout ${part_timeout} s)"
}

part_smoke() {
  start_daemon smoke --ranks-per-gpu "$shared_rpg"
  timeout -k 5 $((part_timeout - 10)) "$bin/colltest" --server "$addr" run --world 2 \
    --devices 0,1 --n 7168 --dtype bf16 --m 1,64,256 \
    --variants one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot,nccl --modes eager,graph \
    --timeout 2s --pattern integers --format json >"$out/smoke.json"
  local rc=$? verdict
  stop_daemon
  python3 tests/gpu/shared_tables.py smoke "$out/smoke.json" >"$out/smoke.txt"
  verdict=$?
  cat "$out/smoke.txt"
  part_note="run rc=$rc; $(tail -n 1 "$out/smoke.txt")"
  [ "$rc" = 0 ] && [ "$verdict" = 0 ]
}

# part_gpu_test W [FILTER]: gpu_test at W; above W=2 the subset lists (COLLTEST_GPU_SUBSET).
part_gpu_test() {
  local w=$1 filter=${2:-} rc
  rm -f "$out/fault_matrix_w$w.json" "$out/gpu_test_w$w.json"
  COLLTEST_GPU_WORLD=$w COLLTEST_GPU_SUBSET=$([ "$w" -gt 2 ] && echo 1 || echo 0) \
    COLLTEST_FAULT_MATRIX_OUT="$out/fault_matrix_w$w.json" \
    timeout -k 10 $((part_timeout - 10)) "$bin/gpu_test" \
    --gtest_output="json:$out/gpu_test_w$w.json" ${filter:+--gtest_filter="$filter"} \
    >"$out/gpu_test_w$w.log" 2>&1
  rc=$?
  grep -E '^\[ +(OK|FAILED|PASSED) +\]|Failure|Value of|Which is|Expected' "$out/gpu_test_w$w.log" |
    head -80
  part_note="rc=$rc; $(python3 tests/gpu/shared_tables.py gtest "$out/gpu_test_w$w.json" | tail -n 1)"
  [ "$rc" = 124 ] && part_note="timed out; $part_note"
  return $rc
}

part_health() {
  start_daemon health --ranks-per-gpu "$shared_rpg" --allow-fault-injection --http 127.0.0.1:0
  timeout -k 5 $((part_timeout - 8)) python3 tests/gpu/health_on_box.py "$bin/colltest" "$addr" \
    "$http" "$out"
  local rc=$?
  stop_daemon
  return $rc
}

part_metrics() {
  start_daemon metrics --ranks-per-gpu "$shared_rpg" --allow-fault-injection --http 127.0.0.1:0
  timeout -k 5 $((part_timeout - 8)) python3 tests/gpu/metrics_on_box.py "$bin/colltest" "$addr" \
    "$http" "$out"
  local rc=$?
  part_note=$(tail -n 1 "$out/part_metrics.log")
  stop_daemon
  return $rc
}

part_cancel() {
  start_daemon cancel --ranks-per-gpu "$shared_rpg" --allow-fault-injection --http 127.0.0.1:0
  timeout -k 5 $((part_timeout - 8)) python3 tests/gpu/cancel_on_box.py "$bin/colltest" "$addr" \
    "$out"
  local rc=$?
  stop_daemon
  return $rc
}

# A daemon of its own (a part skipped for the budget must not leave one holding the slots), its
# workers started by a first case, so that SIGTERM meets a running case, not a spawn.
part_sigterm() {
  start_daemon sigterm --ranks-per-gpu "$shared_rpg"
  timeout 15 "$bin/colltest" --server "$addr" run --world 2 --devices 0,1 --m 1 --variants lamport \
    --modes graph --format json >/dev/null
  sigterm_check
  local rc=$?
  part_note=$(cat "$out/sigterm.txt")
  return $rc
}

# shared_bench_sweep SECONDS NAME: the bench sweep against the running daemon, into $out/NAME.json.
shared_bench_sweep() {
  timeout -k 5 "$1" "$bin/colltest" --server "$addr" sweep --world 2 --devices 0,1 --n 7168 \
    --dtype bf16 --m 1,64,256,1024 --variants "$(IFS=,; echo "${shared_fused[*]}")" \
    --modes graph --warmup 20 --iters 200 --format json --out "$out/$2.json" \
    >/dev/null 2>"$out/$2.err"
}

part_bench() {
  start_daemon bench --ranks-per-gpu "$shared_rpg"
  local each=$(((part_timeout - 10) / 2)) i rc=0
  for i in 1 2; do
    shared_bench_sweep "$each" "shared_bench_graph_$i" || rc=1
  done
  stop_daemon
  python3 tests/gpu/shared_tables.py bench "$out" || rc=1
  part_note=$(python3 tests/gpu/shared_tables.py bench "$out" | tail -n 1)
  return $rc
}
shared_fused=(one_stage two_kernel lamport lamport_tb lamport_two_shot)

part_ab() {
  local rounds="${AB_ROUNDS:-3}" round spec name rc=0
  local workers=("head=$bin/colltest-worker")
  read -r -a extra <<<"${AB_WORKERS:-}"
  workers+=("${extra[@]}")
  local each=$(((part_timeout - 10) / (rounds * ${#workers[@]})))
  for round in $(seq 1 "$rounds"); do
    for spec in "${workers[@]}"; do
      name=${spec%%=*}
      start_daemon "ab_$name" --ranks-per-gpu "$shared_rpg" --worker "${spec#*=}"
      shared_bench_sweep "$each" "ab_${name}_$round" || rc=1
      stop_daemon
    done
  done
  python3 tests/gpu/shared_tables.py ab "$out" || rc=1
  part_note=$(python3 tests/gpu/shared_tables.py ab "$out" | tail -n 1)
  return $rc
}

# Level long (its stresses took 31 s on 2 x H200; its bandwidth is skipped for two slots of one
# GPU) only when the budget leaves room for it after the other steps (about 80 s), so that the
# budget never cuts a check short. The priority step's sweep runs 1000 calls per case, not 3000:
# it only has to outlast a health check.
part_neighbour() {
  local levels="quick standard"
  [ "$part_timeout" -ge 150 ] && levels="quick standard long"
  NEIGHBOUR_LEVELS="${NEIGHBOUR_LEVELS:-$levels}" \
    NEIGHBOUR_SWEEP_ITERS="${NEIGHBOUR_SWEEP_ITERS:-1000}" \
    timeout -k 5 $((part_timeout - 5)) python3 tests/gpu/neighbour_on_box.py "$bin" "$out" 2
}

# The short tables, then one line per part and the verdict.
shared_report() {
  shared_reported=1
  echo
  echo "==== shared stage: ranks on slots of one GPU (colltestd --ranks-per-gpu $shared_rpg, MPS);" \
    "timings are kernel overhead, never a link figure ===="
  [ -f "$out/smoke.txt" ] && cat "$out/smoke.txt"
  [ -f "$out/part_health.log" ] &&
    grep -E '^(  (health|recovery|next run|pair)|health checks)' "$out/part_health.log" | cut -c1-160
  [ -f "$out/part_metrics.log" ] &&
    grep -E '^(  (device_info|busbw|health|missing)|metrics checks)' "$out/part_metrics.log" |
    cut -c1-200
  [ -f "$out/part_cancel.log" ] &&
    grep -E '^(  (cancel|client)|cancel checks)' "$out/part_cancel.log" | cut -c1-160
  [ -f "$out/sigterm.txt" ] && cat "$out/sigterm.txt"
  [ -f "$out/part_neighbour.log" ] &&
    grep -E '^(users|idle|busy|priority|level|skipped|neighbour checks|[a-z_]+_error)' \
      "$out/part_neighbour.log" | cut -c1-160
  [ -f "$out/shared_bench_graph_1.json" ] && python3 tests/gpu/shared_tables.py bench "$out"
  local w
  for w in 2 4 8; do
    [ -f "$out/fault_matrix_w$w.json" ] && python3 tests/gpu/shared_tables.py faults \
      "$out/fault_matrix_w$w.json"
  done
  compgen -G "$out/quant_w*.json" >/dev/null && python3 tests/gpu/shared_tables.py quant "$out"
  compgen -G "$out/plugin_w*.json" >/dev/null && python3 tests/gpu/shared_tables.py plugins "$out"
  echo
  echo "shared stage parts (budget ${shared_budget_s} s, ${SECONDS} s elapsed):"
  cat "$shared_parts"
  if grep -qv ' PASS ' "$shared_parts"; then
    echo "shared stage: FAIL"
    return 1
  fi
  echo "shared stage: PASS"
}

# The quantising epilogues (docs/quantisation.md) through colltestd: every fused variant with each
# of fp8_token, fp8_tensor and nvfp4, eager and graph, strict, at W = 2 (bf16 with and without
# keep_normed, fp16, fp32), 4 and 8 (bf16, fp32); n = 7176 ends every row in a short nvfp4 block.
# At W = 2, bf16, m = 64 only: each pattern aimed at the epilogues (strict), and quant_ties under
# --quant-tolerance ulp. Then each planted bug (the quant_* faults) must be WRONG naming its rule.
part_quant() {
  start_daemon quant --ranks-per-gpu "$shared_rpg" --allow-fault-injection
  local rc=0 w dtype keep pattern runs=() run left name
  for w in 2 4 8; do
    for dtype in bf16 fp16 fp32; do
      [ "$w" -gt 2 ] && [ "$dtype" = fp16 ] && continue
      for keep in "" keep; do
        [ -n "$keep" ] && { [ "$w" -gt 2 ] || [ "$dtype" != bf16 ]; } && continue
        runs+=("$w:$dtype:$keep:normal:strict")
      done
    done
  done
  for pattern in amax_last_rank quant_ties quant_saturate zero_rows; do
    runs+=("2:bf16::$pattern:strict")
  done
  runs+=("2:bf16::quant_ties:ulp")
  for run in "${runs[@]}"; do
    IFS=: read -r w dtype keep pattern tolerance <<<"$run"
    # quant_w2_bf16, quant_w2_bf16_keep, quant_w2_bf16_zero_rows, quant_w2_bf16_ulp...
    name="quant_w${w}_${dtype}${keep:+_keep}"
    [ "$tolerance" = ulp ] && name+=_ulp
    [ "$pattern" != normal ] && [ "$tolerance" = strict ] && name+="_$pattern"
    left=$((part_timeout - (SECONDS - part_t0) - 60))
    [ "$left" -lt 10 ] && { echo "quant: no time left for $name"; rc=1; break; }
    timeout -k 5 "$left" "$bin/colltest" --server "$addr" run --world "$w" \
      --devices "$(seq -s, 0 $((w - 1)))" --n 7176 \
      --m "$([ "$pattern" = normal ] && echo 1,64 || echo 64)" --dtype "$dtype" \
      --pattern "$pattern" --quant-tolerance "$tolerance" \
      --variants "$(IFS=,; echo "${shared_fused[*]}")" --epilogue fp8_token,fp8_tensor,nvfp4 \
      ${keep:+--keep-normed} --modes eager,graph --warmup 1 --iters 3 --timeout 5s \
      --format json --out "$out/$name.json" >/dev/null 2>"$out/$name.err" || rc=1
  done
  local fault epilogues saturating
  for fault in quant_amax_before_last_rank:fp8_token quant_truncate:fp8_token,fp8_tensor,nvfp4 \
    quant_no_saturation:fp8_tensor quant_swap_format:fp8_token,fp8_tensor \
    quant_block_offset:nvfp4; do
    epilogues=${fault#*:}
    fault=${fault%%:*}
    # Normal inputs stay far inside fp8_tensor's default range: a tiny scale makes them saturate.
    saturating=$([ "$fault" = quant_no_saturation ] && echo 1)
    timeout -k 5 60 "$bin/colltest" --server "$addr" run --world 2 --devices 0,1 --n 7176 \
      --m 64 --dtype bf16 --variants one_stage,lamport_tb --epilogue "$epilogues" \
      ${saturating:+--fp8-scale 0.002} --fault "$fault" --warmup 1 --iters 3 --timeout 5s \
      --format json \
      --out "$out/quant_break_$fault.json" >/dev/null 2>"$out/quant_break_$fault.err"
  done
  stop_daemon
  python3 tests/gpu/shared_tables.py quant "$out" || rc=1
  part_note=$(python3 tests/gpu/shared_tables.py quant "$out" | tail -n 1)
  return $rc
}

# The plugin files copied into a folder of their own: the worker loads a plugin only when the file
# and every folder above it are writable by their owner alone (docs/plugins.md), which the folder
# the bundle was unpacked in need not be.
part_plugins() {
  local dir rc=0 w
  dir=$(mktemp -d /tmp/colltest-plugins-XXXXXX)
  chmod 755 "$dir"
  install -m 644 "$bin/../plugins/"*.so "$dir/"
  start_daemon plugins --ranks-per-gpu "$shared_rpg" --allow-fault-injection \
    --kernel-plugin-dir "$dir"
  for w in 2 4; do
    timeout -k 5 60 "$bin/colltest" --server "$addr" run --world "$w" \
      --devices "$(seq -s, 0 $((w - 1)))" --n 7168 --m 1,64,256 --dtype bf16 \
      --variants plugin:oneshot_norm,one_stage --modes eager,graph --iters 20 --timeout 5s \
      --format json --out "$out/plugin_w${w}_bf16.json" >/dev/null 2>"$out/plugin_w${w}_bf16.err"
    timeout -k 5 60 "$bin/colltest" --server "$addr" run --world "$w" \
      --devices "$(seq -s, 0 $((w - 1)))" --n 4096 --m 1,64 --dtype fp32 --pattern neg_zero \
      --variants plugin:oneshot_norm --modes eager,graph --stress 200 --timeout 5s \
      --format json --out "$out/plugin_w${w}_fp32_stress.json" >/dev/null \
      2>"$out/plugin_w${w}_fp32_stress.err"
    timeout -k 5 60 "$bin/colltest" --server "$addr" run --world "$w" \
      --devices "$(seq -s, 0 $((w - 1)))" --n 7168 --m 64 --variants plugin:never_finishes \
      --modes eager --timeout 2s --format json --out "$out/plugin_hang_w$w.json" >/dev/null \
      2>"$out/plugin_hang_w$w.err"
    timeout -k 5 60 "$bin/colltest" --server "$addr" run --world "$w" \
      --devices "$(seq -s, 0 $((w - 1)))" --n 7168 --m 64 --variants one_stage,plugin:oneshot_norm \
      --modes eager --format json --out "$out/plugin_after_hang_w$w.json" >/dev/null \
      2>"$out/plugin_after_hang_w$w.err"
  done
  timeout -k 5 60 "$bin/colltest" --server "$addr" run --world 4 --devices 0,1,2,3 --n 7168 \
    --m 64 --variants plugin:oneshot_norm --modes eager --timeout 2s --fault missing_rank:1 \
    --format json --out "$out/plugin_missing_w4.json" >/dev/null 2>"$out/plugin_missing_w4.err"
  stop_daemon
  rm -rf "$dir"
  python3 tests/gpu/shared_tables.py plugins "$out" || rc=1
  part_note=$(python3 tests/gpu/shared_tables.py plugins "$out" | tail -n 1)
  return $rc
}

# Whatever ends the stage (a colltestd that did not start, a signal, the end): the part cut short
# is recorded, the report printed once, and MPS always quit.
shared_on_exit() {
  local rc=$?
  trap - EXIT
  [ -n "$shared_part" ] && shared_record "$shared_part" FAIL - "aborted (exit $rc)"
  stop_daemon >/dev/null 2>&1
  if [ "$shared_reported" = 0 ]; then
    shared_report >&3 || rc=1
    [ "$rc" = 0 ] && rc=1
  fi
  mps_stop >&3 2>&1
  exit "$rc"
}

shared_stage() {
  : >"$shared_parts"
  trap shared_on_exit EXIT
  trap 'exit 143' TERM
  trap 'exit 130' INT
  export COLLTEST_GPU_DAEMON_ARGS="--ranks-per-gpu $shared_rpg" COLLTEST_BOX_DEVICES=0,1
  local mps_t0=$SECONDS
  if mps_start >"$out/part_mps.log" 2>&1; then
    shared_record mps PASS $((SECONDS - mps_t0)) "pipe $CUDA_MPS_PIPE_DIRECTORY"
  else
    shared_record mps FAIL $((SECONDS - mps_t0)) "$(tail -n 1 "$out/part_mps.log")"
  fi
  local part
  for part in $shared_part_list; do
    case "$part" in
      smoke) run_part smoke 60 15 part_smoke ;;
      gpu_w2) run_part gpu_w2 200 60 part_gpu_test 2 "${SHARED_W2_FILTER:-}" ;;
      health) run_part health 50 15 part_health ;;
      metrics) run_part metrics 90 30 part_metrics ;;
      cancel) run_part cancel 50 15 part_cancel ;;
      sigterm) run_part sigterm 45 25 part_sigterm ;;
      bench) run_part bench 50 15 part_bench ;;
      ab) run_part ab 240 30 part_ab ;;
      gpu_w4) run_part gpu_w4 120 40 part_gpu_test 4 "$shared_subset_filter" ;;
      gpu_w8) run_part gpu_w8 140 40 part_gpu_test 8 "$shared_subset_filter" ;;
      neighbour) run_part neighbour 170 60 part_neighbour ;;
      quant) run_part quant 300 90 part_quant ;;
      plugins) run_part plugins 150 60 part_plugins ;;
      *) shared_record "$part" FAIL 0 "unknown part (SHARED_PARTS)" ;;
    esac
  done
  python3 bench/render_results.py "$out" >"$out/tables.md" 2>"$out/render.err"
  shared_report
}
