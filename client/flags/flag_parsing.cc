#include "client/flags/flag_parsing.h"

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace colltest::client {

absl::Status FlagError(absl::string_view flag, absl::string_view text, absl::string_view expected) {
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": cannot parse '", text, "': expected ", expected));
}

std::string OneOf(const std::vector<std::string>& names) {
  if (names.size() < 2) return absl::StrJoin(names, "");
  const std::vector<std::string> head(names.begin(), names.end() - 1);
  return absl::StrCat(absl::StrJoin(head, ", "), " or ", names.back());
}

absl::StatusOr<std::vector<std::string>> SplitList(absl::string_view flag, absl::string_view text,
                                                   absl::string_view expected) {
  std::vector<std::string> items;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    item = absl::StripAsciiWhitespace(item);
    if (item.empty()) return FlagError(flag, text, expected);
    items.emplace_back(item);
  }
  return items;
}

absl::Status FlagErrors::status() const {
  if (messages_.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrJoin(messages_, "\n"));
}

}  // namespace colltest::client
