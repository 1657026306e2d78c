#include "server/net/reflection_guard.h"

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "google/protobuf/message.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "server/net/reflection_v1.h"

namespace colltest::server {

using common::ToGrpcStatus;
namespace {

namespace gx = ::grpc::experimental;
namespace pb = ::google::protobuf;

constexpr absl::string_view kReflectionServices[] = {
    "/grpc.reflection.v1alpha.ServerReflection/",
    "/grpc.reflection.v1.ServerReflection/",
};
constexpr char kWhat[] = "server reflection";

// The same parts Authorizer::Identify(const ServerContext&) reads, from the base class that
// interceptors are given.
absl::StatusOr<Caller> IdentifyCaller(const Authorizer& authorizer, bool certificates,
                                      const grpc::ServerContextBase* context) {
  if (context == nullptr) return absl::UnauthenticatedError("no call context to identify");
  std::optional<absl::string_view> authorization;
  const auto& metadata = context->client_metadata();
  if (auto it = metadata.find("authorization"); it != metadata.end()) {
    authorization = absl::string_view(it->second.data(), it->second.size());
  }
  std::vector<std::string> common_names;
  // Only a certificate the TLS layer verified against --tls-client-ca names anyone.
  if (certificates && context->auth_context() != nullptr) {
    for (const grpc::string_ref& cn :
         context->auth_context()->FindPropertyValues("x509_common_name")) {
      common_names.emplace_back(cn.data(), cn.size());
    }
  }
  return authorizer.Identify(authorization, common_names, context->peer());
}

class ReflectionGuard final : public gx::Interceptor {
 public:
  ReflectionGuard(const Authorizer& authorizer, bool certificates, grpc::ServerContextBase* context)
      : authorizer_(authorizer), certificates_(certificates), context_(context) {}

  void Intercept(gx::InterceptorBatchMethods* methods) override {
    // Decided on the first batch (the client's initial metadata), before any message moves.
    if (!refusal_.has_value()) {
      refusal_ = ReflectionAccess(IdentifyCaller(authorizer_, certificates_, context_));
      if (!refusal_->ok()) replacement_ = RefusalResponse(*refusal_);
    }
    if (!refusal_->ok()) Refuse(methods);
    methods->Proceed();
  }

 private:
  void Refuse(gx::InterceptorBatchMethods* methods) const {
    using Hook = gx::InterceptionHookPoints;
    if (methods->QueryInterceptionHookPoint(Hook::POST_RECV_MESSAGE)) {
      // An empty request costs the handler nothing; its answer is replaced below anyway. The
      // pointer is the generated ServerReflectionRequest, whose only base is pb::Message.
      if (void* request = methods->GetRecvMessage(); request != nullptr) {
        static_cast<pb::Message*>(request)->Clear();
      }
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_MESSAGE)) {
      // The serialized bytes are replaced rather than the message pointer, so the replacement
      // holds whether or not gRPC serialized the handler's response already.
      grpc::Slice slice(replacement_);
      *methods->GetSerializedSendMessage() = grpc::ByteBuffer(&slice, 1);
    }
    if (methods->QueryInterceptionHookPoint(Hook::PRE_SEND_STATUS)) {
      methods->ModifySendStatus(ToGrpcStatus(*refusal_));
    }
  }

  const Authorizer& authorizer_;
  const bool certificates_;
  grpc::ServerContextBase* const context_;
  std::optional<absl::Status> refusal_;
  std::string replacement_;
};

class ReflectionGuardFactory final : public gx::ServerInterceptorFactoryInterface {
 public:
  ReflectionGuardFactory(const Authorizer* authorizer, bool certificates)
      : authorizer_(authorizer), certificates_(certificates) {}

  gx::Interceptor* CreateServerInterceptor(gx::ServerRpcInfo* info) override {
    // Authentication off: reflection is open to every caller, as the API is.
    if (!authorizer_->enabled() || info->method() == nullptr ||
        !IsReflectionMethod(info->method())) {
      return nullptr;
    }
    return new ReflectionGuard(*authorizer_, certificates_, info->server_context());
  }

 private:
  const Authorizer* const authorizer_;
  const bool certificates_;
};

}  // namespace

absl::Status ReflectionAccess(const absl::StatusOr<Caller>& caller) {
  if (!caller.ok()) {
    return absl::Status(caller.status().code(),
                        absl::StrCat(kWhat, " needs role ", RoleName(Role::kViewer),
                                     " or above: ", caller.status().message()));
  }
  return CheckRole(*caller, Role::kViewer, kWhat);
}

bool IsReflectionMethod(absl::string_view method) {
  for (absl::string_view prefix : kReflectionServices) {
    if (absl::StartsWith(method, prefix)) return true;
  }
  return false;
}

std::string RefusalResponse(const absl::Status& refusal) {
  return ReflectionErrorResponse(refusal).SerializeAsString();
}

std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> ReflectionGuardCreators(
    const Authorizer* authorizer, bool verified_client_certificates) {
  std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(
      std::make_unique<ReflectionGuardFactory>(authorizer, verified_client_certificates));
  return creators;
}

}  // namespace colltest::server
