// Names of the public API's enums, read from the proto's descriptors (each value's name without
// its enum's prefix: VARIANT_LAMPORT_TB is "lamport_tb", CASE_STATUS_HANG "HANG"), for every room:
// the spellings users type on the command line ("one_stage", "eager", "bf16"), which colltestd's
// messages, the worker's verdicts, the HTTP gateway and every client output format (the JSON
// contract, docs/design.md section 10) repeat, so that a name in a message can be pasted back into
// a command.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "colltest/v1/colltest.pb.h"

namespace colltest::common {

// Lower-case names ("one_stage", "eager", "bf16", ...). An UNSPECIFIED value (or one this build
// does not know) prints as the value it is treated as (eager, bf16, normal, strict, none), so
// outputs never show a name the user cannot pass back in; a variant has no default and prints as
// "unspecified", an fp8 format left to the device as "device" (which one that is, only the worker
// knows), a quant rule of no mismatch as "none".
absl::string_view VariantName(v1::Variant v);
// The kernel a case ran as users name it: "plugin:<name>" for a kernel plugin (docs/plugins.md),
// the variant's name otherwise.
std::string KernelName(v1::Variant v, absl::string_view plugin);
std::string KernelName(const v1::CaseResult& c);
std::string KernelName(const v1::CaseComparison& c);
absl::string_view ModeName(v1::Mode m);
absl::string_view DTypeName(v1::DType d);
absl::string_view PatternName(v1::Pattern p);
absl::string_view ToleranceName(v1::Tolerance t);
absl::string_view EpilogueName(v1::Epilogue e);
absl::string_view Fp8FormatName(v1::Fp8Format f);
absl::string_view QuantToleranceName(v1::QuantTolerance t);
absl::string_view QuantRuleName(v1::QuantRule r);

// Upper-case names ("OK", "HANG", "DONE", ...), as scripts grep for them; "UNSPECIFIED" for
// UNSPECIFIED or an unknown value.
absl::string_view CaseStatusName(v1::CaseStatus s);
absl::string_view RunStateName(v1::RunState s);
absl::string_view GroupStateName(v1::GroupState s);
// "REGRESSION", "IMPROVEMENT", "SAME", "ONLY_A", "ONLY_B".
absl::string_view CompareVerdictName(v1::CompareVerdict v);

// Inverse of the lower-case names; case-insensitive. nullopt for an unknown name.
std::optional<v1::Variant> ParseVariantName(absl::string_view name);
std::optional<v1::Mode> ParseModeName(absl::string_view name);
std::optional<v1::DType> ParseDTypeName(absl::string_view name);
std::optional<v1::Pattern> ParsePatternName(absl::string_view name);
std::optional<v1::Tolerance> ParseToleranceName(absl::string_view name);
std::optional<v1::Epilogue> ParseEpilogueName(absl::string_view name);
std::optional<v1::Fp8Format> ParseFp8FormatName(absl::string_view name);
std::optional<v1::QuantTolerance> ParseQuantToleranceName(absl::string_view name);
std::optional<v1::QuantRule> ParseQuantRuleName(absl::string_view name);
// "done", "DONE", "interrupted", ...: a run state by its name, in any case.
std::optional<v1::RunState> ParseRunStateName(absl::string_view name);

// Every name the parsers above accept, in enum order (run states in lower case), for "did you
// mean" hints and for the lists in validation messages.
std::vector<std::string> VariantNames();
std::vector<std::string> ModeNames();
std::vector<std::string> DTypeNames();
std::vector<std::string> PatternNames();
std::vector<std::string> ToleranceNames();
std::vector<std::string> EpilogueNames();
std::vector<std::string> Fp8FormatNames();
std::vector<std::string> QuantToleranceNames();
std::vector<std::string> QuantRuleNames();
std::vector<std::string> RunStateNames();

}  // namespace colltest::common
