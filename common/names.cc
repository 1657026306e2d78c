#include "common/names.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/generated_enum_reflection.h"

namespace colltest::common {
namespace {

enum class Spelling { kLower, kUpper };

// The names of one enum's values but UNSPECIFIED, read from its descriptor: each value's proto
// name without the prefix that UNSPECIFIED's name carries ("VARIANT_LAMPORT_TB" -> "lamport_tb",
// "CASE_STATUS_HANG" -> "HANG"), in the order the proto declares them. So a value added to the
// proto has its name at once, the same name users type and outputs print.
class EnumNames {
 public:
  EnumNames(const google::protobuf::EnumDescriptor* descriptor, Spelling spelling) {
    const absl::string_view prefix =
        absl::StripSuffix(descriptor->FindValueByNumber(0)->name(), "UNSPECIFIED");
    for (int i = 0; i < descriptor->value_count(); ++i) {
      const google::protobuf::EnumValueDescriptor* value = descriptor->value(i);
      if (value->number() == 0) continue;
      std::string name(absl::StripPrefix(value->name(), prefix));
      if (spelling == Spelling::kLower) absl::AsciiStrToLower(&name);
      rows_.emplace_back(value->number(), std::move(name));
    }
  }

  absl::string_view NameOf(int number, absl::string_view fallback) const {
    for (const auto& [value, name] : rows_) {
      if (value == number) return name;
    }
    return fallback;
  }

  // Case-insensitive.
  template <typename Enum>
  std::optional<Enum> Parse(absl::string_view text) const {
    for (const auto& [value, name] : rows_) {
      if (absl::EqualsIgnoreCase(name, text)) return static_cast<Enum>(value);
    }
    return std::nullopt;
  }

  std::vector<std::string> LowerCaseNames() const {
    std::vector<std::string> names;
    names.reserve(rows_.size());
    for (const auto& [value, name] : rows_) names.push_back(absl::AsciiStrToLower(name));
    return names;
  }

 private:
  std::vector<std::pair<int, std::string>> rows_;
};

// The names of `Enum`, built on first use and never freed: they are handed out as string_views.
template <typename Enum, Spelling kSpelling>
const EnumNames& NamesOf() {
  static const EnumNames* const names =
      new EnumNames(google::protobuf::GetEnumDescriptor<Enum>(), kSpelling);
  return *names;
}

// Users type these in lower case ("one_stage", "eager", "bf16"); scripts grep for the upper-case
// verdicts and states ("HANG", "DONE").
const EnumNames& Variants() { return NamesOf<v1::Variant, Spelling::kLower>(); }
const EnumNames& Modes() { return NamesOf<v1::Mode, Spelling::kLower>(); }
const EnumNames& DTypes() { return NamesOf<v1::DType, Spelling::kLower>(); }
const EnumNames& Patterns() { return NamesOf<v1::Pattern, Spelling::kLower>(); }
const EnumNames& Tolerances() { return NamesOf<v1::Tolerance, Spelling::kLower>(); }
const EnumNames& Epilogues() { return NamesOf<v1::Epilogue, Spelling::kLower>(); }
const EnumNames& Fp8Formats() { return NamesOf<v1::Fp8Format, Spelling::kLower>(); }
const EnumNames& QuantTolerances() { return NamesOf<v1::QuantTolerance, Spelling::kLower>(); }
const EnumNames& QuantRules() { return NamesOf<v1::QuantRule, Spelling::kLower>(); }
const EnumNames& CaseStatuses() { return NamesOf<v1::CaseStatus, Spelling::kUpper>(); }
const EnumNames& RunStates() { return NamesOf<v1::RunState, Spelling::kUpper>(); }
const EnumNames& GroupStates() { return NamesOf<v1::GroupState, Spelling::kUpper>(); }
const EnumNames& CompareVerdicts() { return NamesOf<v1::CompareVerdict, Spelling::kUpper>(); }

}  // namespace

absl::string_view VariantName(v1::Variant v) { return Variants().NameOf(v, "unspecified"); }

std::string KernelName(v1::Variant v, absl::string_view plugin) {
  if (v == v1::VARIANT_PLUGIN) return absl::StrCat("plugin:", plugin);
  return std::string(VariantName(v));
}
std::string KernelName(const v1::CaseResult& c) {
  return KernelName(c.variant(), c.plugin().name());
}
std::string KernelName(const v1::CaseComparison& c) { return KernelName(c.variant(), c.plugin()); }
absl::string_view ModeName(v1::Mode m) { return Modes().NameOf(m, "eager"); }
absl::string_view DTypeName(v1::DType d) { return DTypes().NameOf(d, "bf16"); }
absl::string_view PatternName(v1::Pattern p) { return Patterns().NameOf(p, "normal"); }
absl::string_view ToleranceName(v1::Tolerance t) { return Tolerances().NameOf(t, "strict"); }
absl::string_view EpilogueName(v1::Epilogue e) { return Epilogues().NameOf(e, "none"); }
absl::string_view Fp8FormatName(v1::Fp8Format f) { return Fp8Formats().NameOf(f, "device"); }
absl::string_view QuantToleranceName(v1::QuantTolerance t) {
  return QuantTolerances().NameOf(t, "strict");
}
absl::string_view QuantRuleName(v1::QuantRule r) { return QuantRules().NameOf(r, "none"); }
absl::string_view CaseStatusName(v1::CaseStatus s) {
  return CaseStatuses().NameOf(s, "UNSPECIFIED");
}
absl::string_view RunStateName(v1::RunState s) { return RunStates().NameOf(s, "UNSPECIFIED"); }
absl::string_view GroupStateName(v1::GroupState s) {
  return GroupStates().NameOf(s, "UNSPECIFIED");
}
absl::string_view CompareVerdictName(v1::CompareVerdict v) {
  return CompareVerdicts().NameOf(v, "UNSPECIFIED");
}

std::optional<v1::Variant> ParseVariantName(absl::string_view name) {
  return Variants().Parse<v1::Variant>(name);
}
std::optional<v1::Mode> ParseModeName(absl::string_view name) {
  return Modes().Parse<v1::Mode>(name);
}
std::optional<v1::DType> ParseDTypeName(absl::string_view name) {
  return DTypes().Parse<v1::DType>(name);
}
std::optional<v1::Pattern> ParsePatternName(absl::string_view name) {
  return Patterns().Parse<v1::Pattern>(name);
}
std::optional<v1::Tolerance> ParseToleranceName(absl::string_view name) {
  return Tolerances().Parse<v1::Tolerance>(name);
}
std::optional<v1::Epilogue> ParseEpilogueName(absl::string_view name) {
  return Epilogues().Parse<v1::Epilogue>(name);
}
std::optional<v1::Fp8Format> ParseFp8FormatName(absl::string_view name) {
  return Fp8Formats().Parse<v1::Fp8Format>(name);
}
std::optional<v1::QuantTolerance> ParseQuantToleranceName(absl::string_view name) {
  return QuantTolerances().Parse<v1::QuantTolerance>(name);
}
std::optional<v1::QuantRule> ParseQuantRuleName(absl::string_view name) {
  return QuantRules().Parse<v1::QuantRule>(name);
}
std::optional<v1::RunState> ParseRunStateName(absl::string_view name) {
  return RunStates().Parse<v1::RunState>(name);
}

std::vector<std::string> VariantNames() { return Variants().LowerCaseNames(); }
std::vector<std::string> ModeNames() { return Modes().LowerCaseNames(); }
std::vector<std::string> DTypeNames() { return DTypes().LowerCaseNames(); }
std::vector<std::string> PatternNames() { return Patterns().LowerCaseNames(); }
std::vector<std::string> ToleranceNames() { return Tolerances().LowerCaseNames(); }
std::vector<std::string> EpilogueNames() { return Epilogues().LowerCaseNames(); }
std::vector<std::string> Fp8FormatNames() { return Fp8Formats().LowerCaseNames(); }
std::vector<std::string> QuantToleranceNames() { return QuantTolerances().LowerCaseNames(); }
std::vector<std::string> QuantRuleNames() { return QuantRules().LowerCaseNames(); }
std::vector<std::string> RunStateNames() { return RunStates().LowerCaseNames(); }

}  // namespace colltest::common
