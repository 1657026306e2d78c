#include "server/runs/tune_table.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <string_view>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/element_size.h"
#include "common/names.h"
#include "nlohmann/json.hpp"

namespace colltest::server {

namespace v1 = ::colltest::v1;

namespace {

// In the file's order, so that the kernels of a row's "us" keep the order `colltest tune` listed
// them in (colltest's own variants first), which breaks a tie.
using Json = nlohmann::ordered_json;

std::optional<v1::DType> DTypeNamed(const std::string& name) {
  for (v1::DType t : {v1::DTYPE_BF16, v1::DTYPE_FP16, v1::DTYPE_FP32}) {
    if (common::DTypeName(t) == name) return t;
  }
  return std::nullopt;
}

// Exactly as the client writes it: a table is a file of record, not something typed by hand.
std::optional<v1::Epilogue> EpilogueNamed(const std::string& name) {
  for (int e = v1::EPILOGUE_NONE; e <= v1::Epilogue_MAX; ++e) {
    if (common::EpilogueName(static_cast<v1::Epilogue>(e)) == name) {
      return static_cast<v1::Epilogue>(e);
    }
  }
  return std::nullopt;
}

constexpr std::string_view kPluginPrefix = "plugin:";
constexpr size_t kMaxPluginName = 32;

// A kernel plugin's name, as its struct must spell it (worker/plugins/plugin_fields.h).
bool IsPluginName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxPluginName &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
         });
}

// A variant that runs, or "plugin:NAME": exactly as the client writes it.
std::optional<TuneKernel> KernelNamed(const std::string& name) {
  for (v1::Variant v : {v1::VARIANT_ONE_STAGE, v1::VARIANT_TWO_KERNEL, v1::VARIANT_LAMPORT,
                        v1::VARIANT_LAMPORT_TB, v1::VARIANT_LAMPORT_TWO_SHOT, v1::VARIANT_NCCL}) {
    if (common::VariantName(v) == name) return TuneKernel(v);
  }
  if (name.rfind(kPluginPrefix, 0) == 0 && IsPluginName(name.substr(kPluginPrefix.size()))) {
    return TuneKernel::Plugin(name.substr(kPluginPrefix.size()));
  }
  return std::nullopt;
}

constexpr char kKernelsExpected[] =
    "a variant that runs or plugin:NAME (NAME 1 to 32 of a-z, 0-9 and _)";

// "cuda W=2 bf16": the part of the key that a table of every epilogue shares.
std::string DescribeGroup(const std::string& backend, uint32_t world, v1::DType dtype) {
  return absl::StrCat(backend, " W=", world, " ", common::DTypeName(dtype));
}

v1::Epilogue EpilogueOf(v1::Epilogue e) {
  return e == v1::EPILOGUE_UNSPECIFIED ? v1::EPILOGUE_NONE : e;
}

// Why no table serves case `c`, with the command that measures one; `available` holds the
// epilogues that tables exist for at the case's backend, world and dtype.
std::string NoTableReason(const AutoCase& c, const std::set<v1::Epilogue>& available) {
  const std::string group = DescribeGroup(c.backend, c.world, c.dtype);
  const v1::Epilogue epilogue = EpilogueOf(c.epilogue);
  std::string found = absl::StrCat("no table for ", group, " at any epilogue");
  if (!available.empty()) {
    std::vector<std::string> names;
    for (v1::Epilogue e : available) names.emplace_back(common::EpilogueName(e));
    found = absl::StrCat(group, " has tables for epilogue ", absl::StrJoin(names, ", "));
  }
  const std::string tune = absl::StrCat(
      "colltest tune --world ", c.world, " --dtype ", common::DTypeName(c.dtype),
      epilogue == v1::EPILOGUE_NONE ? ""
                                    : absl::StrCat(" --epilogue ", common::EpilogueName(epilogue)));
  return absl::StrCat("auto: no tune table for ", group, " epilogue ",
                      common::EpilogueName(epilogue), " (", found, "; measure one with `", tune,
                      "` and put it in colltestd's --tune-dir)");
}

// The optional "epilogue" and "keep_normed" of a table's JSON; an error names the field.
absl::Status ParseEpilogueFields(const Json& j, TuneTable& t) {
  if (j.contains("epilogue")) {
    const Json& e = j["epilogue"];
    const std::optional<v1::Epilogue> epilogue =
        e.is_string() ? EpilogueNamed(e.get<std::string>()) : std::nullopt;
    if (!epilogue.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("epilogue: must be ",
                                                     absl::StrJoin(common::EpilogueNames(), ", "),
                                                     " (or absent: none)"));
    }
    t.epilogue = *epilogue;
  }
  if (j.contains("keep_normed")) {
    if (!j["keep_normed"].is_boolean()) {
      return absl::InvalidArgumentError("keep_normed: must be true or false");
    }
    // Without a quantising epilogue the normed output is the output: nothing is kept on top.
    t.keep_normed = j["keep_normed"].get<bool>() && t.epilogue != v1::EPILOGUE_NONE;
  }
  return absl::OkStatus();
}

// Which kernels a choice may fall on: any, or colltest's own variants only.
using KernelFilter = bool (*)(const TuneKernel&);
bool AnyKernel(const TuneKernel&) { return true; }
bool OwnVariant(const TuneKernel& k) { return !k.is_plugin(); }

// A kernel a table picks and where it found it: "tune table FILE (...), row m=64 (917504 B)".
struct Pick {
  TuneKernel kernel;
  std::string where;
};

// The kernel with the least time interpolated linearly in bytes between rows `lo` and `hi`
// (lo.bytes < bytes < hi.bytes), among those of `filter` both rows measured; none when they share
// none.
std::optional<Pick> Interpolated(const TuneTable::Row& lo, const TuneTable::Row& hi, uint64_t bytes,
                                 const std::string& table, KernelFilter filter) {
  const double f = static_cast<double>(bytes - lo.bytes) / static_cast<double>(hi.bytes - lo.bytes);
  std::optional<std::pair<TuneKernel, double>> best;
  for (const auto& [k, lo_us] : lo.us) {
    if (!filter(k)) continue;
    const auto at_hi =
        std::find_if(hi.us.begin(), hi.us.end(), [&k = k](const auto& e) { return e.first == k; });
    if (at_hi == hi.us.end()) continue;
    const double us = lo_us + f * (at_hi->second - lo_us);
    if (!best || us < best->second) best = std::make_pair(k, us);
  }
  if (!best) return std::nullopt;
  return Pick{best->first, absl::StrCat(table, ", interpolated between rows m=", lo.m, " and m=",
                                        hi.m, " (", absl::StrFormat("%.2f", best->second), " us)")};
}

// The row's best when `filter` takes it, else the fastest of `filter` the row measured (the first
// listed of a tie); none when it measured none.
std::optional<Pick> AtRow(const TuneTable::Row& row, const std::string& table,
                          KernelFilter filter) {
  std::optional<std::pair<TuneKernel, double>> best;
  if (filter(row.best)) {
    best = std::make_pair(row.best, 0.0);
  } else {
    for (const auto& [k, us] : row.us) {
      if (filter(k) && (!best || us < best->second)) best = std::make_pair(k, us);
    }
  }
  if (!best) return std::nullopt;
  return Pick{best->first, absl::StrCat(table, ", row m=", row.m, " (", row.bytes, " B)")};
}

// The pick for `bytes` among the kernels of `filter`: interpolated between `row` and `above` when
// the case lies between them and they share such a kernel, else at `row`.
std::optional<Pick> Choose(const TuneTable::Row& row, const TuneTable::Row* above, uint64_t bytes,
                           const std::string& table, KernelFilter filter) {
  if (row.bytes < bytes && above != nullptr) {
    if (std::optional<Pick> pick = Interpolated(row, *above, bytes, table, filter)) return pick;
  }
  return AtRow(row, table, filter);
}

}  // namespace

absl::StatusOr<TuneTable> ParseTuneTable(const std::string& text, const std::string& source) {
  const auto bad = [&](const std::string& what) {
    return absl::InvalidArgumentError(absl::StrCat("tune table ", source, ": ", what));
  };
  const Json j = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return bad("not a JSON object");
  if (j.value("kind", "") != "colltest-tune-table") {
    return bad("kind: expected \"colltest-tune-table\"");
  }
  if (j.value("version", 0) != 1) return bad("version: expected 1");
  TuneTable t;
  t.source = source;
  t.backend = j.value("backend", "");
  t.device = j.value("device", "");
  t.world = j.value("world", 0u);
  t.n = j.value("n", 0u);
  if (t.backend.empty()) return bad("backend: missing");
  if (t.world < 1) return bad("world: must be >= 1");
  if (t.n < 1) return bad("n: must be >= 1");
  const std::optional<v1::DType> dtype = DTypeNamed(j.value("dtype", ""));
  if (!dtype) return bad("dtype: must be bf16, fp16 or fp32");
  t.dtype = *dtype;
  const std::string mode = j.value("mode", "graph");
  if (mode != "graph" && mode != "eager") return bad("mode: must be graph or eager");
  t.mode = mode == "graph" ? v1::MODE_GRAPH : v1::MODE_EAGER;
  if (absl::Status fields = ParseEpilogueFields(j, t); !fields.ok()) {
    return bad(std::string(fields.message()));
  }
  if (!j.contains("rows") || !j["rows"].is_array() || j["rows"].empty()) {
    return bad("rows: must be a non-empty array");
  }
  for (const Json& r : j["rows"]) {
    TuneTable::Row row;
    row.m = r.value("m", 0u);
    if (row.m < 1) return bad("rows[].m: must be >= 1");
    row.bytes = uint64_t{row.m} * t.n * common::ElementBytes(t.dtype);
    const std::optional<TuneKernel> best = KernelNamed(r.value("best", ""));
    if (!best) return bad(absl::StrCat("rows[m=", row.m, "].best: not ", kKernelsExpected));
    row.best = *best;
    if (r.contains("us") && r["us"].is_object()) {
      for (const auto& [name, us] : r["us"].items()) {
        const std::optional<TuneKernel> k = KernelNamed(name);
        if (!k || !us.is_number() || us.get<double>() <= 0) {
          return bad(absl::StrCat("rows[m=", row.m, "].us.", name, ": must name ", kKernelsExpected,
                                  " and hold a time > 0"));
        }
        row.us.emplace_back(*k, us.get<double>());
      }
    }
    t.rows.push_back(row);
  }
  std::sort(t.rows.begin(), t.rows.end(),
            [](const TuneTable::Row& a, const TuneTable::Row& b) { return a.bytes < b.bytes; });
  return t;
}

absl::StatusOr<TuneTables> TuneTables::LoadDir(const std::string& dir) {
  std::vector<TuneTable> tables;
  std::error_code error;
  if (dir.empty() || !std::filesystem::is_directory(dir, error)) return TuneTables();
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir, error)) {
    // The long health level's expected bandwidths live in the same directory (it is where an
    // installed tree keeps machine figures) but are not a tune table.
    if (entry.path().filename() == kExpectedBusbwFileName) continue;
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  for (const auto& path : files) {
    std::ifstream in(path);
    std::stringstream text;
    text << in.rdbuf();
    absl::StatusOr<TuneTable> table = ParseTuneTable(text.str(), path.string());
    if (!table.ok()) return table.status();
    tables.push_back(*std::move(table));
  }
  return TuneTables(std::move(tables));
}

std::string TuneKernel::Name() const { return common::KernelName(variant, plugin); }

std::string DescribeTuneTable(const TuneTable& t) {
  std::string text = absl::StrCat(DescribeGroup(t.backend, t.world, t.dtype), " ",
                                  common::ModeName(t.mode), " n=", t.n);
  if (t.epilogue != v1::EPILOGUE_NONE)
    absl::StrAppend(&text, " ", common::EpilogueName(t.epilogue));
  if (t.keep_normed) absl::StrAppend(&text, " keep_normed");
  return text;
}

absl::StatusOr<AutoChoice> TuneTables::Resolve(const AutoCase& c) const {
  const v1::Epilogue epilogue = EpilogueOf(c.epilogue);
  const bool keep_normed = c.keep_normed && epilogue != v1::EPILOGUE_NONE;
  const TuneTable* chosen = nullptr;
  const auto score = [&](const TuneTable& t) {
    // Same mode first, then the nearest hidden size, then the same keep_normed.
    return std::make_tuple(t.mode == c.mode ? 0 : 1, std::llabs(int64_t{t.n} - int64_t{c.n}),
                           t.keep_normed == keep_normed ? 0 : 1);
  };
  std::set<v1::Epilogue> available;
  for (const TuneTable& t : tables_) {
    if (t.backend != c.backend || t.world != c.world || t.dtype != c.dtype) continue;
    available.insert(t.epilogue);
    // A table of another epilogue timed other kernels: its crossovers do not hold here.
    if (t.epilogue != epilogue) continue;
    if (chosen == nullptr || score(t) < score(*chosen)) chosen = &t;
  }
  if (chosen == nullptr) return absl::NotFoundError(NoTableReason(c, available));
  const uint64_t bytes = uint64_t{c.m} * c.n * common::ElementBytes(c.dtype);
  const TuneTable::Row* row = &chosen->rows.front();
  const TuneTable::Row* above = nullptr;
  for (const TuneTable::Row& r : chosen->rows) {
    if (r.bytes <= bytes) row = &r;
    if (r.bytes > bytes && above == nullptr) above = &r;
  }
  const std::string table =
      absl::StrCat("tune table ", std::filesystem::path(chosen->source).filename().string(), " (",
                   DescribeTuneTable(*chosen), ")");
  // A row always has a best, so every kernel gives a pick.
  const Pick pick = *Choose(*row, above, bytes, table, AnyKernel);
  const TuneKernel& k = pick.kernel;
  if (!k.is_plugin() ||
      std::find(c.plugins.begin(), c.plugins.end(), k.plugin) != c.plugins.end()) {
    return AutoChoice{k, absl::StrCat(k.Name(), ": ", pick.where)};
  }
  // A plugin of the box the table was measured on that this colltestd did not load: colltest's
  // own variants are always there.
  const std::string not_loaded = absl::StrCat(k.Name(), " of the table is not loaded");
  const std::optional<Pick> own = Choose(*row, above, bytes, table, OwnVariant);
  if (!own) {
    return absl::FailedPreconditionError(
        absl::StrCat("auto: ", not_loaded, " (colltestd --kernel-plugin) and ", pick.where,
                     " measured none of colltest's own variants"));
  }
  return AutoChoice{own->kernel,
                    absl::StrCat(own->kernel.Name(), ": ", not_loaded,
                                 ", the fastest of colltest's own variants: ", own->where)};
}

}  // namespace colltest::server
