// Server reflection on a real colltestd: open to every caller with authentication off, and with a
// token file answered only to callers of role viewer or above.
#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"
#include "grpcpp/support/sync_stream.h"
#include "gtest/gtest.h"
#include "tests/integration/daemon.h"

namespace colltest::testing {
namespace {

namespace pb = ::google::protobuf;

constexpr char kViewer[] = "viewer-token-reflection-1";
constexpr char kService[] = "colltest.v1.CollectiveTest";
constexpr char kMethod[] = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";

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
}

}  // namespace
}  // namespace colltest::testing
