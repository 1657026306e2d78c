// Sizes as nccl-tests users give them: the per-rank message size in bytes, as a range, turned
// into the row counts (m) that a SweepSpec carries.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "client/flags/sweep_flags.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// The m list of a sweep from --m, or from --bytes RANGE or -b/-e/-f, for the spec's hidden sizes
// `n` and its dtype (DTYPE_UNSPECIFIED is bf16, as on the server). Returns an empty list when
// none of those flags was given (the caller's default applies). Refused, naming the flags: --m
// together with a byte flag, a byte flag with more or fewer than one n, a size that is not a
// whole number of rows (m x n x element size), and -e below -b.
absl::StatusOr<std::vector<uint32_t>> ResolveRows(const SweepFlags& flags,
                                                  const std::vector<uint32_t>& n, v1::DType dtype);

}  // namespace colltest::client
