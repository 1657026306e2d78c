// colltestd: the controller. Parses flags, picks the backend, starts the worker pool and the gRPC
// server, prints the one line that tells scripts where it listens, and shuts down cleanly on
// SIGINT/SIGTERM (workers ended, sockets and shared memory removed).
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "server/auth.h"
#include "server/backend_probe.h"
#include "server/credentials.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/service.h"
#include "server/serving_state.h"
#include "server/tune_table.h"
#include "server/worker_pool.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

constexpr int kMaxMessageBytes = 64 << 20;
constexpr absl::Duration kProbeTimeout = absl::Seconds(30);
constexpr auto kShutdownGrace = std::chrono::seconds(2);

// What a respawned group must pass before it serves again: the Lamport protocol (flags, sentinel,
// re-arm) on exact inputs, short enough to add little to a recovery.
colltest::worker::v1::CaseRequest CanaryCase() {
  colltest::worker::v1::CaseRequest canary;
  canary.set_variant(colltest::v1::VARIANT_LAMPORT);
  canary.set_mode(colltest::v1::MODE_EAGER);
  canary.set_m(8);
  canary.set_n(1024);
  canary.set_dtype(colltest::v1::DTYPE_BF16);
  canary.set_residual(true);
  canary.set_eps(1e-6f);
  canary.set_warmup(1);
  canary.set_iters(3);
  canary.set_pattern(colltest::v1::PATTERN_INTEGERS);
  canary.set_tolerance(colltest::v1::TOLERANCE_STRICT);
  canary.set_timeout_ms(2000);
  return canary;
}

int Fail(const std::string& what) {
  spdlog::error("{}", what);
  return 1;
}

int Main(int argc, char** argv) {
  // Blocked before any thread exists, so every thread (gRPC's included) inherits the mask and the
  // signals reach only the sigwait thread below. SIGPIPE: a client that hangs up must not kill us.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  // stdout carries exactly one line (the listening line) that scripts read; logs go to stderr.
  spdlog::set_default_logger(spdlog::stderr_color_mt("colltestd"));

  ParsedOptions parsed = ParseOptions(argc, argv);
  if (!parsed.options) return parsed.exit_code;
  const ServerOptions& options = *parsed.options;

  absl::StatusOr<BackendInfo> backend =
      ResolveBackend(options.backend, options.cpu_ranks, options.devices, options.worker,
                     [](const std::string& worker, const std::string& b) {
                       return RunProbe(worker, b, kProbeTimeout);
                     });
  if (!backend.ok()) return Fail(std::string(backend.status().message()));
  if (!backend->note.empty()) spdlog::info("{}", backend->note);

  std::string token;
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> read = ReadTokenFile(options.token_file);
    if (!read.ok()) return Fail(std::string(read.status().message()));
    token = *std::move(read);
  }
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options);
  if (!credentials.ok()) return Fail(std::string(credentials.status().message()));
  Metrics metrics;
  if (!options.http.empty()) {
    if (absl::Status served = metrics.Serve(options.http); !served.ok()) {
      return Fail(std::string(served.message()));
    }
  }
  ServingState serving(&metrics);
  if (!options.state_dir.empty()) {
    spdlog::warn("--state-dir {}: the history is kept in memory only for now", options.state_dir);
  }
  if (options.allow_fault_injection) spdlog::warn("fault injection is allowed");

  WorkerPoolOptions pool_options;
  pool_options.worker_binary = options.worker;
  pool_options.backend = backend->backend;
  pool_options.runtime_dir = options.runtime_dir;
  pool_options.max_case_bytes = options.max_case_bytes;
  pool_options.canary = CanaryCase();
  pool_options.on_state_change = [&serving](const colltest::v1::GroupHealth& group) {
    serving.OnGroupState(group);
    if (group.state() != colltest::v1::GROUP_STATE_SERVING) {
      spdlog::warn("devices {}: {}: {}", absl::StrJoin(group.devices(), ","),
                   colltest::v1::GroupState_Name(group.state()), group.message());
    } else if (group.recoveries() > 0) {
      spdlog::info("devices {}: SERVING after {:.0f} ms: {}", absl::StrJoin(group.devices(), ","),
                   group.last_recovery_ms(), group.message());
    }
  };
  absl::StatusOr<std::unique_ptr<WorkerPool>> pool = CreateWorkerPool(pool_options);
  if (!pool.ok()) return Fail(absl::StrCat("worker pool: ", pool.status().message()));

  absl::StatusOr<TuneTables> tune = TuneTables::LoadDir(options.tune_dir);
  if (!tune.ok()) return Fail(std::string(tune.status().message()));
  for (const TuneTable& t : tune->tables()) {
    spdlog::info("auto: tune table {} ({} W={} n={}, {} rows)", t.source, t.backend, t.world, t.n,
                 t.rows.size());
  }

  ServiceOptions service_options;
  service_options.backend = backend->backend;
  service_options.devices = backend->devices;
  service_options.variants = VariantsFor(backend->backend);
  service_options.max_case_bytes = options.max_case_bytes;
  service_options.allow_fault_injection = options.allow_fault_injection;
  service_options.token = token;
  service_options.version = Version();
  service_options.metrics = &metrics;
  service_options.tune = &*tune;
  CollectiveTestService service(std::move(service_options), pool->get());

  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort(options.listen, *credentials, &port);
  builder.SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder.SetMaxSendMessageSize(kMaxMessageBytes);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  const bool unix_socket = options.listen.rfind("unix:", 0) == 0;
  if (server == nullptr || (!unix_socket && port == 0)) {
    (*pool)->Shutdown();
    return Fail(absl::StrCat("cannot listen on ", options.listen));
  }
  serving.Attach(server->GetHealthCheckService());

  const std::string address =
      unix_socket ? options.listen : absl::StrCat(ListenHost(options.listen), ":", port);
  const std::string http = metrics.bound_address();
  std::printf("colltestd listening on %s backend=%s devices=%zu%s\n", address.c_str(),
              backend->backend.c_str(), backend->devices.size(),
              http.empty() ? "" : absl::StrCat(" http=", http).c_str());
  std::fflush(stdout);
  spdlog::info("serving {} on {} ({} devices: {}), TLS {}, token {}", Version(), address,
               backend->backend, backend->devices.size(),
               options.tls_cert.empty() ? "off" : (options.tls_client_ca.empty() ? "on" : "mutual"),
               token.empty() ? "off" : "required");

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    spdlog::info("signal {}: shutting down", signal_number);
    serving.Detach();
    service.BeginShutdown();
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  });
  server->Wait();
  stopper.join();
  (*pool)->Shutdown();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace colltest::server

int main(int argc, char** argv) { return colltest::server::Main(argc, argv); }
