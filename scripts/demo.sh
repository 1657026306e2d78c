#!/usr/bin/env bash
# Sets everything up, builds, starts colltestd on 127.0.0.1 (cpu backend, 4 ranks where there is
# no GPU) with its dashboard, runs the default sweep through the CLI, prints the result table and
# the history, and stops the server. DEMO_KEEP=1 keeps it serving (Ctrl-C stops it) so that the
# dashboard can be opened. The history is kept in the default state directory
# ($XDG_STATE_HOME/colltest, else ~/.local/state/colltest; COLLTEST_STATE_DIR overrides it).
set -euo pipefail
cd "$(dirname "$0")/.."
# The build's packages and the three programs the demo runs: no test tools, no test binaries.
bash scripts/setup.sh build
TARGETS="colltestd colltest colltest-worker" bash scripts/build.sh
bin="${BUILD_DIR:-build}"

tmp=$(mktemp -d)
mkfifo "$tmp/stdout"
state_args=()
if [ -n "${COLLTEST_STATE_DIR:-}" ]; then state_args=(--state-dir "$COLLTEST_STATE_DIR"); fi
"$bin/bin/colltestd" --listen 127.0.0.1:0 --http 127.0.0.1:0 --backend auto --cpu-ranks 4 \
  "${state_args[@]}" >"$tmp/stdout" 2>"$tmp/stderr" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$tmp"' EXIT

# The server prints "colltestd listening on HOST:PORT ..." once it serves: block on that line.
exec {out}<"$tmp/stdout"
if ! read -r -t 120 -u "$out" line; then
  echo "colltestd did not start:"; cat "$tmp/stderr"; exit 3
fi
echo "$line"
addr=$(sed -n 's/^colltestd listening on \([^ ]*\).*/\1/p' <<<"$line")
http=$(sed -n 's/.* http=\([^ ]*\).*/\1/p' <<<"$line")
echo "dashboard: http://$http/"

"$bin/bin/colltest" --server "$addr" devices
"$bin/bin/colltest" --server "$addr" sweep --world 4 --m 1,8,64 --hidden 7168 \
  --variants one_stage,two_kernel,lamport,lamport_tb --pattern integers "$@"
"$bin/bin/colltest" --server "$addr" history --limit 5
echo "dashboard: http://$http/  (JSON API: http://$http/api/v1/runs, metrics: http://$http/metrics)"
if [ "${DEMO_KEEP:-0}" = "1" ]; then
  echo "colltestd keeps serving; Ctrl-C stops it"
  wait "$server" || true
fi
