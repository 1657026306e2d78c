// The command line: global flags, commands and their flags, parsed with CLI11 into plain structs.
// Values are kept as typed so that their syntax errors name the flag and exit with code 3.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "client/commands/rpc.h"
#include "client/flags/compare_flags.h"
#include "client/flags/flags.h"
#include "client/flags/history.h"

namespace colltest::client {

struct Invocation {
  ConnectionOptions connection;
  // devices, run, sweep, get, history (also for its alias `runs`), cancel, health, tune,
  // "baseline set", "baseline list" or compare.
  std::string command;
  SweepFlags sweep;      // run and sweep
  HealthFlags health;    // health
  TuneFlags tune;        // tune
  HistoryFlags history;  // history
  CompareFlags compare;  // compare; --compare-baseline and --compare-threshold of run and sweep
  std::string format = "table";
  bool wide = false;           // --wide (run, sweep, get, compare tables)
  bool quiet = false;          // --quiet (global): no progress on stderr
  bool progress = false;       // --progress (global): progress on stderr even when not a terminal
  std::string color = "auto";  // --color (global): always|auto|never (client/format/color.h)
  std::string out_path;
  std::string run_id;         // get, cancel and baseline set
  std::string baseline_name;  // baseline set --name ("" = "default")
  std::string machine_key;    // baseline list --machine-key ("" = every machine)
};

// The parsed invocation, or the exit code when parsing already finished the job (--help prints to
// `out` and is 0) or failed (a message on `err`, 3). `args` includes the program name.
std::variant<Invocation, int> ParseCommandLine(const std::vector<std::string>& args,
                                               std::ostream& out, std::ostream& err);

}  // namespace colltest::client
