// colltestd's command line. The flag names are a public interface (docs/design.md section 10):
// scripts and unit files depend on them, so add flags but never rename one.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/time/time.h"
#include "common/defaults.h"  // kDefaultMaxCaseBytes
#include "server/net/listen_options.h"

namespace colltest::server {

struct ServerOptions {
  std::string listen = "127.0.0.1:50051";  // loopback unless the operator opens it up
  std::string backend = "auto";            // auto, cpu, cuda or hip
  uint32_t cpu_ranks = 4;
  std::vector<uint32_t> devices;  // restrict the server to these device indices; empty = all
  // Slots each GPU offers (cuda and hip): a W-rank group can live on W / N GPUs, one worker
  // process per rank as always (docs/shared-gpu.md). 1: one rank per GPU.
  uint32_t ranks_per_gpu = 1;
  // With ranks_per_gpu > 1, start even when two processes' kernels on one GPU are time-sliced
  // rather than concurrent (no MPS): case timeouts grow to match and results say so.
  bool allow_time_slicing = false;
  std::string http;  // HTTP address: API, dashboard, metrics (http/gateway.h); empty = not served
  // The HTTP port's threads, body limits and extra host names (http/gateway.h, docs/security.md).
  uint32_t http_threads = 64;
  absl::Duration http_body_timeout = absl::Seconds(10);
  uint32_t http_max_body_readers = 16;          // below http_threads: the rest stay for GETs
  uint32_t http_max_body_readers_per_peer = 4;  // of them from one address
  std::vector<std::string> http_allowed_hosts;  // Host/Origin names beyond loopback and --http's
  // A second, plaintext gRPC listener that serves only grpc.health.v1.Health, without tokens, for
  // probes that can send neither (Kubernetes' grpc probe); empty = none.
  std::string health_listen;
  std::string hostname;   // reported as MachineIdentity.hostname; empty = gethostname(2)
  std::string state_dir;  // the history database's directory; empty = store::ResolveStateDir("")
  TlsOptions tls;
  std::string token_file;
  bool insecure_listen = false;  // serve a non-loopback address without TLS or token
  bool allow_fault_injection = false;
  std::string worker;  // colltest-worker; empty = next to this binary
  uint64_t max_case_bytes = kDefaultMaxCaseBytes;
  std::string runtime_dir;
  std::string tune_dir;  // tune tables for `auto`; empty = DefaultTuneDir()
  // Kernel plugins (docs/plugins.md): each --kernel-plugin, then the *.so of the folder. The
  // folder defaults to DefaultKernelPluginDir(), which may be missing; a given one may not.
  std::vector<std::string> kernel_plugins;
  std::string kernel_plugin_dir;
  bool kernel_plugin_dir_given = false;
  // Retention of the history database (docs/history.md); 0 / zero: no bound of that kind.
  uint64_t history_max_runs = 10000;
  absl::Duration history_max_age = absl::Hours(24 * 90);
  uint64_t history_max_bytes = uint64_t{1} << 30;  // serialized case results kept
  absl::Duration history_prune_interval = absl::Minutes(1);
  // Workers of a group with no case for this long exit, so that an idle node holds no GPU memory;
  // the next case respawns them (docs/neighbours.md gives the cost). Zero: they never exit.
  absl::Duration idle_timeout = absl::Minutes(1);
  uint32_t max_active_runs_per_owner = 16;  // queued or running runs of one caller; 0: no limit
  uint32_t max_baselines_per_owner = 32;    // baselines one caller may own; 0: no limit
  // Health checks one caller may start per minute (docs/limits.md); 0: no limit.
  uint32_t health_rate_per_caller = 30;
  // Connections and streams (docs/limits.md).
  FrontEndFlags front_end;
  absl::Duration stream_send_timeout = absl::Seconds(30);  // one Sweep message to the client
};

// Either the options to run with, or the exit code to leave with (after --help, --version or a
// usage error, whose text has already been printed).
struct ParsedOptions {
  std::optional<ServerOptions> options;
  int exit_code = 0;
};

ParsedOptions ParseOptions(int argc, const char* const* argv);

// colltest-worker in the directory of the running executable, found through /proc/self/exe so
// that an installed or copied bundle finds its own worker and not one on $PATH.
std::string DefaultWorkerPath();
// Where `auto` looks for tune tables without --tune-dir: share/colltest/tune next to the binary's
// directory (an installed or bundled tree), else the source tree's tune/ (build/bin/../../tune).
std::string DefaultTuneDir();

// <colltestd's bin>/../lib/colltest/plugins: /usr/lib/colltest/plugins when installed.
std::string DefaultKernelPluginDir();

// Refuses a non-loopback --listen that has neither TLS nor a token file (anyone on the network
// could run, read and cancel anything), unless --insecure-listen says that is intended.
absl::Status CheckListenIsProtected(const ServerOptions& options);

}  // namespace colltest::server
