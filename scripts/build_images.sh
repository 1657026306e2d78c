#!/usr/bin/env bash
# Builds colltest's container images (deploy/docker) with podman, or with docker where podman is
# missing, over a Debian 12 base image this script makes itself: no image is pulled from a
# registry. docs/deploy.md ("Building the images") lists the images, their sizes and build times.
#
#   bash scripts/build_images.sh [--dry-run] [IMAGE...]
#
# IMAGE: base, cpu, rocm, cuda (default: all four, in that order). `base` is made when missing
# (or when named): mmdebstrap of bookworm with this machine's apt sources (/etc/apt/sources.list
# and /etc/apt/sources.list.d/*.sources, *.list), imported as ${BASE_IMAGE}. Every Dockerfile's
# FROM names that base; the builds never pull (--pull=never).
#
# Environment:
#   ENGINE              podman or docker (default: podman if installed, else docker)
#   JOBS                compile jobs inside the build stage (default 2)
#   BUILD_TYPE          CMake build type (default Release; the packages carry stripped binaries)
#   BASE_IMAGE          the base's tag (default localhost/colltest-base:bookworm)
#   IMAGE_PREFIX        the images' name (default localhost/colltest; tags :cpu, :rocm, :cuda)
#   APT_SOURCES         apt source files for the base, space-separated (default: this machine's)
#   CUDA_HOME           the CUDA toolkit the CUDA image compiles with, mounted read-only into the
#                       build stage, never copied into an image (default /usr/local/cuda; podman
#                       only: docker build has no --volume)
#   CUDA_ARCHITECTURES  (default "90;100": H100/H200, B200; sm_100 needs CUDA 12.8 or later)
#   HIP_ARCHITECTURES   (default gfx90a: the one target Debian's ROCm 5.2 links; see docs/deploy.md
#                       for gfx942/gfx950)
#   RUNTIME             the OCI runtime podman runs with (default runc when installed: crun fails on
#                       hosts with cgroup v1 hierarchies)
#   IMAGE_STORE         a directory for podman's storage and temporary files (default: podman's
#                       own storage; temporary files under TMPDIR)
#   STORAGE_DRIVER      podman's storage driver (default: podman's, overlay on most hosts; vfs
#                       where overlay is refused)
set -euo pipefail
cd "$(dirname "$0")/.."

dry_run=0
images=()
for arg in "$@"; do
  case "$arg" in
    --dry-run) dry_run=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    base | cpu | rocm | cuda) images+=("$arg") ;;
    *)
      echo "build_images: unknown argument '$arg' (expected --dry-run, base, cpu, rocm, cuda)" >&2
      exit 2
      ;;
  esac
done
if [ ${#images[@]} -eq 0 ]; then images=(base cpu rocm cuda); fi

base_image="${BASE_IMAGE:-localhost/colltest-base:bookworm}"
prefix="${IMAGE_PREFIX:-localhost/colltest}"
jobs="${JOBS:-2}"
build_type="${BUILD_TYPE:-Release}"
cuda_home="${CUDA_HOME:-/usr/local/cuda}"
cuda_archs="${CUDA_ARCHITECTURES:-90;100}"
hip_archs="${HIP_ARCHITECTURES:-gfx90a}"

engine="${ENGINE:-}"
if [ -z "$engine" ]; then
  if command -v podman >/dev/null 2>&1; then
    engine=podman
  elif command -v docker >/dev/null 2>&1; then
    engine=docker
  elif [ $dry_run -eq 1 ]; then
    engine=podman
  else
    echo "build_images: neither podman nor docker is installed (apt install podman)" >&2
    exit 1
  fi
fi
engine_opts=()
if [ "$engine" = podman ]; then
  runtime="${RUNTIME:-}"
  if [ -z "$runtime" ] && command -v runc >/dev/null 2>&1; then runtime=runc; fi
  if [ -n "$runtime" ]; then engine_opts+=(--runtime "$runtime"); fi
  if [ -n "${STORAGE_DRIVER:-}" ]; then engine_opts+=(--storage-driver "$STORAGE_DRIVER"); fi
  if [ -n "${IMAGE_STORE:-}" ]; then
    engine_opts+=(--root "$IMAGE_STORE/storage" --runroot "$IMAGE_STORE/run")
    export TMPDIR="$IMAGE_STORE/tmp"
  fi
fi

# The apt sources the base is made with, passed through as they are: deb822 (*.sources) and
# one-line (*.list) files alike.
apt_sources=()
if [ -n "${APT_SOURCES:-}" ]; then
  read -r -a apt_sources <<<"$APT_SOURCES"
else
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list; do
    if [ -s "$f" ]; then apt_sources+=("$f"); fi
  done
fi

# Prints a command; runs it unless --dry-run.
run() {
  printf '+'
  printf ' %q' "$@"
  printf '\n'
  if [ $dry_run -eq 0 ]; then "$@"; fi
}

declare -A seconds=()

make_base() {
  if [ ${#apt_sources[@]} -eq 0 ]; then
    echo "build_images: no apt sources (/etc/apt/sources.list{,.d}); set APT_SOURCES" >&2
    return 1
  fi
  local start=$SECONDS tmp
  tmp="${TMPDIR:-/var/tmp}/colltest-base.$$"
  run mkdir -p "$tmp"
  # --variant=apt: the Essential packages and apt, what debian:12-slim holds. The path excludes
  # are debian:12-slim's as well: no documentation but the copyright files, no man pages, no
  # translations.
  run mmdebstrap --variant=apt --include=ca-certificates \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --aptopt='APT::Install-Recommends "false"' \
    bookworm "$tmp/base.tar" "${apt_sources[@]}"
  run "$engine" "${engine_opts[@]}" import --change 'CMD ["/bin/bash"]' "$tmp/base.tar" "$base_image"
  run rm -rf "$tmp"
  seconds[base]=$((SECONDS - start))
}

have_base() {
  if [ $dry_run -eq 1 ]; then return 1; fi
  if [ "$engine" = podman ]; then
    podman "${engine_opts[@]}" image exists "$base_image"
  else
    docker image inspect "$base_image" >/dev/null 2>&1
  fi
}

build_image() {
  local name="$1" dockerfile="$2" start=$SECONDS
  shift 2
  local pull=(--pull=never)
  if [ "$engine" = docker ]; then pull=(); fi # docker build pulls only with --pull
  run "$engine" "${engine_opts[@]}" build "${pull[@]}" --network host \
    --build-arg BASE_IMAGE="$base_image" --build-arg JOBS="$jobs" \
    --build-arg BUILD_TYPE="$build_type" "$@" \
    -f "deploy/docker/$dockerfile" -t "$prefix:$name" .
  seconds[$name]=$((SECONDS - start))
}

for image in "${images[@]}"; do
  echo "build_images: $image ($engine)"
  case "$image" in
    base) make_base ;;
    cpu | rocm | cuda)
      if ! have_base && [[ ! " ${images[*]} " =~ " base " ]]; then make_base; fi
      case "$image" in
        cpu) build_image cpu Dockerfile.cpu ;;
        rocm)
          if [[ "$hip_archs" =~ gfx94|gfx95 ]]; then
            # docs/deploy.md ("gfx942 and gfx950") has the linker's and the driver's messages.
            echo "build_images: HIP_ARCHITECTURES=$hip_archs: Debian 12's ROCm 5.2 links gfx90a" \
              "only; gfx942/gfx950 need ROCm 6.3+ device libraries, which Debian does not have" >&2
            exit 1
          fi
          build_image rocm Dockerfile.rocm --build-arg HIP_ARCHITECTURES="$hip_archs"
          ;;
        cuda)
          if [ "$engine" != podman ]; then
            echo "build_images: the CUDA image needs podman (build --volume mounts $cuda_home)" >&2
            exit 1
          fi
          if [ $dry_run -eq 0 ] && [ ! -x "$cuda_home/bin/nvcc" ]; then
            echo "build_images: no $cuda_home/bin/nvcc: install a CUDA toolkit or set CUDA_HOME" >&2
            exit 1
          fi
          # The toolkit is mounted where nvcc is looked for; the runtime stage never sees it.
          # readlink: the mount needs the directory, not the /usr/local/cuda symlink.
          build_image cuda Dockerfile.cuda --volume "$(readlink -f "$cuda_home"):/usr/local/cuda:ro" \
            --build-arg CUDA_ARCHITECTURES="$cuda_archs"
          ;;
      esac
      ;;
  esac
done

if [ $dry_run -eq 0 ]; then
  echo "build_images: done"
  for image in "${images[@]}"; do
    echo "build_images: $image: ${seconds[$image]:-0} s"
  done
  "$engine" "${engine_opts[@]}" image ls --filter reference="$prefix" --filter reference="$base_image"
fi
