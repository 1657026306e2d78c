// Translation of the wire requests (Init, RunCase) into what every backend works with.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "colltest/v1/worker.pb.h"
#include "common/fault_spec.h"
#include "worker/numerics/fp8.h"
#include "worker/numerics/quant_plan.h"
#include "worker/numerics/reference.h"
#include "worker/numerics/tolerance.h"

namespace colltest::worker {

absl::StatusOr<DType> ToDType(colltest::v1::DType t);
Pattern ToPattern(colltest::v1::Pattern p);
ToleranceKind ToTolerance(colltest::v1::Tolerance t);

// The shape of `request` with `m` rows.
absl::StatusOr<CaseShape> ShapeOf(const colltest::worker::v1::CaseRequest& request, uint32_t world,
                                  uint32_t m);

// The quantising epilogue of `request` (docs/quantisation.md): epilogue UNSPECIFIED is none, fp8
// format UNSPECIFIED is the device's `device_format`, a scale left 0 the default
// (common/defaults.h), quant tolerance UNSPECIFIED strict. An unknown value, or a scale that is
// not positive, finite and at most 2^64, is InvalidArgument.
// The planted quantisation bugs a quant_* fault names (worker/numerics/quant_breaks.h); 0 for
// any other fault.
uint32_t QuantBreaksOf(common::FaultKind fault);

absl::StatusOr<QuantPlan> QuantPlanOf(const colltest::worker::v1::CaseRequest& request,
                                      Fp8Format device_format);

// How results name the case's kernel: the variant's name, or "plugin:<name>" for a kernel plugin.
std::string CaseVariantLabel(const colltest::worker::v1::CaseRequest& request);

// The bytes one rank's input takes (m * n * element size), after checking that the shape is valid
// (m, n > 0, n a multiple of the 16-byte pack) and fits the worker's buffers of `capacity` bytes.
absl::StatusOr<size_t> CaseBytes(const colltest::worker::v1::CaseRequest& request,
                                 const CaseShape& shape, size_t capacity);

// The checks every backend's Init makes of the controller's request: 1 <= world_size <= kMaxRanks
// (worker/protocol/limits.h) and rank < world_size.
absl::Status CheckInitRequest(const colltest::worker::v1::InitRequest& request);

// The checks every backend's Connect makes of the controller's request: one entry per rank of the
// world, each rank once, each with exactly one buffer handle.
absl::Status CheckConnectRequest(const colltest::worker::v1::ConnectRequest& request,
                                 uint32_t world);

// The largest input of one rank the worker is set up for: the request's max_case_bytes, or
// kDefaultMaxCaseBytes (common/defaults.h) when the controller passed none.
uint64_t CaseCapacityBytes(const colltest::worker::v1::InitRequest& request);

}  // namespace colltest::worker
