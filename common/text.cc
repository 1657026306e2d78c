#include "common/text.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

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
    } else {
      out.append(sequence.data(), sequence.size());
    }
    text.remove_prefix(length);
  }
  return out;
}

}  // namespace colltest::common
