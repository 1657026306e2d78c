// colltestd's --health-listen: a second gRPC server that serves grpc.health.v1.Health and nothing
// else, in plaintext and without tokens. Kubernetes' native grpc probe can send neither a bearer
// token nor a client certificate, and speaks no TLS; the answers reveal only SERVING /
// NOT_SERVING, so serving them openly costs nothing. ServingState::Attach(health()) makes it
// mirror the main server's statuses ("" and colltest.v1.CollectiveTest).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "grpcpp/generic/async_generic_service.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server.h"

namespace colltest::server {

class HealthListener {
 public:
  // Serves on `address` (host:port, port 0: chosen by the OS). Both statuses start NOT_SERVING
  // until a ServingState attaches: a probe must not pass before the main server listens.
  // Errors: UNAVAILABLE when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<HealthListener>> Start(const std::string& address);

  ~HealthListener();
  HealthListener(const HealthListener&) = delete;
  HealthListener& operator=(const HealthListener&) = delete;

  // Owned by the listener's server: valid until Shutdown.
  grpc::HealthCheckServiceInterface* health() const { return server_->GetHealthCheckService(); }
  // The address as bound, with the port the OS chose.
  const std::string& bound_address() const { return bound_address_; }
  // Ends open Watch streams within a short grace; idempotent.
  void Shutdown();

 private:
  HealthListener() = default;

  // Answers every method but Health's UNIMPLEMENTED (its default). It also gives the server the
  // callback completion queue that gRPC requires of a server and that the default health service,
  // registered only later in BuildAndStart, would not provide. Outlives server_.
  grpc::CallbackGenericService unknown_methods_;
  std::unique_ptr<grpc::Server> server_;
  std::string bound_address_;
  bool shut_down_ = false;
};

}  // namespace colltest::server
