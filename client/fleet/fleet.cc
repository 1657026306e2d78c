#include "client/fleet/fleet.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "client/commands/command_support.h"
#include "client/commands/exit_code.h"
#include "client/fleet/format_fleet.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

NodeAttempt CallOverGrpc(const ConnectionOptions& connection, const std::string& token,
                         const v1::HealthRequest& request, const FleetTarget& target,
                         absl::Duration deadline) {
  ConnectionOptions options = connection;
  options.server = target.address;
  if (options.tls_server_name.empty()) options.tls_server_name = target.host_name;
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = CreateChannel(options);
  if (!channel.ok()) return {channel.status(), false};
  Client client(v1::CollectiveTest::NewStub(*channel), token);
  NodeAttempt attempt{client.Health(request, deadline), false};
  attempt.connected = (*channel)->GetState(/*try_to_connect=*/false) == GRPC_CHANNEL_READY;
  return attempt;
}

NodeReport AskNode(const FleetTarget& target, const FleetOptions& options, const NodeCall& call) {
  NodeReport report;
  report.node = target.name;
  const absl::Time start = absl::Now();
  for (int attempt = 1;; ++attempt) {
    report.attempts = attempt;
    NodeAttempt result = call(target, options.node_timeout);
    if (result.answer.ok()) {
      ApplyHealthAnswer(*result.answer, absl::Now(), &report);
      break;
    }
    const bool retry =
        ApplyCallFailure(result.answer.status(), result.connected, options.node_timeout, &report);
    if (!retry || attempt > static_cast<int>(options.retries)) break;
    absl::SleepFor(RetryBackoff(attempt));
  }
  report.duration = absl::Now() - start;
  return report;
}

}  // namespace

absl::StatusOr<NodeCall> MakeGrpcNodeCall(const ConnectionOptions& connection,
                                          const v1::HealthRequest& request) {
  std::string token;
  if (!connection.token_file.empty()) {
    COLLTEST_ASSIGN_OR_RETURN(token, ReadToken(connection.token_file));
  }
  // A channel is made lazily (nothing is dialled), so this only checks the TLS flags and files.
  COLLTEST_RETURN_IF_ERROR(CreateChannel(connection).status());
  return NodeCall([connection, token, request](const FleetTarget& target, absl::Duration deadline) {
    return CallOverGrpc(connection, token, request, target, deadline);
  });
}

absl::Duration RetryBackoff(int attempt) {
  const int doublings = std::clamp(attempt - 1, 0, 4);
  return absl::Milliseconds(250) * (1 << doublings);
}

FleetReport RunFleetCheck(const FleetOptions& options, const NodeCall& call) {
  const absl::Time start = absl::Now();
  FleetReport report;
  report.nodes.resize(options.targets.size());
  std::atomic<size_t> next{0};
  // Each worker takes the next node when it is done with one: a slow node holds one slot, never
  // a batch.
  const auto work = [&] {
    for (size_t i = next++; i < options.targets.size(); i = next++) {
      report.nodes[i] = AskNode(options.targets[i], options, call);
    }
  };
  const size_t workers =
      std::min<size_t>(std::max<uint32_t>(options.parallel, 1), options.targets.size());
  std::vector<std::thread> threads;
  threads.reserve(workers);
  for (size_t w = 0; w < workers; ++w) threads.emplace_back(work);
  for (std::thread& t : threads) t.join();
  report.wall = absl::Now() - start;
  return report;
}

int FleetHealthCommand(const ConnectionOptions& connection, const v1::HealthRequest& request,
                       const FleetOptions& options, const OutputOptions& output, Streams streams) {
  absl::StatusOr<NodeCall> call = MakeGrpcNodeCall(connection, request);
  if (!call.ok()) return Fail(streams, call.status());
  const FleetReport report = RunFleetCheck(options, *call);
  if (int code = WriteOrFail(streams, FormatFleet(report, output.format), output);
      code != kExitOk) {
    return code;
  }
  // The table ends with the summary; a machine-readable report on stdout (or any report in a
  // file) still leaves the line in the log of whoever ran it.
  if (output.format != OutputFormat::kTable || !output.out_path.empty()) {
    streams.err << FleetSummaryLine(report.nodes, report.wall) << "\n";
  }
  return FleetExitCode(report.nodes);
}

}  // namespace colltest::client
