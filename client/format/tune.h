// The crossover table of `colltest tune` (docs/design.md section 4): the fastest kernel per m,
// built from one sweep, written as the JSON that colltestd reads to resolve `auto`, and shown as a
// text table. Its kernels are colltest's variants and, with `--tune-plugins`, kernel plugins
// (docs/plugins.md).
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "client/format/format.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// A kernel of the table: one of colltest's own variants, or a kernel plugin by name
// (VARIANT_PLUGIN and `plugin`), which the file and the text name "plugin:NAME". A variant
// converts to one.
struct TuneKernel {
  TuneKernel() = default;
  TuneKernel(v1::Variant v) : variant(v) {}  // NOLINT: a variant is a kernel
  static TuneKernel Plugin(std::string name) {
    TuneKernel k(v1::VARIANT_PLUGIN);
    k.plugin = std::move(name);
    return k;
  }
  // The kernel a case of the sweep ran.
  static TuneKernel Of(const v1::CaseResult& c);
  // "lamport_tb", "plugin:oneshot_norm".
  std::string Name() const;
  friend bool operator==(const TuneKernel&, const TuneKernel&) = default;
  friend auto operator<=>(const TuneKernel&, const TuneKernel&) = default;

  v1::Variant variant = v1::VARIANT_UNSPECIFIED;
  std::string plugin;  // VARIANT_PLUGIN: the plugin's name; empty otherwise
};

// One m at which some kernel was OK.
struct TuneRow {
  uint32_t m = 0;
  uint64_t bytes = 0;  // m x n x element size: the per-rank input, the unit of the seed's gate
  TuneKernel best;
  // Median us of every kernel OK at this m, in the table's kernel order.
  std::vector<std::pair<TuneKernel, double>> us;
};

// An m left out of the table because no kernel was OK there.
struct DroppedTuneRow {
  uint32_t m = 0;
  // What each kernel got instead, in the table's kernel order: a status name, "OK untimed", or
  // "no result" when the run holds no case for it.
  std::vector<std::pair<TuneKernel, std::string>> outcomes;
};

struct TuneTable {
  std::string backend;
  std::string device;
  uint32_t world = 0;
  v1::DType dtype = v1::DTYPE_BF16;
  v1::Mode mode = v1::MODE_GRAPH;
  uint32_t n = 0;
  // The spec's one epilogue (none when it names none), and keep_normed with a quantising one.
  v1::Epilogue epilogue = v1::EPILOGUE_NONE;
  bool keep_normed = false;
  int64_t created_unix_ms = 0;
  std::string run_id;
  // The sweep's variants, then its plugins (SweepSpec.plugins), in order: the text table's
  // columns, and the order that breaks a tie.
  std::vector<TuneKernel> kernels;
  std::vector<TuneRow> rows;  // ascending m
  std::vector<DroppedTuneRow> dropped;
};

// The table of `run`, the result of the sweep `spec` (built by BuildTuneSpec: one n, one mode).
// Rows follow the spec's m; a kernel counts at an m only when its case is OK with a median above
// 0 (an untimed OK would win with 0 us), and ties go to the kernel listed first (colltest's own
// variants before the plugins).
TuneTable BuildTuneTable(const v1::SweepSpec& spec, const v1::RunResult& run,
                         const v1::ListDevicesResponse& devices, int64_t created_unix_ms);

// "no tune row for m=1024: no variant OK (one_stage UNSUPPORTED, lamport HANG)".
std::string DroppedRowWarning(const DroppedTuneRow& row);

// The name `tune --out FOLDER` gives the file: "tune_cuda_h200_w2_bf16_graph_n7168.json", with
// "_EPILOGUE" before ".json" when the epilogue is not none ("_nvfp4", "_fp8_token_keep_normed"),
// so that the tables of one box sit side by side. The device is the last word of its name, lower
// case ("NVIDIA H200": h200), left out when there is none.
std::string TuneTableFileName(const TuneTable& table);

// The JSON that colltestd loads (kind "colltest-tune-table", version 1). Its fields are read by
// the server: add, never rename.
std::string FormatTuneJson(const TuneTable& table);
// One line per m (bytes, each variant's median, best, speed-up over the second best), then a
// "crossovers: ..." line.
std::string FormatTuneText(const TuneTable& table);
// kJson or, for anything else, the text.
std::string FormatTune(const TuneTable& table, OutputFormat format);

}  // namespace colltest::client
