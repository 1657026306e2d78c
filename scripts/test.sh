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
# COMPILE_GPU=0 skips it. Most tests run serially and leave a core idle, so the three checks run
# beside them, one after the other with one job: cuda (sm_90 alone), hip-mi, hip. In CI at
# dd2f674 cuda (sm_90 + sm_100) took 538 s beside 598 s of tests and the two HIP checks 221 and
# 190 s side by side after them, about four minutes at the run's end.
compile_pid=""
compile_log=""
if [ "${COMPILE_GPU:-1}" != 0 ]; then
  # Its compilers are installed first, so that no test sees a package half installed.
  bash scripts/setup.sh hip
  bash scripts/setup.sh hip-mi
  compile_log="$(mktemp -t colltest-compile.XXXXXX)"
  # CUDA for sm_90 alone: the kernels have no code of sm_100 of their own (gpu_runtime.h tests
  # __CUDA_ARCH__ >= 900 only), so a second target doubles ptxas and cicc time to check the same
  # source; bundle_gpu.sh and compile_gpu.sh run alone build both.
  CUDA_ARCHS=90 JOBS=1 bash scripts/compile_gpu.sh cuda hip-mi hip >"$compile_log" 2>&1 &
  compile_pid=$!
fi
# GPU tests carry the label `gpu`; they run on a GPU box (tests/gpu/run_on_box.sh).
tests_rc=0
ctest --test-dir "${BUILD_DIR:-build}" -LE 'gpu|hostile' --output-on-failure -j "${TEST_JOBS:-2}" ||
  tests_rc=$?
gpu_rc=0
if [ -n "$compile_pid" ]; then
  wait "$compile_pid" || gpu_rc=$?
  cat "$compile_log"
  rm -f "$compile_log"
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
