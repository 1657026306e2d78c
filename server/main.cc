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
#include "server/fd_limit.h"
#include "server/grpc_server.h"
#include "server/metrics.h"
#include "server/options.h"
#include "server/parse_error_interceptor.h"
#include "server/service.h"
#include "server/serving_state.h"
#include "server/token_file.h"
#include "server/tune_table.h"
#include "server/worker_pool.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

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

absl::StatusOr<AuthConfig> LoadAuth(const ServerOptions& options) {
  AuthConfig auth;
  auth.mutual_tls = !options.tls_client_ca.empty();
  if (!options.token_file.empty()) {
    absl::StatusOr<std::vector<Principal>> principals =
        LoadTokenFile(options.token_file, auth.mutual_tls);
    if (!principals.ok()) return principals.status();
    auth.principals = *std::move(principals);
  }
  return auth;
}

// What a caller without credentials may do, said once at start, where an operator looks.
void LogAuthMode(const ServerOptions& options, const Authorizer& authorizer) {
  if (authorizer.enabled()) return;
  if (!IsLoopbackListen(options.listen)) {
    spdlog::warn("{} without authentication: every client that reaches it is an admin{}",
                 options.listen, options.insecure_listen ? " (--insecure-listen)" : "");
  } else {
    spdlog::info(
        "authentication off (no --token-file, no --tls-client-ca): loopback clients are "
        "admins");
  }
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
  // Before any worker or connection exists: every one of them costs descriptors (docs/limits.md).
  absl::StatusOr<FdLimits> fd_limits = RaiseFdLimit();
  if (!fd_limits.ok()) return Fail(std::string(fd_limits.status().message()));
  spdlog::info("open files: soft limit {} (was {}), hard limit {}", fd_limits->soft,
               fd_limits->soft_before, fd_limits->hard);

  absl::StatusOr<BackendInfo> backend =
      ResolveBackend(options.backend, options.cpu_ranks, options.devices, options.worker,
                     [](const std::string& worker, const std::string& b) {
                       return RunProbe(worker, b, kProbeTimeout);
                     });
  if (!backend.ok()) return Fail(std::string(backend.status().message()));
  if (!backend->note.empty()) spdlog::info("{}", backend->note);

  absl::StatusOr<AuthConfig> auth = LoadAuth(options);
  if (!auth.ok()) return Fail(std::string(auth.status().message()));
  // Outlives `metrics`, whose HTTP threads call it until the server stops.
  const Authorizer authorizer(*auth);
  LogAuthMode(options, authorizer);
  absl::StatusOr<std::shared_ptr<grpc::ServerCredentials>> credentials =
      MakeServerCredentials(options);
  if (!credentials.ok()) return Fail(std::string(credentials.status().message()));
  Metrics metrics;
  if (!options.http.empty()) {
    Metrics::BasicAuthCheck basic_auth;
    if (authorizer.metrics_need_auth()) {
      basic_auth = [&authorizer](const std::string& user, const std::string& password) {
        return authorizer.CheckBasic(user, password);
      };
    }
    if (absl::Status served = metrics.Serve(options.http, std::move(basic_auth)); !served.ok()) {
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
  service_options.auth = *auth;
  service_options.history_max_bytes = options.history_max_bytes;
  service_options.version = Version();
  service_options.metrics = &metrics;
  service_options.tune = &*tune;
  service_options.stream_send_timeout = options.stream_send_timeout;
  CollectiveTestService service(std::move(service_options), pool->get());

  grpc::EnableDefaultHealthCheckService(true);
  // gRPC 1.51 gives no public way to put a check in front of the reflection service (processors
  // run only on TLS credentials, interceptors cannot refuse a call), so with authentication on it
  // is not served at all rather than served to anyone.
  if (!authorizer.enabled()) grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  absl::StatusOr<std::unique_ptr<GrpcFrontEnd>> front = GrpcFrontEnd::Prepare(
      options.listen, *credentials, !options.tls_cert.empty(),
      ResolveFrontEndLimits(options, fd_limits->soft, backend->devices.size()), builder);
  if (!front.ok()) {
    (*pool)->Shutdown();
    return Fail(std::string(front.status().message()));
  }
  builder.RegisterService(&service);
  // Requests that cannot be deserialized get INVALID_ARGUMENT naming the type, not an empty
  // INTERNAL.
  builder.experimental().SetInterceptorCreators(ParseErrorInterceptorCreators());
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  absl::Status started =
      server == nullptr ? absl::UnavailableError(absl::StrCat("cannot serve on ", options.listen))
                        : (*front)->Start(server.get());
  if (!started.ok()) {
    (*pool)->Shutdown();
    return Fail(std::string(started.message()));
  }
  serving.Attach(server->GetHealthCheckService());

  const std::string address = (*front)->address();
  const std::string http = metrics.bound_address();
  std::printf("colltestd listening on %s backend=%s devices=%zu%s\n", address.c_str(),
              backend->backend.c_str(), backend->devices.size(),
              http.empty() ? "" : absl::StrCat(" http=", http).c_str());
  std::fflush(stdout);
  spdlog::info("serving {} on {} ({} devices: {}), TLS {}, {} identities{}", Version(), address,
               backend->backend, backend->devices.size(),
               options.tls_cert.empty() ? "off" : (options.tls_client_ca.empty() ? "on" : "mutual"),
               auth->principals.size(), authorizer.enabled() ? ", reflection off" : "");

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    spdlog::info("signal {}: shutting down", signal_number);
    serving.Detach();
    service.BeginShutdown();
    (*front)->Stop();
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
