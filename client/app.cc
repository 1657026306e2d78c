#include "client/app.h"

#include <memory>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/exit_code.h"
#include "client/flags.h"
#include "client/format.h"
#include "client/output.h"
#include "client/rpc.h"

namespace colltest::client {
namespace {

// Commands whose verdict CI consumes, hence also as CSV and JUnit.
bool PrintsEveryFormat(const std::string& command) {
  return command == "run" || command == "sweep" || command == "get" || command == "health";
}

// Everything that can be rejected without a server is, so that a typo never costs a queued run.
absl::StatusOr<OutputOptions> ParseOutputOptions(const Invocation& inv) {
  absl::StatusOr<OutputFormat> format = ParseOutputFormat(inv.format);
  if (!format.ok()) return format.status();
  if (!PrintsEveryFormat(inv.command) && *format != OutputFormat::kTable &&
      *format != OutputFormat::kJson) {
    return absl::InvalidArgumentError(
        absl::StrCat("--format: ", inv.command, " prints table or json, not ", inv.format));
  }
  return OutputOptions{*format, inv.out_path};
}

int Dispatch(const Invocation& inv, Streams streams) {
  absl::StatusOr<OutputOptions> output = ParseOutputOptions(inv);
  if (!output.ok()) {
    PrintError(streams.err, output.status());
    return kExitError;
  }
  v1::SweepSpec spec;
  if (inv.command == "run" || inv.command == "sweep") {
    absl::StatusOr<v1::SweepSpec> built = BuildSweepSpec(inv.sweep);
    if (!built.ok()) {
      PrintError(streams.err, built.status());
      return kExitError;
    }
    spec = *std::move(built);
  }
  if (inv.command == "tune") {
    absl::StatusOr<v1::SweepSpec> built = BuildTuneSpec(inv.tune);
    if (!built.ok()) {
      PrintError(streams.err, built.status());
      return kExitError;
    }
    spec = *std::move(built);
  }
  v1::HealthRequest health;
  if (inv.command == "health") {
    absl::StatusOr<v1::HealthRequest> built = BuildHealthRequest(inv.health);
    if (!built.ok()) {
      PrintError(streams.err, built.status());
      return kExitError;
    }
    health = *std::move(built);
  }
  uint32_t limit = 0;
  if (inv.limit.has_value()) {
    absl::StatusOr<uint32_t> parsed = ParseUint32Flag("--limit", *inv.limit);
    if (!parsed.ok()) {
      PrintError(streams.err, parsed.status());
      return kExitError;
    }
    limit = *parsed;
  }

  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(inv.connection);
  if (!client.ok()) {
    PrintError(streams.err, client.status());
    return kExitError;
  }
  Client& c = **client;
  if (inv.command == "devices") return DevicesCommand(c, *output, streams);
  if (inv.command == "run") return RunCommand(c, spec, *output, streams);
  if (inv.command == "sweep") return SweepCommand(c, spec, *output, streams);
  if (inv.command == "get") return GetCommand(c, inv.run_id, *output, streams);
  if (inv.command == "runs") return RunsCommand(c, limit, *output, streams);
  if (inv.command == "cancel") return CancelCommand(c, inv.run_id, streams);
  if (inv.command == "health") return HealthCommand(c, health, *output, streams);
  if (inv.command == "tune") return TuneCommand(c, spec, *output, streams);
  PrintError(streams.err, absl::InternalError(absl::StrCat("unhandled command ", inv.command)));
  return kExitError;
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::variant<Invocation, int> parsed = ParseCommandLine(args, out, err);
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  return Dispatch(std::get<Invocation>(parsed), Streams{out, err});
}

}  // namespace colltest::client
