#!/usr/bin/env bash
# Grid sweep on the box: $1 = file of "tag|flags" sweeps; JSON merged into $OUT/sweep.json.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
bin="$(cd out/gpu-bundle/bin && pwd)"
export COLLTEST_BIN_DIR="$bin"
tmp=/tmp/sweep; mkdir -p $tmp "$OUT"
{ nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.sm --format=csv,noheader; uname -a; date -u; } >"$OUT/box.txt" 2>&1
log="$OUT/colltestd.log"
"$bin/colltestd" --listen 127.0.0.1:0 --backend cuda --max-case-bytes 64MiB >"$log" 2>&1 &
daemon=$!
for _ in $(seq 1 240); do grep -q 'listening on' "$log" && break; sleep 0.25; done
addr=$(sed -n 's/^colltestd listening on \([^ ]*\).*/\1/p' "$log" | head -1)
while IFS='|' read -r tag flags; do
  [ -z "$tag" ] && continue
  s=$SECONDS
  timeout 90 "$bin/colltest" --server "$addr" sweep --world 2 --n 7168 --dtype bf16 \
    --variants one_stage,two_kernel,lamport,lamport_tb --modes graph --warmup 20 --iters 200 \
    --format json --out "$tmp/$tag.json" $flags 2>"$tmp/$tag.err"
  echo "$tag rc=$? $((SECONDS - s))s"
done < "$1"
kill $daemon; wait $daemon
python3 - "$tmp" "$OUT/sweep.json" <<'PY'
import json, sys, os, glob
tmp, outp = sys.argv[1], sys.argv[2]
allr = {}
for p in sorted(glob.glob(tmp + "/*.json")):
    tag = os.path.basename(p)[:-5]
    d = json.load(open(p)); allr[tag] = d
    t = {}
    for c in d.get("cases", []):
        v, m, s = c.get("variant"), c.get("m"), c.get("status")
        t.setdefault(m, {})[v] = (f'{c.get("median_us",0):.2f}/{(c.get("ranks") or [{}])[0].get("grid_blocks","?")}' if s == "OK" else s)
    vs = ["one_stage", "two_kernel", "lamport", "lamport_tb"]
    print(f"\n[{tag}] median us / grid")
    print("m".rjust(5), *[v.rjust(13) for v in vs])
    for m in sorted(t):
        print(str(m).rjust(5), *[str(t[m].get(v, "-")).rjust(13) for v in vs])
json.dump(allr, open(outp, "w"), indent=1)
PY
