#include "server/options.h"

#include <climits>
#include <filesystem>
#include <iostream>

#include "CLI/CLI.hpp"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/parse.h"
#include "common/version.h"
#include "server/build_info.h"
#include "server/net/listen_address.h"

namespace colltest::server {

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

std::string DefaultKernelPluginDir() {
  std::error_code error;
  const std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", error);
  if (error) return "";
  return (self.parent_path().parent_path() / "lib" / "colltest" / "plugins").string();
}

namespace {

// A DNS name as Kubernetes gives node names (RFC 1123: letters, digits, '-', '.'), plus '_', at
// most 253 bytes: it becomes a label value and part of the machine key, so nothing that needs
// escaping or could be mistaken for another field.
CLI::Validator HostnameValidator() {
  return CLI::Validator(
      [](std::string& name) -> std::string {
        constexpr size_t kMaxHostname = 253;
        if (name.empty() || name.size() > kMaxHostname) {
          return absl::StrCat("--hostname: ", name.size(), " bytes; 1 to ", kMaxHostname);
        }
        for (const char c : name) {
          if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '.' &&
              c != '_') {
            return "--hostname: letters, digits, '-', '.' and '_' only";
          }
        }
        return "";
      },
      "HOSTNAME");
}

}  // namespace

absl::Status CheckListenIsProtected(const ServerOptions& options) {
  if (options.insecure_listen || IsLoopbackListen(options.listen)) return absl::OkStatus();
  if (!options.tls.cert.empty() || !options.token_file.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      "--listen ", options.listen,
      " is not a loopback address and neither --tls-cert/--tls-key nor --token-file is given: "
      "anyone who can reach it could run, read and cancel every run; add TLS or a token file, or "
      "--insecure-listen to serve it that way on purpose"));
}

namespace {

// A duration flag read with the shared grammar ("5s", "500ms", "2m"; a bare number is ms); it
// must be positive.
void AddDurationOption(CLI::App& app, const std::string& name, absl::Duration& target,
                       const std::string& help) {
  app.add_option_function<std::string>(
         name,
         [name, &target](const std::string& text) {
           absl::StatusOr<absl::Duration> parsed = common::ParseDuration(name, text);
           if (!parsed.ok()) throw CLI::ValidationError(std::string(parsed.status().message()));
           if (*parsed <= absl::ZeroDuration()) {
             throw CLI::ValidationError(name + ": must be > 0");
           }
           target = *parsed;
         },
         help)
      ->default_str(absl::FormatDuration(target));
}

// A byte-size flag read with the shared grammar ("4096", "64K", "32MiB": powers of 1024), as the
// client reads its size flags.
void AddByteSizeOption(CLI::App& app, const std::string& name, uint64_t& target,
                       const std::string& help) {
  app.add_option_function<std::string>(
         name,
         [name, &target](const std::string& text) {
           absl::StatusOr<uint64_t> parsed = common::ParseByteSize(name, text);
           if (!parsed.ok()) throw CLI::ValidationError(std::string(parsed.status().message()));
           target = *parsed;
         },
         help)
      ->default_str(std::to_string(target));
}

// Flags of the connection limits: docs/limits.md.
void AddConnectionOptions(CLI::App& app, ServerOptions& o) {
  app.add_option("--max-connections", o.front_end.max_connections,
                 "open client connections at most; more are accepted and closed at once (default: "
                 "min(1024, (fd soft limit - 64 - 8 x devices) / 2))")
      ->check(CLI::Range(1u, 1u << 20));
  AddDurationOption(app, "--handshake-timeout", o.front_end.handshake_timeout,
                    "a connection that has not sent the HTTP/2 preface by then is closed");
  AddDurationOption(app, "--first-call-timeout", o.front_end.first_call_timeout,
                    "a connection that has made no authenticated call by then (counted from its "
                    "accept) is closed");
  app.add_option("--max-connections-per-peer", o.front_end.max_connections_per_peer,
                 "connections without an authenticated call yet from one client IP address at "
                 "most; beyond, the peer's oldest such one is closed or the new one refused "
                 "(default: max(16, --max-connections / 4), at most --max-connections)")
      ->check(CLI::Range(1u, 1u << 20));
  AddDurationOption(app, "--stream-send-timeout", o.stream_send_timeout,
                    "a Sweep whose client has not taken a message by then is cancelled");
  AddDurationOption(app, "--max-connection-idle", o.front_end.max_connection_idle,
                    "a connection with no call for this long is closed (GOAWAY)");
  app.add_option("--max-streams-per-connection", o.front_end.max_streams_per_connection,
                 "concurrent calls on one connection; more wait in the client")
      ->capture_default_str()
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--max-threads", o.front_end.max_threads,
                 "threads gRPC may use for calls; beyond, calls fail RESOURCE_EXHAUSTED")
      ->capture_default_str()
      ->check(CLI::Range(16, 1 << 16));
  app.add_option("--grpc-memory", o.front_end.grpc_memory,
                 "memory gRPC may use for connection buffers (e.g. 1GiB)")
      ->capture_default_str()
      ->transform(CLI::AsSizeValue(true));
}

// Flags of the HTTP port's limits and browser rules: docs/security.md ("The HTTP port").
void AddHttpOptions(CLI::App& app, ServerOptions& o) {
  app.add_option("--http-threads", o.http_threads,
                 "connections the HTTP port serves at once (one thread each)")
      ->capture_default_str()
      ->check(CLI::Range(2, 1024));
  AddDurationOption(app, "--http-body-timeout", o.http_body_timeout,
                    "an HTTP request body not whole this long after its headers is refused 408 "
                    "and its connection closed");
  app.add_option("--http-max-body-readers", o.http_max_body_readers,
                 "HTTP requests reading a body at once; more are refused 503 at once (below "
                 "--http-threads: the other threads stay for /healthz, /metrics and GETs)")
      ->capture_default_str()
      ->check(CLI::Range(1, 1023));
  app.add_option("--http-max-body-readers-per-peer", o.http_max_body_readers_per_peer,
                 "of them from one client address; more are refused 429 at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 1023));
  app.add_option("--http-allowed-host", o.http_allowed_hosts,
                 "a name (or name:port) the HTTP port also answers to in Host and Origin "
                 "headers, beyond localhost, 127.0.0.1, [::1] and the --http host; repeatable")
      ->check([](const std::string& value) -> std::string {
        if (value.empty() || value.find_first_of(" /\t") != std::string::npos) {
          return "expected a host name or name:port, e.g. colltest.lab.example:9464";
        }
        return "";
      });
}

// The HTTP limits that depend on each other.
absl::Status CheckHttpOptions(const ServerOptions& o) {
  if (o.http_max_body_readers >= o.http_threads) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--http-max-body-readers ", o.http_max_body_readers, ": must be below --http-threads (",
        o.http_threads, "), so that threads stay for /healthz, /metrics and GETs"));
  }
  if (o.http_max_body_readers_per_peer > o.http_max_body_readers) {
    return absl::InvalidArgumentError(
        absl::StrCat("--http-max-body-readers-per-peer ", o.http_max_body_readers_per_peer,
                     ": must be at most --http-max-body-readers (", o.http_max_body_readers, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

// TLS, tokens and what callers may ask for: docs/security.md.
void AddSecurityOptions(CLI::App& app, ServerOptions& o) {
  auto* cert = app.add_option("--tls-cert", o.tls.cert, "server certificate (PEM)")
                   ->check(CLI::ExistingFile);
  auto* key =
      app.add_option("--tls-key", o.tls.key, "server private key (PEM)")->check(CLI::ExistingFile);
  auto* ca = app.add_option("--tls-client-ca", o.tls.client_ca,
                            "require client certificates signed by this CA (mutual TLS)")
                 ->check(CLI::ExistingFile);
  cert->needs(key);
  key->needs(cert);
  ca->needs(cert);
  app.add_option("--token-file", o.token_file,
                 "require \"authorization: Bearer <token>\" with the token in this file")
      ->check(CLI::ExistingFile);
  app.add_flag("--insecure-listen", o.insecure_listen,
               "allow a non-loopback --listen without TLS and without --token-file");
  app.add_flag("--allow-fault-injection", o.allow_fault_injection,
               "accept requests with a fault to inject (never on a shared node)");
}

// What one case, the history and one caller may take: docs/limits.md, docs/security.md.
void AddRunLimitOptions(CLI::App& app, ServerOptions& o) {
  AddByteSizeOption(app, "--max-case-bytes", o.max_case_bytes,
                    "largest m * n * element size of one case, per rank (e.g. 32MiB; K, M, G, T "
                    "are powers of 1024)");
  AddByteSizeOption(app, "--history-max-bytes", o.history_max_bytes,
                    "serialized case results the history database keeps (e.g. 1GiB); the oldest "
                    "finished runs are deleted first, baselines never");
  app.add_option("--history-max-runs", o.history_max_runs,
                 "runs the history database keeps; the oldest finished are deleted first (0: no "
                 "limit)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  AddDurationOption(app, "--history-max-age", o.history_max_age,
                    "finished runs older than this are deleted from the history (e.g. 90d)");
  AddDurationOption(app, "--history-prune-interval", o.history_prune_interval,
                    "how often the retention bounds are applied (and once at start)");
  app.add_option("--max-active-runs-per-owner", o.max_active_runs_per_owner,
                 "runs one caller may have queued or running at once; more are refused "
                 "RESOURCE_EXHAUSTED (0: no limit)")
      ->capture_default_str();
  app.add_option("--health-rate-per-caller", o.health_rate_per_caller,
                 "health checks one caller may start per minute, at most that many at once; more "
                 "are refused RESOURCE_EXHAUSTED with the time to retry, answers from memory "
                 "(--max-verdict-age) are not counted (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 100000));
  // Each baseline keeps its run from retention; without a bound one caller adding names would
  // keep the history from shrinking.
  app.add_option("--max-baselines-per-owner", o.max_baselines_per_owner,
                 "baselines one caller may own (over every machine); a new name beyond it is "
                 "refused RESOURCE_EXHAUSTED, replacing its own still works (0: no limit)")
      ->capture_default_str()
      ->check(CLI::Range(0, 1000000));
}

// Ranks that share a GPU (docs/shared-gpu.md).
static void AddSharedGpuOptions(CLI::App& app, ServerOptions& o) {
  app.add_option(
         "--ranks-per-gpu", o.ranks_per_gpu,
         "slots each GPU offers as devices of their own (cuda, hip), so that a W-rank group "
         "runs on fewer GPUs; needs concurrent kernels across processes (MPS on NVIDIA)")
      ->capture_default_str()
      ->check(CLI::Range(1, 8));
  app.add_flag("--allow-time-slicing", o.allow_time_slicing,
               "with --ranks-per-gpu above 1, start even when processes' kernels on one GPU are "
               "time-sliced (no MPS): case timeouts grow to match and results say so");
}

ParsedOptions ParseOptions(int argc, const char* const* argv) {
  ServerOptions o;
  CLI::App app{"colltestd: tests fused all-reduce + RMSNorm collective kernels on this node"};
  app.set_version_flag("--version", common::VersionLine("colltestd"));

  app.add_option("--listen", o.listen,
                 "gRPC address, host:port (port 0: chosen by the OS) or unix:PATH; given twice, "
                 "the last counts")
      ->capture_default_str()
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeLast)
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
  AddSharedGpuOptions(app, o);
  app.add_option("--http", o.http,
                 "serve the dashboard, the JSON API (/api/v1) and Prometheus metrics (/metrics) "
                 "at http://HOST:PORT (port 0: any)");
  AddHttpOptions(app, o);
  app.add_option("--health-listen", o.health_listen,
                 "also serve only grpc.health.v1.Health at HOST:PORT, plaintext and without "
                 "tokens (for Kubernetes' grpc probe; it reveals only SERVING / NOT_SERVING)");
  app.add_option("--hostname", o.hostname,
                 "the host name colltestd reports: MachineIdentity.hostname, which keys the "
                 "machine's history, and the metrics' Hostname label (default gethostname(2); in "
                 "Kubernetes pass the node's name, the pod's changes with every restart)")
      ->check(HostnameValidator());
  app.add_option("--state-dir", o.state_dir,
                 "directory of the run history database (default $XDG_STATE_HOME/colltest, else "
                 "~/.local/state/colltest)");
  AddSecurityOptions(app, o);
  app.add_option("--worker", o.worker, "colltest-worker binary (default: next to colltestd)");
  AddRunLimitOptions(app, o);
  AddConnectionOptions(app, o);
  app.add_option("--tune-dir", o.tune_dir,
                 "directory of tune tables (colltest tune --out) that `auto` dispatches with")
      ->check(CLI::ExistingDirectory);
  app.add_option("--kernel-plugin", o.kernel_plugins,
                 "a kernel plugin (a shared library exporting colltest_kernel_v1) to offer as "
                 "variant plugin:NAME; repeatable (docs/plugins.md)");
  app.add_option("--kernel-plugin-dir", o.kernel_plugin_dir,
                 "folder whose *.so are kernel plugins (default <prefix>/lib/colltest/plugins)");
  app.add_option("--runtime-dir", o.runtime_dir,
                 "parent of the workers' private socket directory (default $XDG_RUNTIME_DIR or "
                 "/tmp)");
  app.add_option_function<std::string>(
         "--idle-timeout",
         [&o](const std::string& text) {
           absl::StatusOr<absl::Duration> parsed = common::ParseDuration("--idle-timeout", text);
           if (!parsed.ok()) throw CLI::ValidationError(std::string(parsed.status().message()));
           if (*parsed < absl::ZeroDuration()) {
             throw CLI::ValidationError("--idle-timeout: must be >= 0");
           }
           o.idle_timeout = *parsed;
         },
         "workers idle this long exit and free their GPU memory; the next case respawns them "
         "(0: never)")
      ->default_str(absl::FormatDuration(o.idle_timeout));
  // Every flag above may also come from a file (one `name = value` per line, TOML or INI), as the
  // systemd unit does with /etc/colltest/colltestd.toml; the command line wins over the file.
  app.set_config("--config", "", "read flags from this TOML file (name = value per line)");

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
  o.kernel_plugin_dir_given = !o.kernel_plugin_dir.empty();
  if (o.kernel_plugin_dir.empty()) o.kernel_plugin_dir = DefaultKernelPluginDir();
  if (o.max_case_bytes == 0) {
    std::cerr << "--max-case-bytes: must be > 0\n";
    return ParsedOptions{std::nullopt, 2};
  }
  if (o.history_max_bytes == 0) {
    std::cerr << "--history-max-bytes: must be > 0\n";
    return ParsedOptions{std::nullopt, 2};
  }
  if (absl::Status http = CheckHttpOptions(o); !http.ok()) {
    std::cerr << http.message() << "\n";
    return ParsedOptions{std::nullopt, 2};
  }
  if (absl::Status protected_listen = CheckListenIsProtected(o); !protected_listen.ok()) {
    std::cerr << protected_listen.message() << "\n";
    return ParsedOptions{std::nullopt, 2};
  }
  return ParsedOptions{std::move(o), 0};
}

}  // namespace colltest::server
