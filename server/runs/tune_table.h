// The measured crossover tables that `auto` dispatches with (docs/design.md section 4).
// `colltest tune` sweeps the variants at one (backend, world, dtype, mode, n) and writes a table of
// the fastest variant per m; colltestd loads every table of its --tune-dir at start and resolves
// `auto` on the controller, so the workers only ever run concrete variants and the result says
// which one (CaseResult.resolved_variant) and from which table row (the message).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

// A file of the tune directory that LoadDir leaves alone: the expected bus bandwidths of the long
// health level (server/health/health_levels.h, kExpectedBusbwFile).
inline constexpr char kExpectedBusbwFileName[] = "expected_busbw.json";

struct TuneTable {
  std::string source;  // file it came from, for messages
  std::string backend;
  std::string device;
  uint32_t world = 0;
  colltest::v1::DType dtype = colltest::v1::DTYPE_BF16;
  colltest::v1::Mode mode = colltest::v1::MODE_GRAPH;
  uint32_t n = 0;
  struct Row {
    uint32_t m = 0;
    uint64_t bytes = 0;  // m * n * element size: the per-rank input, the seed's gate unit
    colltest::v1::Variant best = colltest::v1::VARIANT_UNSPECIFIED;
    // The measured median us per call of each variant at this row ("us" in the file; may be
    // absent in tables written before it was recorded).
    std::vector<std::pair<colltest::v1::Variant, double>> us;
  };
  std::vector<Row> rows;  // ascending bytes
};

// Parses one table written by `colltest tune`; errors name the file and the field.
absl::StatusOr<TuneTable> ParseTuneTable(const std::string& json, const std::string& source);

struct AutoChoice {
  colltest::v1::Variant variant;
  std::string why;  // "lamport_tb: tune table FILE (cuda W=2 bf16 graph n=7168), row m=64"
};

class TuneTables {
 public:
  TuneTables() = default;
  explicit TuneTables(std::vector<TuneTable> tables) : tables_(std::move(tables)) {}

  // Every *.json of `dir` (an absent directory gives no table); a file that is not a valid table
  // is an error naming it, so a typo does not silently turn `auto` off.
  static absl::StatusOr<TuneTables> LoadDir(const std::string& dir);

  // The variant for a case: the table of the same backend, world and dtype (same mode preferred,
  // then the nearest n). Between two rows that both carry every variant's time, the variant whose
  // time, interpolated linearly in bytes, is the least (a crossover between two rows is then
  // found where the times cross, not at the next row); otherwise, and outside the table, the row
  // with the largest byte size not above the case's (the first row below the smallest). None when
  // no table matches.
  std::optional<AutoChoice> Resolve(const std::string& backend, uint32_t world,
                                    colltest::v1::DType dtype, colltest::v1::Mode mode, uint32_t m,
                                    uint32_t n) const;

  const std::vector<TuneTable>& tables() const { return tables_; }

 private:
  std::vector<TuneTable> tables_;
};

}  // namespace colltest::server
