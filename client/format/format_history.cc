// The run history (`history`, `runs`) and the baselines (`baseline set`, `baseline list`).
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/format/csv.h"
#include "client/format/format.h"
#include "client/format/format_json.h"
#include "client/format/text_table.h"
#include "common/names.h"
#include "common/text.h"

namespace colltest::client {
namespace {

absl::Status Unsupported(absl::string_view command, absl::string_view formats,
                         OutputFormat format) {
  return absl::InvalidArgumentError(
      absl::StrCat("--format: ", command, " prints ", formats, ", not ", OutputFormatName(format)));
}

// ISO 8601 in UTC ("2026-11-01T08:00:00Z"), which --since takes back.
std::string UtcTime(int64_t unix_ms) {
  if (unix_ms <= 0) return "-";
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixMillis(unix_ms), absl::UTCTimeZone());
}

std::vector<std::string> VariantNames(const v1::RunSummary& r) {
  std::vector<std::string> names;
  for (int v : r.variants()) names.emplace_back(common::VariantName(static_cast<v1::Variant>(v)));
  return names;
}

std::string RunsJson(const v1::ListRunsResponse& runs) {
  Json list = Json::array();
  for (const v1::RunSummary& r : runs.runs()) {
    Json run = Json::object();
    run["run_id"] = r.run_id();
    run["state"] = std::string(common::RunStateName(r.state()));
    run["cases"] = r.cases();
    run["ok"] = r.ok();
    run["failed"] = r.failed();
    run["created_unix_ms"] = r.created_unix_ms();
    run["owner"] = r.owner();
    run["label"] = r.label();
    run["finished_unix_ms"] = r.finished_unix_ms();
    run["backend"] = r.backend();
    run["variants"] = VariantNames(r);
    run["machine_key"] = r.machine_key();
    run["hostname"] = r.hostname();
    list.push_back(std::move(run));
  }
  Json out = DocumentJson("colltest.history");
  out["runs"] = std::move(list);
  out["next_page_token"] = runs.next_page_token();
  return DumpJson(out);
}

std::string RunsCsv(const v1::ListRunsResponse& runs) {
  std::string out =
      "run_id,created,created_unix_ms,state,cases,ok,failed,label,owner,hostname,backend,"
      "machine_key,variants\n";
  for (const v1::RunSummary& r : runs.runs()) {
    const std::vector<std::string> row = {
        CsvField(r.run_id()),
        r.created_unix_ms() > 0 ? UtcTime(r.created_unix_ms()) : "",
        CsvFigure(r.created_unix_ms(), r.created_unix_ms() > 0),
        std::string(common::RunStateName(r.state())),
        absl::StrCat(r.cases()),
        absl::StrCat(r.ok()),
        absl::StrCat(r.failed()),
        CsvField(r.label()),
        CsvField(r.owner()),
        CsvField(r.hostname()),
        CsvField(r.backend()),
        CsvField(r.machine_key()),
        absl::StrJoin(VariantNames(r), ";"),
    };
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

std::string RunsTable(const v1::ListRunsResponse& runs) {
  using Align = TextTable::Align;
  TextTable table({{"run_id", Align::kLeft},
                   {"created (UTC)", Align::kLeft},
                   {"state", Align::kLeft},
                   {"cases", Align::kRight},
                   {"ok", Align::kRight},
                   {"failed", Align::kRight},
                   {"label", Align::kLeft},
                   {"owner", Align::kLeft},
                   {"host", Align::kLeft}});
  for (const v1::RunSummary& r : runs.runs()) {
    table.AddRow({r.run_id(), UtcTime(r.created_unix_ms()),
                  std::string(common::RunStateName(r.state())), absl::StrCat(r.cases()),
                  absl::StrCat(r.ok()), absl::StrCat(r.failed()), r.label(), r.owner(),
                  r.hostname()});
  }
  std::string out = table.Render();
  if (!runs.next_page_token().empty()) {
    absl::StrAppend(&out, "more runs: --page-token ",
                    common::EscapeForTerminal(runs.next_page_token()), "\n");
  }
  return out;
}

Json BaselineJson(const v1::Baseline& b) {
  Json out = Json::object();
  out["name"] = b.name();
  out["machine_key"] = b.machine_key();
  out["hostname"] = b.hostname();
  out["run_id"] = b.run_id();
  out["set_unix_ms"] = b.set_unix_ms();
  out["set_by"] = b.set_by();
  return out;
}

}  // namespace

absl::StatusOr<std::string> FormatRuns(const v1::ListRunsResponse& runs, OutputFormat format) {
  switch (format) {
    case OutputFormat::kTable:
      return RunsTable(runs);
    case OutputFormat::kJson:
      return RunsJson(runs);
    case OutputFormat::kCsv:
      return RunsCsv(runs);
    case OutputFormat::kJunit:
      break;
  }
  return Unsupported("history", "table, json or csv", format);
}

absl::StatusOr<std::string> FormatBaseline(const v1::Baseline& baseline, OutputFormat format) {
  if (format == OutputFormat::kJson) {
    Json out = DocumentJson("colltest.baseline");
    out.update(BaselineJson(baseline));
    return DumpJson(out);
  }
  if (format != OutputFormat::kTable) return Unsupported("baseline", "table or json", format);
  return common::EscapeForTerminal(
             absl::StrCat("baseline ", baseline.name(), " of ", baseline.hostname(), " (key ",
                          baseline.machine_key(), ") = ", baseline.run_id())) +
         "\n";
}

absl::StatusOr<std::string> FormatBaselines(const v1::ListBaselinesResponse& baselines,
                                            OutputFormat format) {
  if (format == OutputFormat::kJson) {
    Json list = Json::array();
    for (const v1::Baseline& b : baselines.baselines()) list.push_back(BaselineJson(b));
    Json out = DocumentJson("colltest.baselines");
    out["baselines"] = std::move(list);
    return DumpJson(out);
  }
  if (format != OutputFormat::kTable) return Unsupported("baseline", "table or json", format);
  using Align = TextTable::Align;
  TextTable table({{"name", Align::kLeft},
                   {"host", Align::kLeft},
                   {"machine key", Align::kLeft},
                   {"run_id", Align::kLeft},
                   {"set (UTC)", Align::kLeft},
                   {"set by", Align::kLeft}});
  for (const v1::Baseline& b : baselines.baselines()) {
    table.AddRow({b.name(), b.hostname(), b.machine_key(), b.run_id(), UtcTime(b.set_unix_ms()),
                  b.set_by()});
  }
  return table.Render();
}

}  // namespace colltest::client
