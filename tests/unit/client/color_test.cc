// When colour is used (--color, a terminal, NO_COLOR, TERM) and what is painted.
#include "client/format/color.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

TEST(UseColorTest, AutoColoursATerminalOnly) {
  EXPECT_TRUE(UseColor(ColorChoice::kAuto, true, nullptr, "xterm-256color"));
  EXPECT_TRUE(UseColor(ColorChoice::kAuto, true, nullptr, nullptr));
  EXPECT_FALSE(UseColor(ColorChoice::kAuto, false, nullptr, "xterm"));
}

TEST(UseColorTest, NoColorWithAnyValueTurnsAutoOff) {
  for (const char* value : {"1", "0", "false", "x"}) {
    EXPECT_FALSE(UseColor(ColorChoice::kAuto, true, value, "xterm")) << value;
  }
  // Set but empty is unset (no-color.org).
  EXPECT_TRUE(UseColor(ColorChoice::kAuto, true, "", "xterm"));
}

TEST(UseColorTest, DumbTerminalHasNoColour) {
  EXPECT_FALSE(UseColor(ColorChoice::kAuto, true, nullptr, "dumb"));
}

TEST(UseColorTest, TheFlagWins) {
  EXPECT_TRUE(UseColor(ColorChoice::kAlways, false, "1", "dumb"));
  EXPECT_FALSE(UseColor(ColorChoice::kNever, true, nullptr, "xterm"));
}

TEST(ParseColorChoiceTest, ThreeNames) {
  EXPECT_EQ(*ParseColorChoice("always"), ColorChoice::kAlways);
  EXPECT_EQ(*ParseColorChoice("AUTO"), ColorChoice::kAuto);
  EXPECT_EQ(*ParseColorChoice(" never "), ColorChoice::kNever);
  EXPECT_FALSE(ParseColorChoice("yes").ok());
}

TEST(PaintVerdictsTest, PaintsVerdictsStandingAsWords) {
  EXPECT_EQ(PaintVerdicts("2 cases: 1 OK, 1 HANG"),
            "2 cases: 1 \033[32mOK\033[0m, 1 \033[1;31mHANG\033[0m");
  EXPECT_EQ(PaintVerdicts("WRONG|ERROR WARN BUSY REGRESSION"),
            "\033[31mWRONG\033[0m|\033[31mERROR\033[0m \033[33mWARN\033[0m \033[33mBUSY\033[0m "
            "\033[31mREGRESSION\033[0m");
  // Part of a longer word, or another case: as is.
  EXPECT_EQ(PaintVerdicts("OKAY HANGS lamport_OK ok UNSUPPORTED"),
            "OKAY HANGS lamport_OK ok UNSUPPORTED");
}

}  // namespace
}  // namespace colltest::client
