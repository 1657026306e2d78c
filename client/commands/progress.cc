#include "client/commands/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace colltest::client {
namespace {

// "2m05s" or "1h02m" from whole seconds.
std::string FormatLong(int64_t seconds) {
  if (seconds < 3600) return absl::StrFormat("%dm%02ds", seconds / 60, seconds % 60);
  return absl::StrFormat("%dh%02dm", seconds / 3600, seconds % 3600 / 60);
}

}  // namespace

ProgressMode ChooseProgress(const OutputOptions& options, bool stderr_is_terminal) {
  if (options.quiet) return ProgressMode::kOff;
  if (stderr_is_terminal) return ProgressMode::kTerminal;
  return options.progress ? ProgressMode::kLines : ProgressMode::kOff;
}

bool IsTerminal(const std::ostream& stream) {
  if (&stream == &std::cout) return isatty(STDOUT_FILENO) == 1;
  return (&stream == &std::cerr || &stream == &std::clog) && isatty(STDERR_FILENO) == 1;
}

bool ColorFor(const OutputOptions& options, const std::ostream& stream) {
  return UseColor(options.color, IsTerminal(stream), std::getenv("NO_COLOR"), std::getenv("TERM"));
}

ProgressMode ProgressModeFor(const OutputOptions& options, const std::ostream& err) {
  return ChooseProgress(options, IsTerminal(err));
}

std::string FormatElapsed(absl::Duration elapsed) {
  const double seconds = absl::ToDoubleSeconds(elapsed);
  // Below 59.95 s, so that %.1f never prints "60.0s".
  if (seconds < 59.95) return absl::StrFormat("%.1fs", seconds < 0 ? 0.0 : seconds);
  return FormatLong(std::llround(seconds));
}

std::string FormatEta(absl::Duration elapsed, uint32_t done, uint32_t total) {
  if (done == 0 || total == 0) return "?";
  if (done >= total) return "0s";
  return FormatRemaining(elapsed / done * (total - done));
}

std::string FormatRemaining(absl::Duration rest) {
  // To the microsecond first, so that a sum of parts that is 32 s to the last bit is not 33 s.
  const double left = std::round(absl::ToDoubleSeconds(rest) * 1e6) / 1e6;
  // Rounded up: "0s" would claim the work is over while a case still runs.
  const auto seconds = static_cast<int64_t>(std::ceil(left < 0 ? 0 : left));
  if (seconds < 60) return absl::StrCat(seconds, "s");
  return FormatLong(seconds);
}

void StatusLine::Draw(absl::string_view text) {
  switch (mode_) {
    case ProgressMode::kOff:
      return;
    case ProgressMode::kLines:
      *out_ << text << "\n";
      break;
    case ProgressMode::kTerminal:
      // Spaces over what is left of a longer previous line: plain text, no terminal escapes.
      *out_ << "\r" << text << std::string(drawn_ > text.size() ? drawn_ - text.size() : 0, ' ');
      drawn_ = text.size();
      break;
  }
  out_->flush();
}

void StatusLine::Print(absl::string_view line) {
  if (mode_ == ProgressMode::kOff) return;
  End();
  *out_ << line << "\n";
  out_->flush();
}

void StatusLine::End() {
  if (drawn_ == 0) return;
  *out_ << "\n";
  out_->flush();
  drawn_ = 0;
}

TickingLine::TickingLine(std::ostream* out, ProgressMode mode, absl::Duration period, Render render)
    : line_(out, mode), period_(period), render_(std::move(render)), start_(absl::Now()) {
  if (mode == ProgressMode::kOff) return;
  if (mode == ProgressMode::kTerminal) line_.Draw(render_(absl::ZeroDuration()));
  thread_ = std::thread([this] { Loop(); });
}

TickingLine::~TickingLine() {
  if (line_.mode() == ProgressMode::kOff) return;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_one();
  thread_.join();
  line_.Draw(render_(absl::Now() - start_));
  line_.End();
}

void TickingLine::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!wake_.wait_for(lock, absl::ToChronoNanoseconds(period_), [this] { return stop_; })) {
    line_.Draw(render_(absl::Now() - start_));
  }
}

}  // namespace colltest::client
