#include "server/names.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace colltest::server {
namespace {

namespace v1 = ::colltest::v1;

// The proto names carry the enum's prefix ("VARIANT_LAMPORT_TB"); the short form drops it. Values
// outside the enum (a newer client) print as their number so the message still says something.
std::string Short(const std::string& full, absl::string_view prefix, int value) {
  if (full.empty()) return absl::StrCat(value);
  std::string s = full;
  if (absl::StartsWith(s, prefix)) s = s.substr(prefix.size());
  return absl::AsciiStrToLower(s);
}

}  // namespace

std::string VariantName(v1::Variant v) { return Short(v1::Variant_Name(v), "VARIANT_", v); }
std::string ModeName(v1::Mode m) { return Short(v1::Mode_Name(m), "MODE_", m); }
std::string DTypeName(v1::DType t) { return Short(v1::DType_Name(t), "DTYPE_", t); }
std::string PatternName(v1::Pattern p) { return Short(v1::Pattern_Name(p), "PATTERN_", p); }
std::string ToleranceName(v1::Tolerance t) { return Short(v1::Tolerance_Name(t), "TOLERANCE_", t); }

std::string CaseStatusName(v1::CaseStatus s) {
  // Statuses are shown upper case, as in the JSON contract ("OK", "HANG").
  return absl::AsciiStrToUpper(Short(v1::CaseStatus_Name(s), "CASE_STATUS_", s));
}

std::string RunStateName(v1::RunState s) {
  return absl::AsciiStrToUpper(Short(v1::RunState_Name(s), "RUN_STATE_", s));
}

size_t ElemBytes(v1::DType t) { return t == v1::DTYPE_FP32 ? 4 : 2; }

}  // namespace colltest::server
