#!/usr/bin/env bash
# Compile-only check of the GPU backends: builds the GPU backend library and colltest-worker for
# CUDA (build-cuda, sm_90 + sm_100 or the CUDA_ARCHS given, when nvcc exists) and for HIP (build-hip, gfx90a, with Debian's
# ROCm 5.2 clang++-15, installed here on demand), and compiles the kernels for MI300X/MI355X
# (hip-mi: gfx942 + gfx950 with clang-22, host objects and device assembly) with the ISA check of
# gpu_runtime.h's memory primitives (tests/hip_isa). Nothing runs and no GPU is needed; a kernel that does not
# compile fails the script. scripts/test.sh (CI) calls it; it also runs alone:
#   bash scripts/compile_gpu.sh            # all three
#   bash scripts/compile_gpu.sh hip hip-mi # some of them
set -euo pipefail
cd "$(dirname "$0")/.."

backends=("$@")
if [ ${#backends[@]} -eq 0 ]; then backends=(cuda hip hip-mi); fi
jobs="${JOBS:-2}"
# Only what the GPU backend needs: no tests, no server or client.
common=(-G Ninja -DCMAKE_BUILD_TYPE="${BUILD_TYPE:-Release}" -DCOLLTEST_BUILD_TESTS=OFF
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
  local archs=(-DCMAKE_CUDA_ARCHITECTURES="90;100")
  if [ -n "${CUDA_ARCHS:-}" ]; then archs=(-DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCHS"); fi
  local named="${archs[0]#*=}"
  echo "compile_gpu: cuda: $nvcc, sm_${named//;/ + sm_}, into $dir"
  cmake -S . -B "$dir" "${common[@]}" -DCOLLTEST_GPU=cuda -DCMAKE_CUDA_COMPILER="$nvcc" \
    "${archs[@]}" &&
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

# gfx942 (MI300X) and gfx950 (MI355X). LLVM 15 of ROCm 5.2 knows neither, so Debian's clang-22
# (bookworm-security) compiles them against the same ROCm 5.2 headers. Not through CMake: its HIP
# compiler check links a test program, which needs device libraries for ROCm 6.3+ that Debian does
# not have. So a direct loop, one clang call per source, with (docs/hip.md says why each is there):
#   -nogpulib                       no ROCm device libraries (those of 5.2 are too old for clang-22)
#   -D__AMDGCN_WAVEFRONT_SIZE=64    the macro ROCm 5.2's headers use, which clang-22 no longer sets
#   --cuda-host-only -c             the host half: an object of the host code and kernel stubs
#   --cuda-device-only -S           the device half through the AMDGPU backend to assembly, so that
#                                   instruction selection for both targets is checked too; nothing
#                                   is device-linked (the link would need the device libraries)
# Each half once: an `-fgpu-rdc -c` object (host code plus device bitcode) beside the assembly ran
# the device front end and optimiser twice for each target.
# The results are not loadable code objects: this is a compile check, the gfx90a build stays the
# one that links. The ISA check then reads gpu_runtime.h's primitives in the gfx942/gfx950
# assembly (tests/hip_isa/check_isa.py).
hip_mi_sources=(worker/backends/gpu/concurrency_probe.cu
  worker/backends/gpu/kernels_collective.cu worker/backends/gpu/kernels_lamport_tb.cu
  worker/backends/gpu/kernels_lamport_two_shot.cu
  worker/backends/gpu/kernels_support.cu
  worker/backends/gpu/nccl_kernels.cu)
hip_mi_flags=(-std=c++17 -x hip --rocm-path=/usr -nogpulib -D__AMDGCN_WAVEFRONT_SIZE=64 -O3
  -I"$PWD" -Wall --offload-arch=gfx942 --offload-arch=gfx950)

# One source: the host object, then the device assembly (one .s per target, named by clang, hence
# the cd).
compile_hip_mi_one() {
  local src="$PWD/$1" dir="$2"
  clang++-22 "${hip_mi_flags[@]}" --cuda-host-only -c "$src" -o "$dir/$(basename "$src" .cu).o" &&
    (cd "$dir" && clang++-22 "${hip_mi_flags[@]}" --cuda-device-only -S "$src")
}

compile_hip_mi() {
  local dir="${HIP_MI_BUILD_DIR:-build-hip-mi}" start=$SECONDS pids=() src rc=0
  bash scripts/setup.sh hip-mi || return 1
  echo "compile_gpu: hip-mi: clang++-22, gfx942 + gfx950 (host objects, device assembly), into $dir"
  mkdir -p "$dir"
  # nccl_kernels.cu needs no RCCL (only its host caller does), so it is compiled here as well.
  for src in "${hip_mi_sources[@]}"; do
    compile_hip_mi_one "$src" "$dir" &
    pids+=($!)
    if [ ${#pids[@]} -ge "$jobs" ]; then
      wait "${pids[0]}" || rc=1
      pids=("${pids[@]:1}")
    fi
  done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  [ $rc -eq 0 ] || return 1
  /usr/bin/python3 tests/hip_isa/check_isa.py --require --keep "$dir/isa" || return 1
  echo "compile_gpu: hip-mi: OK in $((SECONDS - start)) s"
}

for b in "${backends[@]}"; do
  case "$b" in
    cuda) compile_cuda || failed+=(cuda) ;;
    hip) compile_hip || failed+=(hip) ;;
    hip-mi) compile_hip_mi || failed+=(hip-mi) ;;
    *)
      echo "compile_gpu: unknown backend '$b' (expected: cuda, hip, hip-mi)" >&2
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
