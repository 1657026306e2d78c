#include "client/app.h"

#include <functional>
#include <memory>
#include <optional>
#include <utility>
#include <variant>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/cli.h"
#include "client/commands/command_support.h"
#include "client/commands/commands.h"
#include "client/commands/exit_code.h"
#include "client/commands/output.h"
#include "client/commands/rpc.h"
#include "client/flags/compare_flags.h"
#include "client/flags/flags.h"
#include "client/flags/history.h"
#include "client/flags/suggest.h"
#include "client/fleet/fleet.h"
#include "client/fleet/fleet_targets.h"
#include "client/fleet/npd.h"
#include "client/format/format.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

// A command with every flag checked, waiting for a connection.
using Command = std::function<int(Client&, Streams)>;

// Commands whose verdict CI consumes, hence also as CSV and JUnit.
bool PrintsEveryFormat(const std::string& command) {
  return command == "run" || command == "sweep" || command == "get" || command == "health" ||
         command == "compare";
}

// Everything that can be rejected without a server is, so that a typo never costs a queued run.
absl::StatusOr<OutputOptions> ParseOutputOptions(const Invocation& inv) {
  absl::StatusOr<OutputFormat> parsed = ParseOutputFormat(inv.format);
  if (!parsed.ok()) {
    return WithSuggestion(parsed.status(), absl::StripAsciiWhitespace(inv.format),
                          {"table", "json", "csv", "junit"});
  }
  const OutputFormat format = *parsed;
  COLLTEST_ASSIGN_OR_RETURN(const ColorChoice color, ParseColorChoice(inv.color));
  const OutputOptions options{.format = format,
                              .out_path = inv.out_path,
                              .wide = inv.wide,
                              .quiet = inv.quiet,
                              .progress = inv.progress,
                              .color = color,
                              .server = inv.connection.server,
                              .command = inv.command};
  if (PrintsEveryFormat(inv.command) || format == OutputFormat::kTable ||
      format == OutputFormat::kJson) {
    return options;
  }
  if (inv.command == "history") {
    if (format == OutputFormat::kCsv) return options;
    return absl::InvalidArgumentError(absl::StrCat(
        "--format: history prints table, json or csv, not ", OutputFormatName(format)));
  }
  const std::string name = inv.command.substr(0, inv.command.find(' '));
  return absl::InvalidArgumentError(
      absl::StrCat("--format: ", name, " prints table or json, not ", inv.format));
}

// The --npd condition, with a hint for a near miss ("collectivehang").
absl::StatusOr<NpdCondition> ParseNpd(const std::string& text) {
  absl::StatusOr<NpdCondition> condition = ParseNpdCondition(text);
  if (!condition.ok()) {
    return WithSuggestion(condition.status(), text, {"CollectiveHang", "CollectiveWrong"});
  }
  return condition;
}

// The history request; an unknown --state or --variant gets a hint. Each is tried alone first, so
// that the hint goes with its own flag's message rather than with another flag's.
absl::StatusOr<v1::ListRunsRequest> BuildHistoryRequest(const HistoryFlags& flags) {
  const absl::Time now = absl::Now();
  if (flags.state.has_value()) {
    HistoryFlags alone;
    alone.state = flags.state;
    absl::StatusOr<v1::ListRunsRequest> checked = BuildListRunsRequest(alone, now);
    if (!checked.ok()) {
      return WithSuggestion(checked.status(), absl::StripAsciiWhitespace(*flags.state),
                            common::RunStateNames());
    }
  }
  if (flags.variant.has_value()) {
    HistoryFlags alone;
    alone.variant = flags.variant;
    absl::StatusOr<v1::ListRunsRequest> checked = BuildListRunsRequest(alone, now);
    if (!checked.ok()) {
      return WithSuggestion(checked.status(), absl::StripAsciiWhitespace(*flags.variant),
                            common::VariantNames());
    }
  }
  return BuildListRunsRequest(flags, now);
}

absl::StatusOr<Command> PrepareRun(const Invocation& inv, const OutputOptions& output) {
  COLLTEST_ASSIGN_OR_RETURN(const v1::SweepSpec spec, BuildSweepSpec(inv.sweep));
  COLLTEST_ASSIGN_OR_RETURN(const std::optional<v1::CompareRequest> compare,
                            BuildRunComparison(inv.compare));
  // A CSV file holds one table; the comparison is `colltest compare RUN --baseline --format csv`.
  if (compare.has_value() && output.format == OutputFormat::kCsv) {
    return absl::InvalidArgumentError(
        "--compare-baseline: prints table, json or junit, not csv (for a CSV of the comparison: "
        "colltest compare RUN_ID --baseline NAME --format csv)");
  }
  const bool sweep = inv.command == "sweep";
  // BuildSweepSpec leaves the variants empty exactly when they come from the server (or when only
  // kernel plugins were named: then they are the sweep's only kernels).
  const bool server_variants = VariantsFromServer(inv.sweep);
  return Command([=](Client& c, Streams s) {
    v1::SweepSpec sent = spec;
    // The variants the backend offers, so that the default sweep has no UNSUPPORTED rows.
    if (server_variants) {
      absl::StatusOr<v1::ListDevicesResponse> devices = c.ListDevices();
      if (!devices.ok()) return FailWithoutResult(s, devices.status(), output);
      UseServerVariants(*devices, sent);
    }
    return sweep ? SweepCommand(c, sent, compare, output, s)
                 : RunCommand(c, sent, compare, output, s);
  });
}

// `health` against --server: the report, or with --npd the one line of the NPD plugin protocol.
absl::StatusOr<Command> PrepareHealth(const Invocation& inv, const OutputOptions& output) {
  const HealthFlags& flags = inv.health;
  if (flags.npd.has_value()) {
    COLLTEST_RETURN_IF_ERROR(CheckNpdFlags(flags, output.format, output.out_path));
  }
  COLLTEST_RETURN_IF_ERROR(CheckNoFleetOnlyFlags(flags));
  COLLTEST_ASSIGN_OR_RETURN(const v1::HealthRequest request, BuildHealthRequest(flags));
  if (flags.npd.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(const NpdCondition condition, ParseNpd(*flags.npd));
    return Command([=](Client& c, Streams s) { return NpdCommand(c, condition, request, s); });
  }
  return Command([=](Client& c, Streams s) { return HealthCommand(c, request, output, s); });
}

struct FleetCheck {
  v1::HealthRequest request;
  FleetOptions options;
};

// `health --targets/--targets-file`: every flag checked and every name resolved before the first
// node is asked.
absl::StatusOr<FleetCheck> PrepareFleetCheck(const Invocation& inv, const OutputOptions& output) {
  if (inv.health.npd.has_value()) {
    COLLTEST_RETURN_IF_ERROR(CheckNpdFlags(inv.health, output.format, output.out_path));
  }
  FleetCheck check;
  COLLTEST_ASSIGN_OR_RETURN(check.request, BuildHealthRequest(inv.health));
  COLLTEST_ASSIGN_OR_RETURN(
      check.options,
      BuildFleetOptions(inv.health,
                        HealthDeadline(check.request.timeout_ms(), check.request.level()),
                        ResolveWithGetaddrinfo));
  return check;
}

absl::StatusOr<Command> PrepareHistoryAndBaselines(const Invocation& inv,
                                                   const OutputOptions& output) {
  if (inv.command == "history") {
    COLLTEST_ASSIGN_OR_RETURN(const v1::ListRunsRequest request, BuildHistoryRequest(inv.history));
    const bool all = inv.history.all;
    return Command(
        [=](Client& c, Streams s) { return HistoryCommand(c, request, all, output, s); });
  }
  if (inv.command == "compare") {
    COLLTEST_ASSIGN_OR_RETURN(const v1::CompareRequest request, BuildCompareRequest(inv.compare));
    return Command([=](Client& c, Streams s) { return CompareCommand(c, request, output, s); });
  }
  if (inv.command == "baseline set") {
    v1::SetBaselineRequest request;
    request.set_run_id(inv.run_id);
    request.set_name(inv.baseline_name);
    return Command([=](Client& c, Streams s) { return BaselineSetCommand(c, request, output, s); });
  }
  v1::ListBaselinesRequest request;
  request.set_machine_key(inv.machine_key);
  return Command([=](Client& c, Streams s) { return BaselineListCommand(c, request, output, s); });
}

absl::StatusOr<Command> Prepare(const Invocation& inv, const OutputOptions& output) {
  const std::string& command = inv.command;
  if (command == "run" || command == "sweep") return PrepareRun(inv, output);
  if (command == "tune") {
    COLLTEST_ASSIGN_OR_RETURN(const v1::SweepSpec spec, BuildTuneSpec(inv.tune));
    return Command([=](Client& c, Streams s) { return TuneCommand(c, spec, output, s); });
  }
  if (command == "health") return PrepareHealth(inv, output);
  if (command == "history" || command == "compare" || command == "baseline set" ||
      command == "baseline list") {
    return PrepareHistoryAndBaselines(inv, output);
  }
  const std::string run_id = inv.run_id;
  if (command == "devices") {
    return Command([=](Client& c, Streams s) { return DevicesCommand(c, output, s); });
  }
  if (command == "get") {
    return Command([=](Client& c, Streams s) { return GetCommand(c, run_id, output, s); });
  }
  if (command == "cancel") {
    return Command([=](Client& c, Streams s) { return CancelCommand(c, run_id, s); });
  }
  return absl::InternalError(absl::StrCat("unhandled command ", command));
}

int Dispatch(const Invocation& inv, Streams streams) {
  absl::StatusOr<OutputOptions> output = ParseOutputOptions(inv);
  if (!output.ok()) {
    PrintError(streams.err, output.status());
    return kExitError;
  }
  // A fleet check asks every node over a channel of its own instead of one --server.
  if (inv.command == "health" && IsFleetCheck(inv.health)) {
    absl::StatusOr<FleetCheck> fleet = PrepareFleetCheck(inv, *output);
    if (!fleet.ok()) {
      PrintError(streams.err, fleet.status());
      return kExitError;
    }
    return FleetHealthCommand(inv.connection, fleet->request, fleet->options, *output, streams);
  }
  absl::StatusOr<Command> command = Prepare(inv, *output);
  if (!command.ok()) {
    PrintError(streams.err, command.status());
    return kExitError;
  }
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(inv.connection);
  if (!client.ok()) {
    PrintError(streams.err, client.status());
    return kExitError;
  }
  return (*command)(**client, streams);
}

}  // namespace

int RunCli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  std::variant<Invocation, int> parsed = ParseCommandLine(args, out, err);
  if (const int* code = std::get_if<int>(&parsed)) return *code;
  return Dispatch(std::get<Invocation>(parsed), Streams{out, err});
}

}  // namespace colltest::client
