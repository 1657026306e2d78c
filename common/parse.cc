#include "common/parse.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace colltest::common {
namespace {

constexpr absl::string_view kDurationExpected =
    "a duration such as 250ms, 2s, 1.5s, 2m, 500us or 90d, or a whole number of milliseconds";
constexpr absl::string_view kCountExpected =
    "a count such as 64, 8K or 1M (K, M, G, T: powers of 1024)";
constexpr absl::string_view kByteSizeExpected =
    "a byte size such as 4096, 64K or 32MiB (K, M, G, T: powers of 1024)";
constexpr absl::string_view kListExpected =
    "a comma-separated list of values and ranges such as 1,8,64 or 8..128 (doubling), "
    "8..128:x4 (times 4), 1..8:+1 (plus 1), or BEGIN:END[:xF|:+S] such as 8K:128M:x2";

constexpr uint64_t kNoLimit = std::numeric_limits<uint64_t>::max();

absl::Status CannotParse(absl::string_view name, absl::string_view text,
                         absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": cannot parse '", text, "': expected ", expected));
}

bool AllDigits(absl::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

// log2 of the multiplier of a suffix ("", "k", "mib", "gb", ...; lower case), or -1 when
// `suffix` is none of them. A bare "b" counts only where `bytes`.
int SuffixShift(absl::string_view suffix, bool bytes) {
  if (suffix.empty()) return 0;
  if (suffix == "b") return bytes ? 0 : -1;
  static constexpr absl::string_view kUnits = "kmgt";
  const size_t unit = kUnits.find(suffix[0]);
  if (unit == absl::string_view::npos) return -1;
  const absl::string_view tail = suffix.substr(1);
  if (tail != "" && tail != "i" && tail != "ib" && tail != "b") return -1;
  return 10 * static_cast<int>(unit + 1);
}

absl::StatusOr<uint64_t> ParseSuffixed(absl::string_view name, absl::string_view text, uint64_t max,
                                       bool bytes) {
  const absl::string_view expected = bytes ? kByteSizeExpected : kCountExpected;
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  size_t digits = 0;
  while (digits < trimmed.size() &&
         absl::ascii_isdigit(static_cast<unsigned char>(trimmed[digits])))
    ++digits;
  const int shift = SuffixShift(absl::AsciiStrToLower(trimmed.substr(digits)), bytes);
  if (digits == 0 || shift < 0) return CannotParse(name, text, expected);

  uint64_t value = 0;
  if (!absl::SimpleAtoi(trimmed.substr(0, digits), &value) ||
      (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift))) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", trimmed, "' does not fit in 64 bits, the limit is ", max));
  }
  value <<= shift;
  if (value > max) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", trimmed, "' is ", value, ", the limit is ", max));
  }
  return value;
}

// Reads the step of a range, ":xF" or ":+S" (S may carry a suffix, as the bounds: "+1K"); the
// range is checked whole by AppendRange.
absl::Status ParseRangeStep(absl::string_view name, absl::string_view item, absl::string_view text,
                            bool bytes, ListRange& range) {
  const bool geometric = text.size() > 1 && (text[0] == 'x' || text[0] == 'X');
  const bool arithmetic =
      text.size() > 1 && text[0] == '+' && absl::ascii_isdigit(static_cast<unsigned char>(text[1]));
  uint64_t number = 0;
  if (geometric) {
    if (!AllDigits(text.substr(1)) || !absl::SimpleAtoi(text.substr(1), &number)) {
      return CannotParse(name, item, kListExpected);
    }
  } else if (arithmetic) {
    absl::StatusOr<uint64_t> step = ParseSuffixed(name, text.substr(1), kNoLimit, bytes);
    if (!step.ok()) return CannotParse(name, item, kListExpected);
    number = *step;
  } else {
    return CannotParse(name, item, kListExpected);
  }
  // A step of 0 would never reach the end: said here, where the user's text names it.
  if (arithmetic && number == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": range '", item, "': the step 0 must be 1 or more"));
  }
  if (geometric) range.factor = number;
  if (arithmetic) range.step = number;
  return absl::OkStatus();
}

// "START..END[:xF|:+S]" (the item holds "..") or "BEGIN:END[:xF|:+S]".
absl::StatusOr<ListRange> ParseRange(absl::string_view name, absl::string_view item, uint64_t max,
                                     bool bytes) {
  absl::string_view begin_text, end_text, step_text;
  bool has_step = false;
  const size_t dots = item.find("..");
  if (dots != absl::string_view::npos) {
    begin_text = item.substr(0, dots);
    const absl::string_view rest = item.substr(dots + 2);
    const size_t colon = rest.find(':');
    end_text = rest.substr(0, colon);
    has_step = colon != absl::string_view::npos;
    if (has_step) step_text = rest.substr(colon + 1);
  } else {
    const std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    if (parts.size() > 3) return CannotParse(name, item, kListExpected);
    begin_text = parts[0];
    end_text = parts[1];
    has_step = parts.size() == 3;
    if (has_step) step_text = parts[2];
  }
  ListRange range;
  COLLTEST_ASSIGN_OR_RETURN(range.begin, ParseSuffixed(name, begin_text, max, bytes));
  COLLTEST_ASSIGN_OR_RETURN(range.end, ParseSuffixed(name, end_text, max, bytes));
  if (has_step) COLLTEST_RETURN_IF_ERROR(ParseRangeStep(name, item, step_text, bytes, range));
  return range;
}

absl::Status TooMany(absl::string_view name, absl::string_view item) {
  return absl::InvalidArgumentError(
      absl::StrCat(name, ": more than ", kMaxListValues, " values",
                   item.empty() ? "" : absl::StrCat(" (range '", item, "')"), ", the limit is ",
                   kMaxListValues));
}

// Appends the values of `range` to `values`, at most kMaxListValues in all.
absl::Status AppendRange(absl::string_view name, absl::string_view item, const ListRange& range,
                         std::vector<uint64_t>& values) {
  if (range.begin > range.end) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": range '", item, "' runs backwards (",
                                                   range.begin, " > ", range.end, ")"));
  }
  if (range.step == 0 && range.factor < 2) {
    return absl::InvalidArgumentError(absl::StrCat(name, ": range '", item, "': the factor ",
                                                   range.factor, " must be 2 or more"));
  }
  if (range.step == 0 && range.begin == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": range '", item, "': a multiplying range cannot start at 0 (use :+STEP)"));
  }
  for (uint64_t v = range.begin;;) {
    if (values.size() == kMaxListValues) return TooMany(name, item);
    values.push_back(v);
    // Compared before stepping, so that the next value can never overflow.
    if (range.step > 0) {
      if (range.end - v < range.step) break;
      v += range.step;
    } else {
      if (v > range.end / range.factor) break;
      v *= range.factor;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint64_t>> ParseListOf(absl::string_view name, absl::string_view text,
                                                  uint64_t max, bool bytes) {
  std::vector<uint64_t> values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    // "1,,8" is most likely a typo that should not silently shrink the sweep.
    if (item.empty()) return CannotParse(name, text, kListExpected);
    if (absl::StrContains(item, "..") || absl::StrContains(item, ':')) {
      COLLTEST_ASSIGN_OR_RETURN(const ListRange range, ParseRange(name, item, max, bytes));
      COLLTEST_RETURN_IF_ERROR(AppendRange(name, item, range, values));
      continue;
    }
    if (values.size() == kMaxListValues) return TooMany(name, "");
    COLLTEST_ASSIGN_OR_RETURN(const uint64_t value, ParseSuffixed(name, item, max, bytes));
    values.push_back(value);
  }
  return values;
}

}  // namespace

absl::StatusOr<absl::Duration> ParseDuration(absl::string_view name, absl::string_view text) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  if (AllDigits(trimmed)) {
    int64_t ms = 0;
    if (!absl::SimpleAtoi(trimmed, &ms)) return CannotParse(name, text, kDurationExpected);
    return absl::Milliseconds(ms);
  }
  // Whole days ("90d"), for retention and history queries; absl's grammar stops at hours.
  if (trimmed.size() > 1 && trimmed.back() == 'd' &&
      AllDigits(trimmed.substr(0, trimmed.size() - 1))) {
    int64_t days = 0;
    if (!absl::SimpleAtoi(trimmed.substr(0, trimmed.size() - 1), &days) || days > 36500) {
      return CannotParse(name, text, kDurationExpected);
    }
    return absl::Hours(24 * days);
  }
  absl::Duration duration;
  if (!absl::ParseDuration(std::string(trimmed), &duration) ||
      duration == absl::InfiniteDuration() || duration == -absl::InfiniteDuration()) {
    return CannotParse(name, text, kDurationExpected);
  }
  if (duration < absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": '", trimmed, "' is negative: expected ", kDurationExpected));
  }
  return duration;
}

absl::StatusOr<uint64_t> ParseByteSize(absl::string_view name, absl::string_view text,
                                       uint64_t max) {
  return ParseSuffixed(name, text, max, /*bytes=*/true);
}

absl::StatusOr<uint64_t> ParseCount(absl::string_view name, absl::string_view text, uint64_t max) {
  return ParseSuffixed(name, text, max, /*bytes=*/false);
}

absl::StatusOr<std::vector<uint64_t>> ParseList(absl::string_view name, absl::string_view text,
                                                uint64_t max) {
  return ParseListOf(name, text, max, /*bytes=*/false);
}

absl::StatusOr<std::vector<uint64_t>> ParseByteSizeList(absl::string_view name,
                                                        absl::string_view text, uint64_t max) {
  return ParseListOf(name, text, max, /*bytes=*/true);
}

absl::StatusOr<std::vector<uint64_t>> ExpandListRange(absl::string_view name,
                                                      absl::string_view item,
                                                      const ListRange& range) {
  std::vector<uint64_t> values;
  COLLTEST_RETURN_IF_ERROR(AppendRange(name, item, range, values));
  return values;
}

}  // namespace colltest::common
