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

// The bytes one rank's input takes (m * n * element size), after checking that the shape is valid
// (m, n > 0, n a multiple of the 16-byte pack) and fits the worker's buffers of `capacity` bytes.
absl::StatusOr<size_t> CaseBytes(const colltest::worker::v1::CaseRequest& request,
                                 const CaseShape& shape, size_t capacity);

}  // namespace colltest::worker
