#!/usr/bin/env bash
# Compile-only check of the GPU backends: builds the GPU backend library and colltest-worker for
# CUDA (build-cuda, sm_90 + sm_100, when nvcc exists) and for HIP (build-hip, gfx90a, with Debian's
# ROCm 5.2 clang++-15, installed here on demand). Nothing runs and no GPU is needed; a kernel that
# does not compile fails the script. scripts/test.sh (CI) calls it; it also runs alone:
#   bash scripts/compile_gpu.sh            # both
#   bash scripts/compile_gpu.sh hip        # one of them
set -euo pipefail
cd "$(dirname "$0")/.."

backends=("$@")
if [ ${#backends[@]} -eq 0 ]; then backends=(cuda hip); fi
jobs="${JOBS:-2}"
# Only what the GPU backend needs: no tests, no server or client.
common=(-G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-RelWithDebInfo}" -DCOLLTEST_BUILD_TESTS=OFF
  -DCOLLTEST_ROOMS=worker)
targets=(--target colltest_gpu_backend colltest-worker)
failed=()
skipped=()

compile_cuda() {
  local nvcc=""
  if [ -x /usr/local/cuda/bin/nvcc ]; then
    nvcc=/usr/local/cuda/bin/nvcc
  elif command -v nvcc >/dev/null 2>&1; then
    nvcc="$(command -v nvcc)"
  fi
  if [ -z "$nvcc" ]; then
    echo "compile_gpu: cuda: SKIPPED the CUDA compile check: no nvcc (neither" \
      "/usr/local/cuda/bin/nvcc nor nvcc on PATH); install a CUDA toolkit (12.8+ for sm_100) to enable it"
    skipped+=(cuda)
    return 0
  fi
  local dir="${CUDA_BUILD_DIR:-build-cuda}" start=$SECONDS
  echo "compile_gpu: cuda: $nvcc, sm_90 + sm_100, into $dir"
  cmake -S . -B "$dir" "${common[@]}" -DCOLLTEST_GPU=cuda -DCMAKE_CUDA_COMPILER="$nvcc" \
    -DCMAKE_CUDA_ARCHITECTURES="90;100" &&
    cmake --build "$dir" -j "$jobs" "${targets[@]}" || return 1
  echo "compile_gpu: cuda: OK in $((SECONDS - start)) s"
}

compile_hip() {
  local dir="${HIP_BUILD_DIR:-build-hip}" start=$SECONDS
  bash scripts/setup.sh hip || return 1
  echo "compile_gpu: hip: clang++-15 (ROCm 5.2), gfx90a, into $dir"
  cmake -S . -B "$dir" "${common[@]}" -DCOLLTEST_GPU=hip -DCMAKE_HIP_ARCHITECTURES=gfx90a &&
    cmake --build "$dir" -j "$jobs" "${targets[@]}" || return 1
  echo "compile_gpu: hip: OK in $((SECONDS - start)) s"
}

for b in "${backends[@]}"; do
  case "$b" in
    cuda) compile_cuda || failed+=(cuda) ;;
    hip) compile_hip || failed+=(hip) ;;
    *)
      echo "compile_gpu: unknown backend '$b' (expected: cuda, hip)" >&2
      exit 2
      ;;
  esac
done
if [ ${#failed[@]} -ne 0 ]; then
  echo "compile_gpu: FAILED: ${failed[*]} (see the compiler errors above)" >&2
  exit 1
fi
if [ ${#skipped[@]} -ne 0 ]; then
  echo "compile_gpu: OK (skipped: ${skipped[*]}, see above)"
else
  echo "compile_gpu: OK: ${backends[*]} compile"
fi
