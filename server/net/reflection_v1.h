// Server reflection v1 (grpc.reflection.v1.ServerReflection), the version grpcurl >= 1.8.8,
// Postman and newer grpc_cli ask first. gRPC 1.51's grpc++_reflection serves only v1alpha, so
// colltestd serves v1 itself, from the same source: the descriptors compiled into the process
// (google::protobuf::DescriptorPool::generated_pool()). Access control is not here: the reflection
// guard (server/net/reflection_guard.h) applies to both versions.
#pragma once

#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/server_builder.h"

namespace colltest::server {

// The answer to one request of a stream. `services`: what list_services names. `sent`: the files
// already sent on this stream; a file asked for is always sent, its transitive dependencies only
// when not in `sent`, and every file sent is added to it. Failures are an error_response
// (NOT_FOUND, INVALID_ARGUMENT) naming what was asked for. valid_host and original_request are
// filled in.
// A response holding only an error_response with `status`'s code and message (the guard's
// refusals use it too; v1alpha's error_response is the same on the wire).
grpc::reflection::v1::ServerReflectionResponse ReflectionErrorResponse(const absl::Status& status);

grpc::reflection::v1::ServerReflectionResponse AnswerReflection(
    const grpc::reflection::v1::ServerReflectionRequest& request,
    const std::vector<std::string>& services, std::set<std::string>& sent);

class ReflectionV1Service final : public grpc::reflection::v1::ServerReflection::Service {
 public:
  // Full names of the services list_services answers with.
  void SetServiceNames(std::vector<std::string> names);

  grpc::Status ServerReflectionInfo(
      grpc::ServerContext* context,
      grpc::ServerReaderWriter<grpc::reflection::v1::ServerReflectionResponse,
                               grpc::reflection::v1::ServerReflectionRequest>* stream) override;

 private:
  std::vector<std::string> ServiceNames() const;

  mutable absl::Mutex mu_;
  std::vector<std::string> names_ ABSL_GUARDED_BY(mu_);
};

// Serves ReflectionV1Service on the server `builder` builds. Its list_services names every service
// that server registers, known only once it is built: the API, grpc.health.v1.Health, and both
// reflection services (v1alpha's own list includes v1 the same way, being built from the same
// registrations).
void AddReflectionV1(grpc::ServerBuilder& builder);

}  // namespace colltest::server
