// One CSV row per case (ranks are in the JSON output), or per health target, for spreadsheets and
// plotting scripts.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/format/csv.h"
#include "client/format/format.h"
#include "client/format/quant_view.h"
#include "client/format/result_view.h"
#include "common/names.h"
#include "common/text.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kHeader =
    "run_id,index,variant,resolved_variant,mode,world,m,n,dtype,bytes,pattern,residual,status,"
    "median_us,p10_us,p90_us,min_us,max_us,algbw_gbps,busbw_gbps,mismatches,checked,max_abs_err,"
    "max_rel_err,max_ulp,nan_inf,first_bad_call,stress_calls,wall_ms,first_bad,message,"
    "ranks_per_gpu,shared_gpu,time_sliced,epilogue,keep_normed,fp8_format,quant_checked_codes,"
    "quant_code_mismatches,quant_max_code_distance,quant_scale_mismatches,quant_max_scale_rel_err,"
    "quant_max_dequant_err,quant_rule";

constexpr absl::string_view kHealthHeader =
    "kind,devices,status,latency_us,median_ratio,slow,suspect_peer,phase,message";

void AppendTargetRows(absl::string_view kind,
                      const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets,
                      std::string* out) {
  for (const v1::HealthTarget& t : targets) {
    const std::vector<std::string> row = {
        std::string(kind),
        TargetDevices(t),
        std::string(common::CaseStatusName(t.status())),
        CsvFigure(t.latency_us(), t.latency_us() > 0),
        CsvFigure(t.median_ratio(), t.latency_us() > 0),
        t.slow() ? "true" : "false",
        CsvFigure(SuspectDevice(t), SuspectDevice(t) >= 0),
        CsvField(t.phase()),
        CsvField(t.message()),
    };
    absl::StrAppend(out, absl::StrJoin(row, ","), "\n");
  }
}

}  // namespace

std::string CsvField(absl::string_view raw) {
  // Text from the server (messages other clients' runs produced) is escaped like in a table, so
  // that a CSV printed on a terminal cannot drive it either.
  const std::string value = common::EscapeForTerminal(raw);
  if (value.find_first_of(",\"\r\n") == absl::string_view::npos) return value;
  std::string quoted = "\"";
  for (char ch : value) {
    if (ch == '"') quoted += '"';
    quoted += ch;
  }
  quoted += '"';
  return quoted;
}

namespace {

// The epilogue's cells, appended after the placement so that older columns keep their positions.
// The format is empty where none was written (no fp8 epilogue), the quant figures where no code or
// scale was compared, the rule where none was broken.
void AppendQuantCells(const v1::CaseResult& c, std::vector<std::string>& row) {
  const v1::QuantDiffStats& q = c.quant();
  const bool checked = QuantChecked(q);
  const bool broken = q.rule() != v1::QUANT_RULE_UNSPECIFIED;
  const bool format = c.fp8_format() != v1::FP8_FORMAT_UNSPECIFIED;
  row.insert(row.end(), {
                            std::string(common::EpilogueName(c.epilogue())),
                            QuantisingEpilogue(c) && c.keep_normed() ? "true" : "false",
                            format ? std::string(common::Fp8FormatName(c.fp8_format())) : "",
                            CsvFigure(q.checked_codes(), checked),
                            CsvFigure(q.code_mismatches(), checked),
                            CsvFigure(q.max_code_distance(), checked),
                            CsvFigure(q.scale_mismatches(), checked),
                            CsvFigure(q.max_scale_rel_err(), checked),
                            CsvFigure(q.max_dequant_err(), checked),
                            broken ? std::string(common::QuantRuleName(q.rule())) : "",
                        });
}

// A time of 0 us is never a measurement: the case did not time (UNSUPPORTED, ERROR) or the server
// did not send that statistic. Error figures exist only where elements were checked. The three
// cells after the message repeat the run's placement on every row: with shared_gpu true the row's
// times are kernel overhead of ranks sharing a GPU, and its bandwidths no link figure.
std::vector<std::string> CaseRow(const v1::RunResult& run, const v1::CaseResult& c) {
  const v1::TimingStats& t = c.timing();
  const v1::DiffStats& d = c.diff();
  const bool timed = t.median_us() > 0;
  const bool checked = d.checked() > 0;
  std::vector<std::string> row = {
      CsvField(run.run_id()),
      absl::StrCat(c.index()),
      common::KernelName(c),
      common::KernelName(EffectiveVariant(c), c.plugin().name()),
      std::string(common::ModeName(c.mode())),
      absl::StrCat(c.world_size()),
      absl::StrCat(c.m()),
      absl::StrCat(c.n()),
      std::string(common::DTypeName(c.dtype())),
      absl::StrCat(CaseBytes(c)),
      std::string(common::PatternName(c.pattern())),
      c.residual() ? "true" : "false",
      std::string(common::CaseStatusName(c.status())),
      CsvFigure(t.median_us(), timed),
      CsvFigure(t.p10_us(), t.p10_us() > 0),
      CsvFigure(t.p90_us(), t.p90_us() > 0),
      CsvFigure(t.min_us(), t.min_us() > 0),
      CsvFigure(t.max_us(), t.max_us() > 0),
      CsvFigure(c.algbw_gbps(), timed),
      CsvFigure(c.busbw_gbps(), timed),
      CsvFigure(d.mismatches(), checked),
      CsvFigure(d.checked(), checked),
      CsvFigure(d.max_abs_err(), checked),
      CsvFigure(d.max_rel_err(), checked),
      CsvFigure(d.max_ulp(), checked),
      CsvFigure(d.nan_inf(), checked),
      CsvFigure(d.first_bad_call(), d.first_bad_call() >= 0),
      absl::StrCat(c.stress_calls()),
      CsvFigure(c.wall_ms(), c.wall_ms() > 0),
      CsvField(d.first_bad()),
      CsvField(c.message()),
      absl::StrCat(RanksPerGpu(run)),
      SharedGpu(run) ? "true" : "false",
      run.time_sliced() ? "true" : "false",
  };
  AppendQuantCells(c, row);
  return row;
}

}  // namespace

std::string FormatRunCsv(const v1::RunResult& run) {
  std::string out = absl::StrCat(kHeader, "\n");
  for (const v1::CaseResult& c : run.cases()) {
    absl::StrAppend(&out, absl::StrJoin(CaseRow(run, c), ","), "\n");
  }
  return out;
}

std::string FormatHealthCsv(const v1::HealthResponse& health) {
  std::string out = absl::StrCat(kHealthHeader, "\n");
  AppendTargetRows("rank", health.ranks(), &out);
  AppendTargetRows("pair", health.pairs(), &out);
  return out;
}

}  // namespace colltest::client
