#include "client/format/color.h"

#include <cstring>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace colltest::client {
namespace {

constexpr absl::string_view kGreen = "32";
constexpr absl::string_view kRed = "31";
constexpr absl::string_view kBoldRed = "1;31";
constexpr absl::string_view kYellow = "33";

// The verdicts of cases, health checks and comparisons, with their colour.
constexpr std::pair<absl::string_view, absl::string_view> kVerdicts[] = {
    {"OK", kGreen},          {"PASS", kGreen},     {"PASSED", kGreen}, {"SAME", kGreen},
    {"IMPROVEMENT", kGreen}, {"WRONG", kRed},      {"ERROR", kRed},    {"FAIL", kRed},
    {"FAILED", kRed},        {"REGRESSION", kRed}, {"HANG", kBoldRed}, {"WARN", kYellow},
    {"BUSY", kYellow},
};

bool IsWordChar(char c) { return absl::ascii_isalnum(c) || c == '_'; }

}  // namespace

absl::StatusOr<ColorChoice> ParseColorChoice(absl::string_view text) {
  const std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  if (lower == "auto") return ColorChoice::kAuto;
  if (lower == "always") return ColorChoice::kAlways;
  if (lower == "never") return ColorChoice::kNever;
  return absl::InvalidArgumentError(
      absl::StrCat("--color: '", text, "' is not one of always, auto or never"));
}

bool UseColor(ColorChoice choice, bool terminal, const char* no_color, const char* term) {
  switch (choice) {
    case ColorChoice::kAlways:
      return true;
    case ColorChoice::kNever:
      return false;
    case ColorChoice::kAuto:
      break;
  }
  if (no_color != nullptr && no_color[0] != '\0') return false;
  if (term != nullptr && std::strcmp(term, "dumb") == 0) return false;
  return terminal;
}

std::string PaintVerdict(absl::string_view word) {
  for (const auto& [verdict, color] : kVerdicts) {
    if (word == verdict) return absl::StrCat("\033[", color, "m", word, "\033[0m");
  }
  return std::string(word);
}

std::string PaintVerdicts(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    if (!IsWordChar(text[i])) {
      out.push_back(text[i++]);
      continue;
    }
    size_t end = i;
    while (end < text.size() && IsWordChar(text[end])) ++end;
    absl::StrAppend(&out, PaintVerdict(text.substr(i, end - i)));
    i = end;
  }
  return out;
}

}  // namespace colltest::client
