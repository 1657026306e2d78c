#include "client/commands/progress.h"

#include <algorithm>
#include <iostream>
#include <sstream>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace colltest::client {
namespace {

using ::testing::ContainsRegex;
using ::testing::MatchesRegex;

OutputOptions Options(bool quiet, bool progress) {
  OutputOptions options;
  options.quiet = quiet;
  options.progress = progress;
  return options;
}

TEST(ProgressPolicyTest, TerminalOrProgressFlagAndNeverQuiet) {
  // stderr a terminal, --progress, --quiet -> mode
  EXPECT_EQ(ChooseProgress(Options(false, false), true), ProgressMode::kTerminal);
  EXPECT_EQ(ChooseProgress(Options(false, true), true), ProgressMode::kTerminal);
  EXPECT_EQ(ChooseProgress(Options(false, false), false), ProgressMode::kOff);
  EXPECT_EQ(ChooseProgress(Options(false, true), false), ProgressMode::kLines);
  // --quiet wins, even over --progress and a terminal.
  EXPECT_EQ(ChooseProgress(Options(true, false), true), ProgressMode::kOff);
  EXPECT_EQ(ChooseProgress(Options(true, true), true), ProgressMode::kOff);
  EXPECT_EQ(ChooseProgress(Options(true, true), false), ProgressMode::kOff);
}

// Only the process's stderr can be a terminal: a string stream never is, so unit tests see the
// same output wherever they run.
TEST(ProgressPolicyTest, AStringStreamIsNoTerminal) {
  std::ostringstream err;
  EXPECT_FALSE(IsTerminal(err));
  EXPECT_FALSE(IsTerminal(std::cout));
  EXPECT_EQ(ProgressModeFor(Options(false, false), err), ProgressMode::kOff);
  EXPECT_EQ(ProgressModeFor(Options(false, true), err), ProgressMode::kLines);
}

TEST(FormatElapsedTest, TenthsUnderAMinuteThenMinutesThenHours) {
  EXPECT_EQ(FormatElapsed(absl::ZeroDuration()), "0.0s");
  EXPECT_EQ(FormatElapsed(absl::Milliseconds(4149)), "4.1s");
  EXPECT_EQ(FormatElapsed(absl::Seconds(12.34)), "12.3s");
  EXPECT_EQ(FormatElapsed(absl::Seconds(59.9)), "59.9s");
  EXPECT_EQ(FormatElapsed(absl::Seconds(59.97)), "1m00s");  // never "60.0s"
  EXPECT_EQ(FormatElapsed(absl::Seconds(125)), "2m05s");
  EXPECT_EQ(FormatElapsed(absl::Minutes(62) + absl::Seconds(30)), "1h02m");
  EXPECT_EQ(FormatElapsed(-absl::Seconds(1)), "0.0s");  // a clock stepped back
}

TEST(FormatEtaTest, PaceSoFarTimesWhatIsLeftRoundedUp) {
  EXPECT_EQ(FormatEta(absl::Seconds(4.1), 3, 12), "13s");  // 4.1 / 3 x 9 = 12.3
  EXPECT_EQ(FormatEta(absl::Seconds(10), 1, 5), "40s");
  EXPECT_EQ(FormatEta(absl::Seconds(1), 100, 101), "1s");  // 0.01 s is not "0s"
  EXPECT_EQ(FormatEta(absl::Seconds(60), 1, 3), "2m00s");
  EXPECT_EQ(FormatEta(absl::Seconds(3600), 1, 2), "1h00m");
  EXPECT_EQ(FormatEta(absl::Seconds(5), 12, 12), "0s");
  EXPECT_EQ(FormatEta(absl::Seconds(5), 13, 12), "0s");  // a server that ran more than it said
}

TEST(FormatEtaTest, UnknownBeforeTheFirstCaseOrWithoutATotal) {
  EXPECT_EQ(FormatEta(absl::Seconds(5), 0, 12), "?");
  EXPECT_EQ(FormatEta(absl::Seconds(5), 3, 0), "?");
}

TEST(StatusLineTest, TerminalRedrawsInPlaceAndEndsWithANewline) {
  std::ostringstream out;
  {
    StatusLine line(&out, ProgressMode::kTerminal);
    line.Draw("a longer line");
    line.Draw("short");
    line.Print("run r-1");  // a line that stays: the open one is ended first
    line.Draw("next");
  }  // the destructor ends the open line
  EXPECT_EQ(out.str(), "\ra longer line\rshort        \nrun r-1\n\rnext\n");
}

TEST(StatusLineTest, LinesModeWritesEachDrawAsALine) {
  std::ostringstream out;
  {
    StatusLine line(&out, ProgressMode::kLines);
    line.Draw("one");
    line.Print("two");
    line.Draw("three");
    line.End();
  }
  EXPECT_EQ(out.str(), "one\ntwo\nthree\n");
}

TEST(StatusLineTest, OffWritesNothing) {
  std::ostringstream out;
  {
    StatusLine line(&out, ProgressMode::kOff);
    line.Draw("one");
    line.Print("two");
  }
  EXPECT_EQ(out.str(), "");
}

std::string Render(absl::Duration elapsed) { return "waited " + FormatElapsed(elapsed); }

TEST(TickingLineTest, TerminalDrawsAtOnceRedrawsAndEndsWithTheFinalTime) {
  std::ostringstream out;
  {
    TickingLine ticking(&out, ProgressMode::kTerminal, absl::Milliseconds(20), Render);
    absl::SleepFor(absl::Milliseconds(150));
  }
  const std::string text = out.str();
  EXPECT_THAT(text, MatchesRegex("\rwaited 0\\.0s(\rwaited [0-9.]+s)+\n"));
  // Redrawn several times while it waited: more than the first and the final draw.
  EXPECT_GE(std::count(text.begin(), text.end(), '\r'), 3) << text;
  EXPECT_THAT(text, ContainsRegex("\rwaited 0\\.[1-9]s\n$"));
}

// In a log a quick call leaves one line, with its final time; the thread is stopped at once
// rather than after its period.
TEST(TickingLineTest, LinesModeQuickCallLeavesOnlyTheFinalLine) {
  std::ostringstream out;
  const absl::Time start = absl::Now();
  {
    TickingLine ticking(&out, ProgressMode::kLines, absl::Seconds(10), Render);
    absl::SleepFor(absl::Milliseconds(30));
  }
  EXPECT_LT(absl::Now() - start, absl::Seconds(2));
  EXPECT_THAT(out.str(), MatchesRegex("waited 0\\.[0-9]s\n"));
}

TEST(TickingLineTest, LinesModeWritesALinePerPeriod) {
  std::ostringstream out;
  {
    TickingLine ticking(&out, ProgressMode::kLines, absl::Milliseconds(20), Render);
    absl::SleepFor(absl::Milliseconds(150));
  }
  const std::string text = out.str();
  EXPECT_EQ(text.find('\r'), std::string::npos) << text;
  EXPECT_GE(std::count(text.begin(), text.end(), '\n'), 3) << text;
}

TEST(TickingLineTest, OffWritesNothing) {
  std::ostringstream out;
  { TickingLine ticking(&out, ProgressMode::kOff, absl::Milliseconds(1), Render); }
  EXPECT_EQ(out.str(), "");
}

}  // namespace
}  // namespace colltest::client
