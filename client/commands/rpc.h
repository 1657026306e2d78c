// Connection to colltestd and the calls of the public API, with gRPC statuses turned into
// absl::Status so the rest of the client has one error type.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "colltest/v1/colltest.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace colltest::client {

struct ConnectionOptions {
  std::string server = "127.0.0.1:50051";
  std::string token_file;       // bearer token, sent as "authorization: Bearer <token>"
  std::string tls_ca;           // root CA; TLS is used when this or a client cert is given
  std::string tls_cert;         // client certificate, for a server that requires mutual TLS
  std::string tls_key;          // its private key
  std::string tls_server_name;  // expected name in the server certificate, when ADDR is an IP
};

// Reads and checks the bearer token file: one printable token, surrounding blanks ignored.
absl::StatusOr<std::string> ReadToken(const std::string& path);

absl::StatusOr<std::shared_ptr<grpc::Channel>> CreateChannel(const ConnectionOptions& options);

class Client {
 public:
  // An empty token sends no authorization metadata. `channel`, when given, is the stub's: it
  // tells a call that never connected from one the server was slow to answer (Connected).
  Client(std::unique_ptr<v1::CollectiveTest::StubInterface> stub, std::string token,
         std::shared_ptr<grpc::ChannelInterface> channel = nullptr);

  static absl::StatusOr<std::unique_ptr<Client>> Connect(const ConnectionOptions& options);

  // The address Connect was given ("" for a client made from a stub), for error hints.
  const std::string& server() const { return server_; }

  absl::StatusOr<v1::ListDevicesResponse> ListDevices();
  absl::StatusOr<v1::RunResult> Run(const v1::SweepSpec& spec);
  // Calls `on_event` for every streamed event, in order; the status is the stream's final one.
  absl::Status Sweep(const v1::SweepSpec& spec,
                     absl::FunctionRef<void(const v1::SweepEvent&)> on_event);
  absl::StatusOr<v1::RunResult> GetRun(absl::string_view run_id);
  // One page of the history; the response's next_page_token asks for the next.
  absl::StatusOr<v1::ListRunsResponse> ListRuns(const v1::ListRunsRequest& request);
  absl::StatusOr<v1::CancelResponse> Cancel(absl::string_view run_id);
  // Fails with DEADLINE_EXCEEDED when no verdict came within `deadline`; marked with
  // MarkNotConnected (hints.h) when no connection was made by then.
  absl::StatusOr<v1::HealthResponse> Health(const v1::HealthRequest& request,
                                            absl::Duration deadline);
  absl::StatusOr<v1::Baseline> SetBaseline(const v1::SetBaselineRequest& request);
  absl::StatusOr<v1::ListBaselinesResponse> ListBaselines(const v1::ListBaselinesRequest& request);
  absl::StatusOr<v1::CompareResponse> Compare(const v1::CompareRequest& request);

 private:
  // False when a channel is known and is not connected (connecting, failing or shut down).
  bool Connected() const;

  // Every call gets a fresh context: gRPC forbids reusing one.
  void PrepareContext(grpc::ClientContext* context) const;

  // A unary call of `method` of the stub, with the token attached.
  template <typename Request, typename Response>
  absl::StatusOr<Response> Unary(grpc::Status (v1::CollectiveTest::StubInterface::*method)(
                                     grpc::ClientContext*, const Request&, Response*),
                                 const Request& request);

  std::unique_ptr<v1::CollectiveTest::StubInterface> stub_;
  std::string token_;
  std::shared_ptr<grpc::ChannelInterface> channel_;
  std::string server_;
};

}  // namespace colltest::client
