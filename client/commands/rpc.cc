#include "client/commands/rpc.h"

#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "client/commands/hints.h"
#include "common/defaults.h"
#include "common/grpc_status.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

absl::StatusOr<std::string> ReadFile(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
  std::ostringstream contents;
  contents << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(flag, ": cannot read '", path, "'"));
  return contents.str();
}

}  // namespace

absl::StatusOr<std::string> ReadToken(const std::string& path) {
  absl::StatusOr<std::string> contents = ReadFile("--token-file", path);
  if (!contents.ok()) return contents.status();
  std::string token(absl::StripAsciiWhitespace(*contents));
  if (token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file: '", path, "' is empty"));
  }
  // A newline or control byte inside a header value makes gRPC fail the call with an opaque
  // INTERNAL error; saying so here points at the file instead.
  for (char ch : token) {
    if (static_cast<unsigned char>(ch) < 0x20 || static_cast<unsigned char>(ch) > 0x7e) {
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file: '", path, "' must hold one printable ASCII token"));
    }
  }
  return token;
}

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const ConnectionOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxGrpcMessageBytes);

  const bool use_tls = !options.tls_ca.empty() || !options.tls_cert.empty();
  if (!use_tls) {
    return grpc::CreateCustomChannel(options.server, grpc::InsecureChannelCredentials(), args);
  }
  if (options.tls_cert.empty() != options.tls_key.empty()) {
    return absl::InvalidArgumentError("--tls-cert and --tls-key must be given together");
  }
  grpc::SslCredentialsOptions ssl;
  if (!options.tls_ca.empty()) {
    absl::StatusOr<std::string> ca = ReadFile("--tls-ca", options.tls_ca);
    if (!ca.ok()) return ca.status();
    ssl.pem_root_certs = *std::move(ca);
  }
  if (!options.tls_cert.empty()) {
    absl::StatusOr<std::string> cert = ReadFile("--tls-cert", options.tls_cert);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = ReadFile("--tls-key", options.tls_key);
    if (!key.ok()) return key.status();
    ssl.pem_cert_chain = *std::move(cert);
    ssl.pem_private_key = *std::move(key);
  }
  if (!options.tls_server_name.empty()) args.SetSslTargetNameOverride(options.tls_server_name);
  return grpc::CreateCustomChannel(options.server, grpc::SslCredentials(ssl), args);
}

Client::Client(std::unique_ptr<v1::CollectiveTest::StubInterface> stub, std::string token,
               std::shared_ptr<grpc::ChannelInterface> channel)
    : stub_(std::move(stub)), token_(std::move(token)), channel_(std::move(channel)) {}

absl::StatusOr<std::unique_ptr<Client>> Client::Connect(const ConnectionOptions& options) {
  std::string token;
  if (!options.token_file.empty()) {
    absl::StatusOr<std::string> read = ReadToken(options.token_file);
    if (!read.ok()) return read.status();
    token = *std::move(read);
  }
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = CreateChannel(options);
  if (!channel.ok()) return channel.status();
  auto client =
      std::make_unique<Client>(v1::CollectiveTest::NewStub(*channel), std::move(token), *channel);
  client->server_ = options.server;
  return client;
}

template <typename Request, typename Response>
absl::StatusOr<Response> Client::Unary(grpc::Status (v1::CollectiveTest::StubInterface::*method)(
                                           grpc::ClientContext*, const Request&, Response*),
                                       const Request& request) {
  grpc::ClientContext context;
  PrepareContext(&context);
  Response response;
  COLLTEST_RETURN_IF_ERROR(
      common::FromGrpcStatus((stub_.get()->*method)(&context, request, &response)));
  return response;
}

bool Client::Connected() const {
  return channel_ == nullptr || channel_->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
}

void Client::PrepareContext(grpc::ClientContext* context) const {
  // Per-call metadata rather than call credentials: gRPC refuses call credentials on an insecure
  // channel, and a token over plain TCP on a lab network is still a supported setup.
  if (!token_.empty()) context->AddMetadata("authorization", absl::StrCat("Bearer ", token_));
}

absl::StatusOr<v1::ListDevicesResponse> Client::ListDevices() {
  grpc::ClientContext context;
  PrepareContext(&context);
  v1::ListDevicesResponse response;
  absl::Status status = common::FromGrpcStatus(stub_->ListDevices(&context, {}, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::RunResult> Client::Run(const v1::SweepSpec& spec) {
  grpc::ClientContext context;
  PrepareContext(&context);
  v1::RunRequest request;
  *request.mutable_spec() = spec;
  v1::RunResult response;
  absl::Status status = common::FromGrpcStatus(stub_->Run(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::Status Client::Sweep(const v1::SweepSpec& spec,
                           absl::FunctionRef<void(const v1::SweepEvent&)> on_event) {
  grpc::ClientContext context;
  PrepareContext(&context);
  v1::RunRequest request;
  *request.mutable_spec() = spec;
  std::unique_ptr<grpc::ClientReaderInterface<v1::SweepEvent>> reader =
      stub_->Sweep(&context, request);
  v1::SweepEvent event;
  while (reader->Read(&event)) on_event(event);
  return common::FromGrpcStatus(reader->Finish());
}

absl::StatusOr<v1::RunResult> Client::GetRun(absl::string_view run_id) {
  grpc::ClientContext context;
  PrepareContext(&context);
  v1::GetRunRequest request;
  request.set_run_id(std::string(run_id));
  v1::RunResult response;
  absl::Status status = common::FromGrpcStatus(stub_->GetRun(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::ListRunsResponse> Client::ListRuns(const v1::ListRunsRequest& request) {
  return Unary(&v1::CollectiveTest::StubInterface::ListRuns, request);
}

absl::StatusOr<v1::CancelResponse> Client::Cancel(absl::string_view run_id) {
  grpc::ClientContext context;
  PrepareContext(&context);
  v1::CancelRequest request;
  request.set_run_id(std::string(run_id));
  v1::CancelResponse response;
  absl::Status status = common::FromGrpcStatus(stub_->Cancel(&context, request, &response));
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::HealthResponse> Client::Health(const v1::HealthRequest& request,
                                                  absl::Duration deadline) {
  grpc::ClientContext context;
  PrepareContext(&context);
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  v1::HealthResponse response;
  absl::Status status = common::FromGrpcStatus(stub_->Health(&context, request, &response));
  if (absl::IsDeadlineExceeded(status) && !Connected()) return MarkNotConnected(status);
  if (!status.ok()) return status;
  return response;
}

absl::StatusOr<v1::Baseline> Client::SetBaseline(const v1::SetBaselineRequest& request) {
  return Unary(&v1::CollectiveTest::StubInterface::SetBaseline, request);
}

absl::StatusOr<v1::ListBaselinesResponse> Client::ListBaselines(
    const v1::ListBaselinesRequest& request) {
  return Unary(&v1::CollectiveTest::StubInterface::ListBaselines, request);
}

absl::StatusOr<v1::CompareResponse> Client::Compare(const v1::CompareRequest& request) {
  return Unary(&v1::CollectiveTest::StubInterface::Compare, request);
}

}  // namespace colltest::client
