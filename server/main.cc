// colltestd: the controller. Parses flags, picks the backend, starts the worker pool and the gRPC
// server, prints the one line that tells scripts where it listens, and shuts down cleanly on
// SIGINT/SIGTERM (workers ended, sockets and shared memory removed).
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/defaults.h"
#include "common/signal_mask.h"
#include "common/status_macros.h"
#include "dashboard/assets.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"
#include "grpcpp/server_builder.h"
#include "http/gateway.h"
#include "server/api/service.h"
#include "server/build_info.h"
#include "server/devices/backend_probe.h"
#include "server/devices/concurrency_check.h"
#include "server/devices/device_users.h"
#include "server/devices/kernel_plugins.h"
#include "server/devices/machine_identity.h"
#include "server/net/auth.h"
#include "server/net/credentials.h"
#include "server/net/fd_limit.h"
#include "server/net/grpc_server.h"
#include "server/net/health_listener.h"
#include "server/net/listen_address.h"
#include "server/net/parse_error_interceptor.h"
#include "server/net/reflection_guard.h"
#include "server/net/sd_notify.h"
#include "server/net/token_file.h"
#include "server/options.h"
#include "server/runs/history_pruner.h"
#include "server/runs/history_setup.h"
#include "server/runs/metrics.h"
#include "server/runs/tune_table.h"
#include "server/serving_state.h"
#include "server/workers/worker_pool.h"
#include "spdlog/sinks/stdout_color_sinks.h"
#include "spdlog/spdlog.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

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
  auth.mutual_tls = !options.tls.client_ca.empty();
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

// --http: the JSON API over the service in process, the dashboard, and /metrics behind HTTP Basic
// auth when a token file exists (docs/http-api.md, docs/security.md).
absl::StatusOr<std::unique_ptr<http::Gateway>> ServeHttp(const ServerOptions& options,
                                                         const Authorizer& authorizer,
                                                         Metrics& metrics, grpc::Server& server) {
  if (options.http.empty()) return nullptr;
  http::GatewayOptions gateway;
  gateway.address = options.http;
  gateway.tls_cert = options.tls.cert;
  gateway.tls_key = options.tls.key;
  gateway.tls_client_ca = options.tls.client_ca;
  // Replies as large as the CLI accepts: a page of 1000 run summaries, each with its request (up
  // to 4096 cases' sizes), passes gRPC's default 4 MB.
  grpc::ChannelArguments channel_args;
  channel_args.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);
  gateway.channel = server.InProcessChannel(channel_args);
  gateway.forwarding_secret = GatewaySecret();
  gateway.render_metrics = [&metrics] { return metrics.Render(); };
  if (authorizer.metrics_need_auth()) {
    gateway.metrics_basic_auth = [&authorizer](const std::string& user,
                                               const std::string& password) {
      return authorizer.CheckBasic(user, password);
    };
  }
  gateway.find_asset = dashboard::FindAsset;
  gateway.threads = static_cast<int>(options.http_threads);
  gateway.body_timeout_ms = static_cast<int>(absl::ToInt64Milliseconds(options.http_body_timeout));
  gateway.max_body_readers = static_cast<int>(options.http_max_body_readers);
  gateway.max_body_readers_per_peer = static_cast<int>(options.http_max_body_readers_per_peer);
  // Without authentication every caller is an admin: only then could a page reach it by DNS
  // rebinding and act (docs/security.md, "Browsers").
  gateway.check_host = !authorizer.enabled();
  gateway.allowed_hosts = options.http_allowed_hosts;
  return http::Gateway::Start(std::move(gateway));
}

WorkerPoolOptions PoolOptionsFor(const ServerOptions& options, const BackendInfo& backend,
                                 ServingState& serving) {
  WorkerPoolOptions pool_options;
  pool_options.worker_binary = options.worker;
  pool_options.backend = backend.backend;
  pool_options.placement = PlacementOf(backend);
  pool_options.runtime_dir = options.runtime_dir;
  pool_options.max_case_bytes = options.max_case_bytes;
  pool_options.canary = CanaryCase();
  pool_options.idle_timeout = options.idle_timeout;
  for (const colltest::v1::KernelPlugin& p : backend.kernel_plugins) {
    if (p.loaded()) pool_options.kernel_plugins.push_back(p);
  }
  pool_options.on_state_change = [&serving](const colltest::v1::GroupHealth& group) {
    serving.OnGroupState(group);
    if (IsIdleMessage(group)) {
      // The normal life of a group on a shared node: no warning, and no recovery to time.
      spdlog::info("devices {}: {}", absl::StrJoin(group.devices(), ","), group.message());
    } else if (group.state() != colltest::v1::GROUP_STATE_SERVING) {
      spdlog::warn("devices {}: {}: {}", absl::StrJoin(group.devices(), ","),
                   colltest::v1::GroupState_Name(group.state()), group.message());
    } else if (group.recoveries() > 0) {
      spdlog::info("devices {}: SERVING after {:.0f} ms: {}", absl::StrJoin(group.devices(), ","),
                   group.last_recovery_ms(), group.message());
    }
  };
  return pool_options;
}

absl::StatusOr<TuneTables> LoadTuneTables(const std::string& dir) {
  absl::StatusOr<TuneTables> tune = TuneTables::LoadDir(dir);
  if (!tune.ok()) return tune.status();
  for (const TuneTable& t : tune->tables()) {
    spdlog::info("auto: tune table {} ({}, {} rows)", t.source, DescribeTuneTable(t),
                 t.rows.size());
  }
  return tune;
}

ServiceOptions ServiceOptionsFor(const ServerOptions& options, const BackendInfo& backend,
                                 const AuthConfig& auth, Metrics* metrics, const TuneTables* tune,
                                 store::RunStore* history, v1::MachineIdentity machine,
                                 DeviceUsersProbe* users, ExpectedBandwidth expected_busbw) {
  ServiceOptions service_options;
  service_options.expected_busbw = std::move(expected_busbw);
  service_options.backend = backend.backend;
  service_options.devices = backend.devices;
  service_options.capabilities = backend.capabilities;
  service_options.kernel_plugins = backend.kernel_plugins;
  service_options.max_case_bytes = options.max_case_bytes;
  service_options.allow_fault_injection = options.allow_fault_injection;
  service_options.auth = auth;
  service_options.history_store = history;
  service_options.machine = std::move(machine);
  service_options.max_active_runs_per_owner = options.max_active_runs_per_owner;
  service_options.health_rate_per_caller = options.health_rate_per_caller;
  service_options.max_baselines_per_owner = options.max_baselines_per_owner;
  service_options.version = Version();
  service_options.metrics = metrics;
  service_options.tune = tune;
  service_options.stream_send_timeout = options.stream_send_timeout;
  service_options.users_probe = users;
  // A probe that measured no round trip leaves the one measured without MPS on an H200.
  constexpr double kTimeSlicedRoundTripUs = 4500;
  if (backend.time_sliced) {
    service_options.time_sliced_round_trip_us =
        backend.kernel_round_trip_us > 0 ? backend.kernel_round_trip_us : kTimeSlicedRoundTripUs;
  }
  return service_options;
}

// Requests that cannot be deserialized get INVALID_ARGUMENT naming the type, not an empty
// INTERNAL; reflection follows the API's roles. One list: SetInterceptorCreators replaces any
// earlier one.
std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> Interceptors(
    const Authorizer& authorizer, bool mutual_tls) {
  auto interceptors = ParseErrorInterceptorCreators();
  for (auto& guard : ReflectionGuardCreators(&authorizer, mutual_tls)) {
    interceptors.push_back(std::move(guard));
  }
  return interceptors;
}

// The one line on stdout that scripts wait for, and its longer form in the log.
void AnnounceListening(const ServerOptions& options, const BackendInfo& backend,
                       const std::string& address, const std::string& http, const AuthConfig& auth,
                       const Authorizer& authorizer) {
  std::printf("colltestd listening on %s backend=%s devices=%zu%s\n", address.c_str(),
              backend.backend.c_str(), backend.devices.size(),
              http.empty() ? "" : absl::StrCat(" http=", http).c_str());
  std::fflush(stdout);
  spdlog::info("serving {} on {} ({} devices: {}), TLS {}, {} identities{}", Version(), address,
               backend.backend, backend.devices.size(),
               options.tls.cert.empty() ? "off" : (options.tls.client_ca.empty() ? "on" : "mutual"),
               auth.principals.size(),
               authorizer.enabled() ? ", reflection needs role viewer" : "");
}

// Everything Main sets up before it serves; owns what must outlive the gRPC server.
struct Daemon {
  BackendInfo backend;
  v1::MachineIdentity machine;  // of `backend`: recorded with runs, labels the metrics
  AuthConfig auth;
  std::unique_ptr<Authorizer> authorizer;  // outlives `metrics`, whose HTTP threads call it
  std::shared_ptr<grpc::ServerCredentials> credentials;
  Metrics metrics;
  // Before `serving` and `pool`: outlives every group state change that could reach it.
  std::unique_ptr<HealthListener> health_listener;
  std::unique_ptr<ServingState> serving;
  std::unique_ptr<WorkerPool> pool;
  std::unique_ptr<DeviceUsersProbe> users;  // null for virtual devices: nobody else uses them
  TuneTables tune;
  ExpectedBandwidth expected_busbw;  // the long health level's figures, from the tune dir
  OpenedHistory history;
  std::unique_ptr<HistoryPruner> pruner;
  std::unique_ptr<http::Gateway> gateway;  // after the gRPC server is built: it calls into it
};

// Checks every kernel plugin in a process of its own and logs what each is (docs/plugins.md); only
// an unreadable --kernel-plugin-dir stops colltestd, a refused plugin never does.
absl::Status CheckPlugins(const ServerOptions& options, BackendInfo& backend) {
  COLLTEST_ASSIGN_OR_RETURN(const std::vector<std::string> paths,
                            KernelPluginPaths(options.kernel_plugins, options.kernel_plugin_dir,
                                              options.kernel_plugin_dir_given));
  backend.kernel_plugins =
      CheckKernelPlugins(paths, WorkerPluginCheck(options.worker, backend.backend));
  for (const v1::KernelPlugin& p : backend.kernel_plugins) {
    if (p.loaded()) {
      spdlog::info("kernel plugin {}: {} {} (sha256 {})", p.path(), p.variant(), p.version(),
                   p.sha256());
    } else {
      spdlog::warn("kernel plugin {}: refused: {}", p.path(), p.refused());
    }
  }
  return absl::OkStatus();
}

absl::Status Prepare(const ServerOptions& options, Daemon& d) {
  absl::StatusOr<BackendInfo> backend =
      ResolveBackend(options.backend, options.cpu_ranks, options.devices, options.worker,
                     [](const std::string& worker, const std::string& b) {
                       return RunProbe(worker, b, kProbeTimeout);
                     });
  COLLTEST_RETURN_IF_ERROR(backend.status());
  COLLTEST_ASSIGN_OR_RETURN(d.backend, WithSlotsPerGpu(*std::move(backend), options.ranks_per_gpu));
  COLLTEST_ASSIGN_OR_RETURN(const ConcurrencyVerdict concurrency,
                            CheckConcurrentKernels(d.backend, options.allow_time_slicing,
                                                   options.worker, RunConcurrencyProbe));
  d.backend.time_sliced = concurrency.time_sliced;
  COLLTEST_RETURN_IF_ERROR(CheckPlugins(options, d.backend));
  d.backend.kernel_round_trip_us = concurrency.round_trip_us;
  if (concurrency.time_sliced) {
    spdlog::warn("{}", concurrency.summary);
  } else if (concurrency.checked) {
    spdlog::info("{}", concurrency.summary);
  }
  d.backend.hostname = options.hostname;
  d.machine = BuildMachineIdentity(d.backend, Version(), BuildCommit());
  d.metrics.SetBackend(d.machine, {Version(), BuildCommit()});
  if (!d.backend.note.empty()) spdlog::info("{}", d.backend.note);
  COLLTEST_ASSIGN_OR_RETURN(d.auth, LoadAuth(options));
  d.authorizer = std::make_unique<Authorizer>(d.auth);
  LogAuthMode(options, *d.authorizer);
  COLLTEST_ASSIGN_OR_RETURN(d.credentials, MakeServerCredentials(options.tls));
  d.serving = std::make_unique<ServingState>(&d.metrics);
  COLLTEST_ASSIGN_OR_RETURN(d.history, OpenHistory(options.state_dir));
  d.pruner = std::make_unique<HistoryPruner>(
      d.history.store.get(),
      RetentionPolicy{options.history_max_runs, options.history_max_age, options.history_max_bytes},
      options.history_prune_interval);
  if (options.allow_fault_injection) spdlog::warn("fault injection is allowed");
  absl::StatusOr<std::unique_ptr<WorkerPool>> pool =
      CreateWorkerPool(PoolOptionsFor(options, d.backend, *d.serving));
  if (!pool.ok()) {
    return absl::Status(pool.status().code(),
                        absl::StrCat("worker pool: ", pool.status().message()));
  }
  d.pool = *std::move(pool);
  // A backend whose devices are virtual (the cpu backend) has no other users to look for.
  if (d.backend.capabilities.reports_devices()) {
    d.users = OnPhysicalDevices(CreateWorkerUsersProbe(options.worker, d.backend.backend),
                                PlacementOf(d.backend));
  }
  COLLTEST_ASSIGN_OR_RETURN(d.tune, LoadTuneTables(options.tune_dir));
  COLLTEST_ASSIGN_OR_RETURN(d.expected_busbw, ExpectedBandwidth::Load(options.tune_dir));
  return absl::OkStatus();
}

int Main(int argc, char** argv) {
  // Before any thread exists: the stop signals reach only the sigwait thread below.
  const sigset_t stop_signals = common::BlockStopSignals();
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
  NotifyStatus("probing the backend and starting workers").IgnoreError();
  Daemon d;
  if (absl::Status prepared = Prepare(options, d); !prepared.ok()) {
    if (d.pool != nullptr) d.pool->Shutdown();
    return Fail(std::string(prepared.message()));
  }
  CollectiveTestService service(
      ServiceOptionsFor(options, d.backend, d.auth, &d.metrics, &d.tune, d.history.store.get(),
                        d.machine, d.users.get(), d.expected_busbw),
      d.pool.get());

  grpc::EnableDefaultHealthCheckService(true);
  // Loading libgrpc++_reflection alone registers reflection with every server (a static
  // initializer in it calls this too); the call keeps it linked. With authentication on, the
  // reflection guard answers callers below role viewer with an error in its place.
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  FrontEndLimits front_limits =
      ResolveFrontEndLimits(options.front_end, fd_limits->soft, d.backend.devices.size());
  front_limits.listener_events = &d.metrics;
  absl::StatusOr<std::unique_ptr<GrpcFrontEnd>> front = GrpcFrontEnd::Prepare(
      options.listen, d.credentials, !options.tls.cert.empty(), front_limits, builder);
  if (!front.ok()) {
    d.pool->Shutdown();
    return Fail(std::string(front.status().message()));
  }
  builder.RegisterService(&service);
  builder.experimental().SetInterceptorCreators(Interceptors(*d.authorizer, d.auth.mutual_tls));
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  absl::Status started =
      server == nullptr ? absl::UnavailableError(absl::StrCat("cannot serve on ", options.listen))
                        : (*front)->Start(server.get());
  if (started.ok()) {
    absl::StatusOr<std::unique_ptr<http::Gateway>> gateway =
        ServeHttp(options, *d.authorizer, d.metrics, *server);
    if (gateway.ok()) d.gateway = *std::move(gateway);
    started = gateway.status();
  }
  if (started.ok() && !options.health_listen.empty()) {
    absl::StatusOr<std::unique_ptr<HealthListener>> health =
        HealthListener::Start(options.health_listen);
    if (health.ok()) d.health_listener = *std::move(health);
    started = health.status();
  }
  if (!started.ok()) {
    d.pool->Shutdown();
    return Fail(std::string(started.message()));
  }
  d.serving->Attach(server->GetHealthCheckService());
  if (d.health_listener != nullptr) {
    d.serving->Attach(d.health_listener->health());
    spdlog::info("grpc.health.v1 only, plaintext, on {}", d.health_listener->bound_address());
  }
  AnnounceListening(options, d.backend, (*front)->address(),
                    d.gateway != nullptr ? d.gateway->bound_address() : "", d.auth, *d.authorizer);
  // A Type=notify unit (deploy/systemd) counts as started from here: clients can connect.
  if (absl::Status ready = NotifyReady(absl::StrCat("serving on ", (*front)->address()));
      !ready.ok()) {
    spdlog::warn("systemd notification: {}", std::string(ready.message()));
  }

  std::thread stopper([&] {
    int signal_number = 0;
    sigwait(&stop_signals, &signal_number);
    spdlog::info("signal {}: shutting down", signal_number);
    NotifyStopping().IgnoreError();  // systemd shows "deactivating"; a lost one changes nothing
    d.serving->Detach();
    service.BeginShutdown();
    (*front)->Stop();
    d.gateway.reset();  // its streaming sweeps end first: they hold calls into `server`
    server->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  });
  server->Wait();
  stopper.join();
  d.pool->Shutdown();
  spdlog::info("stopped");
  return 0;
}

}  // namespace
}  // namespace colltest::server

int main(int argc, char** argv) { return colltest::server::Main(argc, argv); }
