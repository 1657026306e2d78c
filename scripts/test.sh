#!/usr/bin/env bash
# Sets everything up, builds, and runs every test that needs no GPU (unit and integration).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# GPU tests carry the label `gpu`; they run on a GPU box (tests/gpu/run_on_box.sh).
ctest --test-dir "${BUILD_DIR:-build}" -LE gpu --output-on-failure -j "${TEST_JOBS:-2}"
