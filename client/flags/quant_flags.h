// The flags of the quantising epilogues (docs/quantisation.md) of `run` and `sweep`: --epilogue,
// --keep-normed, --fp8-format, --fp8-scale, --nvfp4-global-scale and --quant-tolerance, into
// SweepSpec fields 22..27. An unset flag leaves its field at the proto's zero value, which the
// server reads as its default (epilogue none, the device's fp8 format, scales 1/32 and 256,
// strict).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "client/flags/flag_parsing.h"
#include "client/flags/sweep_flags.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// The largest scale SweepSpec takes (its comment: "at most 2^64").
inline constexpr double kMaxQuantScale = 18446744073709551616.0;

// "none,fp8_token" or "all" (none, fp8_token, fp8_tensor, nvfp4): each epilogue once, in the order
// first named, since every one is a dimension of the sweep and a repeat would only run its cases
// twice.
absl::StatusOr<std::vector<v1::Epilogue>> ParseEpiloguesFlag(absl::string_view flag,
                                                             absl::string_view text);

// A static scale: a finite number above 0 and at most 2^64 that stays above 0 in fp32. Checked here
// rather than left to the server because the proto reads 0 as "the default": `--fp8-scale 0`
// would silently run at 1/32.
absl::StatusOr<float> ParseQuantScaleFlag(absl::string_view flag, absl::string_view text);

// Sets the spec's epilogue fields from `flags`, adding one error per bad flag to `errors`, in the
// order of --help.
void ApplyQuantFlags(const SweepFlags& flags, v1::SweepSpec& spec, FlagErrors& errors);

}  // namespace colltest::client
