#include "client/flags/size_flags.h"

#include <limits>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "client/flags/flags.h"
#include "common/element_size.h"
#include "common/names.h"
#include "common/parse.h"
#include "common/status_macros.h"

namespace colltest::client {
namespace {

// The per-rank sizes asked for, with the flag to name when one of them is refused.
struct ByteSizes {
  std::string flag;
  std::vector<uint64_t> values;
};

// The byte flags given, as the user typed them, for messages: "--bytes", "-b, -e".
std::string ByteFlagsGiven(const SweepFlags& flags) {
  std::vector<absl::string_view> given;
  if (flags.bytes.has_value()) given.push_back("--bytes");
  if (flags.bytes_begin.has_value()) given.push_back("-b");
  if (flags.bytes_end.has_value()) given.push_back("-e");
  if (flags.bytes_factor.has_value()) given.push_back("-f");
  return absl::StrJoin(given, ", ");
}

// -b BEGIN [-e END] [-f FACTOR], as nccl-tests reads them: -e defaults to -b (one size), -f to 2.
absl::StatusOr<ByteSizes> BeginEndFactor(const SweepFlags& flags) {
  if (!flags.bytes_begin.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat(ByteFlagsGiven(flags), ": needs -b, the smallest size in bytes per rank"));
  }
  common::ListRange range;
  COLLTEST_ASSIGN_OR_RETURN(range.begin, common::ParseByteSize("-b", *flags.bytes_begin));
  range.end = range.begin;
  if (flags.bytes_end.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(range.end, common::ParseByteSize("-e", *flags.bytes_end));
  }
  if (flags.bytes_factor.has_value()) {
    COLLTEST_ASSIGN_OR_RETURN(range.factor, common::ParseCount("-f", *flags.bytes_factor));
  }
  if (range.end < range.begin) {
    return absl::InvalidArgumentError(
        absl::StrCat("-e: ", range.end, " bytes is below -b ", range.begin, " bytes"));
  }
  if (range.factor < 2) {
    return absl::InvalidArgumentError(
        absl::StrCat("-f: the factor ", range.factor, " must be 2 or more"));
  }
  const std::string item =
      absl::StrCat("-b ", range.begin, " -e ", range.end, " -f ", range.factor);
  COLLTEST_ASSIGN_OR_RETURN(std::vector<uint64_t> values,
                            common::ExpandListRange("-b/-e/-f", item, range));
  // Every size is -b times a whole power of -f: when one is not a whole number of rows, -b is not.
  return ByteSizes{"-b", std::move(values)};
}

absl::StatusOr<ByteSizes> RequestedBytes(const SweepFlags& flags) {
  if (!flags.bytes.has_value()) return BeginEndFactor(flags);
  if (flags.bytes_begin.has_value() || flags.bytes_end.has_value() ||
      flags.bytes_factor.has_value()) {
    return absl::InvalidArgumentError(
        "--bytes: cannot be combined with -b, -e or -f: give the sizes one way");
  }
  COLLTEST_ASSIGN_OR_RETURN(std::vector<uint64_t> values,
                            common::ParseByteSizeList("--bytes", *flags.bytes));
  return ByteSizes{"--bytes", std::move(values)};
}

// m for `bytes` per rank, or an error naming the flag, the size, the row size and the whole
// numbers of rows on either side of it.
absl::StatusOr<uint32_t> RowsFor(absl::string_view flag, uint64_t bytes, uint32_t n,
                                 v1::DType dtype) {
  const uint64_t element = common::ElementBytes(dtype);
  const uint64_t row = uint64_t{n} * element;
  const std::string row_text = absl::StrCat("a row is ", row, " bytes (n ", n, " x ", element,
                                            " bytes of ", common::DTypeName(dtype), ")");
  if (row == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": n 0 has rows of 0 bytes: no size in bytes gives an m"));
  }
  const uint64_t m = bytes / row;
  if (m == 0) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", bytes, " bytes is less than a row: ",
                                                   row_text, "; the smallest valid size is ", row));
  }
  if (bytes % row != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, ": ", bytes, " bytes is not a whole number of rows: ", row_text,
                     "; nearest valid sizes: ", m * row, " and ", (m + 1) * row));
  }
  if (m > std::numeric_limits<uint32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(flag, ": ", bytes, " bytes is m ", m,
                                                   " rows, the limit is ",
                                                   std::numeric_limits<uint32_t>::max()));
  }
  return static_cast<uint32_t>(m);
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ResolveRows(const SweepFlags& flags,
                                                  const std::vector<uint32_t>& n, v1::DType dtype) {
  const std::string byte_flags = ByteFlagsGiven(flags);
  if (byte_flags.empty()) {
    if (!flags.m.has_value()) return std::vector<uint32_t>{};
    return ParseUint32ListFlag("--m", *flags.m);
  }
  if (flags.m.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--m: cannot be combined with ", byte_flags,
                     ": give the sizes as rows (--m) or as bytes per rank (--bytes or -b/-e/-f)"));
  }
  if (n.size() != 1) {
    return absl::InvalidArgumentError(absl::StrCat(
        byte_flags,
        ": needs exactly one --hidden to turn bytes into rows (m = bytes / (n x element ",
        "size)), got ", n.empty() ? "none" : absl::StrJoin(n, ",")));
  }
  COLLTEST_ASSIGN_OR_RETURN(const ByteSizes sizes, RequestedBytes(flags));
  std::vector<uint32_t> rows;
  rows.reserve(sizes.values.size());
  for (const uint64_t bytes : sizes.values) {
    COLLTEST_ASSIGN_OR_RETURN(const uint32_t m, RowsFor(sizes.flag, bytes, n[0], dtype));
    rows.push_back(m);
  }
  return rows;
}

}  // namespace colltest::client
