#!/usr/bin/env bash
# First look on one GPU: the concurrency probe with and without MPS, then colltestd
# --ranks-per-gpu 8 at W = 2, 4, 8 with every variant, a few faults, stress.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
B=out/gpu-bundle/bin
O=/tmp/o; mkdir -p $O
T0=$SECONDS
el() { echo "== $1 (t=$((SECONDS - T0)) s)"; }
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps/pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps/log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d; echo "mps rc=$?"
trap 'echo quit | nvidia-cuda-mps-control; sleep 1; cp /tmp/mps/log/* $O/ 2>/dev/null; tar czf $OUT/explore.tgz -C $O .' EXIT
sleep 1
el "probe under MPS"
timeout 20 $B/colltest-worker --concurrency-probe --backend cuda --device 0; echo "rc=$?"
$B/colltestd --listen 127.0.0.1:0 --backend cuda --ranks-per-gpu 8 --max-case-bytes 64MiB \
  --allow-fault-injection --state-dir /tmp/st >$O/d.log 2>&1 &
D=$!
for i in $(seq 1 120); do grep -q 'listening on' $O/d.log && break; kill -0 $D 2>/dev/null || break; sleep 0.25; done
A=$(sed -n 's/^colltestd listening on \([^ ]*\).*/\1/p' $O/d.log | head -1)
if [ -z "$A" ]; then echo "colltestd did not start:"; tail -30 $O/d.log; exit 1; fi
C="$B/colltest --server $A"
el devices; timeout 30 $C devices
for W in 2 4 8; do
  el "smoke W=$W"
  timeout 150 $C run --world $W --n 7168 --m 1,64,256 --variants one_stage,two_kernel,lamport,lamport_tb,lamport_two_shot,nccl \
    --modes eager,graph --timeout 2s --pattern integers --iters 20 --format json --out $O/smoke_w$W.json >$O/smoke_w$W.txt 2>&1
  echo "rc=$?"; timeout 10 $C history --limit 1 >/dev/null 2>&1
  python3 - $O/smoke_w$W.json <<'PY'
import json,sys
try: r=json.load(open(sys.argv[1]))
except Exception as e: print("no json", e); sys.exit()
print("ranks_per_gpu", r.get("ranks_per_gpu"))
for c in r["cases"]:
  print(f'{c["variant"]:17s} {c["mode"]:5s} m={c["m"]:4d} {c["status"]:11s} {c.get("median_us",0):9.2f} {c["message"][:110]}')
PY
done
for spec in "8 missing_rank:7 lamport_tb graph" "8 missing_rank:0 lamport_two_shot eager" "8 hang_end_sync:7 lamport graph" \
            "8 crash_rank:0 one_stage eager" "4 stall_rank:3 lamport eager" "2 delay_rank:1:1200000 one_stage eager" "8 crash_rank:7 lamport_tb graph"; do
  set -- $spec
  el "fault W=$1 $2 $3 $4"
  timeout 60 $C run --world $1 --n 7168 --m 16 --variants $3 --modes $4 --stress 128 --timeout 1s --fault $2 --format json --out $O/f.json >/dev/null 2>&1
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"][0]; print(c["status"], c["message"][:200])' $O/f.json
  timeout 60 $C run --world $1 --n 7168 --m 16 --variants $3 --modes $4 --stress 128 --timeout 1s --format json --out $O/n.json >/dev/null 2>&1
  python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))["cases"][0]; print("next:", c["status"], c["message"][:200])' $O/n.json
done
el "stress W=8 graph"
timeout 90 $C run --world 8 --n 7168 --m 64 --variants lamport,lamport_tb,lamport_two_shot --modes graph,eager --stress 2000 --timeout 2s --format table 2>&1 | tail -12
el "health W=8"
timeout 120 $C health --level long --devices 0,1,2,3 2>&1 | tail -8
kill $D; wait $D
el "gpu_test W=2 (--ranks-per-gpu 8)"
COLLTEST_GPU_DAEMON_ARGS="--ranks-per-gpu 8" COLLTEST_FAULT_MATRIX_OUT=$O/fm2.json timeout 260 $B/gpu_test \
  --gtest_output=json:$O/gpu_test2.json >$O/gpu_test2.log 2>&1
echo "gpu_test rc=$?"
grep -E '^\[ +(OK|FAILED|PASSED) +\]|Failure' $O/gpu_test2.log | head -40
python3 - $O/fm2.json <<'PY'
import json,sys
try: m=json.load(open(sys.argv[1]))
except Exception as e: print("no matrix", e); sys.exit()
bad=[r for r in m["rows"] if r["status"]!=r["expected"] or r.get("culprit_named") is False or not r["next_ok"]]
print(len(m["rows"]), "rows", len(bad), "not as expected")
for r in bad[:15]: print(r)
PY
el done
