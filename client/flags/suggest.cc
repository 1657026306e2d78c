#include "client/flags/suggest.h"

#include <algorithm>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace colltest::client {

size_t EditDistance(absl::string_view a_text, absl::string_view b_text) {
  const std::string a = absl::AsciiStrToLower(a_text);
  const std::string b = absl::AsciiStrToLower(b_text);
  // d[i][j]: edits from a's first i characters to b's first j (optimal string alignment).
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t replace = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + replace});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::optional<std::string> ClosestName(absl::string_view typed,
                                       absl::Span<const std::string> known) {
  if (typed.empty()) return std::nullopt;
  const size_t limit = std::min<size_t>(2, typed.size() - 1);
  std::optional<std::string> best;
  size_t best_distance = limit + 1;
  for (const std::string& name : known) {
    // Exactly known: nothing to correct. A name that differs in case only is still suggested,
    // for the parsers that compare case-sensitively.
    if (name == typed) return std::nullopt;
    const size_t distance = EditDistance(typed, name);
    if (distance < best_distance) {
      best = name;
      best_distance = distance;
    }
  }
  if (best.has_value()) return best;
  for (const std::string& name : known) {
    if (absl::StartsWithIgnoreCase(name, typed)) return name;
  }
  return std::nullopt;
}

absl::Status WithSuggestion(const absl::Status& status, absl::string_view typed,
                            absl::Span<const std::string> known) {
  if (status.ok()) return status;
  const std::optional<std::string> name = ClosestName(typed, known);
  if (!name.has_value()) return status;
  return absl::Status(status.code(),
                      absl::StrCat(status.message(), "; did you mean '", *name, "'?"));
}

}  // namespace colltest::client
