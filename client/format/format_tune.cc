// The tune table as colltestd's JSON and as a text table with its crossovers.
#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/format/format_json.h"
#include "client/format/text_table.h"
#include "client/format/tune.h"
#include "common/names.h"
#include "nlohmann/json.hpp"

namespace colltest::client {
namespace {

// Insertion order keeps the file in the documented field order, which is easier to review by eye.
using Json = nlohmann::ordered_json;

// The fastest time other than the best's, or 0 when the best ran alone.
double SecondBestUs(const TuneRow& row) {
  double second = std::numeric_limits<double>::infinity();
  for (const auto& [kernel, us] : row.us) {
    if (kernel != row.best) second = std::min(second, us);
  }
  return second == std::numeric_limits<double>::infinity() ? 0 : second;
}

double BestUs(const TuneRow& row) {
  for (const auto& [kernel, us] : row.us) {
    if (kernel == row.best) return us;
  }
  return 0;
}

// Runs of consecutive rows with the same best: "lamport_tb up to m=64 (917504 B), one_stage from
// m=128 up to m=256 (3670016 B), lamport at m=512 (7340032 B), two_kernel from m=1024". The bytes
// are those of the last m of a run, the figure a byte-size gate would be set to.
std::string CrossoversLine(const TuneTable& table) {
  if (table.rows.empty()) return "crossovers: none (no m had an OK variant)";
  struct Run {
    TuneKernel best;
    const TuneRow* first;
    const TuneRow* last;
  };
  std::vector<Run> runs;
  for (const TuneRow& row : table.rows) {
    if (runs.empty() || runs.back().best != row.best) {
      runs.push_back({row.best, &row, &row});
    } else {
      runs.back().last = &row;
    }
  }
  if (runs.size() == 1) {
    return absl::StrCat("crossovers: none (", runs[0].best.Name(), " at every m)");
  }
  std::vector<std::string> parts;
  for (size_t i = 0; i < runs.size(); ++i) {
    const Run& run = runs[i];
    std::string part = run.best.Name();
    if (i == 0) {
      absl::StrAppend(&part, " up to m=", run.last->m, " (", run.last->bytes, " B)");
    } else if (i + 1 == runs.size()) {
      absl::StrAppend(&part, " from m=", run.first->m);
    } else if (run.first == run.last) {
      absl::StrAppend(&part, " at m=", run.first->m, " (", run.first->bytes, " B)");
    } else {
      absl::StrAppend(&part, " from m=", run.first->m, " up to m=", run.last->m, " (",
                      run.last->bytes, " B)");
    }
    parts.push_back(std::move(part));
  }
  return absl::StrCat("crossovers: ", absl::StrJoin(parts, ", "));
}

}  // namespace

std::string FormatTuneJson(const TuneTable& table) {
  // colltestd checks kind and version when it loads the table; schema_version is the version of
  // the client's output schema, like every other JSON document it prints.
  Json out = Json::object();
  out["schema_version"] = kSchemaVersion;
  out["kind"] = "colltest-tune-table";
  out["version"] = 1;
  out["backend"] = table.backend;
  out["device"] = table.device;
  out["world"] = table.world;
  out["dtype"] = std::string(common::DTypeName(table.dtype));
  out["mode"] = std::string(common::ModeName(table.mode));
  out["n"] = table.n;
  out["epilogue"] = std::string(common::EpilogueName(table.epilogue));
  out["keep_normed"] = table.keep_normed;
  out["created_unix_ms"] = table.created_unix_ms;
  out["run_id"] = table.run_id;
  Json rows = Json::array();
  for (const TuneRow& row : table.rows) {
    Json r = Json::object();
    r["m"] = row.m;
    r["bytes"] = row.bytes;
    r["best"] = row.best.Name();
    Json us = Json::object();
    for (const auto& [kernel, median] : row.us) us[kernel.Name()] = median;
    r["us"] = std::move(us);
    rows.push_back(std::move(r));
  }
  out["rows"] = std::move(rows);
  // Invalid UTF-8 in a device name is replaced rather than thrown on: the table must come out.
  return out.dump(2, ' ', false, Json::error_handler_t::replace) + "\n";
}

std::string FormatTuneText(const TuneTable& table) {
  using Align = TextTable::Align;
  std::vector<TextTable::Column> columns = {{"m", Align::kRight}, {"bytes", Align::kRight}};
  for (const TuneKernel& k : table.kernels) columns.push_back({k.Name(), Align::kRight});
  columns.push_back({"best", Align::kLeft});
  columns.push_back({"speed-up", Align::kRight});
  TextTable text(std::move(columns));
  for (const TuneRow& row : table.rows) {
    std::vector<std::string> cells = {absl::StrCat(row.m), absl::StrCat(row.bytes)};
    for (const TuneKernel& k : table.kernels) {
      std::string cell = "-";  // not OK at this m: no time to compare
      for (const auto& [kernel, us] : row.us) {
        if (kernel == k) cell = absl::StrFormat("%.1f", us);
      }
      cells.push_back(std::move(cell));
    }
    cells.push_back(row.best.Name());
    const double second = SecondBestUs(row);
    const double best = BestUs(row);
    cells.push_back(second > 0 && best > 0 ? absl::StrFormat("%.2fx", second / best)
                                           : std::string("-"));
    text.AddRow(std::move(cells));
  }
  // The epilogue only when it is not none, so that the line of a plain table reads as before.
  std::string epilogue;
  if (table.epilogue != v1::EPILOGUE_NONE) {
    epilogue = absl::StrCat(" ", common::EpilogueName(table.epilogue),
                            table.keep_normed ? " keep_normed" : "");
  }
  return absl::StrCat("tune W=", table.world, " n=", table.n, " ", common::DTypeName(table.dtype),
                      " ", common::ModeName(table.mode), epilogue, "  backend ", table.backend,
                      "  device ", table.device, "  run ", table.run_id, "  (median us)\n",
                      text.Render(), CrossoversLine(table), "\n");
}

std::string FormatTune(const TuneTable& table, OutputFormat format) {
  return format == OutputFormat::kJson ? FormatTuneJson(table) : FormatTuneText(table);
}

}  // namespace colltest::client
