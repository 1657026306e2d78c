#!/usr/bin/env bash
# Sets everything up, builds, starts colltestd on 127.0.0.1 (cpu backend, 4 ranks where there is
# no GPU), runs the default sweep through the CLI, prints the result table and stops the server.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
bin="${BUILD_DIR:-build}"

tmp=$(mktemp -d)
mkfifo "$tmp/stdout"
"$bin/bin/colltestd" --listen 127.0.0.1:0 --backend auto --cpu-ranks 4 \
  >"$tmp/stdout" 2>"$tmp/stderr" &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null; rm -rf "$tmp"' EXIT

# The server prints "colltestd listening on HOST:PORT ..." once it serves: block on that line.
exec {out}<"$tmp/stdout"
if ! read -r -t 120 -u "$out" line; then
  echo "colltestd did not start:"; cat "$tmp/stderr"; exit 3
fi
echo "$line"
addr=$(sed -n 's/^colltestd listening on \([^ ]*\).*/\1/p' <<<"$line")

"$bin/bin/colltest" --server "$addr" devices
"$bin/bin/colltest" --server "$addr" sweep --world 4 --m 1,8,64 --n 7168 \
  --variants one_stage,two_kernel,lamport,lamport_tb --pattern integers "$@"
