// The comparison of two runs as a table for people and as CSV for spreadsheets.
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format/csv.h"
#include "client/format/format.h"
#include "client/format/quant_view.h"
#include "client/format/text_table.h"
#include "common/names.h"
#include "common/text.h"

namespace colltest::client {
namespace {

bool HasSideA(const v1::CaseComparison& c) { return c.verdict() != v1::COMPARE_VERDICT_ONLY_B; }
bool HasSideB(const v1::CaseComparison& c) { return c.verdict() != v1::COMPARE_VERDICT_ONLY_A; }

// A case that did not time (or is missing from that run) shows a dash, not "0.00".
std::string Median(const v1::TimingStats& t) {
  return t.median_us() > 0 ? absl::StrFormat("%.2f", t.median_us()) : std::string("-");
}

std::string Change(double ratio) {
  return ratio > 0 ? absl::StrFormat("%+.1f %%", (ratio - 1) * 100) : std::string("-");
}

// "gpu-7 cuda 8 x NVIDIA H200, driver 13.0, runtime 12.8, colltest 0.1.0 (3d57ade), key 9f2c":
// what changes between two runs of one machine (a driver or colltest upgrade) is visible here.
std::string MachineLine(const v1::MachineIdentity& m) {
  std::vector<std::string> parts;
  std::string where = m.hostname();
  if (!m.backend().empty()) absl::StrAppend(&where, where.empty() ? "" : " ", m.backend());
  if (m.devices_size() > 0) {
    absl::StrAppend(&where, " ", m.devices_size(), " x ", m.devices(0).name());
  }
  parts.push_back(where);
  if (!m.driver_version().empty()) parts.push_back(absl::StrCat("driver ", m.driver_version()));
  if (!m.runtime_version().empty()) parts.push_back(absl::StrCat("runtime ", m.runtime_version()));
  if (!m.colltest_version().empty()) {
    parts.push_back(absl::StrCat("colltest ", m.colltest_version(),
                                 m.build_commit().empty() ? "" : " (" + m.build_commit() + ")"));
  }
  if (!m.key().empty()) parts.push_back(absl::StrCat("key ", m.key()));
  // Another machine's text, printed on this terminal: escaped like a table cell.
  return common::EscapeForTerminal(absl::StrJoin(parts, ", "));
}

bool SameSetup(const v1::MachineIdentity& a, const v1::MachineIdentity& b) {
  auto fields = [](const v1::MachineIdentity& m) {
    return std::tie(m.key(), m.driver_version(), m.runtime_version(), m.colltest_version(),
                    m.build_commit());
  };
  return fields(a) == fields(b);
}

std::string Header(const v1::CompareResponse& r) {
  std::string out = absl::StrCat("compare ", common::EscapeForTerminal(r.run_a()), " -> ",
                                 common::EscapeForTerminal(r.run_b()));
  if (!r.baseline().empty()) {
    absl::StrAppend(&out, " (baseline ", common::EscapeForTerminal(r.baseline()), ")");
  }
  absl::StrAppend(&out, absl::StrFormat("  threshold %g %%\n", r.threshold() * 100));
  const bool known = !r.machine_a().key().empty() || !r.machine_b().key().empty() ||
                     !r.machine_a().hostname().empty() || !r.machine_b().hostname().empty();
  if (!known) return out;
  if (SameSetup(r.machine_a(), r.machine_b())) {
    absl::StrAppend(&out, "machine: ", MachineLine(r.machine_b()), "\n");
    return out;
  }
  absl::StrAppend(&out, "a: ", MachineLine(r.machine_a()), "\nb: ", MachineLine(r.machine_b()),
                  "\n");
  if (r.machine_a().key() != r.machine_b().key()) {
    absl::StrAppend(&out, "note: the runs are from different machines\n");
  }
  return out;
}

// The epilogue is part of the matching key: a column once some case quantised, as in a run's table.
bool AnyQuantisingCase(const v1::CompareResponse& comparison) {
  for (const v1::CaseComparison& c : comparison.cases()) {
    if (QuantisingEpilogue(c.epilogue())) return true;
  }
  return false;
}

}  // namespace

std::string FormatCompareTable(const v1::CompareResponse& comparison) {
  using Align = TextTable::Align;
  const bool epilogue = AnyQuantisingCase(comparison);
  std::vector<TextTable::Column> columns = {
      {"variant", Align::kLeft}, {"mode", Align::kLeft}, {"W", Align::kRight},
      {"m", Align::kRight},      {"n", Align::kRight},   {"dtype", Align::kLeft},
  };
  if (epilogue) columns.push_back({"epilogue", Align::kLeft});
  for (const char* title : {"median a", "median b", "change"}) {
    columns.push_back({title, Align::kRight});
  }
  columns.push_back({"verdict", Align::kLeft});
  columns.push_back({"reason", Align::kLeft});
  TextTable table(std::move(columns));
  for (const v1::CaseComparison& c : comparison.cases()) {
    std::vector<std::string> row = {
        common::KernelName(c),        std::string(common::ModeName(c.mode())),
        absl::StrCat(c.world_size()), absl::StrCat(c.m()),
        absl::StrCat(c.n()),          std::string(common::DTypeName(c.dtype())),
    };
    if (epilogue) row.push_back(EpilogueLabel(c.epilogue(), c.keep_normed()));
    row.insert(row.end(), {HasSideA(c) ? Median(c.timing_a()) : "-",
                           HasSideB(c) ? Median(c.timing_b()) : "-", Change(c.ratio()),
                           std::string(common::CompareVerdictName(c.verdict())), c.reason()});
    table.AddRow(std::move(row));
  }
  return absl::StrCat(Header(comparison), table.Render(),
                      common::EscapeForTerminal(comparison.message()), "\n");
}

std::string FormatCompareCsv(const v1::CompareResponse& comparison) {
  std::string out =
      "run_a,run_b,variant,mode,world,m,n,dtype,verdict,status_a,status_b,median_a_us,"
      "median_b_us,p10_a_us,p90_a_us,p10_b_us,p90_b_us,ratio,reason,epilogue,keep_normed,"
      "fp8_format\n";
  // A side the case is missing from, or a time it did not measure, is left empty, as a spreadsheet
  // reads "no value".
  auto side = [](bool present, double us) { return CsvFigure(us, present && us > 0); };
  for (const v1::CaseComparison& c : comparison.cases()) {
    const bool a = HasSideA(c);
    const bool b = HasSideB(c);
    const std::vector<std::string> row = {
        CsvField(comparison.run_a()),
        CsvField(comparison.run_b()),
        common::KernelName(c),
        std::string(common::ModeName(c.mode())),
        absl::StrCat(c.world_size()),
        absl::StrCat(c.m()),
        absl::StrCat(c.n()),
        std::string(common::DTypeName(c.dtype())),
        std::string(common::CompareVerdictName(c.verdict())),
        a ? std::string(common::CaseStatusName(c.status_a())) : "",
        b ? std::string(common::CaseStatusName(c.status_b())) : "",
        side(a, c.timing_a().median_us()),
        side(b, c.timing_b().median_us()),
        side(a, c.timing_a().p10_us()),
        side(a, c.timing_a().p90_us()),
        side(b, c.timing_b().p10_us()),
        side(b, c.timing_b().p90_us()),
        CsvFigure(c.ratio(), c.ratio() > 0),
        CsvField(c.reason()),
        // The rest of the matching key, after the older columns so that they keep their places.
        std::string(common::EpilogueName(c.epilogue())),
        QuantisingEpilogue(c.epilogue()) && c.keep_normed() ? "true" : "false",
        c.fp8_format() != v1::FP8_FORMAT_UNSPECIFIED
            ? std::string(common::Fp8FormatName(c.fp8_format()))
            : "",
    };
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
  }
  return out;
}

}  // namespace colltest::client
