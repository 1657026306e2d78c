#include "client/format/tune.h"

#include <algorithm>
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/element_size.h"
#include "common/names.h"

namespace colltest::client {

TuneKernel TuneKernel::Of(const v1::CaseResult& c) {
  return c.variant() == v1::VARIANT_PLUGIN ? Plugin(c.plugin().name()) : TuneKernel(c.variant());
}

std::string TuneKernel::Name() const { return common::KernelName(variant, plugin); }

TuneTable BuildTuneTable(const v1::SweepSpec& spec, const v1::RunResult& run,
                         const v1::ListDevicesResponse& devices, int64_t created_unix_ms) {
  TuneTable table;
  table.backend = devices.backend();
  table.device = devices.devices().empty() ? std::string() : devices.devices(0).name();
  table.world = spec.world_size();
  table.dtype = spec.dtype() == v1::DTYPE_UNSPECIFIED ? v1::DTYPE_BF16 : spec.dtype();
  table.mode = spec.modes().empty() ? v1::MODE_EAGER : spec.modes(0);
  table.n = spec.n().empty() ? 0 : spec.n(0);
  if (!spec.epilogues().empty() && spec.epilogues(0) != v1::EPILOGUE_UNSPECIFIED) {
    table.epilogue = static_cast<v1::Epilogue>(spec.epilogues(0));
  }
  // Without a quantising epilogue the normed output is the output: nothing is kept on top.
  table.keep_normed = spec.keep_normed() && table.epilogue != v1::EPILOGUE_NONE;
  table.created_unix_ms = created_unix_ms;
  table.run_id = run.run_id();
  for (int v : spec.variants()) table.kernels.emplace_back(static_cast<v1::Variant>(v));
  for (const std::string& p : spec.plugins()) table.kernels.push_back(TuneKernel::Plugin(p));

  // A tune sweep has one case per (m, kernel); should a server send one twice, the first counts
  // rather than whichever happens to come last.
  std::map<std::pair<uint32_t, TuneKernel>, const v1::CaseResult*> cases;
  for (const v1::CaseResult& c : run.cases()) cases.try_emplace({c.m(), TuneKernel::Of(c)}, &c);

  std::vector<uint32_t> ms(spec.m().begin(), spec.m().end());
  std::sort(ms.begin(), ms.end());
  ms.erase(std::unique(ms.begin(), ms.end()), ms.end());
  for (uint32_t m : ms) {
    TuneRow row;
    row.m = m;
    row.bytes = uint64_t{m} * table.n * common::ElementBytes(table.dtype);
    DroppedTuneRow dropped;
    dropped.m = m;
    double best_us = 0;
    for (const TuneKernel& k : table.kernels) {
      auto it = cases.find({m, k});
      if (it == cases.end()) {
        dropped.outcomes.emplace_back(k, "no result");
        continue;
      }
      const v1::CaseResult& c = *it->second;
      const double us = c.timing().median_us();
      if (c.status() != v1::CASE_STATUS_OK || !(us > 0)) {
        dropped.outcomes.emplace_back(k, c.status() == v1::CASE_STATUS_OK
                                             ? "OK untimed"
                                             : std::string(common::CaseStatusName(c.status())));
        continue;
      }
      row.us.emplace_back(k, us);
      // Strictly faster only, so that a tie keeps the kernel listed first.
      if (row.us.size() == 1 || us < best_us) {
        row.best = k;
        best_us = us;
      }
    }
    if (row.us.empty()) {
      table.dropped.push_back(std::move(dropped));
    } else {
      table.rows.push_back(std::move(row));
    }
  }
  return table;
}

std::string TuneTableFileName(const TuneTable& table) {
  std::string device;
  const std::vector<absl::string_view> words =
      absl::StrSplit(table.device, ' ', absl::SkipWhitespace());
  if (!words.empty()) {
    for (char c : words.back()) {
      if (absl::ascii_isalnum(static_cast<unsigned char>(c))) device += absl::ascii_tolower(c);
    }
  }
  std::string name = absl::StrCat("tune_", table.backend, device.empty() ? "" : "_", device, "_w",
                                  table.world, "_", common::DTypeName(table.dtype), "_",
                                  common::ModeName(table.mode), "_n", table.n);
  if (table.epilogue != v1::EPILOGUE_NONE) {
    absl::StrAppend(&name, "_", common::EpilogueName(table.epilogue));
  }
  if (table.keep_normed) absl::StrAppend(&name, "_keep_normed");
  return name + ".json";
}

std::string DroppedRowWarning(const DroppedTuneRow& row) {
  std::vector<std::string> outcomes;
  for (const auto& [kernel, outcome] : row.outcomes) {
    outcomes.push_back(absl::StrCat(kernel.Name(), " ", outcome));
  }
  return absl::StrCat("no tune row for m=", row.m, ": no variant OK (",
                      absl::StrJoin(outcomes, ", "), ")");
}

}  // namespace colltest::client
