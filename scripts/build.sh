#!/usr/bin/env bash
# Configures and builds colltest into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
# Optimised as released, without debug information (BUILD_TYPE=RelWithDebInfo adds it back): on
# the 2-core machines the -g objects cost minutes of compile and link time.
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" \
  "-DCMAKE_CXX_FLAGS_RELEASE=-O2 -DNDEBUG" "$@"
# Two jobs fit the 2-core, 24 GiB build machines. TARGETS (space-separated) builds only those
# targets and what they need (scripts/demo.sh: the three programs it runs); empty builds all.
targets=()
for target in ${TARGETS:-}; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "${JOBS:-2}" "${targets[@]}"
