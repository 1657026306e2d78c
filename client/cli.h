// The command line: global flags, commands and their flags, parsed with CLI11 into plain structs.
// Values are kept as typed so that their syntax errors name the flag and exit with code 3.
#ifndef COLLTEST_CLIENT_CLI_H_
#define COLLTEST_CLIENT_CLI_H_

#include <optional>
#include <ostream>
#include <string>
#include <variant>
#include <vector>

#include "client/flags.h"
#include "client/rpc.h"

namespace colltest::client {

struct Invocation {
  ConnectionOptions connection;
  std::string command;  // devices, run, sweep, get, runs, cancel, health or tune
  SweepFlags sweep;     // run and sweep
  HealthFlags health;   // health
  TuneFlags tune;       // tune
  std::string format = "table";
  std::string out_path;
  std::string run_id;                // get and cancel
  std::optional<std::string> limit;  // runs
};

// The parsed invocation, or the exit code when parsing already finished the job (--help prints to
// `out` and is 0) or failed (a message on `err`, 3). `args` includes the program name.
std::variant<Invocation, int> ParseCommandLine(const std::vector<std::string>& args,
                                               std::ostream& out, std::ostream& err);

}  // namespace colltest::client

#endif  // COLLTEST_CLIENT_CLI_H_
