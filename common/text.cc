#include "common/text.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "common/status_macros.h"

namespace colltest::common {
namespace {

// The length of the well-formed UTF-8 sequence at the start of `text` (1 to 4), or 0 when the
// bytes there are not one (the ranges of the Unicode standard, table 3-7).
size_t Utf8SequenceLength(absl::string_view text) {
  const auto byte = [&](size_t i) { return static_cast<uint8_t>(text[i]); };
  const uint8_t lead = byte(0);
  if (lead < 0x80) return 1;
  size_t length = 0;
  uint8_t low = 0x80;  // bounds of the first continuation byte
  uint8_t high = 0xBF;
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // overlong
    if (lead == 0xED) high = 0x9F;  // surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // overlong
    if (lead == 0xF4) high = 0x8F;  // above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong) or F5..FF
  }
  if (text.size() < length) return 0;
  if (byte(1) < low || byte(1) > high) return 0;
  for (size_t i = 2; i < length; ++i) {
    if (byte(i) < 0x80 || byte(i) > 0xBF) return 0;
  }
  return length;
}

bool IsControlByte(uint8_t b) { return b < 0x20 || b == 0x7F; }

// A C1 control character is U+0080..U+009F, encoded as C2 80..C2 9F.
bool IsC1Control(absl::string_view sequence) {
  return sequence.size() == 2 && static_cast<uint8_t>(sequence[0]) == 0xC2 &&
         static_cast<uint8_t>(sequence[1]) <= 0x9F;
}

std::string HexByte(char c) { return absl::StrFormat("\\x%02x", static_cast<uint8_t>(c)); }

// The code point of a well-formed sequence (Utf8SequenceLength(sequence) == sequence.size()).
uint32_t DecodeUtf8(absl::string_view sequence) {
  const auto byte = [&](size_t i) {
    return static_cast<uint32_t>(static_cast<uint8_t>(sequence[i]));
  };
  switch (sequence.size()) {
    case 1:
      return byte(0);
    case 2:
      return ((byte(0) & 0x1F) << 6) | (byte(1) & 0x3F);
    case 3:
      return ((byte(0) & 0x0F) << 12) | ((byte(1) & 0x3F) << 6) | (byte(2) & 0x3F);
    default:
      return ((byte(0) & 0x07) << 18) | ((byte(1) & 0x3F) << 12) | ((byte(2) & 0x3F) << 6) |
             (byte(3) & 0x3F);
  }
}

struct CodePointRange {
  uint32_t first;
  uint32_t last;
};

bool InRanges(uint32_t code_point, absl::Span<const CodePointRange> ranges) {
  for (const CodePointRange& range : ranges) {
    if (code_point >= range.first && code_point <= range.last) return true;
  }
  return false;
}

// Unicode 15.0 general categories Cf (format), Zl (line separator, U+2028) and Zp (paragraph
// separator, U+2029): invisible, yet they reorder (U+202E), break (U+2028) or hide (U+200B,
// U+FEFF) the text around them in a log viewer or a terminal.
constexpr CodePointRange kFormatAndSeparators[] = {
    {0x00AD, 0x00AD},   {0x0600, 0x0605},   {0x061C, 0x061C},   {0x06DD, 0x06DD},
    {0x070F, 0x070F},   {0x0890, 0x0891},   {0x08E2, 0x08E2},   {0x180E, 0x180E},
    {0x200B, 0x200F},   {0x2028, 0x202E},   {0x2060, 0x2064},   {0x2066, 0x206F},
    {0xFEFF, 0xFEFF},   {0xFFF9, 0xFFFB},   {0x110BD, 0x110BD}, {0x110CD, 0x110CD},
    {0x13430, 0x1343F}, {0x1BCA0, 0x1BCA3}, {0x1D173, 0x1D17A}, {0xE0001, 0xE0001},
    {0xE0020, 0xE007F},
};

// The bidirectional controls (Unicode bidi class LRE, RLE, PDF, LRO, RLO, LRI, RLI, FSI, PDI, LRM,
// RLM, ALM): they make text display in another order than it is stored.
constexpr CodePointRange kBidiControls[] = {
    {0x061C, 0x061C}, {0x200E, 0x200F}, {0x202A, 0x202E}, {0x2066, 0x2069}};

constexpr CodePointRange kLineAndParagraphSeparators[] = {{0x2028, 0x2029}};

std::string CodePointName(uint32_t code_point) { return absl::StrFormat("U+%04X", code_point); }

// "\u202e", or "\U000e0001" above the BMP: lower-case hex, as HexByte.
std::string EscapedCodePoint(uint32_t code_point) {
  return code_point <= 0xFFFF ? absl::StrFormat("\\u%04x", code_point)
                              : absl::StrFormat("\\U%08x", code_point);
}

// A label's code point that CheckLabel refuses beyond the control characters, or OK.
absl::Status CheckLabelCodePoint(absl::string_view field, uint32_t code_point, size_t at) {
  if (InRanges(code_point, kBidiControls)) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": bidirectional control ", CodePointName(code_point), " at byte ", at,
                     "; a label must display in the order it is written"));
  }
  if (InRanges(code_point, kLineAndParagraphSeparators)) {
    return absl::InvalidArgumentError(absl::StrCat(
        field, code_point == 0x2028 ? ": line separator " : ": paragraph separator ",
        CodePointName(code_point), " at byte ", at, "; a label is one line of printable text"));
  }
  return absl::OkStatus();
}

}  // namespace

bool IsValidUtf8(absl::string_view text) {
  while (!text.empty()) {
    const size_t length = Utf8SequenceLength(text);
    if (length == 0) return false;
    text.remove_prefix(length);
  }
  return true;
}

absl::Status CheckLabel(absl::string_view field, absl::string_view label) {
  if (label.size() > kMaxLabelBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": ", label.size(), " bytes, the limit is ", kMaxLabelBytes));
  }
  for (size_t at = 0; at < label.size();) {
    const absl::string_view rest = label.substr(at);
    const size_t length = Utf8SequenceLength(rest);
    if (length == 0) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": invalid UTF-8 at byte ", at, " (",
                                                     HexByte(rest[0]), "); labels are UTF-8 text"));
    }
    const absl::string_view sequence = rest.substr(0, length);
    if ((length == 1 && IsControlByte(static_cast<uint8_t>(sequence[0]))) ||
        IsC1Control(sequence)) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": control character ",
                                                     EscapeForTerminal(sequence), " at byte ", at,
                                                     "; a label is one line of printable text"));
    }
    if (length > 1) COLLTEST_RETURN_IF_ERROR(CheckLabelCodePoint(field, DecodeUtf8(sequence), at));
    at += length;
  }
  return absl::OkStatus();
}

std::string EscapeForTerminal(absl::string_view text) {
  std::string out;
  out.reserve(text.size());
  while (!text.empty()) {
    const size_t length = Utf8SequenceLength(text);
    if (length == 0) {  // an invalid byte: escaped alone, the next one may start a sequence
      out += HexByte(text[0]);
      text.remove_prefix(1);
      continue;
    }
    const absl::string_view sequence = text.substr(0, length);
    if (sequence == "\\") {
      out += "\\\\";
    } else if ((length == 1 && IsControlByte(static_cast<uint8_t>(sequence[0]))) ||
               IsC1Control(sequence)) {
      for (char c : sequence) out += HexByte(c);
    } else if (length > 1 && InRanges(DecodeUtf8(sequence), kFormatAndSeparators)) {
      out += EscapedCodePoint(DecodeUtf8(sequence));
    } else {
      out.append(sequence.data(), sequence.size());
    }
    text.remove_prefix(length);
  }
  return out;
}

}  // namespace colltest::common
