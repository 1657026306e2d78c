#include "common/text.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::common {
namespace {

using ::testing::HasSubstr;

TEST(IsValidUtf8Test, AcceptsWellFormedText) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("nightly run"));
  EXPECT_TRUE(IsValidUtf8("gr\xc3\xbc\xc3\x9f"));  // grüß
  EXPECT_TRUE(IsValidUtf8("\xe2\x82\xac"));        // €
  EXPECT_TRUE(IsValidUtf8("\xf0\x9f\x9a\x80"));    // U+1F680
  EXPECT_TRUE(IsValidUtf8("\xf4\x8f\xbf\xbf"));    // U+10FFFF
}

TEST(IsValidUtf8Test, RefusesMalformedText) {
  EXPECT_FALSE(IsValidUtf8("\xff"));
  EXPECT_FALSE(IsValidUtf8("a\x80"));             // stray continuation
  EXPECT_FALSE(IsValidUtf8("\xc3"));              // truncated
  EXPECT_FALSE(IsValidUtf8("\xc0\xaf"));          // overlong '/'
  EXPECT_FALSE(IsValidUtf8("\xe0\x80\xaf"));      // overlong
  EXPECT_FALSE(IsValidUtf8("\xed\xa0\x80"));      // surrogate U+D800
  EXPECT_FALSE(IsValidUtf8("\xf4\x90\x80\x80"));  // above U+10FFFF
  EXPECT_FALSE(IsValidUtf8("\xe2\x82"));          // truncated €
}

TEST(CheckLabelTest, AcceptsOneLineOfPrintableText) {
  EXPECT_TRUE(CheckLabel("spec.label", "").ok());
  EXPECT_TRUE(CheckLabel("spec.label", "nightly gr\xc3\xbc\xc3\x9f \xe2\x82\xac").ok());
  EXPECT_TRUE(CheckLabel("spec.label", std::string(kMaxLabelBytes, 'x')).ok());
}

TEST(CheckLabelTest, RefusesAboveTheLimitNamingFieldAndLimit) {
  const absl::Status s = CheckLabel("spec.label", std::string(300, 'x'));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "spec.label: 300 bytes, the limit is 256");
  EXPECT_FALSE(CheckLabel("spec.label", std::string(kMaxLabelBytes + 1, 'x')).ok());
}

TEST(CheckLabelTest, RefusesNewlineAndOtherControlCharacters) {
  for (const std::string& label :
       {std::string("a\nforged log line"), std::string("\x1b[2J"), std::string("tab\there"),
        std::string("nul\0x", 5), std::string("del\x7f"), std::string("csi \xc2\x9b")}) {
    const absl::Status s = CheckLabel("spec.label", label);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << EscapeForTerminal(label);
    EXPECT_THAT(std::string(s.message()), HasSubstr("spec.label: control character")) << s;
  }
  EXPECT_THAT(std::string(CheckLabel("spec.label", "a\nb").message()),
              HasSubstr("\\x0a at byte 1"));
}

// U+202E shows "run-evil\u202etxt.exe" as "run-evilexe.txt"; U+2028 breaks a log line in many
// viewers. Both are refused naming the field, the code point and its byte.
TEST(CheckLabelTest, RefusesBidiControlsAndLineSeparators) {
  struct Case {
    std::string label;
    const char* message;
  };
  // The letter after each sequence is not a hex digit, so that it ends the \x escape.
  for (const Case& c : {
           Case{"a\xe2\x80\xaez", "spec.label: bidirectional control U+202E at byte 1"},
           Case{"\xe2\x81\xa6x", "spec.label: bidirectional control U+2066 at byte 0"},
           Case{"ab\xe2\x80\x8f", "spec.label: bidirectional control U+200F at byte 2"},
           Case{"\xd8\x9c", "spec.label: bidirectional control U+061C at byte 0"},
           Case{"a\xe2\x80\xa8z", "spec.label: line separator U+2028 at byte 1"},
           Case{"a\xe2\x80\xa9z", "spec.label: paragraph separator U+2029 at byte 1"},
       }) {
    const absl::Status s = CheckLabel("spec.label", c.label);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << EscapeForTerminal(c.label);
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
  // Other format characters stay allowed (emoji sequences join with U+200D); they are escaped
  // wherever a label is printed or logged.
  EXPECT_TRUE(CheckLabel("spec.label", "a\xe2\x80\x8dz\xe2\x80\x8bz\xef\xbb\xbf").ok());
}

TEST(CheckLabelTest, RefusesInvalidUtf8) {
  const absl::Status s = CheckLabel("spec.label", "ab\xff");
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), HasSubstr("spec.label: invalid UTF-8 at byte 2 (\\xff)"));
}

TEST(EscapeForTerminalTest, KeepsPrintableUtf8) {
  EXPECT_EQ(EscapeForTerminal("nightly gr\xc3\xbc\xc3\x9f"), "nightly gr\xc3\xbc\xc3\x9f");
}

TEST(EscapeForTerminalTest, EscapesControlsInvalidBytesAndBackslash) {
  EXPECT_EQ(EscapeForTerminal("\x1b[2J"), "\\x1b[2J");
  EXPECT_EQ(EscapeForTerminal("a\nb\r"), "a\\x0ab\\x0d");
  EXPECT_EQ(EscapeForTerminal("\x7f"), "\\x7f");
  EXPECT_EQ(EscapeForTerminal("\xc2\x9b"), "\\xc2\\x9b");  // C1 CSI
  EXPECT_EQ(EscapeForTerminal("ab\xff"), "ab\\xff");
  EXPECT_EQ(EscapeForTerminal("\xe2\x82"), "\\xe2\\x82");  // truncated
  // Escaped, so that "\x1b" typed by a client cannot pass for an escaped ESC.
  EXPECT_EQ(EscapeForTerminal("\\x1b"), "\\\\x1b");
  EXPECT_EQ(EscapeForTerminal(std::string("\0", 1)), "\\x00");
}

TEST(EscapeForTerminalTest, EscapesFormatCharactersAndSeparators) {
  EXPECT_EQ(EscapeForTerminal("a\xe2\x80\xaez"), "a\\u202ez");      // RLO, Cf
  EXPECT_EQ(EscapeForTerminal("a\xe2\x80\xa8z"), "a\\u2028z");      // LINE SEPARATOR, Zl
  EXPECT_EQ(EscapeForTerminal("a\xe2\x80\xa9z"), "a\\u2029z");      // PARAGRAPH SEPARATOR, Zp
  EXPECT_EQ(EscapeForTerminal("a\xe2\x80\x8bz"), "a\\u200bz");      // ZERO WIDTH SPACE, Cf
  EXPECT_EQ(EscapeForTerminal("\xef\xbb\xbfx"), "\\ufeffx");        // BOM, Cf
  EXPECT_EQ(EscapeForTerminal("\xc2\xad"), "\\u00ad");              // SOFT HYPHEN, Cf
  EXPECT_EQ(EscapeForTerminal("\xf3\xa0\x80\x81"), "\\U000e0001");  // LANGUAGE TAG, Cf
  // Neighbours of those ranges are printable and kept.
  EXPECT_EQ(EscapeForTerminal("\xe2\x80\x90\xe2\x80\xaf"), "\xe2\x80\x90\xe2\x80\xaf");
}

}  // namespace
}  // namespace colltest::common
