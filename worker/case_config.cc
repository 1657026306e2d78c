#include "worker/case_config.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/defaults.h"
#include "common/names.h"
#include "common/status_macros.h"
#include "worker/numerics/quant_breaks.h"
#include "worker/protocol/limits.h"

namespace colltest::worker {

absl::StatusOr<DType> ToDType(colltest::v1::DType t) {
  switch (t) {
    case colltest::v1::DTYPE_UNSPECIFIED:
    case colltest::v1::DTYPE_BF16:
      return DType::kBf16;
    case colltest::v1::DTYPE_FP16:
      return DType::kFp16;
    case colltest::v1::DTYPE_FP32:
      return DType::kFp32;
    default:
      return absl::InvalidArgumentError(absl::StrCat("dtype = ", t, ": unknown"));
  }
}

Pattern ToPattern(colltest::v1::Pattern p) {
  switch (p) {
    case colltest::v1::PATTERN_INTEGERS:
      return Pattern::kIntegers;
    case colltest::v1::PATTERN_NEG_ZERO:
      return Pattern::kNegZero;
    case colltest::v1::PATTERN_LARGE:
      return Pattern::kLarge;
    case colltest::v1::PATTERN_DENORMAL:
      return Pattern::kDenormal;
    case colltest::v1::PATTERN_SAME:
      return Pattern::kSame;
    case colltest::v1::PATTERN_AMAX_LAST_RANK:
      return Pattern::kAmaxLastRank;
    case colltest::v1::PATTERN_QUANT_TIES:
      return Pattern::kQuantTies;
    case colltest::v1::PATTERN_QUANT_SATURATE:
      return Pattern::kQuantSaturate;
    case colltest::v1::PATTERN_ZERO_ROWS:
      return Pattern::kZeroRows;
    default:
      return Pattern::kNormal;
  }
}

ToleranceKind ToTolerance(colltest::v1::Tolerance t) {
  switch (t) {
    case colltest::v1::TOLERANCE_AITER:
      return ToleranceKind::kAiter;
    case colltest::v1::TOLERANCE_TRTLLM:
      return ToleranceKind::kTrtllm;
    default:
      return ToleranceKind::kStrict;
  }
}

absl::StatusOr<CaseShape> ShapeOf(const colltest::worker::v1::CaseRequest& request, uint32_t world,
                                  uint32_t m) {
  absl::StatusOr<DType> dtype = ToDType(request.dtype());
  if (!dtype.ok()) return dtype.status();
  CaseShape s;
  s.dtype = *dtype;
  s.pattern = ToPattern(request.pattern());
  s.world = world;
  s.m = m;
  s.n = request.n();
  s.residual = request.residual();
  s.eps = request.eps() > 0 ? request.eps() : 1e-6f;
  s.seed = request.seed();
  return s;
}

namespace {

absl::StatusOr<std::optional<QuantScheme>> ToQuantScheme(colltest::v1::Epilogue e) {
  switch (e) {
    case colltest::v1::EPILOGUE_UNSPECIFIED:
    case colltest::v1::EPILOGUE_NONE:
      return std::optional<QuantScheme>();
    case colltest::v1::EPILOGUE_FP8_TOKEN:
      return QuantScheme::kFp8Token;
    case colltest::v1::EPILOGUE_FP8_TENSOR:
      return QuantScheme::kFp8Tensor;
    case colltest::v1::EPILOGUE_NVFP4:
      return QuantScheme::kNvfp4;
    default:
      return absl::InvalidArgumentError(absl::StrCat("epilogue = ", e, ": unknown"));
  }
}

absl::StatusOr<Fp8Format> ToFp8Format(colltest::v1::Fp8Format f, Fp8Format device_format) {
  switch (f) {
    case colltest::v1::FP8_FORMAT_UNSPECIFIED:
      return device_format;
    case colltest::v1::FP8_FORMAT_E4M3FN:
      return Fp8Format::kE4m3fn;
    case colltest::v1::FP8_FORMAT_E4M3FNUZ:
      return Fp8Format::kE4m3fnuz;
    default:
      return absl::InvalidArgumentError(absl::StrCat("fp8_format = ", f, ": unknown"));
  }
}

absl::StatusOr<QuantTolerance> ToQuantTolerance(colltest::v1::QuantTolerance t) {
  switch (t) {
    case colltest::v1::QUANT_TOLERANCE_UNSPECIFIED:
    case colltest::v1::QUANT_TOLERANCE_STRICT:
      return QuantTolerance::kStrict;
    case colltest::v1::QUANT_TOLERANCE_ULP:
      return QuantTolerance::kUlp;
    default:
      return absl::InvalidArgumentError(absl::StrCat("quant_tolerance = ", t, ": unknown"));
  }
}

// A given scale: 0 is the default; otherwise positive, finite and at most 2^64, as the sweep
// validation allows.
absl::StatusOr<float> GivenScale(const char* name, float scale, float fallback) {
  if (scale == 0.0f) return fallback;
  if (!(scale > 0.0f && scale <= 0x1p64f)) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, " = ", scale, ": must be positive, finite and at most 2^64"));
  }
  return scale;
}

}  // namespace

uint32_t QuantBreaksOf(common::FaultKind fault) {
  switch (fault) {
    case common::FaultKind::kQuantAmaxBeforeLastRank:
      return kQuantBreakAmaxBeforeLastRank;
    case common::FaultKind::kQuantTruncate:
      return kQuantBreakTruncate;
    case common::FaultKind::kQuantNoSaturation:
      return kQuantBreakNoSaturation;
    case common::FaultKind::kQuantSwapFormat:
      return kQuantBreakSwapFormat;
    case common::FaultKind::kQuantBlockOffset:
      return kQuantBreakBlockOffset;
    default:
      return kQuantBreakNone;
  }
}

absl::StatusOr<QuantPlan> QuantPlanOf(const colltest::worker::v1::CaseRequest& request,
                                      Fp8Format device_format) {
  QuantPlan plan;
  COLLTEST_ASSIGN_OR_RETURN(plan.scheme, ToQuantScheme(request.epilogue()));
  COLLTEST_ASSIGN_OR_RETURN(plan.format, ToFp8Format(request.fp8_format(), device_format));
  COLLTEST_ASSIGN_OR_RETURN(plan.tolerance, ToQuantTolerance(request.quant_tolerance()));
  COLLTEST_ASSIGN_OR_RETURN(plan.fp8_scale,
                            GivenScale("fp8_scale", request.fp8_scale(), kDefaultFp8Scale));
  COLLTEST_ASSIGN_OR_RETURN(
      plan.nvfp4_global_scale,
      GivenScale("nvfp4_global_scale", request.nvfp4_global_scale(), kDefaultNvfp4GlobalScale));
  plan.keep_normed = request.keep_normed();
  return plan;
}

absl::StatusOr<size_t> CaseBytes(const colltest::worker::v1::CaseRequest& request,
                                 const CaseShape& shape, size_t capacity) {
  if (request.m() == 0 || request.n() == 0 || request.n() % PackElems(shape.dtype) != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("shape m = ", request.m(), ", n = ", request.n(), " is invalid"));
  }
  const size_t elem = ElemBytes(shape.dtype);
  const size_t bytes = static_cast<size_t>(request.m()) * request.n() * elem;
  if (bytes > capacity) {
    return absl::InvalidArgumentError(absl::StrCat("m * n * ", elem, " = ", bytes,
                                                   " bytes exceeds the worker's buffers of ",
                                                   capacity, " bytes"));
  }
  return bytes;
}

absl::Status CheckInitRequest(const colltest::worker::v1::InitRequest& request) {
  if (request.world_size() < 1 || request.world_size() > protocol::kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("world_size = ", request.world_size(),
                                                   ": must be in 1..", protocol::kMaxRanks));
  }
  if (request.rank() >= request.world_size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("rank = ", request.rank(), ": must be < world_size"));
  }
  // Slots of one device (colltestd --ranks-per-gpu): the group's ranks on it are some of them.
  if (request.device_slots() > protocol::kMaxRanks) {
    return absl::InvalidArgumentError(absl::StrCat("device_slots = ", request.device_slots(),
                                                   ": must be in 0..", protocol::kMaxRanks));
  }
  if (request.ranks_on_device() > std::max(1u, request.device_slots()) ||
      request.ranks_on_device() > request.world_size()) {
    return absl::InvalidArgumentError(absl::StrCat("ranks_on_device = ", request.ranks_on_device(),
                                                   ": must be <= world_size and <= device_slots (",
                                                   request.device_slots(), ")"));
  }
  return absl::OkStatus();
}

absl::Status CheckConnectRequest(const colltest::worker::v1::ConnectRequest& request,
                                 uint32_t world) {
  if (request.peers_size() != static_cast<int>(world)) {
    return absl::InvalidArgumentError(
        absl::StrCat("peers: ", request.peers_size(), " entries for a world of ", world));
  }
  std::vector<bool> seen(world, false);
  for (const auto& peer : request.peers()) {
    // The rank's buffers first; kernel plugins' workspaces after them (worker/plugins).
    if (peer.rank() >= world || seen[peer.rank()] || peer.handles_size() < 1) {
      return absl::InvalidArgumentError(absl::StrCat("peers: bad entry for rank ", peer.rank()));
    }
    seen[peer.rank()] = true;
  }
  return absl::OkStatus();
}

std::string CaseVariantLabel(const colltest::worker::v1::CaseRequest& request) {
  if (request.variant() == colltest::v1::VARIANT_PLUGIN) {
    return absl::StrCat("plugin:", request.plugin());
  }
  return std::string(common::VariantName(request.variant()));
}

uint64_t CaseCapacityBytes(const colltest::worker::v1::InitRequest& request) {
  return request.max_case_bytes() > 0 ? request.max_case_bytes() : kDefaultMaxCaseBytes;
}

}  // namespace colltest::worker
