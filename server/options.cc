#include "server/options.h"

#include <unistd.h>

#include <climits>
#include <filesystem>
#include <iostream>

#include "CLI/CLI.hpp"

#ifndef COLLTEST_VERSION
#define COLLTEST_VERSION "unknown"
#endif

namespace colltest::server {

const char* Version() { return COLLTEST_VERSION; }

std::string DefaultWorkerPath() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "colltest-worker";
  return (self.parent_path() / "colltest-worker").string();
}

std::string DefaultTuneDir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  const std::filesystem::path bin = self.parent_path();
  for (const std::filesystem::path& dir : {bin.parent_path() / "share" / "colltest" / "tune",
                                           bin.parent_path().parent_path() / "tune"}) {
    if (std::filesystem::is_directory(dir, error)) return dir.string();
  }
  return "";
}

std::string ListenHost(const std::string& listen) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos) return listen;
  return listen.substr(0, colon);
}

ParsedOptions ParseOptions(int argc, const char* const* argv) {
  ServerOptions o;
  CLI::App app{"colltestd: tests fused all-reduce + RMSNorm collective kernels on this node"};
  app.set_version_flag("--version", Version());

  app.add_option("--listen", o.listen, "gRPC address, host:port (port 0: chosen by the OS)")
      ->capture_default_str()
      ->check([](const std::string& value) -> std::string {
        if (value.rfind("unix:", 0) == 0) return "";
        const size_t colon = value.rfind(':');
        if (colon == std::string::npos || colon == 0 || colon + 1 == value.size()) {
          return "expected host:port, e.g. 127.0.0.1:50051";
        }
        return "";
      });
  app.add_option("--backend", o.backend, "auto (probe for GPUs, else cpu), cpu, cuda or hip")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "cpu", "cuda", "hip"}));
  app.add_option("--cpu-ranks", o.cpu_ranks, "virtual devices of the cpu backend")
      ->capture_default_str()
      ->check(CLI::Range(1, 64));
  app.add_option("--devices", o.devices, "use only these device indices, e.g. 0,1")->delimiter(',');
  app.add_option("--http", o.http,
                 "serve Prometheus metrics at http://HOST:PORT/metrics (port 0: any)");
  app.add_option("--state-dir", o.state_dir, "directory for persistent state (not used yet)");
  auto* cert = app.add_option("--tls-cert", o.tls_cert, "server certificate (PEM)")
                   ->check(CLI::ExistingFile);
  auto* key =
      app.add_option("--tls-key", o.tls_key, "server private key (PEM)")->check(CLI::ExistingFile);
  auto* ca = app.add_option("--tls-client-ca", o.tls_client_ca,
                            "require client certificates signed by this CA (mutual TLS)")
                 ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  ca->needs(cert);
  app.add_option("--token-file", o.token_file,
                 "require \"authorization: Bearer <token>\" with the token in this file")
      ->check(CLI::ExistingFile);
  app.add_flag("--allow-fault-injection", o.allow_fault_injection,
               "accept requests with a fault to inject (never on a shared node)");
  app.add_option("--worker", o.worker, "colltest-worker binary (default: next to colltestd)");
  app.add_option("--max-case-bytes", o.max_case_bytes,
                 "largest m * n * element size of one case, per rank (e.g. 32MiB)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(true));
  app.add_option("--tune-dir", o.tune_dir,
                 "directory of tune tables (colltest tune --out) that `auto` dispatches with")
      ->check(CLI::ExistingDirectory);
  app.add_option("--runtime-dir", o.runtime_dir,
                 "parent of the workers' private socket directory (default $XDG_RUNTIME_DIR or "
                 "/tmp)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e);
    // CLI11's own codes (100 and up) collide with the documented exit codes of the clients;
    // a usage error is 2 like in most tools.
    return ParsedOptions{std::nullopt, code == 0 ? 0 : 2};
  }
  if (o.worker.empty()) o.worker = DefaultWorkerPath();
  if (o.tune_dir.empty()) o.tune_dir = DefaultTuneDir();
  if (o.max_case_bytes == 0) {
    std::cerr << "--max-case-bytes: must be > 0\n";
    return ParsedOptions{std::nullopt, 2};
  }
  return ParsedOptions{std::move(o), 0};
}

}  // namespace colltest::server
