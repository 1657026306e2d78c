#include "server/net/reflection_v1.h"

#include <deque>
#include <memory>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "grpcpp/impl/server_builder_option.h"
#include "grpcpp/impl/server_builder_plugin.h"
#include "grpcpp/impl/server_initializer.h"

namespace colltest::server {
namespace {

namespace pb = ::google::protobuf;
namespace rv1 = ::grpc::reflection::v1;

const pb::DescriptorPool& Pool() { return *pb::DescriptorPool::generated_pool(); }

absl::Status NotEmpty(const std::string& value, absl::string_view field) {
  if (!value.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(field, " is empty: it takes a full name"));
}

// `file` first, then breadth first each dependency not yet in `sent`. The file asked for is sent
// even when sent before, since the client asked for it again; a dependency only once per stream,
// which keeps answers for files that share imports small.
rv1::FileDescriptorResponse FilesFrom(const pb::FileDescriptor* file, std::set<std::string>& sent) {
  rv1::FileDescriptorResponse files;
  std::deque<const pb::FileDescriptor*> queue = {file};
  for (bool first = true; !queue.empty(); first = false) {
    const pb::FileDescriptor* next = queue.front();
    queue.pop_front();
    if (!sent.insert(next->name()).second && !first) continue;
    pb::FileDescriptorProto proto;
    next->CopyTo(&proto);
    proto.SerializeToString(files.add_file_descriptor_proto());
    for (int i = 0; i < next->dependency_count(); ++i) queue.push_back(next->dependency(i));
  }
  return files;
}

absl::StatusOr<const pb::FileDescriptor*> FileByName(const std::string& name) {
  COLLTEST_RETURN_IF_ERROR(NotEmpty(name, "file_by_filename"));
  const pb::FileDescriptor* file = Pool().FindFileByName(name);
  if (file == nullptr) return absl::NotFoundError(absl::StrCat("file not found: ", name));
  return file;
}

// Services, methods, messages, enums, enum values, fields and extensions: all are symbols.
absl::StatusOr<const pb::FileDescriptor*> FileContainingSymbol(const std::string& symbol) {
  COLLTEST_RETURN_IF_ERROR(NotEmpty(symbol, "file_containing_symbol"));
  const pb::FileDescriptor* file = Pool().FindFileContainingSymbol(symbol);
  if (file == nullptr) return absl::NotFoundError(absl::StrCat("symbol not found: ", symbol));
  return file;
}

absl::StatusOr<const pb::Descriptor*> MessageType(const std::string& name,
                                                  absl::string_view field) {
  COLLTEST_RETURN_IF_ERROR(NotEmpty(name, field));
  const pb::Descriptor* type = Pool().FindMessageTypeByName(name);
  if (type == nullptr) return absl::NotFoundError(absl::StrCat("message type not found: ", name));
  return type;
}

absl::StatusOr<const pb::FileDescriptor*> FileContainingExtension(
    const rv1::ExtensionRequest& request) {
  COLLTEST_ASSIGN_OR_RETURN(const pb::Descriptor* type,
                            MessageType(request.containing_type(), "containing_type"));
  const pb::FieldDescriptor* extension =
      Pool().FindExtensionByNumber(type, request.extension_number());
  if (extension == nullptr) {
    return absl::NotFoundError(absl::StrCat("extension ", request.extension_number(), " of ",
                                            request.containing_type(), " not found"));
  }
  return extension->file();
}

absl::StatusOr<rv1::ExtensionNumberResponse> ExtensionNumbers(const std::string& type_name) {
  COLLTEST_ASSIGN_OR_RETURN(const pb::Descriptor* type,
                            MessageType(type_name, "all_extension_numbers_of_type"));
  std::vector<const pb::FieldDescriptor*> extensions;
  Pool().FindAllExtensions(type, &extensions);
  rv1::ExtensionNumberResponse numbers;
  numbers.set_base_type_name(type->full_name());
  for (const pb::FieldDescriptor* extension : extensions) {
    numbers.add_extension_number(extension->number());
  }
  return numbers;
}

rv1::ListServiceResponse ServiceList(const std::vector<std::string>& services) {
  rv1::ListServiceResponse list;
  for (const std::string& name : services) list.add_service()->set_name(name);
  return list;
}

// The response for `request` without valid_host and original_request, or why there is none.
absl::StatusOr<rv1::ServerReflectionResponse> Answer(const rv1::ServerReflectionRequest& request,
                                                     const std::vector<std::string>& services,
                                                     std::set<std::string>& sent) {
  using Request = rv1::ServerReflectionRequest;
  rv1::ServerReflectionResponse response;
  const pb::FileDescriptor* file = nullptr;
  switch (request.message_request_case()) {
    case Request::kListServices:
      *response.mutable_list_services_response() = ServiceList(services);
      return response;
    case Request::kAllExtensionNumbersOfType: {
      COLLTEST_ASSIGN_OR_RETURN(*response.mutable_all_extension_numbers_response(),
                                ExtensionNumbers(request.all_extension_numbers_of_type()));
      return response;
    }
    case Request::kFileByFilename: {
      COLLTEST_ASSIGN_OR_RETURN(file, FileByName(request.file_by_filename()));
      break;
    }
    case Request::kFileContainingSymbol: {
      COLLTEST_ASSIGN_OR_RETURN(file, FileContainingSymbol(request.file_containing_symbol()));
      break;
    }
    case Request::kFileContainingExtension: {
      COLLTEST_ASSIGN_OR_RETURN(file, FileContainingExtension(request.file_containing_extension()));
      break;
    }
    case Request::MESSAGE_REQUEST_NOT_SET:
      return absl::InvalidArgumentError("the request asks for nothing: set one of its requests");
  }
  *response.mutable_file_descriptor_response() = FilesFrom(file, sent);
  return response;
}

// Stands in for the plugin that grpc++_reflection registers for v1alpha: registers the service
// while the server is built, and tells it the server's services once all are registered.
class ReflectionV1Plugin final : public grpc::ServerBuilderPlugin {
 public:
  std::string name() override { return "colltest_reflection_v1"; }
  void InitServer(grpc::ServerInitializer* initializer) override {
    initializer->RegisterService(service_);
  }
  void Finish(grpc::ServerInitializer* initializer) override {
    service_->SetServiceNames(*initializer->GetServiceList());
  }
  void ChangeArguments(const std::string& /*name*/, void* /*value*/) override {}
  bool has_sync_methods() const override { return true; }

 private:
  // Shared with the server, which keeps it as long as it serves.
  std::shared_ptr<ReflectionV1Service> service_ = std::make_shared<ReflectionV1Service>();
};

// A builder option, not a global plugin factory: only the servers given it serve v1 (the
// unauthenticated --health-listen server must not).
class ReflectionV1Option final : public grpc::ServerBuilderOption {
 public:
  void UpdateArguments(grpc::ChannelArguments* /*args*/) override {}
  void UpdatePlugins(std::vector<std::unique_ptr<grpc::ServerBuilderPlugin>>* plugins) override {
    plugins->push_back(std::make_unique<ReflectionV1Plugin>());
  }
};

}  // namespace

rv1::ServerReflectionResponse ReflectionErrorResponse(const absl::Status& status) {
  rv1::ServerReflectionResponse response;
  // absl's codes are gRPC's, number for number.
  response.mutable_error_response()->set_error_code(static_cast<int32_t>(status.code()));
  response.mutable_error_response()->set_error_message(std::string(status.message()));
  return response;
}

rv1::ServerReflectionResponse AnswerReflection(const rv1::ServerReflectionRequest& request,
                                               const std::vector<std::string>& services,
                                               std::set<std::string>& sent) {
  absl::StatusOr<rv1::ServerReflectionResponse> answer = Answer(request, services, sent);
  rv1::ServerReflectionResponse response =
      answer.ok() ? *std::move(answer) : ReflectionErrorResponse(answer.status());
  response.set_valid_host(request.host());
  *response.mutable_original_request() = request;
  return response;
}

void ReflectionV1Service::SetServiceNames(std::vector<std::string> names) {
  absl::MutexLock lock(&mu_);
  names_ = std::move(names);
}

std::vector<std::string> ReflectionV1Service::ServiceNames() const {
  absl::MutexLock lock(&mu_);
  return names_;
}

grpc::Status ReflectionV1Service::ServerReflectionInfo(
    grpc::ServerContext* /*context*/,
    grpc::ServerReaderWriter<rv1::ServerReflectionResponse, rv1::ServerReflectionRequest>* stream) {
  std::set<std::string> sent;  // per stream: a new stream may come from a new client
  // Set once when the server is built, before it serves: read once per stream, not per request.
  const std::vector<std::string> services = ServiceNames();
  rv1::ServerReflectionRequest request;
  while (stream->Read(&request)) {
    if (!stream->Write(AnswerReflection(request, services, sent))) break;
  }
  return grpc::Status::OK;
}

void AddReflectionV1(grpc::ServerBuilder& builder) {
  builder.SetOption(std::make_unique<ReflectionV1Option>());
}

}  // namespace colltest::server
