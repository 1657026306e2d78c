#include "server/net/parse_error_interceptor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "grpcpp/support/status.h"

namespace colltest::server {
namespace {

namespace gx = ::grpc::experimental;

class ParseErrorInterceptor final : public gx::Interceptor {
 public:
  explicit ParseErrorInterceptor(std::string method) : method_(std::move(method)) {}

  void Intercept(gx::InterceptorBatchMethods* methods) override {
    if (methods->QueryInterceptionHookPoint(gx::InterceptionHookPoints::PRE_SEND_STATUS)) {
      const grpc::Status status = methods->GetSendStatus();
      // Only gRPC's own empty INTERNAL: colltestd's handlers always say what went wrong.
      if (status.error_code() == grpc::StatusCode::INTERNAL && status.error_message().empty()) {
        methods->ModifySendStatus(
            grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, ParseErrorMessage(method_)));
      }
    }
    methods->Proceed();
  }

 private:
  const std::string method_;
};

class ParseErrorInterceptorFactory final : public gx::ServerInterceptorFactoryInterface {
 public:
  gx::Interceptor* CreateServerInterceptor(gx::ServerRpcInfo* info) override {
    return new ParseErrorInterceptor(info->method() == nullptr ? "" : info->method());
  }
};

}  // namespace

std::string RequestTypeOf(absl::string_view method) {
  // "/package.Service/Method" names the descriptor "package.Service.Method".
  absl::string_view name = method;
  absl::ConsumePrefix(&name, "/");
  const google::protobuf::MethodDescriptor* descriptor =
      google::protobuf::DescriptorPool::generated_pool()->FindMethodByName(
          absl::StrReplaceAll(name, {{"/", "."}}));
  if (descriptor == nullptr) return "the method's request message";
  return descriptor->input_type()->full_name();
}

std::string ParseErrorMessage(absl::string_view method) {
  return absl::StrCat("request could not be parsed as ", RequestTypeOf(method),
                      ": a string field holds invalid UTF-8, or the bytes are not that message");
}

std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>>
ParseErrorInterceptorCreators() {
  std::vector<std::unique_ptr<gx::ServerInterceptorFactoryInterface>> creators;
  creators.push_back(std::make_unique<ParseErrorInterceptorFactory>());
  return creators;
}

}  // namespace colltest::server
