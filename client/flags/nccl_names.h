// The spellings nccl-tests users type, read as colltest's own: the dtype names of nccl-tests' -d
// (`bfloat16`, `half`, `float`) beside colltest's (`bf16`, `fp16`, `fp32`), and nccl-tests' -c.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// colltest's dtype names (common/names.h), then nccl-tests' names of the same types:
// bfloat16 = bf16, half and float16 = fp16, float and float32 = fp32. Case-insensitive.
std::optional<v1::DType> ParseDTypeOrNcclName(absl::string_view name);

// Every name ParseDTypeOrNcclName takes, for the "did you mean" hint.
std::vector<std::string> DTypeAndNcclNames();

// nccl-tests' -c N checks N calls of each size. colltest checks the last timed call of every case,
// which is `-c 1`, the default of both; 0 (no check) and more than 1 have no colltest meaning, so
// they are refused naming what to use instead.
absl::Status ParseCheckFlag(absl::string_view flag, absl::string_view text);

}  // namespace colltest::client
