#include "common/names.h"

#include <array>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"

namespace colltest::common {
namespace {

template <typename Enum, size_t N>
std::optional<Enum> Lookup(const std::array<std::pair<Enum, absl::string_view>, N>& table,
                           absl::string_view name) {
  const std::string lower = absl::AsciiStrToLower(name);
  for (const auto& [value, text] : table) {
    if (text == lower) return value;
  }
  return std::nullopt;
}

template <typename Enum, size_t N>
std::vector<std::string> NamesOf(const std::array<std::pair<Enum, absl::string_view>, N>& table) {
  std::vector<std::string> names;
  names.reserve(N);
  for (const auto& [value, text] : table) names.push_back(absl::AsciiStrToLower(text));
  return names;
}

template <typename Enum, size_t N>
absl::string_view NameOf(const std::array<std::pair<Enum, absl::string_view>, N>& table, Enum value,
                         absl::string_view fallback) {
  for (const auto& [v, text] : table) {
    if (v == value) return text;
  }
  return fallback;
}

// One row per enum value but UNSPECIFIED; tests/unit/common/names_test.cc checks every value of
// each enum has its row, so a value added to the proto fails there until it is named here.
constexpr std::array<std::pair<v1::Variant, absl::string_view>, 7> kVariants = {{
    {v1::VARIANT_ONE_STAGE, "one_stage"},
    {v1::VARIANT_TWO_KERNEL, "two_kernel"},
    {v1::VARIANT_LAMPORT, "lamport"},
    {v1::VARIANT_LAMPORT_TB, "lamport_tb"},
    {v1::VARIANT_NCCL, "nccl"},
    {v1::VARIANT_AUTO, "auto"},
    {v1::VARIANT_LAMPORT_TWO_SHOT, "lamport_two_shot"},
}};

constexpr std::array<std::pair<v1::Mode, absl::string_view>, 2> kModes = {{
    {v1::MODE_EAGER, "eager"},
    {v1::MODE_GRAPH, "graph"},
}};

constexpr std::array<std::pair<v1::DType, absl::string_view>, 3> kDTypes = {{
    {v1::DTYPE_BF16, "bf16"},
    {v1::DTYPE_FP16, "fp16"},
    {v1::DTYPE_FP32, "fp32"},
}};

constexpr std::array<std::pair<v1::Pattern, absl::string_view>, 6> kPatterns = {{
    {v1::PATTERN_NORMAL, "normal"},
    {v1::PATTERN_INTEGERS, "integers"},
    {v1::PATTERN_NEG_ZERO, "neg_zero"},
    {v1::PATTERN_LARGE, "large"},
    {v1::PATTERN_DENORMAL, "denormal"},
    {v1::PATTERN_SAME, "same"},
}};

constexpr std::array<std::pair<v1::Tolerance, absl::string_view>, 3> kTolerances = {{
    {v1::TOLERANCE_STRICT, "strict"},
    {v1::TOLERANCE_AITER, "aiter"},
    {v1::TOLERANCE_TRTLLM, "trtllm"},
}};

constexpr std::array<std::pair<v1::CaseStatus, absl::string_view>, 5> kCaseStatuses = {{
    {v1::CASE_STATUS_OK, "OK"},
    {v1::CASE_STATUS_WRONG, "WRONG"},
    {v1::CASE_STATUS_HANG, "HANG"},
    {v1::CASE_STATUS_ERROR, "ERROR"},
    {v1::CASE_STATUS_UNSUPPORTED, "UNSUPPORTED"},
}};

constexpr std::array<std::pair<v1::RunState, absl::string_view>, 6> kRunStates = {{
    {v1::RUN_STATE_QUEUED, "QUEUED"},
    {v1::RUN_STATE_RUNNING, "RUNNING"},
    {v1::RUN_STATE_DONE, "DONE"},
    {v1::RUN_STATE_CANCELLED, "CANCELLED"},
    {v1::RUN_STATE_FAILED, "FAILED"},
    {v1::RUN_STATE_INTERRUPTED, "INTERRUPTED"},
}};

constexpr std::array<std::pair<v1::GroupState, absl::string_view>, 3> kGroupStates = {{
    {v1::GROUP_STATE_SERVING, "SERVING"},
    {v1::GROUP_STATE_DEGRADED, "DEGRADED"},
    {v1::GROUP_STATE_RECOVERING, "RECOVERING"},
}};

constexpr std::array<std::pair<v1::CompareVerdict, absl::string_view>, 5> kCompareVerdicts = {{
    {v1::COMPARE_VERDICT_SAME, "SAME"},
    {v1::COMPARE_VERDICT_REGRESSION, "REGRESSION"},
    {v1::COMPARE_VERDICT_IMPROVEMENT, "IMPROVEMENT"},
    {v1::COMPARE_VERDICT_ONLY_A, "ONLY_A"},
    {v1::COMPARE_VERDICT_ONLY_B, "ONLY_B"},
}};

}  // namespace

absl::string_view VariantName(v1::Variant v) { return NameOf(kVariants, v, "unspecified"); }
absl::string_view ModeName(v1::Mode m) { return NameOf(kModes, m, "eager"); }
absl::string_view DTypeName(v1::DType d) { return NameOf(kDTypes, d, "bf16"); }
absl::string_view PatternName(v1::Pattern p) { return NameOf(kPatterns, p, "normal"); }
absl::string_view ToleranceName(v1::Tolerance t) { return NameOf(kTolerances, t, "strict"); }
absl::string_view CaseStatusName(v1::CaseStatus s) {
  return NameOf(kCaseStatuses, s, "UNSPECIFIED");
}
absl::string_view RunStateName(v1::RunState s) { return NameOf(kRunStates, s, "UNSPECIFIED"); }
absl::string_view GroupStateName(v1::GroupState s) {
  return NameOf(kGroupStates, s, "UNSPECIFIED");
}
absl::string_view CompareVerdictName(v1::CompareVerdict v) {
  return NameOf(kCompareVerdicts, v, "UNSPECIFIED");
}

std::optional<v1::Variant> ParseVariantName(absl::string_view name) {
  return Lookup(kVariants, name);
}
std::optional<v1::Mode> ParseModeName(absl::string_view name) { return Lookup(kModes, name); }
std::optional<v1::DType> ParseDTypeName(absl::string_view name) { return Lookup(kDTypes, name); }
std::optional<v1::Pattern> ParsePatternName(absl::string_view name) {
  return Lookup(kPatterns, name);
}
std::optional<v1::Tolerance> ParseToleranceName(absl::string_view name) {
  return Lookup(kTolerances, name);
}
std::optional<v1::RunState> ParseRunStateName(absl::string_view name) {
  // The table holds the upper-case spelling that outputs print; Lookup compares lower case.
  for (const auto& [value, text] : kRunStates) {
    if (absl::EqualsIgnoreCase(text, name)) return value;
  }
  return std::nullopt;
}

std::vector<std::string> VariantNames() { return NamesOf(kVariants); }
std::vector<std::string> ModeNames() { return NamesOf(kModes); }
std::vector<std::string> DTypeNames() { return NamesOf(kDTypes); }
std::vector<std::string> PatternNames() { return NamesOf(kPatterns); }
std::vector<std::string> ToleranceNames() { return NamesOf(kTolerances); }
std::vector<std::string> RunStateNames() { return NamesOf(kRunStates); }

}  // namespace colltest::common
