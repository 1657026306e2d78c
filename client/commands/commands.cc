#include "client/commands/commands.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "client/commands/command_support.h"
#include "client/commands/exit_code.h"
#include "client/commands/hints.h"
#include "client/commands/output.h"
#include "client/commands/progress.h"
#include "client/commands/sweep_progress.h"
#include "client/format/result_view.h"
#include "client/format/tune.h"
#include "common/defaults.h"
#include "common/names.h"

namespace colltest::client {
namespace {

TableWidth TableWidthOf(const OutputOptions& output) {
  return output.wide ? TableWidth::kWide : TableWidth::kFit;
}

// A run's report is written even when its verdict is bad: that is when CI needs it most.
int ReportRun(const v1::RunResult& run, const OutputOptions& output, Streams streams) {
  if (int code = WriteOrFail(streams, FormatRun(run, output.format, TableWidthOf(output)), output);
      code != kExitOk) {
    return code;
  }
  if (RunAborted(run.state())) {
    streams.err << "colltest: run " << run.run_id() << " " << common::RunStateName(run.state())
                << (run.message().empty() ? "" : ": ") << run.message() << "\n";
  }
  return ExitCodeForRun(run);
}

// The run's report with its comparison (--compare-baseline). The comparison is asked for before
// anything is written, since JSON and JUnit hold both in one document.
int ReportRunWithComparison(Client& client, const v1::RunResult& run, v1::CompareRequest request,
                            const OutputOptions& output, Streams streams) {
  request.set_run_b(run.run_id());
  absl::StatusOr<v1::CompareResponse> comparison = client.Compare(request);
  if (!comparison.ok()) {
    // The run happened: its report is still due, and the failed comparison sets the exit code.
    WriteOrFail(streams, FormatRun(run, output.format, TableWidthOf(output)), output);
    return Fail(streams, comparison.status(), output);
  }
  if (int code = WriteOrFail(
          streams, FormatRunWithComparison(run, *comparison, output.format, TableWidthOf(output)),
          output);
      code != kExitOk) {
    return code;
  }
  // Outside the table on a terminal, the verdict would otherwise only be inside a document.
  if (output.format != OutputFormat::kTable || !output.out_path.empty()) {
    streams.err << "colltest: comparison: " << comparison->message() << "\n";
  }
  return ExitCodeForRunAndComparison(ExitCodeForRun(run), *comparison);
}

int ReportRun(Client& client, const v1::RunResult& run,
              const std::optional<v1::CompareRequest>& compare, const OutputOptions& output,
              Streams streams) {
  if (!compare.has_value()) return ReportRun(run, output, streams);
  // A run that did not complete would show every case it skipped as missing: not compared.
  if (RunAborted(run.state())) {
    const int code = ReportRun(run, output, streams);
    streams.err << "colltest: no comparison with the baseline: the run did not complete\n";
    return code;
  }
  return ReportRunWithComparison(client, run, *compare, output, streams);
}

}  // namespace

absl::Duration HealthDeadline(uint32_t timeout_ms, v1::HealthLevel level) {
  // HealthRequest.timeout_ms 0 means the default on the server too.
  const uint32_t case_ms = timeout_ms == 0 ? kDefaultCaseTimeoutMs : timeout_ms;
  // The deeper levels run more cases: every pair and a stress (standard), long stresses and a
  // bandwidth case per pair (long; 25-37 s on 4 cpu ranks, minutes on 8 GPUs).
  const absl::Duration floor = level == v1::HEALTH_LEVEL_LONG       ? absl::Minutes(30)
                               : level == v1::HEALTH_LEVEL_STANDARD ? absl::Minutes(10)
                                                                    : absl::Seconds(120);
  const int multiple = level == v1::HEALTH_LEVEL_LONG       ? 400
                       : level == v1::HEALTH_LEVEL_STANDARD ? 120
                                                            : 40;
  return std::max(floor, multiple * absl::Milliseconds(case_ms));
}

int DevicesCommand(Client& client, const OutputOptions& output, Streams streams) {
  absl::StatusOr<v1::ListDevicesResponse> devices = client.ListDevices();
  if (!devices.ok()) return FailWithoutResult(streams, devices.status(), output);
  return WriteOrFail(streams, FormatDevices(*devices, output.format), output);
}

namespace {

// `run` and `sweep`: the Sweep stream with its progress in `style`, then the run's report.
int StreamRun(Client& client, const v1::SweepSpec& spec,
              const std::optional<v1::CompareRequest>& compare, const OutputOptions& output,
              Streams streams, SweepProgressStyle style) {
  SweepCollector collector(&streams.err, ExpectedCaseCount(spec),
                           {.mode = ProgressModeFor(output, streams.err),
                            .style = style,
                            .plan = spec,
                            .color = ColorFor(output, streams.err)});
  absl::Status status =
      client.Sweep(spec, [&](const v1::SweepEvent& event) { collector.OnEvent(event); });
  // Whatever follows on stderr (an error, a warning) starts on a line of its own.
  collector.Finish();
  if (!status.ok()) return FailWithoutResult(streams, status, output);
  if (!collector.has_summary()) {
    // What streamed is still reported, but a run without its summary is not a complete verdict.
    WriteOrFail(streams, FormatRun(collector.Result(), output.format, TableWidthOf(output)),
                output);
    return Fail(streams, absl::DataLossError("the sweep stream ended without a summary"));
  }
  return ReportRun(client, collector.Result(), compare, output, streams);
}

}  // namespace

int RunCommand(Client& client, const v1::SweepSpec& spec,
               const std::optional<v1::CompareRequest>& compare, const OutputOptions& output,
               Streams streams) {
  // Streamed like `sweep` so that a long run shows how far it got; only the progress differs.
  return StreamRun(client, spec, compare, output, streams, SweepProgressStyle::kStatusLine);
}

int SweepCommand(Client& client, const v1::SweepSpec& spec,
                 const std::optional<v1::CompareRequest>& compare, const OutputOptions& output,
                 Streams streams) {
  return StreamRun(client, spec, compare, output, streams, SweepProgressStyle::kCaseLines);
}

int GetCommand(Client& client, const std::string& run_id, const OutputOptions& output,
               Streams streams) {
  absl::StatusOr<v1::RunResult> run = client.GetRun(run_id);
  if (!run.ok()) return FailWithoutResult(streams, run.status(), output);
  return ReportRun(*run, output, streams);
}

int CancelCommand(Client& client, const std::string& run_id, Streams streams) {
  absl::StatusOr<v1::CancelResponse> response = client.Cancel(run_id);
  if (!response.ok()) {
    // `cancel` has no output options; the client knows the address it asked.
    OutputOptions output;
    output.server = client.server();
    return Fail(streams, response.status(), output);
  }
  streams.out << "run " << run_id << " cancelled (was " << common::RunStateName(response->state())
              << ")\n";
  return kExitOk;
}

namespace {

// One unary call that may take minutes: a line that says it is still waiting, and until when.
std::optional<TickingLine> HealthProgress(const v1::HealthRequest& request, absl::Duration deadline,
                                          const OutputOptions& output, Streams streams) {
  const ProgressMode mode = ProgressModeFor(output, streams.err);
  if (mode == ProgressMode::kOff) return std::nullopt;
  // Redrawn every second on a terminal; a log gets a line every 10 s, enough to show it is alive.
  const absl::Duration period =
      mode == ProgressMode::kTerminal ? absl::Seconds(1) : absl::Seconds(10);
  const std::string level(HealthLevelName(request.level()));
  const int64_t deadline_s = absl::ToInt64Seconds(deadline);
  return std::optional<TickingLine>(
      std::in_place, &streams.err, mode, period, [level, deadline_s](absl::Duration elapsed) {
        return absl::StrFormat("health: level %s, %.1f s elapsed, deadline %d s", level,
                               absl::ToDoubleSeconds(elapsed), deadline_s);
      });
}

}  // namespace

int HealthCommand(Client& client, const v1::HealthRequest& request, const OutputOptions& output,
                  Streams streams) {
  const absl::Duration deadline = HealthDeadline(request.timeout_ms(), request.level());
  std::optional<TickingLine> progress = HealthProgress(request, deadline, output, streams);
  absl::StatusOr<v1::HealthResponse> health = client.Health(request, deadline);
  progress.reset();  // the line ends before the report or the error
  // Without a connection by then, it is explained like an unreachable server, not a stuck check.
  if (absl::IsDeadlineExceeded(health.status()) && !IsNotConnected(health.status())) {
    // gRPC's own text ("Deadline Exceeded") does not say which deadline or how to lengthen it.
    return FailWithoutResult(
        streams,
        absl::DeadlineExceededError(
            absl::StrCat("no health verdict within ", absl::FormatDuration(deadline),
                         " (the level's floor, or a multiple of --timeout: docs/health-levels.md): "
                         "the server may be stuck: ",
                         health.status().message())),
        output);
  }
  if (!health.ok()) return FailWithoutResult(streams, health.status(), output);
  if (int code = WriteOrFail(streams, FormatHealth(*health, output.format), output);
      code != kExitOk) {
    return code;
  }
  // Exit 5 alone does not say why; in JSON or JUnit the reason is inside a document.
  if (health->busy()) {
    streams.err << "colltest: BUSY: nothing was checked: " << health->busy_reason() << "\n";
  }
  return ExitCodeForHealth(*health);
}

int TuneCommand(Client& client, const v1::SweepSpec& spec, const OutputOptions& output,
                Streams streams) {
  // Asked before the sweep: an unreachable server then fails before a long run is queued.
  absl::StatusOr<v1::ListDevicesResponse> devices = client.ListDevices();
  if (!devices.ok()) return Fail(streams, devices.status(), output);
  SweepCollector collector(&streams.err, ExpectedCaseCount(spec),
                           {.mode = ProgressModeFor(output, streams.err),
                            .plan = spec,
                            .color = ColorFor(output, streams.err)});
  absl::Status status =
      client.Sweep(spec, [&](const v1::SweepEvent& event) { collector.OnEvent(event); });
  collector.Finish();
  if (!status.ok()) return Fail(streams, status, output);
  // A partial run would make a table whose missing rows look measured-and-failed; `auto` would
  // then dispatch from it, so nothing is written.
  if (!collector.has_summary()) {
    return Fail(streams, absl::DataLossError(
                             "the sweep stream ended without a summary: no tune table written"));
  }
  const v1::RunResult run = collector.Result();
  if (RunAborted(run.state())) {
    streams.err << "colltest: run " << run.run_id() << " " << common::RunStateName(run.state())
                << (run.message().empty() ? "" : ": ") << run.message()
                << ": no tune table written\n";
    return kExitError;
  }
  const TuneTable table = BuildTuneTable(spec, run, *devices, absl::ToUnixMillis(absl::Now()));
  for (const DroppedTuneRow& row : table.dropped) {
    streams.err << "colltest: warning: " << DroppedRowWarning(row) << "\n";
  }
  if (table.rows.empty()) {
    return Fail(streams,
                absl::FailedPreconditionError(absl::StrCat(
                    "run ", run.run_id(), ": no m had an OK variant: no tune table written")));
  }
  streams.out << FormatTune(table, output.format);
  streams.out.flush();
  if (!output.out_path.empty()) {
    // A folder gets the table under its default name, which the user has not seen: say it.
    std::error_code error;
    const bool folder = std::filesystem::is_directory(output.out_path, error);
    const std::string path =
        folder ? (std::filesystem::path(output.out_path) / TuneTableFileName(table)).string()
               : output.out_path;
    absl::Status written = WriteOutput(FormatTuneJson(table), path, streams.out);
    if (!written.ok()) return Fail(streams, written);
    if (folder && !output.quiet) streams.err << "colltest: tune table written to " << path << "\n";
  }
  return ExitCodeForRun(run);
}

}  // namespace colltest::client
