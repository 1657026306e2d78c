#!/usr/bin/env bash
# Installs the Debian 12 packages colltest builds with. Idempotent: installs only what is missing.
# `setup.sh` installs the base list; `setup.sh hip` the optional list of the HIP compile check
# (scripts/compile_gpu.sh): Debian's ROCm 5.2 hipcc/clang-15 and HIP runtime headers (~650 MB).
set -euo pipefail

case "${1:-base}" in
  base)
    packages=(
      build-essential cmake ninja-build pkg-config git
      libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
      libabsl-dev libgtest-dev libgmock-dev libsqlite3-dev
      libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev prometheus-cpp-dev
      libcivetweb-dev libssl-dev
      chromium python3-websocket
      # Man pages (help2man), .debs (cpack runs dpkg-shlibdeps and file), the packaging tests' TLS
      help2man dpkg-dev file openssl
      # The deployment tests: systemd-analyze verify, and Debian's python3 with YAML for the
      # Kubernetes manifests
      systemd python3 python3-yaml
      # The Python client package (protoc's Python output, grpc_python_plugin of
      # protobuf-compiler-grpc), the JSON Schema check of every JSON output, and a JUnit consumer
      # with xmllint for the JUnit reports
      python3-grpcio python3-protobuf python3-jsonschema python3-junitparser libxml2-utils
    )
    ;;
  hip)
    packages=(hipcc libamdhip64-dev)
    ;;
  *)
    echo "setup: unknown package list '$1' (expected: base, hip)" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
echo "setup: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
