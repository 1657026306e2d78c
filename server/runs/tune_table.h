// The measured crossover tables that `auto` dispatches with (docs/design.md section 4).
// `colltest tune` sweeps the variants at one (backend, world, dtype, mode, n, epilogue) and writes
// a table of the fastest kernel per m; colltestd loads every table of its --tune-dir at start and
// resolves `auto` on the controller, so the workers only ever run concrete kernels and the result
// says which one (CaseResult.resolved_variant, and CaseResult.plugin for a kernel plugin) and from
// which table row (the message). A table measured with `colltest tune --tune-plugins` may name
// kernel plugins ("plugin:NAME", docs/plugins.md) beside colltest's own variants.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

// A file of the tune directory that LoadDir leaves alone: the expected bus bandwidths of the long
// health level (server/health/health_levels.h, kExpectedBusbwFile).
inline constexpr char kExpectedBusbwFileName[] = "expected_busbw.json";

// A kernel of a table: one of colltest's own variants, or a kernel plugin by name (VARIANT_PLUGIN
// and `plugin`; "plugin:NAME" in the file). A variant converts to one.
struct TuneKernel {
  TuneKernel() = default;
  TuneKernel(colltest::v1::Variant v) : variant(v) {}  // NOLINT: a variant is a kernel
  static TuneKernel Plugin(std::string name) {
    TuneKernel k(colltest::v1::VARIANT_PLUGIN);
    k.plugin = std::move(name);
    return k;
  }
  bool is_plugin() const { return variant == colltest::v1::VARIANT_PLUGIN; }
  // "lamport_tb", "plugin:oneshot_norm": as the file and the messages name it.
  std::string Name() const;
  friend bool operator==(const TuneKernel&, const TuneKernel&) = default;

  colltest::v1::Variant variant = colltest::v1::VARIANT_UNSPECIFIED;
  std::string plugin;  // VARIANT_PLUGIN: the plugin's name; empty otherwise
};

struct TuneTable {
  std::string source;  // file it came from, for messages
  std::string backend;
  std::string device;
  uint32_t world = 0;
  colltest::v1::DType dtype = colltest::v1::DTYPE_BF16;
  colltest::v1::Mode mode = colltest::v1::MODE_GRAPH;
  uint32_t n = 0;
  // The epilogue every variant was timed with ("epilogue" in the file; none when absent, as in the
  // tables written before it was recorded). Part of the key: a fused quantisation changes every
  // variant's cost by a different amount (fp8_token's row amax is a block reduction, nvfp4's a
  // shuffle per block, each in the variant's own last stage), so the crossovers move.
  colltest::v1::Epilogue epilogue = colltest::v1::EPILOGUE_NONE;
  // "keep_normed" in the file, only with a quantising epilogue. Not part of the key: it adds the
  // same local store of the normed row in T to every variant (the store a table of epilogue none
  // already times), and no traffic between ranks, so it shifts all variants alike. A table with
  // the case's setting is preferred when one exists.
  bool keep_normed = false;
  struct Row {
    uint32_t m = 0;
    uint64_t bytes = 0;  // m * n * element size: the per-rank input, the seed's gate unit
    TuneKernel best;
    // The measured median us per call of each kernel at this row ("us" in the file, in its
    // order; may be absent in tables written before it was recorded).
    std::vector<std::pair<TuneKernel, double>> us;
  };
  std::vector<Row> rows;  // ascending bytes
};

// Parses one table written by `colltest tune`; errors name the file and the field.
absl::StatusOr<TuneTable> ParseTuneTable(const std::string& json, const std::string& source);

// "cuda W=2 bf16 graph n=7168", then the epilogue when it is not none ("... n=7168 fp8_token",
// "... nvfp4 keep_normed"): what a message says a table stands for.
std::string DescribeTuneTable(const TuneTable& table);

// What `auto` is asked to dispatch: the case's key and shape.
struct AutoCase {
  std::string backend;
  uint32_t world = 0;
  colltest::v1::DType dtype = colltest::v1::DTYPE_BF16;
  colltest::v1::Mode mode = colltest::v1::MODE_GRAPH;
  colltest::v1::Epilogue epilogue = colltest::v1::EPILOGUE_NONE;  // UNSPECIFIED reads as none
  bool keep_normed = false;
  uint32_t m = 0;
  uint32_t n = 0;
  // The kernel plugins colltestd loaded, by name: a table's choice of another plugin cannot run.
  std::vector<std::string> plugins;
};

struct AutoChoice {
  TuneKernel kernel;
  std::string why;  // "lamport_tb: tune table FILE (cuda W=2 bf16 graph n=7168), row m=64"
};

class TuneTables {
 public:
  TuneTables() = default;
  explicit TuneTables(std::vector<TuneTable> tables) : tables_(std::move(tables)) {}

  // Every *.json of `dir` (an absent directory gives no table); a file that is not a valid table
  // is an error naming it, so a typo does not silently turn `auto` off.
  static absl::StatusOr<TuneTables> LoadDir(const std::string& dir);

  // The kernel for a case: the table of the same backend, world, dtype and epilogue (same mode
  // preferred, then the nearest n, then the same keep_normed). Between two rows that both carry
  // a kernel's time, the kernel whose time, interpolated linearly in bytes, is the least (a
  // crossover between two rows is then found where the times cross, not at the next row);
  // otherwise, and outside the table, the best of the row with the largest byte size not above
  // the case's (the first row below the smallest). Plugins count as variants do. NotFound when no
  // table matches, its message the reason the case is UNSUPPORTED: the epilogue, those that tables
  // exist for at the case's backend, world and dtype, and the `colltest tune` command that makes
  // one.
  //
  // When that choice is a plugin not in `c.plugins` (colltestd did not load it), the fastest of
  // colltest's own variants the same rows measured, found the same way, and the reason says so
  // ("one_stage: plugin:NAME of the table is not loaded, ..."); FailedPrecondition, the case
  // UNSUPPORTED, when they measured none.
  absl::StatusOr<AutoChoice> Resolve(const AutoCase& c) const;

  const std::vector<TuneTable>& tables() const { return tables_; }

 private:
  std::vector<TuneTable> tables_;
};

}  // namespace colltest::server
