#!/usr/bin/env bash
# Wall time of a fleet check (`colltest health --targets ... --format json`) against N colltestd
# on loopback (cpu backend, --cpu-ranks 2, each with its own ephemeral port and state directory,
# the default --idle-timeout), for each N given (default: 5 and 50). Each N is checked three times:
# the first check starts every node's workers, the second finds them running, the third accepts
# a verdict up to 10 minutes old (--max-verdict-age), which nodes answer without a new check.
#
#   bench/fleet_bench.sh [N ...]        BIN=build/bin by default
#
# Every daemon runs under `timeout` and is killed on exit (the trap), whatever happens; the temporary
# directory goes with them.
set -euo pipefail

BIN=${BIN:-build/bin}
DAEMON_LIMIT=${DAEMON_LIMIT:-900}  # seconds a daemon may live, should the trap never run
CHECK_LIMIT=${CHECK_LIMIT:-300}    # seconds one fleet check may take
sizes=("$@")
[ ${#sizes[@]} -gt 0 ] || sizes=(5 50)

for b in colltestd colltest colltest-worker; do
  [ -x "$BIN/$b" ] || { echo "fleet_bench: $BIN/$b missing (cbuild $b)" >&2; exit 3; }
done

tmp=$(mktemp -d "${TMPDIR:-/tmp}/fleet-bench.XXXXXX")
pids=()

stop_daemons() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  pids=()
}
cleanup() {
  stop_daemons
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Starts node $1 in the background; its address is read later from its listening line.
start_daemon() {
  local dir="$tmp/n$1"
  mkdir -p "$dir/state" "$dir/tune"
  # An empty --tune-dir: the cpu backend dispatches `auto` without tables, and the nodes then do
  # not depend on what the checkout's tune/ holds.
  timeout "$DAEMON_LIMIT" "$BIN/colltestd" --backend cpu --cpu-ranks 2 --listen 127.0.0.1:0 \
    --state-dir "$dir/state" --tune-dir "$dir/tune" >"$dir/out" 2>"$dir/log" &
  pids+=($!)
}

# The address node $1 listens on, waiting at most 60 s for its listening line (not at all once
# it has exited).
daemon_address() {
  local out="$tmp/n$1/out" i
  for ((i = 0; i < 600; i++)); do
    if grep -q '^colltestd listening on ' "$out" 2>/dev/null; then
      awk '/^colltestd listening on /{print $4; exit}' "$out"
      return 0
    fi
    kill -0 "${pids[$1]}" 2>/dev/null || break
    sleep 0.1
  done
  echo "fleet_bench: node $1 did not start; its log:" >&2
  cat "$tmp/n$1/log" >&2
  return 1
}

# One fleet check of the list $2 with the further flags $3..., labelled $1; prints the wall time
# and the summary.
check() {
  local label=$1 targets=$2 report="$tmp/report.json" t0 t1 code=0
  shift 2
  rm -f "$report"
  t0=$(date +%s.%N)
  timeout "$CHECK_LIMIT" "$BIN/colltest" health --targets "$targets" --format json \
    --out "$report" "$@" 2>"$tmp/check.err" || code=$?
  t1=$(date +%s.%N)
  /usr/bin/python3 - "$label" "$t0" "$t1" "$code" "$report" <<'EOF'
import json, sys
label, t0, t1, code, path = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5]
try:
    s = json.load(open(path))["summary"]
except (OSError, ValueError, KeyError):
    print(f"{label}: exit {code}, no report")
    sys.exit(0)
counts = ", ".join(f"{s[k]} {k}" for k in
                   ("ok", "warn", "wrong", "hang", "error", "busy", "unreachable", "unauthenticated")
                   if s.get(k))
print(f"{label}: wall {t1 - t0:.2f} s (command), {s['wall_ms'] / 1000:.2f} s (summary wall_ms); "
      f"{s['nodes']} nodes: {counts}; exit {code}")
EOF
}

for n in "${sizes[@]}"; do
  for ((i = 0; i < n; i++)); do start_daemon "$i"; done
  addresses=()
  for ((i = 0; i < n; i++)); do addresses+=("$(daemon_address "$i")"); done
  targets=$(IFS=,; echo "${addresses[*]}")
  check "N=$n first check" "$targets"
  check "N=$n second check" "$targets"
  # Nodes that keep their last verdict answer it without running anything: what is left is the
  # fan-out itself (connections, calls, the report).
  check "N=$n cached (--max-verdict-age 10m)" "$targets" --max-verdict-age 10m
  stop_daemons
  rm -rf "$tmp"/n*
done
