#!/usr/bin/env bash
# Sets everything up, builds, and runs every test that needs no GPU (unit and integration).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh
# GPU tests carry the label `gpu`; they run on a GPU box (tests/gpu/run_on_box.sh).
ctest --test-dir "${BUILD_DIR:-build}" -LE gpu --output-on-failure -j "${TEST_JOBS:-2}"
# Compile-only check of the cuda and hip GPU backends (nothing runs); a compile error fails CI.
# COMPILE_GPU=0 skips it.
if [ "${COMPILE_GPU:-1}" != 0 ]; then
  bash scripts/compile_gpu.sh
fi
