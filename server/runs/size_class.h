// The size class of a case, a label of colltestd's per-case metrics (docs/metrics.md): a case's
// m x n shape is unbounded, so the metrics bucket it by the bytes each rank feeds in. Four
// classes keep the series of a dashboard few while separating the regimes an all-reduce kernel
// goes through: latency-bound one-shot sizes, the switch-over range, and bandwidth-bound ones.
#pragma once

#include <array>
#include <cstdint>

#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

// Every class, smallest first: "le_64KiB" (at most 65536 bytes), "le_1MiB", "le_8MiB", "gt_8MiB".
inline constexpr std::array<absl::string_view, 4> kSizeClasses = {"le_64KiB", "le_1MiB", "le_8MiB",
                                                                  "gt_8MiB"};

// Per-rank input bytes of a case: m x n x the element's bytes (bf16 and fp16 2, fp32 4).
uint64_t CaseInputBytes(uint32_t m, uint32_t n, colltest::v1::DType dtype);

// The class of `bytes`, one of kSizeClasses; a bound itself belongs to the class it closes.
absl::string_view SizeClass(uint64_t bytes);

// The class of a case's shape and dtype.
absl::string_view SizeClassOf(const colltest::v1::CaseResult& result);

}  // namespace colltest::server
