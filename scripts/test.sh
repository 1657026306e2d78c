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
# COMPILE_GPU=0 skips it. Most tests run serially and leave a core idle, so the CUDA check (the
# longest, about as long as the tests) runs beside them with one job; the two HIP checks follow the
# tests, side by side with a job each. In CI at d5125d3 the three ran one after the other beside the
# tests (752 + 307 + 356 s against 737 s of tests), which put about ten minutes on the run's end.
compile_pids=()
compile_logs=()
start_compile() {  # start_compile BACKEND: compile_gpu.sh BACKEND with one job, in the background
  local log
  log="$(mktemp -t "colltest-compile-$1.XXXXXX")"
  # CUDA for sm_90 alone: the kernels have no code of sm_100 of their own (gpu_runtime.h tests
  # __CUDA_ARCH__ >= 900 only), so a second target doubles ptxas and cicc time to check the same
  # source; bundle_gpu.sh and compile_gpu.sh run alone build both.
  CUDA_ARCHS=90 JOBS=1 bash scripts/compile_gpu.sh "$1" >"$log" 2>&1 &
  compile_pids+=($!)
  compile_logs+=("$log")
}
if [ "${COMPILE_GPU:-1}" != 0 ]; then
  # Its compilers are installed first, so that no test sees a package half installed.
  bash scripts/setup.sh hip
  bash scripts/setup.sh hip-mi
  start_compile cuda
fi
# GPU tests carry the label `gpu`; they run on a GPU box (tests/gpu/run_on_box.sh).
tests_rc=0
ctest --test-dir "${BUILD_DIR:-build}" -LE 'gpu|hostile' --output-on-failure -j "${TEST_JOBS:-2}" ||
  tests_rc=$?
if [ "${COMPILE_GPU:-1}" != 0 ]; then
  start_compile hip
  start_compile hip-mi
fi
gpu_rc=0
for i in "${!compile_pids[@]}"; do
  wait "${compile_pids[$i]}" || gpu_rc=$?
  cat "${compile_logs[$i]}"
  rm -f "${compile_logs[$i]}"
done
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
