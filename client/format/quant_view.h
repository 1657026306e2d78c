// What the formats say of a case's quantising epilogue (docs/quantisation.md): the epilogue's
// label and a compact reading of its QuantDiffStats, shared so that the table, JUnit and the
// failure details agree.
#pragma once

#include <string>

#include "colltest/v1/colltest.pb.h"

namespace colltest::client {

// fp8_token, fp8_tensor or nvfp4: the case wrote codes and scales (none and UNSPECIFIED did not).
bool QuantisingEpilogue(v1::Epilogue epilogue);
bool QuantisingEpilogue(const v1::CaseResult& c);

// Some case of the run has a quantising epilogue: the table needs its epilogue column.
bool AnyQuantisingEpilogue(const v1::RunResult& run);

// "none", "fp8_token", or "fp8_token+normed" when the case also wrote the normed output.
std::string EpilogueLabel(v1::Epilogue epilogue, bool keep_normed);
std::string EpilogueLabel(const v1::CaseResult& c);

// Whether any code or scale was compared; a HANG or an ERROR case has zeros that would read as
// "no mismatch".
bool QuantChecked(const v1::QuantDiffStats& q);

// The quantised output's verdict in a few words: "-" when nothing was compared, "0" when every
// code and scale matched, else "3 codes (d 1), 2 scales, rounding": the codes off with the largest
// code distance ("d nan" for a NaN code), the scales off, and the rule they break.
std::string QuantCell(const v1::QuantDiffStats& q);

}  // namespace colltest::client
