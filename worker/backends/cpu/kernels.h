// The five protocol variants of the fused all-reduce + residual + RMSNorm, one block at a time.
// Each function is the body of one "kernel" for block ctx.block of ctx.grid, run on every rank.
// Arithmetic follows docs/design.md section 3 in every variant: the all-reduce sums in fp32 in rank
// order and rounds to T, so the all-reduce part is bit-identical across variants.
#pragma once

#include <cstddef>
#include <cstdint>

#include "worker/backends/cpu/block_context.h"
#include "worker/backends/cpu/quant_row.h"
#include "worker/numerics/dtype.h"

namespace colltest::cpu {

struct CallArgs {
  uint32_t m = 0;
  uint32_t n = 0;
  bool residual = true;
  float eps = 1e-6f;
  size_t input_offset = 0;  // byte offset of this call's input slot in every rank's input region
  const void* residual_in = nullptr;  // private, m * n
  const void* weight = nullptr;       // private, n
  void* residual_out = nullptr;       // private, m * n
  void* out = nullptr;                // private, m * n; untouched when quant does not write it
  uint32_t arm_repeat = 1;
  QuantOutputs quant;  // the quantising epilogue after the norm, if the case has one
};

template <DType D>
void OneStageBlock(const BlockContext& ctx, const CallArgs& args);
template <DType D>
void ReduceScatterBlock(const BlockContext& ctx, const CallArgs& args);  // two_kernel, kernel 1
template <DType D>
void LoadNormBlock(const BlockContext& ctx, const CallArgs& args);  // two_kernel, kernel 2
template <DType D>
void LamportBlock(const BlockContext& ctx, const CallArgs& args);
template <DType D>
void LamportTbBlock(const BlockContext& ctx, const CallArgs& args);
template <DType D>
void LamportTwoShotBlock(const BlockContext& ctx, const CallArgs& args);

// Host-side arming of `bytes` bytes of Lamport staging with the sentinel.
void ArmStaging(DType dtype, uint8_t* staging, size_t bytes);

}  // namespace colltest::cpu
