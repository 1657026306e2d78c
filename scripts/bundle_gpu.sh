#!/usr/bin/env bash
# Builds the cuda build (build-gpu) and bundles it for a GPU box without gRPC: binaries in
# out/gpu-bundle/bin, the non-glibc shared libraries they need in out/gpu-bundle/lib, found
# through a DT_RPATH of $ORIGIN/../lib (RUNPATH would not reach second-level libraries), and the
# whole as out/box/gpu-bundle.tar.xz; the CUDA kernel plugins of the box's plugin part in
# out/gpu-bundle/plugins.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${BUILD_DIR:-build-gpu}"
out=out/gpu-bundle
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCOLLTEST_GPU=cuda \
  "-DCMAKE_EXE_LINKER_FLAGS=-Wl,--disable-new-dtags,-rpath,'\$ORIGIN/../lib'"
cmake --build "$build_dir" -j "${JOBS:-2}" --target colltestd colltest-worker colltest gpu_test \
  one_device_group_test
rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
bins=(colltestd colltest-worker colltest gpu_test one_device_group_test)
for b in "${bins[@]}"; do
  cp "$build_dir/bin/$b" "$out/bin/"
  strip "$out/bin/$b"
done
# The measured tune tables, where colltestd looks for them by default (`auto`).
# The kernel plugins of the box's plugin part (tests/gpu/shared_stage.sh), each built as a kernel
# team would: against the SDK installed into a prefix of its own (docs/plugins.md).
sdk="$PWD/$build_dir/plugin-sdk"
rm -rf "$sdk"
cmake --install "$build_dir" --component dev --prefix "$sdk" >/dev/null
mkdir -p "$out/plugins"
for project in examples/plugins/oneshot_norm tests/plugins/gpu; do
  pb="$build_dir/plugin-$(basename "$project")"
  cmake -S "$project" -B "$pb" -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$sdk" \
    -DONESHOT_NORM_GPU=ON -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build "$pb" -j "${JOBS:-2}"
done
cp "$build_dir/plugin-oneshot_norm/oneshot_norm_cuda.so" "$build_dir/plugin-gpu/never_finishes_cuda.so" \
  "$out/plugins/"
mkdir -p "$out/share/colltest/tune"
cp tune/*.json "$out/share/colltest/tune/" 2>/dev/null || true
# glibc, the loader, the driver and NCCL come from the box.
for b in "${bins[@]}"; do ldd "$build_dir/bin/$b"; done |
  awk '/=> \// {print $3}' | sort -u |
  grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libcuda|libnccl)\.so' |
  while read -r lib; do cp -L "$lib" "$out/lib/"; done
# What travels to the box: one xz archive (the kernels of every instantiation make the binaries
# large, and compress about 2.5 to 1), which run_on_box.sh's caller unpacks into out/.
archive=out/box/gpu-bundle.tar.xz
rm -rf out/box
mkdir -p out/box
tar cJf "$archive" -C out gpu-bundle
du -sh "$out" "$archive"
size=$(du -sm "$archive" | cut -f1)
if [ "$size" -gt 60 ]; then
  echo "bundle_gpu.sh: $archive is $size MiB, over the 60 MiB limit" >&2
  exit 1
fi
