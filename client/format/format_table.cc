// Human-facing tables of a run (one row per case) and of a health check (one row per rank and per
// pair), worst news in the status and message columns.
#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/format/format.h"
#include "client/format/format_groups.h"
#include "client/format/quant_view.h"
#include "client/format/result_view.h"
#include "client/format/text_table.h"
#include "common/names.h"
#include "common/text.h"

namespace colltest::client {
namespace {

// A case that never timed (HANG, ERROR, UNSUPPORTED) has zeros; a dash reads as "no data" where
// 0.0 would read as "infinitely fast".
std::string Measured(double value) {
  return value > 0 ? absl::StrFormat("%.1f", value) : std::string("-");
}

// Bus bandwidth is only measured at level long, and only on pairs: no columns of dashes elsewhere.
bool HasBandwidth(const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets) {
  for (const v1::HealthTarget& t : targets) {
    if (t.busbw_gbps() > 0 || t.expected_busbw_gbps() > 0) return true;
  }
  return false;
}

// A WARN says which kind: too slow against the other targets, or below the machine's figure.
std::string WarnCell(const v1::HealthTarget& t) {
  if (t.slow() && t.below_expected()) return "WARN slow,busbw";
  if (t.slow()) return "WARN slow";
  if (t.below_expected()) return "WARN busbw";
  return "";
}

std::string TargetTable(const std::string& title,
                        const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets) {
  using Align = TextTable::Align;
  const bool bandwidth = HasBandwidth(targets);
  std::vector<TextTable::Column> columns = {
      {title, Align::kLeft},
      {"status", Align::kLeft},
      {"latency us", Align::kRight},
      {"x median", Align::kRight},
  };
  if (bandwidth) {
    columns.push_back({"busbw GB/s", Align::kRight});
    columns.push_back({"expected GB/s", Align::kRight});
  }
  for (const char* name : {"warn", "suspect", "phase", "message"}) {
    columns.push_back({name, std::string(name) == "suspect" ? Align::kRight : Align::kLeft});
  }
  TextTable table(std::move(columns));
  for (const v1::HealthTarget& t : targets) {
    const int32_t suspect = SuspectDevice(t);
    std::vector<std::string> row = {
        TargetDevices(t),
        std::string(common::CaseStatusName(t.status())),
        Measured(t.latency_us()),
        t.median_ratio() > 0 ? absl::StrFormat("%.2f", t.median_ratio()) : std::string("-"),
    };
    if (bandwidth) {
      row.push_back(Measured(t.busbw_gbps()));
      row.push_back(Measured(t.expected_busbw_gbps()));
    }
    row.insert(row.end(),
               {WarnCell(t), suspect >= 0 ? absl::StrCat(suspect) : "", t.phase(), t.message()});
    table.AddRow(std::move(row));
  }
  return table.Render();
}

// "5m12s": whole seconds are enough to tell a fresh verdict from a stale one.
std::string Age(const v1::HealthResponse& health, absl::Time now) {
  return absl::FormatDuration(absl::Trunc(HealthVerdictAge(health, now), absl::Seconds(1)));
}

// The line starts with the status scripts grep for; colltestd's verdict usually leads with it
// already ("HANG: rank 1 ..."), and saying it twice reads like a stutter.
std::string VerdictLine(const v1::HealthResponse& health) {
  const absl::string_view status = common::CaseStatusName(health.status());
  if (absl::StartsWith(health.message(), status)) return absl::StrCat(health.message(), "\n");
  return absl::StrCat(status, health.message().empty() ? "" : ": ", health.message(), "\n");
}

// A BUSY answer leads with BUSY, the news of this call; the verdict it carries is an earlier one.
// The reason names other users' processes and the self test echoes what it found: escaped like
// table cells, so that neither can drive the terminal.
std::string HealthHeader(const v1::HealthResponse& health, absl::Time now) {
  std::string out;
  if (health.busy()) {
    absl::StrAppend(&out, "BUSY", health.busy_reason().empty() ? "" : ": ",
                    common::EscapeForTerminal(health.busy_reason()), "\n");
    absl::StrAppend(&out, health.status() == v1::CASE_STATUS_UNSPECIFIED
                              ? "no earlier verdict on these devices\n"
                              : absl::StrCat("last verdict: ", VerdictLine(health)));
  } else {
    out = VerdictLine(health);
  }
  absl::StrAppend(&out, "level ", HealthLevelName(health.level()),
                  health.cached() ? ", cached" : "");
  if ((health.cached() || health.busy()) && health.verdict_unix_ms() > 0) {
    absl::StrAppend(&out, ", verdict ", Age(health, now), " old");
  }
  out += "\n";
  const v1::HealthSelfTest& self_test = health.self_test();
  if (self_test.ran()) {
    absl::StrAppend(&out, "self test: ", self_test.passed() ? "PASSED" : "FAILED",
                    self_test.fault().empty() ? "" : absl::StrCat(" (", self_test.fault(), ")"),
                    self_test.message().empty() ? "" : ": ",
                    common::EscapeForTerminal(self_test.message()), "\n");
  } else if (!self_test.message().empty()) {
    absl::StrAppend(&out, "self test: not run: ", common::EscapeForTerminal(self_test.message()),
                    "\n");
  }
  absl::StrAppend(&out, MachineIdentityLine(health.machine()));
  return out;
}

std::string HealthFooter(const v1::HealthResponse& health, absl::Time now) {
  const absl::string_view status = common::CaseStatusName(health.status());
  if (health.busy()) {
    return health.status() == v1::CASE_STATUS_UNSPECIFIED
               ? "health: BUSY, nothing checked\n"
               : absl::StrCat("health: BUSY, nothing checked (last verdict ", status, ")\n");
  }
  std::string out =
      absl::StrFormat("health: %s in %.1f s (%d %s)", status, health.wall_ms() / 1000.0,
                      health.cases_size(), health.cases_size() == 1 ? "case" : "cases");
  if (health.cached()) {
    absl::StrAppend(
        &out, ", cached",
        health.verdict_unix_ms() > 0 ? absl::StrCat(", ", Age(health, now), " old") : "");
  }
  return out + "\n";
}

// The run table of --wide: every column, every figure and message in full. Otherwise rows fit
// kFitWidth columns: what is the same for every case goes to the header line instead of a
// column, p10/p90 are left out and the message is cut as short as it takes: the figures are the
// table's news, and --wide has the whole message.
constexpr size_t kFitWidth = 120;
constexpr size_t kMinMessageWidth = 0;

struct RunLayout {
  bool wide = false;
  // Columns for what differs between cases (always, with --wide).
  bool world = false;
  bool dtype = false;
  bool pattern = false;
  // Some case quantised its output: an epilogue column, and a quant column for its codes.
  bool epilogue = false;
  // The ranks shared a GPU: the bandwidth titles carry a "*" that the note under the header
  // explains.
  bool shared_gpu = false;
};

template <typename Field>
bool Varies(const v1::RunResult& run, Field field) {
  for (const v1::CaseResult& c : run.cases()) {
    if (field(c) != field(run.cases(0))) return true;
  }
  return false;
}

RunLayout LayoutOf(const v1::RunResult& run, TableWidth width) {
  RunLayout layout;
  layout.wide = width == TableWidth::kWide;
  layout.world = layout.wide || Varies(run, [](const v1::CaseResult& c) { return c.world_size(); });
  // Compared by name: an unset dtype is bf16 and an unset pattern normal, as on the server.
  layout.dtype = layout.wide ||
                 Varies(run, [](const v1::CaseResult& c) { return common::DTypeName(c.dtype()); });
  layout.pattern = layout.wide || Varies(run, [](const v1::CaseResult& c) {
                     return common::PatternName(c.pattern());
                   });
  layout.epilogue = AnyQuantisingEpilogue(run);
  layout.shared_gpu = SharedGpu(run);
  return layout;
}

// "run r-42  backend cpu  state DONE  world 2  dtype bf16  pattern normal": the figures shared by
// every case, so that they need no column.
std::string RunHeader(const v1::RunResult& run, const RunLayout& layout) {
  std::string out = absl::StrCat("run ", run.run_id(), "  backend ", run.backend(), "  state ",
                                 common::RunStateName(run.state()));
  if (!run.cases().empty()) {
    const v1::CaseResult& first = run.cases(0);
    if (!layout.world) absl::StrAppend(&out, "  world ", first.world_size());
    if (!layout.dtype) absl::StrAppend(&out, "  dtype ", common::DTypeName(first.dtype()));
    if (!layout.pattern) absl::StrAppend(&out, "  pattern ", common::PatternName(first.pattern()));
  }
  return out + "\n";
}

// Bytes per rank in units of 1024: "896", "512K", "14M" when whole, one decimal otherwise
// ("1.5K", "13.7M"), so that a wide range stays narrow. --wide gives the exact count.
std::string HumanBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"K", "M", "G", "T", "P", "E"};
  if (bytes < 1024) return absl::StrCat(bytes);
  int unit = 0;
  uint64_t scale = 1024;
  while (unit + 1 < 6 && bytes / scale >= 1024) {
    scale *= 1024;
    ++unit;
  }
  if (bytes % scale == 0) return absl::StrCat(bytes / scale, kUnits[unit]);
  return absl::StrFormat("%.1f%s", static_cast<double>(bytes) / static_cast<double>(scale),
                         kUnits[unit]);
}

// Two decimals: a cpu backend's 0.03 GB/s must not read as 0.0. A dash where nothing was timed.
std::string Bandwidth(double gbps) {
  return gbps > 0 ? absl::StrFormat("%.2f", gbps) : std::string("-");
}

// Whether the case's output was compared: a HANG, an ERROR or an UNSUPPORTED case has zeros
// that would read as "no mismatches".
bool Checked(const v1::CaseResult& c) {
  return c.status() == v1::CASE_STATUS_OK || c.status() == v1::CASE_STATUS_WRONG ||
         c.diff().checked() > 0 || c.diff().mismatches() > 0;
}

std::vector<TextTable::Column> RunColumns(const RunLayout& layout) {
  using Align = TextTable::Align;
  std::vector<TextTable::Column> columns = {
      {"m", Align::kRight},      {"n", Align::kRight},   {"bytes", Align::kRight},
      {"variant", Align::kLeft}, {"mode", Align::kLeft},
  };
  if (layout.world) columns.push_back({"W", Align::kRight});
  if (layout.dtype) columns.push_back({"dtype", Align::kLeft});
  if (layout.pattern) columns.push_back({"pattern", Align::kLeft});
  if (layout.epilogue) columns.push_back({"epilogue", Align::kLeft});
  columns.push_back({"median\n(us)", Align::kRight});
  if (layout.wide) {
    columns.push_back({"p10\n(us)", Align::kRight});
    columns.push_back({"p90\n(us)", Align::kRight});
  }
  const bool shared = layout.shared_gpu;
  for (const char* title :
       {shared ? "algbw*\n(GB/s)" : "algbw\n(GB/s)", shared ? "busbw*\n(GB/s)" : "busbw\n(GB/s)",
        "mismatches", "max\nulp"}) {
    columns.push_back({title, Align::kRight});
  }
  if (layout.epilogue) columns.push_back({"quant", Align::kLeft});
  columns.push_back({"status", Align::kLeft});
  columns.push_back({"message", Align::kLeft});
  return columns;
}

std::vector<std::string> RunRow(const v1::CaseResult& c, const RunLayout& layout) {
  const uint64_t bytes = CaseBytes(c);
  std::vector<std::string> row = {
      absl::StrCat(c.m()),
      absl::StrCat(c.n()),
      layout.wide ? absl::StrCat(bytes) : HumanBytes(bytes),
      VariantLabel(c),
      std::string(common::ModeName(c.mode())),
  };
  if (layout.world) row.push_back(absl::StrCat(c.world_size()));
  if (layout.dtype) row.emplace_back(common::DTypeName(c.dtype()));
  if (layout.pattern) row.emplace_back(common::PatternName(c.pattern()));
  if (layout.epilogue) row.push_back(EpilogueLabel(c));
  row.push_back(Measured(c.timing().median_us()));
  if (layout.wide) {
    row.push_back(Measured(c.timing().p10_us()));
    row.push_back(Measured(c.timing().p90_us()));
  }
  const bool checked = Checked(c);
  row.insert(row.end(), {Bandwidth(c.algbw_gbps()), Bandwidth(c.busbw_gbps()),
                         checked ? absl::StrCat(c.diff().mismatches()) : "-",
                         checked ? absl::StrCat(c.diff().max_ulp()) : "-"});
  if (layout.epilogue) row.push_back(QuantisingEpilogue(c) ? QuantCell(c.quant()) : "-");
  row.insert(row.end(), {std::string(common::CaseStatusName(c.status())), c.message()});
  return row;
}

// As nccl-tests ends its table: the mean bus bandwidth, here of the OK cases that have one (a
// WRONG case's speed is no achievement), with how many it averages.
std::string AverageBusBandwidthLine(const v1::RunResult& run) {
  double sum = 0;
  int count = 0;
  for (const v1::CaseResult& c : run.cases()) {
    if (c.status() != v1::CASE_STATUS_OK || c.busbw_gbps() <= 0) continue;
    sum += c.busbw_gbps();
    ++count;
  }
  if (count == 0) return "# avg bus bandwidth: - (no OK case with a bus bandwidth)";
  // Ranks that shared a GPU crossed no link: the figure is theirs, not the machine's.
  const char* caveat = !SharedGpu(run)     ? ""
                       : run.time_sliced() ? " (ranks share a time-sliced GPU: meaningless)"
                                           : " (ranks share a GPU: not a link figure)";
  return absl::StrFormat("# avg bus bandwidth: %.2f GB/s over %d OK %s%s", sum / count, count,
                         count == 1 ? "case" : "cases", caveat);
}

// True for "12 cases: 8 OK, 4 UNSUPPORTED" (any order of the counts), the message colltestd gives
// a finished run.
bool IsStatusCountsMessage(absl::string_view message) {
  const std::vector<absl::string_view> head_and_counts =
      absl::StrSplit(message, absl::MaxSplits(": ", 1));
  const auto count_of = [](absl::string_view item, auto is_name) {
    const std::vector<absl::string_view> words = absl::StrSplit(item, ' ');
    uint32_t count = 0;
    return words.size() == 2 && absl::SimpleAtoi(words[0], &count) && is_name(words[1]);
  };
  const auto is_cases = [](absl::string_view w) { return w == "case" || w == "cases"; };
  const auto is_status = [](absl::string_view w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
      return absl::ascii_isupper(static_cast<unsigned char>(ch)) || ch == '_';
    });
  };
  if (!count_of(head_and_counts[0], is_cases)) return false;
  if (head_and_counts.size() == 1) return true;
  for (absl::string_view item : absl::StrSplit(head_and_counts[1], ", ")) {
    if (!count_of(item, is_status)) return false;
  }
  return true;
}

}  // namespace

std::string FormatRunTable(const v1::RunResult& run, TableWidth width) {
  const RunLayout layout = LayoutOf(run, width);
  std::vector<TextTable::Column> columns = RunColumns(layout);
  const size_t message_column = columns.size() - 1;
  TextTable table(std::move(columns));
  for (const v1::CaseResult& c : run.cases()) table.AddRow(RunRow(c, layout));
  if (!layout.wide) table.FitTo(kFitWidth, message_column, kMinMessageWidth);

  // colltestd's message of a finished run is the status counts the table ends with: said once.
  const std::string counts = StatusCountsLine(CountStatuses(run));
  std::string out = RunHeader(run, layout);
  if (!run.message().empty() && !IsStatusCountsMessage(run.message())) {
    absl::StrAppend(&out, common::EscapeForTerminal(run.message()), "\n");
  }
  // Said before the figures, so that no one reads them as the machine's links.
  if (layout.shared_gpu) absl::StrAppend(&out, "* ", SharedGpuNote(run), "\n");
  absl::StrAppend(&out, table.Render(), counts, "\n", AverageBusBandwidthLine(run), "\n");
  return out;
}

std::string FormatHealthTable(const v1::HealthResponse& health) {
  return FormatHealthTableAt(health, absl::Now());
}

std::string FormatHealthTableAt(const v1::HealthResponse& health, absl::Time now) {
  std::string out = HealthHeader(health, now);
  // Pairs are only checked with --pairs, groups appear once started, and a check that failed
  // early has no ranks: no header-only tables.
  if (!health.ranks().empty()) absl::StrAppend(&out, "\n", TargetTable("device", health.ranks()));
  if (!health.pairs().empty()) absl::StrAppend(&out, "\n", TargetTable("pair", health.pairs()));
  if (!health.groups().empty()) absl::StrAppend(&out, "\n", GroupsTable(health.groups()));
  absl::StrAppend(&out, "\n", HealthFooter(health, now));
  return out;
}

}  // namespace colltest::client
