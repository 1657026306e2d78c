#include "client/flags/nccl_names.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/names.h"
#include "common/parse.h"

namespace colltest::client {
namespace {

// nccl-tests' names of the dtypes colltest runs.
const std::pair<const char*, v1::DType> kNcclDTypes[] = {
    {"bfloat16", v1::DTYPE_BF16}, {"half", v1::DTYPE_FP16},    {"float16", v1::DTYPE_FP16},
    {"float", v1::DTYPE_FP32},    {"float32", v1::DTYPE_FP32},
};

}  // namespace

std::optional<v1::DType> ParseDTypeOrNcclName(absl::string_view name) {
  if (std::optional<v1::DType> own = common::ParseDTypeName(name)) return own;
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& [nccl, dtype] : kNcclDTypes) {
    if (lower == nccl) return dtype;
  }
  return std::nullopt;
}

std::vector<std::string> DTypeAndNcclNames() {
  std::vector<std::string> names = common::DTypeNames();
  for (const auto& entry : kNcclDTypes) names.emplace_back(entry.first);
  return names;
}

absl::Status ParseCheckFlag(absl::string_view flag, absl::string_view text) {
  absl::StatusOr<uint64_t> count = common::ParseCount(flag, text);
  if (!count.ok()) return count.status();
  if (*count == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", text,
                     "': colltest has no unchecked case, every case's output is checked; leave "
                     "out -c (or give 1)"));
  }
  if (*count > 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": '", text,
                     "': colltest checks the last timed call of each case (-c 1); for more "
                     "checked calls use --stress N"));
  }
  return absl::OkStatus();
}

}  // namespace colltest::client
