#!/usr/bin/env bash
# Sets everything up, builds, and runs every test that needs no GPU (unit and integration).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# The room rules (docs/rooms.md): who may include whom. It needs no build (a second), so a broken
# rule fails the run before the build starts. After setup.sh, which installs python3.
/usr/bin/python3 scripts/check_includes.py
bash scripts/build.sh
hostile_rc=0
# The attacks first (label hostile, about a minute): their bounds are latencies and RSS under
# attack, measured with no compile beside them.
ctest --test-dir "${BUILD_DIR:-build}" -L hostile --output-on-failure -j 1 || hostile_rc=$?
# Compile-only check of the cuda and hip GPU backends (nothing runs); a compile error fails CI.
# COMPILE_GPU=0 skips it. It runs with one job alongside the tests: most of them run serially and
# leave a core idle, and the check alone took about 5 of CI's 29 minutes.
gpu_pid=""
gpu_log=""
if [ "${COMPILE_GPU:-1}" != 0 ]; then
  # Its compilers are installed first, so that no test sees a package half installed.
  bash scripts/setup.sh hip
  bash scripts/setup.sh hip-mi
  gpu_log="$(mktemp -t colltest-compile-gpu.XXXXXX)"
  JOBS=1 bash scripts/compile_gpu.sh >"$gpu_log" 2>&1 &
  gpu_pid=$!
fi
# GPU tests carry the label `gpu`; they run on a GPU box (tests/gpu/run_on_box.sh).
tests_rc=0
ctest --test-dir "${BUILD_DIR:-build}" -LE 'gpu|hostile' --output-on-failure -j "${TEST_JOBS:-2}" ||
  tests_rc=$?
gpu_rc=0
if [ -n "$gpu_pid" ]; then
  wait "$gpu_pid" || gpu_rc=$?
  cat "$gpu_log"
  rm -f "$gpu_log"
fi
if [ "$hostile_rc" -ne 0 ]; then
  echo "test: ctest -L hostile FAILED (exit $hostile_rc)" >&2
fi
if [ "$tests_rc" -ne 0 ]; then
  echo "test: ctest FAILED (exit $tests_rc)" >&2
fi
if [ "$gpu_rc" -ne 0 ]; then
  echo "test: compile_gpu FAILED (exit $gpu_rc)" >&2
fi
[ "$hostile_rc" -eq 0 ] && [ "$tests_rc" -eq 0 ] && [ "$gpu_rc" -eq 0 ]
