#include "client/flags/quant_flags.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kScaleExpected =
    "a positive finite number, at most 2^64 (18446744073709551616)";

std::string EpiloguesExpected() {
  return absl::StrCat("a comma-separated list of ", OneOf(common::EpilogueNames()), ", or all");
}

absl::StatusOr<v1::Fp8Format> ParseFp8FormatFlag(absl::string_view flag, absl::string_view text) {
  return ParseEnumFlag<v1::Fp8Format>(flag, text, common::ParseFp8FormatName,
                                      OneOf(common::Fp8FormatNames()), common::Fp8FormatNames());
}

absl::StatusOr<v1::QuantTolerance> ParseQuantToleranceFlag(absl::string_view flag,
                                                           absl::string_view text) {
  return ParseEnumFlag<v1::QuantTolerance>(flag, text, common::ParseQuantToleranceName,
                                           OneOf(common::QuantToleranceNames()),
                                           common::QuantToleranceNames());
}

}  // namespace

absl::StatusOr<std::vector<v1::Epilogue>> ParseEpiloguesFlag(absl::string_view flag,
                                                             absl::string_view text) {
  std::vector<v1::Epilogue> all;
  for (int e = v1::EPILOGUE_NONE; e <= v1::Epilogue_MAX; ++e) {
    all.push_back(static_cast<v1::Epilogue>(e));
  }
  COLLTEST_ASSIGN_OR_RETURN(
      const std::vector<v1::Epilogue> named,
      ParseNameList<v1::Epilogue>(flag, text, "epilogue", common::ParseEpilogueName, all,
                                  common::EpilogueNames(), EpiloguesExpected()));
  std::vector<v1::Epilogue> distinct;
  for (v1::Epilogue e : named) {
    if (std::find(distinct.begin(), distinct.end(), e) == distinct.end()) distinct.push_back(e);
  }
  return distinct;
}

absl::StatusOr<float> ParseQuantScaleFlag(absl::string_view flag, absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  double value = 0;
  if (!absl::SimpleAtod(trimmed, &value) || !std::isfinite(value)) {
    return FlagError(flag, text, kScaleExpected);
  }
  auto refused = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", trimmed, "' ", why, ": expected ", kScaleExpected));
  };
  if (value <= 0) return refused("is not above 0 (0 would mean the default)");
  if (value > kMaxQuantScale) return refused("is above the limit 2^64");
  const float scale = static_cast<float>(value);
  if (scale <= 0) return refused("is 0 in fp32");
  return scale;
}

void ApplyQuantFlags(const SweepFlags& flags, v1::SweepSpec& spec, FlagErrors& errors) {
  errors.Add(ApplyFlag(flags.epilogue, "--epilogue", ParseEpiloguesFlag,
                       [&](const std::vector<v1::Epilogue>& v) {
                         for (v1::Epilogue e : v) spec.add_epilogues(e);
                       }));
  errors.Add(ApplyFlag(flags.fp8_format, "--fp8-format", ParseFp8FormatFlag,
                       [&](v1::Fp8Format v) { spec.set_fp8_format(v); }));
  errors.Add(ApplyFlag(flags.fp8_scale, "--fp8-scale", ParseQuantScaleFlag,
                       [&](float v) { spec.set_fp8_scale(v); }));
  errors.Add(ApplyFlag(flags.nvfp4_global_scale, "--nvfp4-global-scale", ParseQuantScaleFlag,
                       [&](float v) { spec.set_nvfp4_global_scale(v); }));
  errors.Add(ApplyFlag(flags.quant_tolerance, "--quant-tolerance", ParseQuantToleranceFlag,
                       [&](v1::QuantTolerance v) { spec.set_quant_tolerance(v); }));
  spec.set_keep_normed(flags.keep_normed);
}

}  // namespace colltest::client
