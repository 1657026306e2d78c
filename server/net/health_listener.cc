#include "server/net/health_listener.h"

#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/security/server_credentials.h"
#include "grpcpp/server_builder.h"
#include "server/net/health_service_names.h"
#include "server/net/listen_address.h"

namespace colltest::server {
namespace {

constexpr auto kShutdownGrace = std::chrono::milliseconds(500);

// Drops every server builder plugin. Linking libgrpc++_reflection registers the reflection
// service with every server built in the process; on this unauthenticated port it would list the
// API's services to anyone, so this server gets no plugin at all.
class NoPlugins final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments*) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->clear();
  }
};

}  // namespace

absl::StatusOr<std::unique_ptr<HealthListener>> HealthListener::Start(const std::string& address) {
  // The default health service is the one Kubernetes' probe speaks to; the flag is read when a
  // server is built (colltestd enables it for its main server as well).
  grpc::EnableDefaultHealthCheckService(true);
  std::unique_ptr<HealthListener> listener(new HealthListener());
  grpc::ServerBuilder builder;
  builder.RegisterCallbackGenericService(&listener->unknown_methods_);
  int port = 0;
  builder.AddListeningPort(address, grpc::InsecureServerCredentials(), &port);
  builder.SetOption(std::make_unique<NoPlugins>());
  // gRPC sets SO_REUSEPORT by default: a second colltestd on the same port would then share the
  // probes of the first instead of failing to start.
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  listener->server_ = builder.BuildAndStart();
  if (listener->server_ == nullptr || port == 0) {
    return absl::UnavailableError(absl::StrCat("--health-listen ", address, ": cannot listen"));
  }
  grpc::HealthCheckServiceInterface* health = listener->health();
  if (health == nullptr) {
    return absl::InternalError("--health-listen: the server has no health service");
  }
  health->SetServingStatus("", false);
  health->SetServingStatus(kCollectiveTestService, false);
  listener->bound_address_ = absl::StrCat(ListenHost(address), ":", port);
  return listener;
}

HealthListener::~HealthListener() { Shutdown(); }

void HealthListener::Shutdown() {
  if (shut_down_ || server_ == nullptr) return;
  shut_down_ = true;
  // A deadline, because Watch streams of probes stay open until the server cancels them.
  server_->Shutdown(std::chrono::system_clock::now() + kShutdownGrace);
  server_->Wait();
}

}  // namespace colltest::server
