// One CSV row per case (ranks are in the JSON output), or per health target, for spreadsheets and
// plotting scripts.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/string_view.h"
#include "client/csv.h"
#include "client/format.h"
#include "client/names.h"
#include "client/result_view.h"
#include "common/text.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kHeader =
    "run_id,index,variant,resolved_variant,mode,world,m,n,dtype,pattern,residual,status,"
    "median_us,p10_us,p90_us,min_us,max_us,algbw_gbps,busbw_gbps,mismatches,checked,max_abs_err,"
    "max_rel_err,max_ulp,nan_inf,first_bad_call,stress_calls,wall_ms,first_bad,message";

constexpr absl::string_view kHealthHeader =
    "kind,devices,status,latency_us,median_ratio,slow,suspect_peer,phase,message";

void AppendTargetRows(absl::string_view kind,
                      const google::protobuf::RepeatedPtrField<v1::HealthTarget>& targets,
                      std::string* out) {
  for (const v1::HealthTarget& t : targets) {
    const std::vector<std::string> row = {
        std::string(kind),
        TargetDevices(t),
        std::string(CaseStatusName(t.status())),
        absl::StrCat(t.latency_us()),
        absl::StrCat(t.median_ratio()),
        t.slow() ? "true" : "false",
        absl::StrCat(SuspectDevice(t)),
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

std::string FormatRunCsv(const v1::RunResult& run) {
  std::string out = absl::StrCat(kHeader, "\n");
  for (const v1::CaseResult& c : run.cases()) {
    const std::vector<std::string> row = {
        CsvField(run.run_id()),
        absl::StrCat(c.index()),
        std::string(VariantName(c.variant())),
        std::string(VariantName(EffectiveVariant(c))),
        std::string(ModeName(c.mode())),
        absl::StrCat(c.world_size()),
        absl::StrCat(c.m()),
        absl::StrCat(c.n()),
        std::string(DTypeName(c.dtype())),
        std::string(PatternName(c.pattern())),
        c.residual() ? "true" : "false",
        std::string(CaseStatusName(c.status())),
        absl::StrCat(c.timing().median_us()),
        absl::StrCat(c.timing().p10_us()),
        absl::StrCat(c.timing().p90_us()),
        absl::StrCat(c.timing().min_us()),
        absl::StrCat(c.timing().max_us()),
        absl::StrCat(c.algbw_gbps()),
        absl::StrCat(c.busbw_gbps()),
        absl::StrCat(c.diff().mismatches()),
        absl::StrCat(c.diff().checked()),
        absl::StrCat(c.diff().max_abs_err()),
        absl::StrCat(c.diff().max_rel_err()),
        absl::StrCat(c.diff().max_ulp()),
        absl::StrCat(c.diff().nan_inf()),
        absl::StrCat(c.diff().first_bad_call()),
        absl::StrCat(c.stress_calls()),
        absl::StrCat(c.wall_ms()),
        CsvField(c.diff().first_bad()),
        CsvField(c.message()),
    };
    absl::StrAppend(&out, absl::StrJoin(row, ","), "\n");
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
