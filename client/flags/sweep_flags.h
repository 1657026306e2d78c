// The raw flags of `run` and `sweep`, in a header of their own because two translations read them:
// BuildSweepSpec (flags.h) and the byte-size rows (size_flags.h), which flags.cc uses in turn.
#pragma once

#include <optional>
#include <string>

namespace colltest::client {

// Raw flag values as typed. Unset n, dtype, m and modes get the client's defaults (BuildSweepSpec);
// unset variants are the server's (VariantsFromServer); any other unset flag leaves the proto
// field at its zero value, which the server reads as "its default".
struct SweepFlags {
  std::optional<std::string> world;
  std::optional<std::string> devices;
  std::optional<std::string> m;
  // Per-rank message sizes instead of --m, as nccl-tests takes them: --bytes RANGE
  // ("8:128M:x2") or -b/-e/-f (begin, end, factor). Converted to m for the one n and the dtype
  // (client/flags/size_flags.h).
  std::optional<std::string> bytes;
  std::optional<std::string> bytes_begin;
  std::optional<std::string> bytes_end;
  std::optional<std::string> bytes_factor;
  std::optional<std::string> n;
  std::optional<std::string> dtype;
  std::optional<std::string> variants;
  std::optional<std::string> modes;
  std::optional<std::string> pattern;
  std::optional<std::string> tolerance;
  // The quantising epilogues (client/flags/quant_flags.h, docs/quantisation.md).
  std::optional<std::string> epilogue;
  bool keep_normed = false;
  std::optional<std::string> fp8_format;
  std::optional<std::string> fp8_scale;
  std::optional<std::string> nvfp4_global_scale;
  std::optional<std::string> quant_tolerance;
  std::optional<std::string> warmup;
  std::optional<std::string> iters;
  std::optional<std::string> check;  // nccl-tests' -c: only 1 is taken (nccl_names.h)
  std::optional<std::string> stress;
  std::optional<std::string> seed;
  std::optional<std::string> timeout;
  bool no_residual = false;
  std::optional<std::string> eps;
  std::optional<std::string> fault;
  std::optional<std::string> grid_blocks;
  std::optional<std::string> threads_per_block;
  std::optional<std::string> lamport_min_bytes;
  std::optional<std::string> arm_repeat;
  std::optional<std::string> label;
  bool stop_on_failure = false;
  bool force = false;  // SweepSpec.force: run even when other processes use the devices
};

}  // namespace colltest::client
