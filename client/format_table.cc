// Human-facing tables of a run (one row per case) and of a health check (one row per rank and per
// pair), worst news in the status and message columns.
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/format.h"
#include "client/format_groups.h"
#include "client/names.h"
#include "client/result_view.h"
#include "client/text_table.h"

namespace colltest::client {
namespace {

// A case that never timed (HANG, ERROR, UNSUPPORTED) has zeros; a dash reads as "no data" where
// 0.0 would read as "infinitely fast".
std::string Measured(double value) {
  return value > 0 ? absl::StrFormat("%.1f", value) : std::string("-");
}

std::string TargetTable(const std::string& title,
                        const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets) {
  using Align = TextTable::Align;
  TextTable table({
      {title, Align::kLeft},
      {"status", Align::kLeft},
      {"latency us", Align::kRight},
      {"x median", Align::kRight},
      {"warn", Align::kLeft},
      {"suspect", Align::kRight},
      {"phase", Align::kLeft},
      {"message", Align::kLeft},
  });
  for (const v1::HealthTarget& t : targets) {
    const int32_t suspect = SuspectDevice(t);
    table.AddRow({
        TargetDevices(t),
        std::string(CaseStatusName(t.status())),
        Measured(t.latency_us()),
        t.median_ratio() > 0 ? absl::StrFormat("%.2f", t.median_ratio()) : std::string("-"),
        t.slow() ? "WARN" : "",
        suspect >= 0 ? absl::StrCat(suspect) : "",
        t.phase(),
        t.message(),
    });
  }
  return table.Render();
}

}  // namespace

std::string FormatRunTable(const v1::RunResult& run) {
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
  const absl::string_view status = CaseStatusName(health.status());
  // The line starts with the status scripts grep for; colltestd's verdict usually leads with it
  // already ("HANG: rank 1 ..."), and saying it twice reads like a stutter.
  std::string out =
      absl::StartsWith(health.message(), status)
          ? absl::StrCat(health.message(), "\n")
          : absl::StrCat(status, health.message().empty() ? "" : ": ", health.message(), "\n");
  // Pairs are only checked with --pairs, groups appear once started, and a check that failed
  // early has no ranks: no header-only tables.
  if (!health.ranks().empty()) absl::StrAppend(&out, "\n", TargetTable("device", health.ranks()));
  if (!health.pairs().empty()) absl::StrAppend(&out, "\n", TargetTable("pair", health.pairs()));
  if (!health.groups().empty()) absl::StrAppend(&out, "\n", GroupsTable(health.groups()));
  absl::StrAppend(
      &out, absl::StrFormat("\nhealth: %s in %.1f s (%d %s)\n", status, health.wall_ms() / 1000.0,
                            health.cases_size(), health.cases_size() == 1 ? "case" : "cases"));
  return out;
}

}  // namespace colltest::client
