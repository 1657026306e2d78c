// The pieces every flag translation of colltest_client_flags is built from: the error message of a
// value that does not parse, comma lists, enum names with "did you mean", and the collection of
// every error of one command line. Internal to the library (flags.cc, quant_flags.cc).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "client/flags/suggest.h"
#include "common/status_macros.h"

namespace colltest::client {

// "FLAG: cannot parse 'TEXT': expected EXPECTED".
absl::Status FlagError(absl::string_view flag, absl::string_view text, absl::string_view expected);

// "a, b or c": the names a flag takes, for its "expected" text.
std::string OneOf(const std::vector<std::string>& names);

// Splits "a, b,c" into trimmed items; an empty item is a syntax error, as "1,,8" is most likely a
// typo that should not silently shrink the sweep.
absl::StatusOr<std::vector<std::string>> SplitList(absl::string_view flag, absl::string_view text,
                                                   absl::string_view expected);

// Every flag error of one command, so that one try shows them all: one line each, each naming
// its flag. A command line is short, so a second typo is as likely as the first.
class FlagErrors {
 public:
  void Add(const absl::Status& status) {
    if (!status.ok()) messages_.emplace_back(status.message());
  }
  absl::Status status() const;

 private:
  std::vector<std::string> messages_;
};

// Parses a set flag with `parse(flag, text)` and hands the value to `set`; an unset flag is OK.
template <typename Parse, typename Set>
absl::Status ApplyFlag(const std::optional<std::string>& value, absl::string_view flag, Parse parse,
                       Set set) {
  if (!value.has_value()) return absl::OkStatus();
  auto parsed = parse(flag, *value);
  if (!parsed.ok()) return parsed.status();
  set(*std::move(parsed));
  return absl::OkStatus();
}

// One name of an enum (common/names.h), case-insensitive, with a hint from `known`.
template <typename Enum>
absl::StatusOr<Enum> ParseEnumFlag(absl::string_view flag, absl::string_view text,
                                   std::optional<Enum> (*parse)(absl::string_view),
                                   absl::string_view expected,
                                   const std::vector<std::string>& known) {
  const absl::string_view trimmed = absl::StripAsciiWhitespace(text);
  std::optional<Enum> value = parse(trimmed);
  if (!value.has_value()) return WithSuggestion(FlagError(flag, text, expected), trimmed, known);
  return *value;
}

// A list of names ("lamport,nccl" or "all", which stands for `all`): every unknown item is
// reported, one line each.
template <typename Enum>
absl::StatusOr<std::vector<Enum>> ParseNameList(absl::string_view flag, absl::string_view text,
                                                absl::string_view what,
                                                std::optional<Enum> (*parse)(absl::string_view),
                                                const std::vector<Enum>& all,
                                                std::vector<std::string> known,
                                                absl::string_view expected) {
  COLLTEST_ASSIGN_OR_RETURN(const std::vector<std::string> items, SplitList(flag, text, expected));
  known.push_back("all");
  std::vector<Enum> values;
  FlagErrors errors;
  for (const std::string& item : items) {
    if (absl::AsciiStrToLower(item) == "all") {
      values.insert(values.end(), all.begin(), all.end());
      continue;
    }
    std::optional<Enum> value = parse(item);
    if (!value.has_value()) {
      errors.Add(
          WithSuggestion(absl::InvalidArgumentError(absl::StrCat(flag, ": unknown ", what, " '",
                                                                 item, "': expected ", expected)),
                         item, known));
      continue;
    }
    values.push_back(*value);
  }
  COLLTEST_RETURN_IF_ERROR(errors.status());
  return values;
}

}  // namespace colltest::client
