// Human-facing table of a run: one row per case, worst news in the status and message columns.
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/format.h"
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

}  // namespace colltest::client
