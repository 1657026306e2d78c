// Short names of the public enums as users type them on the command line ("lamport", "bf16",
// "eager"), used in validation messages, verdicts and logs so that a message can be pasted back
// into a command.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "colltest/v1/colltest.pb.h"

namespace colltest::server {

std::string VariantName(colltest::v1::Variant v);
std::string ModeName(colltest::v1::Mode m);
std::string DTypeName(colltest::v1::DType t);
std::string PatternName(colltest::v1::Pattern p);
std::string ToleranceName(colltest::v1::Tolerance t);
std::string CaseStatusName(colltest::v1::CaseStatus s);
std::string RunStateName(colltest::v1::RunState s);

// Bytes of one element; DTYPE_UNSPECIFIED counts as bf16, as the API defines.
size_t ElemBytes(colltest::v1::DType t);
// Elements in one 16-byte pack, the unit every kernel loads, stores and polls.
inline uint32_t PackElems(colltest::v1::DType t) {
  return static_cast<uint32_t>(16 / ElemBytes(t));
}

}  // namespace colltest::server
