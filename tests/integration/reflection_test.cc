// Server reflection on a real colltestd, v1alpha (grpc++_reflection) and v1
// (server/net/reflection_v1.h): open to every caller with authentication off, and with a token file
// answered only to callers of role viewer or above, whichever the version.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/message.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "grpcpp/support/sync_stream.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace pb = ::google::protobuf;

constexpr char kViewer[] = "viewer-token-reflection-1";
constexpr char kService[] = "colltest.v1.CollectiveTest";
constexpr char kMethod[] = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
constexpr char kV1alpha[] = "grpc.reflection.v1alpha.ServerReflection";
constexpr char kV1[] = "grpc.reflection.v1.ServerReflection";
constexpr char kHealth[] = "grpc.health.v1.Health";

std::string WriteTokenFile() {
  return ::colltest::testing::WriteTokenFile("colltestd_reflection_tokens",
                                             absl::StrCat("dash viewer ", kViewer, "\n"));
}

// The reflection messages come from the descriptors grpc++_reflection links in; the installed
// gRPC has no generated headers for them.
std::unique_ptr<pb::Message> NewMessage(const std::string& type) {
  const pb::Descriptor* descriptor =
      pb::DescriptorPool::generated_pool()->FindMessageTypeByName(type);
  if (descriptor == nullptr) return nullptr;
  return std::unique_ptr<pb::Message>(
      pb::MessageFactory::generated_factory()->GetPrototype(descriptor)->New());
}

// A request with string field `field` (list_services, file_by_filename...) set to `value`.
grpc::ByteBuffer Request(const std::string& field, const std::string& value) {
  std::unique_ptr<pb::Message> request =
      NewMessage("grpc.reflection.v1alpha.ServerReflectionRequest");
  EXPECT_NE(request, nullptr) << "reflection descriptors not linked";
  if (request == nullptr) return {};
  request->GetReflection()->SetString(request.get(),
                                      request->GetDescriptor()->FindFieldByName(field), value);
  const std::string bytes = request->SerializeAsString();
  grpc::Slice slice(bytes);
  return grpc::ByteBuffer(&slice, 1);
}

struct Answer {
  grpc::Status status;
  std::vector<std::string> raw;       // every response as sent
  std::vector<std::string> services;  // names from list_services_response
  std::vector<int> error_codes;       // error_response.error_code of each error response
  std::vector<std::string> error_messages;
};

void Decode(const std::string& raw, Answer* answer) {
  std::unique_ptr<pb::Message> response =
      NewMessage("grpc.reflection.v1alpha.ServerReflectionResponse");
  ASSERT_NE(response, nullptr);
  ASSERT_TRUE(response->ParseFromString(raw));
  const pb::Reflection* r = response->GetReflection();
  const pb::Descriptor* d = response->GetDescriptor();
  if (const pb::FieldDescriptor* f = d->FindFieldByName("error_response");
      r->HasField(*response, f)) {
    const pb::Message& error = r->GetMessage(*response, f);
    const pb::Descriptor* e = error.GetDescriptor();
    answer->error_codes.push_back(
        error.GetReflection()->GetInt32(error, e->FindFieldByName("error_code")));
    answer->error_messages.push_back(
        error.GetReflection()->GetString(error, e->FindFieldByName("error_message")));
  }
  const pb::FieldDescriptor* list = d->FindFieldByName("list_services_response");
  if (!r->HasField(*response, list)) return;
  const pb::Message& services = r->GetMessage(*response, list);
  const pb::FieldDescriptor* service = services.GetDescriptor()->FindFieldByName("service");
  for (int i = 0; i < services.GetReflection()->FieldSize(services, service); ++i) {
    const pb::Message& one = services.GetReflection()->GetRepeatedMessage(services, service, i);
    answer->services.push_back(
        one.GetReflection()->GetString(one, one.GetDescriptor()->FindFieldByName("name")));
  }
}

// One reflection stream: sends `requests`, reads every response, returns them and the status.
Answer Reflect(const std::string& address, const std::string& token,
               const std::vector<grpc::ByteBuffer>& requests) {
  Answer answer;
  for (const grpc::ByteBuffer& request : requests) {
    // Writing an empty buffer aborts the process inside gRPC: fail the test instead.
    if (!request.Valid()) {
      answer.status = grpc::Status(grpc::StatusCode::INTERNAL, "no request to send");
      return answer;
    }
  }
  auto channel = grpc::CreateChannel(address, grpc::InsecureChannelCredentials());
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!token.empty()) context.AddMetadata("authorization", std::string("Bearer ") + token);
  // A raw bidi stream of bytes: what generated stubs build, without the reflection headers.
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel.get(),
          grpc::internal::RpcMethod(kMethod, grpc::internal::RpcMethod::BIDI_STREAMING), &context));
  for (const grpc::ByteBuffer& request : requests) {
    if (!stream->Write(request)) break;
  }
  stream->WritesDone();
  grpc::ByteBuffer response;
  while (stream->Read(&response)) {
    std::vector<grpc::Slice> slices;
    EXPECT_TRUE(response.Dump(&slices).ok());
    std::string raw;
    for (const grpc::Slice& s : slices) {
      raw.append(reinterpret_cast<const char*>(s.begin()), s.size());
    }
    answer.raw.push_back(raw);
    Decode(raw, &answer);
  }
  answer.status = stream->Finish();
  return answer;
}

std::vector<grpc::ByteBuffer> ListAndFetch() {
  std::vector<grpc::ByteBuffer> requests;
  requests.push_back(Request("list_services", "*"));
  requests.push_back(Request("file_containing_symbol", kService));
  return requests;
}

bool Lists(const Answer& answer, const std::string& service) {
  for (const std::string& s : answer.services) {
    if (s == service) return true;
  }
  return false;
}

class ReflectionWithTokensTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(2, {"--token-file", WriteTokenFile()});
    ASSERT_NE(daemon_, nullptr);
  }
  static void TearDownTestSuite() { daemon_.reset(); }
  static std::unique_ptr<Daemon> daemon_;
};

std::unique_ptr<Daemon> ReflectionWithTokensTest::daemon_;

TEST_F(ReflectionWithTokensTest, WithoutATokenEveryAnswerIsUnauthenticatedAndNamesNothing) {
  for (const std::string token : {"", "not-a-token-at-all-000"}) {
    SCOPED_TRACE(token.empty() ? "no token" : "unknown token");
    const Answer answer = Reflect(daemon_->address(), token, ListAndFetch());
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_NE(answer.status.error_message().find("needs role viewer"), std::string::npos)
        << answer.status.error_message();
    EXPECT_EQ(answer.raw.size(), 2u);
    EXPECT_TRUE(answer.services.empty());
    ASSERT_EQ(answer.error_codes.size(), answer.raw.size());
    for (size_t i = 0; i < answer.raw.size(); ++i) {
      EXPECT_EQ(answer.error_codes[i], 16);
      EXPECT_NE(answer.error_messages[i].find("needs role viewer"), std::string::npos);
      // Neither the service list nor the file descriptor: not even the package's name.
      EXPECT_EQ(answer.raw[i].find("colltest.v1"), std::string::npos) << i;
      EXPECT_EQ(answer.raw[i].find("colltest/v1"), std::string::npos) << i;
    }
  }
}

TEST_F(ReflectionWithTokensTest, AViewerListsTheService) {
  const Answer answer = Reflect(daemon_->address(), kViewer, ListAndFetch());
  EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_TRUE(Lists(answer, kService));
  EXPECT_TRUE(answer.error_codes.empty());
  ASSERT_EQ(answer.raw.size(), 2u);
  EXPECT_NE(answer.raw[1].find("colltest/v1/colltest.proto"), std::string::npos);
}

TEST(ReflectionWithoutAuthTest, EveryCallerListsTheService) {
  std::unique_ptr<Daemon> daemon = Daemon::Start(2);
  ASSERT_NE(daemon, nullptr);
  const Answer answer = Reflect(daemon->address(), "", ListAndFetch());
  EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
  EXPECT_TRUE(Lists(answer, kService));
  EXPECT_TRUE(answer.error_codes.empty());
  // v1alpha's list is the server's: v1, registered next to it, is on it.
  EXPECT_TRUE(Lists(answer, kHealth));
  EXPECT_TRUE(Lists(answer, kV1alpha));
  EXPECT_TRUE(Lists(answer, kV1));
}

// --- v1, through the stub generated from proto/grpc/reflection/v1/reflection.proto ---

namespace rv1 = ::grpc::reflection::v1;

struct V1Answer {
  grpc::Status status;
  std::vector<rv1::ServerReflectionResponse> responses;
};

V1Answer ReflectV1(const std::string& address, const std::string& token,
                   const std::vector<rv1::ServerReflectionRequest>& requests) {
  std::unique_ptr<rv1::ServerReflection::Stub> stub = rv1::ServerReflection::NewStub(
      grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
  grpc::ClientContext context;
  context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  if (!token.empty()) context.AddMetadata("authorization", std::string("Bearer ") + token);
  auto stream = stub->ServerReflectionInfo(&context);
  for (const rv1::ServerReflectionRequest& request : requests) {
    if (!stream->Write(request)) break;
  }
  stream->WritesDone();
  V1Answer answer;
  rv1::ServerReflectionResponse response;
  while (stream->Read(&response)) answer.responses.push_back(response);
  answer.status = stream->Finish();
  return answer;
}

rv1::ServerReflectionRequest ListServicesV1() {
  rv1::ServerReflectionRequest request;
  request.set_list_services("*");
  return request;
}

rv1::ServerReflectionRequest SymbolV1(const std::string& symbol) {
  rv1::ServerReflectionRequest request;
  request.set_file_containing_symbol(symbol);
  return request;
}

std::vector<std::string> ServiceNames(const rv1::ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const rv1::ServiceResponse& service : response.list_services_response().service()) {
    names.push_back(service.name());
  }
  return names;
}

// Each file of a file_descriptor_response, parsed; a file that does not parse fails the test.
std::vector<pb::FileDescriptorProto> Files(const rv1::ServerReflectionResponse& response) {
  std::vector<pb::FileDescriptorProto> files;
  for (const std::string& bytes : response.file_descriptor_response().file_descriptor_proto()) {
    files.emplace_back();
    EXPECT_TRUE(files.back().ParseFromString(bytes)) << "a file that does not parse";
  }
  return files;
}

std::vector<std::string> FileNames(const rv1::ServerReflectionResponse& response) {
  std::vector<std::string> names;
  for (const pb::FileDescriptorProto& file : Files(response)) names.push_back(file.name());
  return names;
}

bool Has(const std::vector<std::string>& names, const std::string& name) {
  return std::find(names.begin(), names.end(), name) != names.end();
}

class ReflectionV1Test : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    daemon_ = Daemon::Start(2);
    ASSERT_NE(daemon_, nullptr);
  }
  static void TearDownTestSuite() { daemon_.reset(); }
  static std::unique_ptr<Daemon> daemon_;
};

std::unique_ptr<Daemon> ReflectionV1Test::daemon_;

TEST_F(ReflectionV1Test, ListsTheApiHealthAndBothReflectionServices) {
  const V1Answer answer = ReflectV1(daemon_->address(), "", {ListServicesV1()});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.responses.size(), 1u);
  const std::vector<std::string> names = ServiceNames(answer.responses[0]);
  for (const char* service : {kService, kHealth, kV1alpha, kV1}) {
    EXPECT_TRUE(Has(names, service)) << service;
  }
  EXPECT_EQ(answer.responses[0].original_request().list_services(), "*");
}

TEST_F(ReflectionV1Test, TheFileOfTheServiceParsesAndDefinesIt) {
  const V1Answer answer = ReflectV1(daemon_->address(), "", {SymbolV1(kService)});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.responses.size(), 1u);
  const std::vector<pb::FileDescriptorProto> files = Files(answer.responses[0]);
  ASSERT_FALSE(files.empty());
  EXPECT_EQ(files[0].name(), "colltest/v1/colltest.proto");
  EXPECT_EQ(files[0].package(), "colltest.v1");
  ASSERT_EQ(files[0].service_size(), 1);
  EXPECT_EQ(files[0].service(0).name(), "CollectiveTest");
  bool has_run = false;
  for (const pb::MethodDescriptorProto& method : files[0].service(0).method()) {
    has_run = has_run || method.name() == "Run";
  }
  EXPECT_TRUE(has_run);
}

// What a client does with the files: build them into a pool of its own, which fails for a file
// whose imports were not sent.
TEST_F(ReflectionV1Test, DependenciesAreSentOncePerStream) {
  const V1Answer worker =
      ReflectV1(daemon_->address(), "", {SymbolV1("colltest.worker.v1.Worker")});
  ASSERT_TRUE(worker.status.ok()) << worker.status.error_message();
  ASSERT_EQ(worker.responses.size(), 1u);
  EXPECT_EQ(FileNames(worker.responses[0]),
            (std::vector<std::string>{"colltest/v1/worker.proto", "colltest/v1/colltest.proto"}));
  pb::DescriptorPool pool;
  const std::vector<pb::FileDescriptorProto> files = Files(worker.responses[0]);
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    EXPECT_NE(pool.BuildFile(*it), nullptr) << it->name();
  }
  EXPECT_NE(pool.FindServiceByName("colltest.worker.v1.Worker"), nullptr);

  // The same stream: colltest.proto, sent with the first answer, is not sent with the second.
  const V1Answer both = ReflectV1(daemon_->address(), "",
                                  {SymbolV1(kService), SymbolV1("colltest.worker.v1.Worker")});
  ASSERT_TRUE(both.status.ok()) << both.status.error_message();
  ASSERT_EQ(both.responses.size(), 2u);
  EXPECT_EQ(FileNames(both.responses[0]), std::vector<std::string>{"colltest/v1/colltest.proto"});
  EXPECT_EQ(FileNames(both.responses[1]), std::vector<std::string>{"colltest/v1/worker.proto"});
}

TEST_F(ReflectionV1Test, MethodsMessagesEnumsAndFieldsAreSymbols) {
  std::vector<rv1::ServerReflectionRequest> requests;
  const std::vector<std::string> symbols = {"colltest.v1.CollectiveTest.Run",
                                            "colltest.v1.RunRequest", "colltest.v1.Variant",
                                            "colltest.v1.RunRequest.spec"};
  for (const std::string& symbol : symbols) requests.push_back(SymbolV1(symbol));
  rv1::ServerReflectionRequest by_name;
  by_name.set_file_by_filename("colltest/v1/colltest.proto");
  requests.push_back(by_name);
  const V1Answer answer = ReflectV1(daemon_->address(), "", requests);
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.responses.size(), requests.size());
  for (size_t i = 0; i < answer.responses.size(); ++i) {
    EXPECT_FALSE(answer.responses[i].has_error_response())
        << i << ": " << answer.responses[i].error_response().error_message();
    const std::vector<std::string> names = FileNames(answer.responses[i]);
    ASSERT_FALSE(names.empty()) << i;
    EXPECT_EQ(names[0], "colltest/v1/colltest.proto") << i;
  }
}

TEST_F(ReflectionV1Test, AnUnknownSymbolIsNotFoundAndTheStreamGoesOn) {
  rv1::ServerReflectionRequest extensions;
  extensions.set_all_extension_numbers_of_type("colltest.v1.NoSuchType");
  rv1::ServerReflectionRequest nothing;  // sets none of its requests
  const V1Answer answer =
      ReflectV1(daemon_->address(), "",
                {SymbolV1("colltest.v1.NoSuchService"), extensions, nothing, ListServicesV1()});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.responses.size(), 4u);
  const rv1::ErrorResponse& unknown = answer.responses[0].error_response();
  EXPECT_EQ(unknown.error_code(), static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_NE(unknown.error_message().find("colltest.v1.NoSuchService"), std::string::npos)
      << unknown.error_message();
  EXPECT_EQ(answer.responses[0].original_request().file_containing_symbol(),
            "colltest.v1.NoSuchService");
  EXPECT_EQ(answer.responses[1].error_response().error_code(),
            static_cast<int>(grpc::StatusCode::NOT_FOUND));
  EXPECT_NE(answer.responses[1].error_response().error_message().find("colltest.v1.NoSuchType"),
            std::string::npos);
  EXPECT_EQ(answer.responses[2].error_response().error_code(),
            static_cast<int>(grpc::StatusCode::INVALID_ARGUMENT));
  EXPECT_TRUE(Has(ServiceNames(answer.responses[3]), kService));
}

TEST_F(ReflectionV1Test, AMessageWithoutExtensionsHasNoExtensionNumbers) {
  rv1::ServerReflectionRequest request;
  request.set_all_extension_numbers_of_type("colltest.v1.RunRequest");
  const V1Answer answer = ReflectV1(daemon_->address(), "", {request});
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.responses.size(), 1u);
  ASSERT_TRUE(answer.responses[0].has_all_extension_numbers_response());
  EXPECT_EQ(answer.responses[0].all_extension_numbers_response().base_type_name(),
            "colltest.v1.RunRequest");
  EXPECT_EQ(answer.responses[0].all_extension_numbers_response().extension_number_size(), 0);
}

TEST_F(ReflectionWithTokensTest, V1WithoutATokenEveryAnswerIsUnauthenticatedAndNamesNothing) {
  for (const std::string token : {"", "not-a-token-at-all-000"}) {
    SCOPED_TRACE(token.empty() ? "no token" : "unknown token");
    const V1Answer answer =
        ReflectV1(daemon_->address(), token, {ListServicesV1(), SymbolV1(kService)});
    EXPECT_EQ(answer.status.error_code(), grpc::StatusCode::UNAUTHENTICATED);
    EXPECT_NE(answer.status.error_message().find("needs role viewer"), std::string::npos)
        << answer.status.error_message();
    ASSERT_EQ(answer.responses.size(), 2u);
    for (const rv1::ServerReflectionResponse& response : answer.responses) {
      EXPECT_EQ(response.error_response().error_code(), 16);
      EXPECT_NE(response.error_response().error_message().find("needs role viewer"),
                std::string::npos);
      // Neither the service list nor the file descriptor: not even the package's name.
      const std::string raw = response.SerializeAsString();
      EXPECT_EQ(raw.find("colltest.v1"), std::string::npos);
      EXPECT_EQ(raw.find("colltest/v1"), std::string::npos);
    }
  }
}

TEST_F(ReflectionWithTokensTest, V1AViewerListsTheService) {
  const V1Answer answer =
      ReflectV1(daemon_->address(), kViewer, {ListServicesV1(), SymbolV1(kService)});
  EXPECT_TRUE(answer.status.ok()) << answer.status.error_message();
  ASSERT_EQ(answer.responses.size(), 2u);
  EXPECT_TRUE(Has(ServiceNames(answer.responses[0]), kService));
  EXPECT_FALSE(answer.responses[1].has_error_response());
  EXPECT_EQ(FileNames(answer.responses[1]), std::vector<std::string>{"colltest/v1/colltest.proto"});
}

}  // namespace
}  // namespace colltest::testing
