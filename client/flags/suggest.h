// "did you mean" hints: the known name closest to a mistyped one, for enum-like flag values, flags
// and commands alike.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace colltest::client {

// Edits (insert, delete, replace, swap of two adjacent characters) that turn `a` into `b`,
// ignoring ASCII case.
size_t EditDistance(absl::string_view a, absl::string_view b);

// The known name meant by `typed` (EditDistance, so case is ignored): the closest within 2 edits
// (fewer than the typed length, so that "x" does not become "m"), else the first that starts with
// `typed`. Ties go to the earlier name. nullopt when none is close, or when `typed` is one of them
// as spelled.
std::optional<std::string> ClosestName(absl::string_view typed,
                                       absl::Span<const std::string> known);

// `status` with "; did you mean 'NAME'?" appended when ClosestName finds a NAME; code kept.
absl::Status WithSuggestion(const absl::Status& status, absl::string_view typed,
                            absl::Span<const std::string> known);

}  // namespace colltest::client
