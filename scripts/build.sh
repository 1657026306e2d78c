#!/usr/bin/env bash
# Configures and builds colltest into ${BUILD_DIR:-build}.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build}"
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" "$@"
# Two jobs fit the 2-core, 24 GiB build machines.
cmake --build "$build_dir" -j "${JOBS:-2}"
