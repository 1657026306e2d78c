// Progress on stderr: when it is shown, how elapsed time and the estimate of the rest read, and a
// line that is redrawn in place on a terminal.
//
// Progress is for a person watching: it is shown when stderr is a terminal, or when --progress
// asks for it (a CI log), and never with --quiet. Scripts that read stderr then see only errors.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <ostream>
#include <string>
#include <thread>

#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "client/commands/output_options.h"

namespace colltest::client {

enum class ProgressMode {
  kOff,       // nothing on stderr
  kLines,     // one line per update, as a log reads it
  kTerminal,  // a status line redrawn in place with \r
};

// --quiet wins; then a terminal redraws in place; then --progress prints lines; else nothing.
ProgressMode ChooseProgress(const OutputOptions& options, bool stderr_is_terminal);

// True when `stream` is the process's stderr (std::cerr or std::clog) or stdout (std::cout) and
// that is a terminal. Any other stream, such as a test's std::ostringstream, is not one, whatever
// fds 1 and 2 are.
bool IsTerminal(const std::ostream& stream);

// Whether what goes to `stream` is coloured: --color, the stream a terminal, NO_COLOR and TERM
// (UseColor of client/format/color.h).
bool ColorFor(const OutputOptions& options, const std::ostream& stream);

// The mode for a command writing progress to `err`.
ProgressMode ProgressModeFor(const OutputOptions& options, const std::ostream& err);

// "4.1s" under a minute, "2m05s" under an hour, then "1h02m".
std::string FormatElapsed(absl::Duration elapsed);
// What is left at the pace so far, elapsed / done x (total - done), in whole seconds rounded up
// ("12s", "3m20s", "1h02m"); "?" before the first case or when the total is unknown.
std::string FormatEta(absl::Duration elapsed, uint32_t done, uint32_t total);
// A time still to go as FormatEta writes it, whole seconds rounded up.
std::string FormatRemaining(absl::Duration rest);

// One line of progress on `out`. On a terminal Draw replaces the line in place; otherwise each
// Draw is a line of its own. The destructor ends a line left open, so that whatever follows
// starts on a line of its own.
class StatusLine {
 public:
  StatusLine(std::ostream* out, ProgressMode mode) : out_(out), mode_(mode) {}
  ~StatusLine() { End(); }
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  ProgressMode mode() const { return mode_; }
  void Draw(absl::string_view text);
  // A line of its own that stays (a run id, a state change), in any mode but kOff.
  void Print(absl::string_view line);
  void End();

 private:
  std::ostream* out_;
  ProgressMode mode_;
  size_t drawn_ = 0;  // width of the line redrawn in place, 0 when none is open
};

// A StatusLine redrawn every `period` from a thread of its own while the owner waits on one call
// (health's unary RPC). The destructor stops the thread, draws the line once more with the final
// elapsed time and ends it with a newline. In kLines mode the first line comes after one period,
// so that a quick call leaves only its final line.
class TickingLine {
 public:
  using Render = std::function<std::string(absl::Duration elapsed)>;

  TickingLine(std::ostream* out, ProgressMode mode, absl::Duration period, Render render);
  ~TickingLine();
  TickingLine(const TickingLine&) = delete;
  TickingLine& operator=(const TickingLine&) = delete;

 private:
  void Loop();

  StatusLine line_;
  absl::Duration period_;
  Render render_;
  absl::Time start_;
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;
  std::thread thread_;  // last: started once every other member is ready
};

}  // namespace colltest::client
