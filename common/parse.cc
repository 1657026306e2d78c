#include "common/parse.h"

#include <string>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
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
    "a comma-separated list of counts and ranges such as 1,8,64 or 8..128 (doubling), "
    "8..128:x4 (times 4), 1..8:+1 (plus 1)";

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

// How a range advances: times `factor`, or plus `step`.
struct RangeStep {
  uint64_t factor = 2;
  uint64_t step = 0;  // > 0: arithmetic
};

absl::StatusOr<RangeStep> ParseRangeStep(absl::string_view name, absl::string_view item,
                                         absl::string_view text) {
  RangeStep result;
  const bool geometric = text.size() > 1 && (text[0] == 'x' || text[0] == 'X');
  const bool arithmetic = text.size() > 1 && text[0] == '+';
  uint64_t number = 0;
  if ((!geometric && !arithmetic) || !AllDigits(text.substr(1)) ||
      !absl::SimpleAtoi(text.substr(1), &number)) {
    return CannotParse(name, item, kListExpected);
  }
  if (geometric && number < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": range '", item, "': the factor must be 2 or more"));
  }
  if (arithmetic && number < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": range '", item, "': the step must be 1 or more"));
  }
  if (geometric) result.factor = number;
  if (arithmetic) result.step = number;
  return result;
}

// Appends the values of "START..END[:xF|:+S]" to `values`, at most kMaxListValues in all.
absl::Status ExpandRange(absl::string_view name, absl::string_view item, uint64_t max,
                         std::vector<uint64_t>& values) {
  const std::pair<absl::string_view, absl::string_view> bounds =
      absl::StrSplit(item, absl::MaxSplits("..", 1));
  const std::pair<absl::string_view, absl::string_view> end_and_step =
      absl::StrSplit(bounds.second, absl::MaxSplits(':', 1));
  COLLTEST_ASSIGN_OR_RETURN(const uint64_t start, ParseCount(name, bounds.first, max));
  COLLTEST_ASSIGN_OR_RETURN(const uint64_t end, ParseCount(name, end_and_step.first, max));
  RangeStep step;
  if (bounds.second.find(':') != absl::string_view::npos) {
    COLLTEST_ASSIGN_OR_RETURN(step, ParseRangeStep(name, item, end_and_step.second));
  }
  if (start > end) {
    return absl::InvalidArgumentError(
        absl::StrCat(name, ": range '", item, "' runs backwards (", start, " > ", end, ")"));
  }
  if (step.step == 0 && start == 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        name, ": range '", item, "': a multiplying range cannot start at 0 (use :+STEP)"));
  }
  for (uint64_t v = start;;) {
    if (values.size() == kMaxListValues) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": more than ", kMaxListValues, " values (range '", item, "')"));
    }
    values.push_back(v);
    // Compared before stepping, so that the next value can never overflow.
    if (step.step > 0) {
      if (end - v < step.step) break;
      v += step.step;
    } else {
      if (v > end / step.factor) break;
      v *= step.factor;
    }
  }
  return absl::OkStatus();
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
  if (trimmed.size() > 1 && trimmed.back() == 'd' && AllDigits(trimmed.substr(0, trimmed.size() - 1))) {
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
  std::vector<uint64_t> values;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    // "1,,8" is most likely a typo that should not silently shrink the sweep.
    if (item.empty()) return CannotParse(name, text, kListExpected);
    if (item.find("..") != absl::string_view::npos) {
      COLLTEST_RETURN_IF_ERROR(ExpandRange(name, item, max, values));
      continue;
    }
    if (values.size() == kMaxListValues) {
      return absl::InvalidArgumentError(
          absl::StrCat(name, ": more than ", kMaxListValues, " values"));
    }
    COLLTEST_ASSIGN_OR_RETURN(const uint64_t value, ParseCount(name, item, max));
    values.push_back(value);
  }
  return values;
}

}  // namespace colltest::common
