// Human-facing tables of a run (one row per case) and of a health check (one row per rank and per
// pair), worst news in the status and message columns.
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "client/format.h"
#include "client/format_groups.h"
#include "client/names.h"
#include "client/result_view.h"
#include "client/text_table.h"
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
        std::string(CaseStatusName(t.status())),
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
  const absl::string_view status = CaseStatusName(health.status());
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
  const absl::string_view status = CaseStatusName(health.status());
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

}  // namespace

std::string FormatRunTable(const v1::RunResult& run, TableWidth width) {
  (void)width;  // TODO(sizes): columns
  using Align = TextTable::Align;
  TextTable table({
      {"variant", Align::kLeft},
      {"mode", Align::kLeft},
      {"W", Align::kRight},
      {"m", Align::kRight},
      {"n", Align::kRight},
      {"dtype", Align::kLeft},
      {"status", Align::kLeft},
      {"median us", Align::kRight},
      {"p10", Align::kRight},
      {"p90", Align::kRight},
      {"busbw GB/s", Align::kRight},
      {"mismatches", Align::kRight},
      {"max ulp", Align::kRight},
      {"message", Align::kLeft},
  });
  for (const v1::CaseResult& c : run.cases()) {
    table.AddRow({
        VariantLabel(c),
        std::string(ModeName(c.mode())),
        absl::StrCat(c.world_size()),
        absl::StrCat(c.m()),
        absl::StrCat(c.n()),
        std::string(DTypeName(c.dtype())),
        std::string(CaseStatusName(c.status())),
        Measured(c.timing().median_us()),
        Measured(c.timing().p10_us()),
        Measured(c.timing().p90_us()),
        Measured(c.busbw_gbps()),
        absl::StrCat(c.diff().mismatches()),
        absl::StrCat(c.diff().max_ulp()),
        c.message(),
    });
  }

  std::string out = absl::StrCat("run ", run.run_id(), "  backend ", run.backend(), "  state ",
                                 RunStateName(run.state()), "\n");
  if (!run.message().empty()) absl::StrAppend(&out, run.message(), "\n");
  absl::StrAppend(&out, table.Render(), StatusCountsLine(CountStatuses(run)), "\n");
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
