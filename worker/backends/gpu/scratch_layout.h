// A rank's private device buffers beside its registered ones (device_layout.h): carved from one
// allocation, sized once for the largest case, never mapped by a peer. The backend allocates
// `total` bytes and the case runtime takes each buffer at its offset: both from this one struct.
// Plain C++, so that host tests check it without a GPU.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/numerics/dtype.h"

namespace colltest::gpu {

// Device-side diff statistics of one check (docs/design.md section 5), accumulated with atomics.
struct DiffAccum {
  unsigned long long mismatches;
  unsigned long long checked;
  unsigned long long max_abs_bits;  // bits of a non-negative double: ordered like the value
  unsigned long long max_rel_bits;
  unsigned long long max_ulp;
  unsigned long long nan_inf;
  unsigned long long first_bad_key;  // tensor << 62 | element index; ~0 when none
  // Of a quantising epilogue (kernels_support.cu): the first row with a bad code or scale, ~0
  // when none (next to first_bad_key, so that one fill clears both), then the counts.
  unsigned long long quant_first_bad_row;
  unsigned long long quant_checked_codes;
  unsigned long long quant_code_mismatches;
  unsigned long long quant_checked_scales;
  unsigned long long quant_scale_mismatches;
  // Codes that differ from the reference's but pass its tolerance (+0 against -0, ulp's ties),
  // counted apart from the mismatches as the host's QuantCheckSummary::tolerated.
  unsigned long long quant_tolerated_codes;
};

// The weight of one row: n * sizeof(T) at most (a longer row is refused).
inline constexpr size_t kWeightBytes = 256 << 10;
// The accumulators start a block of their own, so that clearing them touches nothing else.
inline constexpr size_t kScratchAlign = 4096;

// Byte offsets into the private allocation.
struct ScratchLayout {
  size_t residual_offset = 0;           // one residual input per input slot: capacity bytes
  size_t residual_out_offset = 0;       // capacity
  size_t out_offset = 0;                // capacity
  size_t want_residual_out_offset = 0;  // the fp32 reference of residual_out
  size_t want_out_offset = 0;           // the fp32 reference of out
  size_t weight_offset = 0;             // kWeightBytes
  size_t accum_offset = 0;              // one DiffAccum per check of a case
  // A quantising epilogue's outputs (device_quant.cuh): codes (one fp8 byte an element; nvfp4
  // half that), fp8_token's row scales and nvfp4's block scales.
  size_t quant_codes_offset = 0;         // capacity / 2: T has at least 2 bytes
  size_t quant_row_scales_offset = 0;    // kMaxQuantRows floats
  size_t quant_block_scales_offset = 0;  // capacity / 32 + kMaxQuantRows (short last blocks)
  size_t total = 0;
};

// Rows of fp8_token's scales: colltestd refuses m > 65536 (server/runs/validation.h), and the
// worker refuses a quantising case of more rows (gpu_case_runner.cc).
inline constexpr size_t kMaxQuantRows = 65536;

constexpr size_t ScratchAlignUp(size_t v) {
  return (v + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
}

// `capacity`: the registered layout's (the largest m * n * sizeof(T) of a case, every input slot
// included); `checks`: the most accumulators a case uses at once.
constexpr ScratchLayout MakeScratchLayout(size_t capacity, uint32_t checks) {
  // An fp32 reference of m * n elements of T: T has at least 2 bytes, so twice the capacity.
  constexpr size_t kReferenceBytesPerCapacity = sizeof(float) / ElemBytes(DType::kBf16);
  static_assert(ElemBytes(DType::kFp16) >= ElemBytes(DType::kBf16) &&
                ElemBytes(DType::kFp32) >= ElemBytes(DType::kBf16));
  ScratchLayout l;
  size_t off = 0;
  l.residual_offset = off;
  off += capacity;
  l.residual_out_offset = off;
  off += capacity;
  l.out_offset = off;
  off += capacity;
  l.want_residual_out_offset = off;
  off += kReferenceBytesPerCapacity * capacity;
  l.want_out_offset = off;
  off += kReferenceBytesPerCapacity * capacity;
  l.weight_offset = off;
  off += kWeightBytes;
  l.accum_offset = off;
  off += ScratchAlignUp(static_cast<size_t>(checks) * sizeof(DiffAccum));
  l.quant_codes_offset = off;
  off += ScratchAlignUp(capacity / ElemBytes(DType::kBf16));
  l.quant_row_scales_offset = off;
  off += ScratchAlignUp(kMaxQuantRows * sizeof(float));
  l.quant_block_scales_offset = off;
  off += ScratchAlignUp(capacity / (ElemBytes(DType::kBf16) * 16) + kMaxQuantRows);
  l.total = off;
  return l;
}

}  // namespace colltest::gpu
