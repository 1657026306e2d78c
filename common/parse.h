// The grammar of numeric user input, shared by the colltest CLI, colltestd's flags and the
// server's checks, so that a value means the same everywhere and a bad one gets the same message.
// Every parser takes the name of what is parsed (a flag such as "--m", a field such as
// "spec.fault") only to start its error messages with it: "--m: cannot parse '8q': expected ...".
// Leading and trailing ASCII whitespace is ignored.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace colltest::common {

// The most values a list may expand to: as many as the server runs cases in one sweep, so that a
// typo such as "1..100000:+1" is refused before it allocates.
inline constexpr size_t kMaxListValues = 4096;

// A non-negative duration: an absl duration ("250ms", "2s", "1.5s", "2m", "500us", "1m30s"), whole
// days ("90d", at most 36500), or a bare decimal number, which is milliseconds ("500" is half a
// second), as the CLI always read it.
absl::StatusOr<absl::Duration> ParseDuration(absl::string_view name, absl::string_view text);

// A decimal integer with an optional suffix K, M, G or T (any case), itself optionally followed by
// "i", "iB" or "B": every suffix is a power of 1024, as in nccl-tests' -b/-e ("8k" = 8192,
// "32MiB" = 33554432). A value above `max` (or one that overflows 64 bits) is an error naming
// the limit. ParseByteSize also takes a bare "B" ("512B"); the two differ only in that and in
// what their messages call the value.
absl::StatusOr<uint64_t> ParseByteSize(absl::string_view name, absl::string_view text,
                                       uint64_t max = std::numeric_limits<uint64_t>::max());
absl::StatusOr<uint64_t> ParseCount(absl::string_view name, absl::string_view text,
                                    uint64_t max = std::numeric_limits<uint64_t>::max());

// A comma-separated list of counts (ParseCount) and ranges, in the order given:
//   "1,8,64"      the values themselves
//   "8..128"      8, 16, 32, 64, 128: doubling from the start while not above the end
//   "8..128:x4"   8, 32, 128: times 4 (a factor of 2 or more)
//   "1..8:+1"     1, 2, ..., 8: plus 1 (a step of 1 or more)
//   "1:1024:x2"   the same ranges written BEGIN:END[:xF|:+S] as nccl-tests users write sizes;
//   "8K:128M"     without a step they double too ("1:8:+1" is 1, 2, ..., 8)
// "8..100" stops at 64: the end bounds the range, it need not be reached. A multiplying range
// cannot start at 0. Refused, naming the value: an end below the start, a factor below 2, a step
// of 0, more than kMaxListValues values in all, a value above `max`.
absl::StatusOr<std::vector<uint64_t>> ParseList(
    absl::string_view name, absl::string_view text,
    uint64_t max = std::numeric_limits<uint64_t>::max());

// ParseList whose values and bounds are byte sizes (ParseByteSize: "512B", "8K:128MiB").
absl::StatusOr<std::vector<uint64_t>> ParseByteSizeList(
    absl::string_view name, absl::string_view text,
    uint64_t max = std::numeric_limits<uint64_t>::max());

// A range of ParseList's given as numbers: from `begin`, times `factor` (or plus `step` where
// step > 0) while not above `end`.
struct ListRange {
  uint64_t begin = 0;
  uint64_t end = 0;
  uint64_t factor = 2;
  uint64_t step = 0;  // > 0: arithmetic
};

// The values of `range`, refused as ParseList refuses a range; `item` names the range in the
// messages as the user gave it ("-b 8 -e 128 -f 2").
absl::StatusOr<std::vector<uint64_t>> ExpandListRange(absl::string_view name,
                                                      absl::string_view item,
                                                      const ListRange& range);

}  // namespace colltest::common
