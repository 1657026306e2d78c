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

}  // namespace
}  // namespace colltest::common
