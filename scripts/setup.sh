#!/usr/bin/env bash
# Installs the Debian 12 packages colltest builds with. Idempotent: installs only what is missing.
# `setup.sh` (or `setup.sh base`) installs the base list: what a build needs plus the tools the
# tests run; `setup.sh build` the build's part alone (the container images' build stage,
# scripts/build_images.sh); `setup.sh hip` the optional list of the HIP compile check
# (scripts/compile_gpu.sh): Debian's ROCm 5.2 hipcc/clang-15 and HIP runtime headers (~650 MB);
# `setup.sh hip-mi` the gfx942/gfx950 (MI300X/MI355X) check: clang-22 from bookworm-security with
# clang-offload-bundler (clang-tools-22) and the same HIP headers (~110 MB of archives, ~300 MB on
# disk; docs/hip.md).
set -euo pipefail

case "${1:-base}" in
  base | build)
    packages=(
      build-essential cmake ninja-build pkg-config git
      libgrpc++-dev libgrpc-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
      libabsl-dev libgtest-dev libgmock-dev libsqlite3-dev
      libcli11-dev nlohmann-json3-dev libfmt-dev libspdlog-dev prometheus-cpp-dev
      libcivetweb-dev libssl-dev
      # Man pages (help2man), .debs (cpack runs dpkg-shlibdeps and file)
      help2man dpkg-dev file
    )
    # The tests' tools, not needed to build: the dashboard test's browser, the packaging tests' TLS
    test_packages=(
      chromium python3-websocket openssl zsh fish
      # The deployment tests: systemd-analyze verify, and Debian's python3 with YAML for the
      # Kubernetes manifests
      systemd python3 python3-yaml
      # The Python client package (protoc's Python output, grpc_python_plugin of
      # protobuf-compiler-grpc), the JSON Schema check of every JSON output, and a JUnit consumer
      # with xmllint for the JUnit reports
      python3-grpcio python3-protobuf python3-jsonschema python3-junitparser libxml2-utils
      python3-build python3-mypy python3-venv  # the Python client's wheel and type check
      lintian mmdebstrap  # the packaging tests: lintian on the .debs, a clean root to install them
    )
    if [ "${1:-base}" = base ]; then packages+=("${test_packages[@]}"); fi
    ;;
  hip)
    packages=(hipcc libamdhip64-dev)
    ;;
  hip-mi)
    # No lld-22: objects are compiled with -fgpu-rdc and never device-linked (docs/hip.md).
    packages=(clang-22 clang-tools-22 libamdhip64-dev)
    ;;
  *)
    echo "setup: unknown package list '$1' (expected: base, build, hip, hip-mi)" >&2
    exit 2
    ;;
esac

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# clang-22 is in bookworm-security only. Debian's images list that suite (debian.sources); an
# apt configuration without it gets it added in a file of its own.
add_bookworm_security() {
  if grep -rqs 'bookworm-security' /etc/apt/sources.list /etc/apt/sources.list.d/; then return 0; fi
  echo "setup: adding bookworm-security to apt's sources (clang-22 comes from there)"
  printf '%s\n' 'Types: deb' 'URIs: http://deb.debian.org/debian-security' \
    'Suites: bookworm-security' 'Components: main' \
    'Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg' |
    $sudo tee /etc/apt/sources.list.d/colltest-bookworm-security.sources >/dev/null
}
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
else
  echo "setup: installing ${missing[*]}"
  if [ "${1:-base}" = hip-mi ]; then add_bookworm_security; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# promtool, for the metrics tests (tests/metrics): taken out of Debian's prometheus package
# without installing it, as installing it would start a Prometheus server.
if [ "${1:-base}" = base ]; then
  tools=/opt/colltest-tools/prometheus
  if [ -x "$tools/usr/bin/promtool" ]; then
    echo "setup: promtool present"
  else
    cache=/var/cache/colltest-tools
    $sudo mkdir -p "$cache" "$tools"
    # apt-get download writes into the current directory, as the invoking user.
    (cd "$cache" && $sudo apt-get download -qq prometheus) ||
      { $sudo apt-get update -qq && (cd "$cache" && $sudo apt-get download -qq prometheus); }
    extracted=$($sudo mktemp -d)
    $sudo dpkg-deb -x "$(ls -t "$cache"/prometheus_*.deb | head -n 1)" "$extracted"
    $sudo install -D -m 0755 "$extracted/usr/bin/promtool" "$tools/usr/bin/promtool"
    $sudo rm -rf "$extracted"
    echo "setup: promtool in $tools/usr/bin"
  fi
fi
