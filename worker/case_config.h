// Translation of the wire case into the numerics' own types.
#pragma once

#include "absl/status/statusor.h"
#include "colltest/v1/worker.pb.h"
#include "worker/numerics/reference.h"
#include "worker/numerics/tolerance.h"

namespace colltest::worker {

absl::StatusOr<DType> ToDType(colltest::v1::DType t);
Pattern ToPattern(colltest::v1::Pattern p);
ToleranceKind ToTolerance(colltest::v1::Tolerance t);
const char* VariantName(colltest::v1::Variant v);

// The shape of `request` with `m` rows.
absl::StatusOr<CaseShape> ShapeOf(const colltest::worker::v1::CaseRequest& request, uint32_t world,
                                  uint32_t m);

}  // namespace colltest::worker
