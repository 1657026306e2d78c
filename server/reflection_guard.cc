#include "server/reflection_guard.h"

#include <cstdint>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/security/auth_context.h"
#include "grpcpp/server_context.h"
#include "grpcpp/support/byte_buffer.h"
#include "grpcpp/support/slice.h"
#include "server/grpc_status.h"

namespace colltest::server {
namespace {

namespace gx = ::grpc::experimental;
namespace pb = ::google::protobuf;

constexpr char kResponseType[] = "grpc.reflection.v1alpha.ServerReflectionResponse";
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
        !absl::StartsWith(info->method(), kReflectionMethodPrefix)) {
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

std::string RefusalResponse(const absl::Status& refusal) {
  const pb::Descriptor* type =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName(kResponseType);
  if (type == nullptr) return "";
  const pb::FieldDescriptor* error_field = type->FindFieldByName("error_response");
  if (error_field == nullptr || error_field->message_type() == nullptr) return "";
  const pb::Descriptor* error_type = error_field->message_type();
  const pb::FieldDescriptor* code = error_type->FindFieldByName("error_code");
  const pb::FieldDescriptor* message = error_type->FindFieldByName("error_message");
  if (code == nullptr || message == nullptr) return "";

  std::unique_ptr<pb::Message> response(
      pb::MessageFactory::generated_factory()->GetPrototype(type)->New());
  pb::Message* error = response->GetReflection()->MutableMessage(response.get(), error_field);
  error->GetReflection()->SetInt32(error, code, static_cast<int32_t>(refusal.code()));
  error->GetReflection()->SetString(error, message, std::string(refusal.message()));
  return response->SerializeAsString();
}

std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> ReflectionGuardCreators(
    const Authorizer* authorizer, bool verified_client_certificates) {
  std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(
      std::make_unique<ReflectionGuardFactory>(authorizer, verified_client_certificates));
  return creators;
}

}  // namespace colltest::server
