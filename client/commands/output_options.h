// Where and how a command writes its result: the output flags every command shares and the two
// streams it writes to. A header of its own so that the helpers of the commands (progress.h,
// command_support.h) and the fleet check reach them without the commands themselves.
#pragma once

#include <ostream>
#include <string>

#include "client/format/color.h"
#include "client/format/format.h"

namespace colltest::client {

struct OutputOptions {
  OutputFormat format = OutputFormat::kTable;
  std::string out_path;   // empty: stdout
  bool wide = false;      // --wide: every table column, whatever the width
  bool quiet = false;     // --quiet: no progress on stderr, even on a terminal
  bool progress = false;  // --progress: progress on stderr even when it is not a terminal
  ColorChoice color = ColorChoice::kAuto;  // --color: verdicts coloured (tables, progress)
  std::string server;   // the address asked, for hints and the unreachable JUnit report
  std::string command;  // "run", "sweep", "health", ... (names the JUnit testcase)
};

struct Streams {
  std::ostream& out;
  std::ostream& err;
};

}  // namespace colltest::client
